// The chunked causal form of attention (docs/attention.md, "The chunked
// form"): for a numerator with a finite state, the sequence is cut into
// chunks of `attention.chunk` positions; inside a chunk the weights are the
// quadratic form's, across chunks a running state carries the rest:
//   u_t = sum_{j in chunk(t), j<=t} w_tj v'_j + phi(q_t)^T S,   S = sum_{j before chunk(t)} phi(k_j) v'_j^T
//   z_t = sum_{j in chunk(t), j<=t} w_tj      + phi(q_t) . z,   z = sum_{j before chunk(t)} phi(k_j)
// (v' = g_in v; phi the symmetric layout of recurrent.hpp). Training then
// costs time linear in T. The denominator and gates act on (u_t, z_t) as in
// the quadratic form. This header holds what the spec, the memory plan and
// the run need to know about the form: whether a variant has it, its state
// size, and the cost model `auto` chooses by.
#pragma once
#include <cstddef>
#include <string>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

// The highest power (Taylor order m) of a chunked state's series: the
// order-m features number C(HS+m-1, m), already 52,360 per head at HS = 32,
// m = 4. A bound on the state, not on attention.order (whose limits are the
// spec's, spec/overrides.hpp).
inline constexpr int max_chunked_power = 4;

// Why `attention.form: chunked` is refused for this variant ("" when it is
// not): no finite state (exp, a clamp), or a series with a power above 4.
std::string chunked_form_refusal(const attention_config& cfg);
bool has_chunked_form(const attention_config& cfg);

// F: state features per head of the chunked form (the symmetric layout's
// count, summed over the Taylor terms; HS for feature maps); 0 without one.
std::size_t chunked_feature_size(const attention_config& cfg, int HS);

// Multiply-adds of one head's forward and backward over a sequence of T
// (calibrated with `attnlab bench train --seq-lens`, docs/attention.md):
//   quadratic  7 HS sum over row blocks of rows x keys           (about 3.5 HS T^2)
//   chunked    7 HS sum over chunks of rows^2 + 7 kappa F HS T   (linear in T)
// kappa = chunked_state_cost weighs the state's products and feature maps
// against the quadratic form's products: fitted to results/bench/seq_len.csv
// (taylor 2 and power 2 at HS 32: the state's (C, F) x (F, HS) products and
// the scalar feature expansions run at about 1/2.8 of the score products'
// speed in small_gemm), it puts the crossovers at the measured lengths
// (T = 64 + 2 kappa F at chunks of 64: 3206 for taylor 2, 3021 for power 2).
inline constexpr double chunked_state_cost = 2.8;
struct form_costs {
    double quadratic = 0, chunked = 0;  // chunked: infinity without a chunked form
};
form_costs form_costs_of(const attention_config& cfg, int T, int HS);

// The form a sequence of T positions is computed in: cfg.form, or for
// `auto` the cheaper one by form_costs_of (quadratic without a chunked form).
// Never parallel_form::automatic.
parallel_form choose_form(const attention_config& cfg, int T, int HS);

}  // namespace attnlab
