// Every numerator x denominator of the variant table with its modifiers:
// attention-level and whole-micro-model gradient checks in double (the lists
// come from the table: tests/support/variant_cases.hpp), the detached softmax
// against a reference, and hand-computed 3-token cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "attnlab/attention/attention.hpp"
#include "support/attention_check.hpp"
#include "support/model_check.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {

attention_config variant(numerator_kind n, denominator_kind d, int order = 2) { return variant_config(n, d, order); }

}  // namespace

TEST_CASE("attention layer gradients: every numerator (orders 1 to 4) x denominator", "[attention][grad]") {
    for (const auto& a : every_variant(1, 4)) {
        INFO(describe(a));
        check_attention_layer(a);
    }
}

TEST_CASE("attention layer gradients across several row blocks", "[attention][grad]") {
    // The fused kernel works in blocks of block_rows query rows and recomputes
    // them in the backward: sequences of 2 blocks + 5 rows exercise the block
    // edges, the partial last block and keys shared by several blocks. (No
    // clamp here: among ~9k scores some sit within h of its kink.)
    const int T = 2 * attention_scratch<double>::block_rows + 5;
    std::vector<attention_config> cases = each_numerator_with_a_denominator(4);
    attention_config gated = variant(numerator_kind::elu1, denominator_kind::softmax);
    gated.in_gate = gated.out_gate = true;
    cases.push_back(gated);
    for (const auto& a : cases) {
        INFO(describe(a) << ", T " << T);
        check_attention_layer(a, {1, T, 1, 2});
    }
}

TEST_CASE("attention layer gradients: modifiers and orders 1 to 12", "[attention][grad]") {
    std::vector<attention_config> cases;
    for (auto n : all_numerators)
        for (auto d : all_denominators) {
            attention_config a = variant(n, d);
            a.in_gate = true;
            cases.push_back(a);
            if (traits_of(d).has_output_gate) continue;  // has one already
            a.in_gate = false;
            a.out_gate = true;
            cases.push_back(a);
        }
    for (auto n : all_numerators)
        if (is_score_kernel(n))
            for (auto d : all_denominators) {
                attention_config a = variant(n, d);
                a.clamp = 0.2;  // some scores above, some below
                cases.push_back(a);
            }
    for (auto n : all_numerators)
        if (takes_order(n))
            for (int order = 1; order <= 12; ++order) {
                attention_config a = variant(n, denominator_kind::softmax, order);
                if (!weights_of_order_one(a)) a.denominator = denominator_kind::length;
                cases.push_back(a);
            }
    for (const auto& a : cases) {
        INFO(describe(a));
        check_attention_layer(a);
    }
}

TEST_CASE("detach_denominator: gradient of u / z with z held constant", "[attention][grad]") {
    // Reference: one head, o_t = sum_j exp(s_tj) v_j / Z_t with Z_t frozen at the
    // base point (no row-max shift needed in double for these small scores).
    const int T = 4, HS = 3;
    attention_config cfg = variant(numerator_kind::exp, denominator_kind::softmax);
    cfg.detach_denominator = true;
    attention_layer<double> att(cfg, 1, HS);
    attention_cache<double> cache;
    att.init_cache(cache, 1, T);
    rng r(31);
    vec q = random_vector(T * HS, r), k = random_vector(T * HS, r), v = random_vector(T * HS, r);
    const vec R = random_vector(T * HS, r);
    auto weights = [&](int t, int j) {
        double s = 0;
        for (int i = 0; i < HS; ++i) s += q[t * HS + i] * k[j * HS + i];
        return std::exp(s / std::sqrt(double(HS)));
    };
    vec Z(T, 0.0);
    for (int t = 0; t < T; ++t)
        for (int j = 0; j <= t; ++j) Z[t] += weights(t, j);
    auto reference_loss = [&] {
        double loss = 0;
        for (int t = 0; t < T; ++t)
            for (int j = 0; j <= t; ++j)
                for (int i = 0; i < HS; ++i) loss += R[t * HS + i] * weights(t, j) * v[j * HS + i] / Z[t];
        return loss;
    };
    vec out(T * HS), dq(T * HS, 0.0), dk(T * HS, 0.0), dv(T * HS, 0.0);
    attention_inputs<double> in;
    in.q = q.data();
    in.k = k.data();
    in.v = v.data();
    att.forward(out.data(), cache, in, 1, T);
    CHECK(dot(out, R) == Approx(reference_loss()));  // forward is the usual softmax
    attention_grads<double> g;
    g.dq = dq.data();
    g.dk = dk.data();
    g.dv = dv.data();
    att.backward(g, R.data(), cache, in, 1, T);
    CHECK(relative_error(dq, numeric_gradient(q, reference_loss)) <= gradcheck_bound);
    CHECK(relative_error(dk, numeric_gradient(k, reference_loss)) <= gradcheck_bound);
    CHECK(relative_error(dv, numeric_gradient(v, reference_loss)) <= gradcheck_bound);
}

