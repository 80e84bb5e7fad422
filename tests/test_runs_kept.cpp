// Finished runs are never lost (docs/outputs-policy.md, "Runs are never
// lost"), each case on the real binary: a rerun whose spec or --set changes a
// finished run's configuration is refused before anything is trained (exit 2,
// naming the runs and keys) unless --overwrite; so is a second process with
// another configuration on the same folder; a process whose run another
// process held waits for it and trains it when that one is killed; odd spec
// file names, stale temporaries of killed processes, and damaged runs or
// checkpoints give clear messages naming the file.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/process_support.hpp"

namespace fs = std::filesystem;
using namespace attnlab::test;
using Catch::Matchers::Contains;

namespace {

// Two seeds of a tiny model, 20 steps each: a fraction of a second.
const std::string kept_two_seeds = R"(name: kept
base:
  seed: 0
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}
  model: {layers: 1, d_model: 16, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 20, batch: 4, lr: 1.0e-3, warmup: 2, eval_every: 10}
seeds: [0, 1]
)";
const std::vector<std::string> seed_ids = {"seed=0", "seed=1"};

// kept_two_seeds with `steps` training steps (long ones keep a process busy).
std::string with_steps(const std::string& steps) {
    std::string text = kept_two_seeds;
    const auto at = text.find("steps: 20,");
    REQUIRE(at != std::string::npos);
    return text.replace(at, 9, "steps: " + steps);
}

std::size_t lines_in(const fs::path& p) { return lines_of(read_text(p)).size(); }

bool file_has(const fs::path& p, const std::string& what) {
    std::error_code ec;
    return fs::exists(p, ec) && read_text(p).find(what) != std::string::npos;
}

// Runs `spec` into <tmp>/out and checks it ends well; the results folder.
fs::path run_ok(const temp_dir& tmp, const fs::path& spec, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args, tmp.path());
    INFO(r.err);
    REQUIRE(r.code == 0);
    return tmp / "out" / "kept";
}

}  // namespace

TEST_CASE("a rerun that changes finished runs' configuration is refused; --overwrite retrains them", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    const auto before = snapshot(res);

    const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--set", "train.steps=30"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("2 finished runs") && Contains("train.steps 20 -> 30") && Contains("--overwrite"));
    for (const auto& id : seed_ids) CHECK_THAT(r.err, Contains("runs/" + id));
    CHECK_THAT(r.err, !Contains("training"));
    CHECK(snapshot(res) == before);  // not one byte changed

    const auto o =
        run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--set", "train.steps=30", "--overwrite"});
    CHECK(o.code == 0);
    CHECK_THAT(o.err, Contains("--overwrite: 2 finished runs"));
    for (const auto& id : seed_ids) CHECK_THAT(read_text(res / "runs" / id / "result.yaml"), Contains("steps: 30"));
}

TEST_CASE("an unfinished run with another configuration is trained anew, saying so", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    for (const auto& id : seed_ids) fs::remove(res / "runs" / id / "result.yaml");  // as if killed before the end

    const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--set", "train.steps=30"});
    CHECK(r.code == 0);
    CHECK(count_of(r.err, "unfinished, with another configuration in its config.yaml (train.steps 20 -> 30)") == 2);
    for (const auto& id : seed_ids) CHECK_THAT(read_text(res / "runs" / id / "result.yaml"), Contains("steps: 30"));
}

TEST_CASE("a finished run with a truncated metrics.csv is named, not counted as finished, and retrained",
          "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    const fs::path metrics = res / "runs" / seed_ids[1] / "metrics.csv";
    const auto lines = lines_of(read_text(metrics));
    std::string cut;
    for (std::size_t i = 0; i + 3 < lines.size(); ++i) cut += lines[i] + "\n";  // loses step 20's train, val, test rows
    write_text(metrics, cut);

    const auto s = run_cli({"summarize", res.string()});
    CHECK(s.code == 1);
    CHECK_THAT(s.err, Contains(metrics.string() + ": its last row is step 10, result.yaml says 20 steps"));
    CHECK(lines_in(res / "summary.csv") == 2);

    const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"});
    CHECK(r.code == 0);
    CHECK_THAT(r.err, Contains(metrics.string()) && Contains("trained again"));
    CHECK(lines_in(metrics) == lines.size());
    CHECK(run_cli({"summarize", res.string()}).code == 0);
}

