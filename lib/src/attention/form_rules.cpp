// Which variants have a finite state and a chunked form (recurrent.hpp,
// chunked.hpp): plain functions of the configuration and the variant table,
// kept apart from the kernels so the spec loader (and its fuzz target, which
// builds no model code) can ask them.
#include <string>

#include "attnlab/attention/chunked.hpp"
#include "attnlab/attention/recurrent.hpp"
#include "attnlab/attention/variant_table.hpp"

namespace attnlab {

bool has_finite_state(const attention_config& cfg) {
    const numerator_traits& row = traits_of(cfg.numerator);
    if (!row.finite_state) return false;
    return !(row.family == numerator_family::score_kernel && cfg.clamp.has_value());  // a clamp needs every score
}

std::string chunked_form_refusal(const attention_config& cfg) {
    const numerator_traits& row = traits_of(cfg.numerator);
    const std::string name = row.name;
    if (!row.finite_state)
        return "chunked form needs a finite state, and " + name + " has none (use quadratic or auto)";
    if (!has_finite_state(cfg))
        return "chunked form needs a finite state, and a clamped " + name + " has none (a clamp needs every score)";
    if (row.family == numerator_family::score_kernel && highest_power(terms_of(cfg)) > max_chunked_power)
        return "chunked form takes Taylor orders up to " + std::to_string(max_chunked_power) + ", got " + name +
               " order " + std::to_string(cfg.order);
    return "";
}

bool has_chunked_form(const attention_config& cfg) { return chunked_form_refusal(cfg).empty(); }

}  // namespace attnlab
