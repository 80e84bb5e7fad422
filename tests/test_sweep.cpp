// Sweeps over several workers, processes and restarts (docs/spec-reference.md, docs/outputs.md, runner.hpp):
// --shard I/N splits the runs, `attnlab summarize` merges the shards, --jobs
// trains runs at once, a sweep killed with SIGKILL is finished by running it
// again with every run trained exactly once, and a run another process holds
// (its lock) is put off, then waited for. Every comparison is "equal except timings"
// (summary.csv's wall_s, metrics.csv's tokens_per_s and elapsed_s): with the
// same thread count per run, results do not depend on how the runs were
// spread over workers, processes or restarts.
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "attnlab/io/files.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/util/error.hpp"

#include "support/process_support.hpp"
#include "support/quiet_log.hpp"
#include "support/run_results.hpp"
#include "support/tiny_spec.hpp"

namespace fs = std::filesystem;
using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;

namespace {

// ------------------------------------------------------------------ specs

// The spec of the issue: 2 learning rates x 3 seeds of a tiny model, 300 steps.
const std::string six_runs =
    tiny_lookup_spec("six", 300, 50, "sweep:\n  train.lr: [1.0e-3, 3.0e-3]\nseeds: [0, 1, 2]\n");
const std::vector<std::string> six_ids = {"train.lr=0.001,seed=0", "train.lr=0.001,seed=1", "train.lr=0.001,seed=2",
                                          "train.lr=0.003,seed=0", "train.lr=0.003,seed=1", "train.lr=0.003,seed=2"};
// header + step 0 val and test + (train, val, test) at 50, 100, ..., 300
constexpr std::size_t six_metrics_lines = 1 + 2 + 3 * 6;

// The folder of a test that runs six_runs (spec, out and res).
struct six_runs_dir : spec_in_temp_dir {
    six_runs_dir() : spec_in_temp_dir("six", six_runs) {}
};

// The spec run in one unsharded process with --jobs 1: the reference.
fs::path reference_run(const temp_dir& dir, const fs::path& spec) { return reference_results(dir, spec, "six"); }

// In-process runs: quiet, and 20 steps.
const std::string two_runs = tiny_lookup_spec("two", 20, 10, "seeds: [0, 1]\n");

// In-process sweeps into a temporary directory, quiet, on one thread.
struct in_process_sweep {
    temp_dir tmp;
    quiet_log quiet;
    runner_options opt;
    in_process_sweep() {
        opt.out_root = tmp.path().string();
        opt.threads = 1;
    }
};

}  // namespace

TEST_CASE("--shard I/N: parsing, and the shards partition the runs in spec order", "[sweep]") {
    const shard_spec s = parse_shard("1/3");
    CHECK(s.index == 1);
    CHECK(s.count == 3);
    CHECK(parse_shard("0/1").count == 1);
    for (const char* bad : {"3/3", "-1/3", "0/0", "1", "a/3", "1/3x", "/3", "1/", " 1/3", "1/-2"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_shard(bad), config_error);
        CHECK_THROWS_WITH(parse_shard(bad), Contains("--shard") && Contains(bad));
    }
    // Every run belongs to exactly one shard: i mod N.
    for (int n = 1; n <= 5; ++n)
        for (std::size_t i = 0; i < 17; ++i) {
            int owners = 0;
            for (int k = 0; k < n; ++k) owners += shard_spec{k, n}.owns(i);
            CHECK(owners == 1);
            CHECK(shard_spec{static_cast<int>(i % n), n}.owns(i));
        }
}

