// Forward/backward of the model's layers (docs/model.md). Derivations are given
// beside each backward; all backwards accumulate into their outputs.
#include "attnlab/ops/ops.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <cmath>
#include <type_traits>
#include <vector>

#include "attnlab/ops/packed_gemm.hpp"
#include "attnlab/ops/small_gemm.hpp"
#include "attnlab/ops/vector_math.hpp"
#include "attnlab/util/shapes.hpp"

#ifdef ATTNLAB_OPENBLAS
#include <cblas.h>
#endif

namespace attnlab {

namespace {
template <class T>
using array_map = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using const_array_map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Row-wise loops go parallel only when the work pays for the threads.
constexpr long parallel_threshold = 1L << 15;

template <class T, class A, class B>
void product_into(matrix_map<T> c, const A& a, const B& b, bool add) {
    if (add)
        c.noalias() += a * b;
    else
        c.noalias() = a * b;
}

// Products with a side of at most 64 (every training product of a d_model 64
// model: its projections, MLP and head, forward and backward) run in small_gemm,
// in slices of 64 along K, so that the slice of B it streams for each tile of
// rows (64 x 64 floats) stays in L1. It writes C directly, where OpenBLAS
// packs both operands and zeroes C first. Measured on this project's shapes
// (d_model 64, 128, 256; 1024 and 2048 rows; one thread, operands rotating
// through 6 copies): 1-31 % faster than OpenBLAS at d_model 64, 0-24 % slower
// at d_model 128 and 11-42 % slower at 256, which therefore stay with
// OpenBLAS. So do products with fewer than 16 output columns (a gate's NH:
// not one whole vector) and those with fewer than 64 rows of a (a few rows,
// as in generation: a copy of W^T would cost as much as the product).
constexpr int small_side_max = 64, small_k_slice = 64, small_min_columns = 16, small_min_rows = 64;
// Fewer rows than small_min_rows take small_gemm only when no copy of B^T is
// needed and the product has at least this many multiply-adds (the head's
// 8 answer rows of a quickstart micro-batch: 8 x 128 x 64); the tiny
// products of the gradient checks stay with OpenBLAS, which is not
// instrumented in the sanitized build (a third of those tests' time there).
constexpr long small_min_work = 1L << 15;

// copies_b: the product would need a copy of B^T first (B given transposed,
// no copy made by the caller); below small_min_rows rows it costs as much as
// the product.
bool prefers_small_gemm(bool trans_a, bool copies_b, int M, int N, int K) {
    if (N < small_min_columns) return false;
    if (trans_a) return std::min({M, N, K}) <= small_side_max;  // weight gradients: M, N the weight's sides
    const bool enough_rows = M >= small_min_rows || (!copies_b && static_cast<long>(M) * N * K >= small_min_work);
    return enough_rows && std::min(N, K) <= small_side_max;
}

// A row-major copy of B^T (rows, cols) -> (cols, rows), one buffer per thread,
// for small_gemm's row-major B (the weights it is used for are small).
template <class T>
const T* transposed_copy(const T* b, int rows, int cols) {
    thread_local std::vector<T> bt;
    if (bt.size() < static_cast<size_t>(rows) * cols) bt.resize(static_cast<size_t>(rows) * cols);
    transpose_into(bt.data(), b, rows, cols, cols);
    return bt.data();
}

// c (M, N) (+)= op(a) b through small_gemm, slice by slice of K (each slice
// after the first adds). op(a) = a (M, K) or, with trans_a, a stored (K, M).
template <class T>
void small_gemm_k_sliced(bool trans_a, int M, int N, int K, const T* a, const T* b, bool add, T* c) {
    if (K == 0) {
        if (!add) std::fill_n(c, static_cast<long>(M) * N, T(0));
        return;
    }
    const int lda = trans_a ? M : K;
    for (int k0 = 0; k0 < K; k0 += small_k_slice) {
        const int k = std::min(small_k_slice, K - k0);
        const T* a_slice = trans_a ? a + static_cast<long>(k0) * lda : a + k0;
        small_gemm(c, N, a_slice, lda, b + static_cast<long>(k0) * N, N, M, N, k, T(1), add || k0 > 0, {}, {}, trans_a);
    }
}

// The rest of the products with enough rows to pay for packing B (a copy
// of N x K for M x N x K multiply-adds) run in packed_gemm, at the width of
// attnlab's own kernels whatever OPENBLAS_CORETYPE says, and with a result
// that does not depend on which kernels OpenBLAS picked. Measured with
// `attnlab bench products` on a d_model 256 model's 15 products (Intel Xeon,
// AVX-512, one thread, quiet; results/bench/products.txt): 73 % of the peak
// FMA bound against OpenBLAS's 75 % with its AVX-512 kernels (0.90-1.09x
// product by product) and 47 % with OPENBLAS_CORETYPE=Haswell (1.40-1.73x).
// Fewer rows (generation's single row, a product of vectors) and the tiny
// products of the gradient checks stay with the library.
constexpr int packed_min_rows = 64;
large_products large_products_from_environment() {
    const char* v = std::getenv("ATTNLAB_LARGE_PRODUCTS");
    return v && std::string(v) == "blas" ? large_products::blas : large_products::automatic;
}
std::atomic<large_products> large_products_kernel{large_products_from_environment()};

bool prefers_packed_gemm(int M, int N, int K) {
    return large_products_kernel.load(std::memory_order_relaxed) == large_products::automatic &&
           std::min(M, N) >= packed_min_rows && static_cast<long>(M) * N * K >= small_min_work;
}

// Row-major c (M, N) = op(a) op(b) (+ c when add); op(a) (M, K), op(b) (K, N),
// op = transpose when trans_*. bt: null, or with trans_b a row-major copy of
// op(b) (K, N) the small path reads instead of making its own. Small
// products: small_gemm (above); large ones: packed_gemm. With OpenBLAS the
// rest is one ?gemm call with beta 0 or 1: `=` then writes c without Eigen's
// zeroing pass first.
template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* a, const T* b, bool add, T* c,
          const T* bt = nullptr) {
    if (M == 0 || N == 0) return;
    if (!(trans_a && trans_b) && prefers_small_gemm(trans_a, trans_b && !bt, M, N, K)) {
        small_gemm_k_sliced(trans_a, M, N, K, a, trans_b ? (bt ? bt : transposed_copy(b, N, K)) : b, add, c);
        return;
    }
    if (prefers_packed_gemm(M, N, K)) {
        packed_gemm(trans_a, trans_b, M, N, K, a, b, add, c);
        return;
    }
#ifdef ATTNLAB_OPENBLAS
    if (K > 0) {
        const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
        const int lda = trans_a ? M : K, ldb = trans_b ? K : N;
        if constexpr (std::is_same_v<T, float>)
            cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, add ? 1.0f : 0.0f, c, N);
        else
            cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, a, lda, b, ldb, add ? 1.0 : 0.0, c, N);
        return;
    }