// Every numerator x denominator in two cases: each numerator and each
// denominator once, then [heavy] the other pairs (the sanitized build runs
// only the first; every pair's attention layer is checked above).
TEST_CASE("whole micro model gradients: each numerator and each denominator", "[model][grad]") {
    for (const auto& a : each_numerator_with_a_denominator(2)) {
        INFO(describe(a));
        CHECK(whole_model_gradient_error(micro_model(), a) <= gradcheck_bound);
    }
}

TEST_CASE("whole micro model gradients: the other pairs of numerator x denominator", "[model][grad][heavy]") {
    const std::vector<attention_config> checked = each_numerator_with_a_denominator(2);
    int pairs = 0;
    for (const auto& a : every_variant(2, 2)) {
        const bool done = std::any_of(checked.begin(), checked.end(), [&](const attention_config& c) {
            return c.numerator == a.numerator && c.denominator == a.denominator;
        });
        if (done) continue;
        ++pairs;
        INFO(describe(a));
        CHECK(whole_model_gradient_error(micro_model(), a) <= gradcheck_bound);
    }
    CHECK(pairs + checked.size() == all_numerators.size() * all_denominators.size());
}

TEST_CASE("whole micro model gradients: modifiers", "[model][grad]") {
    std::vector<attention_config> cases;
    attention_config a = variant(numerator_kind::exp, denominator_kind::softmax);
    a.in_gate = true;
    cases.push_back(a);
    a = variant(numerator_kind::linear, denominator_kind::norm);
    a.in_gate = true;
    a.out_gate = true;
    cases.push_back(a);
    a = variant(numerator_kind::elu1, denominator_kind::rmsnorm);
    a.out_gate = true;
    cases.push_back(a);
    a = variant(numerator_kind::exp, denominator_kind::gate);
    a.clamp = 0.05;
    cases.push_back(a);
    a = variant(numerator_kind::taylor, denominator_kind::none, 3);
    a.clamp = 0.05;
    a.in_gate = true;
    cases.push_back(a);
    for (const auto& c : cases) {
        INFO(describe(c));
        CHECK(whole_model_gradient_error(micro_model(), c) <= gradcheck_bound);
    }
}

namespace {

// Orders [first, last] of every order-taking numerator, each with a sum and a
// norm denominator (length and none where the weights are not of order 1).
void check_whole_model_orders(int first, int last) {
    for (auto n : all_numerators)
        if (takes_order(n))
            for (int order = first; order <= last; ++order)
                for (int i = 0; i < 2; ++i) {
                    attention_config a = variant(n, i == 0 ? denominator_kind::softmax : denominator_kind::norm, order);
                    if (!weights_of_order_one(a))
                        a.denominator = i == 0 ? denominator_kind::length : denominator_kind::none;
                    INFO(describe(a));
                    CHECK(whole_model_gradient_error(micro_model(), a) <= gradcheck_bound);
                }
}

}  // namespace

TEST_CASE("whole micro model gradients: orders 1 to 4 of every order-taking numerator", "[model][grad]") {
    check_whole_model_orders(1, 4);
}

TEST_CASE("whole micro model gradients: orders 5 to 12 of every order-taking numerator", "[model][grad][heavy]") {
    check_whole_model_orders(5, 12);
}

// ---- hand-computed cases ----

