// Hot loops compiled once per instruction set (AVX-512, AVX2 with FMA, the
// x86-64 baseline) and picked by the CPU the program runs on, so that the
// portable build still uses the CPU's widest vectors. The AVX2 version is
// x86-64-v3 (AVX2, FMA and their peers): GCC's plain "avx2" target has no
// fused multiply-add, and a product then takes a multiply and an add. Off
// under AddressSanitizer and other compilers (one baseline version).
//
// ATTNLAB_CLONES: GCC's target_clones, the same source compiled for each
//   set and resolved when the program loads.
// ATTNLAB_VERSIONS(NAME, CALL, PARAMS, ARGS): defines `static void NAME
//   PARAMS`, whose versions run `CALL ARGS` with `bytes`, a constant, the
//   width of that set's vector registers (64, 32, 16), so that code written
//   with GCC's vector extension gets vectors that fit its registers (wider
//   ones compute the same, but GCC takes minutes to split them). CALL is in
//   parentheses when it has a comma.
#pragma once

#include <atomic>

namespace attnlab::detail {
// Bytes of T in GCC's vector extension, each version of a kernel its CPU's
// register width: 64 for AVX-512, 32 for AVX2, 16 for the baseline. A wider
// vector than the registers would still be right, but GCC takes minutes to
// split it into registers (two thirds of the library's compile time when
// every version of small_gemm used 64 bytes).
template <class T, int Bytes>
struct simd {
    using type [[gnu::vector_size(Bytes)]] = T;
    static constexpr int lanes = Bytes / static_cast<int>(sizeof(T));
};
}  // namespace attnlab::detail

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ATTNLAB_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))

namespace attnlab::detail {
// The widest vector registers of this CPU in bytes, by the test GCC's
// target_clones uses.
inline int cpu_vector_bytes() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 64;
    if (__builtin_cpu_supports("x86-64-v3")) return 32;
    return 16;
}
// The version ATTNLAB_VERSIONS runs: the CPU's widest, or a narrower one a
// test asked for (use_vector_bytes, small_gemm.hpp).
inline std::atomic<int> requested_vector_bytes{0};
inline int vector_bytes_in_use() {
    static const int widest = cpu_vector_bytes();
    const int requested = requested_vector_bytes.load(std::memory_order_relaxed);
    return requested > 0 && requested < widest ? requested : widest;
}
}  // namespace attnlab::detail

#define ATTNLAB_VERSIONS(NAME, CALL, PARAMS, ARGS)                     \
    [[gnu::target("avx512f")]] static void NAME##_avx512f PARAMS {     \
        constexpr int bytes = 64;                                      \
        CALL ARGS;                                                     \
    }                                                                  \
    [[gnu::target("arch=x86-64-v3")]] static void NAME##_avx2 PARAMS { \
        constexpr int bytes = 32;                                      \
        CALL ARGS;                                                     \
    }                                                                  \
    static void NAME##_baseline PARAMS {                               \
        constexpr int bytes = 16;                                      \
        CALL ARGS;                                                     \
    }                                                                  \
    static void NAME PARAMS {                                          \
        const int bytes = detail::vector_bytes_in_use();               \
        if (bytes == 64)                                               \
            NAME##_avx512f ARGS;                                       \
        else if (bytes == 32)                                          \
            NAME##_avx2 ARGS;                                          \
        else                                                           \
            NAME##_baseline ARGS;                                      \
    }
#else
#define ATTNLAB_CLONES
namespace attnlab::detail {
inline std::atomic<int> requested_vector_bytes{0};
inline int vector_bytes_in_use() { return 16; }
}  // namespace attnlab::detail
#define ATTNLAB_VERSIONS(NAME, CALL, PARAMS, ARGS) \
    static void NAME PARAMS {                      \
        constexpr int bytes = 16;                  \
        CALL ARGS;                                 \
    }
#endif