#endif
    matrix_map<T> cm(c, M, N);
    const_matrix_map<T> am(a, trans_a ? K : M, trans_a ? M : K), bm(b, trans_b ? N : K, trans_b ? K : N);
    if (trans_a && trans_b)
        product_into(cm, am.transpose(), bm.transpose(), add);
    else if (trans_a)
        product_into(cm, am.transpose(), bm, add);
    else if (trans_b)
        product_into(cm, am, bm.transpose(), add);
    else
        product_into(cm, am, bm, add);
}
}  // namespace

template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int B, int Tn, int C) {
    const long N = static_cast<long>(B) * Tn;
#pragma omp parallel for if (N * C > parallel_threshold)
    for (long n = 0; n < N; ++n) {
        const T* e = wte + static_cast<long>(tokens[n]) * C;
        T* o = out + n * C;
        if (wpe) {
            const T* p = wpe + (n % Tn) * C;
            for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
        } else {
            for (int c = 0; c < C; ++c) o[c] = e[c];
        }
    }
}

template <class T>
void embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, int B, int Tn, int C) {
    // Serial: rows scatter into shared embedding rows.
    const long N = static_cast<long>(B) * Tn;
    for (long n = 0; n < N; ++n) {
        const T* d = dout + n * C;
        T* e = dwte + static_cast<long>(tokens[n]) * C;
        for (int c = 0; c < C; ++c) e[c] += d[c];
        if (dwpe) {
            T* p = dwpe + (n % Tn) * C;
            for (int c = 0; c < C; ++c) p[c] += d[c];
        }
    }
}

template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int N, int C, T eps) {
    // Chunks of rows through vector_math's rmsnorm_rows (the CPU's vectors).
    constexpr int rows_per_chunk = 64;
    const int chunks = (N + rows_per_chunk - 1) / rows_per_chunk;
#pragma omp parallel for if (static_cast <long>(N) * C > parallel_threshold)
    for (int ch = 0; ch < chunks; ++ch) {
        const long n0 = static_cast<long>(ch) * rows_per_chunk;
        const long rows = std::min<long>(rows_per_chunk, N - n0);
        rmsnorm_rows(out + n0 * C, rstd + n0, inp + n0 * C, weight, rows, C, eps);
    }
}

