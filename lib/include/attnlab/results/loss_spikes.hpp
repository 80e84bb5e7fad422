// Loss spikes of a training run (summary.csv's loss_spikes, docs/outputs.md).
// A spike is a step whose training loss exceeds k = 1.5 times the median of
// the training losses of the 50 steps before it; the first 50 steps, which
// have no full window, are not judged. k = 1.5 sits well above the step-to-
// step noise of a healthy run (a batch's loss varies by a few per cent around
// the trend) and well below a real blow-up, and the median of 50 steps follows
// the falling trend without being moved by an earlier spike. The count needs
// the loss of every step (train.log_every: 1); a run logged more sparsely has
// no count (an empty cell, never 0).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

inline constexpr double spike_factor = 1.5;  // k
inline constexpr int spike_window = 50;      // previous steps whose median is compared

// The indices i >= window of `losses` (one per step, in order) with
// losses[i] > factor * median(losses[i - window .. i - 1]); a NaN is never a spike.
std::vector<std::size_t> loss_spikes(const std::vector<double>& losses, double factor = spike_factor,
                                     int window = spike_window);

// The training loss of every step 1, 2, ..., n from the `train` rows of a
// run's metrics.csv text (n: the last train row's step); nullopt unless the
// run logged every step (cfg.train.log_every == 1) and the rows hold each
// step once, in order.
std::optional<std::vector<double>> per_step_train_losses(const std::string& metrics_csv, const train_config& cfg);

// The spike count of a run from its metrics.csv file; nullopt when the run
// has no per-step losses or the file cannot be read.
std::optional<long> count_loss_spikes(const std::string& metrics_csv_path, const train_config& cfg);

}  // namespace attnlab
