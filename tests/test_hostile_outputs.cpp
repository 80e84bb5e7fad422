// Outputs and options built to break attnlab (issue 51, "Reliability, fourth
// round"), each on the real binary, bounded in time and memory (support/
// hostile_support.hpp): an output never replaces a run's own files or a
// device; a failed write to standard output is an error; --overwrite never
// trains through a symbolic link planted in replacing/; numeric options are
// read strictly; an option given an empty value is refused, never taken for
// its absence; summarize's --baseline names itself in its errors.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/hostile_support.hpp"
#include "support/process_support.hpp"
#include "support/tiny_spec.hpp"

namespace fs = std::filesystem;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Runs `args` bounded, checks one error line and the exit code; returns stderr.
std::string refused_output(const std::vector<std::string>& args, int code, const launch_options& opt = bounded()) {
    const cli_result r = run_cli(args, opt);
    INFO("stderr: " << r.err.substr(0, 2000));
    CHECK(r.code == code);
    CHECK(count_of(r.err, "\n") == 1);
    CHECK(r.max_rss_kib < hostile_max_rss_kib);
    return r.err;
}

// The run still loads and scores as before.
void run_still_scores(const fs::path& run, const std::string& expected_line) {
    const cli_result again = run_cli({"eval", run.string(), "--threads", "1"}, bounded());
    INFO(again.err);
    CHECK(again.code == 0);
    CHECK(again.out == expected_line);
}

}  // namespace

TEST_CASE("eval's outputs never replace the run's own files", "[hostile]") {
    temp_dir dir;
    const fs::path run = tiny_finished_run(dir.path());
    const cli_result first = run_cli({"eval", run.string(), "--threads", "1"}, bounded());
    REQUIRE(first.code == 0);
    const std::map<std::string, std::string> before = snapshot(run);
    fs::create_symlink(run / "model.safetensors", dir / "link.csv");
    fs::create_hard_link(run / "metrics.csv", dir / "hard.csv");
    const std::vector<std::string> own = {"model.safetensors", "config.yaml",  "result.yaml",
                                          "metrics.csv",       "resume.state", ".lock"};
    for (const std::string& name : own) {
        INFO(name);
        const std::string err =
            refused_output({"eval", run.string(), "--threads", "1", "--per-position", (run / name).string()}, 2);
        CHECK_THAT(err, StartsWith("attnlab: error: --per-position: " + (run / name).string()) &&
                            Contains("a file this command reads"));
    }
    // --truncate's --out, another spelling of the same file, a link to it and a hard link.
    for (const fs::path& out : {run / "model.safetensors", run / ".." / "seed=0" / "config.yaml"}) {
        INFO(out);
        CHECK_THAT(refused_output({"eval", run.string(), "--truncate", "2", "--out", out.string()}, 2),
                   Contains("--out: ") && Contains("a file this command reads"));
    }
    CHECK_THAT(refused_output({"eval", run.string(), "--per-position", (dir / "link.csv").string()}, 2),
               Contains("is a symbolic link"));
    CHECK_THAT(refused_output({"eval", run.string(), "--per-position", (dir / "hard.csv").string()}, 2),
               Contains((run / "metrics.csv").string() + ", a file this command reads"));
    CHECK(snapshot(run) == before);
    CHECK(fs::is_symlink(fs::symlink_status(dir / "link.csv")));
    run_still_scores(run, first.out);

    // A file of its own is written, and replaced whole by the next eval.
    const fs::path out = dir / "pp.csv";
    for (int i = 0; i < 2; ++i) {
        const cli_result ok =
            run_cli({"eval", run.string(), "--threads", "1", "--per-position", out.string()}, bounded());
        INFO(ok.err);
        CHECK(ok.code == 0);
        CHECK_THAT(read_text(out), StartsWith("position,"));
    }
}