namespace {
// One head, HS = 4, so s_tj = q_t.k_j / 2. With q = k:
//   k_0 = (2,0,0,0), k_1 = (0,2,0,0), k_2 = (2,2,0,0)
//   s_00 = 2;  s_10 = 0, s_11 = 2;  s_20 = 2, s_21 = 2, s_22 = 4
// and v_0 = (1,2,0,0), v_1 = (0,1,1,0), v_2 = (3,0,0,4). With the linear
// numerator (w = s):
//   u_0 = 2 v_0 = (2,4,0,0)                              z_0 = 2
//   u_1 = 0 v_0 + 2 v_1 = (0,2,2,0)                      z_1 = 2
//   u_2 = 2 v_0 + 2 v_1 + 4 v_2 = (14,6,2,16)            z_2 = 8
struct three_tokens {
    double qk[12] = {2, 0, 0, 0, 0, 2, 0, 0, 2, 2, 0, 0};
    double v[12] = {1, 2, 0, 0, 0, 1, 1, 0, 3, 0, 0, 4};
    double out[12] = {};
    std::vector<double> run(denominator_kind d, const double* params = nullptr, const double* out_gate = nullptr,
                            numerator_kind n = numerator_kind::linear, int order = 0) {
        attention_config cfg;
        cfg.numerator = n;
        cfg.order = order;
        cfg.denominator = d;
        cfg.eps = 1e-12;
        attention_layer<double> att(cfg, 1, 4);
        attention_cache<double> cache;
        att.init_cache(cache, 1, 3);
        attention_inputs<double> in;
        in.q = qk;
        in.k = qk;
        in.v = v;
        in.denom_params = params;
        in.out_gate = out_gate;
        att.forward(out, cache, in, 1, 3);
        return std::vector<double>(out, out + 12);
    }
};

void check_row(const std::vector<double>& o, int t, std::initializer_list<double> expected) {
    int i = 0;
    for (double e : expected) {
        INFO("t = " << t << ", i = " << i);
        CHECK(o[t * 4 + i] == Approx(e).margin(1e-12));
        ++i;
    }
}
}  // namespace

