// The sweep's summary.csv and curves.csv (table.md is in summary_table.cpp;
// result.yaml in run_dir.cpp); docs/outputs.md describes them.
#include "attnlab/results/summary.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/results/comparisons.hpp"
#include "attnlab/results/loss_spikes.hpp"
#include "attnlab/results/steps_to_solve.hpp"
#include "attnlab/results/metrics_csv.hpp"
#include "attnlab/results/run_groups.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace {
// state_floats in double: exact when it fits in size_t, else (only series
// states) F (HS + 1) with F = sum over the series' powers m of d^m or C(d+m-1, m).
double state_floats_or_estimate(const attention_config& a, int HS, state_layout layout, int T) {
    try {
        return static_cast<double>(state_floats(a, HS, layout, T));
    } catch (const std::overflow_error&) {
        double F = 0;
        for (const series_term& t : terms_of(a)) {
            double term = 1;  // the size of power m, factor by factor
            for (int m = 0; m < t.power; ++m)
                term *= layout == state_layout::full ? HS : static_cast<double>(HS + m) / (m + 1);
            F += term;
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

const std::vector<std::string>& metrics_csv_columns() { return metrics_header; }

std::map<std::string, std::string> config_map(const run_config& cfg) {
    std::map<std::string, std::string> out;
    for (auto& kv : config_values(cfg)) out.emplace(std::move(kv.key), std::move(kv.value));
    return out;
}

namespace {
// bits_per_byte = loss / ln 2, for text runs only (empty for the other tasks).
const char* const metric_names[] = {"loss", "token_acc", "seq_acc", "bits_per_byte"};
// The text task's reference test losses (result.yaml's baselines), nats and bits per byte.
const char* const baseline_columns[] = {"unigram_test_loss", "unigram_test_bits_per_byte", "bigram_test_loss",
                                        "bigram_test_bits_per_byte"};

// A key's value in a config_map, "" where the key does not apply.
std::string cell_of(const std::map<std::string, std::string>& config, const std::string& key) {
    const auto it = config.find(key);
    return it == config.end() ? "" : it->second;
}

// A metric that does not apply to the run is an empty cell, never 0: seq_acc
// where it is NaN (text), bits_per_byte for tasks other than text.
void add_metrics(std::vector<std::string>& row, const eval_metrics& m, const task_config& t) {
    row.push_back(format_number(m.loss));
    row.push_back(format_number(m.token_acc));
    row.push_back(std::isnan(m.seq_acc) ? "" : format_number(m.seq_acc));
    row.push_back(t.kind == task_kind::text ? format_number(bits(m.loss)) : "");
}

void add_baselines(std::vector<std::string>& row, const std::optional<baseline_losses>& b) {
    for (double nats : {b ? b->unigram : NAN, b ? b->bigram : NAN}) {
        row.push_back(b ? format_number(nats) : "");
        row.push_back(b ? format_number(bits(nats)) : "");
    }
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
    for (const char* h : baseline_columns) header.emplace_back(h);
    for (const char* h : {"steps", "wall_s", "params", "state_floats", "state_floats_full", "state_bytes",
                          "nonpositive_denominator_steps", "lr_selected", "reason"})
        header.emplace_back(h);
    header.emplace_back("loss_spikes");
    header.emplace_back("steps_to_solve");
    const lr_selection lr = select_learning_rates(spec, entries);
    std::string out = csv_line(header);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const summary_entry& e = entries[i];
        const run_result& r = e.result;
        std::vector<std::string> row = {e.point->id, to_string(r.status)};
        const auto config = config_map(e.point->config);
        for (const auto& k : keys) row.push_back(cell_of(config, k));
        const task_config& t = e.point->config.task;
        add_metrics(row, r.final_val, t);
        add_metrics(row, r.final_test, t);
        row.push_back(std::to_string(r.best_step));
        add_metrics(row, r.best_val, t);
        add_metrics(row, r.best_test, t);
        add_baselines(row, r.baselines);
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
        row.push_back(e.loss_spikes ? std::to_string(*e.loss_spikes) : "");  // empty, never 0, without a count
        row.push_back(e.steps_to_solve ? std::to_string(*e.steps_to_solve) : "");
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
        int last_step = -1;  // a damaged file (a cell that is no number, a ragged row) is never merged
        if (const std::string problem = metrics_problem(text, path, last_step); !problem.empty()) {
            spdlog::warn("curves.csv: {} left out ({})", e.point->id, problem);
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
                         const std::vector<summary_entry>& given) {
    std::vector<summary_entry> entries = given;
    for (summary_entry& e : entries) {
        const std::string metrics = runs_dir + "/" + e.point->id + "/metrics.csv";
        e.loss_spikes = count_loss_spikes(metrics, e.point->config.train);
        e.steps_to_solve = steps_to_solve(metrics, e.point->config.task.kind);
    }
    write_file_atomic(dir + "/summary.csv", summary_csv(spec, entries));
    write_file_atomic(dir + "/table.md", summary_table_md(spec, entries));
    // comparisons.csv is derived from the spec's reports: without one it would be stale.
    if (!spec.reports.empty())
        write_file_atomic(dir + "/comparisons.csv", comparisons_csv(spec, compare_all(spec, entries)));
    else
        std::remove((dir + "/comparisons.csv").c_str());
    write_file_atomic(dir + "/curves.csv", curves_csv(spec, entries, runs_dir));
}

}  // namespace attnlab
