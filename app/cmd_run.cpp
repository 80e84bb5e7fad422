// attnlab run SPEC: train the runs of a spec and write results/<name>/.
// Ctrl-C stops every run in progress after its current step: finished runs
// and the summary stay, the interrupted runs are redone when the spec is run
// again. --jobs trains several runs at once, --shard I/N only this process's
// share of the runs (runner.hpp).
#include <atomic>
#include <csignal>

#include <spdlog/spdlog.h>

#include "attnlab/run/runner.hpp"
#include "commands.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

namespace {
std::atomic<bool> stop_requested{false};
extern "C" void on_sigint(int) {
    stop_requested.store(true);
    std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}
}  // namespace

void add_run(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("run", "Train every run of a spec; write results/<name>/ (skips finished runs)");
    auto opts = std::make_shared<spec_options>();
    auto out = std::make_shared<std::string>("results");
    auto threads = std::make_shared<int>(0);
    auto jobs = std::make_shared<int>(1);
    auto shard = std::make_shared<std::string>();
    opts->add_to(*cmd);
    cmd->add_option("--out", *out, "Directory that receives <name>/")->capture_default_str()->type_name("DIR");
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen, shared by the jobs (0: all cores)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1024));
    cmd->add_option("--jobs", *jobs, "Runs trained at once, each with max(1, threads/jobs) threads")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    cmd->add_option("--shard", *shard,
                    "Train only runs i with i mod N == I (0-based I/N, e.g. 0/3; run `attnlab summarize` after "
                    "every shard)")
        ->type_name("I/N");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            runner_options ro;
            if (!shard->empty()) ro.shard = parse_shard(*shard);
            const experiment_spec spec = opts->load();
            std::signal(SIGINT, on_sigint);
            ro.out_root = *out;
            ro.threads = *threads;
            ro.jobs = *jobs;
            ro.stop = &stop_requested;
            const sweep_outcome res = run_sweep(spec, ro);
            if (res.interrupted) {
                spdlog::warn("interrupted: finished runs are kept in {}; run the same command to continue", res.dir);
                return exit_interrupted;
            }
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
