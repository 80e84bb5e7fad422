// The rows of the variant table (see the header). What each row computes is
// in docs/attention.md; the kernels and the factories the rows point to are
// in variants.cpp.
#include "attnlab/attention/variant_table.hpp"

#include <array>

#include "attnlab/attention/variants.hpp"

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

// Unnamed fields keep their defaults (variant_table.hpp): takes_order false,
// finite_state true; a denominator uses no z, is not scale-invariant, has no
// output gate, is not detachable and has no parameters.
constexpr std::array<numerator_traits, numerator_count> numerators{{
    {.kind = numerator_kind::exp,
     .name = "exp",
     .family = nf::score_kernel,
     .finite_state = false,
     .sign = always_positive,
     .terms = no_terms,
     .summary = "exp(s)",
     .kernels = &exp_kernels},
    {.kind = numerator_kind::taylor,
     .name = "taylor",
     .family = nf::score_kernel,
     .takes_order = true,
     .sign = taylor_sign,
     .terms = taylor_up_to_order,
     .summary = "sum_{m=0..n} s^m / m!",
     .kernels = &taylor_kernels},
    {.kind = numerator_kind::linear,
     .name = "linear",
     .family = nf::score_kernel,
     .sign = always_signed,
     .terms = first_order_only,
     .summary = "s",
     .kernels = &linear_kernels},
    {.kind = numerator_kind::elu1,
     .name = "elu1",
     .family = nf::feature_map,
     .sign = always_non_negative,
     .terms = first_order_only,
     .summary = "phi(q).phi(k), phi(x) = elu(x) + 1",
     .kernels = &elu1_kernels},
    {.kind = numerator_kind::relu,
     .name = "relu",
     .family = nf::feature_map,
     .sign = always_non_negative,
     .terms = first_order_only,
     .summary = "phi(q).phi(k), phi(x) = max(x, 0)",
     .kernels = &relu_kernels},
    {.kind = numerator_kind::cosine,
     .name = "cosine",
     .family = nf::feature_map,
     .sign = always_signed,
     .terms = first_order_only,
     .summary = "phi(q).phi(k), phi(x) = x / max(|x|, eps)",
     .kernels = &cosine_kernels},
    {.kind = numerator_kind::power,
     .name = "power",
     .family = nf::score_kernel,
     .takes_order = true,
     .sign = power_sign,
     .terms = order_term_only,
     .summary = "s^n / n!",
     .kernels = &power_kernels},
}};

constexpr std::array<denominator_traits, denominator_count> denominators{{
    {.kind = denominator_kind::softmax,
     .name = "softmax",
     .uses_weight_sum = true,
     .scale_invariant = true,
     .detachable = true,
     .summary = "u / z (+ eps for non-negative weights)",
     .kernels = &softmax_kernels},
    {.kind = denominator_kind::norm,
     .name = "norm",
     .scale_invariant = true,
     .summary = "u / max(|u|, eps)",
     .kernels = &norm_kernels},
    {.kind = denominator_kind::rmsnorm,
     .name = "rmsnorm",
     .scale_invariant = true,
     .out_norm_params = 1,
     .summary = "gain * u / sqrt(mean(u^2) + eps)",
     .kernels = &rmsnorm_kernels},
    {.kind = denominator_kind::layernorm,
     .name = "layernorm",
     .scale_invariant = true,
     .out_norm_params = 2,
     .summary = "gain * (u - mean) / sqrt(var + eps) + bias",
     .kernels = &layernorm_kernels},
    {.kind = denominator_kind::gate,
     .name = "gate",
     .has_output_gate = true,
     .summary = "out_gate(x) * u / t",
     .kernels = &length_kernels},  // u / t; the layer applies the output gate
    {.kind = denominator_kind::length, .name = "length", .summary = "u / t", .kernels = &length_kernels},
    {.kind = denominator_kind::none, .name = "none", .summary = "u", .kernels = &identity_kernels},
}};

constexpr bool variant_rows_in_enum_order() {
    for (int i = 0; i < numerator_count; ++i)
        if (static_cast<int>(numerators[i].kind) != i) return false;
    for (int i = 0; i < denominator_count; ++i)
        if (static_cast<int>(denominators[i].kind) != i) return false;
    return true;
}
static_assert(variant_rows_in_enum_order(), "variant table: one row per enum value, in enum order");
// A row without its kernel factory, sign or terms fails to compile through
// -Wmissing-field-initializers (designated initializers, -Werror in CI) and
// fails test_variant_table; it cannot be a static_assert, because comparing
// another file's object address with null is no constant expression under
// the sanitizers (-fsanitize=null).
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
