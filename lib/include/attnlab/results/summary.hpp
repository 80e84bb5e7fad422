// The results module (layer 7 of lib/README.md's table): result tables and
// statistics made from finished runs. It owns a run's result.yaml
// (result_file.hpp) and metrics.csv (metrics_csv.hpp), groups of runs over
// seeds (run_groups.hpp), the sweep's summary files (this header), paired
// comparisons (comparisons.hpp) and loss spikes (loss_spikes.hpp). It trains
// nothing and looks for no runs: run/, above it, trains them and hands the
// finished ones here.
//
// The sweep's summary.csv, curves.csv and table.md, built from its runs'
// results (result.yaml, read and written by result_file.hpp) and metrics.csv;
// every column is described in docs/outputs.md.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/results/result_file.hpp"  // run_result_to_yaml, read_run_result
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

// A finished run, as it appears in the summary.
struct summary_entry {
    const run_point* point;
    run_result result;
    // Steps whose training loss spiked (results/loss_spikes.hpp); none
    // without per-step losses (train.log_every != 1). write_summary_files
    // counts them from metrics.csv.
    std::optional<long> loss_spikes = std::nullopt;
    // The first evaluation step at which the run solves its task on
    // validation (results/steps_to_solve.hpp); none when it never does, and for
    // text. write_summary_files reads it from metrics.csv.
    std::optional<long> steps_to_solve = std::nullopt;
};

// State of one attention layer and head in recurrent form (docs/attention.md): floats
// of S and z in the symmetric and full Taylor layouts, or of the key/value
// cache at the run's longest sequence for variants without a finite state.
// Counts are doubles: the full layout of a high Taylor order (32^12 floats
// for order 12 at head size 32) does not fit in 64 bits, and is still worth
// printing.
struct state_size {
    bool finite = true;
    double symmetric_floats = 0, full_floats = 0;
    double bytes() const { return symmetric_floats * sizeof(float); }  // float32, symmetric layout
};
state_size run_state_size(const run_config& cfg);

// The columns of a run's metrics.csv.
const std::vector<std::string>& metrics_csv_columns();

// A run's resolved configuration by dotted key, values as config.yaml writes
// them; keys that do not apply to the run are absent.
std::map<std::string, std::string> config_map(const run_config& cfg);

// One row per run: run_id, status, every configuration key (config_keys(),
// empty where a key does not apply to the run), the final val and test
// metrics, the best step (lowest val loss) and the val and test metrics
// there (bits_per_byte beside each loss for text), the baselines of text
// runs (unigram and bigram test loss, nats and bits), steps, wall_s, params, state size per layer and head, the steps
// with a non-positive softmax sum, lr_selected (when train.lr is swept), reason,
// loss_spikes (empty without per-step losses), steps_to_solve (empty when never).
std::string summary_csv(const experiment_spec& spec, const std::vector<summary_entry>& entries);

// Every entry's metrics.csv (<runs_dir>/<run_id>/metrics.csv) in one long
// table, each row led by run_id, seed and the other swept keys' values. A run
// whose metrics.csv is missing or has other columns is left out, with a warning.
std::string curves_csv(const experiment_spec& spec, const std::vector<summary_entry>& entries,
                       const std::string& runs_dir);

// The final test metrics of each group of runs that differ only in their
// seed: mean ± std and each seed's value, the fraction of seeds that solve
// the task (token acc >= 0.99); when train.lr is swept, first each variant
// at its chosen rate (run_groups.hpp).
std::string summary_table_md(const experiment_spec& spec, const std::vector<summary_entry>& entries);

// Writes <dir>/summary.csv, table.md and curves.csv (each atomically) for
// the finished runs `entries`, whose directories are in <runs_dir>.
void write_summary_files(const std::string& dir, const std::string& runs_dir, const experiment_spec& spec,
                         const std::vector<summary_entry>& entries);

inline constexpr double solved_token_acc = 0.99;
inline constexpr double solved_copy_seq_acc = 0.9;

// The accuracy solves_task judges a run by, and its name.
inline double solving_accuracy(task_kind kind, const eval_metrics& m) {
    return kind == task_kind::copy ? m.seq_acc : m.token_acc;
}
inline const char* solving_accuracy_name(task_kind kind) {
    return kind == task_kind::copy ? "sequence accuracy" : "token accuracy";
}

// Whether a run's final test metrics count as solving its task: for copy
// every token of a 32-63 token copy must be right, so a run counts when
// >= 90 % of its copies are exact (a 0.99 token accuracy can hide a copy in
// two with an error); for the other synthetic tasks a token accuracy of
// >= 0.99. A language model (text) never "solves" its task.
inline bool solves_task(task_kind kind, const eval_metrics& test) {
    if (kind == task_kind::text) return false;
    return solving_accuracy(kind, test) >= (kind == task_kind::copy ? solved_copy_seq_acc : solved_token_acc);
}

// A loss in nats as bits (per byte, for text): loss / ln 2.
inline double bits(double nats) { return nats / 0.69314718055994530942; }

}  // namespace attnlab
