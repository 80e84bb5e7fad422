// One run's directory, <out>/<name>/runs/<run_id>/, as `attnlab run` writes
// it and every later reader (a restart, `attnlab summarize`, `attnlab eval`)
// reads it:
//   config.yaml        the run's configuration (run_config_to_yaml)
//   metrics.csv        a row per evaluation (runner.cpp streams it)
//   model.safetensors  the trained parameters (train/checkpoint.hpp)
//   resume.state       a run stopped mid-way (train/resume_state.hpp)
//   result.yaml        written last, atomically: it marks the run done
//   .lock              flock(2) of the process training the run
//   probe.csv, ...     outputs of analyses of the trained run (attnlab probe)
// The sweep's directory around it is in sweep_dir.hpp; the order in which a
// run's files are written, and why, in runner.hpp.
#pragma once
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/model/transformer.hpp"
#include "attnlab/results/result_file.hpp"  // run_result_to_yaml, read_run_result
#include "attnlab/train/trainer.hpp"

namespace attnlab {

inline constexpr const char* result_filename = "result.yaml";

// Files that analyses of a trained run write into its folder: attnlab probe's
// tables (write_probe_files, analysis/probe.hpp) and figures. Named here, below the
// analyses, because the run's folder must know them: they describe its
// model, so clear_run_dir removes them and replace_run_dir leaves them behind.
inline constexpr const char* probe_terms_filename = "probe.csv";        // layer,head,order,mean_abs_term
inline constexpr const char* probe_heads_filename = "probe_heads.csv";  // one row per (layer, head)
// probe.csv, probe_heads.csv, probe.png or probe.pdf: what a redo of the run removes.
bool is_probe_output(const std::string& filename);

// run_result_to_yaml written atomically to <run_dir>/result.yaml.
void write_run_result(const std::string& run_dir, const run_result& r);

// The result of a finished run (run_check.hpp: result.yaml with a status other
// than interrupted, metrics.csv up to its steps, the checkpoint when ok) beside
// a config.yaml whose text is `config_yaml`. nullopt otherwise; a damaged run
// counts as not done (with a warning naming the file).
std::optional<run_result> finished_run_result(const std::string& run_dir, const std::string& config_yaml);

// Why a run is not done, for messages: "not started", "in progress or
// killed (no result.yaml)", "stopped mid-way: resume.state saved ...",
// "config.yaml differs from the spec", ...
std::string unfinished_reason(const std::string& run_dir, const std::string& config_yaml);

// Leftovers of an earlier attempt at a run, removed before it is redone
// (under its lock): result.yaml first, which must never outlive the rest,
// then config.yaml, metrics.csv, the checkpoint, the resume state, the
// outputs of attnlab probe (they describe the old model) and temporary files. Throws io_error naming a file it cannot
// remove.
void clear_run_dir(const std::string& run_dir);
// Temporary files of killed writers in a run directory (*.tmp*).
void remove_run_temporaries(const std::string& run_dir);

// The files that make up the run in `run_dir` (config.yaml, metrics.csv,
// result.yaml, model.safetensors, resume.state, .lock): what no output of an
// analysis of the run (attnlab eval --out, --per-position) may replace.
std::vector<std::string> run_own_files(const std::string& run_dir);

// Where `attnlab run --overwrite` trains the new run that replaces the
// finished run <out>/<name>/runs/<run_id>: <out>/<name>/replacing/<run_id>,
// so that the old run stays whole until the new one is done.
std::string replacement_dir(const std::string& run_dir);
// Throws io_error naming it when `replacing/` or `replacing/<run_id>` of
// `replacement` (replacement_dir) exists as anything but a directory: a
// symbolic link there would take the new run, and the old one after the
// exchange, out of the results folder. Absent or real folders pass.
void check_replacement_dir(const std::string& replacement);
// Puts the finished run in `replacement` in place of `run_dir` in one
// rename (renameat2 RENAME_EXCHANGE; two renames where the filesystem lacks
// it), then removes the old run. Files of the old folder that are not the
// run's own (a user's notes) move along; probe outputs of the old model do
// not. Throws io_error naming the folder it cannot rename.
void replace_run_dir(const std::string& run_dir, const std::string& replacement);

// Exclusive right to write one run directory, between processes: flock(2) on
// <run_dir>/.lock, tried at construction without waiting (wait() waits for
// it) and released by the destructor or when the process dies (SIGKILL
// included), so a killed run never leaves a stale lock. Shards own disjoint
// runs by construction; the lock guards against overlapping invocations (the
// same spec run twice at once, shards of different N). flock works between
// processes of one machine and, on Linux, over NFSv4; on filesystems without
// it (Lustre without -o flock) only the sharding keeps runs apart.
class run_lock {
public:
    explicit run_lock(const std::string& run_dir);  // creates <run_dir>/.lock if needed
    ~run_lock();
    run_lock(const run_lock&) = delete;
    run_lock& operator=(const run_lock&) = delete;
    bool owned() const { return owned_; }  // false: another process holds it
    // Waits until the lock is ours (true) or *stop is set (false).
    bool wait(const std::atomic<bool>* stop);

private:
    bool try_lock();
    std::string path_;
    int fd_ = -1;
    bool owned_ = false;
};
// True when another process holds the run's lock (it is training the run).
bool run_locked_elsewhere(const std::string& run_dir);

// Scores the test set of a finished run: reads <run_dir>/config.yaml,
// regenerates the test set from the run's seed, loads <run_dir>/model.safetensors
// into the model make_model builds and evaluates in chunks of train.batch
// examples, as the trainer does, so the metrics equal the last `test` row of
// the run's metrics.csv exactly (same build and thread count). With the
// recurrent form, attention runs step by step with a fixed-size state in
// `layout` (README.md, `attnlab eval`). Throws config_error for
// a missing directory or a bad config.yaml, io_error for a missing or bad
// checkpoint, or one holding NaN or infinite values (naming the tensor).
eval_metrics evaluate_run_dir(const std::string& run_dir, attention_form form = attention_form::parallel,
                              state_layout layout = state_layout::symmetric);

// <run_dir>/config.yaml, read as evaluate_run_dir does (config_error for a
// missing directory or a bad file).
run_config read_run_dir_config(const std::string& run_dir);
// evaluate_run_dir for a run trained with `trained` (its config.yaml), on the
// test set of `test`: the same run with other test-time keys (attnlab eval
// --set task.test_max_len=...: length generalisation). Throws config_error
// when a learned position table would need another length. T = double scores
// the float checkpoint widened to double, the whole forward pass in double
// (attnlab eval --precision double).
template <class T = float>
eval_metrics evaluate_run_dir(const std::string& run_dir, const run_config& trained, const run_config& test,
                              attention_form form, state_layout layout);

// The model of a finished run trained with `trained`, sized for `test` (its
// test-time keys), with <run_dir>/model.safetensors loaded (T = double: its
// values widened): what evaluate_run_dir and attnlab probe score. Throws
// io_error for a missing checkpoint (saying why when result.yaml knows), a bad
// one or one holding NaN or infinite values (naming the tensor); config_error
// when a learned position table would need another length.
template <class T = float>
transformer<T> load_run_model(const std::string& run_dir, const run_config& trained, const run_config& test);

}  // namespace attnlab
