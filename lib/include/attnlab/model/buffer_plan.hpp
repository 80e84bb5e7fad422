// Every buffer of transformer<T> besides its parameters and gradients, sized
// by one function (llm.c style): transformer::reserve allocates from the
// plan, the training memory estimate (train/memory_estimate.hpp) and
// `bench train` (bench/train_bench.hpp) sum it. A new buffer is a new
// model_buffer value and its case in plan_entry (buffer_plan.cpp; -Wswitch
// refuses a value without one); the attention caches and scratch are sized by
// the attention module's own attention_cache_size_of / attention_scratch_size_of,
// the RoPE tables by rope_table_elements.
//
// Sizes: N = B T rows of the reserved batch, A answer rows the head holds
// (every row: the model reserves for N), C = d_model, NH heads of HS,
// F = MLP hidden size, V = vocabulary, L = layers, P = parameters.
#pragma once
#include <array>
#include <cstddef>

#include "attnlab/config/run_config.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

// Where a buffer's bytes are reported (memory_estimate's terms).
enum class buffer_group {
    activations,  // the forward's outputs, kept for the backward, and the head's
    attention,    // every layer's attention_cache
    backward,     // the backward's scratch, shared by the layers
    tables,       // RoPE cos and sin
    per_thread,   // one copy per data-parallel shard
};

enum class model_buffer {
    // activations (transformer::reserve)
    residual,  // x_: (N, C), L + 1 streams
    attn_norm,
    attn_rstd,  // per layer: ln1 (N, C), rstd1 (N)
    q,
    k,
    v,       // (N, C), q and k after rope
    qkv_in,  // (N, 3C) the q, k, v product before the short convolution (model.short_conv > 0)
    in_gate,
    out_gate,   // g_in, g_out (N, NH) when used
    heads_out,  // att (N, C): the heads' outputs, before o
    mid,        // (N, C): x after the attention residual
    mlp_norm,
    mlp_rstd,  // ln2 (N, C), rstd2 (N) with an MLP
    mlp_gate,  // fc_gate_up (N, 2F) with swiglu: gate and up side by side (one product)
    mlp_up,    // fc_up (N, F) with gelu
    mlp_act,   // act (N, F)
    final_norm,
    final_rstd,   // lnf_ (N, C), rstdf_ (N)
    answer_norm,  // lnf_ans_ (A, C)
    logits,
    probs,          // (A, V)
    answer_losses,  // losses_ (A)
    answer_rows,
    answer_targets,
    answer_predictions,  // ans_rows_, ans_tgt_, ans_pred_ (A) integers
    // attention caches, per layer (attention_cache_size_of)
    cache_wsum,
    cache_numer,
    cache_phi_q,
    cache_phi_k,
    cache_dparams,
    cache_nonpositive,
    cache_min_abs,
    cache_weights,
    cache_scores,   // (B, NH, T, T) the forward's weights and scores, when kept (attention::keeps_weights)
    cache_row_max,  // (B, NH, 2, T) the tiled path's row max and its tile (exp with a scale-invariant denominator)
    // backward scratch
    d_residual,
    d_norm,
    d_q,
    d_k,
    d_v,
    d_heads_out,  // dres_, dln_, dq_, dk_, dv_, datt_ (N, C)
    d_qkv,        // dqkv_ (N, 3C): the gradients of the q, k, v product side by side
                  // (and, in the forward, that product before its split into q, k, v)
    d_mlp_gate,   // dfc_gate_up_ (N, 2F) with swiglu
    d_mlp_up,     // dfc_up_ (N, F) otherwise
    d_mlp_act,    // dact_ (N, F)
    d_in_gate,
    d_out_gate,
    d_gate_pre,  // dg_in_, dg_out_, dgate_pre_ (N, NH)
    d_answer_norm,
    d_logits,  // dlnf_ans_ (A, C), dlogits_ (A, V)
    // tables
    rope_cos,
    rope_sin,            // (max_T, HS / 2) with RoPE
    transposed_weights,  // W^T of each forward product weight that linear_forward reads transposed
    // per data-parallel shard (attention_scratch_size_of), and threads 1..'s own gradients
    scratch_S,
    scratch_W,
    scratch_dW,  // (block_rows, T)
    scratch_Vg,
    scratch_dU,
    scratch_dVg,
    scratch_dFq,
    scratch_dFk,  // (T, HS)
    scratch_Kt,
    scratch_Vgt,  // (HS, T)
    scratch_dz,
    scratch_row,  // (T), (HS)
    scratch_Pq,
    scratch_Pk,
    scratch_dP,  // chunked form: (chunk, F) a chunk's state features (F: attention/chunked.hpp)
    scratch_state,
    scratch_dstate,  // chunked form: (F, HS) the running state and its gradient, recomputed by the backward
    scratch_state_sum,
    scratch_dstate_sum,  // chunked form: (F)
    shard_grads,         // (P), one per shard but the first
    count
};

struct buffer_entry {
    buffer_group group = buffer_group::activations;
    std::size_t elements = 0;    // of one copy
    std::size_t copies = 1;      // layers, streams, shards
    std::size_t elem_bytes = 0;  // sizeof of its scalar
    // Read by the backward pass: what a training step must keep (`bench
    // train` counts these; scratch it could reuse is not counted).
    bool kept_for_backward = false;
    std::size_t bytes() const { return mul_saturating(mul_saturating(elements, copies), elem_bytes); }  // saturates
};

// What the buffers are sized for.
struct buffer_plan_input {
    model_config model;
    attention_config attention;
    int vocab = 1, max_T = 1;     // the model's (max_T: RoPE tables, learned positions)
    int B = 1, T = 1;             // the batch reserved for
    int answers = -1;             // answer rows the head holds; -1: every row (as transformer reserves)
    int threads = 1;              // data-parallel shards: at most min(threads, B)
    std::size_t float_bytes = 4;  // sizeof(T) of transformer<T>
};

struct buffer_plan {
    std::size_t param_count = 0;  // P, of the model's param_layout
    int shards = 1;               // copies of the per-thread buffers
    std::array<buffer_entry, static_cast<std::size_t>(model_buffer::count)> entries{};

    const buffer_entry& operator[](model_buffer b) const { return entries[static_cast<std::size_t>(b)]; }
    std::size_t elements(model_buffer b) const { return (*this)[b].elements; }
    std::size_t bytes(buffer_group g) const;  // every entry of the group, all copies
    std::size_t kept_for_backward_bytes() const;
};

buffer_plan plan_model_buffers(const buffer_plan_input& in);
// Whether linear_forward reads this forward product weight transposed (small
// products, ops.hpp): the model then keeps a copy of W^T, made once per
// forward instead of once per product.
bool reads_transposed(const linear_weight& w);
// Elements of those copies (saturating).
std::size_t transposed_weight_elements(const model_config& m, const model_offsets& offsets, int V);

}  // namespace attnlab
