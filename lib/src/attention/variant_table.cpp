// The rows of the variant table (see the header), expanded from the list of
// variants (config/variant_list.hpp): one row per enum value, in enum order,
// by construction. What each row computes is in docs/attention.md; the
// kernels and the factories the rows point to are in variants.cpp.
#include "attnlab/attention/variant_table.hpp"

#include <algorithm>
#include <array>

#include "attnlab/attention/variants.hpp"
#include "attnlab/io/csv.hpp"

namespace attnlab {

namespace {

#define ATTNLAB_NUMERATOR_ROW(n, family, order, state, sign, terms, kernels, summary)                            \
    numerator_traits{numerator_kind::n,    #n,      numerator_family::family, order, state, variant_rules::sign, \
                     variant_rules::terms, summary, &kernels##_kernels},
#define ATTNLAB_DENOMINATOR_ROW(d, weight_sum, scale_invariant, output_gate, detachable, params, kernels, summary) \
    denominator_traits{denominator_kind::d, #d,     weight_sum, scale_invariant,   output_gate,                    \
                       detachable,          params, summary,    &kernels##_kernels},

constexpr std::array<numerator_traits, numerator_count> numerators{{ATTNLAB_NUMERATORS(ATTNLAB_NUMERATOR_ROW)}};
constexpr std::array<denominator_traits, denominator_count> denominators{
    {ATTNLAB_DENOMINATORS(ATTNLAB_DENOMINATOR_ROW)}};

#undef ATTNLAB_NUMERATOR_ROW
#undef ATTNLAB_DENOMINATOR_ROW

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

series_terms terms_of(const attention_config& a) { return traits_of(a.numerator).terms(a.order); }

int highest_power(const series_terms& terms) {
    int p = 0;
    for (const series_term& t : terms) p = std::max(p, t.power);
    return p;
}

std::string numerator_label(const attention_config& a) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict) about " " + std::string temporaries.
    std::string s = to_string(a.numerator);
    if (traits_of(a.numerator).takes_order) s.append(" ").append(std::to_string(a.order));
    if (a.clamp) s.append(" clamp ").append(attnlab::format_number(*a.clamp));
    return s;
}

std::string variant_label(const attention_config& a) {
    return numerator_label(a).append("/").append(to_string(a.denominator));
}

const numerator_traits* numerator_rows() { return numerators.data(); }
const denominator_traits* denominator_rows() { return denominators.data(); }

}  // namespace attnlab
