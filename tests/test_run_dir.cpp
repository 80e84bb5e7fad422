// One run's directory (run/run_dir.hpp): result.yaml written and read back,
// the "done" test and its reasons, and the clean-up before a redo, on
// directories made by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"

using namespace attnlab;
using namespace attnlab::test;
namespace fs = std::filesystem;

namespace {
run_result sample_result() {
    run_result r;
    r.status = run_status::diverged;
    r.reason = "loss not finite at step 3";
    r.steps = 2;
    r.final_val = {1.375, 0.375, 0.0};
    r.final_test = {1.5, 0.25, 0.0};
    r.best_val = {1.125, 0.625, 0.25};
    r.best_test = {1.25, 0.5, 0.125};
    r.best_step = 1;
    r.wall_s = 0.75;
    r.params = 3888;
    r.nonpositive_denominator_steps = 2;
    r.first_nonpositive_step = 1;
    return r;
}
}  // namespace

TEST_CASE("run dir: result.yaml is written atomically and read back field by field", "[run_dir]") {
    temp_dir tmp;
    const run_result r = sample_result();
    write_run_result(tmp.path().string(), r);
    const std::string text = read_text(tmp / result_filename);
    CHECK(text == run_result_to_yaml(r));
    CHECK_THAT(text, Catch::StartsWith("status: diverged\nreason: \"loss not finite at step 3\"\nsteps: 2\n"));
    const auto back = read_run_result((tmp / result_filename).string());
    REQUIRE(back);
    CHECK(back->status == r.status);
    CHECK(back->reason == r.reason);
    CHECK(back->steps == r.steps);
    CHECK(back->final_test.loss == r.final_test.loss);
    CHECK(back->final_test.token_acc == r.final_test.token_acc);
    CHECK(back->best_test.seq_acc == r.best_test.seq_acc);
    CHECK(back->final_val.token_acc == r.final_val.token_acc);
    CHECK(back->best_val.loss == r.best_val.loss);
    CHECK(back->best_val.seq_acc == r.best_val.seq_acc);
    CHECK(back->best_step == r.best_step);
    CHECK(back->wall_s == r.wall_s);
    CHECK(back->params == r.params);
    CHECK(back->nonpositive_denominator_steps == r.nonpositive_denominator_steps);
    CHECK(back->first_nonpositive_step == r.first_nonpositive_step);
    for (const fs::directory_entry& e : fs::directory_iterator(tmp.path()))
        CHECK(e.path().filename() == result_filename);  // no temporary left behind
}

TEST_CASE("run dir: the build that made a run is read back, and a sweep of several builds is named", "[run_dir]") {
    temp_dir tmp;
    run_result r = sample_result();
    CHECK_FALSE(read_run_result((tmp / result_filename).string()));
    write_run_result(tmp.path().string(), r);
    CHECK_FALSE(read_run_result((tmp / result_filename).string())->build);  // older files: not recorded
    r.build = build_info{"abc123", "Release", "avx2", 2};
    write_run_result(tmp.path().string(), r);
    CHECK_THAT(read_text(tmp / result_filename),
               Catch::EndsWith("build: {commit: \"abc123\", build_type: \"Release\", isa: \"avx2\", threads: 2}\n"));
    const auto back = read_run_result((tmp / result_filename).string());
    REQUIRE(back->build);
    CHECK(describe(*back->build) == "abc123 Release avx2 2 threads");

    std::vector<summary_entry> entries(3, summary_entry{nullptr, r});
    CHECK(build_mix_text(entries).empty());  // one build
    entries[2].result.build->threads = 1;
    CHECK(build_mix_text(entries) == "2 runs by abc123 Release avx2 2 threads, 1 run by abc123 Release avx2 1 threads");
    entries[1].result.build.reset();
    CHECK_THAT(build_mix_text(entries), Catch::Contains("1 run by (not recorded)"));
    CHECK_FALSE(current_build(3).commit.empty());
    CHECK(current_build(3).threads == 3);
}

