// small_gemm against a product computed entry by entry in double: every
// shape class the kernel splits into (row blocks of 8, each in tiles of 1 to
// 8 rows as the registers allow, column tiles of 4..1 vectors and the scalar
// tail), leading dimensions
// wider than the rows, alpha, add, and both bands (entries outside the
// written range keep their sentinel); each case in every version of the
// kernel this CPU can run (AVX-512, AVX2, baseline: their tiles differ).
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attnlab/ops/small_gemm.hpp"
#include "attnlab/util/rng.hpp"
#include "support/isa_versions.hpp"

using namespace attnlab;
using attnlab::test::for_each_version;

namespace {

struct product_case {
    int M, N, K;
    row_band k_band, n_band;
    bool add;
    double alpha;
    bool trans_a = false;  // A stored as (K, M)
};

// Runs one case in T and compares every entry: inside the needed columns the
// product (with A zeroed outside its band, as the contract asks), outside the
// written columns the sentinel.
template <class T>
void check_case(const product_case& pc, double tol) {
    const int lda = (pc.trans_a ? pc.M : pc.K) + 3, ldb = pc.N + 5, ldc = pc.N + 2;
    auto a_at = [&](int i, int k) {
        return pc.trans_a ? static_cast<size_t>(k) * lda + i : static_cast<size_t>(i) * lda + k;
    };
    rng r(static_cast<std::uint64_t>(pc.M * 131 + pc.N * 17 + pc.K));
    std::vector<T> A(static_cast<size_t>(pc.trans_a ? pc.K : pc.M) * lda), B(static_cast<size_t>(pc.K) * ldb);
    for (auto& a : A) a = static_cast<T>(r.normal());
    for (auto& b : B) b = static_cast<T>(r.normal());
    auto lo = [&](const row_band& band, int i, int n) { return std::clamp(i + band.lo, 0, n); };
    auto hi = [&](const row_band& band, int i, int n) { return std::clamp(i + band.hi, 0, n); };
    for (int i = 0; i < pc.M; ++i)
        for (int k = 0; k < pc.K; ++k)
            if (k < lo(pc.k_band, i, pc.K) || k >= hi(pc.k_band, i, pc.K)) A[a_at(i, k)] = 0;
    const T sentinel = T(12345);
    std::vector<T> C(static_cast<size_t>(pc.M) * ldc, sentinel);
    if (pc.add)
        for (auto& c : C) c = static_cast<T>(r.normal());
    const std::vector<T> C0 = C;
    small_gemm(C.data(), ldc, A.data(), lda, B.data(), ldb, pc.M, pc.N, pc.K, static_cast<T>(pc.alpha), pc.add,
               pc.k_band, pc.n_band, pc.trans_a);
    long mismatches = 0, written_outside = 0;
    for (int i = 0; i < pc.M; ++i)
        for (int j = 0; j < ldc; ++j) {
            const T got = C[static_cast<size_t>(i) * ldc + j];
            const T before = C0[static_cast<size_t>(i) * ldc + j];
            if (j >= pc.N) {  // past N: never written
                written_outside += got != before;
                continue;
            }
            double ref = 0;
            for (int k = 0; k < pc.K; ++k)
                ref += static_cast<double>(A[a_at(i, k)]) * B[static_cast<size_t>(k) * ldb + j];
            ref = pc.alpha * ref + (pc.add ? static_cast<double>(before) : 0.0);
            const bool needed = j >= lo(pc.n_band, i, pc.N) && j < hi(pc.n_band, i, pc.N);
            if (needed)
                mismatches += !(std::abs(got - ref) <= tol * (1 + std::abs(ref)));
            else  // may be written, then with the true value
                mismatches += !(got == before || std::abs(got - ref) <= tol * (1 + std::abs(ref)));
        }
    INFO("M " << pc.M << " N " << pc.N << " K " << pc.K << " add " << pc.add << " alpha " << pc.alpha << " trans_a "
              << pc.trans_a);
    CHECK(mismatches == 0);
    CHECK(written_outside == 0);
}

}  // namespace

TEST_CASE("small_gemm: the baseline version can always be chosen, and 0 restores the widest", "[ops][small_gemm]") {
    const int widest = use_vector_bytes(0);
    CHECK((widest == 64 || widest == 32 || widest == 16));
    CHECK(use_vector_bytes(16) == 16);
    CHECK(use_vector_bytes(0) == widest);
}