TEST_CASE_METHOD(in_process_sweep, "a run whose lock another process holds is put off, then waited for and trained",
                 "[sweep]") {
    const experiment_spec spec = parse_spec(two_runs, "two.yaml");
    const std::string held_dir = (tmp / "two" / "runs" / spec.runs[0].id).string();
    make_dirs(held_dir);
    SECTION("released while the sweep waits: the run is trained") {
        auto other = std::make_unique<run_lock>(held_dir);  // another open file description: like another process
        REQUIRE(other->owned());
        CHECK(run_locked_elsewhere(held_dir));
        std::thread release([&] {
            // Released once the other run is done: the sweep is then waiting for this one.
            while (!fs::exists(tmp / "two" / "runs" / spec.runs[1].id / "result.yaml"))
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            other.reset();
        });
        const sweep_outcome out = run_sweep(spec, opt);
        release.join();
        CHECK(out.busy == 0);
        CHECK(out.ok == 2);
        CHECK_FALSE(out.interrupted);
        CHECK(lines_of(read_text(tmp / "two" / "summary.csv")).size() == 3);
    }
    SECTION("finished meanwhile by the other process with another config: compared, refused, not overwritten") {
        // The run as another process with train.steps=30 would leave it, made in another folder.
        runner_options elsewhere = opt;
        elsewhere.out_root = (tmp / "elsewhere").string();
        run_sweep(parse_spec(two_runs, "two.yaml", {"train.steps=30"}), elsewhere);
        const fs::path finished = tmp / "elsewhere" / "two" / "runs" / spec.runs[0].id;
        auto other = std::make_unique<run_lock>(held_dir);
        std::thread finish([&] {
            while (!fs::exists(tmp / "two" / "runs" / spec.runs[1].id / "result.yaml"))
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            for (const char* f : {"config.yaml", "metrics.csv", "model.safetensors", "result.yaml"})
                fs::copy_file(finished / f, fs::path(held_dir) / f);
            other.reset();
        });
        CHECK_THROWS_WITH(run_sweep(spec, opt),
                          Contains(held_dir) && Contains("train.steps 30 -> 20") && Contains("it is not overwritten"));
        finish.join();
        CHECK(read_text(fs::path(held_dir) / "result.yaml") == read_text(finished / "result.yaml"));
        CHECK(read_text(fs::path(held_dir) / "metrics.csv") == read_text(finished / "metrics.csv"));
    }
    SECTION("stopped while it waits: the run is left, not in the summary") {
        const run_lock other(held_dir);
        std::atomic<bool> stop{false};
        opt.stop = &stop;
        std::thread stopper([&] {
            while (!fs::exists(tmp / "two" / "runs" / spec.runs[1].id / "result.yaml"))
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            stop.store(true);
        });
        const sweep_outcome out = run_sweep(spec, opt);
        stopper.join();
        CHECK(out.busy == 1);
        CHECK(out.ok == 1);
        CHECK(out.interrupted);
        CHECK_FALSE(fs::exists(held_dir + "/config.yaml"));  // not touched
        const summarize_outcome sum = summarize_sweep_dir(out.dir);
        REQUIRE(sum.missing.size() == 1);
        CHECK(sum.missing[0].first == spec.runs[0].id);
        CHECK(sum.missing[0].second == "being trained by another process");
    }
}

TEST_CASE_METHOD(in_process_sweep,
                 "a redone run starts from a clean directory: no stale result, checkpoint or temporary file",
                 "[sweep]") {
    const experiment_spec spec = parse_spec(two_runs, "two.yaml");
    run_sweep(spec, opt);
    const fs::path run = tmp / "two" / "runs" / spec.runs[1].id;
    const std::string metrics = read_text(run / "metrics.csv");
    // As if the run had been trained with another config and killed while writing its files.
    const std::string config = read_text(run / "config.yaml");
    write_text(run / "config.yaml", config + "# edited\n");
    fs::remove(run / "result.yaml");
    for (const char* junk : {"result.yaml.tmp", "model.safetensors.tmp", "config.yaml.tmp.otherhost.1.2"})
        write_text(run / junk, "half");
    write_text(run / "metrics.csv", metrics + metrics);

    const sweep_outcome again = run_sweep(spec, opt);
    CHECK(again.skipped == 1);
    CHECK(again.ok == 1);
    CHECK(temporaries(tmp.path()).empty());
    CHECK(read_text(run / "config.yaml") == config);
    CHECK(metrics_without_timings(read_text(run / "metrics.csv")) == metrics_without_timings(metrics));
    CHECK(fs::is_regular_file(run / "model.safetensors"));
}

