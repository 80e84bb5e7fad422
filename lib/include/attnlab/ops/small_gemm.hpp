// Matrix products too small for a BLAS call to pay: the score blocks of
// attention over short sequences (e.g. 64 x 64 x 32), where OpenBLAS's
// packing, zeroing and call cost take more time than the multiply-adds, and
// where half of each product is above the causal diagonal. The kernel keeps a
// block of output rows in vector registers, needs no packing, and skips the
// part of a banded operand that is zero.
#pragma once

#include <climits>

namespace attnlab {

// A band of a matrix with rows i: the indices [i + lo, i + hi), clamped to
// the matrix. The default is every index.
struct row_band {
    int lo = INT_MIN / 2;
    int hi = INT_MAX / 2;
};

// C (M, N) = alpha A (M, K) B (K, N), or C += that with add; row-major, with
// leading dimensions lda, ldb, ldc (>= the row lengths). trans_a: A is stored
// as its transpose (K, M), e.g. W^T dU straight from W.
// k_band: where row i of A may be nonzero (A must be zero elsewhere: the
//   kernel works on blocks of rows and sums the union of their bands).
// n_band: the columns of row i of C that are needed. The kernel writes the
//   union over a block of rows, rounded up to whole vectors within N, each
//   with its true value; columns past that are left untouched.
// Runs with the CPU's widest vectors (AVX-512, AVX2 or the baseline); sums
// over k run in index order, so the result does not depend on the thread
// count (it does on the instruction set: AVX-512's fuses multiply-adds).
void small_gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, int M, int N, int K, float alpha,
                bool add, row_band k_band = {}, row_band n_band = {}, bool trans_a = false);
void small_gemm(double* C, int ldc, const double* A, int lda, const double* B, int ldb, int M, int N, int K,
                double alpha, bool add, row_band k_band = {}, row_band n_band = {}, bool trans_a = false);

// For tests: small_gemm runs its version for vector registers of `bytes`
// (64: AVX-512, 32: AVX2, 16: the baseline) if this CPU has it, its widest
// otherwise; 0 restores the widest. Returns the width now in use.
int use_vector_bytes(int bytes);

// out (cols, rows) = in (rows, cols)^T; in has leading dimension ld_in, out is dense.
void transpose_into(float* out, const float* in, int rows, int cols, int ld_in);
void transpose_into(double* out, const double* in, int rows, int cols, int ld_in);

}  // namespace attnlab
