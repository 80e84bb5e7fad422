// The run module (layer 8 of lib/README.md's table): orchestration. It owns
// the runner (this header), a run's folder and its checks (run_dir.hpp,
// run_check.hpp), the sweep's folder (sweep_dir.hpp), the guards that keep
// finished runs (sweep_guard.hpp), the memory a sweep may use
// (resources.hpp) and sampling from a trained run (sample.hpp, attnlab
// generate). It trains through train/ and writes its tables through
// results/, both below it; analyses and benchmarks sit above it.
//
// Runs the runs of an experiment spec and writes docs/outputs.md's outputs:
//   <out>/<name>/spec.yaml, overrides.yaml, summary.csv, curves.csv, table.md,
//   <out>/<name>/runs/<run_id>/config.yaml, metrics.csv, model.safetensors, result.yaml
// (the layout and the "done" test are in sweep_dir.hpp).
//
// Restarting. A run whose result.yaml exists beside the same config.yaml is
// skipped, so a sweep stopped by Ctrl-C, SIGTERM, SIGKILL or a crash
// continues where it was. A run stopped by the stop flag (SIGINT, SIGTERM)
// saves its resume state, runs/<run_id>/resume.state (train_state: parameters,
// AdamW moments and step count, counters, the open metrics window; written
// atomically after the step in progress), and the next invocation goes on
// from that step: metrics.csv keeps its rows up to that step (later rows, of a
// process killed after a periodic save, are dropped by an atomic rewrite) and
// the rest is appended. The resumed run's metrics (all but the wall-clock
// columns) and checkpoint equal, byte for byte, those of a run never stopped,
// when it is resumed with the same thread count. States are also saved every
// `save_every_s` seconds of a run, so a run killed outright (SIGKILL, power
// loss) resumes from its last save; without one it is redone from step 0.
// A resume state that does not fit (another config.yaml, damaged, metrics.csv
// without the rows it needs) is dropped with a warning and the run redone.
// The state is removed once result.yaml is written.
//
// Atomicity: runs are trained in place, in runs/<run_id>/, and "a run's
// files appear atomically" holds for the run as a unit through its marker:
//   1. take the run's lock (runs/<run_id>/.lock, flock: one writer per run
//      dir across processes; freed by the kernel when a process dies); a run
//      whose lock another process holds is put off until this process's
//      other runs are done, then waited for;
//   2. look again whether it is done (another process may have finished it,
//      maybe with another configuration: then it is refused, as below);
//   3. resume the run (above), or remove result.yaml first, then the
//      leftovers of an earlier attempt (model.safetensors, metrics.csv,
//      config.yaml, resume.state, *.tmp*), so an old result never sits beside
//      a new config;
//   4. write config.yaml (atomic), stream metrics.csv (a row per evaluation,
//      flushed: it can be watched), write model.safetensors (atomic);
//   5. write result.yaml (atomic, fsync'd) last: it marks the run done;
//      then remove resume.state.
// A reader (a restart, `attnlab summarize`) takes a run as done only after
// step 5, so a half-written run is never taken as done, and a killed run's
// files are overwritten when it is redone. This is simpler than training in
// runs/<run_id>.tmp-<pid>/ and renaming: a directory cannot be renamed over a
// non-empty one, and the temporary directories of killed processes on other
// machines could never be told from live ones.
//
// Parallelism. `jobs` workers (threads of this process) take runs in spec
// order; each run gets max(1, threads / jobs) OpenMP threads, set with
// omp_set_num_threads inside the worker (OpenMP's thread count is per calling
// thread). Eigen's thread count is one process-wide, unsynchronised static:
// it cannot differ between workers, so with jobs > 1 it is set to 1 (the runs
// already occupy the cores, and a threaded product inside a worker would
// oversubscribe them) and restored after the sweep. Results depend only on
// each run's config and its thread count, never on the order in which the
// workers finish: summary rows are in spec order.
//
// Memory. Before anything runs or is written, each run to train is sized
// with estimate_training_memory (train/memory_estimate.hpp) at its thread
// count; the `jobs` largest of them, which may run at once, must fit in the
// limit (max_memory, or what the machine has available: resources.hpp), or
// the sweep is refused with a config_error naming the run, its estimate and
// the limit.
//
// Finished runs are never lost (docs/outputs-policy.md, "Runs are never
// lost"): before anything is trained, a finished run (run_check.hpp) whose
// config.yaml differs from the one the spec now gives it refuses the sweep
// (config_error naming the runs and the keys) unless `overwrite`; so does
// another live process writing the same folder with another spec or other
// overrides (sweep_membership, sweep_dir.hpp). Unfinished runs with another
// configuration are redone with a warning.
//
// Sharding. `--shard I/N` trains run i of the spec (0-based, in `attnlab
// list` order) iff i mod N == I, so N processes, started anywhere on a shared
// filesystem, split the sweep without talking to each other. Each writes its
// runs and shards/<I>-of-<N>/summary.csv, curves.csv and table.md; `attnlab
// summarize` (summarize_sweep_dir) then rebuilds the sweep's three files.
#pragma once
#include <atomic>
#include <cstddef>
#include <string>