TEST_CASE_METHOD(in_process_sweep, "summarize re-derives the runs from spec.yaml with its --set overrides", "[sweep]") {
    const std::vector<std::string> overrides = {"train.steps=12", "train.eval_every=6"};
    const experiment_spec spec = parse_spec(two_runs, "two.yaml", overrides);
    const sweep_outcome out = run_sweep(spec, opt);
    REQUIRE(out.ok == 2);
    const std::string summary = read_text(out.summary_path);
    const std::string table = read_text(tmp / "two" / "table.md");
    CHECK_THAT(summary, Contains(",12,"));  // steps column

    const experiment_spec again = load_spec_as_run(out.dir);
    REQUIRE(again.runs.size() == spec.runs.size());
    for (std::size_t i = 0; i < spec.runs.size(); ++i) {
        CHECK(again.runs[i].id == spec.runs[i].id);
        CHECK(run_config_to_yaml(again.runs[i].config) == run_config_to_yaml(spec.runs[i].config));
    }
    fs::remove(tmp / "two" / "summary.csv");
    const summarize_outcome sum = summarize_sweep_dir(out.dir);
    CHECK(sum.total == 2);
    CHECK(sum.found == 2);
    CHECK(sum.missing.empty());
    CHECK(read_text(tmp / "two" / "summary.csv") == summary);
    CHECK(read_text(tmp / "two" / "table.md") == table);

    SECTION("without overrides.yaml (older directories) from spec.yaml's first line") {
        fs::remove(tmp / "two" / "overrides.yaml");
        const summarize_outcome old = summarize_sweep_dir(out.dir);
        CHECK(old.found == 2);
        CHECK(read_text(tmp / "two" / "summary.csv") == summary);
    }
    SECTION("a run trained with other overrides is reported, not summarized") {
        write_file_atomic((tmp / "two" / "overrides.yaml").string(), "- train.steps=13\n- train.eval_every=6\n");
        const summarize_outcome other = summarize_sweep_dir(out.dir);
        CHECK(other.found == 0);
        REQUIRE(other.missing.size() == 2);
        CHECK_THAT(other.missing[0].second, Contains("config.yaml differs"));
    }
    SECTION("directories of runs that are not in the spec are named as strays") {
        make_dirs((tmp / "two" / "runs" / "seed=7").string());
        CHECK(summarize_sweep_dir(out.dir).strays == std::vector<std::string>{"seed=7"});
    }
    SECTION("a directory that is not a results directory is bad input") {
        CHECK_THROWS_AS(summarize_sweep_dir((tmp / "two" / "runs").string()), config_error);
        CHECK_THROWS_AS(summarize_sweep_dir((tmp / "nothing").string()), config_error);
    }
}

