// The rules between keys and the derived defaults (see rules.hpp).
#include "rules.hpp"

#include "attnlab/attention/chunked.hpp"
#include "attnlab/attention/variant_table.hpp"
#include "attnlab/tasks/task_table.hpp"
#include "values.hpp"

namespace attnlab::spec_internal {

namespace {

using std::to_string;

std::vector<rule> model_rules() {
    return {
        {{"model.heads", "model.d_model"},
         [](const run_config& c) {
             if (c.model.d_model % c.model.heads == 0) return std::string();
             return "model.heads " + to_string(c.model.heads) + " does not divide model.d_model " +
                    to_string(c.model.d_model);
         }},
        {{"model.position", "model.heads", "model.d_model"},
         [](const run_config& c) {
             const int hd = c.model.d_model / c.model.heads;
             if (c.model.position != position_kind::rope || c.model.d_model % c.model.heads != 0 || hd % 2 == 0)
                 return std::string();
             return "rope needs an even head dim, got d_model/heads = " + to_string(c.model.d_model) + "/" +
                    to_string(c.model.heads) + " = " + to_string(hd);
         }},
        {{"model.short_conv"},
         [](const run_config& c) {
             if (c.model.short_conv != 1) return std::string();
             return "model.short_conv 1 is no convolution (a per-channel scale): use 0 (off) or a kernel of 2 to " +
                    to_string(max_short_conv) + " taps";
         }},
    };
}

// Each task's rules, from its row of the task table, checked only for that task.
std::vector<rule> task_rules() {
    std::vector<rule> out;
    for (const task_traits& t : task_rows())
        for (const task_rule& r : t.rules)
            out.push_back({r.keys, [kind = t.kind, broken = r.broken](const run_config& c) {
                               return c.task.kind == kind ? broken(c.task) : std::string();
                           }});
    return out;
}

std::vector<rule> attention_rules() {
    return {
        {{"attention.out_gate", "attention.denominator"},
         [](const run_config& c) {
             if (!c.attention.out_gate || !traits_of(c.attention.denominator).has_output_gate) return std::string();
             const std::string name = attnlab::to_string(c.attention.denominator);
             return "out_gate is not allowed with denominator " + name + ", which has an output gate already";
         }},
        {{"attention.form", "attention.numerator", "attention.clamp", "attention.order"},
         [](const run_config& c) {
             if (c.attention.form != parallel_form::chunked) return std::string();
             return chunked_form_refusal(c.attention);
         }},
    };
}

std::vector<rule> train_rules() {
    return {
        {{"train.min_lr", "train.lr"},
         [](const run_config& c) {
             if (c.train.min_lr <= c.train.lr) return std::string();
             return "train.min_lr " + format_number(c.train.min_lr) + " exceeds train.lr " + format_number(c.train.lr);
         }},
        {{"train.warmup", "train.steps"},
         [](const run_config& c) {
             if (c.train.warmup <= c.train.steps) return std::string();
             return "train.warmup " + to_string(c.train.warmup) + " exceeds train.steps " + to_string(c.train.steps);
         }},
        {{"train.init_sha256", "train.init"},
         [](const run_config& c) {
             if (c.train.init_sha256.empty() || !c.train.init.empty()) return std::string();
             return std::string("train.init_sha256 checks the checkpoint of train.init, which is not set");
         }},
    };
}

}  // namespace

const std::vector<rule>& combination_rules() {
    static const std::vector<rule> rules = [] {
        std::vector<rule> all;
        for (std::vector<rule> part : {model_rules(), task_rules(), attention_rules(), train_rules()})
            for (rule& r : part) all.push_back(std::move(r));
        return all;
    }();
    return rules;
}

void fill_derived_defaults(run_config& c) {
    traits_of(c.task.kind).fill_defaults(c.task);
    if (c.model.mlp == mlp_kind::swiglu) c.model.mlp_hidden = resolved_mlp_hidden(c.model);
    c.task.val_examples = resolved_val_examples(c.task);
}

}  // namespace attnlab::spec_internal
