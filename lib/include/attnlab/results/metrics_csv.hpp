// metrics.csv of a run: its columns, and the cut back to the rows of a resume
// state's step when `attnlab run` resumes a stopped run (runner.hpp).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

inline const std::vector<std::string> metrics_header = {"step", "split",     "loss",         "token_acc", "seq_acc",
                                                        "lr",   "grad_norm", "tokens_per_s", "elapsed_s"};

// Rows of metrics.csv a run has written after `step` of its steps: the val
// and test rows of step 0, then a train, a val and a test row at each
// evaluation step, and a train row at every other multiple of log_every.
std::size_t metrics_rows_after(const train_config& tc, int step);

// The length of the part of `text` (the contents of the metrics.csv at
// `path`) that holds the header and the rows of steps <= `step`; nullopt,
// with the reason in `why`, when it does not hold exactly the rows a run has
// written by then.
std::optional<std::size_t> metrics_prefix_up_to(const std::string& text, const std::string& path,
                                                const train_config& tc, int step, std::string& why);

// What is wrong with `text`, the contents of the metrics.csv at `path`
// ("<path>: row 12: loss 'abc' is not a number"); empty when it is the header
// and complete rows of metrics_header's columns: a step (an integer, never
// decreasing), a split (train, val or test), and numbers or empty cells.
// `last_step` receives the last row's step (-1 without rows).
std::string metrics_problem(const std::string& text, const std::string& path, int& last_step);

// Cuts the metrics.csv at `path` back to metrics_prefix_up_to (atomically);
// false, with the file untouched and the reason in `why`, when it cannot be
// read or does not hold the rows up to `step` (then the run is redone).
bool keep_metrics_up_to(const std::string& path, const train_config& tc, int step, std::string& why);

}  // namespace attnlab