// y_c = x_c r w_c, r = (mean(x^2) + eps)^(-1/2), dr/dx_c = -r^3 x_c / C.
// dx_c = r w_c dy_c - (r^3 / C) x_c sum_k(dy_k w_k x_k);  dw_c = sum_n dy_c x_c r.
// Serial, one pass: each row's x and dy are read once for dx and dw, and dw
// sums the rows in order (the model runs it inside its data-parallel threads).
template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* rstd, const T* weight, int N, int C) {
    rmsnorm_rows_backward(dinp, dweight, dout, inp, rstd, weight, N, C);
}

large_products use_large_products(large_products kernel) { return large_products_kernel.exchange(kernel); }
large_products large_products_in_use() { return large_products_kernel.load(); }

bool linear_reads_transposed_weight(int C, int OC) { return prefers_small_gemm(false, true, small_min_rows, OC, C); }

template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC, const T* weight_t) {
    gemm(false, true, N, OC, C, inp, weight, false, out, weight_t);  // x (N, C) W^T (C, OC)
    if (bias) matrix_map<T>(out, N, OC).rowwise() += Eigen::Map<const row_vector<T>>(bias, OC);
}

template <class T>
void linear_forward_add(T* out, const T* inp, const T* weight, int N, int C, int OC, const T* weight_t) {
    gemm(false, true, N, OC, C, inp, weight, true, out, weight_t);
}

// dx = dy W; dW = dy^T x; db = sum_n dy.
template <class T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int N, int C,
                     int OC) {
    if (dinp) gemm(false, false, N, C, OC, dout, weight, true, dinp);  // (N, OC) (OC, C)
    gemm(true, false, OC, C, N, dout, inp, true, dweight);             // (OC, N) (N, C)
    if (dbias) Eigen::Map<row_vector<T>>(dbias, OC) += const_matrix_map<T>(dout, N, OC).colwise().sum();
}

std::size_t rope_table_elements(int max_T, int HS) { return static_cast<std::size_t>(max_T) * (HS / 2); }

template <class T>
rope_tables<T>::rope_tables(int max_T_, int HS) : max_T(max_T_), half(HS / 2) {
    cos.resize(rope_table_elements(max_T, HS));
    sin.resize(rope_table_elements(max_T, HS));
    for (int t = 0; t < max_T; ++t)
        for (int i = 0; i < half; ++i) {
            // theta_i = 10000^(-2i/HS); computed in double for both scalars.
            const double theta = std::pow(10000.0, -2.0 * i / HS);
            cos[static_cast<size_t>(t) * half + i] = static_cast<T>(std::cos(t * theta));
            sin[static_cast<size_t>(t) * half + i] = static_cast<T>(std::sin(t * theta));
        }
}

// Rotate-half: for i < HS/2, pair (x_i, x_{i+HS/2}):
//   y_i = x_i cos - x_{i+h} sin,  y_{i+h} = x_{i+h} cos + x_i sin
// (vector_math's rope_row, with the CPU's vectors).
template <class T>
void rope_forward_at(T* out, const T* inp, const rope_tables<T>& tab, int pos, int NH, int HS) {
    const long at = static_cast<long>(pos) * (HS / 2);
    rope_row(out, inp, tab.cos.data() + at, tab.sin.data() + at, NH, HS);
}

template <class T>
void rope_forward(T* out, const T* inp, const rope_tables<T>& tab, int B, int Tn, int NH, int HS) {
    const int C = NH * HS;
    const long N = static_cast<long>(B) * Tn;
#pragma omp parallel for if (N * C > parallel_threshold)
    for (long n = 0; n < N; ++n) rope_forward_at(out + n * C, inp + n * C, tab, static_cast<int>(n % Tn), NH, HS);
}

// The rotation's transpose: dx_i = dy_i cos + dy_{i+h} sin, dx_{i+h} = dy_{i+h} cos - dy_i sin.
template <class T>
void rope_backward_at(T* dinp, const T* dout, const rope_tables<T>& tab, int pos, int NH, int HS) {
    const long at = static_cast<long>(pos) * (HS / 2);
    rope_row_backward(dinp, dout, tab.cos.data() + at, tab.sin.data() + at, NH, HS);
}

template <class T>
void rope_backward(T* dinp, const T* dout, const rope_tables<T>& tab, int B, int Tn, int NH, int HS) {
    const int C = NH * HS;
    const long N = static_cast<long>(B) * Tn;
#pragma omp parallel for if (N * C > parallel_threshold)
    for (long n = 0; n < N; ++n) rope_backward_at(dinp + n * C, dout + n * C, tab, static_cast<int>(n % Tn), NH, HS);
}

