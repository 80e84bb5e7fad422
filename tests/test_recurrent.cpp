// Recurrent form = parallel form (recurrent.hpp): the Taylor feature
// expansions in both layouts, their sizes and a hand-computed case, then
// every variant of the table with a finite state (and those without one and
// clamped kernels through the key/value cache) against attention_layer.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "attnlab/attention/recurrent.hpp"
#include "support/gradcheck.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {

constexpr double same_bound = 1e-9;

std::string describe(const attention_config& a, int HS) { return test::describe(a) + ", HS " + std::to_string(HS); }

double max_abs_diff(const vec& a, const vec& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

// Random inputs of one attention layer, (N, C) with N = B T, C = NH HS.
// q and k are scaled by 0.5 so that signed kernels' softmax sums stay away from 0.
struct layer_inputs {
    static constexpr int NH = 2;
    int B, T, HS, C, N;
    vec q, k, v, g_in, g_out, params;
    layer_inputs(int HS_, int n_params, std::uint64_t seed, int B_ = 2, int T_ = 7)
        : B(B_), T(T_), HS(HS_), C(NH * HS_), N(B_ * T_) {
        rng r(seed);
        q = random_vector(N * C, r, 0.5);
        k = random_vector(N * C, r, 0.5);
        v = random_vector(N * C, r);
        g_in.resize(N * NH);
        g_out.resize(N * NH);
        for (auto& g : g_in) g = 0.1 + 0.8 * r.uniform();
        for (auto& g : g_out) g = 0.1 + 0.8 * r.uniform();
        params.resize(n_params);
        for (auto& p : params) p = 1.0 + 0.3 * r.normal();
    }
    attention_inputs<double> view(const attention_config& cfg, const vec& q_used) const {
        attention_inputs<double> in;
        in.q = q_used.data();
        in.k = k.data();
        in.v = v.data();
        if (cfg.in_gate) in.in_gate = g_in.data();
        if (uses_out_gate(cfg)) in.out_gate = g_out.data();
        if (!params.empty()) in.denom_params = params.data();
        return in;
    }
};

vec parallel_out(const attention_config& cfg, const layer_inputs& x, const vec& q) {
    attention_layer<double> att(cfg, x.NH, x.HS);
    attention_cache<double> cache;
    att.init_cache(cache, x.B, x.T);
    vec out(x.N * x.C);
    att.forward(out.data(), cache, x.view(cfg, q), x.B, x.T);
    return out;
}

vec recurrent_out(const attention_config& cfg, const layer_inputs& x, state_layout layout) {
    recurrent_attention<double> rec(cfg, x.NH, x.HS, layout);
    vec out(x.N * x.C);
    rec.forward(out.data(), x.view(cfg, x.q), x.B, x.T);
    return out;
}

// The parallel form refuses Taylor order 0 (SPEC: n >= 1). Its weight w = 1
// is order 1 at s = 0, so the reference for order 0 is Taylor order 1 with
// q = 0 (k, v, gates unchanged); the recurrent side gets the real q.
vec parallel_reference(const attention_config& cfg, const layer_inputs& x) {
    if (cfg.numerator == numerator_kind::taylor && cfg.order == 0) {
        attention_config one = cfg;
        one.order = 1;
        return parallel_out(one, x, vec(x.q.size(), 0.0));
    }
    return parallel_out(cfg, x, x.q);
}

// Every (denominator, in_gate, out_gate) of a numerator, HS in {4, 8}:
// recurrent (both layouts) = parallel, and full = symmetric.
void check_all_denominators(attention_config a) {
    for (int HS : {4, 8})
        for (auto d : all_denominators)
            for (bool in_gate : {false, true})
                for (bool out_gate : {false, true}) {
                    if (out_gate && traits_of(d).has_output_gate) continue;  // has one already
                    a.denominator = d;
                    a.in_gate = in_gate;
                    a.out_gate = out_gate;
                    INFO(describe(a, HS));
                    const int P = make_denominator<double>(a)->param_count(HS);
                    const layer_inputs x(HS, P, 31);
                    const vec par = parallel_reference(a, x);
                    const vec full = recurrent_out(a, x, state_layout::full);
                    const vec sym = recurrent_out(a, x, state_layout::symmetric);
                    CHECK(max_abs_diff(full, par) <= same_bound);
                    CHECK(max_abs_diff(sym, par) <= same_bound);
                    CHECK(max_abs_diff(full, sym) <= same_bound);
                }
}

// The parallel form is fused in row blocks: sequences longer than two blocks
// must give the same outputs as the step-by-step form.
void check_long_sequence(attention_config a) {
    const int T = 2 * attention_scratch<double>::block_rows + 5, HS = 4;
    INFO(describe(a, HS) << ", T " << T);
    const int P = make_denominator<double>(a)->param_count(HS);
    const layer_inputs x(HS, P, 37, 1, T);
    CHECK(max_abs_diff(recurrent_out(a, x, state_layout::symmetric), parallel_reference(a, x)) <= same_bound);
}

attention_config numerator(numerator_kind n, int order = 0) {
    attention_config a;
    a.numerator = n;
    a.order = order;
    return a;
}

}  // namespace

