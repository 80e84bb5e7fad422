// The size of every model buffer (buffer_plan.hpp), one case per buffer.
#include "attnlab/model/buffer_plan.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "attnlab/attention/attention.hpp"
#include "attnlab/attention/variants.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/ops/ops.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

namespace {

using sz = std::size_t;

// The dimensions every size is made of (buffer_plan.hpp's legend).
struct dims {
    sz N, A, C, NH, HS, F, V, L;
    bool rope, mlp, swiglu, in_gate, out_gate, weight_sum, short_conv;
    attention_cache_size cache;      // one layer's
    attention_scratch_size scratch;  // one shard's
    sz rope_table, P, shards;
    sz transposed;  // elements of the transposed weights
    sz f;           // bytes of a float of the model
};

dims dims_of(const buffer_plan_input& in, sz P) {
    const model_config& m = in.model;
    dims d{};
    d.N = static_cast<sz>(in.B) * in.T;
    d.A = in.answers < 0 ? d.N : static_cast<sz>(in.answers);
    d.C = static_cast<sz>(m.d_model);
    d.NH = static_cast<sz>(m.heads);
    d.HS = d.C / d.NH;
    d.F = static_cast<sz>(resolved_mlp_hidden(m));
    d.V = static_cast<sz>(in.vocab);
    d.L = static_cast<sz>(m.layers);
    d.rope = m.position == position_kind::rope;
    d.mlp = m.mlp != mlp_kind::none;
    d.swiglu = m.mlp == mlp_kind::swiglu;
    d.short_conv = m.short_conv > 0;
    d.in_gate = in.attention.in_gate;
    d.out_gate = uses_out_gate(in.attention);
    d.weight_sum = traits_of(in.attention.denominator).uses_weight_sum;
    const int HS = static_cast<int>(d.HS);
    d.cache = attention_cache_size_of(in.attention, in.B, in.T, m.heads, HS);
    d.scratch = attention_scratch_size_of(in.attention, in.T, HS);
    d.rope_table = d.rope ? rope_table_elements(in.max_T, HS) : 0;
    d.P = P;
    // transformer::plan_shards: at most one shard per thread and per sequence.
    d.shards = std::min(static_cast<sz>(std::max(in.threads, 1)), static_cast<sz>(std::max(in.B, 1)));
    d.f = in.float_bytes;
    return d;
}

// A float buffer of `elements` per copy.
buffer_entry floats(buffer_group g, sz elements, sz copies, bool kept, sz f) { return {g, elements, copies, f, kept}; }

buffer_entry plan_entry(model_buffer b, const dims& d) {
    using bg = buffer_group;
    using mb = model_buffer;
    // Products saturate (util/saturating_size.hpp): a huge config never wraps to a small plan.
    const sz NC = mul_saturating(d.N, d.C), NF = mul_saturating(d.N, d.F), NG = mul_saturating(d.N, d.NH), f = d.f,
             L = d.L;
    const sz AC = mul_saturating(d.A, d.C), AV = mul_saturating(d.A, d.V);
    auto act = [&](sz n, sz copies, bool kept) { return floats(bg::activations, n, copies, kept, f); };
    auto cache = [&](sz n, bool kept) { return floats(bg::attention, n, L, kept, f); };
    auto bwd = [&](sz n) { return floats(bg::backward, n, 1, false, f); };
    auto shard = [&](sz n) { return floats(bg::per_thread, n, d.shards, false, f); };
    switch (b) {
        case mb::residual: return act(NC, L + 1, true);  // each block's input, and the final norm's
        case mb::attn_norm: return act(NC, L, true);
        case mb::attn_rstd: return act(d.N, L, true);
        case mb::q:
        case mb::k:
        case mb::v: return act(NC, L, true);
        case mb::qkv: return act(mul_saturating(NC, 3), 1, false);
        case mb::qkv_in: return act(d.short_conv ? mul_saturating(NC, 3) : 0, L, true);  // the convolution's input
        case mb::in_gate: return act(d.in_gate ? NG : 0, L, true);
        case mb::out_gate: return act(d.out_gate ? NG : 0, L, true);
        case mb::heads_out: return act(NC, L, true);
        case mb::mid: return act(NC, L, d.mlp);  // read by the MLP norm's backward only
        case mb::mlp_norm: return act(d.mlp ? NC : 0, L, true);
        case mb::mlp_rstd: return act(d.mlp ? d.N : 0, L, true);
        case mb::mlp_gate: return act(d.swiglu ? mul_saturating(NF, 2) : 0, L, true);
        case mb::mlp_up: return act(d.mlp && !d.swiglu ? NF : 0, L, true);
        case mb::mlp_act: return act(d.mlp ? NF : 0, L, true);
        case mb::final_norm: return act(NC, 1, false);  // the head reads the answer rows' copy
        case mb::final_rstd: return act(d.N, 1, true);
        case mb::answer_norm: return act(AC, 1, true);
        case mb::logits: return act(AV, 1, false);
        case mb::probs: return act(AV, 1, true);
        case mb::answer_losses: return act(d.A, 1, false);
        case mb::answer_rows: return {bg::activations, d.A, 1, sizeof(int), false};
        case mb::answer_targets:
        case mb::answer_predictions: return {bg::activations, d.A, 1, sizeof(std::int32_t), false};
        case mb::cache_wsum: return cache(d.cache.wsum, d.weight_sum);  // read only when the denominator divides by z
        case mb::cache_numer: return cache(d.cache.numer, true);
        case mb::cache_phi_q:
        case mb::cache_phi_k: return cache(d.cache.features, true);
        case mb::cache_dparams: return cache(d.cache.dparams, false);
        case mb::cache_nonpositive: return {bg::attention, d.cache.pairs, L, sizeof(long), false};
        case mb::cache_min_abs: return cache(d.cache.pairs, false);
        case mb::cache_weights: return cache(d.cache.weights, true);
        case mb::cache_scores: return cache(d.cache.scores, true);
        case mb::cache_row_max: return cache(d.cache.row_max, true);
        // The backward scratch is allocated whatever the model.
        case mb::d_residual:
        case mb::d_norm:
        case mb::d_q:
        case mb::d_k:
        case mb::d_v:
        case mb::d_heads_out: return bwd(NC);
        case mb::d_qkv: return bwd(mul_saturating(NC, 3));
        case mb::d_mlp_gate: return bwd(d.swiglu ? mul_saturating(NF, 2) : 0);
        case mb::d_mlp_up: return bwd(d.swiglu ? 0 : NF);
        case mb::d_mlp_act: return bwd(NF);
        case mb::d_in_gate:
        case mb::d_out_gate:
        case mb::d_gate_pre: return bwd(NG);
        case mb::d_answer_norm: return bwd(AC);
        case mb::d_logits: return bwd(AV);
        case mb::rope_cos:
        case mb::rope_sin: return floats(bg::tables, d.rope_table, 1, false, f);
        case mb::transposed_weights: return floats(bg::tables, d.transposed, 1, false, f);
        case mb::scratch_S:
        case mb::scratch_W:
        case mb::scratch_dW: return shard(d.scratch.block);
        case mb::scratch_Vg:
        case mb::scratch_dU:
        case mb::scratch_dVg:
        case mb::scratch_dFq:
        case mb::scratch_dFk:
        case mb::scratch_Kt:
        case mb::scratch_Vgt: return shard(d.scratch.head);
        case mb::scratch_dz: return shard(d.scratch.dz);
        case mb::scratch_row: return shard(d.scratch.row);
        case mb::scratch_Kp:
        case mb::scratch_Vp: return shard(d.scratch.panels);
        case mb::scratch_Pq:
        case mb::scratch_Pk:
        case mb::scratch_dP: return shard(d.scratch.chunk_features);
        case mb::scratch_state:
        case mb::scratch_dstate: return shard(d.scratch.state);
        case mb::scratch_state_sum:
        case mb::scratch_dstate_sum: return shard(d.scratch.state_sum);
        case mb::shard_grads: return floats(bg::per_thread, d.P, d.shards - 1, false, f);
        case mb::count: break;
    }
    return {};
}

// Entries carved from the arena: the float activations and backward scratch
// but those the model hands out as vectors (logits, losses) and the integers.
bool in_arena(model_buffer b, const buffer_entry& e) {
    using mb = model_buffer;
    if (e.group != buffer_group::activations && e.group != buffer_group::backward) return false;
    switch (b) {
        case mb::logits:
        case mb::answer_losses:
        case mb::answer_rows:
        case mb::answer_targets:
        case mb::answer_predictions: return false;
        default: return true;
    }
}

}  // namespace

