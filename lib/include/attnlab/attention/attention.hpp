// Causal multi-head attention in parallel (quadratic) form, for any variant
// made of a score kernel and a denominator (SPEC §2):
//   s_tj = q_t.k_j / sqrt(HS),  w_tj = kernel(s_t.)_j (j <= t),
//   u_t = sum_{j<=t} w_tj v_j,  z_t = sum_{j<=t} w_tj,  o_t = denom(u_t, z_t).
// Parallelism: one OpenMP loop over (batch, head) pairs; the per-head
// products inside run serially (Eigen does not thread inside the region).
#pragma once
#include <memory>
#include <vector>

#include "attnlab/attention/variants.hpp"

namespace attnlab {

// What the backward pass needs, per (b, h): sized for at most (B, T).
template <class T>
struct attention_cache {
    int B = 0, T_cap = 0, NH = 0, HS = 0;  // capacity (T_cap: longest sequence)
    std::vector<T> scores;   // (B, NH, T, T) scaled scores s (lower triangle used)
    std::vector<T> weights;  // (B, NH, T, T) kernel weights w (upper triangle zero)
    std::vector<T> wsum;     // (B, NH, T)    z_t
    std::vector<T> numer;    // (B, NH, T, HS) u_t
    void resize(int B, int T_cap, int NH, int HS);
};

template <class T>
class attention_layer {
public:
    attention_layer(const attention_config& cfg, int NH, int HS);

    // out (N, C) <- attention of q, k, v (N, C), heads in column blocks of HS.
    void forward(T* out, attention_cache<T>& cache, const T* q, const T* k, const T* v,
                 int B, int Tn) const;
    // dq, dk, dv (N, C) += gradients from dout (N, C).
    void backward(T* dq, T* dk, T* dv, const T* dout, const attention_cache<T>& cache,
                  const T* q, const T* k, const T* v, int B, int Tn) const;

private:
    int NH_, HS_;
    T scale_;
    std::unique_ptr<score_kernel<T>> kernel_;
    std::unique_ptr<denominator<T>> denom_;
};

}  // namespace attnlab