TEST_CASE("denominators on 3 hand-computed tokens", "[attention]") {
    three_tokens x;
    SECTION("softmax: u / z") {
        const auto o = x.run(denominator_kind::softmax);
        check_row(o, 0, {1, 2, 0, 0});
        check_row(o, 1, {0, 1, 1, 0});
        check_row(o, 2, {1.75, 0.75, 0.25, 2});  // (14,6,2,16) / 8
    }
    SECTION("norm: u / |u|") {
        const auto o = x.run(denominator_kind::norm);
        const double n0 = std::sqrt(20.0), n2 = std::sqrt(492.0);  // 196 + 36 + 4 + 256
        check_row(o, 0, {2 / n0, 4 / n0, 0, 0});
        check_row(o, 2, {14 / n2, 6 / n2, 2 / n2, 16 / n2});
    }
    SECTION("rmsnorm: gain u / sqrt(mean u^2)") {
        const double gain[4] = {1, 2, 1, 0.5};
        const auto o = x.run(denominator_kind::rmsnorm, gain);
        const double r2 = std::sqrt(123.0);                                   // mean square of u_2 = 492 / 4
        check_row(o, 1, {0, 2 * 2 / std::sqrt(2.0), 2 / std::sqrt(2.0), 0});  // mean square of u_1 = 8 / 4
        check_row(o, 2, {14 / r2, 2 * 6 / r2, 2 / r2, 0.5 * 16 / r2});
    }
    SECTION("layernorm: gain (u - mean) / std + bias") {
        const double params[8] = {1, 1, 1, 2, 0, 0, 0, 1};  // gain, then bias
        const auto o = x.run(denominator_kind::layernorm, params);
        // u_2: mean 9.5, deviations (4.5, -3.5, -7.5, 6.5), variance 131 / 4 = 32.75
        const double sd = std::sqrt(32.75);
        check_row(o, 2, {4.5 / sd, -3.5 / sd, -7.5 / sd, 2 * 6.5 / sd + 1});
    }
    SECTION("length: u / t") {
        const auto o = x.run(denominator_kind::length);
        check_row(o, 0, {2, 4, 0, 0});
        check_row(o, 1, {0, 1, 1, 0});
        check_row(o, 2, {14.0 / 3, 2, 2.0 / 3, 16.0 / 3});
    }
    SECTION("gate: g_t u / t") {
        const double g[3] = {0.5, 0.25, 0.75};
        const auto o = x.run(denominator_kind::gate, nullptr, g);
        check_row(o, 0, {1, 2, 0, 0});
        check_row(o, 2, {0.75 * 14 / 3, 0.75 * 2, 0.75 * 2 / 3, 0.75 * 16 / 3});
    }
    SECTION("none: u") {
        const auto o = x.run(denominator_kind::none);
        check_row(o, 2, {14, 6, 2, 16});
    }
    SECTION("taylor order 2 / softmax: w = 1 + s + s^2 / 2") {
        // w(0) = 1, w(2) = 5, w(4) = 13. t=1: (1 v_0 + 5 v_1) / 6; t=2: (5 v_0 + 5 v_1 + 13 v_2) / 23
        const auto o = x.run(denominator_kind::softmax, nullptr, nullptr, numerator_kind::taylor, 2);
        check_row(o, 1, {1.0 / 6, 7.0 / 6, 5.0 / 6, 0});
        check_row(o, 2, {44.0 / 23, 15.0 / 23, 5.0 / 23, 52.0 / 23});
    }
    SECTION("power order 2 / softmax: w = s^2 / 2") {
        // w(0) = 0, w(2) = 2, w(4) = 8. t=1: w_10 = 0, so o_1 = v_1; t=2: (2 v_0 + 2 v_1 + 8 v_2) / 12
        const auto o = x.run(denominator_kind::softmax, nullptr, nullptr, numerator_kind::power, 2);
        check_row(o, 0, {1, 2, 0, 0});
        check_row(o, 1, {0, 1, 1, 0});
        check_row(o, 2, {26.0 / 12, 6.0 / 12, 2.0 / 12, 32.0 / 12});
    }
    SECTION("power order 3 / none: w = s^3 / 6") {
        // w(0) = 0, w(2) = 4/3, w(4) = 32/3. t=2: 4/3 v_0 + 4/3 v_1 + 32/3 v_2
        const auto o = x.run(denominator_kind::none, nullptr, nullptr, numerator_kind::power, 3);
        check_row(o, 1, {0, 4.0 / 3, 4.0 / 3, 0});
        check_row(o, 2, {100.0 / 3, 4, 4.0 / 3, 128.0 / 3});
    }
    SECTION("elu1 / softmax: phi(x) = x + 1 for x > 0, exp(x) otherwise") {
        // phi(k_0) = (3,1,1,1), phi(k_1) = (1,3,1,1), phi(k_2) = (3,3,1,1)
        // t=1: w_10 = 3+3+1+1 = 8, w_11 = 1+9+1+1 = 12 -> (8 v_0 + 12 v_1) / 20
        const auto o = x.run(denominator_kind::softmax, nullptr, nullptr, numerator_kind::elu1);
        check_row(o, 1, {0.4, 28.0 / 20, 12.0 / 20, 0});
    }
}

TEST_CASE("Taylor kernel by Horner equals the explicit sum; order 12 is close to exp", "[attention]") {
    for (int order = 1; order <= 12; ++order) {
        attention_config cfg = variant(numerator_kind::taylor, denominator_kind::softmax, order);
        auto kernel = make_score_kernel<double>(cfg);
        const double s[4] = {-2.0, -0.5, 0.7, 3.0};
        double w[4];
        kernel->forward_row(w, s, 4);
        for (int i = 0; i < 4; ++i) {
            double sum = 0, term = 1;
            for (int m = 0; m <= order; ++m) {
                sum += term;
                term *= s[i] / (m + 1);
            }
            CHECK(w[i] == Approx(sum).epsilon(1e-14));
        }
        if (order == 12) CHECK(w[3] == Approx(std::exp(3.0)).epsilon(1e-4));
    }
}

