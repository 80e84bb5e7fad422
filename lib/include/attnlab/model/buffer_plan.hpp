// Every buffer of transformer<T> besides its parameters and gradients, sized
// by one function (llm.c style): the float activations and the backward's
// scratch are carved from one buffer, the arena, at the offsets the plan
// gives (transformer::reserve allocates it, block_acts_at and
// block_scratch_at point into it), the training memory estimate (train/memory_estimate.hpp) and
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
#include <cstdint>

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
    // activations (block_acts's views, per layer, and the model's own)
    residual,  // (N, C), L + 1 streams: x_l enters block l
    attn_norm,
    attn_rstd,  // per layer: ln1 (N, C), rstd1 (N)
    q,
    k,
    v,       // (N, C), q and k after rope
    qkv,     // (N, 3C) the q, k, v product (after the short convolution), one copy: the forward's scratch
    qkv_in,  // (N, 3C) the q, k, v product before the short convolution (model.short_conv > 0)
    in_gate,
    out_gate,   // g_in, g_out (N, NH) when used
    heads_out,  // att (N, C): the heads' outputs, before o
    mid,        // (N, C): x after the attention residual
    mlp_norm,
    mlp_rstd,  // ln2 (N, C), rstd2 (N) with an MLP
    mlp_gate,  // gate_up (N, 2F) with swiglu: gate and up side by side (one product)
    mlp_up,    // up (N, F) with gelu
    mlp_act,   // act (N, F)
    final_norm,
    final_rstd,   // the final norm (N, C) and its rstd (N)
    answer_norm,  // the final norm's answer rows (A, C)
    logits,
    probs,          // (A, V)
    answer_losses,  // (A)
    answer_rows,
    answer_targets,
    answer_predictions,  // (A) integers
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
    // backward scratch (block_scratch's views, shared by the layers, and the head's)
    d_residual,
    d_norm,
    d_q,
    d_k,
    d_v,
    d_heads_out,  // (N, C) dL/dx of the residual stream, of a norm's output, dq, dk, dv, datt
    d_qkv,        // (N, 3C): the gradients of the q, k, v product side by side
    d_mlp_gate,   // dgate_up (N, 2F) with swiglu
    d_mlp_up,     // dup (N, F) otherwise
    d_mlp_act,    // dact (N, F)
    d_in_gate,
    d_out_gate,
    d_gate_pre,  // dg_in, dg_out, dgate_pre (N, NH)
    d_answer_norm,
    d_logits,  // of the answer rows' final norm (A, C) and of the logits (A, V)
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
    scratch_Kp,
    scratch_Vp,  // (ceil(T / 32), HS, 32) K and g_in V in panels: the fused path (attention.hpp)
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
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    buffer_group group = buffer_group::activations;
    std::size_t elements = 0;    // of one copy
    std::size_t copies = 1;      // layers, streams, shards
    std::size_t elem_bytes = 0;  // sizeof of its scalar
    // Read by the backward pass: what a training step must keep (`bench
    // train` counts these; scratch it could reuse is not counted).
    bool kept_for_backward = false;
    // Carved from the arena: copy i at element offset + i * stride (npos: allocated on its own).
    std::size_t offset = npos, stride = 0;
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
    // Floats of the arena: its entries, each copy starting on a 64-byte
    // boundary from the first such boundary in it (64 bytes of slack included).
    std::size_t arena_elements = 0;

    const buffer_entry& operator[](model_buffer b) const { return entries[static_cast<std::size_t>(b)]; }
    std::size_t elements(model_buffer b) const { return (*this)[b].elements; }
    std::size_t bytes(buffer_group g) const;  // every entry of the group, all copies
    std::size_t kept_for_backward_bytes() const;
    // Element `first` of copy `copy` of arena entry b in `arena` (arena_elements
    // long), null when the entry is empty.
    template <class T>
    T* carve(T* arena, model_buffer b, std::size_t copy, std::size_t first = 0) const {
        const buffer_entry& e = (*this)[b];
        if (e.elements == 0) return nullptr;
        const auto at = reinterpret_cast<std::uintptr_t>(arena);
        T* aligned = arena + ((64 - at % 64) % 64) / sizeof(T);  // the first 64-byte boundary
        return aligned + e.offset + copy * e.stride + first;
    }
};

buffer_plan plan_model_buffers(const buffer_plan_input& in);
// Whether linear_forward reads this forward product weight transposed (small
// products, ops.hpp): the model then keeps a copy of W^T, made once per
// forward instead of once per product.
bool reads_transposed(const linear_weight& w);
// Elements of those copies (saturating).
std::size_t transposed_weight_elements(const model_config& m, const model_offsets& offsets, int V);

}  // namespace attnlab
