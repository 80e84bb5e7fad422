// Experiment specs (docs/spec-reference.md): a YAML file with a base run configuration, an
// optional sweep (a grid, or a union of grids) and seeds, expanded into fully
// resolved, checked runs. Every bad input throws config_error with one line
// "<file>:<line>: <dotted.key.path>: <what is wrong, expected vs got>".
// The keys, their defaults and the rules are in docs/spec-reference.md.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "attnlab/attention/variant_table.hpp"  // the variants' YAML names
#include "attnlab/config/run_config.hpp"
#include "attnlab/tasks/task_table.hpp"  // the tasks' YAML names

namespace attnlab {

// One swept key of a run and its value as text ("attention.order", "4").
struct swept_value {
    std::string key;
    std::string value;
};

struct run_point {
    std::string id;                  // "attention.numerator=taylor,attention.order=4,seed=1", filesystem-safe
    run_config config;               // fully resolved
    std::vector<swept_value> swept;  // swept keys of this run in swept_keys order, seed last
};

// A variant named by some of its swept keys' values ("attention.numerator": "exp").
using key_values = std::vector<std::pair<std::string, std::string>>;

// How the p-values of one family of comparisons are adjusted (comparisons.hpp).
enum class correction_kind { holm, none };

// `report:` of a spec, one family of comparisons (comparisons.hpp): each
// variant among `among` compared with each baseline.
struct report_options {
    std::string name;                   // "" when the report has none
    std::vector<key_values> baselines;  // one or more; a value as a run id writes it
    std::vector<std::string> match;     // swept keys a variant's baseline shares with the variant
    // The variants compared: those whose value of each key is one of the listed
    // ones; empty: every variant.
    std::vector<std::pair<std::string, std::vector<std::string>>> among;
    std::vector<std::pair<std::string, double>> margins;  // metric name -> declared margin (> 0)
    correction_kind correction = correction_kind::holm;
};

struct experiment_spec {
    std::string name;                        // filesystem-safe: [A-Za-z0-9._-]+
    std::string path;                        // file it came from (the label for parse_spec)
    std::string folder;                      // absolute: where a relative task.path (text) resolves
    std::string source_text;                 // file text as read
    std::vector<std::string> set_overrides;  // the --set strings applied
    run_config base;                         // resolved base (after --set)
    std::vector<std::string> swept_keys;     // union over grids, first-appearance order, then "seed"
    std::vector<run_point> runs;             // grid by grid, row-major over the grid's keys, seeds innermost;
                                             // deduplicated by id
    std::vector<report_options> reports;     // `report:`, one map or a list of them; empty: no comparisons
    // Seeds that only choose learning rates (report.select_on): left out of every
    // comparison. Empty: rates are chosen on the seeds every rate has.
    std::vector<int> selection_seeds;
};

// summarize's report options, as given on its command line.
struct report_flags {
    std::vector<std::string> baselines;  // each one baseline: "KEY=VALUE[,KEY=VALUE...]"
    std::vector<std::string> match;      // KEY
    std::vector<std::string> among;      // "KEY=VALUE[,VALUE...]"
    std::vector<std::string> margins;    // "METRIC=VALUE"
    std::string correction;              // "holm", "none" or "" (holm)
    std::vector<int> select_on;          // seeds that only choose learning rates
};
// Adds the report of `flags` to the spec's reports (a family of its own,
// named "summarize options"; nothing when no --baseline is given) and sets
// its selection seeds from --select-on; checked like a spec's `report:`
// (keys must be swept, values valid). Errors name the option.
void add_report_options(experiment_spec& spec, const report_flags& flags);

// Reads and checks a spec file; `set_overrides` are "dotted.key=value" strings.
experiment_spec load_spec(const std::string& path, const std::vector<std::string>& set_overrides = {});

// How a spec treats a text task's file (task.path). `read`: it must exist; it
// is read, checked and its size and sha256 recorded. `read_if_present`: the
// same when it exists; when it does not, only its path is resolved and
// task.size and task.sha256 stay as the spec gives them (possibly unset),
// for a caller that takes them from finished runs (summarize, on a machine
// without the corpus).
enum class task_files { read, read_if_present };

// Same, from text; `file_label` names the source in error messages. A
// relative task.path resolves against `folder`, by default the label's folder.
experiment_spec parse_spec(const std::string& yaml_text, const std::string& file_label,
                           const std::vector<std::string>& set_overrides = {}, const std::string& folder = "",
                           task_files files = task_files::read);

// The complete resolved configuration as YAML (every meaningful key, defaults
// included, floats round-trip exactly); what runs/<run_id>/config.yaml holds.
std::string run_config_to_yaml(const run_config& cfg);

// Every dotted key of a run configuration ("seed", "task.kind", ...), in
// config.yaml order, whether or not it applies to a given run.
std::vector<std::string> config_keys();
// The keys that apply to `cfg` and their values as config.yaml writes them,
// in config_keys() order (a conditional key that means nothing is left out).
std::vector<swept_value> config_values(const run_config& cfg);

// Reads a config written by run_config_to_yaml (or any file in the format of
// a spec's `base`), with the same checks and messages as a spec's base.
run_config run_config_from_yaml_file(const std::string& path);
run_config run_config_from_yaml(const std::string& yaml_text, const std::string& file_label);

}  // namespace attnlab
