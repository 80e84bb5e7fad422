// One block, forward then backward (block.hpp): the ops of docs/model.md in
// order, then in reverse. Training (transformer.cpp, a shard's rows) and
// generation (generator.cpp, one row) call these.
#include "attnlab/model/block.hpp"

#include <algorithm>

#include "attnlab/attention/variants.hpp"

namespace attnlab {

namespace {

template <class T>
void zero_rows(T* p, long n) {
    std::fill(p, p + n, T(0));
}

// The block's products: weights, transposed copies (the forward's), biases and sizes.
template <class T>
struct block_linears {
    linear_weights<T> qkv, in_gate, out_gate, o, gate_up, up, down;
};

template <class T>
block_linears<T> block_linears_of(const block_params<T>& p, const block_shape<T>& s) {
    const block_tensors<const T*>&w = p.w, &wt = p.wt;
    const int C = s.C, F = s.F, NH = s.NH;
    block_linears<T> l;
    l.qkv = {w.qkv, wt.qkv, nullptr, C, 3 * C};
    l.in_gate = {w.in_gate, nullptr, w.in_gate_bias, C, NH};
    l.out_gate = {w.out_gate, nullptr, w.out_gate_bias, C, NH};
    l.o = {w.o, wt.o, nullptr, C, C};
    l.gate_up = {w.gate_up, wt.gate_up, nullptr, C, 2 * F};
    l.up = {w.up, wt.up, w.up_bias, C, F};
    l.down = {w.down, wt.down, w.down_bias, F, C};
    return l;
}

// What attention reads from the views (gates and the denominator's parameters when used).
template <class T>
attention_inputs<T> attention_inputs_of(const block_acts<T>& a, const block_params<T>& p, const block_shape<T>& s) {
    attention_inputs<T> in;
    in.q = a.q;
    in.k = a.k;
    in.v = a.v;
    if (s.in_gate) in.in_gate = a.g_in;
    if (s.out_gate) in.out_gate = a.g_out;
    in.denom_params = p.w.out_norm;
    return in;
}

// q, k, v (N, C) from their product qkv (N, 3C), RoPE applied to q and k.
template <class T>
void split_qkv(const block_acts<T>& a, const block_shape<T>& s, const block_rows& r) {
    const int C = s.C;
    for (int n = 0; n < r.N(); ++n) {
        const T* row = a.qkv + 3L * n * C;
        const long o = static_cast<long>(n) * C;
        if (s.rope) {
            rope_forward_at(a.q + o, row, *s.rope, r.position(n), s.NH, s.HS);
            rope_forward_at(a.k + o, row + C, *s.rope, r.position(n), s.NH, s.HS);
        } else {
            std::copy_n(row, C, a.q + o);
            std::copy_n(row + C, C, a.k + o);
        }
        std::copy_n(row + 2 * C, C, a.v + o);
    }
}

// out (n) += in (n), serially (a row at a time: no parallel region per row)
template <class T>
void add_row(T* out, const T* in, int n) {
    for (int i = 0; i < n; ++i) out[i] += in[i];
}

// dqkv (N, 3C) += [rope^T(dq) | rope^T(dk) | dv], the gradient of the product.
template <class T>
void merge_qkv_grads(const block_scratch<T>& d, const block_shape<T>& s, const block_rows& r) {
    const int C = s.C;
    for (int n = 0; n < r.N(); ++n) {
        T* row = d.dqkv + 3L * n * C;
        const long o = static_cast<long>(n) * C;
        if (s.rope) {
            rope_backward_at(row, d.dq + o, *s.rope, r.position(n), s.NH, s.HS);
            rope_backward_at(row + C, d.dk + o, *s.rope, r.position(n), s.NH, s.HS);
        } else {
            add_row(row, d.dq + o, C);
            add_row(row + C, d.dk + o, C);
        }
        add_row(row + 2 * C, d.dv + o, C);
    }
}

}  // namespace

template <class T>
block_shape<T> block_shape_of(const model_config& m, const attention_config& a, const rope_tables<T>* rope) {
    block_shape<T> s;
    s.C = m.d_model;
    s.NH = m.heads;
    s.HS = m.d_model / m.heads;
    s.F = resolved_mlp_hidden(m);
    s.mlp = m.mlp;
    s.short_conv = m.short_conv;
    s.in_gate = a.in_gate;
    s.out_gate = uses_out_gate(a);
    s.rope = rope;
    return s;
}

template <class P>
block_tensors<P> block_tensors_at(P base, const block_offsets& bo, mlp_kind mlp) {
    auto at = [&](std::size_t off) { return off == block_offsets::npos ? nullptr : base + off; };
    block_tensors<P> t;
    t.attn_norm = at(bo.attn_norm);
    t.qkv = at(bo.q);  // k and v follow q (the transformer checks)
    t.short_conv = at(bo.short_conv);
    t.in_gate = at(bo.in_gate);
    t.in_gate_bias = at(bo.in_gate_bias);
    t.out_gate = at(bo.out_gate);
    t.out_gate_bias = at(bo.out_gate_bias);
    t.out_norm = at(bo.out_norm);
    t.o = at(bo.o);
    t.mlp_norm = at(bo.mlp_norm);
    if (mlp == mlp_kind::swiglu) {
        t.gate_up = at(bo.mlp_gate);  // up follows gate (the transformer checks)
    } else {
        t.up = at(bo.mlp_up);
        t.up_bias = at(bo.mlp_up_bias);
    }
    t.down = at(bo.mlp_down);
    t.down_bias = at(bo.mlp_down_bias);
    return t;
}

template <class T>
block_acts<T> block_acts_at(T* arena, const buffer_plan& plan, int layer, long row0, const block_shape<T>& s) {
    using mb = model_buffer;
    const long C = s.C, F = s.F, NH = s.NH;
    auto at = [&](mb b, long per_row) { return plan.carve(arena, b, static_cast<std::size_t>(layer), row0 * per_row); };
    block_acts<T> a;
    a.x = at(mb::residual, C);
    a.out = plan.carve(arena, mb::residual, static_cast<std::size_t>(layer) + 1, row0 * C);
    a.ln1 = at(mb::attn_norm, C);
    a.rstd1 = at(mb::attn_rstd, 1);
    a.qkv = plan.carve(arena, mb::qkv, 0, row0 * 3 * C);  // one copy: forward scratch
    a.qkv_in = at(mb::qkv_in, 3 * C);
    a.q = at(mb::q, C);
    a.k = at(mb::k, C);
    a.v = at(mb::v, C);
    a.g_in = at(mb::in_gate, NH);
    a.g_out = at(mb::out_gate, NH);
    a.att = at(mb::heads_out, C);
    a.mid = at(mb::mid, C);
    a.ln2 = at(mb::mlp_norm, C);
    a.rstd2 = at(mb::mlp_rstd, 1);
    a.gate_up = at(mb::mlp_gate, 2 * F);
    a.up = at(mb::mlp_up, F);
    a.act = at(mb::mlp_act, F);
    return a;
}

template <class T>
block_scratch<T> block_scratch_at(T* arena, const buffer_plan& plan, long row0, const block_shape<T>& s) {
    using mb = model_buffer;
    const long C = s.C, F = s.F, NH = s.NH;
    auto at = [&](mb b, long per_row) { return plan.carve(arena, b, 0, row0 * per_row); };
    block_scratch<T> d;
    d.dres = at(mb::d_residual, C);
    d.dln = at(mb::d_norm, C);
    d.datt = at(mb::d_heads_out, C);
    d.dq = at(mb::d_q, C);
    d.dk = at(mb::d_k, C);
    d.dv = at(mb::d_v, C);
    d.dqkv = at(mb::d_qkv, 3 * C);
    d.dgate_up = at(mb::d_mlp_gate, 2 * F);
    d.dup = at(mb::d_mlp_up, F);
    d.dact = at(mb::d_mlp_act, F);
    d.dg_in = at(mb::d_in_gate, NH);
    d.dg_out = at(mb::d_out_gate, NH);
    d.dgate_pre = at(mb::d_gate_pre, NH);
    return d;
}

// ---------------------------------------------------------------- forward

template <class T>
void block_forward(const block_params<T>& p, const block_acts<T>& a, const block_shape<T>& s, const block_rows& r,
                   position_mixer<T>& mix) {
    const int N = r.N();
    const long NC = static_cast<long>(N) * s.C, NH = static_cast<long>(N) * s.NH;
    const block_linears<T> lin = block_linears_of(p, s);
    const block_tensors<const T*>& w = p.w;

    // attention sub-layer: mid = x + o(Attn(q, k, v)) of ln1 = RMSNorm(x)
    rmsnorm_forward(a.ln1, a.rstd1, a.x, w.attn_norm, N, s.C, s.eps);
    mix.done(block_op::norm);
    // q, k, v as one product of the adjacent (3C, C) weights (wider is faster
    // than three), through the short convolution when the model has one.
    if (w.short_conv) {
        linear_forward(a.qkv_in, a.ln1, lin.qkv, N);  // (N, 3C)
        mix.short_conv(a.qkv, a.qkv_in, w.short_conv);
    } else {
        linear_forward(a.qkv, a.ln1, lin.qkv, N);
    }
    split_qkv(a, s, r);
    // gates: sigmoid(a_h . ln1 + b_h) per head and row
    if (s.in_gate) {
        linear_forward(a.g_in, a.ln1, lin.in_gate, N);  // (N, NH)
        sigmoid_forward(a.g_in, a.g_in, NH);
    }
    if (s.out_gate) {
        linear_forward(a.g_out, a.ln1, lin.out_gate, N);
        sigmoid_forward(a.g_out, a.g_out, NH);
    }
    mix.done(block_op::qkv);
    mix.attend(a.att, attention_inputs_of(a, p, s));  // (N, C)
    mix.done(block_op::attention);
    // mid = x + att @ Wo^T, the product added onto the copy of x
    std::copy(a.x, a.x + NC, a.mid);
    linear_forward_add(a.mid, a.att, lin.o, N);
    mix.done(block_op::out_proj);

    // MLP sub-layer: out = mid + MLP(ln2 = RMSNorm(mid))
    if (s.mlp == mlp_kind::none) {
        std::copy(a.mid, a.mid + NC, a.out);
        return;
    }
    rmsnorm_forward(a.ln2, a.rstd2, a.mid, w.mlp_norm, N, s.C, s.eps);
    mix.done(block_op::norm);
    if (s.mlp == mlp_kind::swiglu) {
        // gate and up as one product of the adjacent (2F, C) weights
        linear_forward(a.gate_up, a.ln2, lin.gate_up, N);  // (N, 2F)
        swiglu_fused_forward(a.act, a.gate_up, N, s.F);    // (N, F)
        std::copy(a.mid, a.mid + NC, a.out);
        linear_forward_add(a.out, a.act, lin.down, N);
    } else {                                     // gelu
        linear_forward(a.up, a.ln2, lin.up, N);  // (N, F)
        gelu_forward(a.act, a.up, static_cast<long>(N) * s.F);
        linear_forward(a.out, a.act, lin.down, N);
        add_inplace(a.out, a.mid, NC);
    }
    mix.done(block_op::mlp);
}

// ---------------------------------------------------------------- backward

template <class T>
void block_backward(const block_tensors<T*>& g, const block_params<T>& p, const block_acts<T>& a,
                    const block_scratch<T>& d, const block_shape<T>& s, const block_rows& r, position_mixer<T>& mix) {
    const int N = r.N();
    const long NC = static_cast<long>(N) * s.C, NF = static_cast<long>(N) * s.F, NH = static_cast<long>(N) * s.NH;
    const block_linears<T> lin = block_linears_of(p, s);
    const block_tensors<const T*>& w = p.w;

    // d.dres = dL/d(out); the MLP branch adds its path, making it dL/dmid.
    if (s.mlp != mlp_kind::none) {
        zero_rows(d.dact, NF);
        zero_rows(d.dln, NC);
        if (s.mlp == mlp_kind::swiglu) {
            linear_backward({d.dact, g.down}, d.dres, a.act, lin.down, N);
            zero_rows(d.dgate_up, 2 * NF);
            swiglu_fused_backward(d.dgate_up, d.dact, a.gate_up, N, s.F);  // (N, 2F)
            // gate and up weights (and their gradients) are adjacent: one (2F, C) product
            linear_backward({d.dln, g.gate_up}, d.dgate_up, a.ln2, lin.gate_up, N);
        } else {  // gelu
            linear_backward({d.dact, g.down, g.down_bias}, d.dres, a.act, lin.down, N);
            zero_rows(d.dup, NF);
            gelu_backward(d.dup, d.dact, a.up, NF);
            linear_backward({d.dln, g.up, g.up_bias}, d.dup, a.ln2, lin.up, N);
        }
        mix.done(block_op::mlp);
        rmsnorm_backward(d.dres, g.mlp_norm, d.dln, a.mid, a.rstd2, w.mlp_norm, N, s.C);
        mix.done(block_op::norm);
    }
    // d.dres = dL/dmid; the attention branch adds its path, making it dL/dx.
    zero_rows(d.datt, NC);
    linear_backward({d.datt, g.o}, d.dres, a.att, lin.o, N);
    mix.done(block_op::out_proj);
    attention_grads<T> ag;
    ag.dq = d.dq;
    ag.dk = d.dk;
    ag.dv = d.dv;
    ag.din_gate = d.dg_in;
    ag.dout_gate = d.dg_out;
    for (T* z : {d.dq, d.dk, d.dv}) zero_rows(z, NC);
    for (T* z : {d.dg_in, d.dg_out}) zero_rows(z, NH);
    mix.attend_backward(ag, g.out_norm, d.datt, attention_inputs_of(a, p, s));
    mix.done(block_op::attention);
    // q, k, v weights (and their gradients) are adjacent: one (3C, C) product
    zero_rows(d.dqkv, 3 * NC);
    merge_qkv_grads(d, s, r);
    if (w.short_conv)  // dqkv: the convolution's output gradient -> its input's
        mix.short_conv_backward(d.dqkv, g.short_conv, a.qkv_in, w.short_conv);
    zero_rows(d.dln, NC);
    linear_backward({d.dln, g.qkv}, d.dqkv, a.ln1, lin.qkv, N);
    // a gate's gradient before its sigmoid, then its product's
    auto gate_backward = [&](const linear_grads<T>& product_grads, const T* dgate, const T* gate,
                             const linear_weights<T>& product) {
        zero_rows(d.dgate_pre, NH);
        sigmoid_backward(d.dgate_pre, dgate, gate, NH);
        linear_backward(product_grads, d.dgate_pre, a.ln1, product, N);
    };
    if (s.in_gate) gate_backward({d.dln, g.in_gate, g.in_gate_bias}, d.dg_in, a.g_in, lin.in_gate);
    if (s.out_gate) gate_backward({d.dln, g.out_gate, g.out_gate_bias}, d.dg_out, a.g_out, lin.out_gate);
    mix.done(block_op::qkv);
    rmsnorm_backward(d.dres, g.attn_norm, d.dln, a.x, a.rstd1, w.attn_norm, N, s.C);
    mix.done(block_op::norm);
}

template block_tensors<const float*> block_tensors_at(const float*, const block_offsets&, mlp_kind);
template block_tensors<float*> block_tensors_at(float*, const block_offsets&, mlp_kind);
template block_tensors<const double*> block_tensors_at(const double*, const block_offsets&, mlp_kind);
template block_tensors<double*> block_tensors_at(double*, const block_offsets&, mlp_kind);

#define ATTNLAB_INSTANTIATE_BLOCK(T)                                                                             \
    template block_shape<T> block_shape_of(const model_config&, const attention_config&, const rope_tables<T>*); \
    template block_acts<T> block_acts_at(T*, const buffer_plan&, int, long, const block_shape<T>&);              \
    template block_scratch<T> block_scratch_at(T*, const buffer_plan&, long, const block_shape<T>&);             \
    template void block_forward(const block_params<T>&, const block_acts<T>&, const block_shape<T>&,             \
                                const block_rows&, position_mixer<T>&);                                          \
    template void block_backward(const block_tensors<T*>&, const block_params<T>&, const block_acts<T>&,         \
                                 const block_scratch<T>&, const block_shape<T>&, const block_rows&,              \
                                 position_mixer<T>&);

ATTNLAB_INSTANTIATE_BLOCK(float)
ATTNLAB_INSTANTIATE_BLOCK(double)

}  // namespace attnlab
