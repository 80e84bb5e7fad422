// The attention variants as test cases, generated from the variant table
// (variant_table.hpp): every numerator, every denominator, the orders an
// order-taking numerator is checked at, and a readable name for a
// configuration (INFO lines). A new row of the table is in every list here
// without an edit.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "attnlab/attention/variant_table.hpp"
#include "attnlab/config/run_config.hpp"

namespace attnlab::test {

inline const std::vector<numerator_kind> all_numerators = [] {
    std::vector<numerator_kind> v;
    for (int i = 0; i < numerator_count; ++i) v.push_back(numerator_rows()[i].kind);
    return v;
}();

inline const std::vector<denominator_kind> all_denominators = [] {
    std::vector<denominator_kind> v;
    for (int i = 0; i < denominator_count; ++i) v.push_back(denominator_rows()[i].kind);
    return v;
}();

inline bool takes_order(numerator_kind n) { return traits_of(n).takes_order; }

// The orders [first, last] of a numerator that takes one; {0} (no order) for the others.
inline std::vector<int> orders_of(numerator_kind n, int first, int last) {
    if (!takes_order(n)) return {0};
    std::vector<int> v;
    for (int order = first; order <= last; ++order) v.push_back(order);
    return v;
}

// The orders of an order-taking numerator whose series reaches a highest
// power in [lo, hi] ({0}, no order, for the others): a recurrent state's size
// follows the power, not the order (a series of even powers reaches 2n at
// order n). Orders are tried up to hi, as no row's highest power is below its order.
inline std::vector<int> orders_by_power(numerator_kind n, int lo, int hi) {
    if (!takes_order(n)) return {0};
    std::vector<int> v;
    for (int order = 1; order <= hi; ++order) {
        attention_config a;
        a.numerator = n;
        a.order = order;
        const int p = highest_power(terms_of(a));
        if (p >= lo && p <= hi) v.push_back(order);
    }
    return v;
}

// One configuration: `order` is set only for a numerator that takes one.
inline attention_config variant_config(numerator_kind n, denominator_kind d, int order = 2) {
    attention_config a;
    a.numerator = n;
    a.denominator = d;
    if (takes_order(n)) a.order = order;
    return a;
}

// Every numerator (at each of its orders in [first, last]) x every denominator.
inline std::vector<attention_config> every_variant(int first_order, int last_order) {
    std::vector<attention_config> v;
    for (auto n : all_numerators)
        for (int order : orders_of(n, first_order, last_order))
            for (auto d : all_denominators) v.push_back(variant_config(n, d, order));
    return v;
}

// Every numerator once, each with the next denominator in turn, so that
// every numerator and every denominator appear, in max(numerators,
// denominators) cases (a short list for the slower whole-model checks).
inline std::vector<attention_config> each_numerator_with_a_denominator(int order = 2) {
    std::vector<attention_config> v;
    for (std::size_t i = 0; i < all_numerators.size() || i < all_denominators.size(); ++i)
        v.push_back(variant_config(all_numerators[i % all_numerators.size()],
                                   all_denominators[i % all_denominators.size()], order));
    return v;
}

// Signed weights (the softmax sum z_t can cross zero): the row's sign at this order.
inline bool signed_weights(const attention_config& a) {
    return traits_of(a.numerator).sign(a.order) == weight_sign::any;
}

// Score kernels whose weights can be 0 without a constant term (power, even
// orders): a softmax sum z_t of the order of its eps makes u_t / (z_t + eps)
// too steep for a finite difference.
inline bool vanishing_score_weights(const attention_config& a) {
    const numerator_traits& row = traits_of(a.numerator);
    return row.family == numerator_family::score_kernel && row.sign(a.order) == weight_sign::non_negative;
}

// Whether the weights stay of order 1 at every order for random inputs:
// positive, or with the constant Taylor term 1 (z_t is then of the order of
// t). Without it (power) the weights of a high order are tiny, and a softmax
// sum z_t or a norm |u_t| near its eps is too steep for a finite difference:
// the high-order gradient checks then use the eps-free denominators length
// and none.
inline bool weights_of_order_one(const attention_config& a) {
    const numerator_traits& row = traits_of(a.numerator);
    return row.sign(a.order) == weight_sign::positive ||
           (row.family == numerator_family::score_kernel && row.finite_state && !row.terms(a.order).empty() &&
            row.terms(a.order).front().power == 0);
}

// The variant's label (variant_table.hpp) and the modifiers it leaves out.
inline std::string describe(const attention_config& a) {
    std::ostringstream s;
    s << variant_label(a);
    if (a.in_gate) s << " in_gate";
    if (a.out_gate) s << " out_gate";
    if (a.detach_denominator) s << " detach";
    return s.str();
}

// Taylor 2 with the rmsnorm denominator and both gates: parameters whose
// gradients sum over heads, shards and micro-batches.
inline attention_config gated_taylor_rmsnorm() {
    attention_config a;
    a.numerator = numerator_kind::taylor;
    a.order = 2;
    a.denominator = denominator_kind::rmsnorm;
    a.in_gate = a.out_gate = true;
    return a;
}

}  // namespace attnlab::test
