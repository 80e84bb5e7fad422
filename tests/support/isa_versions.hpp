// Runs a test body once per version of attnlab's vector kernels this CPU has
// (vectors of 64, 32 and 16 bytes: AVX-512, AVX2, baseline), then restores
// the widest (use_vector_bytes, small_gemm.hpp).
#pragma once
#include <catch2/catch.hpp>

#include "attnlab/ops/small_gemm.hpp"

namespace attnlab::test {

template <class F>
void for_each_version(F body) {
    for (int bytes : {64, 32, 16}) {
        if (use_vector_bytes(bytes) != bytes) continue;  // not on this CPU
        INFO("version with vectors of " << bytes << " bytes");
        body();
    }
    use_vector_bytes(0);
}

}  // namespace attnlab::test
