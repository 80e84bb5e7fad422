// The attnlab command line's own checks, end to end through the binary:
// command-line mistakes in attnlab's words (did-you-mean for verbs, options
// and values), --save-every, eval --set, the memory guards of eval and the
// benches, the saturating memory estimate, and `state`'s exact counts.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "support/process_support.hpp"
#include "support/text_files.hpp"

namespace fs = std::filesystem;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Asserts exit code 2, nothing on stdout and one line "attnlab: error: ..."; returns the line.
std::string usage_error(const std::vector<std::string>& args) {
    const cli_result r = run_cli(args);
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, StartsWith("attnlab: error: "));
    return r.err;
}

// A spec of one run: Taylor order 12, 1 layer, d_model 16, 1 head, batch 32.
const std::string taylor12_spec = R"(name: taylor12
base:
  seed: 0
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 32}
  model: {layers: 1, d_model: 16, heads: 1}
  attention: {numerator: taylor, order: 12, denominator: softmax}
  train: {steps: 2, batch: 32, lr: 1.0e-3, warmup: 1, eval_every: 1}
)";

// A copy run with learned-free (RoPE) positions, trained on lengths 1..4.
const std::string copy_spec = R"(name: copy
base:
  seed: 0
  task: {kind: copy, vocab: 8, min_len: 1, max_len: 4, test_examples: 16}
  model: {layers: 1, d_model: 16, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 3, batch: 4, lr: 1.0e-3, warmup: 1, eval_every: 3}
)";

// Trains `spec` in `dir` and returns the directory of its single run.
fs::path trained_run(const temp_dir& dir, const std::string& name, const std::string& spec) {
    const fs::path file = dir / (name + ".yaml");
    write_text(file, spec);
    const cli_result r = run_cli({"run", file.string(), "--out", (dir / "out").string(), "--threads", "1"});
    REQUIRE(r.code == 0);
    return dir / "out" / name / "runs" / "seed=0";
}

}  // namespace

TEST_CASE("a mistyped verb gets a did-you-mean, a missing one the list of verbs", "[cli]") {
    CHECK_THAT(usage_error({"rn"}), Contains("unknown verb 'rn'") && Contains("did you mean 'run'?"));
    CHECK_THAT(usage_error({"bench", "trian"}), Contains("unknown verb 'trian'") && Contains("did you mean 'train'?"));
    CHECK_THAT(usage_error({}), Contains("needs a verb: run, validate"));
    CHECK_THAT(usage_error({"bench"}), Contains("attnlab bench needs a verb: generate, train or products"));
    CHECK_THAT(usage_error({"--bogus"}), Contains("unknown option '--bogus'"));
}

TEST_CASE("CLI11's failures are told in attnlab's words", "[cli]") {
    temp_dir dir;
    const std::string spec = (dir / "none.yaml").string();
    CHECK_THAT(usage_error({"eval", "d", "--form", "recurent"}),
               Contains("--form: expected parallel or recurrent, got 'recurent', did you mean 'recurrent'?"));
    CHECK_THAT(usage_error({"eval", "d", "--layout", "ful"}), Contains("did you mean 'full'?"));
    CHECK_THAT(usage_error({"eval", "d", "--precision", "half"}),
               Contains("--precision: expected float or double, got 'half'"));
    CHECK_THAT(usage_error({"eval", "d", "--precision", "doubel"}), Contains("did you mean 'double'?"));
    CHECK_THAT(usage_error({"run", spec, "--ou", "x"}),
               Contains("attnlab run: unknown option '--ou', did you mean '--out'?"));
    CHECK_THAT(usage_error({"run", spec, "extra"}), Contains("attnlab run: unexpected argument 'extra'"));
    CHECK_THAT(usage_error({"run"}), Contains("attnlab run: missing SPEC"));
    CHECK_THAT(usage_error({"run", spec, "--out"}), Contains("attnlab run: --out needs a value"));
    CHECK_THAT(usage_error({"run", spec, "--threads", "two"}),
               Contains("--threads: expected an integer from 0 to 1024, got 'two'"));
    CHECK_THAT(usage_error({"bench", "train", "--config", "quickstrat"}), Contains("did you mean 'quickstart'?"));
    for (const std::string bad : {"nan", "inf", "-1", "1e10"}) {
        INFO(bad);
        CHECK_THAT(usage_error({"run", spec, "--save-every", bad}),
                   Contains("--save-every: expected a number of seconds from 0 to 1000000000, got '" + bad + "'"));
    }
    for (const std::string& err : {usage_error({"rn"}), usage_error({"eval", "d", "--form", "x"})}) {
        CHECK_THAT(err, !Contains("FAILED") && !Contains("subcommand") && !Contains("not expected"));
    }
}

