// Runs every run of an experiment spec and writes SPEC §6's outputs:
//   <out>/<name>/spec.yaml, summary.csv, table.md,
//   <out>/<name>/runs/<run_id>/config.yaml, metrics.csv, model.safetensors, result.yaml.
// A run whose result.yaml exists for the same config.yaml is skipped, so a
// sweep stopped by Ctrl-C or a crash continues where it was; summary.csv and
// table.md are rewritten atomically after every run.
#pragma once
#include <atomic>
#include <string>

#include "attnlab/spec/spec.hpp"

namespace attnlab {

struct runner_options {
    std::string out_root = "results";
    int threads = 0;                          // 0: OpenMP's default (all cores)
    const std::atomic<bool>* stop = nullptr;  // set by SIGINT: finish nothing more, keep what is done
};

struct sweep_outcome {
    std::string dir;  // <out>/<name>
    int total = 0, skipped = 0, ok = 0, diverged = 0;
    bool interrupted = false;
};

sweep_outcome run_sweep(const experiment_spec& spec, const runner_options& opt);

// Sets the thread count of OpenMP and Eigen (n <= 0: leave the default).
void set_threads(int n);

}  // namespace attnlab
