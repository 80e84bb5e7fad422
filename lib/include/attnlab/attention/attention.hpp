// Causal multi-head attention in parallel (quadratic) form, for any variant
// of docs/attention.md made of a numerator (score kernel or feature map) and a
// denominator, with the optional input and output gates:
//   w_tj = f(min(q_t.k_j / sqrt(HS), clamp))  or  phi(q_t).phi(k_j)     (j <= t)
//   u_t  = sum_j w_tj g_in_j v_j,  z_t = sum_j w_tj
//   o_t  = g_out_t * D(u_t, z_t, t)
// Fused in row blocks: for rows [t0, t1) of one head, the scores and weights
// (t1 - t0, t1) are computed into per-thread scratch and the cache keeps
// O(T HS) per head (u_t, z_t, features): the backward recomputes the block's
// weights. Where they are small enough (keeps_weights), the quadratic form
// keeps them in the cache instead, and the backward reads them back: one
// product and one exp pass fewer, bit for bit the same numbers.
// Otherwise the rows are tiled (quadratic_path::tiled): rows [t0, t1)
// against keys [k0, k0 + tile_keys) at a time, so that a
// tile's scores, weights and their gradient stay in L1/L2; u_t and z_t
// accumulate tile by tile. exp with a scale-invariant denominator subtracts
// an online row max (u_t and z_t rescaled by exp(m_old - m_new) when it
// grows); the cache keeps each row's final max and the tile it lies in, from
// which the backward recomputes each tile's weights and the argmax term of
// the gradient (variants.cpp's exp_kernel). Signed kernels (polynomials) and
// feature maps have no max to subtract: their tiles just add up.
// exp with a scale-invariant denominator at head sizes 16, 32 and 64 takes
// the fused path instead (quadratic_path::fused, lib/src/attention/fused_exp.hpp):
// scores, weights and their gradients never leave registers and L1 (8 query
// rows against 32 keys at a time), the backward in FlashAttention-2's order;
// the cache keeps the same row max, with the argmax itself beside it.
// A variant with a finite state can instead run in the chunked form
// (chunked.hpp, chunked.cpp): the same u_t and z_t in time linear in T;
// cfg.form picks the form, `auto` by a cost model for each sequence length.
// Parallelism: forward()/backward() run one OpenMP loop over (batch, head)
// pairs; forward_heads()/backward_heads() do a range of pairs on the calling
// thread (the model's data-parallel shards call these).
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "attnlab/attention/chunked.hpp"
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
struct attention_grads {         // all accumulated (+=)
    T* dq = nullptr;             // (N, C)
    T* dk = nullptr;             // (N, C)
    T* dv = nullptr;             // (N, C)
    T* din_gate = nullptr;       // (N, NH)
    T* dout_gate = nullptr;      // (N, NH)
    T* ddenom_params = nullptr;  // (param_count)
};

// Elements of an attention_cache for B sequences of up to T_cap: the one
// formula that attention_layer::init_cache allocates and the model's buffer
// plan (model/buffer_plan.hpp) counts.
struct attention_cache_size {
    std::size_t wsum = 0;      // (B, NH, T_cap)
    std::size_t numer = 0;     // (B, NH, T_cap, HS)
    std::size_t features = 0;  // phi_q and phi_k each: (B, NH, T_cap, HS) for feature maps, else 0
    std::size_t dparams = 0;   // (B, NH, P) with P the denominator's out_norm parameters
    std::size_t pairs = 0;     // nonpositive_wsum (longs) and min_abs_wsum: (B * NH) each
    std::size_t weights = 0;   // (B, NH, T_cap, T_cap) the forward's weights when keeps_weights, else 0
    std::size_t scores = 0;    // the same for the scores (score kernels' backward reads them)
    std::size_t row_max = 0;   // (B, NH, 2, T_cap) the tiled/fused path's row max and its index (exp, scale-invariant)
};
attention_cache_size attention_cache_size_of(const attention_config& cfg, int B, int T_cap, int NH, int HS);

