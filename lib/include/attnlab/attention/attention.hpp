// Causal multi-head attention in parallel (quadratic) form, for any variant
// of SPEC §2 made of a numerator (score kernel or feature map) and a
// denominator, with the optional input and output gates:
//   w_tj = f(min(q_t.k_j / sqrt(HS), clamp))  or  phi(q_t).phi(k_j)     (j <= t)
//   u_t  = sum_j w_tj g_in_j v_j,  z_t = sum_j w_tj
//   o_t  = g_out_t * D(u_t, z_t, t)
// Parallelism: one OpenMP loop over (batch, head) pairs; the per-head
// products inside run serially (Eigen does not thread inside the region).
#pragma once
#include <memory>
#include <vector>

#include "attnlab/attention/variants.hpp"

namespace attnlab {

template <class T>
struct attention_inputs {
    const T* q = nullptr;             // (N, C), heads in column blocks of HS
    const T* k = nullptr;             // (N, C)
    const T* v = nullptr;             // (N, C)
    const T* in_gate = nullptr;       // (N, NH) in (0, 1), or null
    const T* out_gate = nullptr;      // (N, NH) in (0, 1), or null
    const T* denom_params = nullptr;  // out_norm gain then bias (HS each), or null
};

template <class T>
struct attention_grads {  // all accumulated (+=)
    T* dq = nullptr;             // (N, C)
    T* dk = nullptr;             // (N, C)
    T* dv = nullptr;             // (N, C)
    T* din_gate = nullptr;       // (N, NH)
    T* dout_gate = nullptr;      // (N, NH)
    T* ddenom_params = nullptr;  // (param_count)
};

// What the backward pass needs, per (b, h): sized for at most (B, T_cap).
template <class T>
struct attention_cache {
    int B = 0, T_cap = 0, NH = 0, HS = 0;
    std::vector<T> scores;        // (B, NH, T, T) clamped scaled scores (score kernels)
    std::vector<T> weights;       // (B, NH, T, T) w, zero above the diagonal
    std::vector<T> wsum;          // (B, NH, T)    z_t
    std::vector<T> numer;         // (B, NH, T, HS) u_t
    std::vector<T> phi_q, phi_k;  // (B, NH, T, HS) features (feature maps)
    std::vector<T> dparams;       // (B, NH, P) per-head parts of the denominator's parameter gradient
    // Of the divisor z_t (+ eps for elu1/relu) of the softmax denominator, last forward:
    std::vector<long> nonpositive_wsum;  // (B * NH) rows where it was <= 0
    std::vector<T> min_abs_wsum;         // (B * NH) its smallest magnitude (inf without softmax)
    void resize(int B, int T_cap, int NH, int HS, int denom_params);
    // Rows of the last forward whose softmax sum was <= 0 (signed kernels can do this).
    long nonpositive_rows() const;
    // Smallest |z_t| of the last forward: near 0 the output and its gradient blow up.
    T min_abs_denominator() const;
};

template <class T>
class attention_layer {
public:
    attention_layer(const attention_config& cfg, int NH, int HS);

    int denominator_param_count() const { return denom_->param_count(HS_); }
    bool has_in_gate() const { return in_gate_; }
    bool has_out_gate() const { return out_gate_; }
    void init_cache(attention_cache<T>& cache, int B, int T_cap) const;

    // out (N, C) <- attention of the inputs.
    void forward(T* out, attention_cache<T>& cache, const attention_inputs<T>& in, int B, int Tn) const;
    // grads += gradients of the inputs given dout (N, C).
    void backward(const attention_grads<T>& grads, const T* dout, attention_cache<T>& cache,
                  const attention_inputs<T>& in, int B, int Tn) const;

private:
    int NH_, HS_;
    T scale_;
    bool clamp_on_;
    T clamp_;
    bool in_gate_, out_gate_;
    std::unique_ptr<score_kernel<T>> kernel_;  // exactly one of kernel_, features_
    std::unique_ptr<feature_map<T>> features_;
    std::unique_ptr<denominator<T>> denom_;
};

}  // namespace attnlab
