// Per-op gradient checks in double (loss = sum(out * R) with fixed random R),
// the accumulate contract of every backward (two calls give twice the
// gradient), and hand-computed tiny cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attnlab/ops/ops.hpp"
#include "attnlab/ops/vector_math.hpp"
#include "support/gradcheck.hpp"

using namespace attnlab;
using namespace attnlab::test;

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
    // Both paths of each product: small_gemm and OpenBLAS (ops.cpp).
    const int N = GENERATE(4, 64), C = GENERATE(3, 70), OC = GENERATE(5, 20);
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

TEST_CASE("swiglu with gate and up side by side: gradients, and values from the definition", "[ops][grad]") {
    const int N = 3, F = 4;
    rng r(12);
    vec gate_up = random_vector(N * 2 * F, r, 2.0);  // rows [gate | up]
    op_check c{
        {&gate_up},
        [&](vec& out) { swiglu_fused_forward(out.data(), gate_up.data(), N, F); },
        [&](std::vector<vec>& g, const vec& d) { swiglu_fused_backward(g[0].data(), d.data(), gate_up.data(), N, F); },
        static_cast<size_t>(N * F)};
    c.run();
    vec out(N * F);
    swiglu_fused_forward(out.data(), gate_up.data(), N, F);
    for (int n = 0; n < N; ++n)
        for (int f = 0; f < F; ++f) {
            const double g = gate_up[n * 2 * F + f], u = gate_up[n * 2 * F + F + f];
            CHECK(out[n * F + f] == Approx(g / (1 + std::exp(-g)) * u).epsilon(1e-14));
        }
}

TEST_CASE("linear_forward_add adds the product to what the output holds", "[ops]") {
    const int N = 4, C = 3, OC = 5;
    rng r(13);
    const vec x = random_vector(N * C, r), w = random_vector(OC * C, r), before = random_vector(N * OC, r);
    vec out = before;
    linear_forward_add(out.data(), x.data(), w.data(), N, C, OC);
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < OC; ++o) {
            double want = before[n * OC + o];
            for (int i = 0; i < C; ++i) want += x[n * C + i] * w[o * C + i];
            CHECK(out[n * OC + o] == Approx(want).epsilon(1e-14));
        }
}

namespace {
// Every product of linear_forward(_add) and linear_backward against its
// definition summed in double, for float or double.
template <class T>
void check_linear_products(int N, int C, int OC, double bound) {
    rng r(17);
    const vec xd = random_vector(N * C, r), wd = random_vector(OC * C, r), dyd = random_vector(N * OC, r);
    const vec before = random_vector(N * std::max(C, OC), r);
    const std::vector<T> x(xd.begin(), xd.end()), w(wd.begin(), wd.end()), dy(dyd.begin(), dyd.end());
    std::vector<T> y(N * OC, T(7)), y_add(before.begin(), before.begin() + N * OC);
    std::vector<T> dx(N * C, T(0)), dx_add(before.begin(), before.begin() + N * C), dw(OC * C, T(0.5));
    linear_forward(y.data(), x.data(), w.data(), (const T*)nullptr, N, C, OC);  // overwrites the 7s
    linear_forward_add(y_add.data(), x.data(), w.data(), N, C, OC);
    // the same with a caller's transposed copy of w (read on the small path only)
    std::vector<T> wt(C * OC), y_t(N * OC, T(7)), y_add_t(before.begin(), before.begin() + N * OC);
    for (int o = 0; o < OC; ++o)
        for (int i = 0; i < C; ++i) wt[i * OC + o] = w[o * C + i];
    linear_forward(y_t.data(), x.data(), w.data(), (const T*)nullptr, N, C, OC, wt.data());
    linear_forward_add(y_add_t.data(), x.data(), w.data(), N, C, OC, wt.data());
    linear_backward(dx.data(), dw.data(), (T*)nullptr, dy.data(), x.data(), w.data(), N, C, OC);  // onto zeros
    std::vector<T> dw_unused(OC * C, T(0));
    linear_backward(dx_add.data(), dw_unused.data(), (T*)nullptr, dy.data(), x.data(), w.data(), N, C, OC);
    vec y_want(N * OC), y_add_want(N * OC), dx_want(N * C), dx_add_want(N * C), dw_want(OC * C, 0.5);
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < OC; ++o) {
            double sum = 0;
            for (int i = 0; i < C; ++i) sum += static_cast<double>(x[n * C + i]) * w[o * C + i];
            y_want[n * OC + o] = sum;
            y_add_want[n * OC + o] = static_cast<double>(static_cast<T>(before[n * OC + o])) + sum;
        }
    for (int n = 0; n < N; ++n)
        for (int i = 0; i < C; ++i) {
            double sum = 0;
            for (int o = 0; o < OC; ++o) sum += static_cast<double>(dy[n * OC + o]) * w[o * C + i];
            dx_want[n * C + i] = sum;
            dx_add_want[n * C + i] = static_cast<double>(static_cast<T>(before[n * C + i])) + sum;
        }
    for (int o = 0; o < OC; ++o)
        for (int i = 0; i < C; ++i)
            for (int n = 0; n < N; ++n) dw_want[o * C + i] += static_cast<double>(dy[n * OC + o]) * x[n * C + i];
    auto as_double = [](const std::vector<T>& v) { return vec(v.begin(), v.end()); };
    CHECK(relative_error(as_double(y), y_want) <= bound);
    CHECK(relative_error(as_double(y_add), y_add_want) <= bound);
    CHECK(relative_error(as_double(y_t), y_want) <= bound);
    CHECK(relative_error(as_double(y_add_t), y_add_want) <= bound);
    CHECK(relative_error(as_double(dx), dx_want) <= bound);
    CHECK(relative_error(as_double(dx_add), dx_add_want) <= bound);
    CHECK(relative_error(as_double(dw), dw_want) <= bound);
}
}  // namespace

