// Sweeps: --set overrides, grids and unions of grids, seeds, run ids, and
// the expansion of a spec into its resolved runs. Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/spec/spec.hpp"
#include "diagnostics.hpp"
#include "resolve.hpp"

namespace attnlab::spec_internal {

// A spec expands to at most max_runs runs, counted before they are made.
inline constexpr std::size_t max_runs = 100000;
inline constexpr std::size_t max_file_name = 255;  // the name and every run id name a directory

// One "dotted.key=value" override, its value checked within `limits`; errors
// name `option` (--set, or the summarize option that gives the value, such
// as --baseline).
entry parse_set(const std::string& s, const config_limits& limits, const std::string& option = "--set");

// One grid of a sweep: its keys as written and their values.
struct axis {
    std::string key;
    std::vector<entry> values;
};
// A grid's own `seeds:` (when it lists them) replace the spec's seeds at its
// points: a learning-rate grid on two seeds, then more seeds at the chosen
// rate, in one spec.
struct grid {
    std::vector<axis> axes;
    std::optional<std::vector<entry>> seeds;
};

// `sweep:` as one grid or a list of grids; `line`: line of its value.
std::vector<grid> parse_sweep(const YAML::Node& n, const std::string& file, int line);
// A list of distinct seeds; `path`: the key errors name (seeds, or sweep[i].seeds).
std::vector<entry> parse_seeds(const YAML::Node& n, const std::string& file, int line, const std::string& path);

// A name that can name a directory: [A-Za-z0-9._-]+, not "." or "..", at most max_file_name.
bool name_is_safe(const std::string& s);

// "key=value,key=value" with characters outside [A-Za-z0-9._=,+-] replaced by '_'.
std::string run_id(const std::vector<swept_value>& swept);

// Refuses, at `at`, a sweep of more than max_runs runs before making them
// (`n_seeds`: the spec's seeds, for grids without their own).
void check_run_count(const std::vector<grid>& grids, std::size_t n_seeds, const where& at);

// Appends to spec.runs every point of every grid (or the base alone when
// there are none) times every seed (the grid's own, else `seeds`), resolved, deduplicated by id;
// spec.swept_keys must list the swept keys, seed last. A run id too long to
// name a directory is refused at `id_at`.
void expand_runs(experiment_spec& spec, const config_source& base, const entries& with_set,
                 const std::vector<grid>& grids, const std::vector<entry>& seeds, const where& id_at);

}  // namespace attnlab::spec_internal