// Whether the cache keeps the forward's weights (and scores) for the
// backward: in the quadratic form, when they take at most
// kept_weights_limit elements per layer (1 MiB of floats: T 64 at batch 32
// with 2 heads, or T 128 at batch 8). Beyond that they leave the caches,
// and the tiled path's recomputation costs less than the memory traffic
// (measured: docs/attention.md, "Long rows").
constexpr std::size_t kept_weights_limit = std::size_t(1) << 18;
bool keeps_weights(const attention_config& cfg, int B, int T_cap, int NH, int HS);

// How the quadratic form gets a row block's weights: kept by the forward in
// the cache (keeps_weights), recomputed by the backward for rows against
// every key at once (the path before tiling: only when forced), tiled
// over the keys (nothing of T x T anywhere; automatic, without kept weights),
// or fused (nothing of T x T, nor of a row block, in memory: automatic
// without kept weights where fused_path_serves from T fused_from_length on,
// the tiled path elsewhere).
// ATTNLAB_QUADRATIC_PATH=kept|rows|tiled|fused sets the start's.
enum class quadratic_path { automatic, kept, rows, tiled, fused };
// For tests and benchmarks: every quadratic-form attention of this process
// takes `path` (kept: whatever the cache's size; rows, tiled, fused: keeps
// nothing; fused where it serves, tiled elsewhere), automatic restores the
// rule above. Set it before init_cache. Returns the old one.
quadratic_path force_quadratic_path(quadratic_path path);
// Whether the quadratic form without kept weights tiles (unless rows is forced).
bool quadratic_tiles();
// Whether the fused path computes this variant at head size HS: exp with a
// scale-invariant denominator (clamped, gated, detached or not), HS 16, 32 or 64.
bool fused_path_serves(const attention_config& cfg, int HS);
// The shortest sequence the automatic rule gives the fused path (where it
// serves and the weights are not kept): from T 128 on it measured faster than
// the tiled path at every head size it serves (0.71x to 0.99x of its
// attention time), below it slower at head size 64 (up to 1.28x; short rows
// spend more of their time on the diagonal's partial panels).
constexpr int fused_from_length = 128;
// (Batch, head) pairs the fused kernels have computed so far in this
// process, forward and backward each counting (tests: which path ran).
long fused_attention_runs();

// What the backward pass needs, per (b, h): sized for at most (B, T_cap).
template <class T>
struct attention_cache {
    int B = 0, T_cap = 0, NH = 0, HS = 0;
    std::vector<T> wsum;          // (B, NH, T)    z_t
    std::vector<T> numer;         // (B, NH, T, HS) u_t
    std::vector<T> phi_q, phi_k;  // (B, NH, T, HS) features (feature maps)
    std::vector<T> dparams;       // (B, NH, P) per-head parts of the denominator's parameter gradient
    // (B, NH, T_cap, T_cap) or empty (keeps_weights): per (b, h), the row
    // block [t0, t1) of the forward's weights W (and scores S) is stored
    // (t1 - t0, t1) row-major from element t0 * T of the pair's T_cap^2.
    std::vector<T> kept_weights, kept_scores;
    // (B, NH, 2, T_cap) or empty: per (b, h), the tiled or fused path's row max m_t of
    // the (clamped) scores, then (tiled) the first key of the first tile that holds it,
    // where the backward finds its first index, or (fused) that index itself
    // (exp with a scale-invariant denominator).
    std::vector<T> row_max;
    // Of the divisor z_t (+ eps for elu1/relu) of the softmax denominator, last forward:
    std::vector<long> nonpositive_wsum;  // (B * NH) rows where it was <= 0
    std::vector<T> min_abs_wsum;         // (B * NH) its smallest magnitude (inf without softmax)
    void resize(int B, int T_cap, int NH, int HS, const attention_cache_size& n);
    // Rows of the last forward whose softmax sum was <= 0 (signed kernels can do this).
    long nonpositive_rows() const;
    // Smallest |z_t| of the last forward: near 0 the output and its gradient blow up.
    T min_abs_denominator() const;
};