TEST_CASE("linear products in small_gemm and in OpenBLAS match their definition", "[ops]") {
    // Which products run in small_gemm (ops.cpp): those with a side <= 64 and
    // >= 16 output columns; for a product of the input, >= 64 rows as well
    // unless the caller gives the transposed weight and the product has
    // 2^15 multiply-adds or more.
    // These sizes take both paths for each product, and K slices of 64 with
    // a remainder (C 130, N 100 for the weight gradient).
    const int N = GENERATE(37, 100), C = GENERATE(1, 64, 65, 130), OC = GENERATE(15, 64, 65, 352);
    CAPTURE(N, C, OC);
    check_linear_products<double>(N, C, OC, 1e-13);
    check_linear_products<float>(N, C, OC, 1e-6);
}

TEST_CASE("rmsnorm in float (vectorised partial sums) matches the double computation", "[ops]") {
    const int N = 37, C = 100;  // C not a multiple of the 16 partial sums
    rng r(14);
    const vec x = random_vector(N * C, r), w = random_vector(C, r), dy = random_vector(N * C, r);
    vec out(N * C), rstd(N), dx(N * C, 0.5), dw(C, -0.25);  // the backward adds onto what is there
    rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), rstd.data(), w.data(), N, C);
    auto to_float = [](const vec& v) { return std::vector<float>(v.begin(), v.end()); };
    auto to_double = [](const std::vector<float>& v) { return vec(v.begin(), v.end()); };
    std::vector<float> xf = to_float(x), wf = to_float(w), dyf = to_float(dy), outf(N * C), rstdf(N);
    std::vector<float> dxf(N * C, 0.5f), dwf(C, -0.25f);
    rmsnorm_forward(outf.data(), rstdf.data(), xf.data(), wf.data(), N, C, 1e-6f);
    rmsnorm_backward(dxf.data(), dwf.data(), dyf.data(), xf.data(), rstdf.data(), wf.data(), N, C);
    CHECK(relative_error(to_double(outf), out) <= 1e-6);
    CHECK(relative_error(to_double(rstdf), rstd) <= 1e-6);
    CHECK(relative_error(to_double(dxf), dx) <= 1e-6);
    CHECK(relative_error(to_double(dwf), dw) <= 1e-6);
}

TEST_CASE("rope in float (vectorised rows) matches the double computation, forward and backward", "[ops]") {
    // HS 32 fills one AVX-512 vector per half; HS 6 leaves a scalar tail of 3.
    const int HS = GENERATE(32, 6), NH = 3, B = 2, T = 9, C = NH * HS, N = B * T;
    rng r(15);
    const vec x = random_vector(N * C, r), dy = random_vector(N * C, r);
    rope_tables<double> tab(T, HS);
    rope_tables<float> tabf(T, HS);
    vec y(N * C), dx(N * C, 0.5);  // the backward adds onto what is there
    rope_forward(y.data(), x.data(), tab, B, T, NH, HS);
    rope_backward(dx.data(), dy.data(), tab, B, T, NH, HS);
    std::vector<float> xf(x.begin(), x.end()), dyf(dy.begin(), dy.end()), yf(N * C), dxf(N * C, 0.5f);
    rope_forward(yf.data(), xf.data(), tabf, B, T, NH, HS);
    rope_backward(dxf.data(), dyf.data(), tabf, B, T, NH, HS);
    CHECK(relative_error(vec(yf.begin(), yf.end()), y) <= 1e-6);
    CHECK(relative_error(vec(dxf.begin(), dxf.end()), dx) <= 1e-6);
    CHECK(y != x);  // positions 1.. rotate
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
    op_check c{
        {&logits},
        [&](vec& out) { out[0] = cross_entropy_forward(probs.data(), losses.data(), logits.data(), tgt.data(), A, V); },
        [&](std::vector<vec>& g, const vec& d) {
            cross_entropy_backward(g[0].data(), probs.data(), tgt.data(), d[0] / A, A, V);
        },
        1};
    c.run();
}

