// The variant table is consistent: a row per enum value with a name that
// round-trips, and every trait agrees with what the kernels and denominators
// of variants.cpp actually do (so a wrong row fails here, not in a run).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "attnlab/attention/attention.hpp"
#include "attnlab/attention/recurrent.hpp"
#include "support/gradcheck.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {

// The orders a row is checked at: 1..20 (the spec's range) if it takes one.
std::vector<int> checked_orders(numerator_kind n) { return orders_of(n, 1, 20); }

// Weights w_tj of one numerator for a spread of inputs: a score kernel on
// scores in [-30, 30] (an odd Taylor polynomial of order n <= 20 is negative
// somewhere in [-n, 0]);
// a feature map on phi(q).phi(k) of random q, k (HS 4). The denominator is
// `none`, so that exp takes no row max.
std::vector<double> sample_weights(numerator_kind n, int order) {
    const attention_config a = variant_config(n, denominator_kind::none, order);
    std::vector<double> w;
    if (auto kernel = make_score_kernel<double>(a)) {
        std::vector<double> s;
        for (int i = 0; i <= 1200; ++i) s.push_back(-30.0 + 0.05 * i);
        w.resize(s.size());
        kernel->forward_row(w.data(), s.data(), static_cast<int>(s.size()));
        return w;
    }
    auto map = make_feature_map<double>(a);
    REQUIRE(map);
    rng r(3);
    const int HS = 4;
    for (int i = 0; i < 400; ++i) {
        const vec q = random_vector(HS, r, i < 200 ? 1.0 : 30.0), k = random_vector(HS, r, i < 200 ? 1.0 : 30.0);
        vec pq(HS), pk(HS);
        map->forward(pq.data(), q.data(), HS);
        map->forward(pk.data(), k.data(), HS);
        w.push_back(dot(pq, pk));
    }
    return w;
}

}  // namespace

TEST_CASE("variant table: a row per enum value, in order, with names that round-trip", "[variants]") {
    std::set<std::string> names;
    for (int i = 0; i < numerator_count; ++i) {
        const auto n = static_cast<numerator_kind>(i);
        const numerator_traits& row = traits_of(n);
        INFO("numerator " << i << " " << row.name);
        CHECK(row.kind == n);
        CHECK(&row == &numerator_rows()[i]);
        CHECK(std::string(to_string(n)) == row.name);
        CHECK(numerator_from_name(row.name) == n);
        CHECK(names.insert(row.name).second);
        CHECK(std::string(row.summary).size() > 0);
    }
    for (int i = 0; i < denominator_count; ++i) {
        const auto d = static_cast<denominator_kind>(i);
        const denominator_traits& row = traits_of(d);
        INFO("denominator " << i << " " << row.name);
        CHECK(row.kind == d);
        CHECK(&row == &denominator_rows()[i]);
        CHECK(std::string(to_string(d)) == row.name);
        CHECK(denominator_from_name(row.name) == d);
        CHECK(names.insert(row.name).second);  // no name is both a numerator and a denominator
        CHECK(std::string(row.summary).size() > 0);
    }
    CHECK(all_numerators.size() == static_cast<std::size_t>(numerator_count));
    CHECK(all_denominators.size() == static_cast<std::size_t>(denominator_count));
    CHECK_FALSE(numerator_from_name("softmax"));
    CHECK_FALSE(numerator_from_name("Exp"));
    CHECK_FALSE(denominator_from_name(""));
    CHECK(std::string(to_string(static_cast<numerator_kind>(numerator_count))) == "?");
    CHECK(std::string(to_string(static_cast<denominator_kind>(denominator_count))) == "?");
}

TEST_CASE("variant table: every row has its kernel factory (and a numerator its sign and terms)", "[variants]") {
    for (int i = 0; i < numerator_count; ++i) {
        const numerator_traits& row = numerator_rows()[i];
        INFO("numerator " << row.name);
        CHECK(row.kernels != nullptr);
        CHECK(row.sign != nullptr);
        CHECK(row.terms != nullptr);
    }
    for (int i = 0; i < denominator_count; ++i) {
        INFO("denominator " << denominator_rows()[i].name);
        CHECK(denominator_rows()[i].kernels != nullptr);
    }
}

