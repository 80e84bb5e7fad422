// The chunked form of attention (attention/chunked.hpp): gradient checks in
// double for every numerator with a chunked form x every denominator, gates
// on and off; equality with the quadratic form to 1e-9 in double (outputs
// and every gradient) across chunk lengths; the same bits twice; a model
// trained a few steps in both forms; the spec's refusals and config.yaml;
// the cost model's choice. The quadratic form's weights kept by the forward
// give the same bits as weights the backward recomputes, and its tiled path
// (long rows: key tiles, online row max) equals the kept weights' to 1e-9 in
// double. The variant lists come from the variant table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attnlab/attention/attention.hpp"
#include "attnlab/attention/chunked.hpp"
#include "attnlab/attention/recurrent.hpp"
#include "attnlab/bench/seq_len_bench.hpp"
#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/results/result_file.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"
#include "support/attention_check.hpp"
#include "support/isa_versions.hpp"
#include "support/spec_errors.hpp"
#include "support/tiny_config.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Every numerator with a chunked form at orders 1..4, x every denominator.
std::vector<attention_config> chunkable_variants(int first_order = 1, int last_order = max_chunked_power) {
    std::vector<attention_config> out;
    for (const attention_config& a : every_variant(first_order, last_order))
        if (has_chunked_form(a)) out.push_back(a);
    return out;
}

// The same variant with both gates (the output gate unless the denominator has its own).
attention_config gated(attention_config a) {
    a.in_gate = true;
    a.out_gate = !traits_of(a.denominator).has_output_gate;
    return a;
}

attention_config in_form(attention_config a, parallel_form form, int chunk) {
    a.form = form;
    a.chunk = chunk;
    return a;
}

// One forward and backward of the attention layer: its output and every gradient.
template <class T>
struct layer_run {
    std::vector<T> out, dq, dk, dv, din, dout_gate, dparams;
};

struct chunk_layer_inputs {
    int B, T, NH, HS;
    vec q, k, v, g_in, g_out, params, dout;
};

chunk_layer_inputs random_inputs(int B, int T, int NH, int HS, int param_count, std::uint64_t seed) {
    rng r(seed);
    const std::size_t N = static_cast<std::size_t>(B) * T, C = static_cast<std::size_t>(NH) * HS;
    chunk_layer_inputs in{B, T, NH, HS, {}, {}, {}, {}, {}, {}, {}};
    in.q = random_vector(N * C, r, 0.7);
    in.k = random_vector(N * C, r, 0.7);
    in.v = random_vector(N * C, r);
    in.dout = random_vector(N * C, r);
    in.g_in.resize(N * NH);
    in.g_out.resize(N * NH);
    for (auto& g : in.g_in) g = 0.1 + 0.8 * r.uniform();
    for (auto& g : in.g_out) g = 0.1 + 0.8 * r.uniform();
    in.params.resize(param_count);
    for (auto& p : in.params) p = 1.0 + 0.3 * r.normal();
    return in;
}

template <class T>
std::vector<T> cast(const vec& x) {
    return std::vector<T>(x.begin(), x.end());
}

// T_cap: the length the cache is sized for (default x.T).
template <class T>
layer_run<T> run_layer(const attention_config& cfg, const chunk_layer_inputs& x, int T_cap = 0) {
    const std::size_t N = static_cast<std::size_t>(x.B) * x.T, C = static_cast<std::size_t>(x.NH) * x.HS;
    attention_layer<T> att(cfg, x.NH, x.HS);
    attention_cache<T> cache;
    att.init_cache(cache, x.B, T_cap > 0 ? T_cap : x.T);
    const std::vector<T> q = cast<T>(x.q), k = cast<T>(x.k), v = cast<T>(x.v), g_in = cast<T>(x.g_in),
                         g_out = cast<T>(x.g_out), params = cast<T>(x.params), dout = cast<T>(x.dout);
    attention_inputs<T> in;
    in.q = q.data();
    in.k = k.data();
    in.v = v.data();
    if (att.has_in_gate()) in.in_gate = g_in.data();
    if (att.has_out_gate()) in.out_gate = g_out.data();
    if (att.denominator_param_count()) in.denom_params = params.data();
    layer_run<T> r;
    r.out.assign(N * C, T(0));
    r.dq = r.dk = r.dv = r.out;
    r.din.assign(N * x.NH, T(0));
    r.dout_gate = r.din;
    r.dparams.assign(att.denominator_param_count(), T(0));
    att.forward(r.out.data(), cache, in, x.B, x.T);
    attention_grads<T> g;
    g.dq = r.dq.data();
    g.dk = r.dk.data();
    g.dv = r.dv.data();
    g.din_gate = r.din.data();
    g.dout_gate = r.dout_gate.data();
    g.ddenom_params = r.dparams.data();
    att.backward(g, dout.data(), cache, in, x.B, x.T);
    return r;
}