TEST_CASE("cross-entropy backward adds onto what the buffer holds", "[ops]") {
    const int A = 2, V = 19;
    rng r(16);
    vec logits = random_vector(A * V, r, 2.0), probs(A * V), losses(A);
    const std::vector<std::int32_t> tgt = {7, 18};
    cross_entropy_forward(probs.data(), losses.data(), logits.data(), tgt.data(), A, V);
    vec added(A * V, 0.0), onto(A * V, 123.0);
    cross_entropy_backward(added.data(), probs.data(), tgt.data(), 0.5, A, V);
    cross_entropy_backward(onto.data(), probs.data(), tgt.data(), 0.5, A, V);
    for (int i = 0; i < A * V; ++i) CHECK(onto[i] - 123.0 == Approx(added[i]).margin(1e-12));
    CHECK(added[7] < 0.0);  // the target's entry: (p - 1) / 2
}

TEST_CASE("sigmoid: gradient of the input", "[ops][grad]") {
    rng r(15);
    vec x = random_vector(10, r, 2.0);
    op_check c{{&x},
               [&](vec& out) { sigmoid_forward(out.data(), x.data(), static_cast<long>(x.size())); },
               [&](std::vector<vec>& g, const vec& d) {
                   vec out(x.size());
                   sigmoid_forward(out.data(), x.data(), static_cast<long>(x.size()));
                   sigmoid_backward(g[0].data(), d.data(), out.data(), static_cast<long>(x.size()));
               },
               x.size()};
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

TEST_CASE("vectorised float exp and SwiGLU match double precision", "[ops]") {
    // The float kernels use their own exp (Cephes' polynomial), compiled for
    // the CPU's vectors; the bound is a few float ulps (6e-8 each).
    std::vector<float> x;
    for (int i = 0; i <= 20000; ++i) x.push_back(-87.0f + 175.0f * i / 20000.0f);  // the whole float range of exp
    for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 0.5f, -0.5f}) x.push_back(v);
    std::vector<float> e(x.size());
    exp_shifted(e.data(), x.data(), static_cast<long>(x.size()), 0.0f);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i)
        worst =
            std::max(worst, std::abs(e[i] - std::exp(static_cast<double>(x[i]))) / std::exp(static_cast<double>(x[i])));
    CHECK(worst <= 4e-7);
    std::vector<float> big = {100.0f, -100.0f, -1e30f};  // clamped, never inf or nan
    std::vector<float> eb(3);
    exp_shifted(eb.data(), big.data(), 3, 0.0f);
    CHECK(std::isfinite(eb[0]));
    CHECK(eb[1] >= 0.0f);
    CHECK(eb[2] >= 0.0f);
    exp_shifted(eb.data(), x.data() + 10000, 1, 2.0f);  // the shift: exp(x - 2)
    CHECK(eb[0] == Approx(std::exp(x[10000] - 2.0)).epsilon(4e-7));

    rng r(9);
    const long n = 1001;  // not a multiple of any vector width
    std::vector<float> g(n), u(n), d(n), out(n), dg(n, 0.5f), du(n, -0.25f);
    std::vector<double> gd(n), ud(n), dd(n), outd(n), dgd(n, 0.5), dud(n, -0.25);
    for (long i = 0; i < n; ++i) {
        g[i] = static_cast<float>(4 * r.normal());
        u[i] = static_cast<float>(r.normal());
        d[i] = static_cast<float>(r.normal());
        gd[i] = g[i];
        ud[i] = u[i];
        dd[i] = d[i];
    }
    swiglu_rows(out.data(), g.data(), u.data(), n);
    swiglu_rows(outd.data(), gd.data(), ud.data(), n);
    swiglu_rows_backward(dg.data(), du.data(), d.data(), g.data(), u.data(), n);
    swiglu_rows_backward(dgd.data(), dud.data(), dd.data(), gd.data(), ud.data(), n);
    for (long i = 0; i < n; ++i) {
        CHECK(out[i] == Approx(outd[i]).epsilon(1e-5).margin(1e-6));
        CHECK(dg[i] == Approx(dgd[i]).epsilon(1e-5).margin(1e-6));
        CHECK(du[i] == Approx(dud[i]).epsilon(1e-5).margin(1e-6));
    }
}