// ---- feature expansions ----

TEST_CASE("Taylor terms: phi_m(q).phi_m(k) = s^m / m! in both layouts", "[recurrent]") {
    rng r(5);
    for (int d : {1, 2, 3, 4, 8})
        for (int m = 0; m <= 5; ++m) {
            const vec q = random_vector(d, r), k = random_vector(d, r);
            const double s = dot(q, k) / std::sqrt(double(d));
            const double expected = std::pow(s, m) / std::tgamma(m + 1.0);
            for (auto layout : {state_layout::full, state_layout::symmetric}) {
                const size_t n = taylor_term_size(d, m, layout);
                vec pq(n), pk(n);
                if (layout == state_layout::full) {
                    taylor_term_full(pq.data(), q.data(), d, m);
                    taylor_term_full(pk.data(), k.data(), d, m);
                } else {
                    taylor_term_symmetric(pq.data(), q.data(), d, m);
                    taylor_term_symmetric(pk.data(), k.data(), d, m);
                }
                INFO("d = " << d << ", m = " << m << (layout == state_layout::full ? " full" : " symmetric"));
                CHECK(dot(pq, pk) == Approx(expected).epsilon(1e-12).margin(1e-14));
            }
        }
}

TEST_CASE("Taylor terms: symmetric size C(d+m-1, m) vs full d^m, and exactly that many entries written",
          "[recurrent]") {
    // C(d+m-1, m) for d = 2, 4, 8 and m = 2, 3, 4 (Pascal's triangle):
    //   d = 2: C(3,2) = 3,  C(4,3) = 4,   C(5,4) = 5
    //   d = 4: C(5,2) = 10, C(6,3) = 20,  C(7,4) = 35
    //   d = 8: C(9,2) = 36, C(10,3) = 120, C(11,4) = 330
    const int ds[] = {2, 4, 8};
    const size_t sym[3][3] = {{3, 4, 5}, {10, 20, 35}, {36, 120, 330}};
    rng r(6);
    for (int i = 0; i < 3; ++i)
        for (int m = 2; m <= 4; ++m) {
            const int d = ds[i];
            INFO("d = " << d << ", m = " << m);
            const size_t full = static_cast<size_t>(std::llround(std::pow(d, m)));
            CHECK(taylor_term_size(d, m, state_layout::full) == full);
            CHECK(taylor_term_size(d, m, state_layout::symmetric) == sym[i][m - 2]);
            CHECK(taylor_term_size(d, m, state_layout::symmetric) < full);
            // One sentinel past the end must stay untouched.
            const vec x = random_vector(d, r);
            const double nan = std::numeric_limits<double>::quiet_NaN();
            vec a(full + 1, nan), b(sym[i][m - 2] + 1, nan);
            taylor_term_full(a.data(), x.data(), d, m);
            taylor_term_symmetric(b.data(), x.data(), d, m);
            CHECK(std::isnan(a.back()));
            CHECK(std::isnan(b.back()));
            for (size_t j = 0; j + 1 < a.size(); ++j) CHECK(std::isfinite(a[j]));
            for (size_t j = 0; j + 1 < b.size(); ++j) CHECK(std::isfinite(b[j]));
        }
    CHECK_THROWS_AS(taylor_term_size(64, 12, state_layout::full), std::overflow_error);  // 2^72
}