// max |a - b| relative to max(1, max |b|).
double max_difference(const vec& a, const vec& b) {
    REQUIRE(a.size() == b.size());
    double diff = 0, scale = 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::abs(a[i] - b[i]));
        scale = std::max(scale, std::abs(b[i]));
    }
    return diff / scale;
}

void check_same_as_quadratic(const attention_config& a, const chunk_layer_inputs& x, int chunk) {
    const attention_config quadratic = in_form(a, parallel_form::quadratic, chunk);
    const attention_config chunked = in_form(a, parallel_form::chunked, chunk);
    REQUIRE(choose_form(chunked, x.T, x.HS) == parallel_form::chunked);
    const layer_run<double> want = run_layer<double>(quadratic, x), got = run_layer<double>(chunked, x);
    INFO(describe(a) << ", T " << x.T << ", chunk " << chunk);
    CHECK(max_difference(got.out, want.out) <= 1e-9);
    CHECK(max_difference(got.dq, want.dq) <= 1e-9);
    CHECK(max_difference(got.dk, want.dk) <= 1e-9);
    CHECK(max_difference(got.dv, want.dv) <= 1e-9);
    CHECK(max_difference(got.din, want.din) <= 1e-9);
    CHECK(max_difference(got.dout_gate, want.dout_gate) <= 1e-9);
    CHECK(max_difference(got.dparams, want.dparams) <= 1e-9);
}

}  // namespace

TEST_CASE("chunked form: the variants that have one, from the variant table", "[attention][chunked]") {
    for (const attention_config& a : every_variant(1, 6)) {
        INFO(describe(a));
        const bool expected =
            has_finite_state(a) && (!is_score_kernel(a.numerator) || highest_power(terms_of(a)) <= max_chunked_power);
        CHECK(has_chunked_form(a) == expected);
        CHECK(chunked_feature_size(a, 5) == (expected ? feature_size(a, 5, state_layout::symmetric) : 0));
    }
    attention_config clamped = variant_config(numerator_kind::taylor, denominator_kind::softmax, 2);
    clamped.clamp = 3.0;
    CHECK_THAT(chunked_form_refusal(clamped), Contains("clamped taylor has none"));
    // The layer refuses the chunked form it cannot compute.
    CHECK_THROWS_WITH(attention_layer<double>(in_form(clamped, parallel_form::chunked, 4), 1, 2),
                      Contains("finite state"));
}

TEST_CASE("Taylor features, symmetric layout: the backward is the Jacobian's transpose", "[attention][chunked][grad]") {
    const int d = 4;
    for (int m = 1; m <= max_chunked_power; ++m) {
        INFO("order " << m);
        const std::size_t F = taylor_term_size(d, m, state_layout::symmetric);
        rng r(m);
        vec x = random_vector(d, r), R = random_vector(F, r), phi(F);
        auto loss = [&] {
            taylor_term_symmetric(phi.data(), x.data(), d, m);
            return dot(phi, R);
        };
        vec dx(d, 0.0);
        taylor_term_symmetric_backward(dx.data(), R.data(), x.data(), d, m);
        CHECK(relative_error(dx, numeric_gradient(x, loss)) <= gradcheck_bound);
    }
}

namespace {

// Every numerator with a state, orders first_order..last_order, and every
// denominator, gates off and on: the quadratic form's check's sizes and
// inputs (T 5), in chunks 2, 2, 1.
void check_chunked_gradients(int first_order, int last_order) {
    for (const attention_config& base : chunkable_variants(first_order, last_order))
        for (const attention_config& a : {base, gated(base)}) {
            INFO(describe(a) << ", chunked, T 5, chunk 2");
            check_attention_layer(in_form(a, parallel_form::chunked, 2));
        }
}

}  // namespace

TEST_CASE("chunked form gradients: every numerator with a state (orders 1 to 3) x denominator, gates off and on",
          "[attention][chunked][grad]") {
    check_chunked_gradients(1, 3);
}

// Order 4 runs the same code as 1 to 3 on the largest states: most of the
// case's time under the sanitizers, which leave [heavy] cases out.
TEST_CASE("chunked form gradients: every numerator with a state (order 4) x denominator, gates off and on",
          "[attention][chunked][grad][heavy]") {
    static_assert(max_chunked_power == 4, "extend the orders of the two chunked gradient cases");
    check_chunked_gradients(4, 4);
}

TEST_CASE("chunked = quadratic to 1e-9 in double: outputs and every gradient, chunk 1, uneven, = T, > T",
          "[attention][chunked]") {
    for (const attention_config& base : chunkable_variants())
        for (const attention_config& a : {base, gated(base)}) {
            const int P = traits_of(a.denominator).out_norm_params * 3;
            const chunk_layer_inputs x = random_inputs(2, 11, 2, 3, P, 17);
            for (int chunk : {1, 3, 4, 11, 16}) check_same_as_quadratic(a, x, chunk);
        }
}