TEST_CASE("vectorised float max_of and first_index_of_max give std::max_element's value and index", "[ops]") {
    rng r(11);
    // Every length around the 16-lane vector and its tail, random rows with
    // ties of the maximum, all-equal rows, negative rows and signed zeros.
    for (long n = 1; n <= 70; ++n) {
        for (int kind = 0; kind < 5; ++kind) {
            INFO("n " << n << " kind " << kind);
            std::vector<float> x(n);
            for (auto& v : x) v = static_cast<float>(r.normal());
            if (kind == 1 && n > 2) x[n - 1] = x[n / 2] = *std::max_element(x.begin(), x.end()) + 1.0f;  // a tie
            if (kind == 2) std::fill(x.begin(), x.end(), 0.25f);                                         // all equal
            if (kind == 3)
                for (auto& v : x) v = -std::abs(v) - 1.0f;  // all negative
            if (kind == 4) {
                std::fill(x.begin(), x.end(), -1.0f);
                x[n - 1] = 0.0f;
                x[(n - 1) / 3] = -0.0f;  // -0 == +0: the first of them is the index
            }
            const auto it = std::max_element(x.begin(), x.end());
            CHECK(max_of(x.data(), n) == *it);
            CHECK(first_index_of_max(x.data(), n) == it - x.begin());
        }
    }
}

TEST_CASE("vectorised float sum_of: the sum as in double, the same bits at every alignment", "[ops]") {
    rng r(15);
    std::vector<float> storage(70 + 16);
    for (long n = 1; n <= 70; ++n) {
        INFO("n " << n);
        std::vector<float> x(n);
        double want = 0, scale = 0;
        for (auto& v : x) {
            v = static_cast<float>(r.normal());
            want += v;
            scale += std::abs(v);
        }
        const float got = sum_of(x.data(), n);
        CHECK(std::abs(got - want) <= 1e-6 * scale);
        // Copies of x starting at each float of a 64-byte line: Eigen's
        // sum() would start its vectors at the first aligned one.
        for (int shift = 0; shift < 16; ++shift) {
            std::copy(x.begin(), x.end(), storage.begin() + shift);
            const float moved = sum_of(storage.data() + shift, n);
            CHECK(std::memcmp(&moved, &got, sizeof got) == 0);
        }
    }
    const std::vector<double> xd = {0.5, 1.25, -3.0};
    CHECK(sum_of(xd.data(), 3) == -1.25);
}

TEST_CASE("vectorised float softmax_row: probabilities and log-sum-exp as in double", "[ops]") {
    rng r(14);
    // Every length around the 16-lane vector and its tail, logits of spread 1
    // and 30 (the largest far above the rest: exp underflows for most), and
    // a row offset by 80 (exp(z) alone would overflow float).
    for (long n = 1; n <= 70; ++n) {
        for (double spread : {1.0, 30.0}) {
            for (double offset : {0.0, 80.0}) {
                INFO("n " << n << " spread " << spread << " offset " << offset);
                std::vector<float> z(n), p(n);
                std::vector<double> zd(n), pd(n);
                for (long i = 0; i < n; ++i) zd[i] = z[i] = static_cast<float>(offset + spread * r.normal());
                const float lse = softmax_row(p.data(), z.data(), n);
                const double lsed = softmax_row(pd.data(), zd.data(), n);
                CHECK(lse == Approx(lsed).epsilon(1e-6).margin(1e-6));
                double total = 0;
                for (long i = 0; i < n; ++i) {
                    CHECK(p[i] == Approx(pd[i]).epsilon(1e-5).margin(1e-30));
                    total += p[i];
                }
                CHECK(total == Approx(1.0).epsilon(1e-5));
            }
        }
    }
    // The double version against its definition, and p may be z.
    std::vector<double> z = {1.0, 2.0, 3.0};
    const double lse = softmax_row(z.data(), z.data(), 3);
    CHECK(lse == Approx(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))));
    CHECK(z[2] == Approx(std::exp(3.0 - lse)));
}

TEST_CASE("vectorised float scaled_sum: w (d + add) elementwise, and its sum as in double", "[ops]") {
    rng r(12);
    for (long n = 1; n <= 70; ++n) {
        INFO("n " << n);
        std::vector<float> d(n), w(n), out(n);
        for (long i = 0; i < n; ++i) {
            d[i] = static_cast<float>(r.normal());
            w[i] = static_cast<float>(r.normal());
        }
        const float add = 0.375f;
        const float sum = scaled_sum(out.data(), d.data(), add, w.data(), n);
        double expected_sum = 0, magnitude = 0;
        for (long i = 0; i < n; ++i) {
            CHECK(out[i] == w[i] * (d[i] + add));  // one float product of one float sum: exact
            expected_sum += static_cast<double>(w[i]) * (static_cast<double>(d[i]) + add);
            magnitude += std::abs(static_cast<double>(out[i]));
        }
        CHECK(std::abs(sum - expected_sum) <= 1e-6 * magnitude + 1e-7);
    }
}