TEST_CASE("Taylor terms: hand-computed d = 2, m = 2", "[recurrent]") {
    // x = (3, 5), d = 2: d^(m/4) = sqrt(2), m! = 2.
    // full, index (i1, i2):  x_i1 x_i2 / sqrt(2!) / sqrt(2)
    //   (0,0) 9/2 = 4.5,  (0,1) = (1,0) 15/2 = 7.5,  (1,1) 25/2 = 12.5
    // symmetric, alpha = (2,0), (1,1), (0,2):  x^alpha sqrt(1/alpha!) / sqrt(2)
    //   x1^2 / sqrt(2) / sqrt(2) = 4.5,  x1 x2 / sqrt(2) = 10.6066017...,
    //   x2^2 / sqrt(2) / sqrt(2) = 12.5
    // Both have |phi|^2 = 289 = s^2 / 2 with s = 34 / sqrt(2).
    const double x[2] = {3, 5};
    vec full(4), sym(3);
    taylor_term_full(full.data(), x, 2, 2);
    taylor_term_symmetric(sym.data(), x, 2, 2);
    const double expected_full[4] = {4.5, 7.5, 7.5, 12.5};
    const double expected_sym[3] = {4.5, 15 / std::sqrt(2.0), 12.5};
    for (int i = 0; i < 4; ++i) CHECK(full[i] == Approx(expected_full[i]).epsilon(1e-14));
    for (int i = 0; i < 3; ++i) CHECK(sym[i] == Approx(expected_sym[i]).epsilon(1e-14));
    CHECK(dot(full, full) == Approx(289).epsilon(1e-14));
    CHECK(dot(sym, sym) == Approx(289).epsilon(1e-14));
}

TEST_CASE("recurrent features: phi(q).phi(k) is the parallel weight", "[recurrent]") {
    const int HS = 4;
    rng r(7);
    const vec q = random_vector(HS, r), k = random_vector(HS, r);
    const double s = dot(q, k) / 2;  // sqrt(HS) = 2
    for (auto layout : {state_layout::full, state_layout::symmetric}) {
        recurrent_attention<double> taylor3(numerator(numerator_kind::taylor, 3), 1, HS, layout);
        vec pq(taylor3.feature_size()), pk(taylor3.feature_size());
        taylor3.features(pq.data(), q.data(), true);
        taylor3.features(pk.data(), k.data(), false);
        CHECK(dot(pq, pk) == Approx(1 + s + s * s / 2 + s * s * s / 6).epsilon(1e-13));

        recurrent_attention<double> linear(numerator(numerator_kind::linear), 1, HS, layout);
        REQUIRE(linear.feature_size() == HS);
        linear.features(pq.data(), q.data(), true);
        linear.features(pk.data(), k.data(), false);
        pq.resize(HS);
        pk.resize(HS);
        CHECK(dot(pq, pk) == Approx(s).epsilon(1e-13));
    }
}

// ---- recurrent form = parallel form ----

TEST_CASE("recurrent = parallel: every numerator with a finite state (powers 1 to 4), every denominator and gate",
          "[recurrent]") {
    for (auto n : all_numerators) {
        if (!traits_of(n).finite_state) continue;
        for (int order : orders_by_power(n, 1, 4)) check_all_denominators(numerator(n, order));
    }
}

