// The spec schema reads the variant table and the task table: each case is
// built from the tables' rows (not a hand list), so a row added to either is
// checked here too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/attention/variant_table.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/tasks/task_table.hpp"
#include "attnlab/util/error.hpp"

using namespace attnlab;
using Catch::Matchers::Contains;

namespace {

// A valid lookup spec with the attention section `attention` (its lines indented by 4).
std::string spec_with_attention(const std::string& attention) {
    return "name: t\n"
           "base:\n"
           "  task: {kind: lookup, vocab: 64, seq_len: 32, pairs: 4}\n"
           "  model: {layers: 1, d_model: 16, heads: 2}\n"
           "  attention:\n" +
           attention + "  train: {steps: 10, lr: 0.01, warmup: 1}\n";
}

std::string attention_lines(const std::string& numerator, const std::string& denominator,
                            const std::string& extra = "") {
    return "    numerator: " + numerator + "\n    denominator: " + denominator + "\n" + extra;
}

// The config_error message of parsing `yaml`, or "" when it parses.
std::string error_or_empty(const std::string& yaml) {
    try {
        parse_spec(yaml, "spec.yaml");
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("spec tables: attention.order is required and allowed exactly for numerators that take an order",
          "[spec][tables]") {
    for (int i = 0; i < numerator_count; ++i) {
        const numerator_traits& row = numerator_rows()[i];
        INFO("numerator " << row.name);
        const std::string with_order =
            error_or_empty(spec_with_attention(attention_lines(row.name, "softmax", "    order: 2\n")));
        const std::string without = error_or_empty(spec_with_attention(attention_lines(row.name, "softmax")));
        if (row.takes_order) {
            CHECK(with_order.empty());
            CHECK_THAT(without,
                       Contains("base.attention.order: missing required key (needed when attention.numerator"));
        } else {
            CHECK_THAT(with_order, Contains("base.attention.order: has no effect"));
            CHECK(without.empty());
        }
    }
}

TEST_CASE("spec tables: attention.clamp is allowed exactly for score kernels", "[spec][tables]") {
    for (int i = 0; i < numerator_count; ++i) {
        const numerator_traits& row = numerator_rows()[i];
        INFO("numerator " << row.name);
        const std::string order = row.takes_order ? "    order: 2\n" : "";
        const std::string error =
            error_or_empty(spec_with_attention(attention_lines(row.name, "softmax", order + "    clamp: 5\n")));
        if (row.family == numerator_family::score_kernel)
            CHECK(error.empty());
        else
            CHECK_THAT(error, Contains("base.attention.clamp: has no effect"));
    }
}

TEST_CASE("spec tables: detach_denominator and out_gate follow the denominator's traits", "[spec][tables]") {
    for (int i = 0; i < denominator_count; ++i) {
        const denominator_traits& row = denominator_rows()[i];
        INFO("denominator " << row.name);
        const std::string detach =
            error_or_empty(spec_with_attention(attention_lines("exp", row.name, "    detach_denominator: true\n")));
        if (row.detachable)
            CHECK(detach.empty());
        else
            CHECK_THAT(detach, Contains("base.attention.detach_denominator: has no effect"));
        const std::string gate =
            error_or_empty(spec_with_attention(attention_lines("exp", row.name, "    out_gate: true\n")));
        if (row.has_output_gate)
            CHECK_THAT(gate,
                       Contains(std::string("base.attention.out_gate: out_gate is not allowed with denominator ") +
                                row.name + ", which has an output gate already"));
        else
            CHECK(gate.empty());
    }
}

TEST_CASE("spec tables: a task's own keys apply exactly to that task", "[spec][tables]") {
    std::vector<std::string> all_keys;  // every task-specific key of any row
    for (const task_traits& t : task_rows())
        for (const std::string& k : t.keys) all_keys.push_back(k);
    REQUIRE(!all_keys.empty());
    for (const task_traits& t : task_rows()) {
        INFO("task " << t.name);
        run_config c;
        c.task.kind = t.kind;
        // The optional text keys set (unset, they are left out of config.yaml); no effect on other tasks.
        c.task.path = "/corpus.txt";
        c.task.sha256 = std::string(64, '0');
        c.task.size = 1;
        const std::string yaml = run_config_to_yaml(c);  // the keys that apply to it
        CHECK_THAT(yaml, Contains(std::string("  kind: ") + t.name + "\n"));
        for (const std::string& k : all_keys) {
            INFO("key " << k);
            const bool own = std::find(t.keys.begin(), t.keys.end(), k) != t.keys.end();
            CHECK((yaml.find("\n  " + k + ": ") != std::string::npos) == own);
        }
    }
}

TEST_CASE("spec tables: the loader and the generator report a task's broken rule with the same message",
          "[spec][tables]") {
    // lookup with an odd length: its second rule.
    const std::string yaml = spec_with_attention(attention_lines("exp", "softmax"));
    const std::string odd = "seq_len: 33";
    std::string broken = yaml;
    broken.replace(broken.find("seq_len: 32"), odd.size(), odd);
    const experiment_spec ok = parse_spec(yaml, "spec.yaml");
    task_config t = ok.base.task;
    t.seq_len = 33;
    const std::string why = broken_task_rule(t);
    CHECK(why == "lookup needs an even task.seq_len, got 33");
    CHECK_THAT(error_or_empty(broken), Contains("base.task.seq_len: " + why));
    CHECK_THROWS_WITH(make_task(t, 0), "lookup: " + why);
    CHECK(broken_task_rule(ok.base.task).empty());
}

TEST_CASE("spec tables: each task's generator makes inputs of the sizes its row gives", "[spec][tables]") {
    for (const task_traits& row : task_rows()) {
        INFO("task " << row.name);
        task_config t;  // the documented defaults are a valid config of every task (text: given a file)
        t.kind = row.kind;
        if (row.kind == task_kind::text) t.path = std::string(ATTNLAB_TEST_DATA) + "/text_fixture.txt";
        t.test_examples = 4;
        row.fill_defaults(t);
        REQUIRE(broken_task_rule(t).empty());
        const auto generated = make_task(t, 1);
        CHECK(generated->vocab_size() == model_vocab_size(t));
        CHECK(generated->train_seq_len() == train_seq_len(t));
        CHECK(generated->test_set().T == test_seq_len(t));
        CHECK(max_seq_len(t) == std::max(train_seq_len(t), test_seq_len(t)));
        CHECK(std::string(to_string(row.kind)) == row.name);
    }
}