#include "attnlab/spec/spec.hpp"
#include "attnlab/train/trainer.hpp"  // run_result
#include "attnlab/util/build_info.hpp"

namespace attnlab {

struct shard_spec {
    int index = 0, count = 1;
    bool owns(std::size_t run_index) const { return static_cast<int>(run_index % count) == index; }
    bool sharded() const { return count > 1; }
};
// "I/N" with 0 <= I < N (e.g. "0/3"); throws config_error naming --shard otherwise.
shard_spec parse_shard(const std::string& text);

struct runner_options {
    std::string out_root = "results";
    int threads = 0;   // threads of the whole sweep; 0: OpenMP's default (all cores)
    int jobs = 1;      // runs trained at once, each with max(1, threads / jobs) threads
    shard_spec shard;  // the share of the runs this process trains
    // Set by SIGINT or SIGTERM: every run in progress ends as interrupted
    // after its current step and saves its resume state, no run starts; what
    // is done is kept. The runner sets it too when a run fails with an error,
    // to stop the other workers before it rethrows.
    std::atomic<bool>* stop = nullptr;
    // Memory the runs trained at once may take, in bytes; 0: what the machine
    // has available (MemAvailable, the cgroup's limit).
    std::size_t max_memory = 0;
    // Seconds between periodic saves of a run's resume state (0: only when stopped).
    double save_every_s = 300;
    // Retrain finished runs whose configuration the spec or --set changed,
    // and go ahead while another process writes the folder with another spec;
    // without it both are refused (config_error) before anything is trained.
    bool overwrite = false;
    // Retrain, with this build, the finished runs of every comparison of the
    // spec's reports whose runs do not all come from one build (or carry no
    // build stamp), and then every run that shares a comparison with a
    // retrained one (so that each comparison ends on one build). An old run
    // is kept until its new one is done (rebuild_runs).
    bool rerun_other_builds = false;
};

// The spec indices of the runs `--rerun-other-builds` retrains, given the
// finished runs `done` (spec index, result): closed under "shares a
// comparison with a run to retrain"; runs already made by `current` stay.
std::vector<std::size_t> rebuild_runs(const experiment_spec& spec,
                                      const std::vector<std::pair<std::size_t, run_result>>& done,
                                      const build_info& current);

struct sweep_outcome {
    std::string dir;           // <out>/<name>
    std::string summary_path;  // <dir>/summary.csv, or the shard's
    int total = 0;             // runs of this shard (all runs without --shard)
    int skipped = 0, ok = 0, diverged = 0;
    int busy = 0;  // held by another process's lock when this one was stopped; not in the summary
    bool interrupted = false;
    int resumed = 0;  // runs that went on from a resume state
};

sweep_outcome run_sweep(const experiment_spec& spec, const runner_options& opt);

// Sets the thread count of OpenMP (for the calling thread) and Eigen (n <= 0: leave the default).
void set_threads(int n);

}  // namespace attnlab
