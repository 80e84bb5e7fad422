// The guard that flushes float subnormals to zero while a run trains
// (util/subnormals.hpp): on inside, in every OpenMP thread, off again after.
#include <catch2/catch.hpp>
#include <limits>
#include <omp.h>
#include <vector>

#include "attnlab/util/subnormals.hpp"

using namespace attnlab;

namespace {
// volatile: the products must happen at run time, under the thread's MXCSR.
float product(float a, float b) {
    volatile float x = a, y = b;
    return x * y;
}
// Whether each of n OpenMP threads flushes subnormals.
std::vector<int> flushing_in_team(int n) {
    std::vector<int> on(n, -1);
#pragma omp parallel num_threads(n)
    on[omp_get_thread_num()] = flushing_subnormals() ? 1 : 0;
    return on;
}
constexpr float tiny_float =
    1e-30f;  // tiny_float * tiny_float = 1e-60 underflows; tiny_float * 1e-10 = 1e-40 is subnormal
}  // namespace

#ifdef ATTNLAB_HAS_MXCSR
TEST_CASE("subnormal floats are flushed to zero inside the guard and kept outside it", "[ops]") {
    REQUIRE_FALSE(flushing_subnormals());
    const float sub = std::numeric_limits<float>::denorm_min();
    REQUIRE(product(tiny_float, 1e-10f) > 0.0f);  // 1e-40: a subnormal
    REQUIRE(product(sub, 1.0f) == sub);
    {
        const subnormals_flushed guard;
        CHECK(flushing_subnormals());
        CHECK(product(tiny_float, 1e-10f) == 0.0f);  // results flushed (FTZ)
        CHECK(product(sub, 1e30f) == 0.0f);          // inputs read as 0 (DAZ); else 1.4e-15
        CHECK(product(2e-19f, 1e-19f) > 0.0f);       // 2e-38 is still normal: nothing else changes
        CHECK(product(1.5f, 2.0f) == 3.0f);
    }
    CHECK_FALSE(flushing_subnormals());
    CHECK(product(tiny_float, 1e-10f) > 0.0f);
}

TEST_CASE("the guard sets every OpenMP thread of the team and restores each, also when nested", "[ops]") {
    const int n = 3, threads_before = omp_get_max_threads();
    omp_set_num_threads(n);
    CHECK(flushing_in_team(n) == std::vector<int>(n, 0));
    {
        const subnormals_flushed outer;
        CHECK(flushing_in_team(n) == std::vector<int>(n, 1));
        {
            const subnormals_flushed inner;
            CHECK(flushing_in_team(n) == std::vector<int>(n, 1));
        }
        CHECK(flushing_in_team(n) == std::vector<int>(n, 1));  // the outer guard still holds
    }
    CHECK(flushing_in_team(n) == std::vector<int>(n, 0));
    CHECK_FALSE(flushing_subnormals());
    omp_set_num_threads(threads_before);
}
#endif
