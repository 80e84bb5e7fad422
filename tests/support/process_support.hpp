// The one process launcher of the tests. It starts a program (the attnlab
// binary unless told otherwise) with its arguments, environment changes and
// working directory, stdin at end of file (/dev/null) and every signal at its
// default action, and captures stdout and stderr through pipes (not files, so
// a file-size limit set in the child cannot cut them), the exit status and
// the peak memory of the process.
//
// Synchronous use: run_cli(args) runs to the end and returns a cli_result.
// Asynchronous use: a child_process is started by its constructor; the test
// waits for a state (wait_until), sends signals, pauses and resumes it, and
// waits for its end (wait). A launch that fails in the child (chdir,
// setrlimit, the in_child hook, exec) fails the test with the step and its
// errno, never with an exit code that could pass for the program's.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text_files.hpp"

#ifndef ATTNLAB_BINARY
#error "ATTNLAB_BINARY must give the path of the attnlab executable"
#endif

namespace attnlab::test {

// Built with AddressSanitizer (scripts/test's second build): each start of
// the binary then costs about 0.3 s and its work runs about ten times slower,
// so tests that start it many times, or wait for slow steps, size themselves
// by this.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool sanitized_build = true;
#else
inline constexpr bool sanitized_build = false;
#endif

// What to start and how; the setters chain: launch_options().in(dir).with_timeout(10s).
struct launch_options {
    fs::path program = ATTNLAB_BINARY;
    fs::path cwd;                                              // empty: the test's own working directory
    std::vector<std::pair<std::string, std::string>> set_env;  // (name, value) added or replaced
    std::vector<std::string> unset_env;                        // names removed
    std::uint64_t file_size_limit = 0;  // RLIMIT_FSIZE in bytes (writes past it fail with EFBIG); 0: unchanged
    // RLIMIT_AS in bytes (an allocation past it fails); 0: unchanged. Not set
    // under AddressSanitizer, which reserves terabytes of address space.
    std::uint64_t address_space_limit = 0;
    fs::path stdout_path;  // stdout written to this file (opened for writing, e.g. /dev/full) instead of captured
    // Runs in the child last before exec (after the limit), so it must be
    // async-signal-safe; returning false fails the launch (and the test).
    bool (*in_child)() = nullptr;
    std::chrono::seconds timeout{120};  // wait() kills the process and fails the test after this long

    launch_options& with_program(const fs::path& p) { return program = p, *this; }
    launch_options& in(const fs::path& dir) { return cwd = dir, *this; }
    launch_options& with_env(const std::string& name, const std::string& value) {
        return set_env.emplace_back(name, value), *this;
    }
    launch_options& without_env(const std::string& name) { return unset_env.push_back(name), *this; }
    launch_options& with_file_size_limit(std::uint64_t bytes) { return file_size_limit = bytes, *this; }
    launch_options& with_address_space_limit(std::uint64_t bytes) { return address_space_limit = bytes, *this; }
    launch_options& with_stdout_to(const fs::path& p) { return stdout_path = p, *this; }
    launch_options& with_in_child(bool (*hook)()) { return in_child = hook, *this; }
    launch_options& with_timeout(std::chrono::seconds t) { return timeout = t, *this; }
};

// How a process ended and what it wrote.
struct cli_result {
    int code = -1;         // exit code, or 128 + the signal that ended it (as a shell reports it)
    int signal = 0;        // the signal that ended it; 0 when it exited
    std::string out;       // all of stdout
    std::string err;       // all of stderr
    long max_rss_kib = 0;  // peak resident set size (wait4)
};

class child_process {
public:
    // Starts `options.program` with `args`; fails the test if it cannot be started.
    explicit child_process(const std::vector<std::string>& args, launch_options options = {});
    // The same in the working directory `cwd`.
    child_process(const std::vector<std::string>& args, const fs::path& cwd);
    // A process still running is killed (SIGKILL) and reaped.
    ~child_process();
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    pid_t pid() const { return pid_; }
    void send(int signal);  // fails the test if kill() does

    // What the process has written so far (all of it once it has ended).
    std::string out() const;
    std::string err() const;

    // False once the process has ended (it is then reaped and its result kept).
    bool running();
    // Polls `ready` every 2 ms until it holds; fails the test if the process
    // ends first or `timeout` passes (the process is then killed).
    void wait_until(const std::function<bool()>& ready, std::chrono::seconds timeout = std::chrono::seconds(180));
    // SIGSTOP: true once the process is stopped, false if it ended instead.
    bool pause();
    void resume();  // SIGCONT
    // Waits for the end (at most options.timeout, then the process is killed
    // and the test fails) and returns the exit status and the whole output.
    const cli_result& wait();

private:
    struct output;  // the pipes and the thread that drains them

    bool reap(int wait_flags);  // wait4; true when the process has ended (or stopped, with WUNTRACED)
    void kill_and_reap();

    launch_options options_;
    pid_t pid_ = -1;
    bool ended_ = false;
    bool stopped_ = false;
    cli_result result_;
    std::unique_ptr<output> output_;
};

// Runs the program with `args` to its end.
cli_result run_cli(const std::vector<std::string>& args, const launch_options& options = {});
// The same in the working directory `cwd`.
cli_result run_cli(const std::vector<std::string>& args, const fs::path& cwd);

}  // namespace attnlab::test
