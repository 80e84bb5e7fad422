// `report:` of a spec, the baseline of its paired comparisons, and the same
// from summarize's --baseline/--match options. Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "attnlab/spec/spec.hpp"

namespace attnlab::spec_internal {

// `report: {name, baselines: [{KEY: VALUE, ...}, ...], match: [KEY, ...],
// among: {KEY: [VALUE, ...]}, margin: {METRIC: M}, correction: holm|none,
// select_on: [SEED, ...]}` (`baseline: {...}` for one), or a list of such
// maps; `line`: line of its value. Keys must be swept (seed and train.lr
// excepted: a variant is compared at its chosen rate, seed by seed). The
// reports' select_on (all that name it must agree) goes to `selection_seeds`.
std::vector<report_options> parse_reports(const YAML::Node& n, const std::string& file, int line,
                                          const std::vector<std::string>& swept_keys,
                                          std::vector<int>& selection_seeds);

}  // namespace attnlab::spec_internal