TEST_CASE("variant table: each numerator's family is the factory that makes it", "[variants]") {
    for (auto n : all_numerators)
        for (int order : checked_orders(n)) {
            const attention_config a = variant_config(n, denominator_kind::softmax, order);
            INFO(describe(a));
            const bool score = traits_of(n).family == numerator_family::score_kernel;
            CHECK(is_score_kernel(n) == score);
            CHECK(static_cast<bool>(make_score_kernel<double>(a)) == score);
            CHECK(static_cast<bool>(make_feature_map<double>(a)) == !score);
        }
}

TEST_CASE("variant table: takes_order means the kernel needs order >= 1", "[variants]") {
    for (auto n : all_numerators) {
        INFO(to_string(n));
        attention_config a = variant_config(n, denominator_kind::softmax);
        a.order = 0;
        if (takes_order(n))
            CHECK_THROWS_WITH(make_score_kernel<double>(a), std::string(to_string(n)) + " needs order >= 1");
        else
            CHECK_NOTHROW(make_score_kernel<double>(a));
    }
}

TEST_CASE("variant table: the finite state and its Taylor terms", "[variants][recurrent]") {
    for (auto n : all_numerators)
        for (int order : checked_orders(n)) {
            const numerator_traits& row = traits_of(n);
            const attention_config a = variant_config(n, denominator_kind::softmax, order);
            INFO(describe(a));
            CHECK(has_finite_state(a) == row.finite_state);
            // a feature map has no key/value cache form
            CHECK((row.family == numerator_family::score_kernel || row.finite_state));
            if (row.family != numerator_family::score_kernel || !row.finite_state) continue;
            const series_terms terms = row.terms(order);
            REQUIRE_FALSE(terms.empty());
            CHECK(terms.front().power >= 0);
            for (std::size_t k = 1; k < terms.size(); ++k) CHECK(terms[k].power > terms[k - 1].power);
            // The terms sum to the kernel's weight, sum_k c_k s^p_k / p_k! = f(s),
            // and their derivative to its backward.
            const auto kernel = make_score_kernel<double>(a);
            for (double s : {-2.5, -0.3, 0.0, 0.8, 3.0}) {
                double series = 0, slope = 0;
                for (const series_term& t : terms) {
                    series += t.coefficient * std::pow(s, t.power) / std::tgamma(t.power + 1.0);
                    if (t.power >= 1) slope += t.coefficient * std::pow(s, t.power - 1) / std::tgamma(t.power + 0.0);
                }
                double w = 0, ds = 0, dw = 1;
                kernel->forward_row(&w, &s, 1);
                kernel->backward_row(&ds, &dw, &s, &w, 1);
                CHECK(w == Approx(series).epsilon(1e-12).margin(1e-300));
                CHECK(ds == Approx(slope).epsilon(1e-12).margin(1e-300));
            }
        }
}

TEST_CASE("variant table: the weight sign by order is what the kernel gives", "[variants]") {
    for (auto n : all_numerators)
        for (int order : checked_orders(n)) {
            const attention_config a = variant_config(n, denominator_kind::softmax, order);
            INFO(describe(a));
            const std::vector<double> w = sample_weights(n, order);
            const double lowest = *std::min_element(w.begin(), w.end());
            switch (traits_of(n).sign(order)) {
                case weight_sign::positive: CHECK(lowest > 0); break;
                case weight_sign::non_negative: CHECK(lowest >= 0); break;
                case weight_sign::any: CHECK(lowest < 0); break;  // signed for real: the table is not too cautious
            }
            // softmax adds eps exactly for the weights that may all be 0
            const auto den = make_denominator<double>(a);
            CHECK((den->weight_sum_offset() > 0) == (traits_of(n).sign(order) == weight_sign::non_negative));
        }
}

