// Recurrent (RNN) form of causal attention. Every variant with a finite
// state (the variant table's finite_state, unclamped) runs one position at a
// time:
//   S += phi(k_t) (g_in_t v_t)^T,  z += phi(k_t)        S (F, HS), z (F)
//   u_t = phi(q_t)^T S,  z_t = phi(q_t) . z,  o_t = g_out_t * D(u_t, z_t, t+1)
// with phi the concatenation of the feature expansions of the numerator:
//   score kernels  the Taylor terms m = first..last of the table's row
//                  (taylor n: m = 0..n; linear: m = 1), each
//                  phi_m(x) = (x / d^(1/4))^(x)m / sqrt(m!),
//                  so phi_m(q).phi_m(k) = s^m / m!, s = q.k / sqrt(d)
//   feature maps   (elu1, relu, cosine) their phi(x) (the m = 1 case, unscaled)
// The tensor power is stored either in full (d^m entries per order) or
// symmetrically, one entry per multi-index alpha with |alpha| = m
// (C(d+m-1, m) entries): phi_m(x)_alpha = x^alpha sqrt(1/alpha!) / d^(m/4).
// `exp` and every clamped score kernel have no finite state: their step form
// keeps the key/value cache and applies the parallel form's kernel, clamp and
// row-max rules to one row of scores.
// Parallelism: forward runs one OpenMP loop over (batch, head) sequences;
// each step is serial.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/attention.hpp"

namespace attnlab {

enum class state_layout { full, symmetric };

// ---- feature expansions (one Taylor order m of a d-vector) ----

// Entries of phi_m: d^m (full) or C(d+m-1, m) (symmetric). Throws
// std::overflow_error when the count does not fit in size_t.
std::size_t taylor_term_size(int d, int m, state_layout layout);
// phi (d^m) = scale (x / d^(1/4))^(x)m / sqrt(m!), index i_1 d^(m-1) + ... + i_m
// (scale: a term's coefficient on the query's side).
template <class T>
void taylor_term_full(T* phi, const T* x, int d, int m, T scale = T(1));
// phi (C(d+m-1, m)) = scale x^alpha sqrt(1/alpha!) / d^(m/4), one entry per
// non-decreasing index sequence i_1 <= ... <= i_m in lexicographic order
// (alpha_i = how often i occurs).
template <class T>
void taylor_term_symmetric(T* phi, const T* x, int d, int m, T scale = T(1));
// dx (d) += J^T dphi, J the Jacobian of taylor_term_symmetric at x (the
// chunked form's backward), by reverse mode over the same index tree.
template <class T>
void taylor_term_symmetric_backward(T* dx, const T* dphi, const T* x, int d, int m, T scale = T(1));

// False for exp and for any clamped score kernel (they keep a KV cache).
bool has_finite_state(const attention_config& cfg);
// F: total feature size of phi (sum over the series' terms); 0 without a finite state.
std::size_t feature_size(const attention_config& cfg, int HS, state_layout layout);
// Floats of state per layer and head after T positions: F HS + F for a
// finite state (independent of T), 2 T HS for the key/value cache.
std::size_t state_floats(const attention_config& cfg, int HS, state_layout layout, int T);
// The same times `bytes_per_float` (1: floats), exactly in decimal, however large (`attnlab state`).
std::string state_floats_text(const attention_config& cfg, int HS, state_layout layout, int T,
                              std::size_t bytes_per_float = 1);

template <class T>
class recurrent_attention {
public:
    recurrent_attention(const attention_config& cfg, int NH, int HS, state_layout layout = state_layout::symmetric);

    bool finite_state() const { return !kernel_; }
    std::size_t feature_size() const { return F_; }
    int denominator_param_count() const { return denom_->param_count(HS_); }

    // phi (F) = features of a head vector x (HS), one block per term of the
    // series; a query's carry the terms' coefficients. Finite state only.
    void features(T* phi, const T* x, bool query) const;

    // Empty states for B sequences of NH heads; the key/value cache (exp,
    // clamped kernels) holds up to T_cap positions.
    void reset(int B, int T_cap);
    // o (HS) <- output at the next position of sequence b, head h, given its
    // q, k, v (HS each), gates (pass 1 for a gate the variant does not use)
    // and the denominator parameters (or null). Different (b, h) may step
    // concurrently.
    void step(T* o, int b, int h, const T* q, const T* k, const T* v, T g_in, T g_out, const T* denom_params);
    // out (N, C) <- the same as attention_layer<T>::forward, computed by
    // reset(B, Tn) and Tn steps of every (b, h).
    void forward(T* out, const attention_inputs<T>& in, int B, int Tn);

private:
    struct head_state {
        int count = 0;                // positions seen
        std::vector<T> S, z;          // (F, HS), (F)              finite state
        std::vector<T> keys, values;  // (T_cap, HS) k, g_in v     KV cache
        std::vector<T> phi_q, phi_k;  // (F) scratch
        std::vector<T> u, s, w;       // (HS), (T_cap), (T_cap) scratch
    };
    void step_finite(head_state& st, T* o, const T* q, const T* k, const T* v, T g_in, T g_out, const T* params);
    void step_cache(head_state& st, T* o, const T* q, const T* k, const T* v, T g_in, T g_out, const T* params);

    attention_config cfg_;
    int NH_, HS_;
    state_layout layout_;
    std::size_t F_;
    T scale_;  // 1 / sqrt(HS), KV cache path
    bool in_gate_, out_gate_;
    std::unique_ptr<score_kernel<T>> kernel_;  // KV cache path only
    std::unique_ptr<feature_map<T>> map_;      // elu1, relu, cosine
    std::unique_ptr<denominator<T>> denom_;
    series_terms terms_;  // the state's series (score kernels with a finite state)
    int T_cap_ = 0;
    std::vector<head_state> heads_;  // (B, NH)
};

}  // namespace attnlab
