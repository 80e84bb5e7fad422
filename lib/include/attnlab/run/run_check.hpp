// What a run directory holds, as `attnlab run` and `attnlab summarize` judge
// it (docs/outputs-policy.md, "Runs are never lost"): a run is finished when
//   - config.yaml is there (its text is the run's configuration),
//   - result.yaml is there, readable, with status ok or diverged,
//   - metrics.csv is there and its last row is the step result.yaml gives
//     (at most that step for a diverged run, which stops between evaluations),
//   - model.safetensors is there when the status is ok.
// A run with result.yaml but a file wrong or missing is damaged: the problem
// names the file.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attnlab/train/trainer.hpp"

namespace attnlab {

enum class run_dir_state {
    absent,      // no config.yaml: never started
    unfinished,  // config.yaml but no result.yaml (or an interrupted one): in progress, stopped or killed
    finished,
    damaged,  // result.yaml, but another file is wrong or missing (`problem` names it)
};

struct run_dir_check {
    run_dir_state state = run_dir_state::absent;
    std::string config_yaml;           // config.yaml's text (unless absent)
    std::optional<run_result> result;  // finished, damaged (a readable one), or unfinished with status interrupted
    std::string problem;               // damaged: "<file>: what is wrong"
};

// Reads <run_dir> by the rules above. Never throws for a run's own files.
run_dir_check check_run_dir(const std::string& run_dir);

// A key whose value differs between two config.yaml texts, as dotted keys
// ("train.steps") and YAML values ("3000" -> "300"); "(none)" when a side has
// no such key. A text task's task.path is not compared when both sides record
// task.size and task.sha256: the same bytes at another path (a repository
// cloned elsewhere) are the same run.
struct config_difference {
    std::string key, old_value, new_value;
};
std::vector<config_difference> config_differences(const std::string& old_yaml, const std::string& new_yaml);
// Whether two config.yaml texts describe the same run: the same text, or no difference above.
bool same_run_config(const std::string& old_yaml, const std::string& new_yaml);
// "<experiment>/runs/<run_id>" of a starting checkpoint's path (train.init: a run
// folder or its model.safetensors): what names a trained run wherever the results
// folder lies; the whole path when it has fewer parts.
std::string checkpoint_run_folder(const std::string& path);
// "train.steps 3000 -> 300, train.lr 0.001 -> 0.003"
std::string differences_text(const std::vector<config_difference>& diffs);

}  // namespace attnlab
