// Packed matrix products (packed_gemm.hpp): B in blocks that stay in L2,
// A in panels that stay in L1, a register tile of accumulators over k.
#include "attnlab/ops/packed_gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "attnlab/ops/small_gemm.hpp"  // transpose_into
#include "target_clones.hpp"

namespace attnlab {

namespace {

// The register tile of each instruction set: MR rows of C by CV vectors.
// MR x CV accumulators, CV vectors of B and one broadcast of A must fit the
// registers (32 on AVX-512, 16 on AVX2 and the baseline).
template <int VB>
struct tile_shape {
    static constexpr int rows = VB == 64 ? 12 : VB == 32 ? 6 : 4;
    static constexpr int vectors = 2;
};

// Rows of op(B) per block: a panel of A (12 x 128 floats, 6 KiB) stays in
// L1 beside the B rows a tile streams. Measured on the products of a
// d_model 256 model (one thread, AVX-512): 128 rows a block ran 2-8 % faster
// than 256 and 384; tiles of 14 x 32, 8 x 48 and 6 x 64 no faster than
// 12 x 32 (within the 5 % the repeats varied).
constexpr int block_k = 128;
// Bytes of one packed block of B (block_k rows): it stays in L2 (1-2 MiB per
// core on the CPUs measured) while every panel of A passes over it.
constexpr long block_b_bytes = 1L << 20;

// One buffer per thread, aligned to a cache line, grown on demand.
template <class T>
T* packing_buffer(int which, long elements) {
    struct buffer {
        std::unique_ptr<T, decltype(&std::free)> data{nullptr, &std::free};
        long size = 0;
    };
    thread_local buffer buffers[2];
    buffer& b = buffers[which];
    if (b.size < elements) {
        const long bytes = (elements * static_cast<long>(sizeof(T)) + 63) / 64 * 64;
        b.data.reset(static_cast<T*>(std::aligned_alloc(64, static_cast<std::size_t>(bytes))));
        if (!b.data) throw std::bad_alloc();
        b.size = elements;
    }
    return b.data.get();
}

// Packing copies; where a panel is a block of the operand transposed, the
// 8 x 8 vector transposes of transpose_into (measured on a d_model 256
// model's products: the whole set 4 % faster than copying entry by entry).
//
// Bp: op(B) rows k0..k0+kc, columns j0..j0+nc, as panels of NR columns
// (panel p at Bp + p kc NR, its row k NR consecutive values); columns past N
// are zero.
template <class T, int NR>
void pack_b(T* Bp, bool trans_b, const T* B, int N, int K, int k0, int kc, int j0, int nc) {
    for (int p = 0; p * NR < nc; ++p) {
        T* panel = Bp + static_cast<long>(p) * kc * NR;
        const int j_begin = j0 + p * NR, cols = std::min(NR, nc - p * NR);
        if (!trans_b) {  // B (K, N): a panel row is a contiguous run of a B row
            for (int k = 0; k < kc; ++k) {
                const T* src = B + static_cast<long>(k0 + k) * N + j_begin;
                T* dst = panel + static_cast<long>(k) * NR;
                std::memcpy(dst, src, sizeof(T) * static_cast<std::size_t>(cols));
                std::fill(dst + cols, dst + NR, T(0));
            }
        } else if (cols == NR) {  // B stored (N, K): the panel is NR rows of B transposed
            transpose_into(panel, B + static_cast<long>(j_begin) * K + k0, NR, kc, K);
        } else {  // the last, narrower panel, entry by entry
            for (int j = 0; j < cols; ++j) {
                const T* src = B + static_cast<long>(j_begin + j) * K + k0;
                for (int k = 0; k < kc; ++k) panel[static_cast<long>(k) * NR + j] = src[k];
            }
            for (int k = 0; k < kc; ++k)
                std::fill(panel + static_cast<long>(k) * NR + cols, panel + (k + 1L) * NR, T(0));
        }
    }
}

// Ap (kc, MR): op(A) rows i0..i0+rows, columns k0..k0+kc, k-major; rows
// past `rows` are zero.
template <class T, int MR>
void pack_a(T* Ap, bool trans_a, const T* A, int M, int K, int i0, int rows, int k0, int kc) {
    if (!trans_a && rows == MR) {  // A (M, K): the panel is MR rows of A transposed
        transpose_into(Ap, A + static_cast<long>(i0) * K + k0, MR, kc, K);
        return;
    }
    if (!trans_a) {  // the last, shorter panel, entry by entry
        for (int r = 0; r < rows; ++r) {
            const T* src = A + static_cast<long>(i0 + r) * K + k0;
            for (int k = 0; k < kc; ++k) Ap[static_cast<long>(k) * MR + r] = src[k];
        }
    } else {  // A stored (K, M): row k of the panel is a contiguous run of A's row k
        for (int k = 0; k < kc; ++k)
            std::memcpy(Ap + static_cast<long>(k) * MR, A + static_cast<long>(k0 + k) * M + i0,
                        sizeof(T) * static_cast<std::size_t>(rows));
    }
    if (rows < MR)
        for (int k = 0; k < kc; ++k) std::fill(Ap + static_cast<long>(k) * MR + rows, Ap + (k + 1L) * MR, T(0));
}

// C (rows, cols) (+)= Ap (MR, kc) Bp (kc, NR), a tile of MR x NR kept in
// registers while k runs; rows <= MR and cols <= NR of it are written.
template <class T, int VB, int MR, int CV>
[[gnu::always_inline]] inline void register_tile(int kc, const T* Ap, const T* Bp, T* C, int ldc, int rows, int cols,
                                                 bool add) {
    using V = typename detail::simd<T, VB>::type;
    constexpr int L = detail::simd<T, VB>::lanes, NR = CV * L;
    V acc[MR][CV];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) acc[r][c] = V{};
    for (int k = 0; k < kc; ++k) {
        V b[CV];
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) std::memcpy(&b[c], Bp + static_cast<long>(k) * NR + c * L, sizeof(V));
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const T a = Ap[static_cast<long>(k) * MR + r];
#pragma GCC unroll 4
            for (int c = 0; c < CV; ++c) acc[r][c] += a * b[c];
        }
    }
    if (rows == MR && cols == NR) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
            for (int c = 0; c < CV; ++c) {
                T* dst = C + static_cast<long>(r) * ldc + c * L;
                V out = acc[r][c];
                if (add) {
                    V old;
                    std::memcpy(&old, dst, sizeof(V));
                    out += old;
                }
                std::memcpy(dst, &out, sizeof(V));
            }
        return;
    }
    // An edge tile: through a buffer, then only the entries C has.
    alignas(64) T part[MR * NR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) std::memcpy(part + r * NR + c * L, &acc[r][c], sizeof(V));
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < cols; ++j) {
            T& dst = C[static_cast<long>(r) * ldc + j];
            dst = add ? dst + part[r * NR + j] : part[r * NR + j];
        }
}

