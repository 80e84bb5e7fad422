// Scoring a trained model with another attention variant: eval's --set of
// the numerator, order and denominator, the parameter check that allows it
// and the truncation sweep with its CSV (analysis/truncation.hpp).
#include "attnlab/analysis/truncation.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "attnlab/io/csv.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/spec/did_you_mean.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subnormals.hpp"

namespace attnlab {

const std::vector<std::string>& eval_test_keys() {
    static const std::vector<std::string> keys = {"task.test_examples", "task.test_min_len", "task.test_max_len"};
    return keys;
}

const std::vector<std::string>& eval_variant_keys() {
    static const std::vector<std::string> keys = {"attention.numerator", "attention.order", "attention.denominator"};
    return keys;
}

namespace {

std::string shape_text(const std::vector<int>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

param_layout layout_of(const run_config& c) {
    model_offsets offsets;
    return build_param_layout(c.model, c.attention, model_vocab_size(c.task), max_seq_len(c.task), offsets);
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < names.size(); ++i)
        s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return s;
}

// The whole text as an integer, or nothing.
std::optional<int> whole_int(const std::string& text) {
    int v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
    return v;
}

}  // namespace

std::string parameter_difference(const run_config& trained, const run_config& evaluated) {
    const param_layout a = layout_of(trained), b = layout_of(evaluated);
    for (const param_tensor& t : b.tensors()) {
        const auto it = std::find_if(a.tensors().begin(), a.tensors().end(),
                                     [&](const param_tensor& u) { return u.name == t.name; });
        if (it == a.tensors().end()) return t.name + " " + shape_text(t.shape) + " is in the evaluated model only";
        if (it->shape != t.shape)
            return t.name + " is " + shape_text(it->shape) + " in the trained model, " + shape_text(t.shape) +
                   " in the evaluated one";
    }
    for (const param_tensor& t : a.tensors())
        if (std::none_of(b.tensors().begin(), b.tensors().end(),
                         [&](const param_tensor& u) { return u.name == t.name; }))
            return t.name + " " + shape_text(t.shape) + " is in the trained model only";
    return "";
}

run_config evaluated_config(const run_config& trained, const std::vector<std::string>& overrides,
                            const std::string& label) {
    if (overrides.empty()) return trained;
    std::vector<std::string> allowed = eval_test_keys();
    allowed.insert(allowed.end(), eval_variant_keys().begin(), eval_variant_keys().end());
    std::vector<std::string> checked;  // as the spec loader sees them
    std::optional<int> high_order;     // an order above training's range, set after the loader's checks
    for (const std::string& o : overrides) {
        const std::size_t eq = o.find('=');
        const std::string key = o.substr(0, eq);
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
            throw config_error("--set: " + key + ": eval cannot change it" + did_you_mean(key, allowed) +
                               " (eval changes only " + joined(eval_test_keys()) + ", and " +
                               joined(eval_variant_keys()) +
                               " when the parameters stay the same; other keys would change the trained model)");
        if (key == "attention.order" && eq != std::string::npos) {
            const auto n = whole_int(o.substr(eq + 1));
            if (n && *n > max_train_order) {
                if (*n > max_eval_order)
                    throw config_error("--set: attention.order: expected an integer from 1 to " +
                                       std::to_string(max_eval_order) + " in an evaluation, got " + std::to_string(*n));
                high_order = *n;
                checked.push_back("attention.order=" + std::to_string(max_train_order));
                continue;
            }
        }
        checked.push_back(o);
    }
    std::string yaml = "name: eval\nbase:\n";
    const std::string config = run_config_to_yaml(trained);
    for (std::size_t at = 0; at < config.size();) {
        const std::size_t end = std::min(config.find('\n', at), config.size());
        yaml += "  " + config.substr(at, end - at) + "\n";
        at = end + 1;
    }
    run_config c = parse_spec(yaml, label, checked).base;
    if (high_order) c.attention.order = *high_order;
    const std::string why = parameter_difference(trained, c);
    if (!why.empty())
        throw config_error("--set: the run was trained as " + variant_label(trained.attention) + "; " +
                           variant_label(c.attention) + " has other parameters: " + why +
                           " (eval can change the variant only when the checkpoint fits it unchanged)");
    return c;
}

std::vector<int> parse_order_list(const std::string& text, const std::string& option) {
    std::vector<int> out;
    auto bad = [&](const std::string& part, const std::string& why) {
        return config_error(option + ": '" + part + "' " + why + " (expected orders from 1 to " +
                            std::to_string(max_eval_order) + " as N, A..B or a list of them, e.g. 1..16,24,32)");
    };
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t end = std::min(text.find(',', at), text.size());
        const std::string part = text.substr(at, end - at);
        const std::size_t dots = part.find("..");
        const auto lo = whole_int(part.substr(0, dots));
        const auto hi = dots == std::string::npos ? lo : whole_int(part.substr(dots + 2));
        if (!lo || !hi) throw bad(part, "is not an order or a range");
        if (*lo < 1 || *hi > max_eval_order) throw bad(part, "is out of range");
        if (*hi < *lo) throw bad(part, "is an empty range");
        for (int n = *lo; n <= *hi; ++n) {
            if (!out.empty() && n <= out.back()) throw bad(part, "repeats or goes back (orders must increase)");
            out.push_back(n);
        }
        at = end + 1;
    }
    return out;
}

