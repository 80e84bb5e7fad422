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
#include "attnlab/spec/overrides.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subnormals.hpp"

namespace attnlab {

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

run_config evaluated_config(const run_config& trained, const std::vector<std::string>& overrides) {
    const run_config c = apply_overrides(trained, overrides, evaluation_limits());
    const std::string why = parameter_difference(trained, c);
    if (why.empty()) return c;
    if (variant_label(c.attention) != variant_label(trained.attention))
        throw config_error("--set: the run was trained as " + variant_label(trained.attention) + "; " +
                           variant_label(c.attention) + " has other parameters: " + why +
                           " (eval can change the variant only when the checkpoint fits it unchanged)");
    throw config_error("--set: the model these keys describe has other parameters than the run's checkpoint: " + why +
                       " (a model with learned positions is tied to the length it was trained on)");
}

std::vector<int> parse_order_list(const std::string& text, const std::string& option) {
    std::vector<int> out;
    auto bad = [&](const std::string& part, const std::string& why) {
        return config_error(option + ": '" + part + "' " + why + " (expected orders from " +
                            std::to_string(lowest_order) + " to " + std::to_string(evaluation_limits().max_order) +
                            " as N, A..B or a list of them, e.g. 1..16,24,32)");
    };
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t end = std::min(text.find(',', at), text.size());
        const std::string part = text.substr(at, end - at);
        const std::size_t dots = part.find("..");
        const auto lo = whole_int(part.substr(0, dots));
        const auto hi = dots == std::string::npos ? lo : whole_int(part.substr(dots + 2));
        if (!lo || !hi) throw bad(part, "is not an order or a range");
        if (*lo < lowest_order || *hi > evaluation_limits().max_order) throw bad(part, "is out of range");
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
        const run_config c = apply_overrides(
            test, {std::string("attention.numerator=") + to_string(numerator), "attention.order=" + std::to_string(n)},
            evaluation_limits());
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
