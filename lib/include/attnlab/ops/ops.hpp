// The layers of the model (docs/model.md) as plain forward/backward pairs, in the
// style of llm.c: outputs first, then caches, then inputs, then parameters,
// then sizes. Every backward ACCUMULATES (+=) into all of its gradient
// outputs (inputs and parameters alike): callers zero the buffers once per
// step and residual branches add up for free.
// Templated on the scalar: float for training, double for gradient checks.
// Parallelism: the model calls these from its data-parallel threads, where
// they run serially (linear_* through small_gemm when a side is at most 64,
// through packed_gemm when both output sides are 64 or more, otherwise
// through OpenBLAS with one thread: ops.cpp); called outside
// a parallel region, the row-wise ops are OpenMP loops over rows when the
// work is large.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnlab {

// out (N, C) = wte[tokens[n]] + wpe[n % T] (wpe may be null: no learned positions)
template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int B, int Tn, int C);
template <class T>
void embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, int B, int Tn, int C);

// out (N, C) = inp * rstd * weight, rstd (N) = 1 / sqrt(mean(inp^2) + eps)
template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int N, int C, T eps);
template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* rstd, const T* weight, int N, int C);

// Which kernel runs the products too large for small_gemm: attnlab's own
// packed_gemm (automatic: where enough rows pay for packing) or the BLAS
// library (every one of them; the kernel before packed_gemm, kept for timing
// one against the other with one binary, and for tests).
// ATTNLAB_LARGE_PRODUCTS=blas sets the latter from the start; unset: automatic.
enum class large_products { automatic, blas };
// Sets the kernel for products started from now on; returns the previous setting.
large_products use_large_products(large_products kernel);
large_products large_products_in_use();

// out (N, OC) = inp (N, C) @ weight^T (weight (OC, C), PyTorch layout) + bias (OC; may be null).
// weight_t: null, or weight^T (C, OC) row-major, made once by a caller that
// runs many products with the same weight (linear_reads_transposed_weight).
template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC,
                    const T* weight_t = nullptr);
// Whether linear_forward's product of this shape (for any number of rows) reads
// the weight transposed, a copy it makes per call unless weight_t is given.
bool linear_reads_transposed_weight(int C, int OC);
template <class T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int N, int C, int OC);
// out (N, OC) += inp (N, C) @ weight^T: a residual branch added to its stream by
// the product itself (no zeroing pass, no separate add). Its backward is linear_backward.
template <class T>
void linear_forward_add(T* out, const T* inp, const T* weight, int N, int C, int OC, const T* weight_t = nullptr);

// The same products with their operands named: a linear layer y (N, out) =
// x (N, in) W^T + bias, W (out, in) and, when the caller keeps one, its
// transposed copy wt (in, out); bias may be null.
template <class T>
struct linear_weights {
    const T* w = nullptr;
    const T* wt = nullptr;
    const T* bias = nullptr;
    int in = 0, out = 0;
};
// Where a linear layer's backward adds: dx (N, in), dw (out, in), dbias (out); null: not wanted (dw never).
template <class T>
struct linear_grads {
    T* dx = nullptr;
    T* dw = nullptr;
    T* dbias = nullptr;
};
template <class T>
void linear_forward(T* y, const T* x, const linear_weights<T>& l, int N) {
    linear_forward(y, x, l.w, l.bias, N, l.in, l.out, l.wt);
}
// y += x W^T (a layer without bias).
template <class T>
void linear_forward_add(T* y, const T* x, const linear_weights<T>& l, int N) {
    linear_forward_add(y, x, l.w, N, l.in, l.out, l.wt);
}
template <class T>
void linear_backward(const linear_grads<T>& g, const T* dy, const T* x, const linear_weights<T>& l, int N) {
    linear_backward(g.dx, g.dw, g.dbias, dy, x, l.w, N, l.in, l.out);
}

// Rotary position embedding, rotate-half convention, base 10000, positions
// 0..T-1 within each sequence. Tables are (T, HS/2) cos and sin.
template <class T>
struct rope_tables {
    int max_T = 0, half = 0;
    std::vector<T> cos, sin;  // (max_T, HS/2)
    rope_tables(int max_T, int HS);
};
// Elements of each of rope_tables' cos and sin: max_T * (HS / 2).
std::size_t rope_table_elements(int max_T, int HS);
// out (N, C) = rope(inp) per head (out may be inp)
template <class T>
void rope_forward(T* out, const T* inp, const rope_tables<T>& tab, int B, int Tn, int NH, int HS);
template <class T>
void rope_backward(T* dinp, const T* dout, const rope_tables<T>& tab, int B, int Tn, int NH, int HS);
// dinp (C) += rope's transpose of dout (C), one token at position `pos`.
template <class T>
void rope_backward_at(T* dinp, const T* dout, const rope_tables<T>& tab, int pos, int NH, int HS);
// out (C) = rope(inp (C)) of one token at position `pos` (generation).
template <class T>
void rope_forward_at(T* out, const T* inp, const rope_tables<T>& tab, int pos, int NH, int HS);

// Causal depthwise convolution over time (docs/model.md "Short convolution"),
// per sequence of Tn rows: out[t, c] = sum_{i<K} w[i, c] inp[t - i, c], with
// inp[t - i] = 0 before the sequence's start (never the previous sequence).
// inp, out (B Tn, C), w (K, C). out must not be inp.
template <class T>
void short_conv_forward(T* out, const T* inp, const T* w, int B, int Tn, int C, int K);
// dw (K, C) += sum_t inp[t - i] dout[t]; dinout (B Tn, C) holds dout on entry
// and dinp on return (in place: row t reads rows t..t+K-1 before they are overwritten).
template <class T>
void short_conv_backward(T* dinout, T* dw, const T* inp, const T* w, int B, int Tn, int C, int K);
// out (C) = the convolution at one position from the last K input rows of
// its sequence: hist (K, C), row i = inp[t - i] (zeros before the start).
template <class T>
void short_conv_step(T* out, const T* hist, const T* w, int C, int K);

// out (N, F) = silu(gate) * up
template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int N, int F);
template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int N, int F);
// The same with gate and up side by side, as one product of the adjacent gate
// and up weights (2F, C) gives them: gate_up (N, 2F) rows are [gate | up].
// out (N, F) = silu(gate) * up;  dgate_up (N, 2F) += [dgate | dup].
template <class T>
void swiglu_fused_forward(T* out, const T* gate_up, int N, int F);
template <class T>
void swiglu_fused_backward(T* dgate_up, const T* dout, const T* gate_up, int N, int F);

// out (n) = gelu(inp), exact: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
template <class T>
void gelu_forward(T* out, const T* inp, long n);
template <class T>
void gelu_backward(T* dinp, const T* dout, const T* inp, long n);

// out (n) = sigmoid(inp) (the gates of docs/attention.md)
template <class T>
void sigmoid_forward(T* out, const T* inp, long n);
// dinp += dout * out (1 - out)
template <class T>
void sigmoid_backward(T* dinp, const T* dout, const T* out, long n);

// out (n) += inp (n)
template <class T>
void add_inplace(T* out, const T* inp, long n);

// Softmax cross-entropy on A answer rows. probs (A, V) and losses (A) are
// caches; returns the mean loss over the A rows.
template <class T>
T cross_entropy_forward(T* probs, T* losses, const T* logits, const std::int32_t* targets, int A, int V);
// dlogits (A, V) += scale * (probs - onehot(target)); scale is dloss per row (1/A for a mean).
template <class T>
void cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets, T scale, int A, int V);

}  // namespace attnlab
