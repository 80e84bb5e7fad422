// The fused path of the quadratic form (attention.hpp's quadratic_path::fused)
// for exp with a scale-invariant denominator: w_tj = exp(s_tj - m_t), m_t the
// row's max, s_tj = min(q_t.k_j / sqrt(HS), clamp), j <= t. Nothing of size
// T x T is kept or written, not even a row block of it:
// - forward: 8 query rows at a time keep their scores, online max, weight
//   sum and numerator u (8, HS) in registers and L1 while the keys pass 32
//   at a time, packed in (HS, 32) panels (K^T with a row stride of a power of
//   two put a tile's rows in the same L1 cache sets). It leaves u_t, z_t,
//   the final m_t and the first key holding it (the backward's argmax: a
//   search in recomputed scores could miss the max by one bit);
// - backward (FlashAttention-2's order): per block of 64 query rows and
//   panel of 32 keys, w = exp(s - m_t) with the saved max, dw = du_t . v'_j,
//   ds = w (dw + dz_t), dq_t += scale ds k_j, dk_j += scale ds q_t,
//   dv'_j += w du_t, each product reducing in registers; then exp's term of
//   the row max (variants.cpp's exp_kernel) as the tiled path adds it:
//   dq_t -= scale c k_a and dk_a -= scale c q_t with c = sum_j ds_tj and a
//   the argmax (only below the clamp; not with a detached denominator).
// One version per instruction set (target_clones.hpp), head sizes 16, 32
// and 64 compiled in (others take the tiled path), float and double.
#pragma once

#include <cstddef>

namespace attnlab::fused_exp {

// Keys of a packed panel, and query rows of a backward block.
constexpr int panel_keys = 32;
constexpr int backward_rows = 64;

// Whether the kernels are compiled for this head size.
bool serves_head_size(int HS);

// Elements of the packed panels of up to T_cap keys of HS: ceil(T_cap / 32) panels of (HS, 32).
std::size_t panel_elements(int T_cap, int HS);

// panels <- rows [0, Tn) of x (row stride ld, HS wide) as (HS, 32) panels, keys past Tn 0.
void pack_panels(float* panels, const float* x, int ld, int Tn, int HS);
void pack_panels(double* panels, const double* x, int ld, int Tn, int HS);

// One (batch, head) pair's operands.
template <class T>
struct head_operands {
    const T* q = nullptr;         // (Tn, HS), rows ld_qk apart
    const T* k = nullptr;         // (Tn, HS), rows ld_qk apart
    const T* k_panels = nullptr;  // pack_panels of k
    const T* v = nullptr;         // (Tn, HS) v' = g_in v, rows ld_v apart
    int ld_qk = 0, ld_v = 0, Tn = 0, HS = 0;
    T scale = 1;  // 1 / sqrt(HS)
    bool clamp_on = false;
    T clamp = 0;
};

template <class T>
struct forward_outputs {
    T* u = nullptr;        // (Tn, HS) sum_j w_tj v'_j
    T* z = nullptr;        // (Tn) sum_j w_tj, or null
    T* row_max = nullptr;  // (Tn) m_t
    T* argmax = nullptr;   // (Tn) the first key j with s_tj = m_t (-1: none, a row of NaN)
};

template <class T>
struct backward_inputs {
    const T* v_panels = nullptr;  // pack_panels of v'
    const T* du = nullptr;        // (Tn, HS) dL/du
    const T* dz = nullptr;        // (Tn) dL/dz, or null (0)
    const T* row_max = nullptr;   // (Tn) the forward's
    const T* argmax = nullptr;    // (Tn) the forward's
    bool max_grad = false;        // add the row max's term (exp_kernel's; off when the denominator is detached)
};

template <class T>
struct backward_outputs {  // all +=
    T* dq = nullptr;       // (Tn, HS), rows ld_qk apart
    T* dk = nullptr;       // (Tn, HS), rows ld_qk apart
    T* dv = nullptr;       // (Tn, HS) dL/dv', dense
};

// Require serves_head_size(h.HS).
void forward(const head_operands<float>& h, const forward_outputs<float>& out);
void forward(const head_operands<double>& h, const forward_outputs<double>& out);
void backward(const head_operands<float>& h, const backward_inputs<float>& in, const backward_outputs<float>& out);
void backward(const head_operands<double>& h, const backward_inputs<double>& in, const backward_outputs<double>& out);

// Pairs the fused kernels have run so far, forward and backward together (tests: which path ran).
long runs();

}  // namespace attnlab::fused_exp
