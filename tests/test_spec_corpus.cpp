// The corpus of malformed specs, tests/data/specs/malformed/: every file is
// a case and expected.tsv gives the error of each (its line, key path and
// message pieces; the format is in the file's header). Each case must be
// refused by the loader with one line "<file>:<line>: <key>: <message>",
// and by `attnlab validate` and `attnlab run` with exit code 2, that same
// line on stderr, nothing on stdout and nothing written.
//
// Root reads a file whatever its mode: as root, the unreadable case reads
// the file with filesystem uid 65534 (setfsuid, this thread only) and runs
// attnlab as uid and gid 65534 (nobody); where the kernel refuses either,
// the case is skipped with a warning.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attnlab/spec/spec.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"

#ifndef ATTNLAB_TEST_DATA
#define ATTNLAB_TEST_DATA "tests/data"
#endif

namespace fs = std::filesystem;
using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const fs::path corpus_dir = fs::path(ATTNLAB_TEST_DATA) / "specs" / "malformed";
const fs::path manifest_path = corpus_dir / "expected.tsv";

struct corpus_case {
    std::string file;
    std::string how;  // file, missing, directory, unreadable
    int line = 0;     // 0: the error names no line
    std::string key;  // "": the error names no key
    std::vector<std::string> fragments;
    int manifest_line = 0;
};

std::vector<corpus_case> read_manifest() {
    std::ifstream in(manifest_path);
    REQUIRE(in);
    std::vector<corpus_case> cases;
    int n = 0;
    for (std::string text; std::getline(in, text);) {
        ++n;
        if (text.empty() || text[0] == '#') continue;
        std::vector<std::string> fields;  // runs of tabs separate fields
        std::istringstream split(text);
        for (std::string f; std::getline(split, f, '\t');)
            if (!f.empty()) fields.push_back(f);
        INFO("expected.tsv:" << n << ": " << text);
        REQUIRE(fields.size() >= 5);
        corpus_case c;
        c.file = fields[0];
        c.how = fields[1];
        REQUIRE((c.how == "file" || c.how == "missing" || c.how == "directory" || c.how == "unreadable"));
        if (fields[2] != "-") {
            REQUIRE(fields[2].find_first_not_of("0123456789") == std::string::npos);
            c.line = std::stoi(fields[2]);
            REQUIRE(c.line >= 1);
        }
        if (fields[3] != "-") c.key = fields[3];
        c.fragments.assign(fields.begin() + 4, fields.end());
        c.manifest_line = n;
        cases.push_back(c);
    }
    return cases;
}

// The start every message of the case has: "<path>:<line>: <key>: ".
std::string expected_start(const corpus_case& c, const fs::path& path) {
    std::string s = path.string();
    if (c.line > 0) {
        s += ':';
        s += std::to_string(c.line);
    }
    s += ": ";
    if (!c.key.empty()) s += c.key + ": ";
    return s;
}

void check_message(const corpus_case& c, const fs::path& path, const std::string& msg) {
    CHECK(msg.find('\n') == std::string::npos);
    CHECK_THAT(msg, StartsWith(expected_start(c, path)));
    if (c.line == 0) CHECK_THAT(msg, StartsWith(path.string() + ": "));  // and not "<path>:<digits>:"
    for (const std::string& f : c.fragments) {
        if (f[0] == '!')
            CHECK_THAT(msg, !Contains(f.substr(1)));
        else
            CHECK_THAT(msg, Contains(f));
    }
}

// The path a case is read from: the corpus file itself, or what the test
// makes of it in `tmp` (a directory, an unreadable copy).
fs::path stage(const corpus_case& c, const temp_dir& tmp) {
    const fs::path in_corpus = corpus_dir / c.file;
    if (c.how == "file") return in_corpus;
    if (c.how == "missing") {
        REQUIRE(!fs::exists(in_corpus));
        return in_corpus;
    }
    const fs::path made = tmp / c.file;
    if (c.how == "directory") {
        fs::create_directory(made);
    } else {  // unreadable
        fs::copy_file(in_corpus, made);
        fs::permissions(made, fs::perms::none);
    }
    return made;
}

bool is_root() { return ::geteuid() == 0; }

