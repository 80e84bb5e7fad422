// The tests' process launcher (process_support.hpp): fork, set up the child
// with async-signal-safe calls only, exec; a thread drains stdout and stderr.
#include "process_support.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

extern char** environ;

namespace attnlab::test {

namespace {

// Both ends of a pipe, closed on exec so no other child inherits them.
struct pipe_fds {
    int read = -1, write = -1;
    pipe_fds() {
        int fds[2];
        REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
        read = fds[0];
        write = fds[1];
    }
};

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

// The steps of the child between fork and exec; a failed one is reported to
// the parent as (step, errno) through a close-on-exec pipe.
enum class launch_step : int { open_dev_null, open_stdout, redirect, chdir, rlimit, in_child, exec };

const char* name_of(launch_step s) {
    switch (s) {
        case launch_step::open_dev_null: return "open /dev/null";
        case launch_step::open_stdout: return "open of the file for stdout";
        case launch_step::redirect: return "dup2 of stdin, stdout or stderr";
        case launch_step::chdir: return "chdir to the working directory";
        case launch_step::rlimit: return "setrlimit(RLIMIT_FSIZE or RLIMIT_AS)";
        case launch_step::in_child: return "the in_child hook";
        case launch_step::exec: return "exec";
    }
    return "?";
}

struct launch_failure {
    launch_step step;
    int error;
};

// The environment of this process with the options' changes, as NAME=VALUE strings.
std::vector<std::string> child_environment(const launch_options& o) {
    auto name_of_entry = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e), name = name_of_entry(entry);
        const bool unset = std::find(o.unset_env.begin(), o.unset_env.end(), name) != o.unset_env.end();
        const bool replaced =
            std::any_of(o.set_env.begin(), o.set_env.end(), [&](const auto& nv) { return nv.first == name; });
        if (!unset && !replaced) env.push_back(entry);
    }
    for (const auto& [name, value] : o.set_env) env.push_back(name + "=" + value);
    return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
    std::vector<char*> p;
    for (auto& s : strings) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
}

// In the child: only async-signal-safe calls until exec; never returns.
[[noreturn]] void exec_child(const char* program, char* const* argv, char* const* envp, const char* cwd,
                             std::uint64_t file_size_limit, std::uint64_t address_space_limit, const char* stdout_path,
                             bool (*in_child)(), int out_fd, int err_fd, int report_fd) {
    auto fail = [&](launch_step step) {
        const launch_failure f{step, errno};
        [[maybe_unused]] const ssize_t n = ::write(report_fd, &f, sizeof f);
        ::_exit(127);
    };
    const int in_fd = ::open("/dev/null", O_RDONLY);
    if (in_fd < 0) fail(launch_step::open_dev_null);
    if (stdout_path[0] != '\0') {
        out_fd = ::open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out_fd < 0) fail(launch_step::open_stdout);
    }
    if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) fail(launch_step::redirect);
    if (cwd[0] != '\0' && ::chdir(cwd) != 0) fail(launch_step::chdir);
    // Default actions and no blocked signals, whatever the test runner set
    // up (an ignored signal would stay ignored across exec).
    for (int s = 1; s < NSIG; ++s)
        if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (file_size_limit > 0) {
        const struct rlimit lim = {file_size_limit, file_size_limit};
        if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) fail(launch_step::rlimit);
    }
    if (address_space_limit > 0 && !sanitized_build) {
        const struct rlimit lim = {address_space_limit, address_space_limit};
        if (::setrlimit(RLIMIT_AS, &lim) != 0) fail(launch_step::rlimit);
    }
    errno = 0;
    if (in_child != nullptr && !in_child()) fail(launch_step::in_child);
    ::execve(program, argv, envp);
    fail(launch_step::exec);
    ::_exit(127);  // not reached
}

}  // namespace

// Reads both pipes on a thread of its own until the process and anything it
// started have closed them, so a chatty child never blocks on a full pipe.
struct child_process::output {
    pipe_fds out_pipe, err_pipe;
    mutable std::mutex mutex;
    std::string out, err;
    std::thread reader;

    void start() {
        close_fd(out_pipe.write);
        close_fd(err_pipe.write);
        reader = std::thread([this] { drain(); });
    }
    void drain() {
        pollfd fds[2] = {{out_pipe.read, POLLIN, 0}, {err_pipe.read, POLLIN, 0}};
        std::string* into[2] = {&out, &err};
        int open = 2;
        char buf[4096];
        while (open > 0) {
            if (::poll(fds, 2, -1) < 0) {
                if (errno == EINTR) continue;
                break;
            }
            for (int i = 0; i < 2; ++i) {
                if (fds[i].fd < 0 || fds[i].revents == 0) continue;
                const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
                if (n > 0) {
                    const std::lock_guard<std::mutex> lock(mutex);
                    into[i]->append(buf, static_cast<std::size_t>(n));
                } else if (n == 0 || errno != EINTR) {
                    fds[i].fd = -1;  // end of file (or a broken pipe): this stream is done
                    --open;
                }
            }
        }
    }
    void finish() {
        if (reader.joinable()) reader.join();
    }
    ~output() {
        finish();
        for (int* fd : {&out_pipe.read, &out_pipe.write, &err_pipe.read, &err_pipe.write}) close_fd(*fd);
    }
};