// Powers 5 and 6 run the same code with states of 4^5 and 4^6 terms: most of
// the suite's time under the sanitizers, which leave [heavy] cases out.
TEST_CASE("recurrent = parallel: every numerator with a finite state (powers 5 and 6), every denominator and gate",
          "[recurrent][heavy]") {
    for (auto n : all_numerators) {
        if (!traits_of(n).finite_state) continue;
        for (int order : orders_by_power(n, 5, 6)) check_all_denominators(numerator(n, order));
    }
}

TEST_CASE("recurrent = parallel: Taylor order 0 (the constant term alone), every denominator and gate", "[recurrent]") {
    check_all_denominators(numerator(numerator_kind::taylor, 0));
}

TEST_CASE("key/value cache step form = parallel: numerators without a finite state, and clamped kernels",
          "[recurrent]") {
    std::vector<attention_config> cases;
    for (auto d : all_denominators)
        for (auto n : all_numerators) {
            attention_config a = numerator(n, takes_order(n) ? 2 : 0);
            a.denominator = d;
            if (!traits_of(n).finite_state) cases.push_back(a);
            if (!is_score_kernel(n)) continue;  // a clamp applies to score kernels only
            a.clamp = 0.1;                      // with q, k scaled by 0.5 some scores lie above, some below
            a.in_gate = cases.size() % 2 == 0;  // gates on some cases
            a.out_gate = cases.size() % 3 == 0 && !traits_of(d).has_output_gate;
            cases.push_back(a);
        }
    for (const auto& a : cases)
        for (int HS : {4, 8}) {
            INFO(describe(a, HS));
            REQUIRE_FALSE(has_finite_state(a));
            const layer_inputs x(HS, make_denominator<double>(a)->param_count(HS), 32);
            const vec par = parallel_reference(a, x);
            for (auto layout : {state_layout::full, state_layout::symmetric})
                CHECK(max_abs_diff(recurrent_out(a, x, layout), par) <= same_bound);
        }
}

TEST_CASE("step by step: one position at a time equals forward", "[recurrent]") {
    // Drives step() directly for one (b, h) with gates, as a generator would.
    attention_config a = numerator(numerator_kind::taylor, 2);
    a.denominator = denominator_kind::norm;
    a.in_gate = true;
    a.out_gate = true;
    const layer_inputs x(4, 0, 33);
    const vec par = parallel_out(a, x, x.q);
    recurrent_attention<double> rec(a, x.NH, x.HS);
    rec.reset(x.B, 0);  // finite state: no cache capacity needed
    const int b = 1, h = 1;
    for (int t = 0; t < x.T; ++t) {
        const long row = static_cast<long>(b) * x.T + t, off = row * x.C + h * x.HS, gi = row * x.NH + h;
        double o[4];
        rec.step(o, b, h, &x.q[off], &x.k[off], &x.v[off], x.g_in[gi], x.g_out[gi], nullptr);
        for (int i = 0; i < 4; ++i) CHECK(std::abs(o[i] - par[off + i]) <= same_bound);
    }
}

