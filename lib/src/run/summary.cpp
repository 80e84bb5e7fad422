// result.yaml of a run, and the sweep's summary.csv and curves.csv
// (table.md is in summary_table.cpp); docs/outputs.md describes them.
#include "attnlab/run/summary.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/run/run_groups.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

std::string run_result_to_yaml(const run_result& r) {
    std::ostringstream s;
    auto metrics = [&](const char* name, const eval_metrics& m) {
        s << name << ": {loss: " << format_number(m.loss) << ", token_acc: " << format_number(m.token_acc)
          << ", seq_acc: " << format_number(m.seq_acc) << "}\n";
    };
    s << "status: " << to_string(r.status) << "\n";
    s << "reason: \"" << r.reason << "\"\n";
    s << "steps: " << r.steps << "\n";
    metrics("final_val", r.final_val);
    metrics("final_test", r.final_test);
    s << "best_step: " << r.best_step << "\n";
    metrics("best_val", r.best_val);
    metrics("best_test", r.best_test);
    s << "wall_s: " << format_number(r.wall_s) << "\n";
    s << "params: " << r.params << "\n";
    s << "nonpositive_denominator_steps: " << r.nonpositive_denominator_steps << "\n";
    s << "first_nonpositive_step: " << r.first_nonpositive_step << "\n";
    return s.str();
}

namespace {
run_status parse_status(const std::string& s, const std::string& path) {
    if (s == "ok") return run_status::ok;
    if (s == "diverged") return run_status::diverged;
    if (s == "interrupted") return run_status::interrupted;
    throw io_error(path + ": unknown status '" + s + "'");
}
eval_metrics parse_metrics(const YAML::Node& n) {
    return {n["loss"].as<double>(), n["token_acc"].as<double>(), n["seq_acc"].as<double>()};
}
}  // namespace

std::optional<run_result> read_run_result(const std::string& path) {
    std::ifstream probe(path);
    if (!probe) return std::nullopt;
    try {
        const YAML::Node n = YAML::LoadFile(path);
        run_result r;
        r.status = parse_status(n["status"].as<std::string>(), path);
        r.reason = n["reason"].as<std::string>();
        r.steps = n["steps"].as<int>();
        r.final_val = parse_metrics(n["final_val"]);
        r.final_test = parse_metrics(n["final_test"]);
        r.best_step = n["best_step"].as<int>();
        r.best_val = parse_metrics(n["best_val"]);
        r.best_test = parse_metrics(n["best_test"]);
        r.wall_s = n["wall_s"].as<double>();
        r.params = n["params"].as<std::size_t>();
        r.nonpositive_denominator_steps = n["nonpositive_denominator_steps"].as<long>();
        r.first_nonpositive_step = n["first_nonpositive_step"].as<int>();
        return r;
    } catch (const YAML::Exception& e) {
        throw io_error(path + ": malformed run result (" + e.what() + ")");
    }
}

namespace {
// state_floats in double: exact when it fits in size_t, else (only Taylor
// states) F (HS + 1) with F = sum over orders of d^m or C(d+m-1, m).
double state_floats_or_estimate(const attention_config& a, int HS, state_layout layout, int T) {
    try {
        return static_cast<double>(state_floats(a, HS, layout, T));
    } catch (const std::overflow_error&) {
        double F = 0, term = 1;  // term = size of order m
        for (int m = 0; m <= a.order; ++m) {
            F += term;
            term *= layout == state_layout::full ? HS : static_cast<double>(HS + m) / (m + 1);
        }
        return F * (HS + 1);
    }
}
}  // namespace

state_size run_state_size(const run_config& cfg) {
    const int HS = cfg.model.d_model / cfg.model.heads, T = max_seq_len(cfg.task);
    state_size s;
    s.finite = has_finite_state(cfg.attention);
    s.symmetric_floats = state_floats_or_estimate(cfg.attention, HS, state_layout::symmetric, T);
    s.full_floats = state_floats_or_estimate(cfg.attention, HS, state_layout::full, T);
    return s;
}

const std::vector<std::string>& metrics_csv_columns() {
    static const std::vector<std::string> columns = {"step", "split",     "loss",         "token_acc", "seq_acc",
                                                     "lr",   "grad_norm", "tokens_per_s", "elapsed_s"};
    return columns;
}

std::map<std::string, std::string> config_map(const run_config& cfg) {
    std::map<std::string, std::string> out;
    for (auto& kv : config_values(cfg)) out.emplace(std::move(kv.key), std::move(kv.value));
    return out;
}