TEST_CASE("run dir: an absent result.yaml is none, a malformed one an io_error naming it", "[run_dir]") {
    temp_dir tmp;
    const std::string path = (tmp / result_filename).string();
    CHECK_FALSE(read_run_result(path));
    write_text(path, "status: ok\nsteps: [\n");
    CHECK_THROWS_AS(read_run_result(path), io_error);
    CHECK_THROWS_WITH(read_run_result(path), Catch::StartsWith(path + ": malformed run result"));
    write_text(path, "status: sideways\n");
    CHECK_THROWS_AS(read_run_result(path), io_error);
    CHECK_THROWS_WITH(read_run_result(path), path + ": unknown status 'sideways'");
}

TEST_CASE("run dir: a run is done only with its result, its metrics and checkpoint beside the same config.yaml",
          "[run_dir]") {
    temp_dir tmp;
    const std::string dir = (tmp / "run").string(), config = "seed: 0\n";
    CHECK(unfinished_reason(dir, config) == "not started");
    fs::create_directory(dir);
    CHECK(unfinished_reason(dir, config) == "not started (no config.yaml)");
    write_text(fs::path(dir) / "config.yaml", config);
    CHECK_FALSE(finished_run_result(dir, config));
    CHECK(unfinished_reason(dir, config) == "unfinished: no result.yaml (interrupted or killed)");
    write_text(fs::path(dir) / resume_filename, "");
    CHECK_THAT(unfinished_reason(dir, config), Catch::StartsWith("stopped mid-way: resume.state saved"));

    run_result r = sample_result();
    r.status = run_status::interrupted;
    write_run_result(dir, r);
    CHECK_FALSE(finished_run_result(dir, config));
    CHECK(unfinished_reason(dir, config) == "interrupted");

    r.status = run_status::ok;
    write_run_result(dir, r);
    // A finished run also needs metrics.csv up to its last step.
    CHECK_FALSE(finished_run_result(dir, config));
    CHECK(unfinished_reason(dir, config) == dir + "/metrics.csv: missing");
    // Rows of metrics.csv's 9 columns (every row is checked, not only the last).
    const std::string header = "step,split,loss,token_acc,seq_acc,lr,grad_norm,tokens_per_s,elapsed_s\n";
    const auto row = [](int step, const std::string& split) {
        return std::to_string(step) + "," + split + ",1.5,0.25,,0.001,,,0.1\n";
    };
    write_text(fs::path(dir) / "metrics.csv", header + row(0, "test") + row(1, "train") + row(1, "test"));
    CHECK(unfinished_reason(dir, config) ==
          dir + "/metrics.csv: its last row is step 1, result.yaml says 2 steps (truncated or from another attempt)");
    write_text(fs::path(dir) / "metrics.csv", header + row(0, "test") + row(2, "train") + "2,test,abc,,,,,,\n");
    CHECK(unfinished_reason(dir, config) == dir + "/metrics.csv: row 3: loss 'abc' is not a number");
    write_text(fs::path(dir) / "metrics.csv", header + row(0, "test") + row(2, "train") + row(2, "test"));
    // Without its checkpoint (committed results leave them out) it is still done: the
    // checkpoint is written before result.yaml, so it was removed afterwards.
    REQUIRE_FALSE(fs::exists(fs::path(dir) / checkpoint_filename));
    CHECK(unfinished_reason(dir, config) == "done");
    write_text(fs::path(dir) / checkpoint_filename, "weights");
    const auto done = finished_run_result(dir, config);
    REQUIRE(done);
    CHECK(done->steps == r.steps);
    CHECK(unfinished_reason(dir, config) == "done");
    CHECK_FALSE(finished_run_result(dir, "seed: 1\n"));  // the spec now gives it another config
    CHECK_THAT(unfinished_reason(dir, "seed: 1\n"), Catch::StartsWith("config.yaml differs from the spec's"));
}

TEST_CASE("run dir: clearing for a redo removes the attempt's files and keeps the lock", "[run_dir]") {
    temp_dir tmp;
    const fs::path dir = tmp / "run";
    fs::create_directory(dir);
    for (const char* name :
         {"config.yaml", "metrics.csv", checkpoint_filename, resume_filename, result_filename,
          "model.safetensors.tmp.123", "probe.csv", "probe_heads.csv", "probe.png", "probe.pdf", "notes.txt"})
        write_text(dir / name, "x");
    {
        const run_lock lock(dir.string());
        REQUIRE(lock.owned());
        clear_run_dir(dir.string());
    }
    std::vector<std::string> left;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>{".lock", "notes.txt"});
}
