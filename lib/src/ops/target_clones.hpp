// ATTNLAB_CLONES: compile a function for AVX-512, AVX2 and the baseline
// (GCC target_clones), picked when the program loads, so that the portable
// build still runs the hot loops with the CPU's widest vectors. Off under
// AddressSanitizer and other compilers (one baseline version).
#pragma once

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ATTNLAB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTNLAB_CLONES
#endif