TEST_CASE("chunked = quadratic across the quadratic form's row blocks and chunks longer than them",
          "[attention][chunked]") {
    const int T = 2 * attention_scratch<double>::block_rows + 5;
    for (const attention_config& base : each_numerator_with_a_denominator(2)) {
        if (!has_chunked_form(base)) continue;
        const attention_config a = gated(base);
        const chunk_layer_inputs x = random_inputs(1, T, 2, 4, traits_of(a.denominator).out_norm_params * 4, 5);
        for (int chunk : {50, 64, 100}) check_same_as_quadratic(a, x, chunk);
    }
}

namespace {

// (memcmp of an empty vector's data, which may be null, is undefined: UBSan says so.)
bool same_bits(const std::vector<float>& u, const std::vector<float>& w) {
    return u.size() == w.size() && (u.empty() || std::memcmp(u.data(), w.data(), u.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("quadratic form: the forward's kept weights give the same bits as weights the backward recomputes",
          "[attention]") {
    // The gradient checks run at small T, where the cache keeps the weights;
    // a cache sized for a long T_cap keeps none, so the backward recomputes.
    const int T = 2 * attention_scratch<float>::block_rows + 5, long_T = 2049;
    std::vector<attention_config> cases = each_numerator_with_a_denominator(2);
    attention_config clamped = variant_config(numerator_kind::exp, denominator_kind::norm, 2);
    clamped.clamp = 0.5;
    cases.push_back(clamped);
    for (const attention_config& base : cases) {
        const attention_config a = in_form(gated(base), parallel_form::quadratic, 64);
        INFO(describe(a));
        REQUIRE(keeps_weights(a, 1, T, 2, 4));
        REQUIRE_FALSE(keeps_weights(a, 1, long_T, 2, 4));
        const chunk_layer_inputs x = random_inputs(1, T, 2, 4, traits_of(a.denominator).out_norm_params * 4, 3);
        const layer_run<float> kept = run_layer<float>(a, x);
        const forced_quadratic_path rows(quadratic_path::rows);  // not the tiled path (other bits)
        const layer_run<float> recomputed = run_layer<float>(a, x, long_T);
        CHECK(same_bits(kept.out, recomputed.out));
        CHECK(same_bits(kept.dq, recomputed.dq));
        CHECK(same_bits(kept.dk, recomputed.dk));
        CHECK(same_bits(kept.dv, recomputed.dv));
        CHECK(same_bits(kept.din, recomputed.din));
        CHECK(same_bits(kept.dout_gate, recomputed.dout_gate));
        CHECK(same_bits(kept.dparams, recomputed.dparams));
    }
}

TEST_CASE("chunked form: the same bits twice with the same threads", "[attention][chunked]") {
    attention_config a = gated(variant_config(numerator_kind::taylor, denominator_kind::softmax, 2));
    a = in_form(a, parallel_form::chunked, 32);
    const chunk_layer_inputs x = random_inputs(4, 150, 2, 8, 0, 9);
    const layer_run<float> first = run_layer<float>(a, x), second = run_layer<float>(a, x);
    CHECK(same_bits(first.out, second.out));
    CHECK(same_bits(first.dq, second.dq));
    CHECK(same_bits(first.dk, second.dk));
    CHECK(same_bits(first.dv, second.dv));
    CHECK(same_bits(first.din, second.din));
    CHECK(same_bits(first.dout_gate, second.dout_gate));
}

TEST_CASE(
    "a model trained a few steps in the chunked and the quadratic form: "
    "the same losses in float",
    "[attention][chunked][model]") {
    const run_config c = tiny_config({.seed = 4,
                                      .vocab = 40,
                                      .seq_len = 36,
                                      .pairs = 4,
                                      .layers = 2,
                                      .steps = 6,
                                      .batch = 4,
                                      .warmup = 1,
                                      .eval_every = 3});
    std::vector<attention_config> cases = {variant_config(numerator_kind::elu1, denominator_kind::softmax),
                                           variant_config(numerator_kind::taylor, denominator_kind::norm, 2),
                                           variant_config(numerator_kind::power, denominator_kind::rmsnorm, 2)};
    cases[0].in_gate = true;
    for (const attention_config& a : cases) {
        INFO(describe(a));
        auto losses = [&](parallel_form form) {
            run_config rc = c;
            rc.attention = in_form(a, form, 8);  // 36 positions: 4 chunks and a partial one
            std::vector<double> out;
            train_callbacks cb;
            cb.on_row = [&](const metrics_row& r) { out.push_back(r.m.loss); };
            const run_result res = train_run(rc, cb);
            CHECK(res.attention_form == to_string(form));
            return out;
        };
        const std::vector<double> quadratic = losses(parallel_form::quadratic),
                                  chunked = losses(parallel_form::chunked);
        REQUIRE(quadratic.size() == chunked.size());
        REQUIRE(quadratic.size() >= 8);
        for (std::size_t i = 0; i < quadratic.size(); ++i) CHECK(std::abs(chunked[i] - quadratic[i]) <= 1e-5);
    }
}

TEST_CASE("cost model: auto picks quadratic for short sequences and chunked for long ones", "[attention][chunked]") {
    const attention_config elu1 = variant_config(numerator_kind::elu1, denominator_kind::softmax);
    const attention_config exp = variant_config(numerator_kind::exp, denominator_kind::softmax);
    const attention_config taylor2 = variant_config(numerator_kind::taylor, denominator_kind::softmax, 2);
    CHECK(choose_form(elu1, 16, 32) == parallel_form::quadratic);
    CHECK(choose_form(elu1, 4096, 32) == parallel_form::chunked);
    CHECK(choose_form(exp, 4096, 32) == parallel_form::quadratic);  // no chunked form
    CHECK(choose_form(in_form(elu1, parallel_form::quadratic, 64), 4096, 32) == parallel_form::quadratic);
    // The crossover of taylor 2 (561 features at HS 32) lies above elu1's (32 features).
    int elu1_from = 0, taylor2_from = 0;
    for (int T = 1; T <= 8192 && !taylor2_from; T *= 2) {
        if (!elu1_from && choose_form(elu1, T, 32) == parallel_form::chunked) elu1_from = T;
        if (choose_form(taylor2, T, 32) == parallel_form::chunked) taylor2_from = T;
    }
    CHECK(elu1_from > 0);
    CHECK(taylor2_from > elu1_from);
    // Chunked scratch is planned only where it is used: the (Cn, F) and (F, HS) buffers.
    const attention_scratch_size shorter = attention_scratch_size_of(taylor2, 16, 32);
    const attention_scratch_size longer = attention_scratch_size_of(taylor2, 8192, 32);
    CHECK(shorter.state == 0);
    CHECK(longer.chunk_features == 64 * feature_size(taylor2, 32, state_layout::symmetric));
    CHECK(longer.state == feature_size(taylor2, 32, state_layout::symmetric) * 32);
}

namespace {
const std::string chunked_spec =
    "name: t\n"  // 1
    "base:\n"    // 2
    "  task: {kind: lookup, vocab: 64, seq_len: 32, pairs: 4}\n"
    "  model: {layers: 1, d_model: 16, heads: 2}\n"
    "  attention:\n"           // 5
    "    numerator: taylor\n"  // 6
    "    order: 2\n"           // 7
    "    denominator: norm\n"  // 8
    "    form: chunked\n"      // 9
    "  train: {steps: 10, lr: 0.01, warmup: 1}\n";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}
}  // namespace

TEST_CASE("spec: attention.form chunked is refused without a finite state or above order 4", "[spec][chunked]") {
    CHECK_NOTHROW(parse_spec(chunked_spec, "spec.yaml", {}));
    CHECK_THAT(spec_error_of(replaced(chunked_spec, "    numerator: taylor\n    order: 2\n", "    numerator: exp\n\n")),
               StartsWith("spec.yaml:9: base.attention.form: chunked form needs a finite state, and exp has none"));
    CHECK_THAT(spec_error_of(replaced(chunked_spec, "    order: 2\n", "    order: 5\n")),
               StartsWith("spec.yaml:9: base.attention.form: chunked form takes Taylor orders up to 4"));
    CHECK_THAT(spec_error_of(replaced(chunked_spec, "    order: 2\n", "    order: 2\n    clamp: 5\n")),
               Contains("base.attention.form: chunked form needs a finite state, and a clamped taylor"));
    CHECK_THAT(spec_error_of(replaced(chunked_spec, "    form: chunked\n", "    form: chunky\n")),
               Contains("did you mean 'chunked'"));
    CHECK_THAT(spec_error_of(replaced(chunked_spec, "    form: chunked\n", "    form: chunked\n    chunk: 0\n")),
               StartsWith("spec.yaml:10: base.attention.chunk:"));
    // auto and quadratic are taken for every variant.
    CHECK_NOTHROW(parse_spec(replaced(chunked_spec, "form: chunked", "form: auto"), "spec.yaml", {}));
    CHECK_NOTHROW(parse_spec(
        replaced(replaced(chunked_spec, "order: 2", "order: 9"), "form: chunked", "form: quadratic"), "spec.yaml", {}));
}

TEST_CASE("config.yaml: attention.form and chunk only when not the defaults", "[spec][chunked]") {
    const std::string defaults = replaced(chunked_spec, "    form: chunked\n", "");
    const std::string plain = run_config_to_yaml(parse_spec(defaults, "spec.yaml", {}).runs.at(0).config);
    CHECK(plain.find("form") == std::string::npos);
    CHECK(plain.find("chunk") == std::string::npos);
    const std::string set = run_config_to_yaml(
        parse_spec(replaced(chunked_spec, "form: chunked\n", "form: chunked\n    chunk: 32\n"), "spec.yaml", {})
            .runs.at(0)
            .config);
    CHECK_THAT(set, Contains("  form: chunked\n  chunk: 32\n"));
    const run_config back = run_config_from_yaml(set, "config.yaml");
    CHECK(back.attention.form == parallel_form::chunked);
    CHECK(back.attention.chunk == 32);
}

TEST_CASE("result.yaml: attention_form written, read, and absent in older files", "[chunked][outputs]") {
    run_result r;
    r.attention_form = "chunked";
    const std::string text = run_result_to_yaml(r);
    CHECK_THAT(text, Contains("attention_form: chunked\n"));
    r.attention_form.clear();
    CHECK(run_result_to_yaml(r).find("attention_form") == std::string::npos);
}

TEST_CASE("memory estimate: the chunked form's per-thread scratch, counted by hand", "[memory_estimate][chunked]") {
    run_config c = tiny_config({.batch = 4});  // 2 heads of HS 8
    c.attention =
        in_form(variant_config(numerator_kind::taylor, denominator_kind::softmax, 2), parallel_form::quadratic, 4);
    const memory_estimate quadratic = estimate_training_memory(c, 1);
    c.attention.form = parallel_form::chunked;
    const memory_estimate chunked = estimate_training_memory(c, 1);
    // F = 1 + 8 + 36 Taylor features; Pq Pk dP 3 x (4, F), state and its gradient 2 x (F, 8), sums 2 x F;
    // the (64, T) score block is larger than a (4, 4) chunk's.
    const std::size_t F = 45;
    CHECK(chunked.per_thread - quadratic.per_thread == (3 * 4 * F + 2 * F * 8 + 2 * F) * 4);
    // No state kept for the backward; the quadratic form keeps its weights and scores, (B NH, T, T) each.
    const std::size_t T = static_cast<std::size_t>(c.task.seq_len);
    CHECK(quadratic.attention - chunked.attention == 2 * (4 * 2) * T * T * 4);
}

TEST_CASE("bench --seq-lens: the crossover length interpolates where chunked meets quadratic", "[bench][chunked]") {
    auto point = [](const std::string& variant, parallel_form form, int T, double ms) {
        seq_len_point p;
        p.variant = variant;
        p.form = form;
        p.T = T;
        p.ms_per_1k = {ms};
        return p;
    };
    std::vector<seq_len_point> points;
    const double quadratic[] = {1, 2, 4, 8};  // doubles with T: meets chunked's 3 at T = 512 * 3 / 2
    for (int i = 0; i < 4; ++i) {
        const int T = 256 << i;
        points.push_back(point("a", parallel_form::quadratic, T, quadratic[i]));
        points.push_back(point("a", parallel_form::chunked, T, 3));
        points.push_back(point("fast", parallel_form::quadratic, T, quadratic[i]));
        points.push_back(point("fast", parallel_form::chunked, T, 0.5));
        points.push_back(point("slow", parallel_form::quadratic, T, quadratic[i]));
        points.push_back(point("slow", parallel_form::chunked, T, 100));
    }
    CHECK(crossover_length(points, "a") == Approx(768));
    CHECK(crossover_length(points, "fast") == 0);
    CHECK(crossover_length(points, "slow") == -1);
    const std::string csv = seq_len_bench_csv(points);
    CHECK_THAT(csv, StartsWith("variant,form,seq_len,batch,ms_per_1k_tokens,min,max,repeats,auto_form\n"));
    CHECK_THAT(csv, Contains("\na,chunked,512,0,3,3,3,1,quadratic\n"));
}

namespace {

// Outputs and every gradient of two runs to `bound` (relative to the largest).
template <class T>
void check_same_runs(const layer_run<T>& got, const layer_run<T>& want, double bound) {
    auto diff = [](const std::vector<T>& a, const std::vector<T>& b) {
        return max_difference(vec(a.begin(), a.end()), vec(b.begin(), b.end()));
    };
    CHECK(diff(got.out, want.out) <= bound);
    CHECK(diff(got.dq, want.dq) <= bound);
    CHECK(diff(got.dk, want.dk) <= bound);
    CHECK(diff(got.dv, want.dv) <= bound);
    CHECK(diff(got.din, want.din) <= bound);
    CHECK(diff(got.dout_gate, want.dout_gate) <= bound);
    CHECK(diff(got.dparams, want.dparams) <= bound);
}

// The tiled (or fused) path against the kept weights, in double: outputs
// and every gradient to 1e-9 (relative to the largest), at lengths below
// one tile, one row block, several tiles and not a multiple of either. The
// fused path must have run (forward and backward, every pair). reference:
// kept, or rows, the kept weights' bits recomputed by row blocks (the same
// products: the test above) without a cache of T x T to fill.
void check_path_as_kept(const attention_config& a, const chunk_layer_inputs& x,
                        quadratic_path path = quadratic_path::tiled, quadratic_path reference = quadratic_path::kept) {
    layer_run<double> want, got;
    {
        const forced_quadratic_path kept(reference);
        REQUIRE(keeps_weights(a, x.B, x.T, x.NH, x.HS) == (reference == quadratic_path::kept));
        want = run_layer<double>(a, x);
    }
    INFO(describe(a) << ", T " << x.T << ", HS " << x.HS << (path == quadratic_path::fused ? ", fused" : ", tiled"));
    {
        const forced_quadratic_path forced(path);
        REQUIRE_FALSE(keeps_weights(a, x.B, x.T, x.NH, x.HS));
        const long runs = fused_attention_runs();
        got = run_layer<double>(a, x);
        const bool fused = path == quadratic_path::fused && fused_path_serves(a, x.HS);  // else tiled
        CHECK(fused_attention_runs() - runs == (fused ? 2L * x.B * x.NH : 0L));
    }
    check_same_runs(got, want, 1e-9);
}
void check_tiled_as_kept(const attention_config& a, const chunk_layer_inputs& x) { check_path_as_kept(a, x); }

// Every variant the quadratic form serves (every numerator at orders 1 to 3
// x every denominator), gated, and with a clamp or a detached denominator
// where the variant takes one.
std::vector<attention_config> quadratic_variants() {
    std::vector<attention_config> cases;
    for (attention_config a : every_variant(1, 3)) {
        a.form = parallel_form::quadratic;
        cases.push_back(a);
        cases.push_back(gated(a));
        if (is_score_kernel(a.numerator)) {
            attention_config c = a;
            c.clamp = 0.3;  // some scores above, some below
            cases.push_back(c);
        }
        if (traits_of(a.denominator).detachable) {
            attention_config d = a;
            d.detach_denominator = true;
            cases.push_back(d);
        }
    }
    return cases;
}

}  // namespace

TEST_CASE("quadratic form: the tiled path = the kept weights to 1e-9 in double, T 1, 7, 64, 200",
          "[attention][tiled]") {
    // T 200: a full tile of 128 keys and a partial one.
    for (const attention_config& a : quadratic_variants())
        for (int T : {1, 7, 64, 200}) {
            const chunk_layer_inputs x = random_inputs(2, T, 2, 3, traits_of(a.denominator).out_norm_params * 3, 23);
            check_tiled_as_kept(a, x);
        }
}

// [heavy]: 40-70 s under the sanitizers; T 200 above and the online row max
// below (T 700) run the same code over several tiles and a partial one.
TEST_CASE("quadratic form: the tiled path = the kept weights at T 1030 (several tiles, a partial one)",
          "[attention][tiled][heavy]") {
    for (const attention_config& a : quadratic_variants()) {
        const chunk_layer_inputs x = random_inputs(1, 1030, 1, 4, traits_of(a.denominator).out_norm_params * 4, 29);
        check_tiled_as_kept(a, x);
    }
}

TEST_CASE("quadratic form: the tiled path's online row max, where a later tile raises it", "[attention][tiled]") {
    // Scores that grow along the row: every new tile holds a larger max, so
    // u_t and z_t are rescaled tile after tile; large scores too (exp of
    // them overflows unless the max is subtracted).
    const int T = 700;
    for (denominator_kind d : all_denominators) {
        if (!traits_of(d).scale_invariant) continue;
        attention_config a = variant_config(numerator_kind::exp, d);
        chunk_layer_inputs x = random_inputs(1, T, 1, 4, traits_of(d).out_norm_params * 4, 31);
        for (int t = 0; t < T; ++t) x.k[t * 4] = 0.2 * t;  // s_tj grows with j where q_t's first entry is > 0
        for (int t = 0; t < T; ++t) x.q[t * 4] = 2.0;
        check_tiled_as_kept(a, x);
        const forced_quadratic_path tiled(quadratic_path::tiled);
        const layer_run<float> f = run_layer<float>(a, x);
        for (float o : f.out) REQUIRE(std::isfinite(o));
        for (float g : f.dq) REQUIRE(std::isfinite(g));
        for (float g : f.dk) REQUIRE(std::isfinite(g));
    }
}

TEST_CASE("quadratic form: the path by size; the tiled path keeps nothing of T x T", "[attention][tiled]") {
    const attention_config a = variant_config(numerator_kind::exp, denominator_kind::softmax);
    CHECK(quadratic_tiles());
    CHECK(keeps_weights(a, 32, 64, 2, 16));         // quickstart's 2^18 weights per layer: kept
    CHECK_FALSE(keeps_weights(a, 32, 128, 2, 16));  // the lm preset's 2^20: tiled
    CHECK(keeps_weights(a, 1, 512, 1, 16));
    CHECK_FALSE(keeps_weights(a, 1, 513, 1, 16));
    CHECK_FALSE(keeps_weights(a, 4, 1024, 4, 16));  // lookup_length's long rows: tiled
    const attention_cache_size n = attention_cache_size_of(a, 4, 1024, 4, 16);
    CHECK(n.weights == 0);
    CHECK(n.scores == 0);
    CHECK(n.row_max == std::size_t(4) * 4 * 2 * 1024);
    const attention_scratch_size s = attention_scratch_size_of(a, 1024, 16);
    CHECK(s.block == std::size_t(attention_scratch<float>::block_rows) * 1024);  // scratch: a row block at most
    {
        const forced_quadratic_path kept(quadratic_path::kept);
        CHECK(keeps_weights(a, 4, 1024, 4, 16));
    }
    const forced_quadratic_path rows(quadratic_path::rows);
    CHECK_FALSE(quadratic_tiles());
    CHECK_FALSE(keeps_weights(a, 1, 16, 1, 16));
}

namespace {

// The variants of quadratic_variants the fused path serves (at head size
// 16): exp with each scale-invariant denominator, plain, gated, clamped, and
// the detached softmax.
std::vector<attention_config> fused_variants() {
    std::vector<attention_config> cases;
    for (const attention_config& a : quadratic_variants())
        if (fused_path_serves(a, 16)) cases.push_back(a);
    return cases;
}

chunk_layer_inputs fused_inputs(const attention_config& a, int B, int T, int NH, int HS, std::uint64_t seed) {
    return random_inputs(B, T, NH, HS, traits_of(a.denominator).out_norm_params * HS, seed);
}

}  // namespace

TEST_CASE("quadratic form: the fused path serves exp with a scale-invariant denominator at head sizes 16, 32, 64",
          "[attention][fused]") {
    const attention_config a = variant_config(numerator_kind::exp, denominator_kind::softmax);
    for (int HS : {16, 32, 64}) CHECK(fused_path_serves(a, HS));
    for (int HS : {3, 8, 48, 128}) CHECK_FALSE(fused_path_serves(a, HS));
    CHECK_FALSE(fused_path_serves(variant_config(numerator_kind::exp, denominator_kind::length), 16));
    CHECK_FALSE(fused_path_serves(variant_config(numerator_kind::taylor, denominator_kind::softmax), 16));
    CHECK_FALSE(fused_path_serves(variant_config(numerator_kind::elu1, denominator_kind::norm), 16));
    const std::vector<attention_config> cases = fused_variants();
    CHECK(cases.size() == 13);  // 4 denominators x (plain, gated, clamped) and the detached softmax
    // Its panels of K and V' (32 keys each) in the scratch, only where it serves.
    CHECK(attention_scratch_size_of(a, 1024, 32).panels == std::size_t(1024) * 32);
    CHECK(attention_scratch_size_of(a, 1030, 16).panels == std::size_t(1056) * 16);
    CHECK(attention_scratch_size_of(a, 1024, 8).panels == 0);
    CHECK(
        attention_scratch_size_of(variant_config(numerator_kind::taylor, denominator_kind::softmax), 1024, 32).panels ==
        0);
    // The cache: the same row max as the tiled path's, nothing of T x T.
    const forced_quadratic_path fused(quadratic_path::fused);
    CHECK_FALSE(keeps_weights(a, 1, 16, 1, 16));
    const attention_cache_size n = attention_cache_size_of(a, 4, 1024, 2, 32);
    CHECK(n.weights == 0);
    CHECK(n.row_max == std::size_t(4) * 2 * 2 * 1024);
}

TEST_CASE("quadratic form: the fused path = the kept weights to 1e-9 in double, T 1, 7, 64, 200, head sizes 16, 32, 64",
          "[attention][fused]") {
    for (const attention_config& a : fused_variants()) {
        for (int HS : {16, 32})
            for (int T : {1, 7, 64, 200})
                check_path_as_kept(a, fused_inputs(a, 2, T, 2, HS, 23), quadratic_path::fused);
        check_path_as_kept(a, fused_inputs(a, 1, 150, 2, 64, 37), quadratic_path::fused);
    }
}

// Many panels and backward blocks, a partial one of each: the same code as
// above at a larger size ([heavy]: 2 s of the unit suite).
TEST_CASE("quadratic form: the fused path = the kept weights at T 1030, head sizes 16 and 32",
          "[attention][fused][heavy]") {
    for (const attention_config& a : fused_variants())
        for (int HS : {16, 32})
            check_path_as_kept(a, fused_inputs(a, 1, 1030, 1, HS, 29), quadratic_path::fused, quadratic_path::rows);
}

TEST_CASE("quadratic form: the automatic path is fused without kept weights from T 128 on, tiled below",
          "[attention][fused]") {
    const attention_config a = variant_config(numerator_kind::exp, denominator_kind::softmax);
    // (B, T): kept weights (2^18 at most), long rows not kept, short rows not kept (a large batch).
    const struct {
        int B, T;
        long fused_runs;
    } cases[] = {{1, 128, 0}, {1, 600, 2}, {40, 100, 0}, {20, fused_from_length, 40}};
    for (const auto& c : cases) {
        INFO("B " << c.B << ", T " << c.T);
        CHECK(keeps_weights(a, c.B, c.T, 1, 16) == (c.T * c.T * c.B <= (1 << 18)));
        const long runs = fused_attention_runs();
        run_layer<float>(a, fused_inputs(a, c.B, c.T, 1, 16, 47));
        CHECK(fused_attention_runs() - runs == c.fused_runs);
    }
}

TEST_CASE("quadratic form: the fused path forced where it does not serve takes the tiled path", "[attention][fused]") {
    attention_config length = variant_config(numerator_kind::exp, denominator_kind::length);
    for (const attention_config& a : {variant_config(numerator_kind::exp, denominator_kind::softmax), length,
                                      variant_config(numerator_kind::taylor, denominator_kind::norm, 2)}) {
        const int HS = a.denominator == denominator_kind::softmax ? 8 : 16;  // a head size it is not compiled for
        check_path_as_kept(a, fused_inputs(a, 1, 70, 2, HS, 43), quadratic_path::fused);
    }
}

TEST_CASE("quadratic form: the fused path = the tiled path in float in every vector version of this CPU",
          "[attention][fused]") {
    attention_config clamped = variant_config(numerator_kind::exp, denominator_kind::norm);
    clamped.clamp = 0.3;
    attention_config detached = variant_config(numerator_kind::exp, denominator_kind::softmax);
    detached.detach_denominator = true;
    const std::vector<attention_config> cases = {
        variant_config(numerator_kind::exp, denominator_kind::softmax),
        gated(variant_config(numerator_kind::exp, denominator_kind::layernorm)),
        gated(variant_config(numerator_kind::exp, denominator_kind::rmsnorm)), clamped, detached};
    for_each_version([&] {
        for (const attention_config& a : cases)
            for (int HS : {16, 32, 64}) {
                INFO(describe(a) << ", HS " << HS);
                const chunk_layer_inputs x = fused_inputs(a, 2, 301, 2, HS, 41);  // 64-row blocks, a partial one
                layer_run<float> tiled, fused;
                {
                    const forced_quadratic_path path(quadratic_path::tiled);
                    tiled = run_layer<float>(a, x);
                }
                {
                    const forced_quadratic_path path(quadratic_path::fused);
                    const long runs = fused_attention_runs();
                    fused = run_layer<float>(a, x);
                    CHECK(fused_attention_runs() - runs == 2L * x.B * x.NH);
                }
                check_same_runs(fused, tiled, 2e-5);
            }
    });
}

TEST_CASE("quadratic form: the fused path's online row max, where a later panel raises it", "[attention][fused]") {
    // Scores that grow along the row, 0.2 a key: every panel of 32 keys holds
    // a larger max, so u_t and z_t are rescaled panel after panel; exp of the
    // largest overflows a float unless the max is subtracted.
    const int T = 700, HS = 16;
    for (denominator_kind d : all_denominators) {
        if (!traits_of(d).scale_invariant) continue;
        attention_config a = variant_config(numerator_kind::exp, d);
        chunk_layer_inputs x = fused_inputs(a, 1, T, 1, HS, 31);
        for (int t = 0; t < T; ++t) x.k[t * HS] = 0.4 * t;  // s_tj = 0.2 j + ... (scale 1/4)
        for (int t = 0; t < T; ++t) x.q[t * HS] = 2.0;
        check_path_as_kept(a, x, quadratic_path::fused);
        const forced_quadratic_path fused(quadratic_path::fused);
        const layer_run<float> f = run_layer<float>(a, x);
        for (float o : f.out) REQUIRE(std::isfinite(o));
        for (float g : f.dq) REQUIRE(std::isfinite(g));
        for (float g : f.dk) REQUIRE(std::isfinite(g));
    }
}