// As root, reads files as uid 65534 in this thread while it lives (root's
// fs capabilities go with a non-zero filesystem uid). `active` is false when
// not root or when the kernel refused.
struct unprivileged_reads {
    bool active = false;
    unprivileged_reads() {
        if (!is_root()) return;
        ::setfsuid(65534);
        active = ::setfsuid(static_cast<uid_t>(-1)) == 65534;  // -1 changes nothing and returns the current one
    }
    ~unprivileged_reads() {
        if (active) ::setfsuid(0);
    }
    unprivileged_reads(const unprivileged_reads&) = delete;
    unprivileged_reads& operator=(const unprivileged_reads&) = delete;
};

bool can_open(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
}

// In a child about to exec: uid and gid 65534, no other groups, so no
// capabilities. Plain system calls only; false if the kernel refused.
bool become_nobody() { return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0; }

// Whether a child that became nobody is refused `p`, as attnlab run by it
// would be: a probe in a forked child.
bool child_as_nobody_cannot_open(const fs::path& p) {
    const std::string path = p.string();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (!become_nobody()) ::_exit(2);
        const int fd = ::open(path.c_str(), O_RDONLY);
        ::_exit(fd < 0 && errno == EACCES ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Runs attnlab with `args` in `cwd`, optionally as nobody (the launch fails
// the test if the kernel refuses to drop root).
cli_result run_attnlab(const std::vector<std::string>& args, const fs::path& cwd, bool as_nobody) {
    return run_cli(args, launch_options()
                             .in(cwd)
                             .with_in_child(as_nobody ? become_nobody : nullptr)
                             .with_timeout(std::chrono::seconds(60)));
}

std::string loader_error(const fs::path& path) {
    try {
        load_spec(path.string());
    } catch (const config_error& e) {
        return e.what();
    } catch (const std::exception& e) {
        FAIL("not a config_error: " << e.what());
    }
    FAIL("no error for " << path);
    return {};
}

// Whether the unreadable case can be made unreadable here (in this thread
// and in a child); warns once when it cannot.
struct unreadable_support {
    bool in_process = true, in_child = true;
};

unreadable_support probe_unreadable(const fs::path& staged) {
    unreadable_support s;
    if (!is_root()) return s;
    {
        unprivileged_reads guard;
        s.in_process = guard.active && !can_open(staged);
    }
    s.in_child = child_as_nobody_cannot_open(staged);
    return s;
}

}  // namespace

TEST_CASE("spec corpus: the manifest lists every file of the corpus, and only those", "[spec][corpus]") {
    const std::vector<corpus_case> cases = read_manifest();
    CHECK(cases.size() >= 40);

    std::map<std::string, std::string> listed;  // file -> how
    for (const corpus_case& c : cases) {
        INFO("expected.tsv:" << c.manifest_line << ": " << c.file);
        CHECK(listed.emplace(c.file, c.how).second);  // once
        CHECK(c.file.find('/') == std::string::npos);
        const fs::path p = corpus_dir / c.file;
        if (c.how == "file" || c.how == "unreadable")
            CHECK(fs::is_regular_file(p));
        else
            CHECK(!fs::exists(p));  // missing, directory: made (or not) by the test
    }
    std::set<std::string> on_disk;
    for (const fs::directory_entry& e : fs::directory_iterator(corpus_dir)) {
        const std::string name = e.path().filename().string();
        if (name == "expected.tsv") continue;
        INFO(name);
        CHECK(e.is_regular_file());
        CHECK(e.path().extension() == ".yaml");
        CHECK(listed.count(name) == 1);  // no file without its expected error
        on_disk.insert(name);
    }
    CHECK(on_disk.size() >= 40);
}

TEST_CASE("spec corpus: the loader refuses each case naming file, line and key", "[spec][corpus]") {
    const std::vector<corpus_case> cases = read_manifest();
    REQUIRE(cases.size() >= 40);
    for (const corpus_case& c : cases) {
        INFO("case " << c.file << " (expected.tsv:" << c.manifest_line << ")");
        temp_dir tmp;
        const fs::path path = stage(c, tmp);
        std::string msg;
        const auto t0 = std::chrono::steady_clock::now();
        if (c.how == "unreadable" && is_root()) {
            unprivileged_reads guard;
            if (!guard.active || can_open(path)) {
                WARN("running as root and cannot drop the right to read " << path
                                                                          << ": the unreadable case is skipped");
                continue;
            }
            msg = loader_error(path);
        } else {
            msg = loader_error(path);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        INFO("message: " << msg);
        check_message(c, path, msg);
        CHECK(seconds < 5.0);  // refused quickly (alias bombs, huge sweeps)
    }
}

TEST_CASE("spec corpus: attnlab validate and run refuse each case with exit code 2 and write nothing",
          "[cli][corpus]") {
    const std::vector<corpus_case> cases = read_manifest();
    REQUIRE(cases.size() >= 40);
    // The sanitized build starts the binary for every 4th case (two starts
    // per case took a minute and a half there); the loader's work on every
    // case runs under the sanitizers in the test above, and the optimized
    // build starts the binary for all of them.
    const size_t stride = sanitized_build ? 4 : 1;
    for (size_t i = 0; i < cases.size(); i += stride) {
        const corpus_case& c = cases[i];
        INFO("case " << c.file << " (expected.tsv:" << c.manifest_line << ")");
        temp_dir tmp;
        const fs::path path = stage(c, tmp);
        bool as_nobody = false;
        std::string msg;
        if (c.how == "unreadable" && is_root()) {
            const unreadable_support s = probe_unreadable(path);
            if (!s.in_process || !s.in_child) {
                WARN("running as root and cannot drop the right to read " << path
                                                                          << ": the unreadable case is skipped");
                continue;
            }
            as_nobody = true;
            unprivileged_reads guard;
            msg = loader_error(path);
        } else {
            msg = loader_error(path);
        }
        const std::string expected_err = "attnlab: error: " + msg + "\n";

        temp_dir work;  // the working directory of each run, so a default results/ would show too
        const auto v = run_attnlab({"validate", path.string()}, work.path(), as_nobody);
        CHECK(v.code == 2);
        CHECK(v.out.empty());
        CHECK(v.err == expected_err);

        const fs::path out = work / "results";
        const auto r = run_attnlab({"run", path.string(), "--out", out.string()}, work.path(), as_nobody);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err == expected_err);
        CHECK(fs::is_empty(work.path()));  // no --out directory, nothing else
    }
}

TEST_CASE("spec corpus: a device (a file that never ends) is refused before it is read", "[spec][corpus]") {
    if (!fs::exists("/dev/zero")) return;
    CHECK_THROWS_MATCHES(
        load_spec("/dev/zero"), config_error,
        Catch::Matchers::Message("/dev/zero: cannot read: is a character device, expected a regular file"));
}

TEST_CASE("spec corpus: did you mean, for --set and for config files", "[spec][corpus]") {
    const std::string spec =
        "name: t\n"
        "base:\n"
        "  task: {kind: lookup, vocab: 64, seq_len: 32, pairs: 4}\n"
        "  model: {layers: 2, d_model: 32, heads: 2}\n"
        "  attention: {numerator: exp, denominator: softmax}\n"
        "  train: {steps: 100, lr: 0.01, warmup: 10}\n";
    auto error_of = [&](const std::vector<std::string>& sets) {
        try {
            parse_spec(spec, "spec.yaml", sets);
        } catch (const config_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(error_of({"train.stpes=10"}),
               StartsWith("--set: train.stpes: unknown key, did you mean 'train.steps'?"));
    CHECK_THAT(error_of({"atention.order=2"}),
               StartsWith("--set: atention.order: unknown key, did you mean 'attention.order'?"));
    CHECK_THAT(error_of({"steps=10"}), StartsWith("--set: steps: unknown key, did you mean 'train.steps'?"));
    CHECK_THAT(error_of({"schedule=cosin"}),
               StartsWith("--set: schedule: unknown key, did you mean 'train.schedule'?"));
    CHECK_THAT(
        error_of({"train.schedule=cosin"}),
        StartsWith("--set: train.schedule: expected one of cosine, constant, got 'cosin', did you mean 'cosine'?"));
    CHECK_THAT(error_of({"nothing.like.it=1"}), !Contains("did you mean"));
    // The papers' names of variants (docs/attention.md "The papers' names").
    for (const char* l2 : {"l2", "L2", "l2norm", "l2_norm"})
        CHECK_THAT(error_of({std::string("attention.denominator=") + l2}), Contains("did you mean 'norm'?"));
    CHECK_THAT(error_of({"attention.denominator=softmax_gate"}),
               Contains("did you mean 'none' with out_gate: true and clamp: 5?"));
    CHECK_THAT(error_of({"attention.denominator=softmax_divS_gate"}), Contains("did you mean 'gate'?"));
    CHECK_THAT(error_of({"attention.denominator=softmax_divs"}), Contains("did you mean 'length'?"));
    CHECK_THAT(error_of({"attention.numerator=linear_elu"}), Contains("did you mean 'elu1'?"));
    CHECK_THAT(error_of({"attention.numerator=linear_relu"}), Contains("did you mean 'relu'?"));
    CHECK_THAT(error_of({"attention.numerator=softmax"}), Contains("did you mean 'exp'?"));
    CHECK_THAT(error_of({"attention.denominator=rms_norm"}), Contains("did you mean 'rmsnorm'?"));

    const std::string config = run_config_to_yaml(parse_spec(spec, "spec.yaml").base);
    auto config_error_of = [](const std::string& text) {
        try {
            run_config_from_yaml(text, "config.yaml");
        } catch (const config_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(config_error_of("lr: 0.1\n" + config),
               StartsWith("config.yaml:1: lr: unknown key, did you mean 'train.lr'?"));
    CHECK_THAT(config_error_of("modle: {}\n" + config),
               StartsWith("config.yaml:1: modle: unknown key, did you mean 'model'?"));
    CHECK_THAT(config_error_of(config + "extra: [&a [1, *a]]\n"), Contains("(a cycle)"));
}

TEST_CASE("spec corpus: the input guards let ordinary YAML through", "[spec][corpus]") {
    // A byte order mark, CRLF line ends, UTF-8 in a comment, quoted values with
    // escaped quotes, a tab after a colon, a flow map over two lines, an
    // anchor and its alias, an explicit end of document.
    const std::string text =
        "\xEF\xBB\xBF# caf\xC3\xA9: \"quoted\" 'words' in a comment\r\n"
        "name: 'corpus'\r\n"
        "base:\r\n"
        "  seed:\t&s 3\r\n"
        "  task: {kind: \"lookup\", vocab: 64,\r\n"
        "         seq_len: 32, pairs: 4}\r\n"
        "  model: {layers: 2, d_model: 32, heads: 2}\r\n"
        "  attention: {numerator: 'exp', denominator: \"soft\\x6dax\"}\r\n"
        "  train: {\"steps\": 100, 'lr': 0.01, warmup: 10}\r\n"
        "seeds: [*s, 4]\r\n"
        "...\r\n";
    const experiment_spec s = parse_spec(text, "spec.yaml");
    REQUIRE(s.runs.size() == 2);
    CHECK(s.name == "corpus");
    CHECK(s.runs[0].config.seed == 3);
    CHECK(s.runs[1].config.seed == 4);
    CHECK(s.runs[0].config.attention.denominator == denominator_kind::softmax);
    CHECK(s.runs[0].config.task.seq_len == 32);
}

TEST_CASE("spec corpus: a sweep of 100000 runs is the most a spec may expand to", "[spec][corpus]") {
    std::string spec =
        "name: t\n"
        "base:\n"
        "  task: {kind: lookup, vocab: 64, seq_len: 32, pairs: 4}\n"
        "  model: {layers: 2, d_model: 32, heads: 2}\n"
        "  attention: {numerator: exp, denominator: softmax}\n"
        "  train: {steps: 100, lr: 0.01, warmup: 10}\n"
        "sweep:\n";
    std::string values = "[";
    for (int i = 1; i <= 10; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
    values += "]";
    for (const char* key : {"train.batch", "train.eval_every", "task.test_examples", "task.train_examples"})
        spec += std::string("  ") + key + ": " + values + "\n";
    const std::string seeds = "seeds: " + values + "\n";  // 10^4 points x 10 seeds = 10^5 runs
    CHECK(parse_spec(spec + seeds, "spec.yaml").runs.size() == 100000);
    try {
        parse_spec(spec + "  train.warmup: [1, 2]\n" + seeds, "spec.yaml");
        FAIL("no error");
    } catch (const config_error& e) {
        CHECK_THAT(e.what(), StartsWith("spec.yaml:7: sweep: more than 100000 runs (20000 points x 10 seeds)"));
    }
}