TEST_CASE("a one-value option given twice is named as given twice, not as missing its value", "[cli]") {
    temp_dir dir;
    const std::string spec = (dir / "none.yaml").string();
    for (const auto& [option, a, b] : std::vector<std::array<std::string, 3>>{{"--threads", "2", "1"},
                                                                              {"--jobs", "2", "1"},
                                                                              {"--out", "x", "y"},
                                                                              {"--shard", "0/2", "1/2"},
                                                                              {"--save-every", "1", "2"}}) {
        INFO(option);
        const std::string err = usage_error({"run", spec, option, a, option, b});
        CHECK_THAT(err, Contains("attnlab run: " + option + " given twice; it takes one "));
        CHECK_THAT(err, !Contains("needs a value"));
    }
    CHECK_THAT(usage_error({"run", spec, "--jobs", "1", "--jobs", "2", "--jobs", "3"}),
               Contains("--jobs given 3 times"));
}

TEST_CASE("eval refuses a recurrent Taylor order-12 state that cannot fit, at once", "[cli]") {
    temp_dir dir;
    const fs::path run = trained_run(dir, "taylor12", taylor12_spec);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err =
        usage_error({"eval", run.string(), "--form", "recurrent", "--layout", "symmetric", "--max-memory", "1G"});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // 32 sequences x (C(28, 12) features x (16 + 3) + 16) floats: about 68.9 GiB.
    CHECK_THAT(err, Contains("not enough memory: eval of") && Contains("recurrent states 68.9 GiB") &&
                        Contains("the limit is 1.00 GiB (--max-memory)"));
    WARN("refused in " << seconds << " s");
    CHECK(seconds < 5);  // a generous bound against a guard that allocates first; it takes ~0.05 s
    // The full layout (sum of 16^m floats per feature order): hundreds of PiB, over any machine limit.
    CHECK_THAT(usage_error({"eval", run.string(), "--form", "recurrent", "--layout", "full"}),
               Contains("not enough memory"));
    // The parallel form fits and scores the run.
    const cli_result ok = run_cli({"eval", run.string(), "--max-memory", "1G"});
    CHECK(ok.code == 0);
    CHECK_THAT(ok.out, StartsWith("test loss "));
}

TEST_CASE("eval --set changes test-time keys (and the variant, test_analysis.cpp) only, and is guarded by the estimate",
          "[cli]") {
    temp_dir dir;
    const fs::path run = trained_run(dir, "copy", copy_spec);
    const cli_result base = run_cli({"eval", run.string()});
    REQUIRE(base.code == 0);
    const cli_result longer = run_cli({"eval", run.string(), "--set", "task.test_min_len=5", "--set",
                                       "task.test_max_len=8", "--set", "task.test_examples=8"});
    INFO(longer.err);
    REQUIRE(longer.code == 0);
    CHECK_THAT(longer.out, StartsWith("test loss "));
    CHECK(longer.out != base.out);
    CHECK_THAT(usage_error({"eval", run.string(), "--set", "model.d_model=32"}),
               Contains("--set: model.d_model: eval cannot change it") && Contains("would change the trained model"));
    CHECK_THAT(usage_error({"eval", run.string(), "--set", "task.test_max_lne=8"}),
               Contains("did you mean 'task.test_max_len'?"));
    CHECK_THAT(usage_error({"eval", run.string(), "--set", "task.test_max_len=0"}),
               Contains("--set: task.test_max_len"));
    CHECK_THAT(usage_error({"eval", run.string(), "--set", "task.test_examples=1000000000", "--max-memory", "1G"}),
               Contains("not enough memory: eval of"));
}

