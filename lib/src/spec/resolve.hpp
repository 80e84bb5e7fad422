// A spec's base (or a config file) as entries, and the resolution of one run
// from the base, the --set overrides and a sweep point: conditional keys,
// required keys, derived defaults and rules. Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "attnlab/config/run_config.hpp"
#include "diagnostics.hpp"
#include "schema.hpp"
#include "values.hpp"

namespace attnlab::spec_internal {

// Precedence, lowest first: a --set overrides the base, a sweep value both.
enum class origin { base = 0, set = 1, sweep = 2 };

struct entry {
    value v;
    origin from = origin::base;
    where at;
};
using entries = std::map<std::string, entry>;  // dotted key -> value and where it was written

// A spec's base, or a config file: its values and the lines of its maps,
// which missing-key errors point at.
struct config_source {
    std::string file;
    std::string path;                         // "base" in a spec, "" in a config file
    int line = 0;                             // of the key naming the map (or of the map, at top level)
    std::map<std::string, int> section_line;  // section name -> line of its key
    entries values;
    // A spec reads the files its runs train on (a text task's task.path,
    // relative to this folder) and records them; a config.yaml already holds
    // them (empty: not read).
    std::string task_file_folder;
    bool task_file_may_be_missing = false;  // task_files::read_if_present
};

// `key_line`: line of the `base:` key (where a missing key is reported);
// `line`: line of its value.
config_source parse_config(const YAML::Node& node, const std::string& file, const std::string& path, int key_line,
                           int line);

// Keys required whatever the other values are (the conditional ones are
// checked per resolved run, where their condition is known).
void check_required(const config_source& src);

// Whether key `d` means anything in a resolved configuration.
bool applies(const key_def& d, const run_config& c);

// Resolves one run from the base as written, the base after --set and this
// run's entries (a sweep point, or the base after --set); `point` names the
// sweep point in errors ("" for none).
run_config resolve(const config_source& base, const entries& with_set, const entries& run, const std::string& point);

}  // namespace attnlab::spec_internal
