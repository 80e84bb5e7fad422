// One block of the docs/model.md model, as free functions that training and
// generation both call:
//   mid = x + o(Attn(rope(q(n1)), rope(k(n1)), v(n1))),  n1 = RMSNorm(x)
//   out = mid + MLP(RMSNorm(mid))
// over N rows (B sequences of T tokens, or one token in generation). What
// mixes positions (the short convolution and attention) is the caller's
// position_mixer: whole sequences in training, one step of a recurrent state
// in generation; every other op acts on each row alone.
// The activations are a view (block_acts) carved from the one buffer of the
// buffer plan (buffer_plan.hpp: model_buffer's arena entries); the
// parameters and their gradients are views of the flat buffers
// (block_tensors). One rule for the backward: it accumulates (+=) into the
// parameter gradients and into dx; the caller zeroes them once per step.
#pragma once
#include <cstddef>

#include "attnlab/attention/attention.hpp"
#include "attnlab/config/run_config.hpp"
#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/ops/ops.hpp"

namespace attnlab {

// The epsilon of every RMSNorm of the model (the transformer's layers and the
// generator's decoding step).
inline constexpr double rmsnorm_eps = 1e-6;

// One block's tensors in a flat buffer (P: const T* for the parameters, T*
// for their gradients), null where the model has none. Linear weights are
// (out, in).
template <class P>
struct block_tensors {
    P attn_norm = nullptr;                          // (C)
    P qkv = nullptr;                                // (3C, C) q | k | v, adjacent in the layout
    P short_conv = nullptr;                         // (K, 3C)
    P in_gate = nullptr, in_gate_bias = nullptr;    // (NH, C), (NH)
    P out_gate = nullptr, out_gate_bias = nullptr;  // (NH, C), (NH)
    P out_norm = nullptr;                           // the denominator's parameters
    P o = nullptr;                                  // (C, C)
    P mlp_norm = nullptr;                           // (C)
    P gate_up = nullptr;                            // swiglu: (2F, C) gate | up, adjacent in the layout
    P up = nullptr, up_bias = nullptr;              // gelu: (F, C), (F)
    P down = nullptr, down_bias = nullptr;          // (C, F), (C) (bias: gelu only)
};

// The tensors of block `bo` in the flat buffer at base.
template <class P>
block_tensors<P> block_tensors_at(P base, const block_offsets& bo, mlp_kind mlp);

// A block's parameters: the weights, and W^T of those the forward's products
// read transposed (transformer's weight cache; null: the product reads W).
template <class T>
struct block_params {
    block_tensors<const T*> w, wt;
};

// The sizes every block shares.
template <class T>
struct block_shape {
    int C = 0, NH = 0, HS = 0, F = 0;
    mlp_kind mlp = mlp_kind::swiglu;
    int short_conv = 0;  // K taps, 0: none
    bool in_gate = false, out_gate = false;
    const rope_tables<T>* rope = nullptr;  // null: no RoPE
    T eps = static_cast<T>(rmsnorm_eps);   // of both RMSNorms
};
// The shape of model m's blocks with attention a (rope: the model's RoPE tables, or null).
template <class T>
block_shape<T> block_shape_of(const model_config& m, const attention_config& a, const rope_tables<T>* rope);

// The rows a call covers: B sequences of T tokens, row n at position pos0 + n % T.
struct block_rows {
    int B = 1, T = 1, pos0 = 0;
    int N() const { return B * T; }
    int position(int n) const { return pos0 + n % T; }
};

// One layer's activations over the call's rows (a view, rows from 0): its
// input and output, and what the forward writes for the backward.
template <class T>
struct block_acts {
    const T* x = nullptr;  // (N, C) the block's input, residual stream l
    T* out = nullptr;      // (N, C) its output, stream l + 1 (may be x)
    T* ln1 = nullptr;      // (N, C)
    T* rstd1 = nullptr;    // (N)
    T* qkv = nullptr;      // (N, 3C) the q, k, v product (after the short convolution): forward scratch
    T* qkv_in = nullptr;   // (N, 3C) the product before the short convolution (when used)
    T* q = nullptr;        // (N, C) after RoPE
    T* k = nullptr;        // (N, C) after RoPE
    T* v = nullptr;        // (N, C)
    T* g_in = nullptr;     // (N, NH) in (0, 1) (when used)
    T* g_out = nullptr;    // (N, NH) in (0, 1) (when used)
    T* att = nullptr;      // (N, C) the heads' outputs, before o
    T* mid = nullptr;      // (N, C) x after the attention residual
    T* ln2 = nullptr;      // (N, C) with an MLP
    T* rstd2 = nullptr;    // (N)
    T* gate_up = nullptr;  // (N, 2F) swiglu: gate | up per row
    T* up = nullptr;       // (N, F) gelu, before it
    T* act = nullptr;      // (N, F) the MLP's hidden activation
};

// The backward's scratch over the call's rows, shared by the layers (a view):
// the block zeroes what it accumulates into, but dres.
template <class T>
struct block_scratch {
    T* dres = nullptr;                              // (N, C) the residual stream's gradient: dL/d(out) in, dL/dx out
    T* dln = nullptr;                               // (N, C) of either norm's output
    T* datt = nullptr;                              // (N, C)
    T *dq = nullptr, *dk = nullptr, *dv = nullptr;  // (N, C)
    T* dqkv = nullptr;                              // (N, 3C) the product's gradient, before RoPE
    T* dgate_up = nullptr;                          // (N, 2F) swiglu
    T* dup = nullptr;                               // (N, F) gelu
    T* dact = nullptr;                              // (N, F)
    T *dg_in = nullptr, *dg_out = nullptr;          // (N, NH)
    T* dgate_pre = nullptr;                         // (N, NH) a gate's gradient before its sigmoid
};

// Views of layer `layer`'s activations (x: residual stream layer, out: the
// next) and of the backward scratch for rows [row0, row0 + N) of the buffer
// plan's arena (buffer_plan::arena_elements).
template <class T>
block_acts<T> block_acts_at(T* arena, const buffer_plan& plan, int layer, long row0, const block_shape<T>& s);
template <class T>
block_scratch<T> block_scratch_at(T* arena, const buffer_plan& plan, long row0, const block_shape<T>& s);

// The ops of a block, as the model's op timers count them.
enum class block_op { norm, qkv, attention, out_proj, mlp };

// The parts of a block that mix positions, given views of the call's rows.
// Training runs them over whole sequences; generation steps one token of a
// state (its backward methods are never called).
template <class T>
class position_mixer {
public:
    virtual ~position_mixer() = default;
    // out (N, 3C) <- the short convolution of in (N, 3C) along positions.
    virtual void short_conv(T* out, const T* in, const T* w) = 0;
    // att (N, C) <- attention of in.
    virtual void attend(T* att, const attention_inputs<T>& in) = 0;
    // dinout (N, 3C): the convolution's output gradient in, its input's out; dw +=.
    virtual void short_conv_backward(T* dinout, T* dw, const T* in, const T* w) = 0;
    // grads += the inputs' gradients given datt (N, C); ddenom (the denominator's parameters) +=.
    virtual void attend_backward(const attention_grads<T>& grads, T* ddenom, const T* datt,
                                 const attention_inputs<T>& in) = 0;
    // Called after each op of the block (the model's op timers).
    virtual void done(block_op) {}
};

// a.out (N, C) <- the block of a.x (N, C); writes a's other views.
template <class T>
void block_forward(const block_params<T>& p, const block_acts<T>& a, const block_shape<T>& s, const block_rows& r,
                   position_mixer<T>& mix);

// Given d.dres = dL/d(a.out) after the last block_forward over the same
// views: d.dres += the path through the block (it becomes dL/d(a.x)), grads
// += the parameters' gradients.
template <class T>
void block_backward(const block_tensors<T*>& grads, const block_params<T>& p, const block_acts<T>& a,
                    const block_scratch<T>& d, const block_shape<T>& s, const block_rows& r, position_mixer<T>& mix);

}  // namespace attnlab
