// attnlab run SPEC: train every run of a spec and write results/<name>/.
// Ctrl-C stops after the current step: finished runs and the summary stay,
// the interrupted run is redone when the spec is run again.
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
    opts->add_to(*cmd);
    cmd->add_option("--out", *out, "Directory that receives <name>/")->capture_default_str()->type_name("DIR");
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen (0: all cores)")->capture_default_str()
        ->check(CLI::Range(0, 1024));
    cmd->callback([=, &chosen] {
        chosen = [=] {
            const experiment_spec spec = opts->load();
            std::signal(SIGINT, on_sigint);
            runner_options ro;
            ro.out_root = *out;
            ro.threads = *threads;
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
