// A register-blocked product for small, banded operands (small_gemm.hpp).
// A tile of R rows by CV vectors of C lives in registers while k runs:
// per k, CV vectors of B's row k are loaded once and each of the R entries
// A(i, k) is broadcast against them. No packing: the operands of an
// attention block (a few KiB) sit in L1 already.
#include "attnlab/ops/small_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "target_clones.hpp"

namespace attnlab {

namespace {

// C (R, CV * lanes) (+)= alpha A (R, k0..k1) B (k0..k1, CV * lanes);
// A(r, k) at A[r lda + k], or at A[k lda + r] when TA (A stored transposed).
template <class T, int VB, bool TA, int R, int CV>
[[gnu::always_inline]] inline void tile(T* C, int ldc, const T* A, int lda, const T* B, int ldb, int k0, int k1,
                                        T alpha, bool add) {
    using V = typename detail::simd<T, VB>::type;
    constexpr int L = detail::simd<T, VB>::lanes;
    V acc[R][CV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) acc[r][c] = V{};
    for (int k = k0; k < k1; ++k) {
        V b[CV];
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) std::memcpy(&b[c], B + static_cast<long>(k) * ldb + c * L, sizeof(V));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const T a = TA ? A[static_cast<long>(k) * lda + r] : A[static_cast<long>(r) * lda + k];
#pragma GCC unroll 4
            for (int c = 0; c < CV; ++c) acc[r][c] += a * b[c];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) {
            T* dst = C + static_cast<long>(r) * ldc + c * L;
            V out = acc[r][c] * alpha;
            if (add) {
                V old;
                std::memcpy(&old, dst, sizeof(V));
                out += old;
            }
            std::memcpy(dst, &out, sizeof(V));
        }
}

// The same for fewer columns than one vector, one entry at a time.
template <class T, bool TA>
[[gnu::always_inline]] inline void tile_scalar(T* C, int ldc, const T* A, int lda, const T* B, int ldb, int rows,
                                               int cols, int k0, int k1, T alpha, bool add) {
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < cols; ++j) {
            T s = 0;
            for (int k = k0; k < k1; ++k)
                s += (TA ? A[static_cast<long>(k) * lda + r] : A[static_cast<long>(r) * lda + k]) *
                     B[static_cast<long>(k) * ldb + j];
            T& dst = C[static_cast<long>(r) * ldc + j];
            dst = add ? dst + alpha * s : alpha * s;
        }
}

// Accumulators a tile may hold: with CV vectors of B and a broadcast of A
// they must fit the registers, 32 with AVX-512, 16 with AVX2 and the
// baseline (a 4 x 4 tile there spilt to the stack on every k).
template <int VB>
constexpr int accumulator_budget = VB == 64 ? 16 : 12;

// A tile of exactly `rows` rows (1..8), dispatched to its instantiation.
template <class T, int VB, bool TA, int CV>
[[gnu::always_inline]] inline void tile_of(int rows, T* C, int ldc, const T* A, int lda, const T* B, int ldb, int k0,
                                           int k1, T alpha, bool add) {
    constexpr int budget = accumulator_budget<VB>;
    switch (rows) {
#define ATTNLAB_TILE_CASE(R)                                                                                \
    case R:                                                                                                 \
        if constexpr (R * CV <= budget) tile<T, VB, TA, R, CV>(C, ldc, A, lda, B, ldb, k0, k1, alpha, add); \
        return;
        ATTNLAB_TILE_CASE(8)
        ATTNLAB_TILE_CASE(7)
        ATTNLAB_TILE_CASE(6)
        ATTNLAB_TILE_CASE(5)
        ATTNLAB_TILE_CASE(4)
        ATTNLAB_TILE_CASE(3)
        ATTNLAB_TILE_CASE(2)
        ATTNLAB_TILE_CASE(1)
#undef ATTNLAB_TILE_CASE
        default: return;
    }
}

// A block of up to 8 rows (known only at run time at the last block), in
// tiles of as many rows as the accumulator budget allows for CV vectors.
template <class T, int VB, bool TA, int CV>
[[gnu::always_inline]] inline void tile_rows(int rows, T* C, int ldc, const T* A, int lda, const T* B, int ldb, int k0,
                                             int k1, T alpha, bool add) {
    constexpr int max_rows = std::min(8, accumulator_budget<VB> / CV);
    for (int r0 = 0; r0 < rows; r0 += max_rows) {
        const long a_step = TA ? r0 : static_cast<long>(r0) * lda;
        tile_of<T, VB, TA, CV>(std::min(max_rows, rows - r0), C + static_cast<long>(r0) * ldc, ldc, A + a_step, lda, B,
                               ldb, k0, k1, alpha, add);
    }
}

