// The training benchmark's bookkeeping: its FLOP and memory formulas on a
// hand-computed case, the child-process runner, and the command end to end.
// Timings are figures to report, never pass/fail conditions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "attnlab/bench/train_bench.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/ops/peak_fma.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/util/build_info.hpp"
#include "attnlab/util/subprocess.hpp"
#include "support/process_support.hpp"
#include "support/test_data.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {
// 1 layer, d_model 4, 2 heads of 2, no MLP, exp/softmax; vocab 5; batch 2 x 3, 4 answers.
run_config tiny() {
    run_config c;
    c.model.layers = 1;
    c.model.d_model = 4;
    c.model.heads = 2;
    c.model.mlp = mlp_kind::none;
    c.model.position = position_kind::rope;
    return c;
}
}  // namespace

TEST_CASE("bench train: model FLOPs of a step, by hand", "[bench]") {
    // q, k, v, o: 4 x 2 N C C = 4 x 2*6*4*4 = 768; causal pairs B NH T(T+1)/2 = 2*2*6 = 24,
    // scores and w v: 2 x 2 * 24 * HS 2 = 192; head: 2 A C V = 2*4*4*5 = 160.
    const flop_count f = training_flops(tiny(), 5, 2, 3, 4);
    CHECK(f.forward == 768 + 192 + 160);
    CHECK(f.backward == 2 * f.forward);
    run_config swiglu = tiny();
    swiglu.model.mlp = mlp_kind::swiglu;  // F = 16 (ceil(8*4/3) = 11 -> 16): + 3 x 2 N C F = 2304
    CHECK(training_flops(swiglu, 5, 2, 3, 4).forward == f.forward + 2304);
}

TEST_CASE("bench train: the FLOPs split by op, by hand, under the model's op names", "[bench]") {
    run_config c = tiny();
    c.model.mlp = mlp_kind::swiglu;
    c.attention.in_gate = true;  // + 2 N C NH = 96 in q/k/v
    const flop_count f = training_flops(c, 5, 2, 3, 4);
    CHECK(f.forward_by_op.at("q/k/v (+rope, gates)") == 3 * 2 * 6 * 4 * 4 + 96);
    CHECK(f.forward_by_op.at("attention") == 192);
    CHECK(f.forward_by_op.at("output projection") == 2 * 6 * 4 * 4);
    CHECK(f.forward_by_op.at("mlp") == 2304);
    CHECK(f.forward_by_op.at("head + loss") == 160);
    double sum = 0;
    for (const auto& [op, flops] : f.forward_by_op) sum += flops;
    CHECK(sum == f.forward);
    // The report joins them to the model's timings by name.
    const auto names = make_model<float>(c).timings().names;
    for (const auto& [op, flops] : f.forward_by_op) {
        INFO(op);
        CHECK(std::find(names.begin(), names.end(), op) != names.end());
    }
}

TEST_CASE("bench train: memory a step needs, by hand", "[bench]") {
    // Parameters: embed 5x4, attn_norm 4, q k v o 4x16, norm 4, head 5x4 = 112 floats.
    // Activations (N = 6 rows, C = 4): block input, norm + rstd, q, k, v, u = 6*24 + 6;
    // z (N x NH) 12; attention output 24; final stream + norm rstd 24 + 6; answers 4 x (C + V) 36;
    // the forward's attention weights and scores, kept: 2 x (B NH = 4 pairs) x 3x3 = 72.
    const memory_need m = training_memory_need(tiny(), 5, 2, 3, 4);
    CHECK(m.params == 112 * 4);
    CHECK(m.grads == 112 * 4);
    CHECK(m.optimizer == 2 * 112 * 4);
    CHECK(m.activations == (150 + 12 + 24 + 30 + 36 + 72) * 4);
}

TEST_CASE("peak FMA: the loop of this CPU's kernels, its lanes and a finite positive rate", "[bench]") {
    const peak_fma_rate one = measure_peak_fma(1, 1, 0.002);
    CHECK(one.threads == 1);
    CHECK(std::isfinite(one.gflops));
    CHECK(one.gflops > 0);
    // The instruction set of attnlab's own kernels (build_info's kernel_isa) decides the loop.
    const std::string isa = current_build(1).isa;
    CHECK(one.lanes == (isa == "avx512f" ? 16 : isa == "avx2+fma" ? 8 : 4));
    CHECK(one.isa.rfind(isa == "avx512f" || isa == "avx2+fma" ? isa : "baseline", 0) == 0);
    CHECK(measure_peak_fma(2, 1, 0.002).threads == 2);
}

