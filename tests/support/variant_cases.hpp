// The attention variants of SPEC §2 as test cases: every numerator, every
// denominator, and a readable name for a configuration (INFO lines).
#pragma once
#include <sstream>
#include <string>

#include "attnlab/config/run_config.hpp"

namespace attnlab::test {

inline const numerator_kind all_numerators[] = {numerator_kind::exp,  numerator_kind::taylor, numerator_kind::linear,
                                                numerator_kind::elu1, numerator_kind::relu,   numerator_kind::cosine};
inline const denominator_kind all_denominators[] = {
    denominator_kind::softmax, denominator_kind::norm,   denominator_kind::rmsnorm, denominator_kind::layernorm,
    denominator_kind::gate,    denominator_kind::length, denominator_kind::none};

inline std::string describe(const attention_config& a) {
    std::ostringstream s;
    s << to_string(a.numerator);
    if (a.numerator == numerator_kind::taylor) s << " order " << a.order;
    s << " / " << to_string(a.denominator);
    if (a.clamp) s << " clamp " << *a.clamp;
    if (a.in_gate) s << " in_gate";
    if (a.out_gate) s << " out_gate";
    if (a.detach_denominator) s << " detach";
    return s.str();
}

}  // namespace attnlab::test
