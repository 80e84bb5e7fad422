// Matrix products large enough to pay for packing (a d_model 256 model's
// projections, MLP and head: sides of 256 and more), in attnlab's own kernel
// rather than the BLAS library's. Why: OpenBLAS picks its kernels by CPU, and
// an old OpenBLAS on a newer CPU is told by OPENBLAS_CORETYPE to use an older
// set (AVX2 on an AVX-512 machine), halving the rate of every large product;
// this kernel runs at the width attnlab's own kernels dispatch to, whatever
// that variable says.
//
// The classic layout of a high-performance product (Goto's): a block of B,
// KC (128) rows by up to NC columns (1 MiB), is copied once into panels of NR columns that
// the L2 cache holds; for each MR rows of A, a panel of A (MR x KC, k-major)
// is copied into L1; a register tile of MR x NR accumulators then runs over
// k for every panel of B. MR x NR per instruction set: 12 x 32 floats on
// AVX-512 (24 of its 32 registers), 6 x 16 on AVX2, 4 x 8 on the baseline.
#pragma once

namespace attnlab {

// C (M, N) = op(A) op(B), or C += that with add; row-major and dense:
// op(A) (M, K) is A (M, K), or with trans_a A stored (K, M); op(B) (K, N) is
// B (K, N), or with trans_b B stored (N, K).
// Single-threaded (the model calls it from its own data-parallel threads).
// Each entry of C sums k in index order, in blocks of KC: within a block the
// tile's fused multiply-adds run from zero, then the block's sum is added to
// C. The result depends on the instruction set, never on the thread count.
void packed_gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, const float* B, bool add, float* C);
void packed_gemm(bool trans_a, bool trans_b, int M, int N, int K, const double* A, const double* B, bool add,
                 double* C);

}  // namespace attnlab