template <class T>
std::vector<truncation_row> truncation_sweep(const std::string& run_dir, const run_config& trained,
                                             const run_config& test, numerator_kind numerator,
                                             const std::vector<int>& orders,
                                             const std::function<void(const truncation_row&)>& progress) {
    if (!traits_of(numerator).takes_order)
        throw config_error(std::string("--truncate: ") + to_string(numerator) +
                           " takes no order (a sweep over orders needs taylor or power)");
    const subnormals_flushed as_in_training;  // the model's own row scores as training recorded it
    std::vector<truncation_row> rows;
    const auto data = make_task(test.task, static_cast<std::uint64_t>(test.seed));  // the same set for every row
    auto score = [&](const run_config& c) {
        transformer<T> model = load_run_model<T>(run_dir, trained, c);
        rows.push_back({c.attention, evaluate(model, data->test_set(), c.train.batch), precision_of<T>});
        if (progress) progress(rows.back());
    };
    score(test);
    for (int n : orders) {
        run_config c = test;
        c.attention.numerator = numerator;
        c.attention.order = n;
        const std::string why = parameter_difference(trained, c);
        if (!why.empty())
            throw config_error("--truncate: " + variant_label(c.attention) +
                               " has other parameters than the run: " + why);
        score(c);
    }
    return rows;
}

template std::vector<truncation_row> truncation_sweep<float>(const std::string&, const run_config&, const run_config&,
                                                             numerator_kind, const std::vector<int>&,
                                                             const std::function<void(const truncation_row&)>&);
template std::vector<truncation_row> truncation_sweep<double>(const std::string&, const run_config&, const run_config&,
                                                              numerator_kind, const std::vector<int>&,
                                                              const std::function<void(const truncation_row&)>&);

std::string truncation_csv(const run_config& trained, const std::vector<truncation_row>& rows) {
    const bool text = trained.task.kind == task_kind::text;
    std::string out = csv_line({"trained", "evaluated", "numerator", "order", "test_loss", "bits_per_byte", "token_acc",
                                "seq_acc", "precision"});
    for (const truncation_row& r : rows) {
        out += csv_line({variant_label(trained.attention), variant_label(r.attention), to_string(r.attention.numerator),
                         traits_of(r.attention.numerator).takes_order ? std::to_string(r.attention.order) : "",
                         format_number(r.m.loss), text ? format_number(r.m.loss / std::log(2.0)) : "",
                         format_number(r.m.token_acc), text ? "" : format_number(r.m.seq_acc), to_string(r.precision)});
    }
    return out;
}

}  // namespace attnlab
