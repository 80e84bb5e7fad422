// The attention variants as one table: a row per numerator and per
// denominator with its YAML name, every trait that code outside the
// variant's own kernel needs (the spec schema, the parameter layout, the
// memory estimate, the recurrent form, the tests' lists) and the factory of
// its kernel. The rows are expanded from the one list of variants
// (config/variant_list.hpp): consumers read a row instead of switching on
// the enum, so a new variant is a row there (docs/attention.md, "Adding a
// variant").
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "attnlab/config/kinds.hpp"
#include "attnlab/config/run_config.hpp"

namespace attnlab {

// A variant's kernel factories (variants.hpp defines them; each row points to
// its own).
struct numerator_kernels;
struct denominator_kernels;

// A row of the list (variant_list.hpp says what each field means).
struct numerator_traits {
    numerator_kind kind;
    const char* name;  // the YAML value
    numerator_family family;
    bool takes_order;   // `attention.order: n` (n >= 1) required, else refused
    bool finite_state;  // fixed-size recurrent state when not clamped (exp keeps a key/value cache)
    weight_sign (*sign)(int order);
    // The series of the weights (score kernels with a finite state: their
    // exact state; feature maps: the single term (1, 1)); empty without one.
    series_terms (*terms)(int order);
    const char* summary;               // one line: what w_tj is
    const numerator_kernels* kernels;  // the factory of its kernel (variants.cpp)
};

struct denominator_traits {
    denominator_kind kind;
    const char* name;  // the YAML value
    bool uses_weight_sum;
    bool scale_invariant;
    bool has_output_gate;
    bool detachable;
    int out_norm_params;
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

// The series of a configuration's numerator at its order (its row's terms).
series_terms terms_of(const attention_config& a);
// The highest power of a series (0 for an empty one).
int highest_power(const series_terms& terms);

// A variant as every output names it: "exp/softmax", "taylor 4/softmax",
// "linear/norm", "exp clamp 5/softmax" (the order only where the numerator
// takes one). numerator_label is the part before the '/'; scripts/
// sweep_runs.py spells the same (checked by python/tests/test_variants.py).
std::string numerator_label(const attention_config& a);
std::string variant_label(const attention_config& a);

// The table as JSON, one row a line (variant_export.cpp): `attnlab variants
// --json`, which python/attnlab/variants.json holds and the docs, figures
// and fuzz dictionary are checked against (tests/tools/check_doc_facts.py).
std::string variants_json();

// Every row, in enum order (the tests' variant lists iterate these).
const numerator_traits* numerator_rows();      // numerator_count rows
const denominator_traits* denominator_rows();  // denominator_count rows

}  // namespace attnlab