// Elements of one thread's attention_scratch for sequences of up to T_cap
// (allocated by attention_scratch::resize, counted by the buffer plan).
// The chunked form's buffers are 0 unless choose_form picks it at T_cap
// (then also at every longer T: its cost grows linearly, the quadratic's
// quadratically).
struct attention_scratch_size {
    std::size_t block = 0;   // S, W, dW each: (block_rows, T_cap), or (Cn, Cn) when larger
    std::size_t head = 0;    // Vg, dU, dVg, dFq, dFk, Kt, Vgt each: (T_cap, HS), whatever the variant
    std::size_t dz = 0;      // (T_cap)
    std::size_t row = 0;     // (HS)
    std::size_t panels = 0;  // Kp, Vp each: (ceil(T_cap / 32), HS, 32) where fused_path_serves, else 0
    // chunked form, Cn = min(chunk, T_cap), F = chunked_feature_size:
    std::size_t chunk_features = 0;  // Pq, Pk, dP each: (Cn, F)
    std::size_t state = 0;           // St, dSt each: (F, HS) the running state and its gradient
    std::size_t state_sum = 0;       // zs, dzs each: (F)
};
attention_scratch_size attention_scratch_size_of(const attention_config& cfg, int T_cap, int HS);

// One thread's working memory for attention over sequences of up to T_cap:
// a row block of scores and weights, per-head (T, HS) gradients and, in the
// chunked form, one chunk's features and the running state. The state is
// recomputed in the backward, never kept per chunk.
template <class T>
struct attention_scratch {
    static constexpr int block_rows = 64;  // rows of a score block: (64, T) stays in L2
    static constexpr int tile_keys = 128;  // keys of a tile of the tiled path: (64, 128) stays in L1/L2
    std::vector<T> S, W, dW;               // (block_rows, T_cap) scores, weights, their gradient
    std::vector<T> Vg, dU, dVg;            // (T_cap, HS) g_in * V, dL/du, dL/d(g_in V)
    std::vector<T> dFq, dFk;               // (T_cap, HS) feature gradients (feature maps)
    std::vector<T> Kt, Vgt;                // (HS, T_cap) K^T and (g_in V)^T: small_gemm's B operands
    std::vector<T> dz, row;                // (T_cap) dL/dz_t, (HS) one row
    std::vector<T> Kp, Vp;                 // (T_cap / 32, HS, 32) K and g_in V in panels (the fused path)
    std::vector<T> Pq, Pk, dP;             // (Cn, F) a chunk's state features of q, k, and a gradient
    std::vector<T> St, dSt;                // (F, HS) state sum_j phi(k_j) v'_j^T and its gradient
    std::vector<T> zs, dzs;                // (F) sum_j phi(k_j) and its gradient
    void resize(const attention_scratch_size& n);
};

template <class T>
class attention_layer {
public:
    attention_layer(const attention_config& cfg, int NH, int HS);

    int denominator_param_count() const { return denom_->param_count(HS_); }
    bool has_in_gate() const { return in_gate_; }
    bool has_out_gate() const { return out_gate_; }
    void init_cache(attention_cache<T>& cache, int B, int T_cap) const;
    // The form forward_heads and backward_heads compute sequences of Tn
    // tokens in: attention.form, or for `auto` the cheaper by choose_form.
    parallel_form form_at(int Tn) const { return choose_form(cfg_, Tn, HS_); }

    // out (N, C) <- attention of the inputs.
    void forward(T* out, attention_cache<T>& cache, const attention_inputs<T>& in, int B, int Tn) const;
    // grads += gradients of the inputs given dout (N, C). ddenom_params is
    // summed over (b, h) in a fixed order after the parallel loop.
    void backward(const attention_grads<T>& grads, const T* dout, attention_cache<T>& cache,
                  const attention_inputs<T>& in, int B, int Tn) const;