TEST_CASE("eval refuses an output that is a device, a FIFO or a directory, and leaves it as it was", "[hostile]") {
    temp_dir dir;
    const fs::path run = tiny_finished_run(dir.path());
    const fs::path device = char_device(dir.path(), 3, "/dev/null");  // made here as root, else /dev/null itself
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0644) == 0);
    fs::create_directories(dir / "folder");
    std::vector<std::pair<fs::path, std::string>> cases = {{dir / "fifo", "is a FIFO (named pipe)"},
                                                           {dir / "folder", "is a directory"}};
    if (!device.empty()) cases.emplace_back(device, "is a character device");
    for (const auto& [path, what] : cases) {
        INFO(path);
        CHECK_THAT(refused_output({"eval", run.string(), "--per-position", path.string()}, 2),
                   Contains("--per-position: " + path.string() + " " + what) &&
                       Contains("attnlab writes an output only as a regular file"));
        CHECK_THAT(refused_output({"eval", run.string(), "--truncate", "1", "--out", path.string()}, 2),
                   Contains("--out: " + path.string() + " " + what));
    }
    if (!device.empty()) CHECK(fs::is_character_file(device));
    CHECK(fs::is_fifo(dir / "fifo"));
    CHECK(fs::is_empty(dir / "folder"));
}

TEST_CASE("a failed write to standard output is an error naming it", "[hostile]") {
    temp_dir dir;
    const fs::path run = tiny_finished_run(dir.path());
    // /dev/full, or a node like it made here, or nothing to test with.
    fs::path full = "/dev/full";
    std::error_code ec;
    if (!fs::is_character_file(full, ec)) full = char_device(dir.path(), 7, "");
    if (full.empty()) {
        WARN("no /dev/full and no right to make one: standard output errors not tested here");
        return;
    }
    const std::vector<std::vector<std::string>> commands = {
        {"generate", run.string(), "--prompt", "1 2", "--tokens", "5"},
        {"eval", run.string(), "--threads", "1"},
        {"list", (dir / "tiny.yaml").string()},
        {"validate", (dir / "tiny.yaml").string()},
        {"state", (dir / "tiny.yaml").string()},
        {"--help"},
    };
    for (const auto& args : commands) {
        INFO(args[0]);
        const std::string err = refused_output(args, 1, bounded().with_stdout_to(full));
        CHECK(err == "attnlab: error: writing standard output: No space left on device\n");
    }
    // The same commands with a working stdout succeed.
    for (const auto& args : commands) {
        INFO(args[0]);
        CHECK(run_cli(args, bounded()).code == 0);
    }
}

TEST_CASE("--overwrite never trains through a symbolic link planted in replacing/", "[hostile]") {
    temp_dir dir;
    const fs::path run = tiny_finished_run(dir.path());
    const fs::path folder = dir / "out" / "tiny";
    const std::map<std::string, std::string> before = snapshot(run);
    fs::create_directories(dir / "elsewhere");
    const std::vector<std::string> overwrite = {"run",        (dir / "tiny.yaml").string(),
                                                "--out",      (dir / "out").string(),
                                                "--threads",  "1",
                                                "--set",      "train.steps=6",
                                                "--overwrite"};
    SECTION("replacing/seed=0 a link to another folder") {
        fs::create_directories(folder / "replacing");
        fs::create_directory_symlink(dir / "elsewhere", folder / "replacing" / "seed=0");
        CHECK_THAT(refused_output(overwrite, 1), Contains((folder / "replacing" / "seed=0").string() +
                                                          " is a symbolic link to " + (dir / "elsewhere").string()) &&
                                                     Contains("never through a link"));
    }
    SECTION("replacing/ itself a link") {
        fs::create_directory_symlink(dir / "elsewhere", folder / "replacing");
        CHECK_THAT(refused_output(overwrite, 1), Contains((folder / "replacing").string() + " is a symbolic link"));
    }
    CHECK(fs::is_empty(dir / "elsewhere"));
    CHECK(!fs::is_symlink(fs::symlink_status(run)));
    CHECK(snapshot(run) == before);
    // Once the link is gone, --overwrite replaces the run in the results folder.
    fs::remove(folder / "replacing" / "seed=0");
    fs::remove(folder / "replacing");
    const cli_result ok = run_cli(overwrite, bounded());
    INFO(ok.err);
    CHECK(ok.code == 0);
    CHECK_THAT(read_text(run / "config.yaml"), Contains("steps: 6"));
    CHECK(fs::is_empty(dir / "elsewhere"));
}

