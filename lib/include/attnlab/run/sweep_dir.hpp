// The results directory of a sweep (docs/outputs.md) as several processes share it:
// shards of one spec on one machine or many (a shared filesystem), each
// writing its own runs into the same results/<name>/.
//
//   spec.yaml       the spec's text under one comment line naming it and the --set overrides
//   overrides.yaml  the --set overrides as a YAML list of strings: what `summarize` re-applies
//   summary.csv, curves.csv, table.md   the whole sweep (run without --shard, or `attnlab summarize`)
//   shards/<I>-of-<N>/summary.csv, curves.csv, table.md   the runs of one shard
//   runs/<run_id>/  config.yaml, metrics.csv, model.safetensors, result.yaml, .lock,
//                   resume.state (a run stopped mid-way; see runner.hpp)
//
// A run is done when its result.yaml exists beside a config.yaml equal to the
// one the spec gives it; result.yaml is written last, atomically, so no
// half-written run is ever taken as done (see runner.hpp). One run's
// directory, its "done" test and its lock are in run_dir.hpp.
#pragma once
#include <string>
#include <vector>

#include "attnlab/results/summary.hpp"
#include "attnlab/spec/spec.hpp"

namespace attnlab {

// spec.yaml's first line: "# attnlab V: spec PATH as run --set K=V ...", with
// backslashes and control characters of the path and overrides escaped (\\,
// \n, \r, \xHH) so that it stays one comment line whatever the file's name.
std::string spec_header(const experiment_spec& spec);

// Writes <dir>/overrides.yaml, then <dir>/spec.yaml: the spec as run.
void write_spec_as_run(const std::string& dir, const experiment_spec& spec);

// spec_folder.txt: the spec's folder (where a relative task.path resolves)
// as seen from the sweep directory `dir`, which load_spec_as_run reads back.
inline const std::string spec_folder_file = "spec_folder.txt";
std::string spec_folder_from(const std::string& dir, const std::string& folder);

// The spec of a results directory, with the same runs and configurations as
// when it was run: <dir>/spec.yaml with the overrides of <dir>/overrides.yaml
// (for directories written before that file existed: the "--set KEY=VALUE"
// words of spec.yaml's first line). Throws config_error when <dir>/spec.yaml
// is missing or no longer a valid spec, io_error when overrides.yaml is malformed.
// `files`: whether a text task's file must be on this machine (spec.hpp).
experiment_spec load_spec_as_run(const std::string& dir, task_files files = task_files::read);

// Membership of the `attnlab run` processes writing one results directory:
// each holds a shared flock on <dir>/.users for its lifetime. The constructor
// waits for <dir>/.lock (held by one joining process at a time, briefly) and
// learns whether another live process is a member; the caller compares its
// spec with the directory's spec.yaml, writes its own, then join()s, which
// releases <dir>/.lock. So two processes with different specs for one folder
// cannot both go ahead (docs/outputs-policy.md, "Runs are never lost").
class sweep_membership {
public:
    explicit sweep_membership(const std::string& dir);
    ~sweep_membership();
    sweep_membership(const sweep_membership&) = delete;
    sweep_membership& operator=(const sweep_membership&) = delete;
    bool others_present() const { return others_; }
    void join();

private:
    std::string dir_;
    int entry_fd_ = -1, users_fd_ = -1;
    bool others_ = false;
};

// What differs between the spec `spec` and the spec as run in <dir>
// (spec.yaml's text and overrides.yaml): empty when they are the same; else
// a text naming the changed keys of the runs both have, e.g.
// "train.steps 3000 -> 300 in 8 runs (seed=0, ...)".
std::string spec_as_run_difference(const std::string& dir, const experiment_spec& spec);

// `attnlab summarize DIR`: rebuilds DIR/summary.csv, curves.csv and table.md from
// DIR/spec.yaml (load_spec_as_run) and every done run's result.yaml, rows in
// spec order, whichever process or shard trained them. A text experiment whose
// file is not on this machine (a fresh clone without the corpus) is summarized
// from the size and sha256 its finished runs recorded.
struct summarize_outcome {
    int total = 0;                                             // runs of the spec
    int found = 0;                                             // done, in the summary
    std::vector<std::pair<std::string, std::string>> missing;  // run id, why not done
    std::vector<std::string> strays;                           // dirs in runs/ that are no run of the spec
    std::vector<std::string> lr_warnings;  // learning_rate_warnings: choices at an edge, grids where nothing solved
    std::string builds;                    // build_mix_text of the done runs: "" when one build made them all
    std::vector<std::string> comparison_warnings;  // comparison_build_warnings: pairs across builds
};
// `flags`: summarize's report options (add_report_options: a report added
// to the spec's, selection seeds), or null.
summarize_outcome summarize_sweep_dir(const std::string& dir, const report_flags* flags = nullptr);

// When the runs were made by more than one build of attnlab (result.yaml's
// `build:`: commit, build type, kernels' instruction set, threads), the
// builds with their run counts, e.g. "3 runs by 1a2b3c Release avx2 2
// threads, 1 run by (not recorded)"; "" when one build made them all.
// Their results then agree within float noise only (docs/running.md).
std::string build_mix_text(const std::vector<summary_entry>& entries);

}  // namespace attnlab