TEST_CASE_METHOD(six_runs_dir, "a sweep killed with SIGKILL mid-run and run again trains every run exactly once",
                 "[sweep]") {
    const std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "1"};
    auto run_dir = [&](std::size_t i) { return res / "runs" / six_ids[i]; };

    // Let the sweep run in 1 ms slices, stopped (SIGSTOP) between them, until
    // two runs are done and the third is halfway through its metrics; then
    // SIGKILL it. A run takes tens of milliseconds, so a slice rarely skips
    // it; if this test process was descheduled so long that it did, try again.
    std::size_t third_lines = 0;
    std::string err1;
    auto kill_during_third_run = [&] {
        child_process c(cmd, tmp.path());
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (!c.pause()) FAIL("attnlab ended before it was killed:\n" << c.err());
            const bool overshot = present(run_dir(2) / "result.yaml");
            if (overshot ||
                (present(run_dir(1) / "result.yaml") && (third_lines = line_count(run_dir(2) / "metrics.csv")) >= 4)) {
                c.send(SIGKILL);
                REQUIRE(c.wait().signal == SIGKILL);
                err1 = c.err();
                return !overshot;
            }
            c.resume();
        }
    };
    int attempts = 1;
    for (; !kill_during_third_run(); ++attempts) {
        REQUIRE(attempts < 5);
        fs::remove_all(out);
    }
    INFO("attempts: " << attempts);
    INFO("first stderr:\n" << err1);
    CHECK(third_lines < six_metrics_lines);
    CHECK(count_of(err1, "training 300 steps") == 3);
    CHECK(count_of(err1, "] done in ") == 2);
    CHECK(present(run_dir(0) / "result.yaml"));
    CHECK(present(run_dir(1) / "result.yaml"));
    CHECK_FALSE(present(run_dir(2) / "result.yaml"));
    CHECK_FALSE(present(run_dir(3)));
    REQUIRE(lines_of(read_text(res / "summary.csv")).size() == 3);  // header + the two done runs

    // Again, to the end: the two done runs are skipped, the other four trained once.
    const auto second = run_cli(cmd, tmp.path());
    INFO("second stderr:\n" << second.err);
    REQUIRE(second.code == 0);
    CHECK(count_of(second.err, "already done (ok), skipped") == 2);
    CHECK_THAT(second.err, Contains("[1/6 train.lr=0.001,seed=0] already done (ok), skipped"));
    CHECK_THAT(second.err, Contains("[2/6 train.lr=0.001,seed=1] already done (ok), skipped"));
    CHECK(count_of(second.err, "training 300 steps") == 4);
    CHECK_THAT(second.err, Contains("[3/6 train.lr=0.001,seed=2] training 300 steps"));
    CHECK_THAT(second.err, Contains("sweep: 6/6 runs done (2 skipped)"));
    CHECK_THAT(second.err, Contains("6 runs (4 trained ok, 0 diverged, 2 skipped as done)"));

    // Every run has exactly one set of metrics rows and equals the uninterrupted sweep.
    const fs::path ref = reference_run(tmp, spec);
    for (std::size_t i = 0; i < six_ids.size(); ++i) {
        INFO(six_ids[i]);
        const std::string metrics = read_text(run_dir(i) / "metrics.csv");
        CHECK(lines_of(metrics).size() == six_metrics_lines);
        CHECK(count_of(metrics, "\n0,test,") == 1);
        check_same_metrics(res, ref, six_ids[i]);
        CHECK(read_text(run_dir(i) / "result.yaml").find("status: ok") != std::string::npos);
    }
    check_same_summary(res, ref);
    CHECK(lines_of(read_text(res / "summary.csv")).size() == 7);
    CHECK(temporaries(res).empty());
}