namespace {
const char* const metric_names[] = {"loss", "token_acc", "seq_acc"};

// A key's value in a config_map, "" where the key does not apply.
std::string cell_of(const std::map<std::string, std::string>& config, const std::string& key) {
    const auto it = config.find(key);
    return it == config.end() ? "" : it->second;
}

void add_metrics(std::vector<std::string>& row, const eval_metrics& m) {
    for (double v : {m.loss, m.token_acc, m.seq_acc}) row.push_back(format_number(v));
}
}  // namespace

std::string summary_csv(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    const std::vector<std::string> keys = config_keys();
    std::vector<std::string> header = {"run_id", "status"};
    header.insert(header.end(), keys.begin(), keys.end());
    for (const char* prefix : {"final_val_", "final_test_"})
        for (const char* m : metric_names) header.push_back(std::string(prefix) + m);
    header.emplace_back("best_step");
    for (const char* prefix : {"best_val_", "best_test_"})
        for (const char* m : metric_names) header.push_back(std::string(prefix) + m);
    for (const char* h : {"steps", "wall_s", "params", "state_floats", "state_floats_full", "state_bytes",
                          "nonpositive_denominator_steps", "lr_selected", "reason"})
        header.emplace_back(h);
    const lr_selection lr = select_learning_rates(spec, entries);
    std::string out = csv_line(header);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const summary_entry& e = entries[i];
        const run_result& r = e.result;
        std::vector<std::string> row = {e.point->id, to_string(r.status)};
        const auto config = config_map(e.point->config);
        for (const auto& k : keys) row.push_back(cell_of(config, k));
        add_metrics(row, r.final_val);
        add_metrics(row, r.final_test);
        row.push_back(std::to_string(r.best_step));
        add_metrics(row, r.best_val);
        add_metrics(row, r.best_test);
        row.push_back(std::to_string(r.steps));
        char wall[32];
        std::snprintf(wall, sizeof wall, "%.2f", r.wall_s);
        row.emplace_back(wall);
        row.push_back(std::to_string(r.params));
        const state_size st = run_state_size(e.point->config);
        row.push_back(format_number(st.symmetric_floats));
        row.push_back(format_number(st.full_floats));
        row.push_back(format_number(st.bytes()));
        row.push_back(std::to_string(r.nonpositive_denominator_steps));
        row.emplace_back(lr.swept ? (lr.selected[i] ? "true" : "false") : "");
        row.push_back(describe(r));
        out += csv_line(row);
    }
    return out;
}

std::string curves_csv(const experiment_spec& spec, const std::vector<summary_entry>& entries,
                       const std::string& runs_dir) {
    const std::vector<std::string> keys = grouping_keys(spec, false);
    std::vector<std::string> header = {"run_id", "seed"};
    header.insert(header.end(), keys.begin(), keys.end());
    const std::string metrics_header = csv_line(metrics_csv_columns());
    header.insert(header.end(), metrics_csv_columns().begin(), metrics_csv_columns().end());
    std::string out = csv_line(header);
    for (const summary_entry& e : entries) {
        const std::string path = runs_dir + "/" + e.point->id + "/metrics.csv";
        std::string text;
        try {
            text = read_file(path);
        } catch (const io_error& err) {
            spdlog::warn("curves.csv: {} left out ({})", e.point->id, err.what());
            continue;
        }
        if (text.compare(0, metrics_header.size(), metrics_header) != 0) {
            spdlog::warn("curves.csv: {} left out ({} has other columns)", e.point->id, path);
            continue;
        }
        const auto config = config_map(e.point->config);
        std::vector<std::string> lead = {e.point->id, std::to_string(e.point->config.seed)};
        for (const auto& k : keys) lead.push_back(cell_of(config, k));
        std::string prefix = csv_line(lead);
        prefix.back() = ',';  // the metrics row's fields follow
        // The rows of metrics.csv as written (complete lines only).
        for (std::size_t at = metrics_header.size(); at < text.size();) {
            const auto nl = text.find('\n', at);
            if (nl == std::string::npos) break;
            out += prefix + text.substr(at, nl + 1 - at);
            at = nl + 1;
        }
    }
    return out;
}

void write_summary_files(const std::string& dir, const std::string& runs_dir, const experiment_spec& spec,
                         const std::vector<summary_entry>& entries) {
    write_file_atomic(dir + "/summary.csv", summary_csv(spec, entries));
    write_file_atomic(dir + "/table.md", summary_table_md(spec, entries));
    write_file_atomic(dir + "/curves.csv", curves_csv(spec, entries, runs_dir));
}

}  // namespace attnlab
