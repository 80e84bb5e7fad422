// Helpers of the tests that run the attnlab binary as a child process
// (tests/test_cli.cpp, tests/test_sweep.cpp): temporary directories, file
// text, CSV fields, and starting and waiting for `attnlab` with stdout and
// stderr captured in files.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef ATTNLAB_BINARY
#error "ATTNLAB_BINARY must give the path of the attnlab executable"
#endif

namespace attnlab::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with its contents.
class temp_dir {
public:
    temp_dir() {
        std::random_device rd;
        std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid()));
        for (int attempt = 0; attempt < 100; ++attempt) {
            char suffix[32];
            std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
            fs::path p = fs::temp_directory_path() / ("attnlab_test_" + std::string(suffix));
            if (fs::create_directory(p)) {
                path_ = p;
                return;
            }
        }
        FAIL("cannot create a temporary directory");
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const fs::path& path() const { return path_; }
    fs::path operator/(const std::string& name) const { return path_ / name; }

private:
    fs::path path_;
};

inline std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    REQUIRE(out);
    out << text;
    REQUIRE(out);
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// Fields of one CSV line (RFC 4180: run ids with commas are quoted); quotes are kept.
inline std::vector<std::string> csv_fields(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (char c : line) {
        if (c == '"') quoted = !quoted;
        if (c == ',' && !quoted)
            fields.emplace_back();
        else
            fields.back() += c;
    }
    return fields;
}

// A CSV text without the named columns, for "equal except timings".
inline std::string csv_without(const std::string& csv, const std::vector<std::string>& drop) {
    const auto lines = lines_of(csv);
    REQUIRE(!lines.empty());
    const auto header = csv_fields(lines[0]);
    std::vector<bool> keep(header.size(), true);
    for (const auto& d : drop) {
        const auto at = std::find(header.begin(), header.end(), d);
        REQUIRE(at != header.end());
        keep[static_cast<std::size_t>(at - header.begin())] = false;
    }
    std::string out;
    for (const auto& line : lines) {
        const auto f = csv_fields(line);
        REQUIRE(f.size() == header.size());
        std::string row;
        for (std::size_t i = 0; i < f.size(); ++i)
            if (keep[i]) row += (row.empty() ? "" : ",") + f[i];
        out += row + "\n";
    }
    return out;
}

// metrics.csv and summary.csv without their wall-clock columns (SPEC §6 keeps them in the files).
inline std::string metrics_without_timings(const std::string& csv) {
    return csv_without(csv, {"tokens_per_s", "elapsed_s"});
}
inline std::string summary_without_timings(const std::string& csv) { return csv_without(csv, {"wall_s"}); }

inline std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// A started attnlab process whose stdout and stderr go to files in `io_dir`.
struct child {
    pid_t pid = -1;
    fs::path out_file, err_file;
};

// `in_child` (async-signal-safe) runs in the child just before exec; if it
// returns false the child exits with 125.
inline child spawn(const std::vector<std::string>& args, const fs::path& io_dir, const fs::path& cwd = {},
                   bool (*in_child)() = nullptr) {
    static int counter = 0;  // one per test binary: inline
    ++counter;
    child c;
    c.out_file = io_dir / ("stdout_" + std::to_string(counter) + ".txt");
    c.err_file = io_dir / ("stderr_" + std::to_string(counter) + ".txt");

    std::vector<std::string> argv_s = {ATTNLAB_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out_s = c.out_file.string(), err_s = c.err_file.string(), cwd_s = cwd.string();

    c.pid = ::fork();
    REQUIRE(c.pid >= 0);
    if (c.pid == 0) {  // child: only async-signal-safe calls until exec
        const int in_fd = ::open("/dev/null", O_RDONLY);
        const int out_fd = ::open(out_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err_fd = ::open(err_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(126);
        ::dup2(in_fd, 0);
        ::dup2(out_fd, 1);
        ::dup2(err_fd, 2);
        if (!cwd_s.empty() && ::chdir(cwd_s.c_str()) != 0) ::_exit(126);
        if (in_child && !in_child()) ::_exit(125);
        // Default SIGINT handling and no blocked signals, whatever the test runner set up.
        ::signal(SIGINT, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return c;
}

inline int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

// Waits for the child; -1 when it is still running after `timeout` (it is then killed).
inline int wait_for(const child& c, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
        if (r == c.pid) return exit_code_of(status);
        if (r < 0) return -2;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(c.pid, SIGKILL);
            ::waitpid(c.pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

struct cli_result {
    int code = -1;
    std::string out, err;
};

// Runs attnlab with `args` (in `cwd` if given) and waits for it to end.
inline cli_result run_cli(const std::vector<std::string>& args, const fs::path& cwd = {}) {
    temp_dir io;
    const child c = spawn(args, io.path(), cwd);
    cli_result r;
    r.code = wait_for(c, std::chrono::seconds(120));
    r.out = read_text(c.out_file);
    r.err = read_text(c.err_file);
    INFO("attnlab stderr:\n" << r.err);
    REQUIRE(r.code != 127);  // exec failed
    REQUIRE(r.code != -1);   // timed out
    return r;
}

}  // namespace attnlab::test
