// packed_gemm against a product computed entry by entry in double: the four
// transpose combinations, add, edges of every size (rows past the last whole
// register tile, columns past the last whole panel), K over several blocks
// (each block adds to the last), N over several blocks of B, K = 0; each case
// in every version of the kernel this CPU can run (AVX-512, AVX2, baseline:
// their tiles differ). And the model's products: a d_model 128 model's loss
// and gradients in double are those of the BLAS library's products.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "attnlab/model/transformer.hpp"
#include "attnlab/ops/ops.hpp"
#include "attnlab/ops/packed_gemm.hpp"
#include "attnlab/ops/small_gemm.hpp"
#include "attnlab/util/rng.hpp"
#include "support/isa_versions.hpp"
#include "support/model_check.hpp"

using namespace attnlab;
using attnlab::test::for_each_version;

namespace {

struct packed_case {
    int M, N, K;
    bool trans_a, trans_b, add;
};

// Entries of C that differ from the double product by more than tol (relative
// to the sum of |terms|, the scale of a sum's rounding).
template <class T>
long mismatches_of(const packed_case& pc, double tol) {
    rng r(static_cast<std::uint64_t>(pc.M * 7919 + pc.N * 131 + pc.K * 17 + pc.trans_a * 2 + pc.trans_b));
    std::vector<T> A(static_cast<size_t>(pc.M) * pc.K), B(static_cast<size_t>(pc.K) * pc.N),
        C(static_cast<size_t>(pc.M) * pc.N);
    for (auto& a : A) a = static_cast<T>(r.normal());
    for (auto& b : B) b = static_cast<T>(r.normal());
    for (auto& c : C) c = static_cast<T>(pc.add ? r.normal() : 12345.0);  // without add, a sentinel to overwrite
    const std::vector<T> C0 = C;
    auto a_at = [&](int i, int k) {
        return pc.trans_a ? A[static_cast<size_t>(k) * pc.M + i] : A[static_cast<size_t>(i) * pc.K + k];
    };
    auto b_at = [&](int k, int j) {
        return pc.trans_b ? B[static_cast<size_t>(j) * pc.K + k] : B[static_cast<size_t>(k) * pc.N + j];
    };
    packed_gemm(pc.trans_a, pc.trans_b, pc.M, pc.N, pc.K, A.data(), B.data(), pc.add, C.data());
    long wrong = 0;
    for (int i = 0; i < pc.M; ++i)
        for (int j = 0; j < pc.N; ++j) {
            double ref = 0, scale = 0;
            for (int k = 0; k < pc.K; ++k) {
                const double t = static_cast<double>(a_at(i, k)) * b_at(k, j);
                ref += t;
                scale += std::abs(t);
            }
            const double before = C0[static_cast<size_t>(i) * pc.N + j];
            if (pc.add) {
                ref += before;
                scale += std::abs(before);
            }
            wrong += !(std::abs(C[static_cast<size_t>(i) * pc.N + j] - ref) <= tol * (1 + scale));
        }
    return wrong;
}

}  // namespace

TEST_CASE("packed_gemm: every entry equals the product in double, every transpose and edge", "[ops][packed_gemm]") {
    for_each_version([] {
        // M: below one tile (4, 6 or 12 rows by version), whole tiles and a
        // partial last one; N: below one panel (8, 16 or 32 columns), whole
        // panels and a partial last one; K: one block (128), several, a partial last.
        for (int M : {1, 5, 24, 37})
            for (int N : {3, 32, 45})
                for (int K : {1, 70, 300})
                    for (int t = 0; t < 4; ++t) {
                        const packed_case pc{M, N, K, (t & 1) != 0, (t & 2) != 0, (M + N + K + t) % 2 == 0};
                        INFO("M " << M << " N " << N << " K " << K << " trans_a " << pc.trans_a << " trans_b "
                                  << pc.trans_b << " add " << pc.add);
                        CHECK(mismatches_of<float>(pc, 1e-6) == 0);
                        CHECK(mismatches_of<double>(pc, 1e-14) == 0);
                    }
    });
}

TEST_CASE("packed_gemm: N over several blocks of B and K over several blocks of k", "[ops][packed_gemm]") {
    // A block of B holds 1 MiB: 2048 float columns at 128 rows, so N 2100 spans two.
    CHECK(mismatches_of<float>({13, 2100, 260, false, true, true}, 1e-6) == 0);
    CHECK(mismatches_of<float>({13, 2100, 513, true, false, false}, 1e-6) == 0);
    CHECK(mismatches_of<double>({7, 1100, 300, false, false, true}, 1e-14) == 0);  // 1024 doubles a block
}

TEST_CASE("packed_gemm: K = 0 writes zeros, or leaves C with add; M or N = 0 writes nothing", "[ops][packed_gemm]") {
    std::vector<float> C(12, 3.0f);
    const float* none = nullptr;
    packed_gemm(false, false, 3, 4, 0, none, none, true, C.data());
    CHECK(C == std::vector<float>(12, 3.0f));
    packed_gemm(false, false, 3, 4, 0, none, none, false, C.data());
    CHECK(C == std::vector<float>(12, 0.0f));
    std::vector<float> D(4, 7.0f);
    packed_gemm(false, false, 0, 4, 5, none, none, false, D.data());
    packed_gemm(false, false, 4, 0, 5, none, none, false, D.data());
    CHECK(D == std::vector<float>(4, 7.0f));
}

TEST_CASE("packed_gemm: sums k in index order whatever the thread, so a repeat is bit-identical",
          "[ops][packed_gemm]") {
    rng r(5);
    std::vector<float> A(300 * 290), B(290 * 200), C1(300 * 200), C2(300 * 200);
    for (auto& a : A) a = static_cast<float>(r.normal());
    for (auto& b : B) b = static_cast<float>(r.normal());
    packed_gemm(false, false, 300, 200, 290, A.data(), B.data(), false, C1.data());
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        { packed_gemm(false, false, 300, 200, 290, A.data(), B.data(), false, C2.data()); }
    }
    CHECK(C1 == C2);
}

TEST_CASE("a d_model 128 model: loss and gradients through packed_gemm = through the BLAS library",
          "[ops][packed_gemm][model]") {
    // T 64, one sequence per micro-batch: the projections (64 x 128 x 128),
    // the MLP and their weight gradients are large enough for packed_gemm.
    const int V = 9, B = 2, T = 64;
    model_config m = test::micro_model();
    m.d_model = 128;
    transformer<double> model(m, test::gated_taylor_rmsnorm(), V, T);
    model.init_params(3);
    std::vector<std::int32_t> tokens, targets;
    test::random_batch(tokens, targets, V, B, T, 3, 4);
    auto loss_and_grads = [&](large_products kernel) {
        const large_products saved = use_large_products(kernel);
        model.zero_grad();
        const double loss = model.forward_backward(tokens.data(), targets.data(), B, T);
        use_large_products(saved);
        return std::make_pair(loss, model.grads);
    };
    const auto [loss_packed, grads_packed] = loss_and_grads(large_products::automatic);
    const auto [loss_blas, grads_blas] = loss_and_grads(large_products::blas);
    CHECK(loss_packed == Approx(loss_blas).epsilon(1e-13));
    CHECK(test::relative_error(grads_packed, grads_blas) <= 1e-12);
    CHECK(test::norm(grads_packed) > 0);
}
