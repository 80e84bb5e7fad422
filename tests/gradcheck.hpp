// Central-difference gradient checking in double precision (STYLE.md,
// "Tests" 1 and 3): relative error ||g - g_num|| / ||g + g_num||.
#pragma once
#include <cmath>
#include <functional>
#include <vector>

#include "attnlab/util/rng.hpp"

namespace attnlab::test {

inline constexpr double gradcheck_bound = 1e-6;

inline double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += (a[i] + b[i]) * (a[i] + b[i]);
    }
    if (den == 0) return 0;  // both exactly zero
    return std::sqrt(num) / std::sqrt(den);
}

// d f / d x by central differences, perturbing x in place and restoring it.
inline std::vector<double> numeric_gradient(std::vector<double>& x, const std::function<double()>& f,
                                            double h = 1e-5) {
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = f();
        x[i] = keep - h;
        const double down = f();
        x[i] = keep;
        g[i] = (up - down) / (2 * h);
    }
    return g;
}

inline std::vector<double> random_vector(size_t n, rng& r, double scale = 1.0) {
    std::vector<double> v(n);
    for (auto& x : v) x = scale * r.normal();
    return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

inline double norm(const std::vector<double>& a) { return std::sqrt(dot(a, a)); }

}  // namespace attnlab::test