std::size_t buffer_plan::bytes(buffer_group g) const {
    std::size_t n = 0;
    for (const auto& e : entries)
        if (e.group == g) n = add_saturating(n, e.bytes());
    return n;
}

std::size_t buffer_plan::kept_for_backward_bytes() const {
    std::size_t n = 0;
    for (const auto& e : entries)
        if (e.kept_for_backward) n = add_saturating(n, e.bytes());
    return n;
}

bool reads_transposed(const linear_weight& w) {
    const auto as_int = [](std::size_t n) { return static_cast<int>(std::min<std::size_t>(n, INT_MAX)); };
    return linear_reads_transposed_weight(as_int(w.in), as_int(w.out));
}

std::size_t transposed_weight_elements(const model_config& m, const model_offsets& offsets, int V) {
    std::size_t n = 0;
    for (const linear_weight& w : forward_product_weights(m, offsets, V))
        if (reads_transposed(w)) n = add_saturating(n, mul_saturating(w.out, w.in));
    return n;
}

buffer_plan plan_model_buffers(const buffer_plan_input& in) {
    buffer_plan plan;
    model_offsets off;
    plan.param_count = build_param_layout(in.model, in.attention, in.vocab, in.max_T, off).total();
    dims d = dims_of(in, plan.param_count);
    d.transposed = transposed_weight_elements(in.model, off, in.vocab);
    plan.shards = static_cast<int>(d.shards);
    // Each copy starts on a 64-byte boundary of the (aligned) arena: no op's
    // vectors straddle two buffers, and where a buffer sits does not depend on its neighbours' sizes.
    const std::size_t align = std::max<std::size_t>(1, 64 / std::max<std::size_t>(1, d.f));
    auto round_up = [&](std::size_t n) { return add_saturating(n, align - 1) / align * align; };
    for (std::size_t i = 0; i < plan.entries.size(); ++i) {
        buffer_entry& e = plan.entries[i];
        e = plan_entry(static_cast<model_buffer>(i), d);
        if (!in_arena(static_cast<model_buffer>(i), e)) continue;
        e.offset = plan.arena_elements;
        e.stride = round_up(e.elements);
        plan.arena_elements = add_saturating(plan.arena_elements, mul_saturating(e.stride, e.copies));
    }
    plan.arena_elements = add_saturating(plan.arena_elements, align);  // slack for carve's aligned start
    return plan;
}

}  // namespace attnlab
