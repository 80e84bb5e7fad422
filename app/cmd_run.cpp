// attnlab run SPEC: train the runs of a spec and write results/<name>/.
// SIGINT (Ctrl-C) or SIGTERM stops every run in progress after its current
// step: each saves its resume state, finished runs and the summary stay, and
// running the same command again resumes the stopped runs where they were
// (exit code 130 for SIGINT, 143 for SIGTERM). A second signal ends the
// process at once. --jobs trains several runs at once, --shard I/N only this
// process's share of the runs, --max-memory caps the memory the runs trained
// at once may take (runner.hpp).
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "attnlab/run/resources.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/util/error.hpp"
#include "cli_values.hpp"
#include "commands.hpp"
#include "data_files.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

namespace {
constexpr int exit_terminated = 143;  // 128 + SIGTERM, as a shell reports a process SIGTERM ended
std::atomic<bool> stop_requested{false};
std::atomic<int> stop_signal{0};

extern "C" void on_stop_signal(int sig) {
    stop_signal.store(sig);
    stop_requested.store(true);
    // A second SIGINT or SIGTERM ends the process at once (sigaction is async-signal-safe).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
}

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    // A file-size limit (ulimit -f) makes write(2) fail with EFBIG, reported
    // with the file's name, instead of killing the process with SIGXFSZ.
    std::signal(SIGXFSZ, SIG_IGN);
}
// --engine torch: the spec loaded (so its errors are this program's), the
// process becomes `python3 -m attnlab.train SPEC --out DIR ...` with the
// package importable (data_files.hpp) and this binary as
// ATTNLAB_BINARY (docs/engines.md). Returns only when exec fails.
int exec_torch_engine(const std::string& python, const std::string& spec, const std::vector<std::string>& sets,
                      const std::string& out, const std::string& device, const std::string& shard, double save_every,
                      bool overwrite, int threads) {
    namespace fs = std::filesystem;
    put_python_package_on_path();  // installed: the package is where python3 looks already
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) ::setenv("ATTNLAB_BINARY", self.c_str(), 1);
    std::vector<std::string> args = {python, "-m",       "attnlab.train", spec,           "--out",
                                     out,    "--device", device,          "--save-every", std::to_string(save_every)};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    if (!shard.empty()) args.insert(args.end(), {"--shard", shard});
    if (threads > 0) args.insert(args.end(), {"--threads", std::to_string(threads)});
    if (overwrite) args.push_back("--overwrite");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    spdlog::error("--engine torch: cannot run {}: {}", python, std::strerror(errno));
    return exit_failure;
}

}  // namespace

void add_run(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("run", "Train every run of a spec; write results/<name>/ (skips finished runs)");
    auto opts = std::make_shared<spec_options>();
    auto out = std::make_shared<std::string>("results");
    auto threads = std::make_shared<int>(0);
    auto jobs = std::make_shared<int>(1);
    auto shard = std::make_shared<std::string>();
    auto max_memory = std::make_shared<std::string>();
    auto save_every = std::make_shared<double>(300);
    auto overwrite = std::make_shared<bool>(false);
    auto rerun_other_builds = std::make_shared<bool>(false);
    auto engine = std::make_shared<std::string>("attnlab");
    auto device = std::make_shared<std::string>("cpu");
    auto python = std::make_shared<std::string>("/usr/bin/python3");
    opts->add_to(*cmd);
    cmd->add_option("--engine", *engine,
                    "attnlab (this program) or torch (hand the spec's runs over to python -m attnlab.train, "
                    "docs/engines.md)")
        ->capture_default_str()
        ->check(CLI::IsMember({"attnlab", "torch"}));
    cmd->add_option("--device", *device, "With --engine torch: cpu, cuda or cuda:N")
        ->capture_default_str()
        ->check(not_empty("a device"));
    cmd->add_option("--python", *python, "With --engine torch: the python3 that has torch")
        ->capture_default_str()
        ->check(not_empty("a program"));
    cmd->add_option("--out", *out, "Directory that receives <name>/")
        ->capture_default_str()
        ->check(not_empty("a directory"))
        ->type_name("DIR");
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen, shared by the jobs (0: all cores)")
        ->capture_default_str()
        ->check(integer_in(0, 1024));
    cmd->add_option("--jobs", *jobs, "Runs trained at once, each with max(1, threads/jobs) threads")
        ->capture_default_str()
        ->check(integer_in(1, 1024));
    cmd->add_option("--shard", *shard,
                    "Train only runs i with i mod N == I (0-based I/N, e.g. 0/3; run `attnlab summarize` after "
                    "every shard)")
        ->check(not_empty("I/N"))
        ->type_name("I/N");
    cmd->add_option("--max-memory", *max_memory,
                    "Memory the runs trained at once may take (e.g. 4G, 512M); default: what the machine has "
                    "available (MemAvailable, cgroup limit)")
        ->check(not_empty("a size such as 4G"))
        ->type_name("SIZE");
    cmd->add_option("--save-every", *save_every,
                    "Seconds between saves of a run's resume state (0: only when stopped by SIGINT or SIGTERM)")
        ->capture_default_str()
        ->check(number_in(0, 1e9, "a number of seconds"))
        ->type_name("SECONDS");
    cmd->add_flag("--overwrite", *overwrite,
                  "Retrain finished runs whose configuration the spec or --set changed (otherwise refused), and "
                  "go ahead while another process writes the folder with another spec");
    cmd->add_flag("--rerun-other-builds", *rerun_other_builds,
                  "Retrain with this build the runs of every comparison (report:) whose runs come from different "
                  "builds or carry no build stamp; each old run is kept until its new one is done");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            runner_options ro;
            if (!shard->empty()) ro.shard = parse_shard(*shard);
            if (!max_memory->empty()) ro.max_memory = parse_size(*max_memory, "--max-memory");
            const experiment_spec spec = opts->load();
            if (*engine == "torch") {
                for (const char* only_here : {"--jobs", "--max-memory", "--rerun-other-builds"})
                    if (cmd->count(only_here) > 0)
                        throw config_error(std::string(only_here) + " does not apply to --engine torch");
                return exec_torch_engine(*python, opts->path, opts->overrides, *out, *device, *shard, *save_every,
                                         *overwrite, *threads);
            }
            install_stop_handlers();
            ro.out_root = *out;
            ro.threads = *threads;
            ro.jobs = *jobs;
            ro.stop = &stop_requested;
            ro.save_every_s = *save_every;
            ro.overwrite = *overwrite;
            ro.rerun_other_builds = *rerun_other_builds;
            const sweep_outcome res = run_sweep(spec, ro);
            if (res.interrupted) {
                const int sig = stop_signal.load();
                spdlog::warn(
                    "{}: finished runs are kept in {} and stopped runs saved their state; run the same "
                    "command to continue",
                    sig == SIGTERM ? "terminated" : "interrupted", res.dir);
                return sig == SIGTERM ? exit_terminated : exit_interrupted;
            }
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
