// Elementwise float kernels that the portable build still runs with the
// CPU's widest vectors: each is compiled for AVX-512, AVX2 and the baseline
// (GCC target_clones) and picked when the program loads. exp is Cephes'
// polynomial (relative error < 2e-7 over the float range), written in GCC's
// vector extension (8 lanes), the tail of a row too: an element's bits do not
// depend on its place in the row. The double versions (gradient checks) use
// std::exp.
#pragma once

namespace attnlab {

// out[i] = exp(in[i] - shift); out may be in.
void exp_shifted(float* out, const float* in, long n, float shift);
void exp_shifted(double* out, const double* in, long n, double shift);

// The largest of x[0..n) (n >= 1), and the first index holding it (as
// std::max_element), with the CPU's vectors.
float max_of(const float* x, long n);
double max_of(const double* x, long n);
template <class T>
long first_index_of_max(const T* x, long n);

// The sum of x[0..n): the float version in 16 vector lanes, the double one in
// index order. Either way a fixed order, whatever x's alignment (Eigen's
// sum() starts its vectors at the first aligned element, so its bits depend
// on where the row sits in memory).
float sum_of(const float* x, long n);
double sum_of(const double* x, long n);

// out[i] = w[i] (d[i] + add) for i < n, returning their sum (out may be d).
// The float version sums in 16 vector lanes (a fixed order), the double one
// in index order.
float scaled_sum(float* out, const float* d, float add, const float* w, long n);
double scaled_sum(double* out, const double* d, double add, const double* w, long n);

// p = softmax(z) over n >= 1 entries (p may be z). Returns the log-sum-exp
// log(sum_i exp(z_i - m)) + m with m = max z, so that a cross-entropy
// -log p_y = lse - z_y stays exact when p_y underflows.
float softmax_row(float* p, const float* z, long n);
double softmax_row(double* p, const double* z, long n);

// SwiGLU: out = silu(gate) * up;  backward: dgate += dout up silu'(gate), dup += dout silu(gate).
void swiglu_rows(float* out, const float* gate, const float* up, long n);
void swiglu_rows(double* out, const double* gate, const double* up, long n);
void swiglu_rows_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, long n);
void swiglu_rows_backward(double* dgate, double* dup, const double* dout, const double* gate, const double* up, long n);

// RoPE of one row of NH heads of HS (ops.hpp's rope_forward_at): each pair
// (x_i, x_{i+HS/2}) of a head turns by the angle whose cos and sin are cs[i],
// sn[i] (HS/2 each); the backward adds the transposed rotation of dy to dx.
void rope_row(float* y, const float* x, const float* cs, const float* sn, int NH, int HS);
void rope_row(double* y, const double* x, const double* cs, const double* sn, int NH, int HS);
void rope_row_backward(float* dx, const float* dy, const float* cs, const float* sn, int NH, int HS);
void rope_row_backward(double* dx, const double* dy, const double* cs, const double* sn, int NH, int HS);

// RMSNorm of N rows of C (ops.hpp's rmsnorm_forward, and rmsnorm_backward's
// one-pass serial form: dinp and dweight add). The float versions sum each
// row in 16 interleaved partial sums, so that the sums vectorise too (a fixed
// order: the same result on every run and thread count).
void rmsnorm_rows(float* out, float* rstd, const float* inp, const float* weight, long N, int C, float eps);
void rmsnorm_rows(double* out, double* rstd, const double* inp, const double* weight, long N, int C, double eps);
void rmsnorm_rows_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* rstd,
                           const float* weight, long N, int C);
void rmsnorm_rows_backward(double* dinp, double* dweight, const double* dout, const double* inp, const double* rstd,
                           const double* weight, long N, int C);

}  // namespace attnlab