TEST_CASE("state sizes: finite state F HS + F, key/value cache 2 T HS", "[recurrent]") {
    const int HS = 8;
    // taylor 2: F = 1 + 8 + 64 (full) or 1 + 8 + 36 (symmetric)
    const attention_config t2 = numerator(numerator_kind::taylor, 2);
    CHECK(has_finite_state(t2));
    CHECK(feature_size(t2, HS, state_layout::full) == 73);
    CHECK(feature_size(t2, HS, state_layout::symmetric) == 45);
    CHECK(state_floats(t2, HS, state_layout::full, 100) == 73 * 9);
    CHECK(state_floats(t2, HS, state_layout::symmetric, 1000) == 45 * 9);
    // linear and feature kernels: F = HS
    for (auto n : {numerator_kind::linear, numerator_kind::elu1, numerator_kind::relu, numerator_kind::cosine})
        CHECK(state_floats(numerator(n), HS, state_layout::full, 10) == HS * HS + HS);
    // every row with a finite state: F = HS for a feature map, the sizes of its Taylor terms for a score kernel
    for (auto n : all_numerators) {
        if (!traits_of(n).finite_state) continue;
        const attention_config a = numerator(n, takes_order(n) ? 3 : 0);
        INFO(describe(a, HS));
        for (auto layout : {state_layout::full, state_layout::symmetric}) {
            std::size_t F = 0;
            for (const series_term& t : terms_of(a)) F += taylor_term_size(HS, t.power, layout);
            CHECK(feature_size(a, HS, layout) == (is_score_kernel(n) ? F : std::size_t(HS)));
        }
    }
    // exp and clamped kernels keep k and g_in v of every position
    attention_config clamped = t2;
    clamped.clamp = 5.0;
    for (const auto& a : {numerator(numerator_kind::exp), clamped}) {
        CHECK_FALSE(has_finite_state(a));
        CHECK(state_floats(a, HS, state_layout::symmetric, 100) == 2 * 100 * HS);
    }
    // a clamp on a feature kernel changes nothing (score kernels only)
    attention_config elu = numerator(numerator_kind::elu1);
    elu.clamp = 5.0;
    CHECK(has_finite_state(elu));
}

TEST_CASE("key/value cache: stepping past its capacity throws", "[recurrent]") {
    recurrent_attention<double> rec(numerator(numerator_kind::exp), 1, 2);
    rec.reset(1, 1);
    const double q[2] = {1, 0}, k[2] = {0, 1}, v[2] = {1, 1};
    double o[2];
    rec.step(o, 0, 0, q, k, v, 1.0, 1.0, nullptr);
    CHECK(o[0] == Approx(1.0));
    CHECK_THROWS_AS(rec.step(o, 0, 0, q, k, v, 1.0, 1.0, nullptr), std::length_error);
}

TEST_CASE("recurrent = parallel across several row blocks of the fused kernel", "[recurrent][attention]") {
    attention_config a = numerator(numerator_kind::exp);  // key/value cache
    a.denominator = denominator_kind::softmax;
    check_long_sequence(a);
    a = numerator(numerator_kind::taylor, 2);
    a.denominator = denominator_kind::softmax;
    check_long_sequence(a);
    a.denominator = denominator_kind::layernorm;
    a.in_gate = a.out_gate = true;
    check_long_sequence(a);
    a = numerator(numerator_kind::elu1);
    a.denominator = denominator_kind::norm;
    a.in_gate = true;
    check_long_sequence(a);
}

TEST_CASE("recurrent features: a term's coefficient scales the query's side only", "[recurrent]") {
    const int d = 3, m = 2;
    rng r(11);
    const vec q = random_vector(d, r), k = random_vector(d, r);
    for (double c : {1.0, -0.5, 2.0}) {
        INFO("coefficient " << c);
        vec pq(taylor_term_size(d, m, state_layout::symmetric)), pk(pq.size()),
            fq(taylor_term_size(d, m, state_layout::full)), fk(fq.size());
        taylor_term_symmetric(pq.data(), q.data(), d, m, c);
        taylor_term_symmetric(pk.data(), k.data(), d, m);
        taylor_term_full(fq.data(), q.data(), d, m, c);
        taylor_term_full(fk.data(), k.data(), d, m);
        const double s = dot(q, k) / std::sqrt(double(d));
        CHECK(dot(pq, pk) == Approx(c * s * s / 2).epsilon(1e-13));
        CHECK(dot(fq, fk) == Approx(c * s * s / 2).epsilon(1e-13));
        // the backward carries the coefficient: d(phi(q) . R)/dq = c J^T R
        vec d1(d, 0.0), dc(d, 0.0);
        taylor_term_symmetric_backward(d1.data(), pk.data(), q.data(), d, m);
        taylor_term_symmetric_backward(dc.data(), pk.data(), q.data(), d, m, c);
        for (int i = 0; i < d; ++i) CHECK(dc[i] == Approx(c * d1[i]).epsilon(1e-13));
    }
}
