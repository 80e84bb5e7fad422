// Parallel form of causal attention for a (numerator, denominator) variant,
// fused in row blocks (attention.hpp). Backward, per head (rows t, columns
// j <= t), with V' = g_in * V, recomputing each block's w first:
//   dd_t = g_out_t dout_t,  dg_out_t += dout_t . D(u_t)
//   (du_t, dz_t) = D'(dd_t)
//   dw_tj = du_t . v'_j + dz_t          (dz_t because z_t = sum_j w_tj)
//   dv'_j = sum_t w_tj du_t;  dv_j += g_in_j dv'_j;  dg_in_j += dv'_j . v_j
//   score kernels: ds_tj = dw_tj f'(s_tj) [s_tj < clamp];
//                  dq_t += ds_t. K / sqrt(HS),  dk_j += ds_.j^T Q / sqrt(HS)
//   feature maps:  dphi(q_t) = dw_t. Phi(K),  dphi(k_j) = dw_.j^T Phi(Q), then phi'
// This file: the cache and scratch sizes, the choice of the quadratic path
// (kept, rows, tiled, fused) and each pair's forward and backward around the
// numerator. The numerator's paths, from (q, k, v') to (u, z) and from
// (du, dz) to (dv', dq, dk), are in quadratic_paths.cpp; the chunked form
// (chunked.cpp) replaces only those steps too; the rest is shared.
#include "attnlab/attention/attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "attnlab/ops/small_gemm.hpp"
#include "attnlab/ops/vector_math.hpp"
#include "attnlab/util/shapes.hpp"
#include "fused_exp.hpp"