    // The same for the (batch, head) pairs [bh_begin, bh_end) on this thread.
    // backward_heads leaves the denominator's parameter gradient per pair in
    // cache.dparams (the caller sums it with sum_denominator_grads).
    void forward_heads(T* out, attention_cache<T>& cache, const attention_inputs<T>& in, int Tn, int bh_begin,
                       int bh_end, attention_scratch<T>& scratch) const;
    void backward_heads(const attention_grads<T>& grads, const T* dout, attention_cache<T>& cache,
                        const attention_inputs<T>& in, int Tn, int bh_begin, int bh_end,
                        attention_scratch<T>& scratch) const;
    // ddenom (param_count) += the per-pair parts of pairs [bh_begin, bh_end).
    void sum_denominator_grads(T* ddenom, const attention_cache<T>& cache, int bh_begin, int bh_end) const;

private:
    // A row block's scores S and weights W (rows, keys): scratch, or the cache's kept copy.
    struct block_weights {
        T* S;
        T* W;
        bool kept;  // already computed by the forward (the backward reads them)
    };
    block_weights scratch_block(attention_scratch<T>& scratch) const;
    // Weights of rows [t0, t1) of one head against keys [0, t1) into
    // W (t1 - t0, t1), zero above the diagonal; score kernels keep the
    // clamped scaled scores in S. q: the head's (T, HS) rows with row
    // stride C; fq: its features (T, HS) contiguous (feature maps); the keys
    // come from scratch.Kt (keys_transposed).
    // Keys [k0, t1) only (W is then (t1 - t0, t1 - k0)): the chunked form's diagonal blocks.
    // Every product of a block goes through small_gemm (no BLAS call, the
    // causal half skipped): for these sizes it beats OpenBLAS at every length.
    // Keys [k0, k1) only: W is then (t1 - t0, k1 - k0) (the tiled path's tiles,
    // k1 <= t1). shift: per row of the block, the max to subtract (exp with
    // a scale-invariant denominator in the tiled path), or null: the kernel's own.
    void weight_block(block_weights b, const attention_scratch<T>& scratch, const T* q, const T* fq, int Tn, int t0,
                      int t1, int k0, int k1, const T* shift = nullptr) const;
    // S (t1 - t0, k1 - k0) <- the clamped scaled scores of rows [t0, t1) against keys [k0, k1).
    void score_block(T* S, const attention_scratch<T>& scratch, const T* q, int Tn, int t0, int t1, int k0,
                     int k1) const;
    // scratch.Kt (HS, T) <- K^T (score kernels, k with row stride C) or Phi(K)^T (feature maps).
    void keys_transposed(attention_scratch<T>& scratch, const T* k, const T* fk, int Tn) const;
    // Rows [t0, t1) of one head's u (T, HS) and z (T) from keys [k0, t1)
    // alone, and their backward (the terms of the pairs t, j in that block;
    // it reads scratch.Vgt, (g_in V)^T).
    // b: where the block's weights go (or, in the backward, are when b.kept).
    // k1: the keys end there (the tiled path's tiles; t1 otherwise); add: U and
    // z += the tile's terms instead of =. shift, through_max: the tiled
    // path's row maxima (exp with a scale-invariant denominator) and the
    // per-row sums of ds it adds to (the argmax's term, applied by the caller).
    void block_numerator(T* U, T* z, attention_scratch<T>& scratch, block_weights b, const T* q, const T* fq, int Tn,
                         int t0, int t1, int k0, int k1, bool add = false) const;
    void block_numerator_backward(T* dq, T* dk, attention_scratch<T>& scratch, block_weights b, const T* q, const T* k,
                                  const T* fq, const T* fk, int Tn, int t0, int t1, int k0, int k1,
                                  const T* shift = nullptr, T* through_max = nullptr) const;
    // Score kernels: scratch.dW (rows, keys) <- ds from dW, S and W, row by row.
    void score_rows_backward(attention_scratch<T>& scratch, block_weights b, int t0, int t1, int k0, int k1,
                             T* through_max) const;
    // The tiled path of numerator_quadratic and its backward (row_max: the
    // pair's (2, T_cap) share of cache.row_max, or null).
    void numerator_tiled(T* U, T* z, attention_scratch<T>& scratch, T* row_max, int T_cap, const T* q, const T* fq,
                         int Tn) const;
    void numerator_backward_tiled(T* dq, T* dk, attention_scratch<T>& scratch, const T* row_max, int T_cap, const T* q,
                                  const T* k, const T* fq, const T* fk, int Tn) const;
    // The fused path of the same (exp, scale-invariant, fused_path_serves);
    // the backward reads V' = g_in V at vg (row stride ld_vg).
    void numerator_fused(T* U, T* z, attention_scratch<T>& scratch, T* row_max, int T_cap, const T* q, const T* k,
                         int Tn) const;
    void numerator_backward_fused(T* dq, T* dk, attention_scratch<T>& scratch, const T* row_max, int T_cap, const T* q,
                                  const T* k, const T* vg, int ld_vg, int Tn) const;
    // The path of a pair of the quadratic form whose weights the cache does not keep, at Tn.
    quadratic_path unkept_path(int Tn) const;
    // One head's u (T, HS) and z (T) (z only when the denominator reads it)
    // from its q, k (row stride C), features Fq, Fk (feature maps) and
    // Vg = g_in V (T, HS): the quadratic and the chunked form. kept_s,
    // kept_w: the pair's (T_cap^2) share of the cache's kept scores and
    // weights, or null.
    void numerator_quadratic(T* U, T* z, attention_scratch<T>& scratch, T* kept_s, T* kept_w, const T* q, const T* fq,
                             int Tn) const;
    void numerator_chunked(T* U, T* z, attention_scratch<T>& scratch, const T* q, const T* k, const T* fq, const T* fk,
                           int Tn) const;
    // Their backward given scratch.dU and scratch.dz: dq, dk (row stride C)
    // +=, scratch.dVg, dFq, dFk += (all zeroed by the caller).
    void numerator_backward_quadratic(T* dq, T* dk, attention_scratch<T>& scratch, T* kept_s, T* kept_w, const T* q,
                                      const T* k, const T* fq, const T* fk, int Tn) const;
    void numerator_backward_chunked(T* dq, T* dk, attention_scratch<T>& scratch, const T* q, const T* k, const T* fq,
                                    const T* fk, int Tn) const;
    // The chunked form's state features P (rows, F) of rows [t0, t1) of q or
    // k (row stride C), or of their features (feature maps), and the
    // backward dx (rows, stride C) or dF (rows, HS) += J^T dP; a query's
    // features carry the series' coefficients (recurrent.hpp).
    void state_features(T* P, const T* x, const T* fx, int t0, int t1, bool query) const;
    void state_features_backward(T* dx, T* dfx, const T* dP, const T* x, int t0, int t1, bool query) const;

    attention_config cfg_;  // sizes its cache (attention_cache_size_of)
    int NH_, HS_;
    T scale_;
    bool clamp_on_;
    T clamp_;
    bool in_gate_, out_gate_;
    bool needs_weight_sum_;                    // the denominator divides by z_t (the table's uses_weight_sum)
    bool row_max_;                             // exp with a scale-invariant denominator: w = exp(s - max_j s)
    bool max_grad_;                            // ... and the gradient flows through the max (not detached)
    bool fused_;                               // fused_path_serves(cfg, HS)
    std::unique_ptr<score_kernel<T>> kernel_;  // exactly one of kernel_, features_
    std::unique_ptr<feature_map<T>> features_;
    std::unique_ptr<denominator<T>> denom_;
    std::size_t F_;       // chunked_feature_size: state features per head, 0 without a chunked form
    series_terms terms_;  // the chunked state's series (score kernels with a chunked form)
};

}  // namespace attnlab
