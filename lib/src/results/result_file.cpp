// result.yaml of a finished run, written and read with yaml-cpp.
#include "attnlab/results/result_file.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/yaml_quoted.hpp"

namespace attnlab {

namespace {

// A number in YAML's spelling: the non-finite ones are .nan, .inf and -.inf
// (format_number's nan and inf are strings to a YAML reader).
std::string yaml_number(double v) {
    if (std::isnan(v)) return ".nan";
    if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
    return format_number(v);
}

// A form's name as a plain scalar (quadratic, chunked), any other text quoted.
std::string form_name(const std::string& s) {
    for (const parallel_form f : {parallel_form::automatic, parallel_form::quadratic, parallel_form::chunked})
        if (s == to_string(f)) return s;
    return yaml_quoted(s);
}

}  // namespace

std::string run_result_to_yaml(const run_result& r) {
    std::ostringstream s;
    auto metrics = [&](const char* name, const eval_metrics& m) {
        s << name << ": {loss: " << yaml_number(m.loss) << ", token_acc: " << yaml_number(m.token_acc)
          << ", seq_acc: " << yaml_number(m.seq_acc) << "}\n";
    };
    s << "status: " << to_string(r.status) << "\n";
    s << "reason: " << yaml_quoted(r.reason) << "\n";
    s << "steps: " << r.steps << "\n";
    metrics("final_val", r.final_val);
    metrics("final_test", r.final_test);
    s << "best_step: " << r.best_step << "\n";
    metrics("best_val", r.best_val);
    metrics("best_test", r.best_test);
    s << "wall_s: " << yaml_number(r.wall_s) << "\n";
    s << "params: " << r.params << "\n";
    s << "nonpositive_denominator_steps: " << r.nonpositive_denominator_steps << "\n";
    s << "first_nonpositive_step: " << r.first_nonpositive_step << "\n";
    if (r.baselines)  // nats per byte on the test set (text)
        s << "baselines: {unigram_test_loss: " << yaml_number(r.baselines->unigram)
          << ", bigram_test_loss: " << yaml_number(r.baselines->bigram) << "}\n";
    if (!r.attention_form.empty()) s << "attention_form: " << form_name(r.attention_form) << "\n";
    if (r.build)
        s << "build: {commit: " << yaml_quoted(r.build->commit) << ", build_type: " << yaml_quoted(r.build->build_type)
          << ", isa: " << yaml_quoted(r.build->isa) << ", threads: " << r.build->threads << "}\n";
    return s.str();
}

namespace {
run_status parse_status(const std::string& s, const std::string& path) {
    if (s == "ok") return run_status::ok;
    if (s == "diverged") return run_status::diverged;
    if (s == "interrupted") return run_status::interrupted;
    throw io_error(path + ": unknown status '" + s + "'");
}
// A number: YAML's spellings, and also nan, inf and -inf, which attnlab
// wrote for non-finite metrics before it wrote YAML's .nan and .inf.
double parse_number(const YAML::Node& n) {
    if (n.IsScalar()) {
        const std::string& t = n.Scalar();
        if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (t == "inf") return std::numeric_limits<double>::infinity();
        if (t == "-inf") return -std::numeric_limits<double>::infinity();
    }
    return n.as<double>();
}
eval_metrics parse_metrics(const YAML::Node& n) {
    return {parse_number(n["loss"]), parse_number(n["token_acc"]), parse_number(n["seq_acc"])};
}
// Validation metrics, absent (NaN) in result.yaml files written before runs
// had a validation set.
eval_metrics parse_val_metrics(const YAML::Node& n) {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (!n) return {nan, nan, nan};
    return parse_metrics(n);
}
}  // namespace

namespace {

// What attnlab never writes in a result.yaml (a hand edit, a damaged file):
// steps below 0, a best step outside 0..steps, and for a run that finished
// (status ok) a loss that is not a finite number (validation losses when
// recorded: files written before runs had a validation set have none).
// io_error naming the file and the key.
void check_result_values(const run_result& r, bool has_val, const std::string& path) {
    auto bad = [&](const std::string& key, const std::string& why) {
        throw io_error(path + ": " + key + " " + why + " (attnlab never writes it: a damaged or hand-edited file)");
    };
    if (r.steps < 0) bad("steps", std::to_string(r.steps) + " is negative");
    if (r.best_step < 0 || r.best_step > r.steps)
        bad("best_step", std::to_string(r.best_step) + " is outside 0.." + std::to_string(r.steps) + " (steps)");
    if (r.status != run_status::ok) return;  // a diverged run's losses are NaN or infinite
    for (const auto& [key, m, recorded] : {std::tuple{"final_val.loss", r.final_val, has_val},
                                           {"final_test.loss", r.final_test, true},
                                           {"best_val.loss", r.best_val, has_val},
                                           {"best_test.loss", r.best_test, true}})
        // A block of three NaNs is how run_result_to_yaml writes metrics a file never had (a result.yaml
        // from before validation sets): not recorded either.
        if (recorded && !std::isfinite(m.loss) &&
            !(std::isnan(m.loss) && std::isnan(m.token_acc) && std::isnan(m.seq_acc)))
            bad(key, format_number(m.loss) + " is not a finite number, in a run of status ok");
}

}  // namespace

std::optional<run_result> read_run_result(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::nullopt;
    // io_error naming it: a directory, a device, a FIFO or a file over 1 MiB is never read.
    const std::string text = read_input(path, inputs::run_result);
    try {
        const YAML::Node n = YAML::Load(text);
        run_result r;
        r.status = parse_status(n["status"].as<std::string>(), path);
        r.reason = n["reason"].as<std::string>();
        r.steps = n["steps"].as<int>();
        r.final_val = parse_val_metrics(n["final_val"]);
        r.final_test = parse_metrics(n["final_test"]);
        r.best_step = n["best_step"].as<int>();
        r.best_val = parse_val_metrics(n["best_val"]);
        r.best_test = parse_metrics(n["best_test"]);
        r.wall_s = parse_number(n["wall_s"]);
        r.params = n["params"].as<std::size_t>();
        r.nonpositive_denominator_steps = n["nonpositive_denominator_steps"].as<long>();
        r.first_nonpositive_step = n["first_nonpositive_step"].as<int>();
        if (const YAML::Node b = n["baselines"])
            r.baselines = baseline_losses{parse_number(b["unigram_test_loss"]), parse_number(b["bigram_test_loss"])};
        if (n["attention_form"]) r.attention_form = n["attention_form"].as<std::string>();  // absent before chunked
        if (const YAML::Node b = n["build"])  // absent before provenance was recorded
            r.build = build_info{b["commit"].as<std::string>(), b["build_type"].as<std::string>(),
                                 b["isa"].as<std::string>(), b["threads"].as<int>()};
        check_result_values(r, n["final_val"] && n["best_val"], path);
        return r;
    } catch (const YAML::Exception& e) {
        throw io_error(path + ": malformed run result (" + e.what() + ")");
    }
}

}  // namespace attnlab
