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
// The chunked form (chunked.cpp) replaces only the step from (du, dz) to
// (dv', dq, dk) and from (q, k, v') to (u, z); the rest is shared.
#include "attnlab/attention/attention.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
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
// Row r of a block of rows [t0, ..) against keys [k0, ..) sees keys < t0 - k0 + r + 1.
row_band causal_keys(int t0, int k0) { return {INT_MIN / 2, t0 - k0 + 1}; }
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
typename attention_layer<T>::block_weights attention_layer<T>::scratch_block(attention_scratch<T>& scratch) const {
    return {scratch.S.data(), scratch.W.data(), false};
}

namespace {
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

template <class T>
quadratic_path attention_layer<T>::unkept_path(int Tn) const {
    switch (forced_path.load()) {
        case quadratic_path::rows: return quadratic_path::rows;
        case quadratic_path::tiled: return quadratic_path::tiled;
        case quadratic_path::fused: return fused_ ? quadratic_path::fused : quadratic_path::tiled;
        default: return fused_ && Tn >= fused_from_length ? quadratic_path::fused : quadratic_path::tiled;
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