TEST_CASE("a result.yaml that is a directory is named by run and summarize", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    const fs::path result = res / "runs" / seed_ids[0] / "result.yaml";
    fs::remove(result);
    fs::create_directories(result / "inside");

    const auto s = run_cli({"summarize", res.string()});
    CHECK(s.code == 1);
    CHECK_THAT(s.err, Contains(result.string() + ": is a directory, expected a regular file"));
    CHECK_THAT(s.err, !Contains("basic_filebuf"));

    const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string()});
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains(result.string()) && !Contains("basic_filebuf"));

    fs::remove(result / "inside");  // an empty directory is simply replaced by the rerun
    const auto again = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"});
    CHECK(again.code == 0);
    CHECK(fs::is_regular_file(result));
}

TEST_CASE("a second process with another configuration on the same folder is refused while the first runs",
          "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, with_steps("200000"));
    child_process first({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"}, tmp.path());
    const fs::path res = tmp / "out" / "kept";
    first.wait_until([&] { return file_has(res / "runs" / seed_ids[0] / "metrics.csv", "\n100,test"); });

    const auto second = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--set", "train.steps=300"});
    const auto spec_yaml = read_text(res / "spec.yaml");
    first.send(SIGTERM);
    CHECK(first.wait().code == 143);
    CHECK(second.code == 2);
    CHECK_THAT(second.err, Contains(res.string() + " is being written by another attnlab run with other --set "
                                                   "overrides; train.steps 200000 -> 300 in 2 runs"));
    CHECK_THAT(second.err, Contains("--overwrite"));
    CHECK_THAT(spec_yaml, !Contains("--set"));  // the first process's spec.yaml stays
    CHECK_THAT(read_text(res / "runs" / seed_ids[0] / "config.yaml"), Contains("steps: 200000"));
}

TEST_CASE("a run another process holds is waited for, and trained when that process is killed", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    std::string text = with_steps("200000");
    text.replace(text.find("seeds: [0, 1]"), 13, "seeds: [0]");
    write_text(spec, text);
    child_process first({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"}, tmp.path());
    const fs::path run = tmp / "out" / "kept" / "runs" / seed_ids[0];
    first.wait_until([&] { return file_has(run / "metrics.csv", "\n100,test"); });

    // The same command again: it waits for the lock, then (nothing was saved) trains the run from step 0.
    child_process second({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"}, tmp.path());
    second.wait_until([&] { return second.err().find("waiting for the other process") != std::string::npos; });
    first.send(SIGKILL);
    CHECK(first.wait().code == 128 + SIGKILL);
    // It trains: its own rows (the killed process's metrics.csv is replaced when the run starts again).
    second.wait_until([&] {
        return second.err().find("training 200000 steps") != std::string::npos &&
               file_has(run / "metrics.csv", "\n300,test");
    });
    second.send(SIGTERM);
    const cli_result& end = second.wait();
    CHECK(end.code == 143);
    CHECK_THAT(end.err, !Contains("was being trained by another process"));
    CHECK(fs::exists(run / "resume.state"));  // stopped by us, resumable
}

TEST_CASE("a spec file whose name holds a newline is run and summarized like any other", "[runs_kept]") {
    for (const std::string name : {"odd\nseeds: [7]\n.yaml", "plain\nnewline.yaml", "back\\slash\r.yaml"}) {
        INFO(name);
        temp_dir tmp;
        const fs::path spec = tmp / name;
        write_text(spec, kept_two_seeds);
        const fs::path res = run_ok(tmp, spec);
        CHECK(lines_of(read_text(res / "spec.yaml")).size() == lines_of(kept_two_seeds).size() + 1);
        const auto s = run_cli({"summarize", res.string()});
        INFO(s.err);
        CHECK(s.code == 0);
        CHECK_THAT(s.err, Contains("2/2 runs done"));
        CHECK(lines_in(res / "summary.csv") == 3);
    }
}

TEST_CASE("temporaries of killed processes of this host are removed by run and summarize, live ones kept",
          "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host - 1) == 0);
    const pid_t dead = ::fork();  // a pid that no longer runs
    REQUIRE(dead >= 0);
    if (dead == 0) ::_exit(0);
    REQUIRE(::waitpid(dead, nullptr, 0) == dead);
    const std::string h = host, d = std::to_string(dead), live = std::to_string(::getpid());
    const std::vector<fs::path> stale = {res / ("summary.csv.tmp." + h + "." + d + ".17"),
                                         res / ("table.md.tmp." + h + "." + d + ".3"),
                                         res / "runs" / seed_ids[0] / ("result.yaml.tmp." + h + "." + d + ".9")};
    const std::vector<fs::path> kept = {res / ("summary.csv.tmp." + h + "." + live + ".17"),
                                        res / ("summary.csv.tmp.otherhost." + d + ".17")};
    for (const auto& p : stale) write_text(p, "half");
    for (const auto& p : kept) write_text(p, "half");

    const auto s = run_cli({"summarize", res.string()});
    CHECK(s.code == 0);
    for (const auto& p : stale) CHECK_FALSE(fs::exists(p));
    for (const auto& p : kept) CHECK(fs::exists(p));

    write_text(stale[0], "half");
    run_ok(tmp, spec);
    CHECK_FALSE(fs::exists(stale[0]));
    for (const auto& p : kept) CHECK(fs::exists(p));
}

TEST_CASE("a dangling or looping --out symlink and an over-long path are errors naming the path", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    fs::create_symlink(tmp / "nowhere", tmp / "dangling");
    fs::create_symlink(tmp / "loop", tmp / "loop");
    const auto d = run_cli({"run", spec.string(), "--out", (tmp / "dangling").string()});
    CHECK(d.code == 1);
    CHECK_THAT(d.err, Contains((tmp / "dangling").string() + " is a symbolic link to " + (tmp / "nowhere").string() +
                               ", which does not exist"));
    const auto l = run_cli({"run", spec.string(), "--out", (tmp / "loop").string()});
    CHECK(l.code == 1);
    CHECK_THAT(l.err, Contains((tmp / "loop").string() + " is a symbolic link that loops"));
    const std::string long_name(300, 'x');
    const auto n = run_cli({"run", spec.string(), "--out", (tmp / long_name).string()});
    CHECK(n.code == 1);
    CHECK_THAT(n.err, Contains("too long") && Contains(long_name) && !Contains("filesystem error"));
}

TEST_CASE("eval of a checkpoint holding NaN names the tensor and fails", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path run = run_ok(tmp, spec) / "runs" / seed_ids[0];
    REQUIRE(run_cli({"eval", run.string()}).code == 0);
    std::string bytes = read_text(run / "model.safetensors");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    bytes.replace(bytes.size() - sizeof nan, sizeof nan, reinterpret_cast<const char*>(&nan), sizeof nan);
    write_text(run / "model.safetensors", bytes);
    const auto e = run_cli({"eval", run.string()});
    CHECK(e.code == 1);
    CHECK_THAT(e.err,
               Contains((run / "model.safetensors").string() + ": tensor ") && Contains("holds non-finite values"));
    CHECK_THAT(e.out, !Contains("test loss"));
}

TEST_CASE("a metrics.csv with a cell that is no number or a ragged row is a damaged run, kept out of curves.csv",
          "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    const fs::path metrics = res / "runs" / seed_ids[1] / "metrics.csv";
    const std::string good = read_text(metrics);
    std::vector<std::string> lines = lines_of(good);
    std::vector<std::string> last = csv_fields(lines.back());  // 20,test,<loss>,...
    last[2] = "abc";
    std::string bad_cell;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) bad_cell += lines[i] + "\n";
    for (std::size_t k = 0; k < last.size(); ++k) bad_cell += (k ? "," : "") + last[k];
    bad_cell += "\n";
    const std::vector<std::pair<std::string, std::string>> damages = {
        {bad_cell, "row 8: loss 'abc' is not a number"},
        {good + lines.back() + ",x,y\n", "row 9: 11 cells, expected 9"}};
    for (const auto& [text, why] : damages) {
        INFO(why);
        write_text(metrics, text);
        const auto s = run_cli({"summarize", res.string()});
        CHECK(s.code == 1);
        CHECK_THAT(s.err, Contains(metrics.string() + ": " + why));
        CHECK(lines_in(res / "summary.csv") == 2);  // seed=1 is listed as missing, not done
        const std::string curves = read_text(res / "curves.csv");
        CHECK_THAT(curves, !Contains("abc") && !Contains(",x,y"));
        for (const auto& line : lines_of(curves))
            CHECK(csv_fields(line).size() == csv_fields(lines_of(curves)[0]).size());
    }
}

TEST_CASE("a killed --overwrite leaves the old finished run whole; a finished one replaces it", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    std::string text = kept_two_seeds;
    text.replace(text.find("seeds: [0, 1]"), 13, "seeds: [0]");
    write_text(spec, text);
    const fs::path res = run_ok(tmp, spec), run = res / "runs" / seed_ids[0];
    write_text(run / "notes.txt", "mine\n");
    const auto before = snapshot(run);

    child_process over({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1", "--overwrite", "--set",
                        "train.steps=300000"},
                       tmp.path());
    const fs::path replacement = res / "replacing" / seed_ids[0];
    over.wait_until([&] { return file_has(replacement / "metrics.csv", "\n100,test"); });
    over.send(SIGKILL);
    CHECK(over.wait().code == 128 + SIGKILL);
    CHECK(snapshot(run) == before);  // result.yaml, model.safetensors and the rest, byte for byte
    CHECK(run_cli({"eval", run.string()}).code == 0);

    const auto done = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1", "--overwrite",
                               "--set", "train.steps=30"},
                              tmp.path());
    INFO(done.err);
    CHECK(done.code == 0);
    CHECK_THAT(read_text(run / "result.yaml"), Contains("steps: 30"));
    CHECK_THAT(read_text(run / "config.yaml"), Contains("steps: 30"));
    CHECK(read_text(run / "notes.txt") == "mine\n");  // a user's file stays with the run
    CHECK_FALSE(present(replacement));
    CHECK(run_cli({"summarize", res.string()}).code == 0);
}

TEST_CASE("a shard with other --set than the shards before it is refused, nothing touched", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec, {"--shard", "0/2", "--set", "train.steps=30"});
    const auto before = snapshot(res);
    const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1", "--shard", "1/2",
                            "--set", "train.steps=40"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("runs/seed=0: train.steps 30 -> 40 (another shard's)") && Contains("--overwrite"));
    CHECK(snapshot(res) == before);
    CHECK(run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1", "--shard", "1/2", "--set",
                   "train.steps=30"})
              .code == 0);
    CHECK(run_cli({"summarize", res.string()}).code == 0);
}

TEST_CASE("a hand-edited config.yaml that writes a number another way is the same configuration", "[runs_kept]") {
    temp_dir tmp;
    const fs::path spec = tmp / "kept.yaml";
    write_text(spec, kept_two_seeds);
    const fs::path res = run_ok(tmp, spec);
    const fs::path config = res / "runs" / seed_ids[0] / "config.yaml";
    std::string text = read_text(config);
    const auto at = text.find("lr: 0.001\n");
    REQUIRE(at != std::string::npos);
    write_text(config, text.replace(at, 10, "lr: 1.0e-3\n"));
    const auto r = run_cli({"run", spec.string(), "--out", (tmp / "out").string(), "--threads", "1"});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(count_of(r.err, "already done (ok), skipped") == 2);
    CHECK_THAT(r.err, !Contains("1.0e-3 -> 0.001"));
}