TEST_CASE_METHOD(six_runs_dir, "a spec run as 3 shards in 3 processes, then summarized, equals one unsharded run",
                 "[sweep]") {
    auto shard_cmd = [&](int i) {
        return std::vector<std::string>{"run",       spec.string(), "--out",   out.string(),
                                        "--threads", "1",           "--shard", std::to_string(i) + "/3"};
    };

    // Shards 0 and 2 at once; summarize then names shard 1's runs as missing.
    child_process s0(shard_cmd(0), tmp.path()), s2(shard_cmd(2), tmp.path());
    REQUIRE(s0.wait().code == 0);
    REQUIRE(s2.wait().code == 0);
    const std::string err0 = s0.err();
    INFO("shard 0 stderr:\n" << err0);
    CHECK(count_of(err0, "training 300 steps") == 2);
    CHECK_THAT(err0, Contains("[1/6 train.lr=0.001,seed=0] training"));
    CHECK_THAT(err0, Contains("[4/6 train.lr=0.003,seed=0] training"));
    CHECK_THAT(err0, Contains("sweep: 2/2 runs done (0 skipped)"));
    CHECK(lines_of(read_text(res / "shards" / "0-of-3" / "summary.csv")).size() == 3);
    CHECK(fs::is_regular_file(res / "shards" / "2-of-3" / "table.md"));
    CHECK_FALSE(fs::exists(res / "summary.csv"));
    const auto partial = run_cli({"summarize", res.string()}, tmp.path());
    INFO("summarize stderr:\n" << partial.err);
    CHECK(partial.code == 1);
    CHECK(count_of(partial.err, "missing run ") == 2);
    CHECK_THAT(partial.err, Contains("missing run train.lr=0.001,seed=1: not started"));
    CHECK_THAT(partial.err, Contains("missing run train.lr=0.003,seed=1: not started"));
    CHECK_THAT(partial.err, Contains("4/6 runs done, 2 missing"));

    const cli_result s1 = run_cli(shard_cmd(1), tmp.path());
    REQUIRE(s1.code == 0);
    CHECK(count_of(s1.err, "training 300 steps") == 2);
    const auto merged = run_cli({"summarize", res.string()}, tmp.path());
    INFO("summarize stderr:\n" << merged.err);
    CHECK(merged.code == 0);
    CHECK_THAT(merged.err, Contains("6/6 runs done;"));

    const fs::path ref = reference_run(tmp, spec);
    check_same_summary(res, ref);
    CHECK(lines_of(read_text(res / "summary.csv")).size() == 7);
    CHECK(temporaries(res).empty());
}

TEST_CASE_METHOD(six_runs_dir, "--jobs 2 trains two runs at once and gives the summary of --jobs 1", "[sweep]") {
    const auto r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--jobs", "2"}, tmp.path());
    INFO("stderr:\n" << r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("6 to train: 2 at a time, 1 thread each"));
    CHECK(count_of(r.err, "training 300 steps") == 6);
    CHECK_THAT(r.err, Contains("sweep: 6/6 runs done (0 skipped)"));
    // Every progress line of a run carries its tag.
    for (const auto& line : lines_of(r.err))
        if (line.find(" step ") != std::string::npos && line.find("done in") == std::string::npos) {
            INFO(line);
            CHECK(line.find(" info [") != std::string::npos);
        }

    const fs::path ref = reference_run(tmp, spec);
    check_same_summary(res, ref);
    for (const auto& id : six_ids) check_same_metrics(res, ref, id);
}

TEST_CASE_METHOD(six_runs_dir, "attnlab run --shard and --jobs, attnlab summarize: bad input is exit code 2",
                 "[sweep]") {
    for (const char* bad : {"3/3", "1", "x/2"}) {
        const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--shard", bad}, tmp.path());
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Contains("attnlab: error: --shard: "));
        CHECK(count_of(r.err, "\n") == 1);
    }
    const auto jobs = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--jobs", "0"}, tmp.path());
    CHECK(jobs.code == 2);
    CHECK_FALSE(fs::exists(tmp / "out"));
    const auto none = run_cli({"summarize", (tmp / "nothing").string()}, tmp.path());
    CHECK(none.code == 2);
    CHECK_THAT(none.err, Contains("no such directory"));
    const auto not_results = run_cli({"summarize", tmp.path().string()}, tmp.path());
    CHECK(not_results.code == 2);
    CHECK_THAT(not_results.err, Contains("no spec.yaml"));
}

