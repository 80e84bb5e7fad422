// The guards that keep finished runs (docs/outputs-policy.md, "Runs are
// never lost"), applied by the runner before it trains anything: what its
// runs' folders hold, and its claim on the results folder.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

struct sweep_scan {
    std::vector<std::pair<std::size_t, run_result>> done;  // finished with the spec's configuration
    std::vector<std::size_t> to_train;                     // the others, in spec order
    std::vector<std::string>
        notes;  // warnings about runs to train (another config, damaged), once the sweep goes ahead
};

// Reads the folder of each of `runs` (spec indices) under <dir>/runs/. A
// finished run whose config.yaml differs from the spec's is a config_error
// naming every such run and the keys that differ, unless `overwrite` (then a
// warning lists them); unfinished runs with another configuration and damaged
// runs are named in `notes`. `tag(i)` prefixes the messages of run i.
// `others` (other shards' runs) are not trained, but a finished one whose
// config.yaml differs is refused the same way.
sweep_scan scan_sweep_runs(const experiment_spec& spec, const std::string& dir, const std::vector<std::size_t>& runs,
                           bool overwrite, const std::function<std::string(std::size_t)>& tag,
                           const std::vector<std::size_t>& others = {});

// Joins the processes writing <dir> (sweep_membership): a config_error when
// another live one runs another spec or other --set there, unless
// `overwrite`; then writes this spec as the folder's spec.yaml and removes
// the stale temporaries of killed processes of this host. The membership is
// held until the returned object is destroyed.
std::unique_ptr<sweep_membership> claim_sweep_dir(const std::string& dir, const experiment_spec& spec, bool overwrite);

}  // namespace attnlab
