// The median of timings (the benchmarks report medians of rounds): the
// middle value, or the mean of the two middle ones; 0 for none.
#pragma once
#include <algorithm>
#include <vector>

namespace attnlab {

inline double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace attnlab
