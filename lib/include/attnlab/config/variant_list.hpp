// The attention variants, registered once: one row per numerator and one per
// denominator (docs/attention.md, "Adding a variant"). Everything else is
// derived from these rows: the enums and their counts (kinds.hpp), the
// variant table with its names, parsing and traits (attention/
// variant_table.cpp), the kernels' declarations (attention/variants.hpp),
// the label of a variant (variant_table.hpp) and `attnlab variants --json`,
// which the Python package, the figures, the fuzz dictionary and the docs
// are checked against.
//
// The list sits in the lowest layer that names a variant (lib/README.md:
// config), so its rules are plain functions of the order; the kernels a row
// names (`taylor` -> taylor_kernels) are defined in attention/variants.cpp
// and only the attention layer expands that column.
#pragma once
#include <vector>

namespace attnlab {

// How the numerator's weight w_tj is made.
enum class numerator_family {
    score_kernel,  // w = f(s), s = q.k / sqrt(HS), optionally clamped
    feature_map,   // w = phi(q) . phi(k)
};

// The sign of the weights w_tj over all real inputs.
enum class weight_sign {
    positive,      // > 0 (exp, even Taylor polynomials): a softmax sum never vanishes
    non_negative,  // >= 0, may be exactly 0 (relu, elu1 after underflow): softmax adds eps
    any,           // signed (linear, cosine, odd orders): a softmax sum can cross zero
};

// One term of a numerator's series, coefficient * s^power / power!: the
// exact recurrent and chunked forms keep one state per term, with features
// phi_p(q) . phi_p(k) = s^p / p! and the coefficient on the query's side.
// A feature map is the single term (1, 1) with phi in place of q / d^(1/4).
struct series_term {
    int power = 0;
    double coefficient = 1;
};
using series_terms = std::vector<series_term>;  // increasing powers

// An order-taking numerator's orders start here (order 0 of taylor or power
// is the constant 1: no attention). Their highest order depends on the
// purpose: spec/overrides.hpp's training and evaluation limits.
inline constexpr int lowest_order = 1;

// The rules a row names: its weights' sign and its series at an order.
namespace variant_rules {
inline weight_sign always_positive(int) { return weight_sign::positive; }
inline weight_sign always_non_negative(int) { return weight_sign::non_negative; }
inline weight_sign always_signed(int) { return weight_sign::any; }
// A truncated exp series of even order is positive for every real score.
inline weight_sign positive_at_even_order(int order) {
    return order % 2 == 0 ? weight_sign::positive : weight_sign::any;
}
// s^n / n! alone: even orders are >= 0 but vanish at s = 0, odd ones are signed.
inline weight_sign vanishing_at_even_order(int order) {
    return order % 2 == 0 ? weight_sign::non_negative : weight_sign::any;
}

inline series_terms no_terms(int) { return {}; }  // no finite state (exp keeps a key/value cache)
inline series_terms first_power(int) { return {{1, 1}}; }
inline series_terms order_power(int order) { return {{order, 1}}; }
inline series_terms powers_up_to_order(int order) {
    series_terms t;
    for (int p = 0; p <= order; ++p) t.push_back({p, 1});
    return t;
}
}  // namespace variant_rules

// X(name, family, takes_order, finite_state, sign, terms, kernels, summary):
//   name          the enum value and the YAML value
//   family        numerator_family
//   takes_order   `attention.order: n` required, else refused
//   finite_state  a fixed-size recurrent state when not clamped
//   sign, terms   variant_rules: the sign of w and the series, at an order
//   kernels       <kernels>_kernels in attention/variants.cpp
//   summary       one line: what w_tj is
// clang-format off
#define ATTNLAB_NUMERATORS(X)                                                                                       \
    X(exp,    score_kernel, false, false, always_positive,         no_terms,           exp,    "exp(s)")           \
    X(taylor, score_kernel, true,  true,  positive_at_even_order,  powers_up_to_order, taylor, "sum_{m=0..n} s^m / m!") \
    X(linear, score_kernel, false, true,  always_signed,           first_power,        linear, "s")                \
    X(elu1,   feature_map,  false, true,  always_non_negative,     first_power,        elu1,   "phi(q).phi(k), phi(x) = elu(x) + 1") \
    X(relu,   feature_map,  false, true,  always_non_negative,     first_power,        relu,   "phi(q).phi(k), phi(x) = max(x, 0)") \
    X(cosine, feature_map,  false, true,  always_signed,           first_power,        cosine, "phi(q).phi(k), phi(x) = x / max(|x|, eps)") \
    X(power,  score_kernel, true,  true,  vanishing_at_even_order, order_power,        power,  "s^n / n!")

// X(name, uses_weight_sum, scale_invariant, has_output_gate, detachable, out_norm_params, kernels, summary):
//   uses_weight_sum  divides by z_t = sum_j w_tj
//   scale_invariant  o unchanged when u and z are scaled: exp subtracts the row max
//   has_output_gate  adds the per-head output gate: `out_gate` is refused with it
//   detachable       `detach_denominator` allowed
//   out_norm_params  learnable vectors of size HS shared by heads: 0, 1 (gain) or 2 (gain, bias)
//   kernels          <kernels>_kernels in attention/variants.cpp (gate: length's, the layer applies the gate)
#define ATTNLAB_DENOMINATORS(X)                                                                          \
    X(softmax,   true,  true,  false, true,  0, softmax,   "u / z (+ eps for non-negative weights)")     \
    X(norm,      false, true,  false, false, 0, norm,      "u / max(|u|, eps)")                          \
    X(rmsnorm,   false, true,  false, false, 1, rmsnorm,   "gain * u / sqrt(mean(u^2) + eps)")           \
    X(layernorm, false, true,  false, false, 2, layernorm, "gain * (u - mean) / sqrt(var + eps) + bias") \
    X(gate,      false, false, true,  false, 0, length,    "out_gate(x) * u / t")                        \
    X(length,    false, false, false, false, 0, length,    "u / t")                                      \
    X(none,      false, false, false, false, 0, identity,  "u")
// clang-format on

}  // namespace attnlab
