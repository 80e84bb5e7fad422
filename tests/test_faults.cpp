// Faults around `attnlab run`, each on the real binary (tests/support/process_support.hpp):
// SIGINT and SIGTERM mid-run save a resume state and the next invocation
// goes on from it, giving the metrics and checkpoint of a run never stopped;
// SIGKILL mid-run leaves the finished runs untouched and the rerun completes
// (from scratch, or from the last periodic save); an output folder that
// cannot be created is a clear error; a full disk (RLIMIT_FSIZE: writes fail
// with EFBIG) ends the run with an error naming the file, leaves no
// truncated result.yaml or summary.csv, and loses no finished run; a sweep
// that cannot fit in --max-memory is refused before anything runs.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "attnlab/run/resources.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "support/process_support.hpp"
#include "support/run_results.hpp"
#include "support/tiny_spec.hpp"

namespace fs = std::filesystem;
using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;

namespace {

// Two seeds of a tiny model; one run takes about half a second, so a signal
// sent when the second run has a few rows lands in its middle. The sanitized
// build's steps are about ten times slower: there a run has 1000 steps (about
// 1.3 s; each test trains about four runs), and a signal after the first to
// third of its 10 evaluations still lands in its middle.
constexpr int two_seeds_steps = sanitized_build ? 1000 : 4000;
const std::string two_seeds = tiny_lookup_spec("faults", two_seeds_steps, 100, "seeds: [0, 1]\n");
// header, step 0 (val, test), (train, val, test) per evaluation
constexpr std::size_t full_metrics_lines = 1 + 2 + 3 * (two_seeds_steps / 100);
const std::string training_two_seeds_steps = "training " + std::to_string(two_seeds_steps) + " steps";

// The same with 400 steps (a few rows) and other seeds.
std::string short_runs(const std::string& seeds = "seeds: [0, 1]\n") {
    return tiny_lookup_spec("faults", 400, 100, seeds);
}

// The folder of a test that runs two_seeds (spec, out and res).
struct two_seeds_dir : spec_in_temp_dir {
    two_seeds_dir() : spec_in_temp_dir("faults", two_seeds) {}
};

// The reference: the spec run once, never stopped, with --threads 1.
fs::path reference(const temp_dir& tmp, const fs::path& spec) { return reference_results(tmp, spec, "faults"); }

// Checks that run `id` of `res` equals the reference's: metrics (but their
// timings), checkpoint and result (but wall_s), and that it is finished.
void check_equals_reference(const fs::path& res, const fs::path& ref, const std::string& id) {
    INFO("run " << id);
    const fs::path run = res / "runs" / id, ref_run = ref / "runs" / id;
    REQUIRE(present(run / "result.yaml"));
    CHECK(line_count(run / "metrics.csv") == full_metrics_lines);
    check_same_metrics(res, ref, id);
    CHECK(read_text(run / "model.safetensors") == read_text(ref_run / "model.safetensors"));
    CHECK_FALSE(present(run / "resume.state"));
}

}  // namespace

