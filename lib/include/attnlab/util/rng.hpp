// Deterministic random numbers, identical on every platform and compiler:
// splitmix64 for seeding, xoshiro256** for streams, and our own uniform
// integer / uniform real / normal draws (the std:: distributions are
// implementation-defined and would change data and inits between systems).
#pragma once
#include <cmath>
#include <cstdint>

namespace attnlab {

// splitmix64 step: used to expand one seed into independent stream states.
inline std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Mix a seed with a stream tag so that different purposes (train data,
// test data, init) of the same run seed draw disjoint streams.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ULL ^ (stream + 0x632BE59BD9B4E019ULL);
    splitmix64(s);
    return splitmix64(s);
}

class rng {
public:
    explicit rng(std::uint64_t seed = 0) { reseed(seed); }

    void reseed(std::uint64_t seed) {
        std::uint64_t sm = seed;
        for (auto& w : s_) w = splitmix64(sm);
    }

    std::uint64_t next_u64() {  // xoshiro256**
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, n), unbiased (rejection sampling). n must be > 0.
    std::uint64_t uniform_index(std::uint64_t n) {
        const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
        std::uint64_t x;
        do {
            x = next_u64();
        } while (x >= limit);
        return x % n;
    }

    // Uniform integer in [lo, hi] (inclusive).
    long uniform_int(long lo, long hi) {
        return lo + static_cast<long>(uniform_index(static_cast<std::uint64_t>(hi - lo + 1)));
    }

    // Uniform double in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

    // Standard normal (Box-Muller, both values used).
    double normal() {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        double u1;
        do {
            u1 = uniform();
        } while (u1 <= 0.0);
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double a = 6.283185307179586476925 * u2;
        spare_ = r * std::sin(a);
        has_spare_ = true;
        return r * std::cos(a);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4]{};
    double spare_ = 0.0;
    bool has_spare_ = false;
};

}  // namespace attnlab
