// The quadratic form's numerator (u_t = sum_j w_tj v'_j, z_t = sum_j w_tj)
// and its backward, path by path (attention.hpp's quadratic_path; the layer
// picks one per pair in forward_heads and backward_heads, attention.cpp):
//   kept / rows  row blocks against every key at once, the weights kept in
//                the cache for short rows (numerator_quadratic) or recomputed
//                by the backward;
//   tiled        row blocks against key tiles, exp shifted by the online row
//                max, nothing of T x T kept (numerator_tiled);
//   fused        the exp kernels of fused_exp.cpp, whose operands these
//                adapters pack (numerator_fused).
// The chunked form (chunked.cpp) reuses block_numerator and its backward for
// each chunk's diagonal block. The backward's maths: attention.cpp's header.
#include <algorithm>
#include <climits>
#include <cmath>

#include "attnlab/attention/attention.hpp"
#include "attnlab/ops/small_gemm.hpp"
#include "attnlab/ops/vector_math.hpp"
#include "attnlab/util/shapes.hpp"
#include "fused_exp.hpp"

namespace attnlab {

template <class T>
typename attention_layer<T>::block_weights attention_layer<T>::scratch_block(attention_scratch<T>& scratch) const {
    return {scratch.S.data(), scratch.W.data(), false};
}

namespace {
// Row r of a block of rows [t0, ..) against keys [k0, ..) sees keys < t0 - k0 + r + 1.
row_band causal_keys(int t0, int k0) { return {INT_MIN / 2, t0 - k0 + 1}; }
// Keys of row r of a block of rows from t0 against keys [k0, k0 + keys): k0..min(t, k1 - 1).
int keys_of_row(int t0, int r, int k0, int keys) { return std::min(keys, t0 + r + 1 - k0); }
// A row's entries that exp takes with a padded row: n rounded up to 16, within the width.
int padded(int n, int width) { return std::min(width, (n + 15) / 16 * 16); }
}  // namespace

template <class T>
void attention_layer<T>::score_block(T* S, const attention_scratch<T>& scratch, const T* q, int Tn, int t0, int t1,
                                     int k0, int k1) const {
    const int C = NH_ * HS_, rows = t1 - t0, keys = k1 - k0;
    small_gemm(S, keys, q + static_cast<long>(t0) * C, C, scratch.Kt.data() + k0, Tn, rows, keys, HS_, scale_, false,
               {}, causal_keys(t0, k0));
    if (clamp_on_)
        for (int r = 0; r < rows; ++r) {
            T* s = S + static_cast<long>(r) * keys;
            for (int j = 0, n = keys_of_row(t0, r, k0, keys); j < n; ++j) s[j] = std::min(s[j], clamp_);
        }
}

template <class T>
void attention_layer<T>::weight_block(block_weights b, const attention_scratch<T>& scratch, const T* q, const T* fq,
                                      int Tn, int t0, int t1, int k0, int k1, const T* shift) const {
    const int rows = t1 - t0, keys = k1 - k0;
    const row_band causal = causal_keys(t0, k0);
    matrix_map<T> W(b.W, rows, keys);  // (rows, keys)
    if (kernel_) {
        score_block(b.S, scratch, q, Tn, t0, t1, k0, k1);  // (rows, keys) = scale Q K^T, clamped
        matrix_map<T> S(b.S, rows, keys);
        for (int r = 0; r < rows; ++r) {
            const int n = keys_of_row(t0, r, k0, keys);  // keys k0..t
            if (shift) {  // exp(s - m_t) with the row's max over every key (the tiled path)
                exp_shifted(&W(r, 0), &S(r, 0), padded(n, keys), shift[r]);
                std::fill(&W(r, 0) + n, &W(r, 0) + keys, T(0));
            } else {
                kernel_->forward_row_padded(&W(r, 0), &S(r, 0), n, keys);
            }
        }
    } else {  // W = Phi(Q) Phi(K)^T
        small_gemm(W.data(), keys, fq + static_cast<long>(t0) * HS_, HS_, scratch.Kt.data() + k0, Tn, rows, keys, HS_,
                   T(1), false, {}, causal);
        for (int r = 0; r < rows; ++r)
            for (int j = keys_of_row(t0, r, k0, keys); j < keys; ++j) W(r, j) = T(0);
    }
}

template <class T>
void attention_layer<T>::block_numerator(T* u, T* z, attention_scratch<T>& scratch, block_weights b, const T* q,
                                         const T* fq, int Tn, int t0, int t1, int k0, int k1, bool add) const {
    const int HS = HS_, rows = t1 - t0, keys = k1 - k0;
    weight_block(b, scratch, q, fq, Tn, t0, t1, k0, k1);
    const_matrix_map<T> W(b.W, rows, keys);  // (rows, keys), zero above the diagonal
    // U (rows, HS) = (or +=) W Vg
    small_gemm(u + static_cast<long>(t0) * HS, HS, W.data(), keys, scratch.Vg.data() + static_cast<long>(k0) * HS, HS,
               rows, HS, keys, T(1), add, causal_keys(t0, k0));
    if (needs_weight_sum_)
        // sum_of, not Eigen's sum(): W may sit in the cache at any alignment.
        for (int r = 0; r < rows; ++r) {
            const T s = sum_of(b.W + static_cast<long>(r) * keys, keys_of_row(t0, r, k0, keys));
            z[t0 + r] = add ? z[t0 + r] + s : s;
        }
}

template <class T>
void attention_layer<T>::numerator_quadratic(T* u, T* z, attention_scratch<T>& scratch, T* kept_s, T* kept_w,
                                             const T* q, const T* fq, int Tn) const {
    for (int t0 = 0; t0 < Tn; t0 += scratch.block_rows) {
        const long at = static_cast<long>(t0) * Tn;  // the block's place in the kept (T, T)
        block_weights b = scratch_block(scratch);
        if (kept_w) b = {kept_s ? kept_s + at : b.S, kept_w + at, false};
        const int t1 = std::min(Tn, t0 + scratch.block_rows);
        block_numerator(u, z, scratch, b, q, fq, Tn, t0, t1, 0, t1);
    }
}

// Row block [t0, t1) against key tiles [k0, k1) from k0 = 0: every tile
// starts at or before t0, so each row sees at least one key of each tile.
template <class T>
void attention_layer<T>::numerator_tiled(T* u, T* z, attention_scratch<T>& scratch, T* row_max, int T_cap, const T* q,
                                         const T* fq, int Tn) const {
    const int HS = HS_, R = scratch.block_rows, KB = scratch.tile_keys;
    for (int t0 = 0; t0 < Tn; t0 += R) {
        const int t1 = std::min(Tn, t0 + R), rows = t1 - t0;
        for (int k0 = 0; k0 < t1; k0 += KB) {
            const int k1 = std::min(t1, k0 + KB), keys = k1 - k0;
            const bool add = k0 > 0;
            const block_weights b = scratch_block(scratch);
            if (!row_max_) {  // no shift: the tiles' terms just add up
                block_numerator(u, z, scratch, b, q, fq, Tn, t0, t1, k0, k1, add);
                continue;
            }
            // exp(s - m_t) with the online row max m_t: when a tile raises it,
            // what the row has summed so far is rescaled by exp(m_old - m_new).
            score_block(b.S, scratch, q, Tn, t0, t1, k0, k1);
            T* m = row_max + t0;           // (rows) the max so far
            T* at = row_max + T_cap + t0;  // (rows) the first key of the first tile that holds it
            for (int r = 0; r < rows; ++r) {
                const int n = keys_of_row(t0, r, k0, keys);
                const T* s = b.S + static_cast<long>(r) * keys;
                T* w = b.W + static_cast<long>(r) * keys;
                const T tile_max = max_of(s, n);
                if (!add) {
                    m[r] = tile_max;
                    at[r] = T(0);
                } else if (tile_max > m[r]) {  // strictly: the first tile that holds the max
                    const T rescale = std::exp(m[r] - tile_max);
                    T* ur = u + static_cast<long>(t0 + r) * HS;
                    for (int i = 0; i < HS; ++i) ur[i] *= rescale;
                    if (needs_weight_sum_) z[t0 + r] *= rescale;
                    m[r] = tile_max;
                    at[r] = T(k0);
                }
                exp_shifted(w, s, padded(n, keys), m[r]);
                std::fill(w + n, w + keys, T(0));
                if (needs_weight_sum_) {
                    const T sum = sum_of(w, n);
                    z[t0 + r] = add ? z[t0 + r] + sum : sum;
                }
            }
            small_gemm(u + static_cast<long>(t0) * HS, HS, b.W, keys, scratch.Vg.data() + static_cast<long>(k0) * HS,
                       HS, rows, HS, keys, T(1), add, causal_keys(t0, k0));
        }
    }
}

namespace {
// The fused kernels' view of one pair: q, k with row stride C, V' at vg (row stride ld_vg).
template <class T>
fused_exp::head_operands<T> fused_operands(const attention_scratch<T>& scratch, const T* q, const T* k, const T* vg,
                                           int ld_vg, int C, int HS, int Tn, T scale, bool clamp_on, T clamp) {
    fused_exp::head_operands<T> h;
    h.q = q;
    h.k = k;
    h.k_panels = scratch.Kp.data();
    h.v = vg;
    h.ld_qk = C;
    h.ld_v = ld_vg;
    h.Tn = Tn;
    h.HS = HS;
    h.scale = scale;
    h.clamp_on = clamp_on;
    h.clamp = clamp;
    return h;
}
}  // namespace

// The pair's row max m_t goes to row_max[t], its first key to row_max[T_cap + t].
template <class T>
void attention_layer<T>::numerator_fused(T* u, T* z, attention_scratch<T>& scratch, T* row_max, int T_cap, const T* q,
                                         const T* k, int Tn) const {
    const int C = NH_ * HS_;
    fused_exp::pack_panels(scratch.Kp.data(), k, C, Tn, HS_);  // (Tn / 32, HS, 32)
    fused_exp::forward_outputs<T> out;
    out.u = u;
    out.z = needs_weight_sum_ ? z : nullptr;
    out.row_max = row_max;
    out.argmax = row_max + T_cap;
    fused_exp::forward(fused_operands(scratch, q, k, scratch.Vg.data(), HS_, C, HS_, Tn, scale_, clamp_on_, clamp_),
                       out);
}

// Transposed operands (W^T, ds^T, dw^T) are read in place: small_gemm's trans_a.
template <class T>
void attention_layer<T>::block_numerator_backward(T* dq, T* dk, attention_scratch<T>& scratch, block_weights b,
                                                  const T* q, const T* k, const T* fq, const T* fk, int Tn, int t0,
                                                  int t1, int k0, int k1, const T* shift, T* through_max) const {
    const int HS = HS_, C = NH_ * HS, rows = t1 - t0, keys = k1 - k0;
    const row_band causal = causal_keys(t0, k0), causal_t = {-(t0 - k0), INT_MAX / 2};  // of W (rows, keys), W^T
    if (!b.kept) weight_block(b, scratch, q, fq, Tn, t0, t1, k0, k1, shift);
    const T* W = b.W;                                                                                    // (rows, keys)
    T* dW = scratch.dW.data();                                                                           // (rows, keys)
    const T* dU = scratch.dU.data() + static_cast<long>(t0) * HS;                                        // (rows, HS)
    small_gemm(dW, keys, dU, HS, scratch.Vgt.data() + k0, Tn, rows, keys, HS, T(1), false, {}, causal);  // dU Vg^T
    // dVg (keys, HS) += W^T dU
    small_gemm(scratch.dVg.data() + static_cast<long>(k0) * HS, HS, W, keys, dU, HS, keys, HS, rows, T(1), true,
               causal_t, {}, true);
    if (kernel_) {
        score_rows_backward(scratch, b, t0, t1, k0, k1, through_max);  // dW <- ds (rows, keys), 0 above the diagonal
        small_gemm(dq + static_cast<long>(t0) * C, C, dW, keys, k + static_cast<long>(k0) * C, C, rows, HS, keys,
                   scale_, true, causal);  // dQ (rows, HS) += scale ds K
        small_gemm(dk + static_cast<long>(k0) * C, C, dW, keys, q + static_cast<long>(t0) * C, C, keys, HS, rows,
                   scale_, true, causal_t, {}, true);  // dK (keys, HS) += scale ds^T Q
    } else {
        for (int r = 0; r < rows; ++r) {  // dw_tj + dz_t below the diagonal, 0 above
            T* dw = dW + static_cast<long>(r) * keys;
            const int n = keys_of_row(t0, r, k0, keys);
            if (needs_weight_sum_)
                for (int j = 0; j < n; ++j) dw[j] += scratch.dz[t0 + r];
            for (int j = n; j < keys; ++j) dw[j] = T(0);
        }
        small_gemm(scratch.dFq.data() + static_cast<long>(t0) * HS, HS, dW, keys, fk + static_cast<long>(k0) * HS, HS,
                   rows, HS, keys, T(1), true, causal);  // dPhi(Q) (rows, HS) += dw Phi(K)
        small_gemm(scratch.dFk.data() + static_cast<long>(k0) * HS, HS, dW, keys, fq + static_cast<long>(t0) * HS, HS,
                   keys, HS, rows, T(1), true, causal_t, {}, true);  // dPhi(K) (keys, HS) += dw^T Phi(Q)
    }
}

template <class T>
void attention_layer<T>::score_rows_backward(attention_scratch<T>& scratch, block_weights b, int t0, int t1, int k0,
                                             int k1, T* through_max) const {
    const int rows = t1 - t0, keys = k1 - k0;
    const_matrix_map<T> S(b.S, rows, keys), W(b.W, rows, keys);  // (rows, keys)
    matrix_map<T> dW(scratch.dW.data(), rows, keys);             // (rows, keys)
    for (int r = 0; r < rows; ++r) {
        const int n = keys_of_row(t0, r, k0, keys);
        const T dz_t = needs_weight_sum_ ? scratch.dz[t0 + r] : T(0);
        if (through_max) {  // the tiled path's exp(s - m_t): ds = w (dw + dz); the argmax's term is the caller's
            through_max[r] += scaled_sum(&dW(r, 0), &dW(r, 0), dz_t, W.row(r).data(), padded(n, keys));
            std::fill(&dW(r, 0) + n, &dW(r, 0) + keys, T(0));
        } else {
            kernel_->backward_row_padded(&dW(r, 0), &dW(r, 0), dz_t, S.row(r).data(), W.row(r).data(), n, keys);
        }
        if (clamp_on_)  // min(s, c) passes the gradient only below c
            for (int j = 0; j < n; ++j)
                if (!(S(r, j) < clamp_)) dW(r, j) = T(0);
    }
}

template <class T>
void attention_layer<T>::numerator_backward_quadratic(T* dq, T* dk, attention_scratch<T>& scratch, T* kept_s, T* kept_w,
                                                      const T* q, const T* k, const T* fq, const T* fk, int Tn) const {
    for (int t0 = 0; t0 < Tn; t0 += scratch.block_rows) {
        const long at = static_cast<long>(t0) * Tn;  // the block's place in the kept (T, T)
        block_weights b = scratch_block(scratch);
        if (kept_w) b = {kept_s ? kept_s + at : b.S, kept_w + at, true};
        const int t1 = std::min(Tn, t0 + scratch.block_rows);
        block_numerator_backward(dq, dk, scratch, b, q, k, fq, fk, Tn, t0, t1, 0, t1);
    }
}

// The tiled forward's tiles again, each recomputed (with the row's final max
// for exp). The exp kernel's term of the row max (variants.cpp):
// ds_t,argmax -= sum_j ds_tj, summed over the row's tiles, then applied to
// dq_t and dk_argmax; a clamp passes it only when the max is below the clamp.
// argmax: the first key whose score is the max (first_index_of_max), found in
// the recomputed scores of the tile the forward found it in (the same
// products, so the same bits).
template <class T>
void attention_layer<T>::numerator_backward_tiled(T* dq, T* dk, attention_scratch<T>& scratch, const T* row_max,
                                                  int T_cap, const T* q, const T* k, const T* fq, const T* fk,
                                                  int Tn) const {
    const int C = NH_ * HS_, R = scratch.block_rows, KB = scratch.tile_keys;
    T through_max[attention_scratch<T>::block_rows];
    long argmax[attention_scratch<T>::block_rows];
    for (int t0 = 0; t0 < Tn; t0 += R) {
        const int t1 = std::min(Tn, t0 + R), rows = t1 - t0;
        std::fill(through_max, through_max + rows, T(0));
        std::fill(argmax, argmax + rows, -1L);
        for (int k0 = 0; k0 < t1; k0 += KB) {
            const int k1 = std::min(t1, k0 + KB), keys = k1 - k0;
            block_numerator_backward(dq, dk, scratch, scratch_block(scratch), q, k, fq, fk, Tn, t0, t1, k0, k1,
                                     row_max_ ? row_max + t0 : nullptr, row_max_ ? through_max : nullptr);
            if (!max_grad_) continue;
            for (int r = 0; r < rows; ++r) {  // the tile's scores are still in scratch.S
                if (row_max[T_cap + t0 + r] != T(k0)) continue;
                const T* s = scratch.S.data() + static_cast<long>(r) * keys;
                for (int j = 0, n = keys_of_row(t0, r, k0, keys); j < n; ++j)
                    if (s[j] == row_max[t0 + r]) {
                        argmax[r] = k0 + j;
                        break;
                    }
            }
        }
        if (!max_grad_) continue;
        for (int r = 0; r < rows; ++r) {
            const int t = t0 + r;
            if (clamp_on_ && !(row_max[t] < clamp_)) continue;
            const long a = argmax[r];
            if (a < 0) continue;  // a NaN row: no max
            const T c = scale_ * through_max[r];
            T* dq_t = dq + static_cast<long>(t) * C;
            T* dk_a = dk + a * C;
            const T* q_t = q + static_cast<long>(t) * C;
            const T* k_a = k + a * C;
            for (int i = 0; i < HS_; ++i) {
                dq_t[i] -= c * k_a[i];
                dk_a[i] -= c * q_t[i];
            }
        }
    }
}

template <class T>
void attention_layer<T>::numerator_backward_fused(T* dq, T* dk, attention_scratch<T>& scratch, const T* row_max,
                                                  int T_cap, const T* q, const T* k, const T* vg, int ld_vg,
                                                  int Tn) const {
    const int C = NH_ * HS_;
    fused_exp::pack_panels(scratch.Kp.data(), k, C, Tn, HS_);       // (Tn / 32, HS, 32)
    fused_exp::pack_panels(scratch.Vp.data(), vg, ld_vg, Tn, HS_);  // (Tn / 32, HS, 32)
    fused_exp::backward_inputs<T> in;
    in.v_panels = scratch.Vp.data();
    in.du = scratch.dU.data();
    in.dz = needs_weight_sum_ ? scratch.dz.data() : nullptr;
    in.row_max = row_max;
    in.argmax = row_max + T_cap;
    in.max_grad = max_grad_;
    fused_exp::backward_outputs<T> out;
    out.dq = dq;
    out.dk = dk;
    out.dv = scratch.dVg.data();
    fused_exp::backward(fused_operands(scratch, q, k, vg, ld_vg, C, HS_, Tn, scale_, clamp_on_, clamp_), in, out);
}

#define ATTNLAB_INSTANTIATE_QUADRATIC_PATHS(T)                                                                         \
    template typename attention_layer<T>::block_weights attention_layer<T>::scratch_block(attention_scratch<T>&)       \
        const;                                                                                                         \
    template void attention_layer<T>::score_block(T*, const attention_scratch<T>&, const T*, int, int, int, int, int)  \
        const;                                                                                                         \
    template void attention_layer<T>::weight_block(block_weights, const attention_scratch<T>&, const T*, const T*,     \
                                                   int, int, int, int, int, const T*) const;                           \
    template void attention_layer<T>::block_numerator(T*, T*, attention_scratch<T>&, block_weights, const T*,          \
                                                      const T*, int, int, int, int, int, bool) const;                  \
    template void attention_layer<T>::numerator_quadratic(T*, T*, attention_scratch<T>&, T*, T*, const T*, const T*,   \
                                                          int) const;                                                  \
    template void attention_layer<T>::numerator_tiled(T*, T*, attention_scratch<T>&, T*, int, const T*, const T*, int) \
        const;                                                                                                         \
    template void attention_layer<T>::numerator_fused(T*, T*, attention_scratch<T>&, T*, int, const T*, const T*, int) \
        const;                                                                                                         \
    template void attention_layer<T>::block_numerator_backward(T*, T*, attention_scratch<T>&, block_weights, const T*, \
                                                               const T*, const T*, const T*, int, int, int, int, int,  \
                                                               const T*, T*) const;                                    \
    template void attention_layer<T>::score_rows_backward(attention_scratch<T>&, block_weights, int, int, int, int,    \
                                                          T*) const;                                                   \
    template void attention_layer<T>::numerator_backward_quadratic(T*, T*, attention_scratch<T>&, T*, T*, const T*,    \
                                                                   const T*, const T*, const T*, int) const;           \
    template void attention_layer<T>::numerator_backward_tiled(T*, T*, attention_scratch<T>&, const T*, int, const T*, \
                                                               const T*, const T*, const T*, int) const;               \
    template void attention_layer<T>::numerator_backward_fused(T*, T*, attention_scratch<T>&, const T*, int, const T*, \
                                                               const T*, const T*, int, int) const;

ATTNLAB_INSTANTIATE_QUADRATIC_PATHS(float)
ATTNLAB_INSTANTIATE_QUADRATIC_PATHS(double)

}  // namespace attnlab
