// The sweep's summary.csv and table.md, built from its runs' results
// (result.yaml, read and written by result_file.hpp).
#pragma once
#include <string>
#include <vector>

#include "attnlab/run/result_file.hpp"  // run_result_to_yaml, read_run_result
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

// A finished run, as it appears in the summary.
struct summary_entry {
    const run_point* point;
    run_result result;
};

// State of one attention layer and head in recurrent form (SPEC §2): floats
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

// One row per run: run_id, status, every swept key, final and best test
// metrics, steps, wall_s, params, state size per layer and head, the steps
// with a non-positive softmax sum, reason.
std::string summary_csv(const experiment_spec& spec, const std::vector<summary_entry>& entries);

// Mean ± std over seeds of the final test metrics, grouped by the other swept
// keys, and the fraction of seeds that solve the task (token acc >= 0.99).
std::string summary_table_md(const experiment_spec& spec, const std::vector<summary_entry>& entries);

inline constexpr double solved_token_acc = 0.99;

}  // namespace attnlab
