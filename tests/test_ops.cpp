// Per-op gradient checks in double (loss = sum(out * R) with fixed random R),
// the accumulate contract of every backward (two calls give twice the
// gradient), and hand-computed tiny cases.
#include <catch2/catch.hpp>

#include <cmath>

#include "attnlab/attention/attention.hpp"
#include "attnlab/ops/ops.hpp"
#include "gradcheck.hpp"

using namespace attnlab;
using namespace attnlab::test;
using vec = std::vector<double>;

namespace {

// Checks one op. `forward` computes out from the current inputs; `backward`
// accumulates gradients of sum(out * R) into grads (one per input, same order).
struct op_check {
    std::vector<vec*> inputs;
    std::function<void(vec& out)> forward;
    std::function<void(std::vector<vec>& grads, const vec& dout)> backward;
    size_t out_size;

    void run(std::uint64_t seed = 1) {
        rng r(seed);
        const vec R = random_vector(out_size, r);
        vec out(out_size);
        auto loss = [&] { forward(out); return dot(out, R); };
        std::vector<vec> grads;
        for (auto* x : inputs) grads.emplace_back(x->size(), 0.0);
        forward(out);
        backward(grads, R);
        for (size_t i = 0; i < inputs.size(); ++i) {
            const vec num = numeric_gradient(*inputs[i], loss);
            INFO("input " << i);
            REQUIRE(norm(num) > 0);  // the check must exercise something
            CHECK(relative_error(grads[i], num) <= gradcheck_bound);
        }
        // Accumulate contract: a second call adds the same gradient again.
        std::vector<vec> twice = grads;
        forward(out);  // restore the caches the numeric gradient overwrote
        backward(twice, R);
        for (size_t i = 0; i < inputs.size(); ++i) {
            vec doubled = grads[i];
            for (auto& g : doubled) g *= 2;
            CHECK(relative_error(twice[i], doubled) <= 1e-14);
        }
    }
};

}  // namespace

TEST_CASE("embedding: gradients of token and position tables", "[ops][grad]") {
    const int B = 2, T = 3, C = 4, V = 5;
    rng r(7);
    vec wte = random_vector(V * C, r), wpe = random_vector(T * C, r);
    const std::vector<std::int32_t> tok = {1, 4, 1, 0, 2, 4};  // repeated ids accumulate
    op_check c{{&wte, &wpe},
               [&](vec& out) { embedding_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C); },
               [&](std::vector<vec>& g, const vec& d) {
                   embedding_backward(g[0].data(), g[1].data(), d.data(), tok.data(), B, T, C);
               },
               static_cast<size_t>(B * T * C)};
    c.run();
}

TEST_CASE("rmsnorm: gradients of input and gain", "[ops][grad]") {
    const int N = 3, C = 5;
    rng r(8);
    vec x = random_vector(N * C, r), w = random_vector(C, r);
    vec rstd(N);
    op_check c{{&x, &w},
               [&](vec& out) { rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6); },
               [&](std::vector<vec>& g, const vec& d) {
                   rmsnorm_backward(g[0].data(), g[1].data(), d.data(), x.data(), rstd.data(), w.data(), N, C);
               },
               static_cast<size_t>(N * C)};
    c.run();
}

TEST_CASE("linear: gradients of input, weight and bias", "[ops][grad]") {
    const int N = 4, C = 3, OC = 5;
    rng r(9);
    vec x = random_vector(N * C, r), w = random_vector(OC * C, r), b = random_vector(OC, r);
    op_check c{{&x, &w, &b},
               [&](vec& out) { linear_forward(out.data(), x.data(), w.data(), b.data(), N, C, OC); },
               [&](std::vector<vec>& g, const vec& d) {
                   linear_backward(g[0].data(), g[1].data(), g[2].data(), d.data(), x.data(), w.data(), N, C, OC);
               },
               static_cast<size_t>(N * OC)};
    c.run();
}

TEST_CASE("rope: gradient of the input", "[ops][grad]") {
    const int B = 2, T = 4, NH = 2, HS = 4;
    rng r(10);
    vec x = random_vector(B * T * NH * HS, r);
    rope_tables<double> tab(T, HS);
    op_check c{{&x},
               [&](vec& out) { rope_forward(out.data(), x.data(), tab, B, T, NH, HS); },
               [&](std::vector<vec>& g, const vec& d) { rope_backward(g[0].data(), d.data(), tab, B, T, NH, HS); },
               x.size()};
    c.run();
}

TEST_CASE("swiglu: gradients of gate and up", "[ops][grad]") {
    const int N = 3, F = 4;
    rng r(11);
    vec gate = random_vector(N * F, r, 2.0), up = random_vector(N * F, r);
    op_check c{{&gate, &up},
               [&](vec& out) { swiglu_forward(out.data(), gate.data(), up.data(), N, F); },
               [&](std::vector<vec>& g, const vec& d) {
                   swiglu_backward(g[0].data(), g[1].data(), d.data(), gate.data(), up.data(), N, F);
               },
               static_cast<size_t>(N * F)};
    c.run();
}

TEST_CASE("gelu: gradient of the input", "[ops][grad]") {
    rng r(12);
    vec x = random_vector(12, r, 2.0);
    op_check c{{&x},
               [&](vec& out) { gelu_forward(out.data(), x.data(), static_cast<long>(x.size())); },
               [&](std::vector<vec>& g, const vec& d) {
                   gelu_backward(g[0].data(), d.data(), x.data(), static_cast<long>(x.size()));
               },
               x.size()};
    c.run();
}