TEST_CASE("power kernel: s^n / n! and its derivative s^(n-1) / (n-1)!, finite where s^n and n! are not",
          "[attention]") {
    for (int order = 1; order <= 12; ++order) {
        INFO("order " << order);
        auto kernel = make_score_kernel<double>(variant(numerator_kind::power, denominator_kind::none, order));
        const double s[4] = {-2.0, -0.5, 0.7, 3.0};
        double w[4], ds[4];
        const double dw[4] = {1, 1, 1, 1};
        kernel->forward_row(w, s, 4);
        kernel->backward_row(ds, dw, s, w, 4);
        for (int i = 0; i < 4; ++i) {
            CHECK(w[i] == Approx(std::pow(s[i], order) / std::tgamma(order + 1.0)).epsilon(1e-13));
            CHECK(ds[i] == Approx(std::pow(s[i], order - 1) / std::tgamma(order)).epsilon(1e-13));
        }
    }
    // Order 171 at |s| = 100: 100^171 and 171! both overflow a double, their
    // quotient (about 10^32.9) does not.
    auto kernel = make_score_kernel<double>(variant(numerator_kind::power, denominator_kind::none, 171));
    const double s[2] = {100.0, -100.0};
    double w[2];
    kernel->forward_row(w, s, 2);
    const double expected = std::exp(171 * std::log(100.0) - std::lgamma(172.0));
    CHECK(std::isinf(std::pow(100.0, 171)));
    CHECK(w[0] == Approx(expected).epsilon(1e-10));
    CHECK(w[1] == Approx(-expected).epsilon(1e-10));
}

namespace {
// forward_row_padded against forward_row on rows of 1..width entries whose
// masked tail holds large scores (exp of them would overflow a float, and a
// row max taken over them would change every weight).
template <class T>
void check_padded_rows(const attention_config& cfg, int width) {
    auto kernel = make_score_kernel<T>(cfg);
    rng r(5);
    std::vector<T> s(width), w(width), expected(width);
    for (int n = 1; n <= width; ++n) {
        INFO("n " << n << " of " << width);
        for (int j = 0; j < width; ++j) s[j] = j < n ? static_cast<T>(3 * r.normal()) : T(200);
        kernel->forward_row(expected.data(), s.data(), n);
        std::fill(w.begin(), w.end(), T(-1));
        kernel->forward_row_padded(w.data(), s.data(), n, width);
        // float: the vector loop and its scalar tail may round exp 1 ulp apart
        const double tol = std::is_same_v<T, float> ? 3e-7 : 0.0;
        for (int j = 0; j < n; ++j) CHECK(w[j] == Approx(expected[j]).epsilon(tol).margin(0));
        for (int j = n; j < width; ++j) CHECK(w[j] == T(0));

        // backward: dz added to dw, then backward_row on the first n, zeros after
        std::vector<T> dw(width), ds_expected(width, T(0)), ds(width);
        for (auto& v : dw) v = static_cast<T>(r.normal());
        const T dz = static_cast<T>(r.normal());
        std::vector<T> dw_plus(dw);
        for (int j = 0; j < n; ++j) dw_plus[j] += dz;
        kernel->backward_row(ds_expected.data(), dw_plus.data(), s.data(), w.data(), n);
        ds = dw;  // in place, as the attention layer calls it
        kernel->backward_row_padded(ds.data(), ds.data(), dz, s.data(), w.data(), n, width);
        // float: the exp kernel sums its row-max term in vector lanes, another order
        const double dtol = std::is_same_v<T, float> ? 1e-5 : 0.0;
        for (int j = 0; j < n; ++j) CHECK(ds[j] == Approx(ds_expected[j]).epsilon(dtol).margin(dtol));
        for (int j = n; j < width; ++j) CHECK(ds[j] == T(0));
    }
}
}  // namespace

TEST_CASE("score kernels on a padded row: forward_row and backward_row on the first n, then zeros", "[attention]") {
    for (const auto& a : every_variant(1, 3)) {
        if (traits_of(a.numerator).family != numerator_family::score_kernel) continue;
        INFO(describe(a));
        for (int width : {1, 16, 37, 64}) {
            check_padded_rows<float>(a, width);
            check_padded_rows<double>(a, width);
        }
    }
}
