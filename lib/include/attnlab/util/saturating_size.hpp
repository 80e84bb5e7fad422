// Sizes that saturate instead of wrapping around. A memory estimate computed
// with plain size_t arithmetic wraps for a huge configuration (d_model 2^24
// and 64 layers) and can come out small enough to pass a memory guard; with
// these, every sum and product that does not fit in 64 bits is the largest
// size_t, which no memory limit reaches, so such a run is always refused.
#pragma once
#include <cstddef>
#include <limits>

namespace attnlab {

inline constexpr std::size_t size_saturated = std::numeric_limits<std::size_t>::max();

constexpr std::size_t add_saturating(std::size_t a, std::size_t b) {
    return a > size_saturated - b ? size_saturated : a + b;
}
constexpr std::size_t mul_saturating(std::size_t a, std::size_t b) {
    return b != 0 && a > size_saturated / b ? size_saturated : a * b;
}

// A size_t whose +, * (and -, / on values that are not saturated) saturate
// at size_saturated; made from any size, read with value().
class saturating_size {
public:
    constexpr saturating_size(std::size_t v = 0) : v_(v) {}  // NOLINT: implicit, for sizes written as numbers
    constexpr std::size_t value() const { return v_; }
    constexpr bool saturated() const { return v_ == size_saturated; }

    friend constexpr saturating_size operator+(saturating_size a, saturating_size b) {
        return add_saturating(a.v_, b.v_);
    }
    friend constexpr saturating_size operator*(saturating_size a, saturating_size b) {
        return mul_saturating(a.v_, b.v_);
    }
    // A saturated size stays saturated: it stands for "more than 64 bits hold".
    friend constexpr saturating_size operator-(saturating_size a, saturating_size b) {
        return a.saturated() ? a : saturating_size(a.v_ - b.v_);
    }
    friend constexpr saturating_size operator/(saturating_size a, saturating_size b) {
        return a.saturated() ? a : saturating_size(a.v_ / b.v_);
    }
    constexpr saturating_size& operator+=(saturating_size b) { return *this = *this + b; }
    friend constexpr bool operator<(saturating_size a, saturating_size b) { return a.v_ < b.v_; }
    friend constexpr bool operator==(saturating_size a, saturating_size b) { return a.v_ == b.v_; }

private:
    std::size_t v_;
};

}  // namespace attnlab