TEST_CASE_METHOD(two_seeds_dir,
                 "SIGINT or SIGTERM mid-run saves the run's state; the next run resumes it as if never stopped",
                 "[faults]") {
    const fs::path done_run = res / "runs" / "seed=0", stopped_run = res / "runs" / "seed=1";

    int sig = SIGINT, expected_code = 130;
    std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "1"};
    SECTION("SIGINT: exit code 130") {}
    SECTION("SIGTERM: exit code 143") {
        sig = SIGTERM;
        expected_code = 143;
    }
    INFO("signal " << sig);

    child_process c(cmd, tmp.path());
    c.wait_until([&] { return line_count(stopped_run / "metrics.csv") >= 6; });
    c.send(sig);
    const cli_result first = c.wait();
    const std::string& err1 = first.err;
    INFO("first stderr:\n" << err1);
    REQUIRE(first.signal == 0);
    CHECK(first.code == expected_code);
    CHECK_THAT(err1, Contains("[2/2 seed=1] interrupted after step "));
    CHECK_THAT(err1, Contains(sig == SIGTERM ? "terminated:" : "interrupted:"));
    REQUIRE(present(done_run / "result.yaml"));
    REQUIRE(present(stopped_run / "resume.state"));
    CHECK_FALSE(present(stopped_run / "result.yaml"));
    CHECK_FALSE(present(stopped_run / "model.safetensors"));
    const std::size_t rows_when_stopped = line_count(stopped_run / "metrics.csv");
    CHECK(rows_when_stopped < full_metrics_lines);
    const auto done_files = snapshot(done_run);
    CHECK(temporaries(res).empty());
    const auto sum = run_cli({"summarize", res.string()}, tmp.path());
    CHECK(sum.code == 1);
    CHECK_THAT(sum.err, Contains("missing run seed=1: stopped mid-way: resume.state saved"));

    // Again: the finished run is skipped, the stopped one goes on from its step.
    const auto second = run_cli(cmd, tmp.path());
    INFO("second stderr:\n" << second.err);
    REQUIRE(second.code == 0);
    CHECK_THAT(second.err, Contains("[1/2 seed=0] already done (ok), skipped"));
    CHECK_THAT(second.err, Contains("[2/2 seed=1] " + training_two_seeds_steps + ", resumed after step "));
    CHECK(count_of(second.err, training_two_seeds_steps + "\n") == 0);  // not redone from step 0
    CHECK(snapshot(done_run) == done_files);                            // byte for byte

    const fs::path ref = reference(tmp, spec);
    check_equals_reference(res, ref, "seed=0");
    check_equals_reference(res, ref, "seed=1");
    check_same_summary(res, ref);
    CHECK(temporaries(res).empty());
}

TEST_CASE_METHOD(two_seeds_dir,
                 "SIGTERM stops every run of --jobs 2 in progress; each resumes and equals an uninterrupted run",
                 "[faults]") {
    const std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "2", "--jobs", "2"};
    child_process c(cmd, tmp.path());
    c.wait_until([&] {
        return line_count(res / "runs" / "seed=0" / "metrics.csv") >= 6 &&
               line_count(res / "runs" / "seed=1" / "metrics.csv") >= 6;
    });
    c.send(SIGTERM);
    const cli_result first = c.wait();
    INFO("first stderr:\n" << first.err);
    REQUIRE(first.signal == 0);
    CHECK(first.code == 143);
    for (const char* id : {"seed=0", "seed=1"}) {
        INFO(id);
        CHECK(present(res / "runs" / id / "resume.state"));
        CHECK_FALSE(present(res / "runs" / id / "result.yaml"));
    }
    const auto second = run_cli(cmd, tmp.path());
    INFO("second stderr:\n" << second.err);
    REQUIRE(second.code == 0);
    CHECK(count_of(second.err, "resumed after step") == 2);
    const fs::path ref = reference(tmp, spec);  // --threads 1: the same 1 thread per run
    check_equals_reference(res, ref, "seed=0");
    check_equals_reference(res, ref, "seed=1");
}

