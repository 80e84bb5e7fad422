// The sweep runner in process: diverging runs are recorded and the sweep goes
// on; a softmax sum that crosses zero is reported; summary.csv holds both.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "attnlab/io/files.hpp"
#include "attnlab/results/summary.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/runner.hpp"
#include "support/process_support.hpp"

using namespace attnlab;
using attnlab::test::temp_dir;
namespace fs = std::filesystem;

namespace {

// exp with no denominator and no clamp at lr 1 overflows within a few steps;
// the same spec's bounded runs must still finish.
const char* diverging_spec = R"(name: div
base:
  seed: 0
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}
  model: {layers: 1, d_model: 16, heads: 2}
  attention: {numerator: exp, denominator: none}
  train: {steps: 40, batch: 4, lr: 1.0, warmup: 0, clip: 0, eval_every: 10}
sweep:
  - {attention.denominator: [none]}
  - {attention.denominator: [softmax], train.lr: [1.0e-3]}
  - {attention.numerator: [linear], attention.denominator: [softmax], train.lr: [1.0e-3]}
)";
}  // namespace

TEST_CASE("a diverging run is recorded as diverged and the sweep goes on", "[runner]") {
    temp_dir tmp;
    const experiment_spec spec = parse_spec(diverging_spec, "div.yaml");
    REQUIRE(spec.runs.size() == 3);
    runner_options opt;
    opt.out_root = tmp.path().string();
    const sweep_outcome out = run_sweep(spec, opt);
    CHECK(out.diverged == 1);
    CHECK(out.ok == 2);

    const auto diverged = read_run_result(out.dir + "/runs/" + spec.runs[0].id + "/result.yaml");
    REQUIRE(diverged);
    CHECK(diverged->status == run_status::diverged);
    CHECK(diverged->steps < 40);
    CHECK(diverged->reason.find("not finite at step") != std::string::npos);
    // What went non-finite: the last finite step's loss and gradient norm, and the diverging batch's scores
    // (exp without a denominator at lr 1: the scores grow until exp's sum overflows).
    INFO(diverged->reason);
    CHECK_THAT(diverged->reason, Catch::Contains("the last finite: loss"));
    CHECK_THAT(diverged->reason, Catch::Contains("largest |score|"));
    CHECK_THAT(diverged->reason, Catch::Contains("largest row log-sum-exp"));
    CHECK_FALSE(fs::exists(out.dir + "/runs/" + spec.runs[0].id + "/model.safetensors"));

    // linear/softmax: z_t = sum_j s_tj starts near 0 with either sign.
    const auto signed_run = read_run_result(out.dir + "/runs/" + spec.runs[2].id + "/result.yaml");
    REQUIRE(signed_run);
    CHECK(signed_run->status == run_status::ok);
    CHECK(signed_run->nonpositive_denominator_steps > 0);
    CHECK(signed_run->first_nonpositive_step >= 1);
    const auto softmax_run = read_run_result(out.dir + "/runs/" + spec.runs[1].id + "/result.yaml");
    REQUIRE(softmax_run);
    CHECK(softmax_run->nonpositive_denominator_steps == 0);

    const std::string summary = read_file(out.dir + "/summary.csv");
    CHECK(summary.find("\"attention.denominator=none,seed=0\",diverged,") != std::string::npos);
    CHECK(summary.find("softmax denominator <= 0 in") != std::string::npos);
    CHECK(summary.find(",ok,") != std::string::npos);
}

TEST_CASE("a malformed result.yaml makes the run be redone, not the sweep fail", "[runner]") {
    temp_dir tmp;
    experiment_spec spec = parse_spec(diverging_spec, "div.yaml");
    spec.runs.resize(2);
    runner_options opt;
    opt.out_root = tmp.path().string();
    run_sweep(spec, opt);
    const std::string result = (tmp.path() / "div" / "runs" / spec.runs[1].id / "result.yaml").string();
    std::ofstream(result) << "garbage: [";
    const sweep_outcome again = run_sweep(spec, opt);
    CHECK(again.skipped == 1);
    CHECK(again.ok == 1);
    REQUIRE(read_run_result(result));
}

TEST_CASE("state sizes in the summary survive sizes beyond 64 bits", "[runner]") {
    // Taylor order 12 at head size 32: the full layout holds sum_m 32^m
    // features (about 1.2e18) times 33, more than a size_t can count.
    run_config c;
    c.model.d_model = 64;
    c.model.heads = 2;
    c.attention.numerator = numerator_kind::taylor;
    c.attention.order = 12;
    const state_size s = run_state_size(c);
    double full_features = 0;
    for (int m = 0; m <= 12; ++m) full_features += std::pow(32.0, m);
    CHECK(s.full_floats == Approx(full_features * 33));
    // symmetric: sum_m C(31 + m, m) = C(44, 12) features, exact
    CHECK(s.symmetric_floats == Approx(21090682613.0 * 33).epsilon(1e-12));
    CHECK(s.bytes() == s.symmetric_floats * 4);
}
