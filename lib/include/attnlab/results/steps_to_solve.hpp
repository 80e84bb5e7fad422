// How soon a run solves its task (summary.csv's steps_to_solve,
// docs/outputs.md): the first evaluation step whose VALIDATION accuracy
// reaches the solve threshold of summary.hpp's solves_task (copy: sequence
// accuracy >= 0.9; the other synthetic tasks: token accuracy >= 0.99). A
// continuous outcome beside the all-or-nothing "solved": two variants that
// both solve every seed can still differ in how long it takes them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

// From the text of a run's metrics.csv: the step of the first `val` row at
// the threshold; nullopt when none reaches it, for text (nothing to solve),
// or when the rows cannot be read.
std::optional<long> steps_to_solve_in(const std::string& metrics_csv, task_kind kind);
// The same from the file at `path` (nullopt when it cannot be read).
std::optional<long> steps_to_solve(const std::string& path, task_kind kind);

// The median over runs, where a run that never solved counts as later than
// every run that did: nullopt when half the runs or more never solved.
std::optional<double> median_steps_to_solve(const std::vector<std::optional<long>>& steps);

}  // namespace attnlab