template <class T, int VB>
[[gnu::always_inline]] inline void packed_gemm_at(bool trans_a, bool trans_b, int M, int N, int K, const T* A,
                                                  const T* B, bool add, T* C) {
    constexpr int MR = tile_shape<VB>::rows, CV = tile_shape<VB>::vectors;
    constexpr int NR = CV * detail::simd<T, VB>::lanes;
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (!add) std::fill_n(C, static_cast<long>(M) * N, T(0));
        return;
    }
    const int kc_max = std::min(block_k, K);
    // Columns per block of B: its packed size within block_b_bytes, whole panels.
    const int nc_max =
        std::max<int>(NR, static_cast<int>(block_b_bytes / (kc_max * static_cast<long>(sizeof(T)))) / NR * NR);
    const int nc_cap = std::min(nc_max, (N + NR - 1) / NR * NR);
    T* Bp = packing_buffer<T>(0, static_cast<long>(kc_max) * nc_cap);
    T* Ap = packing_buffer<T>(1, static_cast<long>(kc_max) * MR);
    for (int j0 = 0; j0 < N; j0 += nc_max) {
        const int nc = std::min(nc_max, N - j0);
        for (int k0 = 0; k0 < K; k0 += block_k) {
            const int kc = std::min(block_k, K - k0);
            const bool accumulate = add || k0 > 0;  // later blocks of k add to the earlier ones
            pack_b<T, NR>(Bp, trans_b, B, N, K, k0, kc, j0, nc);
            for (int i0 = 0; i0 < M; i0 += MR) {
                const int rows = std::min(MR, M - i0);
                pack_a<T, MR>(Ap, trans_a, A, M, K, i0, rows, k0, kc);
                for (int jp = 0; jp < nc; jp += NR)
                    register_tile<T, VB, MR, CV>(kc, Ap, Bp + static_cast<long>(jp) * kc,
                                                 C + static_cast<long>(i0) * N + j0 + jp, N, rows,
                                                 std::min(NR, nc - jp), accumulate);
            }
        }
    }
}

ATTNLAB_VERSIONS(packed_gemm_float, (packed_gemm_at<float, bytes>),
                 (bool trans_a, bool trans_b, int M, int N, int K, const float* A, const float* B, bool add, float* C),
                 (trans_a, trans_b, M, N, K, A, B, add, C))
ATTNLAB_VERSIONS(packed_gemm_double, (packed_gemm_at<double, bytes>),
                 (bool trans_a, bool trans_b, int M, int N, int K, const double* A, const double* B, bool add,
                  double* C),
                 (trans_a, trans_b, M, N, K, A, B, add, C))

}  // namespace

void packed_gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, const float* B, bool add, float* C) {
    packed_gemm_float(trans_a, trans_b, M, N, K, A, B, add, C);
}

void packed_gemm(bool trans_a, bool trans_b, int M, int N, int K, const double* A, const double* B, bool add,
                 double* C) {
    packed_gemm_double(trans_a, trans_b, M, N, K, A, B, add, C);
}

}  // namespace attnlab