template <class T>
void short_conv_forward(T* out, const T* inp, const T* w, int B, int Tn, int C, int K) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < Tn; ++t) {
            const long n = static_cast<long>(b) * Tn + t;
            T* y = out + n * C;
            const T* x = inp + n * C;
            for (int c = 0; c < C; ++c) y[c] = w[c] * x[c];
            for (int i = 1; i < K && i <= t; ++i) {  // taps before the sequence's start are zero
                const T* xi = x - static_cast<long>(i) * C;
                const T* wi = w + static_cast<long>(i) * C;
                for (int c = 0; c < C; ++c) y[c] += wi[c] * xi[c];
            }
        }
}

template <class T>
void short_conv_backward(T* dinout, T* dw, const T* inp, const T* w, int B, int Tn, int C, int K) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < Tn; ++t) {
            const long n = static_cast<long>(b) * Tn + t;
            T* d = dinout + n * C;                   // dout[t] on entry
            for (int i = 0; i < K && i <= t; ++i) {  // out[t] read inp[t - i] through w[i]
                const T* xi = inp + (n - i) * C;
                T* dwi = dw + static_cast<long>(i) * C;
                for (int c = 0; c < C; ++c) dwi[c] += d[c] * xi[c];
            }
            // dinp[t] = sum_i w[i] dout[t + i]: rows t+1.. still hold dout
            for (int c = 0; c < C; ++c) d[c] *= w[c];
            for (int i = 1; i < K && t + i < Tn; ++i) {
                const T* di = d + static_cast<long>(i) * C;
                const T* wi = w + static_cast<long>(i) * C;
                for (int c = 0; c < C; ++c) d[c] += wi[c] * di[c];
            }
        }
}

template <class T>
void short_conv_step(T* out, const T* hist, const T* w, int C, int K) {
    for (int c = 0; c < C; ++c) out[c] = w[c] * hist[c];
    for (int i = 1; i < K; ++i)
        for (int c = 0; c < C; ++c) out[c] += w[static_cast<long>(i) * C + c] * hist[static_cast<long>(i) * C + c];
}

// SwiGLU in chunks of rows (vector_math.hpp picks the CPU's vectors).
constexpr long elementwise_chunk = 1L << 12;

template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int N, int F) {
    const long n = static_cast<long>(N) * F, chunks = (n + elementwise_chunk - 1) / elementwise_chunk;
#pragma omp parallel for if (n > parallel_threshold)
    for (long c = 0; c < chunks; ++c) {
        const long i0 = c * elementwise_chunk, len = std::min(elementwise_chunk, n - i0);
        swiglu_rows(out + i0, gate + i0, up + i0, len);
    }
}

template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int N, int F) {
    const long n = static_cast<long>(N) * F, chunks = (n + elementwise_chunk - 1) / elementwise_chunk;
#pragma omp parallel for if (n > parallel_threshold)
    for (long c = 0; c < chunks; ++c) {
        const long i0 = c * elementwise_chunk, len = std::min(elementwise_chunk, n - i0);
        swiglu_rows_backward(dgate + i0, dup + i0, dout + i0, gate + i0, up + i0, len);
    }
}

template <class T>
void swiglu_fused_forward(T* out, const T* gate_up, int N, int F) {
#pragma omp parallel for if (static_cast <long>(N) * F > parallel_threshold)
    for (int n = 0; n < N; ++n) {
        const T* gu = gate_up + 2L * n * F;
        swiglu_rows(out + static_cast<long>(n) * F, gu, gu + F, F);
    }
}

template <class T>
void swiglu_fused_backward(T* dgate_up, const T* dout, const T* gate_up, int N, int F) {
#pragma omp parallel for if (static_cast <long>(N) * F > parallel_threshold)
    for (int n = 0; n < N; ++n) {
        const T* gu = gate_up + 2L * n * F;
        T* dgu = dgate_up + 2L * n * F;
        swiglu_rows_backward(dgu, dgu + F, dout + static_cast<long>(n) * F, gu, gu + F, F);
    }
}

template <class T>
void gelu_forward(T* out, const T* inp, long n) {
    constexpr T inv_sqrt2 = T(0.70710678118654752440);
#pragma omp parallel for if (n > parallel_threshold)
    for (long i = 0; i < n; ++i) out[i] = T(0.5) * inp[i] * (T(1) + std::erf(inp[i] * inv_sqrt2));
}