template <class T, int VB, bool TA>
[[gnu::always_inline]] inline void small_gemm_impl(T* C, int ldc, const T* A, int lda, const T* B, int ldb, int M,
                                                   int N, int K, T alpha, bool add, row_band k_band, row_band n_band) {
    constexpr int L = detail::simd<T, VB>::lanes;
    // Blocks of 8 rows, each in tiles within the accumulator budget.
    constexpr int block = 8;
    // Panels of 4 vectors of columns outside, row blocks inside: the panel of
    // B (K, 4 lanes) stays in L1 while the rows of A pass.
    for (int jp = 0; jp < N; jp += 4 * L)
        for (int i0 = 0; i0 < M; i0 += block) {
            const int rows = std::min(block, M - i0), last = i0 + rows - 1;
            const int k0 = std::clamp(i0 + k_band.lo, 0, K), k1 = std::clamp(last + k_band.hi, k0, K);
            const int j0 = std::clamp(i0 + n_band.lo, 0, N);
            const int j_need = std::clamp(last + n_band.hi, j0, N);
            const int j1 = std::min(N, j0 + (j_need - j0 + L - 1) / L * L);  // whole vectors where N allows
            const int j = std::max(j0, jp), j_end = std::min(j1, jp + 4 * L);
            if (j >= j_end) continue;
            T* Cb = C + static_cast<long>(i0) * ldc + j;
            const T* Ab = A + (TA ? i0 : static_cast<long>(i0) * lda);
            const T* Bp = B + j;
            const int vectors = (j_end - j) / L, tail = (j_end - j) % L;
            switch (vectors) {
                case 4: tile_rows<T, VB, TA, 4>(rows, Cb, ldc, Ab, lda, Bp, ldb, k0, k1, alpha, add); break;
                case 3: tile_rows<T, VB, TA, 3>(rows, Cb, ldc, Ab, lda, Bp, ldb, k0, k1, alpha, add); break;
                case 2: tile_rows<T, VB, TA, 2>(rows, Cb, ldc, Ab, lda, Bp, ldb, k0, k1, alpha, add); break;
                case 1: tile_rows<T, VB, TA, 1>(rows, Cb, ldc, Ab, lda, Bp, ldb, k0, k1, alpha, add); break;
                default: break;
            }
            if (tail > 0)
                tile_scalar<T, TA>(Cb + vectors * L, ldc, Ab, lda, Bp + vectors * L, ldb, rows, tail, k0, k1, alpha,
                                   add);
        }
}

// Whole 8 x 8 tiles of floats in vectors of 8: three rounds of shuffles
// (pairs of lanes, pairs of pairs, halves), as the unpack/shuffle/permute
// transpose of AVX; GCC picks each clone's instructions.
using lanes8 = float __attribute__((vector_size(32)));
using mask8 = int __attribute__((vector_size(32)));