TEST_CASE("cross-entropy: gradient of the mean loss over answer rows", "[ops][grad]") {
    const int A = 3, V = 5;
    rng r(13);
    vec logits = random_vector(A * V, r, 2.0);
    const std::vector<std::int32_t> tgt = {0, 4, 2};
    vec probs(A * V), losses(A);
    op_check c{{&logits},
               [&](vec& out) {
                   out[0] = cross_entropy_forward(probs.data(), losses.data(), logits.data(), tgt.data(), A, V);
               },
               [&](std::vector<vec>& g, const vec& d) {
                   cross_entropy_backward(g[0].data(), probs.data(), tgt.data(), d[0] / A, A, V);
               },
               1};
    c.run();
}

TEST_CASE("attention exp/softmax: gradients of q, k, v", "[ops][grad][attention]") {
    const int B = 2, T = 5, NH = 2, HS = 3, C = NH * HS;
    rng r(14);
    vec q = random_vector(B * T * C, r), k = random_vector(B * T * C, r), v = random_vector(B * T * C, r);
    attention_config cfg;  // exp numerator, softmax denominator
    attention_layer<double> att(cfg, NH, HS);
    attention_cache<double> cache;
    cache.resize(B, T, NH, HS);
    op_check c{{&q, &k, &v},
               [&](vec& out) { att.forward(out.data(), cache, q.data(), k.data(), v.data(), B, T); },
               [&](std::vector<vec>& g, const vec& d) {
                   att.backward(g[0].data(), g[1].data(), g[2].data(), d.data(), cache, q.data(), k.data(),
                                v.data(), B, T);
               },
               q.size()};
    c.run();
}

// ---- hand-computed cases ----

TEST_CASE("rmsnorm of (3, 4) with gains (1, 2)", "[ops]") {
    // mean(x^2) = (9 + 16) / 2 = 12.5, rms = 3.5355339...; out = (3, 8) / rms
    const double x[2] = {3, 4}, w[2] = {1, 2};
    double out[2], rstd[1];
    rmsnorm_forward(out, rstd, x, w, 1, 2, 0.0);
    CHECK(out[0] == Approx(0.8485281374238570));
    CHECK(out[1] == Approx(2.2627416997969520));
}

TEST_CASE("gelu at -1, 0, 1 (exact erf form)", "[ops]") {
    // gelu(x) = x Phi(x): Phi(1) = 0.8413447460685429, Phi(-1) = 0.1586552539314571
    const double x[3] = {-1, 0, 1};
    double y[3];
    gelu_forward(y, x, 3);
    CHECK(y[0] == Approx(-0.1586552539314571));
    CHECK(y[1] == 0.0);
    CHECK(y[2] == Approx(0.8413447460685429));
}

TEST_CASE("cross-entropy of uniform logits is log V", "[ops]") {
    const double logits[4] = {0.3, 0.3, 0.3, 0.3};
    const std::int32_t tgt[1] = {2};
    double probs[4], losses[1];
    CHECK(cross_entropy_forward(probs, losses, logits, tgt, 1, 4) == Approx(std::log(4.0)));
    CHECK(probs[1] == Approx(0.25));
}

TEST_CASE("rope at position 1 rotates each pair by 10000^(-2i/HS)", "[ops]") {
    // HS = 4: pairs (x0, x2) by angle 1 rad, (x1, x3) by 10000^(-1/2) = 0.01 rad.
    rope_tables<double> tab(2, 4);
    const double x[8] = {0, 0, 0, 0, 1, 2, 3, 4};  // positions 0 and 1
    double y[8];
    rope_forward(y, x, tab, 1, 2, 1, 4);
    CHECK(y[0] == 0.0);  // position 0 is the identity
    CHECK(y[4] == Approx(1 * std::cos(1.0) - 3 * std::sin(1.0)));
    CHECK(y[6] == Approx(3 * std::cos(1.0) + 1 * std::sin(1.0)));
    CHECK(y[5] == Approx(2 * std::cos(0.01) - 4 * std::sin(0.01)));
    CHECK(y[7] == Approx(4 * std::cos(0.01) + 2 * std::sin(0.01)));
}

TEST_CASE("exp/softmax attention on 3 tokens, one head of size 1", "[ops][attention]") {
    // q = k = (1, 2, 3) as 1-d vectors, HS = 1 so s_tj = q_t k_j; v = (10, 20, 30).
    // t=0: o = 10. t=1: weights e^2, e^4 -> (10 e^2 + 20 e^4) / (e^2 + e^4).
    // t=2: weights e^3, e^6, e^9.
    const double q[3] = {1, 2, 3}, v[3] = {10, 20, 30};
    attention_config cfg;
    attention_layer<double> att(cfg, 1, 1);
    attention_cache<double> cache;
    cache.resize(1, 3, 1, 1);
    double o[3];
    att.forward(o, cache, q, q, v, 1, 3);
    const double e = std::exp(1.0);
    CHECK(o[0] == Approx(10.0));
    CHECK(o[1] == Approx((10 * std::pow(e, 2) + 20 * std::pow(e, 4)) / (std::pow(e, 2) + std::pow(e, 4))));
    CHECK(o[2] == Approx((10 * std::pow(e, 3) + 20 * std::pow(e, 6) + 30 * std::pow(e, 9)) /
                         (std::pow(e, 3) + std::pow(e, 6) + std::pow(e, 9))));
}
