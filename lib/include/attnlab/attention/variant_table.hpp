// The attention variants as one table: a row per numerator and per
// denominator with its YAML name and every trait that code outside the
// variant's own kernel needs (the spec schema, the parameter layout, the
// memory estimate, the recurrent form, the tests' lists). Consumers read a
// row instead of switching on the enum, so a new variant is a new enum value,
// a new row here and its kernel in variants.cpp; a missing row fails the
// table's static_assert, a missing kernel the factory's -Wswitch.
//
// Adding a numerator (a denominator likewise):
//   1. its enum value, at the end, and numerator_count (below);
//   2. its row in variant_table.cpp (name, family, order, state, sign, terms);
//   3. its kernel class in variants.cpp and its case in both factories;
//   4. its maths in reference/model.py (the independent PyTorch reference)
//      and in docs/spec-reference.md.
// The tests' variant lists, the recurrent form, the parameter layout and the
// PyTorch cross-check's cases all come from the rows: nothing else to edit.
//
// This header depends on nothing else in attnlab: the run configuration
// (config/run_config.hpp, the lowest layer) includes it for the two enums.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace attnlab {

enum class numerator_kind { exp, taylor, linear, elu1, relu, cosine, power };
enum class denominator_kind { softmax, norm, rmsnorm, layernorm, gate, length, none };

inline constexpr int numerator_count = 7;
inline constexpr int denominator_count = 7;

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

// Taylor terms m = first..last of the exact recurrent form of a score kernel
// (phi_m(q) . phi_m(k) = s^m / m!); feature maps are the m = 1 case with phi.
struct taylor_terms {
    int first = 0, last = 0;
};

struct numerator_traits {
    numerator_kind kind;
    const char* name;  // the YAML value
    numerator_family family;
    bool takes_order;  // `attention.order: n` (n >= 1) required, else refused
    // Fixed-size recurrent state when not clamped (exp keeps a key/value cache).
    bool finite_state;
    weight_sign (*sign)(int order);
    // Score kernels with a finite state: the Taylor terms of the state.
    taylor_terms (*terms)(int order);
    const char* summary;  // one line: what w_tj is
};

struct denominator_traits {
    denominator_kind kind;
    const char* name;      // the YAML value
    bool uses_weight_sum;  // divides by z_t = sum_j w_tj (softmax)
    bool scale_invariant;  // o unchanged when u and z are scaled: exp subtracts the row max
    bool has_output_gate;  // adds the per-head output gate (gate): `out_gate` is refused with it
    bool detachable;       // `detach_denominator` allowed
    int out_norm_params;   // learnable vectors of size HS shared by heads: 0, 1 (gain) or 2 (gain, bias)
    const char* summary;   // one line: what o_t is
};

const numerator_traits& traits_of(numerator_kind n);
const denominator_traits& traits_of(denominator_kind d);

// Rows by YAML name; nullopt for an unknown name.
std::optional<numerator_kind> numerator_from_name(std::string_view name);
std::optional<denominator_kind> denominator_from_name(std::string_view name);

// YAML names ("?" for a value outside the enum, which ends the loops that list them).
const char* to_string(numerator_kind n);
const char* to_string(denominator_kind d);

// Every row, in enum order (the tests' variant lists iterate these).
const numerator_traits* numerator_rows();      // numerator_count rows
const denominator_traits* denominator_rows();  // denominator_count rows

}  // namespace attnlab
