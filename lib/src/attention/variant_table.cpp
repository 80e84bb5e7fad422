// The rows of the variant table (see the header). What each row computes is
// in docs/attention.md; the kernels are in variants.cpp.
#include "attnlab/attention/variant_table.hpp"

#include <array>

namespace attnlab {

namespace {

using nf = numerator_family;
using ws = weight_sign;

constexpr weight_sign always_positive(int) { return ws::positive; }
constexpr weight_sign always_non_negative(int) { return ws::non_negative; }
constexpr weight_sign always_signed(int) { return ws::any; }
// A truncated exp series of even order is positive for every real score.
constexpr weight_sign taylor_sign(int order) { return order % 2 == 0 ? ws::positive : ws::any; }
// s^n / n! alone: even orders are >= 0 but vanish at s = 0, odd ones are signed.
constexpr weight_sign power_sign(int order) { return order % 2 == 0 ? ws::non_negative : ws::any; }
constexpr taylor_terms no_terms(int) { return {}; }
constexpr taylor_terms taylor_up_to_order(int order) { return {0, order}; }
constexpr taylor_terms first_order_only(int) { return {1, 1}; }
constexpr taylor_terms order_term_only(int order) { return {order, order}; }

constexpr std::array<numerator_traits, numerator_count> numerators{{
    {numerator_kind::exp, "exp", nf::score_kernel, false, false, always_positive, no_terms, "exp(s)"},
    {numerator_kind::taylor, "taylor", nf::score_kernel, true, true, taylor_sign, taylor_up_to_order,
     "sum_{m=0..n} s^m / m!"},
    {numerator_kind::linear, "linear", nf::score_kernel, false, true, always_signed, first_order_only, "s"},
    {numerator_kind::elu1, "elu1", nf::feature_map, false, true, always_non_negative, first_order_only,
     "phi(q).phi(k), phi(x) = elu(x) + 1"},
    {numerator_kind::relu, "relu", nf::feature_map, false, true, always_non_negative, first_order_only,
     "phi(q).phi(k), phi(x) = max(x, 0)"},
    {numerator_kind::cosine, "cosine", nf::feature_map, false, true, always_signed, first_order_only,
     "phi(q).phi(k), phi(x) = x / max(|x|, eps)"},
    {numerator_kind::power, "power", nf::score_kernel, true, true, power_sign, order_term_only, "s^n / n!"},
}};

constexpr std::array<denominator_traits, denominator_count> denominators{{
    // kind, name, uses z, scale-invariant, output gate, detachable, out_norm params, summary
    {denominator_kind::softmax, "softmax", true, true, false, true, 0, "u / z (+ eps for non-negative weights)"},
    {denominator_kind::norm, "norm", false, true, false, false, 0, "u / max(|u|, eps)"},
    {denominator_kind::rmsnorm, "rmsnorm", false, true, false, false, 1, "gain * u / sqrt(mean(u^2) + eps)"},
    {denominator_kind::layernorm, "layernorm", false, true, false, false, 2,
     "gain * (u - mean) / sqrt(var + eps) + bias"},
    {denominator_kind::gate, "gate", false, false, true, false, 0, "out_gate(x) * u / t"},
    {denominator_kind::length, "length", false, false, false, false, 0, "u / t"},
    {denominator_kind::none, "none", false, false, false, false, 0, "u"},
}};

constexpr bool rows_in_enum_order() {
    for (int i = 0; i < numerator_count; ++i)
        if (static_cast<int>(numerators[i].kind) != i) return false;
    for (int i = 0; i < denominator_count; ++i)
        if (static_cast<int>(denominators[i].kind) != i) return false;
    return true;
}
static_assert(rows_in_enum_order(), "variant table: one row per enum value, in enum order");
static_assert(static_cast<int>(numerator_kind::power) + 1 == numerator_count, "numerator_count is stale");
static_assert(static_cast<int>(denominator_kind::none) + 1 == denominator_count, "denominator_count is stale");

}  // namespace

const numerator_traits& traits_of(numerator_kind n) { return numerators.at(static_cast<std::size_t>(n)); }
const denominator_traits& traits_of(denominator_kind d) { return denominators.at(static_cast<std::size_t>(d)); }

std::optional<numerator_kind> numerator_from_name(std::string_view name) {
    for (const auto& r : numerators)
        if (name == r.name) return r.kind;
    return std::nullopt;
}
std::optional<denominator_kind> denominator_from_name(std::string_view name) {
    for (const auto& r : denominators)
        if (name == r.name) return r.kind;
    return std::nullopt;
}

const char* to_string(numerator_kind n) {
    const auto i = static_cast<std::size_t>(n);
    return i < numerators.size() ? numerators[i].name : "?";
}
const char* to_string(denominator_kind d) {
    const auto i = static_cast<std::size_t>(d);
    return i < denominators.size() ? denominators[i].name : "?";
}

const numerator_traits* numerator_rows() { return numerators.data(); }
const denominator_traits* denominator_rows() { return denominators.data(); }

}  // namespace attnlab