TEST_CASE("--seed takes 0 to 2^64-1 and nothing else; options given empty values are refused", "[hostile]") {
    temp_dir dir;
    const fs::path run = tiny_finished_run(dir.path());
    const auto sample = [&](const std::string& seed) {
        return run_cli({"generate", run.string(), "--prompt", "1 2", "--tokens", "8", "--seed", seed}, bounded());
    };
    for (const std::string bad : {"-1", "18446744073709551616", "+5", " 5", "5x", "0x10", "1e3", ""}) {
        INFO("--seed '" << bad << "'");
        CHECK_THAT(refused_output({"generate", run.string(), "--prompt", "1 2", "--seed", bad}, 2),
                   Contains("attnlab generate --seed: expected an integer from 0 to 18446744073709551615"));
    }
    const cli_result top = sample("18446744073709551615"), zero = sample("0");
    INFO(top.err);
    CHECK(top.code == 0);
    CHECK(zero.code == 0);

    // An empty value is refused with the option's name, never taken for the option's absence.
    const std::vector<std::pair<std::vector<std::string>, std::string>> empties = {
        {{"eval", run.string(), "--truncate", "", "--out", (dir / "o.csv").string()}, "attnlab eval --truncate"},
        {{"eval", run.string(), "--truncate", "2", "--out", ""}, "attnlab eval --out"},
        {{"eval", run.string(), "--per-position", ""}, "attnlab eval --per-position"},
        {{"eval", run.string(), "--max-memory", ""}, "attnlab eval --max-memory"},
        {{"generate", run.string(), "--prompt-file", ""}, "attnlab generate --prompt-file"},
        {{"probe", run.string(), "--out", ""}, "attnlab probe --out"},
        {{"run", (dir / "tiny.yaml").string(), "--out", ""}, "attnlab run --out"},
        {{"run", (dir / "tiny.yaml").string(), "--shard", ""}, "attnlab run --shard"},
    };
    for (const auto& [args, option] : empties) {
        INFO(option);
        CHECK_THAT(refused_output(args, 2), Contains(option + ": expected") && Contains("got ''"));
    }
    CHECK(!fs::exists(dir / "o.csv"));
    // Repeated one-value options are refused with their own names.
    CHECK_THAT(refused_output({"generate", run.string(), "--prompt", "1", "--seed", "1", "--seed", "2"}, 2),
               Contains("--seed given twice"));
    CHECK_THAT(refused_output({"summarize", (dir / "out" / "tiny").string(), "--select-on", "99999999999"}, 2),
               Contains("--select-on: expected an integer from 0 to 2147483647"));
}

TEST_CASE("summarize --baseline names itself in the errors of its values", "[hostile]") {
    temp_dir dir;
    write_text(dir / "sw.yaml", tiny_lookup_spec("sw", 4, 2, "sweep: {attention.numerator: [exp, elu1]}\n"));
    REQUIRE(run_cli({"run", (dir / "sw.yaml").string(), "--out", (dir / "out").string(), "--threads", "1"}, bounded())
                .code == 0);
    const std::string folder = (dir / "out" / "sw").string();
    // An info line says the report is added, then the error.
    const auto error_of = [](const cli_result& r) {
        INFO(r.err);
        CHECK(r.code == 2);
        return r.err.substr(r.err.find("attnlab: error: "));
    };
    const std::string err =
        error_of(run_cli({"summarize", folder, "--baseline", "attention.numerator=bogus"}, bounded()));
    CHECK_THAT(err, StartsWith("attnlab: error: --baseline: attention.numerator: expected one of"));
    CHECK_THAT(err, !Contains("--set"));
    CHECK_THAT(error_of(run_cli({"summarize", folder, "--baseline", "attention.numerator=exp", "--among",
                                 "attention.numerator=exp,bogus"},
                                bounded())),
               StartsWith("attnlab: error: --among: attention.numerator:"));
    // Two baselines are two baselines: each variant is compared with both.
    const cli_result two = run_cli(
        {"summarize", folder, "--baseline", "attention.numerator=exp", "--baseline", "attention.numerator=elu1"},
        bounded());
    INFO(two.err);
    CHECK(two.code == 0);
    const std::string csv = read_text(dir / "out" / "sw" / "comparisons.csv");
    CHECK_THAT(csv, Contains("attention.numerator=exp") && Contains("attention.numerator=elu1"));
}