TEST_CASE_METHOD(in_process_sweep,
                 "--rerun-other-builds retrains the runs of comparisons that mix builds, and no other", "[sweep]") {
    const experiment_spec spec = parse_spec(
        tiny_lookup_spec(
            "builds", 20, 10,
            "sweep:\n  attention.numerator: [exp, linear]\n  attention.denominator: [softmax, norm]\n"
            "seeds: [0, 1]\nreport: {baseline: {attention.numerator: exp}, match: [attention.denominator]}\n"),
        "builds.yaml");
    REQUIRE(run_sweep(spec, opt).ok == 8);
    const fs::path runs = tmp / "builds" / "runs";
    const std::string changed = "attention.numerator=linear,attention.denominator=softmax,seed=0";
    const std::string metrics_before = read_text(runs / changed / "metrics.csv");
    // The run as if another build had trained it.
    const std::string result = read_text(runs / changed / "result.yaml");
    const std::size_t at = result.find("commit: \"");
    REQUIRE(at != std::string::npos);
    std::string other = result;
    other.replace(at + 9, 12, "000000000000");
    write_file_atomic((runs / changed / "result.yaml").string(), other);
    const summarize_outcome flagged = summarize_sweep_dir((tmp / "builds").string());
    REQUIRE(flagged.comparison_warnings.size() == 1);
    CHECK_THAT(flagged.comparison_warnings[0], Contains(changed));

    runner_options again = opt;
    again.rerun_other_builds = true;
    const sweep_outcome out = run_sweep(spec, again);
    CHECK(out.ok == 1);  // that run alone: the rest of its comparison is of this build
    CHECK(out.skipped == 7);
    CHECK(read_text(runs / changed / "result.yaml").find("000000000000") == std::string::npos);
    CHECK((!fs::exists(tmp / "builds" / "replacing") || fs::is_empty(tmp / "builds" / "replacing")));
    // Same build, same configuration: the retrained run is the run it replaced (timings aside).
    CHECK(metrics_without_timings(read_text(runs / changed / "metrics.csv")) ==
          metrics_without_timings(metrics_before));
    CHECK(summarize_sweep_dir((tmp / "builds").string()).comparison_warnings.empty());
    CHECK(run_sweep(spec, again).ok == 0);  // nothing of another build is left
}

TEST_CASE("rebuild_runs: a comparison that shares a run with a retrained one is retrained too", "[sweep]") {
    const experiment_spec spec = parse_spec(
        tiny_lookup_spec("closure", 20, 10,
                         "sweep:\n  attention.numerator: [exp, linear, elu1]\nseeds: [0, 1]\nreport:\n"
                         "  - {baselines: [{attention.numerator: exp}], among: {attention.numerator: [linear]}}\n"
                         "  - {baselines: [{attention.numerator: exp}], among: {attention.numerator: [elu1]}}\n"),
        "closure.yaml");
    const build_info a{"aaaaaaaaaaaa", "Release", "avx2", 1}, b{"bbbbbbbbbbbb", "Release", "avx2", 1},
        now{"cccccccccccc", "Release", "avx2", 1};
    std::vector<std::pair<std::size_t, run_result>> done;
    for (std::size_t i = 0; i < spec.runs.size(); ++i) {
        run_result r;
        r.steps = 20;
        r.final_test = r.final_val = {1.0, 0.5, 0.0};
        // Every run by build a, but linear's seed 1 by b: the first family mixes builds.
        r.build = spec.runs[i].id == "attention.numerator=linear,seed=1" ? b : a;
        done.emplace_back(i, r);
    }
    // linear vs exp mixes a and b: its four runs go (none is of this build); exp's two runs are also in elu1 vs
    // exp, which then would mix, so elu1's two go too: all six.
    CHECK(rebuild_runs(spec, done, now).size() == 6);
    // When every run but linear's seed 1 is of this build, that run alone.
    for (auto& [i, r] : done)
        if (spec.runs[i].id != "attention.numerator=linear,seed=1") r.build = now;
    const std::vector<std::size_t> one = rebuild_runs(spec, done, now);
    REQUIRE(one.size() == 1);
    CHECK(spec.runs[one[0]].id == "attention.numerator=linear,seed=1");
    // One build throughout, or no report: nothing.
    for (auto& [i, r] : done) r.build = a;
    CHECK(rebuild_runs(spec, done, now).empty());
}