namespace attnlab {

namespace {
// Below this many multiply-adds per call the threads cost more than they save.
constexpr long attention_parallel_threshold = 1L << 16;
long attention_work(int B, int NH, int Tn, int HS) { return static_cast<long>(B) * NH * Tn * Tn * HS; }
// Pair bh's (T_cap, T_cap) share of a kept buffer of the cache, or null when it keeps none.
template <class T>
T* kept_pair(std::vector<T>& kept, const attention_cache<T>& cache, int bh) {
    return kept.empty() ? nullptr : kept.data() + static_cast<size_t>(bh) * cache.T_cap * cache.T_cap;
}
// Pair bh's (2, T_cap) share of the cache's row maxima, or null when it keeps none.
template <class T>
T* row_max_pair(attention_cache<T>& cache, int bh) {
    return cache.row_max.empty() ? nullptr : cache.row_max.data() + static_cast<size_t>(bh) * 2 * cache.T_cap;
}
}  // namespace

namespace {
// ATTNLAB_QUADRATIC_PATH=kept|rows|tiled|fused forces a path from the start
// (for timing one path against another with one binary); unset: automatic.
quadratic_path path_from_environment() {
    const char* v = std::getenv("ATTNLAB_QUADRATIC_PATH");
    const std::string s = v ? v : "";
    if (s == "kept") return quadratic_path::kept;
    if (s == "rows") return quadratic_path::rows;
    if (s == "tiled") return quadratic_path::tiled;
    if (s == "fused") return quadratic_path::fused;
    return quadratic_path::automatic;
}
std::atomic<quadratic_path> forced_path{path_from_environment()};
}  // namespace

quadratic_path force_quadratic_path(quadratic_path path) { return forced_path.exchange(path); }

bool quadratic_tiles() { return forced_path.load() != quadratic_path::rows; }

bool fused_path_serves(const attention_config& cfg, int HS) {
    return cfg.numerator == numerator_kind::exp && is_scale_invariant(cfg.denominator) &&
           fused_exp::serves_head_size(HS);
}

long fused_attention_runs() { return fused_exp::runs(); }

bool keeps_weights(const attention_config& cfg, int B, int T_cap, int NH, int HS) {
    const size_t pairs = static_cast<size_t>(B) * NH, tt = static_cast<size_t>(T_cap) * T_cap;
    if (choose_form(cfg, T_cap, HS) != parallel_form::quadratic) return false;
    switch (forced_path.load()) {
        case quadratic_path::kept: return true;
        case quadratic_path::rows:
        case quadratic_path::tiled:
        case quadratic_path::fused: return false;
        case quadratic_path::automatic: break;
    }
    return tt <= kept_weights_limit && pairs * tt <= kept_weights_limit;
}

attention_cache_size attention_cache_size_of(const attention_config& cfg, int B, int T_cap, int NH, int HS) {
    const size_t bh = static_cast<size_t>(B) * NH, th = static_cast<size_t>(T_cap) * HS;
    attention_cache_size n;
    n.wsum = bh * T_cap;
    n.numer = bh * th;
    if (traits_of(cfg.numerator).family == numerator_family::feature_map) n.features = bh * th;
    n.dparams = bh * static_cast<size_t>(traits_of(cfg.denominator).out_norm_params) * HS;
    n.pairs = bh;
    if (keeps_weights(cfg, B, T_cap, NH, HS)) {
        n.weights = bh * T_cap * T_cap;
        if (traits_of(cfg.numerator).family != numerator_family::feature_map) n.scores = n.weights;
    } else if (cfg.numerator == numerator_kind::exp && is_scale_invariant(cfg.denominator)) {
        n.row_max = bh * 2 * T_cap;  // the tiled or fused path's (any Tn <= T_cap may take either)
    }
    return n;
}

attention_scratch_size attention_scratch_size_of(const attention_config& cfg, int T_cap, int HS) {
    attention_scratch_size n;
    n.block = static_cast<size_t>(attention_scratch<float>::block_rows) * T_cap;
    n.head = static_cast<size_t>(T_cap) * HS;
    n.dz = static_cast<size_t>(T_cap);
    n.row = static_cast<size_t>(HS);
    if (fused_path_serves(cfg, HS)) n.panels = fused_exp::panel_elements(T_cap, HS);
    if (choose_form(cfg, T_cap, HS) == parallel_form::chunked) {
        const size_t Cn = static_cast<size_t>(std::min(cfg.chunk, T_cap)), F = chunked_feature_size(cfg, HS);
        n.block = std::max(n.block, Cn * Cn);
        n.chunk_features = Cn * F;
        n.state = F * HS;
        n.state_sum = F;
    }
    return n;
}

template <class T>
void attention_cache<T>::resize(int B_, int T_, int NH_, int HS_, const attention_cache_size& n) {
    B = B_;
    T_cap = T_;
    NH = NH_;
    HS = HS_;
    wsum.assign(n.wsum, T(0));
    numer.assign(n.numer, T(0));
    phi_q.assign(n.features, T(0));
    phi_k.assign(n.features, T(0));
    dparams.assign(n.dparams, T(0));
    nonpositive_wsum.assign(n.pairs, 0);
    min_abs_wsum.assign(n.pairs, std::numeric_limits<T>::infinity());
    kept_weights.assign(n.weights, T(0));
    kept_scores.assign(n.scores, T(0));
    row_max.assign(n.row_max, T(0));
}

template <class T>
long attention_cache<T>::nonpositive_rows() const {
    long n = 0;
    for (long c : nonpositive_wsum) n += c;
    return n;
}

template <class T>
T attention_cache<T>::min_abs_denominator() const {
    T m = std::numeric_limits<T>::infinity();
    for (T z : min_abs_wsum) m = std::min(m, z);
    return m;
}

template <class T>
void attention_scratch<T>::resize(const attention_scratch_size& n) {
    // Only grows: a shorter sequence reuses the buffers of a longer one.
    auto grow = [](std::vector<T>& v, size_t size) {
        if (v.size() < size) v.assign(size, T(0));
    };
    for (auto* v : {&S, &W, &dW}) grow(*v, n.block);
    for (auto* v : {&Vg, &dU, &dVg, &dFq, &dFk, &Kt, &Vgt}) grow(*v, n.head);
    grow(dz, n.dz);
    grow(row, n.row);
    for (auto* v : {&Kp, &Vp}) grow(*v, n.panels);
    for (auto* v : {&Pq, &Pk, &dP}) grow(*v, n.chunk_features);
    for (auto* v : {&St, &dSt}) grow(*v, n.state);
    for (auto* v : {&zs, &dzs}) grow(*v, n.state_sum);
}

template <class T>
attention_layer<T>::attention_layer(const attention_config& cfg, int NH, int HS)
    : cfg_(cfg),
      NH_(NH),
      HS_(HS),
      scale_(T(1) / std::sqrt(T(HS))),
      clamp_on_(cfg.clamp.has_value()),
      clamp_(static_cast<T>(cfg.clamp.value_or(0.0))),
      in_gate_(cfg.in_gate),
      out_gate_(uses_out_gate(cfg)),
      needs_weight_sum_(traits_of(cfg.denominator).uses_weight_sum),
      row_max_(cfg.numerator == numerator_kind::exp && is_scale_invariant(cfg.denominator)),
      max_grad_(row_max_ && !cfg.detach_denominator),
      fused_(fused_path_serves(cfg, HS)),
      kernel_(make_score_kernel<T>(cfg)),
      features_(make_feature_map<T>(cfg)),
      denom_(make_denominator<T>(cfg)),
      F_(chunked_feature_size(cfg, HS)),
      terms_(F_ > 0 && kernel_ ? terms_of(cfg) : series_terms{}) {
    if (cfg.form == parallel_form::chunked && !has_chunked_form(cfg))
        throw std::invalid_argument("attention: " + chunked_form_refusal(cfg));
    if (cfg.chunk < 1) throw std::invalid_argument("attention: chunk must be >= 1");
}

template <class T>
void attention_layer<T>::init_cache(attention_cache<T>& cache, int B, int T_cap) const {
    const attention_cache_size n = attention_cache_size_of(cfg_, B, T_cap, NH_, HS_);
    // The sizes come from the variant table, the kernels index by their own counts: they must agree.
    if (n.dparams != n.pairs * static_cast<size_t>(denominator_param_count()) || (n.features > 0) != bool(features_))
        throw std::logic_error("attention_cache_size_of disagrees with the variant's kernels");
    cache.resize(B, T_cap, NH_, HS_, n);
}

template <class T>
void attention_layer<T>::keys_transposed(attention_scratch<T>& scratch, const T* k, const T* fk, int Tn) const {
    if (kernel_)
        transpose_into(scratch.Kt.data(), k, Tn, HS_, NH_ * HS_);
    else
        transpose_into(scratch.Kt.data(), fk, Tn, HS_, HS_);
}

template <class T>
quadratic_path attention_layer<T>::unkept_path(int Tn) const {
    switch (forced_path.load()) {
        case quadratic_path::rows: return quadratic_path::rows;
        case quadratic_path::tiled: return quadratic_path::tiled;
        case quadratic_path::fused: return fused_ ? quadratic_path::fused : quadratic_path::tiled;
        default: return fused_ && Tn >= fused_from_length ? quadratic_path::fused : quadratic_path::tiled;
    }
}

template <class T>
void attention_layer<T>::forward_heads(T* out, attention_cache<T>& cache, const attention_inputs<T>& in, int Tn,
                                       int bh_begin, int bh_end, attention_scratch<T>& scratch) const {
    const int NH = NH_, HS = HS_, C = NH * HS;
    const bool need_z = needs_weight_sum_;
    const bool chunked = form_at(Tn) == parallel_form::chunked;
    scratch.resize(attention_scratch_size_of(cfg_, Tn, HS));
    for (int bh = bh_begin; bh < bh_end; ++bh) {
        const int b = bh / NH, h = bh % NH;
        const long off = static_cast<long>(b) * Tn * C + h * HS;
        const long gate_off = static_cast<long>(b) * Tn * NH + h;             // (N, NH) index of (b, t=0, h)
        const_strided_map<T> V(in.v + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
        strided_map<T> O(out + off, Tn, HS, Eigen::OuterStride<>(C));         // (T, HS)
        const size_t th = static_cast<size_t>(bh) * cache.T_cap * HS;
        matrix_map<T> U(cache.numer.data() + th, Tn, HS);                  // (T, HS)
        T* z = cache.wsum.data() + static_cast<size_t>(bh) * cache.T_cap;  // (T)
        const T* fq = nullptr;
        const T* fk = nullptr;
        if (features_) {
            matrix_map<T> Fq(cache.phi_q.data() + th, Tn, HS), Fk(cache.phi_k.data() + th, Tn, HS);
            const_strided_map<T> Q(in.q + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> K(in.k + off, Tn, HS, Eigen::OuterStride<>(C));
            for (int t = 0; t < Tn; ++t) {
                features_->forward(&Fq(t, 0), Q.row(t).data(), HS);
                features_->forward(&Fk(t, 0), K.row(t).data(), HS);
            }
            fq = Fq.data();
            fk = Fk.data();
        }
        matrix_map<T> Vg(scratch.Vg.data(), Tn, HS);  // (T, HS) g_in * V
        if (in_gate_)
            for (int t = 0; t < Tn; ++t) Vg.row(t) = V.row(t) * in.in_gate[gate_off + static_cast<long>(t) * NH];
        else
            Vg = V;

        T* kept_w = kept_pair(cache.kept_weights, cache, bh);
        const quadratic_path path = chunked || kept_w ? quadratic_path::kept : unkept_path(Tn);
        if (path != quadratic_path::fused) keys_transposed(scratch, in.k + off, fk, Tn);  // fused: in panels

        if (chunked)
            numerator_chunked(U.data(), z, scratch, in.q + off, in.k + off, fq, fk, Tn);
        else if (path == quadratic_path::fused)
            numerator_fused(U.data(), z, scratch, row_max_pair(cache, bh), cache.T_cap, in.q + off, in.k + off, Tn);
        else if (path == quadratic_path::tiled)
            numerator_tiled(U.data(), z, scratch, row_max_pair(cache, bh), cache.T_cap, in.q + off, fq, Tn);
        else
            numerator_quadratic(U.data(), z, scratch, kept_pair(cache.kept_scores, cache, bh), kept_w, in.q + off, fq,
                                Tn);

        long nonpositive = 0;
        T min_abs = std::numeric_limits<T>::infinity();
        if (need_z)
            for (int t = 0; t < Tn; ++t) {
                const T divisor = z[t] + denom_->weight_sum_offset();
                nonpositive += !(divisor > T(0));
                min_abs = std::min(min_abs, std::abs(divisor));
            }
        cache.nonpositive_wsum[bh] = nonpositive;
        cache.min_abs_wsum[bh] = min_abs;
        for (int t = 0; t < Tn; ++t) {
            denom_->forward_row(&O(t, 0), &U(t, 0), need_z ? z[t] : T(0), t + 1, in.denom_params, HS);
            if (out_gate_) O.row(t) *= in.out_gate[gate_off + static_cast<long>(t) * NH];
        }
    }
}

template <class T>
void attention_layer<T>::backward_heads(const attention_grads<T>& grads, const T* dout, attention_cache<T>& cache,
                                        const attention_inputs<T>& in, int Tn, int bh_begin, int bh_end,
                                        attention_scratch<T>& scratch) const {
    const int NH = NH_, HS = HS_, C = NH * HS;
    const int P = denominator_param_count();
    const bool need_z = needs_weight_sum_;
    const bool chunked = form_at(Tn) == parallel_form::chunked;
    scratch.resize(attention_scratch_size_of(cfg_, Tn, HS));
    for (int bh = bh_begin; bh < bh_end; ++bh) {
        const int b = bh / NH, h = bh % NH;
        const long off = static_cast<long>(b) * Tn * C + h * HS;
        const long gate_off = static_cast<long>(b) * Tn * NH + h;
        const_strided_map<T> Q(in.q + off, Tn, HS, Eigen::OuterStride<>(C));   // (T, HS)
        const_strided_map<T> K(in.k + off, Tn, HS, Eigen::OuterStride<>(C));   // (T, HS)
        const_strided_map<T> V(in.v + off, Tn, HS, Eigen::OuterStride<>(C));   // (T, HS)
        const_strided_map<T> dO(dout + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
        strided_map<T> dQ(grads.dq + off, Tn, HS, Eigen::OuterStride<>(C));
        strided_map<T> dK(grads.dk + off, Tn, HS, Eigen::OuterStride<>(C));
        strided_map<T> dV(grads.dv + off, Tn, HS, Eigen::OuterStride<>(C));
        const size_t th = static_cast<size_t>(bh) * cache.T_cap * HS;
        const_matrix_map<T> U(cache.numer.data() + th, Tn, HS);
        const T* z = cache.wsum.data() + static_cast<size_t>(bh) * cache.T_cap;
        T* dparams = P ? cache.dparams.data() + static_cast<size_t>(bh) * P : nullptr;
        if (P) std::fill(dparams, dparams + P, T(0));
        const T* fq = features_ ? cache.phi_q.data() + th : nullptr;
        const T* fk = features_ ? cache.phi_k.data() + th : nullptr;
        matrix_map<T> dU(scratch.dU.data(), Tn, HS), Vg(scratch.Vg.data(), Tn, HS), dVg(scratch.dVg.data(), Tn, HS);
        T* dz = scratch.dz.data();

        // (du_t, dz_t) through the output gate and the denominator, row by row.
        for (int t = 0; t < Tn; ++t) {
            const T zt = need_z ? z[t] : T(0);
            const T* dout_t = dO.row(t).data();
            if (out_gate_) {
                const long gi = gate_off + static_cast<long>(t) * NH;
                T* o_row = scratch.row.data();
                denom_->forward_row(o_row, U.row(t).data(), zt, t + 1, in.denom_params, HS);
                T dg = 0;
                for (int i = 0; i < HS; ++i) dg += dout_t[i] * o_row[i];
                grads.dout_gate[gi] += dg;
                for (int i = 0; i < HS; ++i) o_row[i] = dout_t[i] * in.out_gate[gi];  // dd_t, reusing the row
                dout_t = o_row;
            }
            dz[t] = denom_->backward_row(&dU(t, 0), dparams, dout_t, U.row(t).data(), zt, t + 1, in.denom_params, HS);
        }
        T* kept_w = kept_pair(cache.kept_weights, cache, bh);
        // Vg is read whole by the chunked form and differs from V with the input gate; the quadratic
        // form reads it only as Vg^T, which is then transposed from V in place.
        const bool copy_vg = in_gate_ || chunked;
        if (in_gate_)
            for (int t = 0; t < Tn; ++t) Vg.row(t) = V.row(t) * in.in_gate[gate_off + static_cast<long>(t) * NH];
        else if (chunked)
            Vg = V;
        const quadratic_path path = chunked || kept_w ? quadratic_path::kept : unkept_path(Tn);
        // The fused path reads K and V' in panels; kept weights need no K^T.
        const bool fused = path == quadratic_path::fused;
        if (!fused && (chunked || !kept_w)) keys_transposed(scratch, in.k + off, fk, Tn);
        if (!fused)
            transpose_into(scratch.Vgt.data(), copy_vg ? Vg.data() : in.v + off, Tn, HS, copy_vg ? HS : C);  // (HS, T)
        dVg.setZero();
        if (features_) {
            matrix_map<T>(scratch.dFq.data(), Tn, HS).setZero();
            matrix_map<T>(scratch.dFk.data(), Tn, HS).setZero();
        }

        if (chunked)
            numerator_backward_chunked(grads.dq + off, grads.dk + off, scratch, in.q + off, in.k + off, fq, fk, Tn);
        else if (fused)
            numerator_backward_fused(grads.dq + off, grads.dk + off, scratch, row_max_pair(cache, bh), cache.T_cap,
                                     in.q + off, in.k + off, copy_vg ? Vg.data() : in.v + off, copy_vg ? HS : C, Tn);
        else if (path == quadratic_path::tiled)
            numerator_backward_tiled(grads.dq + off, grads.dk + off, scratch, row_max_pair(cache, bh), cache.T_cap,
                                     in.q + off, in.k + off, fq, fk, Tn);
        else
            numerator_backward_quadratic(grads.dq + off, grads.dk + off, scratch,
                                         kept_pair(cache.kept_scores, cache, bh), kept_w, in.q + off, in.k + off, fq,
                                         fk, Tn);

        if (in_gate_) {
            for (int j = 0; j < Tn; ++j) {
                const long gi = gate_off + static_cast<long>(j) * NH;
                dV.row(j) += dVg.row(j) * in.in_gate[gi];
                grads.din_gate[gi] += dVg.row(j).dot(V.row(j));
            }
        } else {
            dV += dVg;
        }
        if (features_) {
            const_matrix_map<T> Fq(fq, Tn, HS), Fk(fk, Tn, HS);
            const_matrix_map<T> dFq(scratch.dFq.data(), Tn, HS), dFk(scratch.dFk.data(), Tn, HS);
            for (int t = 0; t < Tn; ++t) {
                features_->backward(&dQ(t, 0), dFq.row(t).data(), Q.row(t).data(), Fq.row(t).data(), HS);
                features_->backward(&dK(t, 0), dFk.row(t).data(), K.row(t).data(), Fk.row(t).data(), HS);
            }
        }
    }
}

template <class T>
void attention_layer<T>::sum_denominator_grads(T* ddenom, const attention_cache<T>& cache, int bh_begin,
                                               int bh_end) const {
    const int P = denominator_param_count();
    if (!P || !ddenom) return;
    for (int bh = bh_begin; bh < bh_end; ++bh)
        for (int i = 0; i < P; ++i) ddenom[i] += cache.dparams[static_cast<size_t>(bh) * P + i];
}

template <class T>
void attention_layer<T>::forward(T* out, attention_cache<T>& cache, const attention_inputs<T>& in, int B,
                                 int Tn) const {
#pragma omp parallel if (attention_work(B, NH_, Tn, HS_) > attention_parallel_threshold)
    {
        attention_scratch<T> scratch;
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH_; ++bh) forward_heads(out, cache, in, Tn, bh, bh + 1, scratch);
    }
}

template <class T>
void attention_layer<T>::backward(const attention_grads<T>& grads, const T* dout, attention_cache<T>& cache,
                                  const attention_inputs<T>& in, int B, int Tn) const {
#pragma omp parallel if (attention_work(B, NH_, Tn, HS_) > attention_parallel_threshold)
    {
        attention_scratch<T> scratch;
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH_; ++bh) backward_heads(grads, dout, cache, in, Tn, bh, bh + 1, scratch);
    }
    // Sum the per-head parameter gradients in a fixed order (deterministic).
    sum_denominator_grads(grads.ddenom_params, cache, 0, B * NH_);
}

template struct attention_cache<float>;
template struct attention_cache<double>;
template struct attention_scratch<float>;
template struct attention_scratch<double>;
template class attention_layer<float>;
template class attention_layer<double>;

}  // namespace attnlab
