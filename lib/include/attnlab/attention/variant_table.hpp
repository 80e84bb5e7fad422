// The attention variants as one table: a row per numerator and per
// denominator with its YAML name, every trait that code outside the
// variant's own kernel needs (the spec schema, the parameter layout, the
// memory estimate, the recurrent form, the tests' lists) and the factory of
// its kernel. Consumers read a row instead of switching on the enum, so a new
// variant is a new enum value (config/kinds.hpp), a new row here and its
// kernel in variants.cpp: docs/attention.md, "Adding a variant". A missing
// row or factory fails the table's static_asserts.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

#include "attnlab/config/kinds.hpp"

namespace attnlab {

// A variant's kernel factories (variants.hpp defines them; each row points to
// its own).
struct numerator_kernels;
struct denominator_kernels;

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

// A row is written with designated initializers (variant_table.cpp); the
// fields without a default must be given.
struct numerator_traits {
    numerator_kind kind;
    const char* name;  // the YAML value
    numerator_family family;
    bool takes_order = false;  // `attention.order: n` (n >= 1) required, else refused
    // Fixed-size recurrent state when not clamped (exp keeps a key/value cache).
    bool finite_state = true;
    weight_sign (*sign)(int order);
    // Score kernels with a finite state: the Taylor terms of the state.
    taylor_terms (*terms)(int order);
    const char* summary;               // one line: what w_tj is
    const numerator_kernels* kernels;  // the factory of its kernel (variants.cpp)
};

struct denominator_traits {
    denominator_kind kind;
    const char* name;                    // the YAML value
    bool uses_weight_sum = false;        // divides by z_t = sum_j w_tj (softmax)
    bool scale_invariant = false;        // o unchanged when u and z are scaled: exp subtracts the row max
    bool has_output_gate = false;        // adds the per-head output gate (gate):
                                         // `out_gate` is refused with it
    bool detachable = false;             // `detach_denominator` allowed
    int out_norm_params = 0;             // learnable vectors of size HS shared by heads: 0, 1
                                         // (gain) or 2 (gain, bias)
    const char* summary;                 // one line: what o_t is
    const denominator_kernels* kernels;  // the factory of its denominator (variants.cpp)
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
