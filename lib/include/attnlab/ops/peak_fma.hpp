// The physical bound of a benchmark: the peak float32 rate of fused
// multiply-adds (FMA) on the instruction set attnlab's own kernels dispatch
// to (small_gemm.hpp: AVX-512, AVX2 with FMA, or the x86-64 baseline, which
// has no FMA and counts a multiply and an add). A loop of independent FMA
// chains that stay in registers: no memory traffic, enough chains to cover
// the instruction's latency on every port, so the count of floating-point
// operations per second is what the cores can do at best. `attnlab bench`
// reports its percentages against it; unlike a matrix-multiply probe
// (a library's kernel, whose width an environment variable can change), no
// real workload can run above it.
#pragma once
#include <string>

namespace attnlab {

struct peak_fma_rate {
    double gflops = 0;  // float32, all threads together (2 operations per FMA lane)
    int threads = 0;
    int lanes = 0;    // float32 lanes of one vector register
    std::string isa;  // "avx512f", "avx2+fma" or "baseline (sse2, no fma)"
};

// Measured with `threads` threads, each running the loop on its own core:
// the best of `repeats` passes of about `seconds` each.
peak_fma_rate measure_peak_fma(int threads, int repeats = 9, double seconds = 0.1);

}  // namespace attnlab