TEST_CASE("the memory estimate saturates instead of wrapping", "[cli]") {
    temp_dir dir;
    write_text(dir / "t.yaml", taylor12_spec);
    const std::vector<std::string> huge = {"--set", "model.d_model=16777216",
                                           "--set", "model.heads=1",
                                           "--set", "model.layers=64",
                                           "--set", "model.mlp=swiglu",
                                           "--set", "model.mlp_hidden=2147483647",
                                           "--set", "attention.order=1"};
    std::vector<std::string> args = {"run", (dir / "t.yaml").string(), "--out", (dir / "out").string()};
    args.insert(args.end(), huge.begin(), huge.end());
    const std::string err = usage_error(args);
    CHECK_THAT(err,
               Contains("not enough memory") && Contains("needs about 16.0 EiB") && Contains("parameters 16.0 EiB"));
    CHECK(!fs::exists(dir / "out" / "taylor12" / "runs"));
}

TEST_CASE("bench train and bench generate estimate their memory first", "[cli][bench]") {
    CHECK_THAT(usage_error({"bench", "train", "--config", "larger", "--no-torch", "--max-memory", "1M"}),
               Contains("not enough memory: bench train of") && Contains("the limit is 1.00 MiB (--max-memory)"));
    CHECK_THAT(usage_error({"bench", "generate", "--max-len", "1048576", "--d-model", "4096", "--layers", "64",
                            "--variant", "exp-kv_cache"}),
               Contains("not enough memory: bench generate of exp-kv_cache"));
}

TEST_CASE("state prints exact integers in summary.csv's columns, per layer and head", "[cli]") {
    temp_dir dir;
    write_text(dir / "t.yaml", taylor12_spec);
    const cli_result r = run_cli({"state", (dir / "t.yaml").string()});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("per attention layer and head"));
    CHECK_THAT(r.out, Contains("state_floats") && Contains("state_floats_full") && Contains("state_bytes"));
    // Order 12 at head size 16: F = C(28, 12) = 30421755 symmetric features, (F)(16 + 1) floats.
    CHECK_THAT(r.out, Contains(" 517169835 ") && Contains(" 2068679340\n"));
    CHECK_THAT(r.out, !Contains("e+"));
}

TEST_CASE("state counts past 64 bits exactly, never as a rounded double", "[cli]") {
    // d_model 65536 in one head: order 3's full state is just past 2^64, order 4's symmetric one too.
    temp_dir dir;
    std::string spec = taylor12_spec;
    spec.replace(spec.find("d_model: 16, heads: 1"), 21, "d_model: 65536, heads: 1");
    spec.replace(spec.find("order: 12"), 9, "order: 3");
    spec += "sweep: {attention.order: [3, 4]}\n";
    write_text(dir / "t.yaml", spec);
    const cli_result r = run_cli({"state", (dir / "t.yaml").string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    // Worked in Python integers: F (d + 1) with F = sum over m <= order of C(d+m-1, m), or d^m (full).
    CHECK_THAT(r.out, Contains(" 3074785745260347393 18447307032253038593 12299142981041389572\n"));
    CHECK_THAT(r.out, Contains(" 50380364436090792034305 1208962713665735137296385 201521457744363168137220\n"));
    CHECK_THAT(r.out, !Contains("e+"));
}