TEST_CASE("a second SIGINT ends the process at once", "[faults]") {
    temp_dir tmp;
    const fs::path spec = tmp / "slow.yaml";
    // Steps of over a second (a test evaluation of 1024 sequences of 256
    // after every step, 128 in the sanitized build, whose steps are about ten
    // times slower): the first SIGINT waits for the step in progress, so the
    // second one arrives long before that step could end.
    const int test_examples = sanitized_build ? 128 : 1024;
    write_text(spec, R"(name: slow
base:
  seed: 0
  task: {kind: lookup, vocab: 512, seq_len: 256, pairs: 8, test_examples: )" +
                         std::to_string(test_examples) + R"(}
  model: {layers: 2, d_model: 64, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 1000, batch: 16, lr: 1.0e-3, warmup: 2, eval_every: 1}
)");
    const fs::path res = tmp / "out" / "slow" / "runs" / "seed=0";
    child_process c({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"}, tmp.path());
    c.wait_until([&] { return line_count(res / "metrics.csv") >= 2; });  // step 0 tested: training
    c.send(SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!c.running()) {
        WARN("the step ended within 100 ms: the second SIGINT was not needed");
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    c.send(SIGINT);
    const cli_result r = c.wait();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO("stderr:\n" << r.err);
    CHECK(r.signal == SIGINT);
    CHECK(waited < 0.5);
}

TEST_CASE_METHOD(two_seeds_dir, "SIGKILL mid-run: finished runs stay byte for byte, the rerun completes the killed run",
                 "[faults]") {
    const fs::path done_run = res / "runs" / "seed=0", killed_run = res / "runs" / "seed=1";
    std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "1"};
    bool periodic = false;
    SECTION("without a saved state the killed run is redone from step 0") {}
    SECTION("with periodic saves (--save-every) it resumes from the last one") {
        periodic = true;
        cmd.insert(cmd.end(), {"--save-every", "0.02"});
    }
    INFO("periodic saves: " << periodic);

    child_process c(cmd, tmp.path());
    c.wait_until([&] {
        return line_count(killed_run / "metrics.csv") >= 10 && (!periodic || present(killed_run / "resume.state"));
    });
    c.send(SIGKILL);
    REQUIRE(c.wait().signal == SIGKILL);
    REQUIRE(present(done_run / "result.yaml"));
    REQUIRE_FALSE(present(killed_run / "result.yaml"));
    const auto done_files = snapshot(done_run);
    const std::string summary = read_text(res / "summary.csv");

    const auto second = run_cli(cmd, tmp.path());
    INFO("second stderr:\n" << second.err);
    REQUIRE(second.code == 0);
    CHECK_THAT(second.err, Contains("[1/2 seed=0] already done (ok), skipped"));
    if (periodic)
        CHECK_THAT(second.err, Contains("[2/2 seed=1] " + training_two_seeds_steps + ", resumed after step "));
    else
        CHECK_THAT(second.err, Contains("[2/2 seed=1] " + training_two_seeds_steps + "\n"));
    CHECK(snapshot(done_run) == done_files);
    CHECK(lines_of(summary).size() == 2);  // the summary of the killed process: header + seed=0
    const fs::path ref = reference(tmp, spec);
    check_equals_reference(res, ref, "seed=1");
    check_same_summary(res, ref);
    CHECK(temporaries(res).empty());
}

TEST_CASE("an output folder that cannot be created is an error naming it; finished runs are kept", "[faults]") {
    temp_dir tmp;
    const fs::path spec = tmp / "faults.yaml";
    write_text(spec, short_runs());

    SECTION("--out below a regular file") {
        write_text(tmp / "a_file", "not a directory\n");
        const auto r = run_cli({"run", spec.string(), "--out", (tmp / "a_file" / "results").string()}, tmp.path());
        INFO(r.err);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("attnlab: error: cannot create directory " + (tmp / "a_file").string()));
        CHECK_THAT(r.err, Contains("Not a directory"));
        CHECK(read_text(tmp / "a_file") == "not a directory\n");
    }
    SECTION("a run's directory taken by a file: the sweep stops, the finished run and the summary stay") {
        const fs::path out = tmp / "out", res = out / "faults";
        write_text(tmp / "one.yaml", short_runs("seeds: [0]\n"));
        REQUIRE(run_cli({"run", (tmp / "one.yaml").string(), "--out", out.string(), "--threads", "1"}).code == 0);
        const auto before = snapshot(res / "runs" / "seed=0");
        const std::string summary = read_text(res / "summary.csv");
        write_text(res / "runs" / "seed=1", "in the way\n");
        const auto r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1"}, tmp.path());
        INFO(r.err);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("attnlab: error: cannot create directory " + (res / "runs" / "seed=1").string()));
        CHECK(snapshot(res / "runs" / "seed=0") == before);
        CHECK(read_text(res / "summary.csv") == summary);
        CHECK(temporaries(res).empty());
    }
    SECTION("a read-only results folder (only when not root: root writes anyway)") {
        if (::geteuid() == 0) {
            SUCCEED("running as root: permission bits do not stop writes");
            return;
        }
        const fs::path out = tmp / "ro";
        fs::create_directories(out);
        fs::permissions(out, fs::perms::owner_read | fs::perms::owner_exec);
        const auto r = run_cli({"run", spec.string(), "--out", out.string()}, tmp.path());
        fs::permissions(out, fs::perms::owner_all);
        INFO(r.err);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains(out.string()));
    }
}

