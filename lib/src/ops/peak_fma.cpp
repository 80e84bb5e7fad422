// peak_fma.hpp: independent FMA chains in registers, one version per instruction set.
#include "attnlab/ops/peak_fma.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "target_clones.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnlab {

namespace {

// Chains per register file: an FMA's latency (4 cycles) times the FMA ports
// (2) is 8 in flight; 12 leaves margin without spilling (16 or 32 registers).
constexpr int chains = 12;

// Runs `iterations` rounds of one FMA per chain; returns a sum that depends
// on every chain, so that the compiler keeps the loop.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
[[gnu::target("avx512f")]] float fma_avx512(long iterations) {
    __m512 acc[chains];
    for (int i = 0; i < chains; ++i) acc[i] = _mm512_set1_ps(1e-3f * static_cast<float>(i));
    const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iterations; ++it)
        for (int i = 0; i < chains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __m512 s = acc[0];
    for (int i = 1; i < chains; ++i) s = _mm512_add_ps(s, acc[i]);
    alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
    _mm512_store_ps(lanes, s);
    float t = 0;
    for (float x : lanes) t += x;
    return t;
}
[[gnu::target("arch=x86-64-v3")]] float fma_avx2(long iterations) {
    __m256 acc[chains];
    for (int i = 0; i < chains; ++i) acc[i] = _mm256_set1_ps(1e-3f * static_cast<float>(i));
    const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iterations; ++it)
        for (int i = 0; i < chains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    __m256 s = acc[0];
    for (int i = 1; i < chains; ++i) s = _mm256_add_ps(s, acc[i]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    float t = 0;
    for (float x : lanes) t += x;
    return t;
}
#endif
// Baseline: a multiply and an add per lane (SSE2 has no FMA), 4 lanes.
float mul_add_baseline(long iterations) {
    using vec = float __attribute__((vector_size(16)));
    vec acc[chains];
    for (int i = 0; i < chains; ++i) acc[i] = vec{} + 1e-3f * static_cast<float>(i);
    const vec a = vec{} + 0.9999999f, b = vec{} + 1e-7f;
    for (long it = 0; it < iterations; ++it)
        for (int i = 0; i < chains; ++i) {
            acc[i] = acc[i] * a;  // two statements: no contraction into an FMA the baseline lacks
            acc[i] = acc[i] + b;
        }
    float t = 0;
    for (int i = 0; i < chains; ++i)
        for (int l = 0; l < 4; ++l) t += acc[i][l];
    return t;
}

struct isa_loop {
    float (*run)(long);
    int lanes;
    const char* name;
};
isa_loop loop_for_this_cpu() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    const int bytes = detail::vector_bytes_in_use();
    if (bytes == 64) return {fma_avx512, 16, "avx512f"};
    if (bytes == 32) return {fma_avx2, 8, "avx2+fma"};
#endif
    return {mul_add_baseline, 4, "baseline (sse2, no fma)"};
}

double seconds_of(const std::chrono::steady_clock::time_point& t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

peak_fma_rate measure_peak_fma(int threads, int repeats, double seconds) {
    const isa_loop loop = loop_for_this_cpu();
    peak_fma_rate r;
    r.threads = std::max(1, threads);
    r.lanes = loop.lanes;
    r.isa = loop.name;
    // Calibrate: iterations for about `seconds` on one thread.
    long iterations = 1 << 16;
    volatile float sink = 0;
    for (;;) {
        const auto t0 = std::chrono::steady_clock::now();
        sink = sink + loop.run(iterations);
        if (seconds_of(t0) > seconds / 4 || iterations > (1L << 40)) break;
        iterations *= 2;
    }
    iterations *= 4;
    double best = 1e30;
    for (int rep = 0; rep < std::max(1, repeats); ++rep) {
        double slowest = 0;  // the pass ends when its last thread does
#pragma omp parallel num_threads(r.threads) reduction(max : slowest)
        {
#pragma omp barrier
            const auto t0 = std::chrono::steady_clock::now();
            const float s = loop.run(iterations);
            slowest = seconds_of(t0);
            if (s == 12345.678f) sink = sink + s;  // never true; keeps the result alive
        }
        best = std::min(best, slowest);
    }
    const double ops = 2.0 * chains * loop.lanes * static_cast<double>(iterations);  // per thread
    r.gflops = r.threads * ops / best / 1e9;
    return r;
}

}  // namespace attnlab
