// SHA-256 as specified in FIPS 180-4, section 6.2: 64-byte blocks, the
// message padded with 0x80, zeros and its length in bits (big-endian).
#include "attnlab/io/sha256.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>

namespace attnlab {

namespace {

constexpr std::array<std::uint32_t, 64> round_constants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(std::array<std::uint32_t, 8>& h, const unsigned char* block) {
    std::uint32_t w[64];
    for (int t = 0; t < 16; ++t)
        w[t] = std::uint32_t(block[4 * t]) << 24 | std::uint32_t(block[4 * t + 1]) << 16 |
               std::uint32_t(block[4 * t + 2]) << 8 | std::uint32_t(block[4 * t + 3]);
    for (int t = 16; t < 64; ++t) {
        const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; ++t) {
        const std::uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                                 round_constants[static_cast<std::size_t>(t)] + w[t];
        const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    const std::uint32_t out[8] = {a, b, c, d, e, f, g, k};
    for (int i = 0; i < 8; ++i) h[static_cast<std::size_t>(i)] += out[i];
}

}  // namespace

sha256_hasher::sha256_hasher()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void sha256_hasher::update(const char* bytes, std::size_t n) {
    const auto* data = reinterpret_cast<const unsigned char*>(bytes);
    total_ += n;
    std::size_t at = 0;
    if (pending_ > 0) {  // complete the block begun by an earlier piece
        const std::size_t take = std::min(n, block_.size() - pending_);
        std::copy_n(data, take, block_.begin() + static_cast<std::ptrdiff_t>(pending_));
        pending_ += take;
        at = take;
        if (pending_ < block_.size()) return;
        compress(h_, block_.data());
        pending_ = 0;
    }
    for (; at + 64 <= n; at += 64) compress(h_, data + at);
    std::copy_n(data + at, n - at, block_.begin());
    pending_ = n - at;
}

std::string sha256_hasher::hex() const {
    std::array<std::uint32_t, 8> h = h_;
    // The tail, 0x80, zeros, and the length in bits: one or two blocks.
    unsigned char tail[128] = {};
    const std::size_t rest = pending_;
    for (std::size_t i = 0; i < rest; ++i) tail[i] = block_[i];
    tail[rest] = 0x80;
    const std::size_t blocks = rest + 1 + 8 <= 64 ? 1 : 2;
    const std::uint64_t bits = static_cast<std::uint64_t>(total_) * 8;
    for (int i = 0; i < 8; ++i)
        tail[blocks * 64 - 1 - static_cast<std::size_t>(i)] = static_cast<unsigned char>(bits >> (8 * i));
    for (std::size_t b = 0; b < blocks; ++b) compress(h, tail + 64 * b);
    std::string hex;
    char buf[9];
    for (std::uint32_t word : h) {
        std::snprintf(buf, sizeof buf, "%08x", word);
        hex += buf;
    }
    return hex;
}

std::string sha256_hex(const std::string& bytes) {
    sha256_hasher s;
    s.update(bytes.data(), bytes.size());
    return s.hex();
}

}  // namespace attnlab