TEST_CASE("a full disk (RLIMIT_FSIZE) ends the run with an error naming the file and loses nothing", "[faults]") {
    temp_dir tmp;
    const fs::path one = tmp / "one.yaml", spec = tmp / "faults.yaml";
    // 400 steps: config.yaml is 522 bytes, metrics.csv grows to 1029, model.safetensors is 16600.
    write_text(one, short_runs("seeds: [0]\n"));
    write_text(spec, short_runs("seeds: [0, 1, 2]\n"));
    const fs::path out = tmp / "out", res = out / "faults";
    REQUIRE(run_cli({"run", one.string(), "--out", out.string(), "--threads", "1"}).code == 0);
    const auto finished = snapshot(res / "runs" / "seed=0");
    const std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "1"};

    // Each limit stops the sweep at another file: metrics.csv (a row cut short),
    // model.safetensors (an atomic write whose temporary file is removed).
    const std::vector<std::pair<std::uint64_t, std::string>> limits = {{600, "metrics.csv"},
                                                                       {8000, "model.safetensors"}};
    for (const auto& [limit, file] : limits) {
        INFO("RLIMIT_FSIZE " << limit);
        // stdout and stderr go through pipes, where the limit does not apply.
        const cli_result r = run_cli(cmd, launch_options().in(tmp.path()).with_file_size_limit(limit));
        INFO("stderr:\n" << r.err);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("attnlab: error: cannot write " + (res / "runs" / "seed=1" / file).string()));
        CHECK_THAT(r.err, Contains("File too large"));
        CHECK(snapshot(res / "runs" / "seed=0") == finished);
        CHECK(temporaries(res).empty());
        CHECK_FALSE(present(res / "runs" / "seed=1" / "result.yaml"));
        // What exists is whole: the summary of the last complete write, parseable results.
        const auto summary = lines_of(read_text(res / "summary.csv"));
        REQUIRE(summary.size() >= 2);
        for (const auto& line : summary) CHECK(csv_fields(line).size() == csv_fields(summary[0]).size());
        CHECK(read_run_result((res / "runs" / "seed=0" / "result.yaml").string()));
    }

    // Space again: the sweep completes, seed=0 untouched.
    const auto r = run_cli(cmd, tmp.path());
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("[1/3 seed=0] already done (ok), skipped"));
    CHECK(snapshot(res / "runs" / "seed=0") == finished);
    CHECK(lines_of(read_text(res / "summary.csv")).size() == 4);
    for (const char* id : {"seed=1", "seed=2"}) {
        INFO(id);
        CHECK(read_run_result((res / "runs" / id / "result.yaml").string()));
        CHECK(line_count(res / "runs" / id / "metrics.csv") == 1 + 2 + 3 * 4);
    }
    CHECK(temporaries(res).empty());
}

TEST_CASE_METHOD(two_seeds_dir, "a sweep that cannot fit in --max-memory is refused before anything runs", "[faults]") {
    const experiment_spec parsed = parse_spec(two_seeds, spec.string());
    const std::size_t one_run = estimate_training_memory(parsed.runs[0].config, 1).total();

    SECTION("one run larger than the limit: exit code 2, the estimate and the limit named, nothing written") {
        const auto r =
            run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--max-memory", "10K"}, tmp.path());
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Contains("attnlab: error: not enough memory: run seed=0 needs about " +
                                   format_bytes(static_cast<double>(one_run))));
        CHECK_THAT(r.err, Contains("the limit is 10.0 KiB (--max-memory)"));
        CHECK_FALSE(present(out));
    }
    SECTION("--jobs 2: two runs share the limit") {
        const std::string limit = std::to_string(one_run * 3 / 2);  // fits one run, not two
        const auto two = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "2", "--jobs", "2",
                                  "--max-memory", limit, "--set", "train.steps=10", "--set", "train.eval_every=5"},
                                 tmp.path());
        INFO(two.err);
        CHECK(two.code == 2);
        CHECK_THAT(two.err, Contains("the 2 largest runs trained at once (--jobs 2)"));
        CHECK_FALSE(present(out));
        const auto one = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--jobs", "1",
                                  "--max-memory", limit, "--set", "train.steps=10", "--set", "train.eval_every=5"},
                                 tmp.path());
        INFO(one.err);
        CHECK(one.code == 0);
    }
    SECTION("a malformed size is bad input") {
        for (const char* bad : {"lots", "0", "4X", "1.5.2G", "-1G"}) {
            const auto r = run_cli({"run", spec.string(), "--out", out.string(), "--max-memory", bad}, tmp.path());
            INFO(bad << ": " << r.err);
            CHECK(r.code == 2);
            CHECK_FALSE(present(out));
        }
    }
}