TEST_CASE("run_process: output, exit code and the environment changes of the child", "[bench]") {
    setenv("ATTNLAB_TEST_UNSET_ME", "visible", 1);
    const auto r = run_process({"/bin/sh", "-c", "echo \"$FOO ${ATTNLAB_TEST_UNSET_ME-gone}\"; echo oops >&2; exit 3"},
                               {{"FOO", "bar"}}, {"ATTNLAB_TEST_UNSET_ME"});
    CHECK(r.out == "bar gone\n");
    CHECK(r.err == "oops\n");
    CHECK(r.exit_code == 3);
    CHECK(run_process({"/nonexistent/program"}).exit_code == 127);
    unsetenv("ATTNLAB_TEST_UNSET_ME");
}

TEST_CASE("bench train: built-in configurations parse; bad usage is refused", "[bench][cli]") {
    for (const auto& name : bench_config_names()) {
        INFO(name);
        // lm reads data/kjv.txt from the working directory; any text serves here.
        const std::vector<std::string> sets = {"task.path=" + text_fixture};
        const auto spec = parse_spec(bench_config_yaml(name), name, name == "lm" ? sets : std::vector<std::string>{});
        CHECK(spec.runs.size() == 1);
    }
    CHECK_THROWS_WITH(bench_config_yaml("huge"), Catch::Contains("unknown configuration 'huge'"));
    auto r = run_cli({"bench", "train"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("give a SPEC or --config"));
    r = run_cli({"bench", "train", "--config", "huge"});
    CHECK(r.code == 2);
    r = run_cli({"bench", "train", "--config", "quickstart", "--set", "model.headz=3"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("model.headz"));
}

TEST_CASE("bench train --no-torch: the attnlab rows, memory and per-op table", "[bench][cli]") {
    const auto r = run_cli({"bench", "train", "--config", "quickstart", "--set", "model.layers=1", "--no-torch",
                            "--steps", "1", "--repeats", "2", "--rounds", "2", "--warmup", "0", "--threads", "1"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("config quickstart: 1 layers, d_model 64"));
    const auto lines = lines_of(r.out);
    bool row = false;
    for (const auto& l : lines) row = row || l.rfind("attnlab          1 ", 0) == 0;
    CHECK(row);
    CHECK_THAT(r.out, Catch::Contains("memory: measured peak"));
    CHECK_THAT(r.out, Catch::Contains("time per op, attnlab on 1 thread(s)"));
    CHECK_THAT(r.out, Catch::Contains("optimizer (clip + AdamW)"));
    CHECK_THAT(r.out, Catch::Contains("attnlab at the probe's rate on 1 thread(s)"));
    // the probe runs before each round; the percentages divide by its median
    CHECK(count_of(r.out + r.err, "matmul probe: 1 thread(s)") == 2);
    CHECK_THAT(r.out, Catch::Contains("1 thread(s) ") && Catch::Contains(" GFLOP/s (median of 2 rounds, "));
    bool mlp_rate = false;  // the mlp row carries its share, GFLOP/s, % of peak and % of probe
    for (const auto& l : lines)
        mlp_rate = mlp_rate || (l.rfind("mlp ", 0) == 0 && l.back() == '%' && count_of(l, "%") == 3);
    CHECK(mlp_rate);
    // The physical bound and the BLAS kernels, named.
    CHECK_THAT(r.out, Catch::Contains("peak FMA bound (float32, "));
    CHECK_THAT(r.out, Catch::Contains("% of peak"));
#ifdef ATTNLAB_OPENBLAS
    CHECK_THAT(r.out, Catch::Contains("BLAS: OpenBLAS, core "));
#endif
    CHECK(count_of(r.out, "pytorch") == 0);
}

TEST_CASE("bench train --config lm: text windows, every position an answer over 256 bytes", "[bench][cli]") {
    const auto r =
        run_cli({"bench", "train", "--config", "lm", "--set", "task.path=" + text_fixture, "--set", "model.layers=1",
                 "--no-torch", "--steps", "1", "--repeats", "1", "--rounds", "1", "--warmup", "0", "--threads", "1"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("config lm: 1 layers, d_model 64, 2 heads, swiglu mlp, rope positions, "
                                      "exp/softmax; text batch 32 x seq 128 (4096 answer rows), vocab 256"));
    // Without the corpus (run elsewhere than the repository's root, or before
    // scripts/get_corpus): an error naming the path.
    temp_dir elsewhere;
    const auto missing = run_cli({"bench", "train", "--config", "lm", "--no-torch"}, elsewhere.path());
    CHECK(missing.code == 2);
    CHECK_THAT(missing.err, Catch::Contains("data/kjv.txt"));
}

TEST_CASE("bench train with the PyTorch side: both rows and their ratio", "[bench][cli][slow]") {
    // Needs Debian's python3-torch (scripts/test installs it); fails, never skips, without it.
    const auto r = run_cli({"bench", "train", "--config", "quickstart", "--set", "model.layers=1", "--steps", "1",
                            "--repeats", "1", "--rounds", "1", "--warmup", "0", "--threads", "1"});
    REQUIRE(r.code == 0);
    CHECK(count_of(r.out, "not measured") == 0);
    bool torch_row = false;
    for (const auto& l : lines_of(r.out)) torch_row = torch_row || l.rfind("pytorch          1 ", 0) == 0;
    CHECK(torch_row);
    CHECK_THAT(r.out, Catch::Contains("attnlab / pytorch, each at its best setting:"));
    CHECK_THAT(r.out, Catch::Contains("the same, round by round (each side's best setting in that round):"));
}

TEST_CASE("bench train: round by round, each side's best thread setting of that round", "[bench]") {
    std::vector<side_timing> sides = {{"attnlab", 1, {}, {100, 90, 80}, ""},
                                      {"pytorch", 1, {}, {50, 20, 40}, ""},
                                      {"attnlab", 2, {}, {150, 60, 120}, ""},
                                      {"pytorch", 2, {}, {30, 45}, ""}};  // no third round
    // round 1: 150 / 50, round 2: 90 / 45, round 3: 120 / 40
    CHECK(round_ratios(sides) == std::vector<double>{3.0, 2.0, 3.0});
    sides[1].error = "exited 1";  // a side that failed is left out of every round
    CHECK(round_ratios(sides) == std::vector<double>{5.0, 2.0});
    sides[3].error = "exited 1";  // no PyTorch figures: no ratio
    CHECK(round_ratios(sides).empty());
}

TEST_CASE("bench products: a d_model 128 model's products, both kernels, named BLAS kernels", "[bench][cli]") {
    const auto r = run_cli({"bench", "products", "--config", "quickstart", "--set", "model.d_model=128", "--rounds",
                            "1", "--seconds", "0.001"});
    REQUIRE(r.code == 0);
    const auto lines = lines_of(r.out);
    // Three passes of q/k/v, o, the MLP's two layers and the head, at one micro-batch of rows (64).
    int products = 0;
    for (const auto& l : lines)
        for (const char* name : {"q/k/v ", "o ", "mlp gate+up ", "mlp down ", "head "})
            products += l.rfind(name, 0) == 0 && count_of(l, "%") == 2;
    CHECK(products == 15);
    bool qkv_forward = false;  // x (64, 128) W^T (128, 384)
    for (const auto& l : lines)
        qkv_forward = qkv_forward || l.rfind("q/k/v forward             64   384   128", 0) == 0;
    CHECK(qkv_forward);
    CHECK_THAT(r.out, Catch::Contains("peak FMA bound ") && Catch::Contains("all (by time)"));
#ifdef ATTNLAB_OPENBLAS
    CHECK_THAT(r.out, Catch::Contains("BLAS kernels: ") && !Catch::Contains("BLAS kernels: none"));
#endif
    const auto bad = run_cli({"bench", "products", "--config", "nosuch"});
    CHECK(bad.code == 2);
}