TEST_CASE("variant table: each denominator's traits are what its class does", "[variants]") {
    const int HS = 4;
    rng r(9);
    const vec u = random_vector(HS, r);
    for (auto d : all_denominators) {
        const denominator_traits& row = traits_of(d);
        INFO(row.name);
        attention_config a = variant_config(numerator_kind::exp, d);
        a.eps = 1e-12;
        const auto den = make_denominator<double>(a);
        CHECK(den->param_count(HS) == row.out_norm_params * HS);
        vec params(den->param_count(HS));
        for (auto& p : params) p = 1.0 + 0.3 * r.normal();
        auto out = [&](const vec& uu, double z, int count) {
            vec o(HS);
            den->forward_row(o.data(), uu.data(), z, count, params.data(), HS);
            return o;
        };
        // uses_weight_sum: the output depends on z_t
        CHECK((relative_error(out(u, 1.5, 3), out(u, 4.0, 3)) > 1e-3) == row.uses_weight_sum);
        // scale_invariant: (3u, 3z) gives the output of (u, z)
        vec u3 = u;
        for (auto& x : u3) x *= 3;
        CHECK((relative_error(out(u, 1.5, 3), out(u3, 4.5, 3)) < 1e-9) == row.scale_invariant);
        // has_output_gate: the layer applies an output gate without out_gate
        CHECK(attention_layer<double>(a, 1, HS).has_out_gate() == row.has_output_gate);
        CHECK(uses_out_gate(a) == row.has_output_gate);
        // detachable: detach_denominator stops the gradient through z_t (only a denominator that uses z has one)
        CHECK((!row.detachable || row.uses_weight_sum));
        if (row.detachable) {
            a.detach_denominator = true;
            const auto detached = make_denominator<double>(a);
            vec du(HS);
            const vec dout = random_vector(HS, r);
            CHECK(den->backward_row(du.data(), nullptr, dout.data(), u.data(), 1.5, 3, params.data(), HS) != 0);
            CHECK(detached->backward_row(du.data(), nullptr, dout.data(), u.data(), 1.5, 3, params.data(), HS) == 0);
        }
    }
}

TEST_CASE("variant table: a row's sign depends on the order's parity alone (as variants --json writes it)",
          "[variants]") {
    for (auto n : all_numerators) {
        INFO(to_string(n));
        const numerator_traits& row = traits_of(n);
        for (int order = 1; order <= 200; ++order) CHECK(row.sign(order) == row.sign(2 - order % 2));
    }
}

TEST_CASE("series kernel: any row's series, as the row's own kernel computes it", "[variants]") {
    for (auto n : all_numerators)
        for (int order : checked_orders(n)) {
            const attention_config a = variant_config(n, denominator_kind::softmax, order);
            if (!is_score_kernel(n) || !traits_of(n).finite_state) continue;
            INFO(describe(a));
            const auto own = make_score_kernel<double>(a);
            const auto series = series_kernels.score_double(a);
            const std::vector<double> s = {-2.5, -0.3, 0.0, 0.8, 3.0};
            std::vector<double> w1(s.size()), w2(s.size()), ds1(s.size()), ds2(s.size()), dw = {1, -2, 0.5, 3, 1};
            own->forward_row(w1.data(), s.data(), 5);
            series->forward_row(w2.data(), s.data(), 5);
            own->backward_row(ds1.data(), dw.data(), s.data(), w1.data(), 5);
            series->backward_row(ds2.data(), dw.data(), s.data(), w2.data(), 5);
            for (std::size_t j = 0; j < s.size(); ++j) {
                CHECK(w2[j] == Approx(w1[j]).epsilon(1e-12).margin(1e-300));
                CHECK(ds2[j] == Approx(ds1[j]).epsilon(1e-12).margin(1e-300));
            }
        }
}