child_process::child_process(const std::vector<std::string>& args, launch_options options)
    : options_(std::move(options)), output_(std::make_unique<output>()) {
    // Everything the child needs, made before the fork: it may not allocate.
    std::vector<std::string> argv_s = {options_.program.string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = child_environment(options_);
    const std::vector<char*> argv = pointers_to(argv_s), envp = pointers_to(env_s);
    const std::string program = options_.program.string(), cwd = options_.cwd.string(),
                      stdout_path = options_.stdout_path.string();
    pipe_fds report;

    // The child's peak RSS (wait4) counts the copy of this process that fork
    // makes before exec: return the heap's free pages first, so that what
    // earlier tests freed does not set a floor under the binary's own peak.
    ::malloc_trim(0);
    pid_ = ::fork();
    if (pid_ == 0)
        exec_child(program.c_str(), argv.data(), envp.data(), cwd.c_str(), options_.file_size_limit,
                   options_.address_space_limit, stdout_path.c_str(), options_.in_child, output_->out_pipe.write,
                   output_->err_pipe.write, report.write);
    close_fd(report.write);
    if (pid_ < 0) {
        close_fd(report.read);
        FAIL("cannot fork: " << std::strerror(errno));
    }
    output_->start();

    // exec closes the report pipe: no bytes means the program is running.
    launch_failure failure{};
    ssize_t n;
    do n = ::read(report.read, &failure, sizeof failure);
    while (n < 0 && errno == EINTR);
    close_fd(report.read);
    if (n > 0) {
        reap(0);
        FAIL("cannot start " << program << " (in " << (cwd.empty() ? "." : cwd) << "): " << name_of(failure.step)
                             << " failed: " << std::strerror(failure.error));
    }
}

child_process::child_process(const std::vector<std::string>& args, const fs::path& cwd)
    : child_process(args, launch_options().in(cwd)) {}

child_process::~child_process() {
    if (pid_ > 0 && !ended_) kill_and_reap();
}

void child_process::send(int signal) { REQUIRE(::kill(pid_, signal) == 0); }

std::string child_process::out() const {
    const std::lock_guard<std::mutex> lock(output_->mutex);
    return output_->out;
}

std::string child_process::err() const {
    const std::lock_guard<std::mutex> lock(output_->mutex);
    return output_->err;
}

bool child_process::reap(int wait_flags) {
    if (ended_) return true;
    int status = 0;
    struct rusage ru {};
    pid_t r;
    do r = ::wait4(pid_, &status, wait_flags, &ru);
    while (r < 0 && errno == EINTR);
    if (r != pid_) return false;
    if (WIFSTOPPED(status)) {
        stopped_ = true;
        return true;
    }
    ended_ = true;
    result_.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    result_.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + result_.signal;
    result_.max_rss_kib = ru.ru_maxrss;
    output_->finish();  // the pipes are at end of file once the process is gone
    result_.out = output_->out;
    result_.err = output_->err;
    return true;
}

void child_process::kill_and_reap() {
    ::kill(pid_, SIGKILL);
    reap(0);
}

bool child_process::running() {
    reap(WNOHANG);
    return !ended_;
}

void child_process::wait_until(const std::function<bool()>& ready, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ready()) {
        if (!running())
            FAIL(options_.program.filename().string() << " ended early with code " << result_.code << ":\n" << err());
        if (std::chrono::steady_clock::now() > deadline) {
            kill_and_reap();
            FAIL(options_.program.filename().string() << " did not get there within " << timeout.count() << " s:\n"
                                                      << err());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

bool child_process::pause() {
    send(SIGSTOP);
    stopped_ = false;
    reap(WUNTRACED);
    return stopped_;
}

void child_process::resume() {
    send(SIGCONT);
    stopped_ = false;
}

const cli_result& child_process::wait() {
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() > deadline) {
            kill_and_reap();
            FAIL(options_.program.filename().string() << " did not end within " << options_.timeout.count() << " s:\n"
                                                      << result_.err);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return result_;
}

cli_result run_cli(const std::vector<std::string>& args, const launch_options& options) {
    return child_process(args, options).wait();
}

cli_result run_cli(const std::vector<std::string>& args, const fs::path& cwd) {
    return run_cli(args, launch_options().in(cwd));
}

}  // namespace attnlab::test
