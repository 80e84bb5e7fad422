// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: what `sha256sum`
// prints. Used to record and check the file a text task reads (docs/tasks.md).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace attnlab {

std::string sha256_hex(const std::string& bytes);

// The same over bytes given piece by piece (a file read in pieces).
class sha256_hasher {
public:
    sha256_hasher();
    void update(const char* bytes, std::size_t n);
    std::string hex() const;  // of everything given so far

private:
    std::array<std::uint32_t, 8> h_;
    std::array<unsigned char, 64> block_{};  // a block not yet complete
    std::size_t pending_ = 0;                // its bytes
    std::uint64_t total_ = 0;
};

}  // namespace attnlab
