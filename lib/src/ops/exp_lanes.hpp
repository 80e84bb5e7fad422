// exp(x) for floats in the lanes of one GCC vector (Cephes expf): x = n ln2
// + r, |r| <= ln2/2, a degree-5 polynomial for exp(r), then the exponent
// bits of 2^n. Shared by vector_math's row kernels (8 lanes) and the fused
// attention kernels (their CPU's register width): each lane computes the
// same operations whatever the vector's width, so the two give the same
// bits for the same input in the same instruction set.
#pragma once

#include <cstdint>
#include <cstring>

namespace attnlab::detail {

// V: a GCC vector of floats; I: the int32 vector of as many lanes. Vectors
// pass by value only into always-inlined callers (GCC warns of the ABI anyway).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V, class I>
[[gnu::always_inline]] inline V exp_lanes(V x) {
    const V lo = V{} - 87.3365f, hi = V{} + 88.3f;
    x = x < lo ? lo : x;  // exp stays a normal float
    x = x > hi ? hi : x;  // n <= 127: 2^n stays finite (exp(88.3) = 2.2e38)
    // n = round(x / ln2) in [-126, 128]: truncating the positive x/ln2 + 128.5
    // floors it. A NaN x passes the clamps; n comes from 0 then and r keeps the NaN.
    const V xn = x == x ? x : V{};
    const I ni = __builtin_convertvector(xn * 1.44269504088896341f + 128.5f, I) - 128;
    const V n = __builtin_convertvector(ni, V);
    const V r = x - n * 0.693359375f + n * 2.12194440e-4f;  // ln2 in two parts
    V p = V{} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const V y = p * r * r + r + 1.0f;
    const I bits = (ni + 127) << 23;  // 2^n
    V scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}
#pragma GCC diagnostic pop

}  // namespace attnlab::detail