// gelu'(x) = Phi(x) + x phi(x), phi the standard normal density.
template <class T>
void gelu_backward(T* dinp, const T* dout, const T* inp, long n) {
    constexpr T inv_sqrt2 = T(0.70710678118654752440);
    constexpr T inv_sqrt2pi = T(0.39894228040143267794);
#pragma omp parallel for if (n > parallel_threshold)
    for (long i = 0; i < n; ++i) {
        const T x = inp[i];
        const T cdf = T(0.5) * (T(1) + std::erf(x * inv_sqrt2));
        const T pdf = inv_sqrt2pi * std::exp(T(-0.5) * x * x);
        dinp[i] += dout[i] * (cdf + x * pdf);
    }
}

template <class T>
void sigmoid_forward(T* out, const T* inp, long n) {
    array_map<T>(out, n) = T(1) / (T(1) + (-const_array_map<T>(inp, n)).exp());
}

template <class T>
void sigmoid_backward(T* dinp, const T* dout, const T* out, long n) {
    for (long i = 0; i < n; ++i) dinp[i] += dout[i] * out[i] * (T(1) - out[i]);
}

template <class T>
void add_inplace(T* out, const T* inp, long n) {
#pragma omp parallel for if (n > parallel_threshold)
    for (long i = 0; i < n; ++i) out[i] += inp[i];
}

template <class T>
T cross_entropy_forward(T* probs, T* losses, const T* logits, const std::int32_t* targets, int A, int V) {
    double total = 0;
#pragma omp parallel for reduction(+ : total) if (static_cast <long>(A) * V > parallel_threshold)
    for (int a = 0; a < A; ++a) {
        const T* z = logits + static_cast<long>(a) * V;
        // -log softmax(z)_y = logsumexp(z) - z_y, accurate even when p_y underflows.
        losses[a] = softmax_row(probs + static_cast<long>(a) * V, z, V) - z[targets[a]];
        total += losses[a];
    }
    return A > 0 ? static_cast<T>(total / A) : T(0);
}

template <class T>
void cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets, T scale, int A, int V) {
#pragma omp parallel for if (static_cast <long>(A) * V > parallel_threshold)
    for (int a = 0; a < A; ++a) {
        const T* p = probs + static_cast<long>(a) * V;
        T* d = dlogits + static_cast<long>(a) * V;
        for (int v = 0; v < V; ++v) d[v] += scale * p[v];
        d[targets[a]] -= scale;
    }
}

#define ATTNLAB_INSTANTIATE_OPS(T)                                                                  \
    template void embedding_forward<T>(T*, const std::int32_t*, const T*, const T*, int, int, int); \
    template void embedding_backward<T>(T*, T*, const T*, const std::int32_t*, int, int, int);      \
    template void rmsnorm_forward<T>(T*, T*, const T*, const T*, int, int, T);                      \
    template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int, int);    \
    template void linear_forward<T>(T*, const T*, const T*, const T*, int, int, int, const T*);     \
    template void linear_backward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, int);      \
    template void linear_forward_add<T>(T*, const T*, const T*, int, int, int, const T*);           \
    template struct rope_tables<T>;                                                                 \
    template void rope_forward<T>(T*, const T*, const rope_tables<T>&, int, int, int, int);         \
    template void rope_backward<T>(T*, const T*, const rope_tables<T>&, int, int, int, int);        \
    template void rope_backward_at<T>(T*, const T*, const rope_tables<T>&, int, int, int);          \
    template void rope_forward_at<T>(T*, const T*, const rope_tables<T>&, int, int, int);           \
    template void short_conv_forward<T>(T*, const T*, const T*, int, int, int, int);                \
    template void short_conv_backward<T>(T*, T*, const T*, const T*, int, int, int, int);           \
    template void short_conv_step<T>(T*, const T*, const T*, int, int);                             \
    template void swiglu_forward<T>(T*, const T*, const T*, int, int);                              \
    template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int, int);               \
    template void swiglu_fused_forward<T>(T*, const T*, int, int);                                  \
    template void swiglu_fused_backward<T>(T*, const T*, const T*, int, int);                       \
    template void gelu_forward<T>(T*, const T*, long);                                              \
    template void gelu_backward<T>(T*, const T*, const T*, long);                                   \
    template void sigmoid_forward<T>(T*, const T*, long);                                           \
    template void sigmoid_backward<T>(T*, const T*, const T*, long);                                \
    template void add_inplace<T>(T*, const T*, long);                                               \
    template T cross_entropy_forward<T>(T*, T*, const T*, const std::int32_t*, int, int);           \
    template void cross_entropy_backward<T>(T*, const T*, const std::int32_t*, T, int, int);

ATTNLAB_INSTANTIATE_OPS(float)
ATTNLAB_INSTANTIATE_OPS(double)

}  // namespace attnlab