TEST_CASE("small_gemm: every entry of dense products equals the product in double", "[ops][small_gemm]") {
    for_each_version([] {
        // N covers 4, 3, 2 and 1 vectors and the scalar tail (a vector: 16, 8 or 4 floats by version); M every
        // count of rows in a last block (1..8) and whole blocks.
        for (int M : {1, 3, 5, 8, 13, 15, 64})
            for (int N : {5, 16, 28, 32, 40, 64, 71})
                for (int K : {1, 32, 37}) {
                    check_case<float>({M, N, K, {}, {}, false, 1.0}, 1e-5);
                    check_case<double>({M, N, K, {}, {}, true, 0.25}, 1e-12);
                    check_case<float>({M, N, K, {}, {}, true, -0.5, true}, 1e-5);
                }
    });
}

TEST_CASE("small_gemm: banded operands as attention uses them", "[ops][small_gemm]") {
    for_each_version([] {
        for (int T : {1, 7, 16, 33, 64, 100})
            for (int off : {0, 5}) {  // off: keys before the block's first row (k0 < t0)
                const int keys = T + off;
                // scores (T, keys) = Q (T, 32) K^T (32, keys): row i needs keys < i + off + 1
                check_case<float>({T, keys, 32, {}, {INT_MIN / 2, off + 1}, false, 0.17}, 1e-5);
                check_case<double>({T, keys, 32, {}, {INT_MIN / 2, off + 1}, false, 0.17}, 1e-12);
                // U (T, 32) += W (T, keys) V (keys, 32): row i of W is zero from key i + off + 1
                check_case<float>({T, 32, keys, {INT_MIN / 2, off + 1}, {}, true, 1.0}, 1e-5);
                check_case<double>({T, 32, keys, {INT_MIN / 2, off + 1}, {}, true, 1.0}, 1e-12);
                // dV (keys, 32) += W^T (keys, T) dU (T, 32): row j of W^T is zero before row j - off
                check_case<float>({keys, 32, T, {-off, INT_MAX / 2}, {}, true, 1.0}, 1e-5);
                check_case<double>({keys, 32, T, {-off, INT_MAX / 2}, {}, true, 1.0}, 1e-12);
                // the same from W (T, keys) as stored: trans_a
                check_case<float>({keys, 32, T, {-off, INT_MAX / 2}, {}, true, 1.0, true}, 1e-5);
                check_case<double>({keys, 32, T, {-off, INT_MAX / 2}, {}, true, 0.3, true}, 1e-12);
            }
    });
}

TEST_CASE("small_gemm: a band that is empty for some rows gives zero (or leaves C) there", "[ops][small_gemm]") {
    for_each_version([] {
        check_case<float>({20, 32, 10, {5, 8}, {}, false, 1.0}, 1e-5);  // rows >= 5: k from i + 5 >= K, empty
        check_case<float>({20, 32, 10, {5, 8}, {}, true, 2.0}, 1e-5);
    });
}

TEST_CASE("transpose_into: out(j, i) = in(i, j) with a leading dimension", "[ops][small_gemm]") {
    // whole 8 x 8 tiles, right and bottom edges, and shapes below one tile
    struct shape {
        int rows, cols, ld;
    };
    for (const shape sh : {shape{5, 19, 23}, shape{21, 19, 23}, shape{64, 32, 64}, shape{16, 8, 8}, shape{3, 2, 2}}) {
        std::vector<float> in(static_cast<size_t>(sh.rows) * sh.ld), out(static_cast<size_t>(sh.rows) * sh.cols, -1);
        std::vector<double> ind(in.size()), outd(out.size(), -1);
        for (size_t i = 0; i < in.size(); ++i) ind[i] = in[i] = static_cast<float>(i);
        transpose_into(out.data(), in.data(), sh.rows, sh.cols, sh.ld);
        transpose_into(outd.data(), ind.data(), sh.rows, sh.cols, sh.ld);
        long wrong = 0;
        for (int i = 0; i < sh.rows; ++i)
            for (int j = 0; j < sh.cols; ++j) {
                const size_t o = static_cast<size_t>(j) * sh.rows + i, n = static_cast<size_t>(i) * sh.ld + j;
                wrong += out[o] != in[n];
                wrong += outd[o] != ind[n];
            }
        INFO("rows " << sh.rows << " cols " << sh.cols << " ld " << sh.ld);
        CHECK(wrong == 0);
    }
}