[[gnu::always_inline]] inline void transpose_tile8(float* out, int ld_out, const float* in, int ld_in) {
    lanes8 r[8], t[8];
    for (int i = 0; i < 8; ++i) std::memcpy(&r[i], in + static_cast<long>(i) * ld_in, sizeof(lanes8));
    for (int i = 0; i < 8; i += 2) {  // interleave lanes of rows i, i + 1
        t[i] = __builtin_shuffle(r[i], r[i + 1], mask8{0, 8, 1, 9, 4, 12, 5, 13});
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], mask8{2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int i = 0; i < 8; i += 4)  // pairs of lanes of rows i..i+3
        for (int h = 0; h < 2; ++h) {
            r[i + h] = __builtin_shuffle(t[i + h], t[i + h + 2], mask8{0, 1, 8, 9, 4, 5, 12, 13});
            r[i + h + 2] = __builtin_shuffle(t[i + h], t[i + h + 2], mask8{2, 3, 10, 11, 6, 7, 14, 15});
        }
    for (int i = 0; i < 4; ++i) {  // halves of rows i, i + 4
        t[i] = __builtin_shuffle(r[i], r[i + 4], mask8{0, 1, 2, 3, 8, 9, 10, 11});
        t[i + 4] = __builtin_shuffle(r[i], r[i + 4], mask8{4, 5, 6, 7, 12, 13, 14, 15});
    }
    // t[c] holds out row c in the order (0 2 1 3): undo it on the way out
    constexpr int row_of[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    for (int c = 0; c < 8; ++c) std::memcpy(out + static_cast<long>(row_of[c]) * ld_out, &t[c], sizeof(lanes8));
}

template <class T>
[[gnu::always_inline]] inline void transpose_scalar(T* out, const T* in, int rows, int ld_in, int i0, int i1, int j0,
                                                    int j1) {
    for (int j = j0; j < j1; ++j)
        for (int i = i0; i < i1; ++i) out[static_cast<long>(j) * rows + i] = in[static_cast<long>(i) * ld_in + j];
}

// In tiles: a row stride of a power of two would map a whole column of the
// input to a few cache sets, evicting itself.
template <class T>
[[gnu::always_inline]] inline void transpose_impl(T* out, const T* in, int rows, int cols, int ld_in) {
    constexpr int tile = 8;
    const int rows8 = rows / tile * tile, cols8 = cols / tile * tile;
    for (int i0 = 0; i0 < rows8; i0 += tile)
        for (int j0 = 0; j0 < cols8; j0 += tile) {
            if constexpr (std::is_same_v<T, float>)
                transpose_tile8(out + static_cast<long>(j0) * rows + i0, rows, in + static_cast<long>(i0) * ld_in + j0,
                                ld_in);
            else
                transpose_scalar(out, in, rows, ld_in, i0, i0 + tile, j0, j0 + tile);
        }
    transpose_scalar(out, in, rows, ld_in, 0, rows8, cols8, cols);  // right edge
    transpose_scalar(out, in, rows, ld_in, rows8, rows, 0, cols);   // bottom edge
}

}  // namespace

// One version per instruction set, each with vectors of its register width
// (ATTNLAB_VERSIONS, target_clones.hpp), picked by the CPU at each call.
template <class T, int VB>
[[gnu::always_inline]] inline void small_gemm_at(T* C, int ldc, const T* A, int lda, const T* B, int ldb, int M, int N,
                                                 int K, T alpha, bool add, row_band k_band, row_band n_band,
                                                 bool trans_a) {
    if (trans_a)
        small_gemm_impl<T, VB, true>(C, ldc, A, lda, B, ldb, M, N, K, alpha, add, k_band, n_band);
    else
        small_gemm_impl<T, VB, false>(C, ldc, A, lda, B, ldb, M, N, K, alpha, add, k_band, n_band);
}

ATTNLAB_VERSIONS(small_gemm_float, (small_gemm_at<float, bytes>),
                 (float* C, int ldc, const float* A, int lda, const float* B, int ldb, int M, int N, int K, float alpha,
                  bool add, row_band k_band, row_band n_band, bool trans_a),
                 (C, ldc, A, lda, B, ldb, M, N, K, alpha, add, k_band, n_band, trans_a))
// Versioned too: eval --precision double runs whole models in double, and the
// baseline's vectors made it ~15x slower than float.
ATTNLAB_VERSIONS(small_gemm_double, (small_gemm_at<double, bytes>),
                 (double* C, int ldc, const double* A, int lda, const double* B, int ldb, int M, int N, int K,
                  double alpha, bool add, row_band k_band, row_band n_band, bool trans_a),
                 (C, ldc, A, lda, B, ldb, M, N, K, alpha, add, k_band, n_band, trans_a))

void small_gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, int M, int N, int K, float alpha,
                bool add, row_band k_band, row_band n_band, bool trans_a) {
    small_gemm_float(C, ldc, A, lda, B, ldb, M, N, K, alpha, add, k_band, n_band, trans_a);
}

void small_gemm(double* C, int ldc, const double* A, int lda, const double* B, int ldb, int M, int N, int K,
                double alpha, bool add, row_band k_band, row_band n_band, bool trans_a) {
    small_gemm_double(C, ldc, A, lda, B, ldb, M, N, K, alpha, add, k_band, n_band, trans_a);
}

int use_vector_bytes(int bytes) {
    detail::requested_vector_bytes.store(bytes, std::memory_order_relaxed);
    return detail::vector_bytes_in_use();
}

ATTNLAB_CLONES void transpose_into(float* out, const float* in, int rows, int cols, int ld_in) {
    transpose_impl(out, in, rows, cols, ld_in);
}

ATTNLAB_CLONES void transpose_into(double* out, const double* in, int rows, int cols, int ld_in) {
    transpose_impl(out, in, rows, cols, ld_in);
}

}  // namespace attnlab
