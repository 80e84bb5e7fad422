// Central-difference gradient checking in double precision: relative error ||g - g_num|| / ||g + g_num||.
#pragma once
#include <cmath>
#include <functional>
#include <vector>

#include <catch2/catch.hpp>

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

// d f / d x by the fourth-order central difference
//   (8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / 12h,
// perturbing x in place and restoring it. Its O(h^4) truncation error keeps
// the check sharp where the loss curves strongly (signed kernels whose
// softmax sum is small), at twice the cost of the two-point stencil.
inline std::vector<double> numeric_gradient(std::vector<double>& x, const std::function<double()>& f, double h = 1e-4) {
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        auto at = [&](double d) {
            x[i] = keep + d;
            return f();
        };
        const double d1 = at(h) - at(-h), d2 = at(2 * h) - at(-2 * h);
        x[i] = keep;
        g[i] = (8 * d1 - d2) / (12 * h);
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

using vec = std::vector<double>;

// Checks one op. `forward` computes out from the current inputs; `backward`
// accumulates gradients of sum(out * R) into grads (one per input, same order).
struct op_check {
    std::vector<vec*> inputs;
    std::function<void(vec& out)> forward;
    std::function<void(std::vector<vec>& grads, const vec& dout)> backward;
    size_t out_size;

    void run(std::uint64_t seed = 1) {
        rng r(seed);
        const vec R = random_vector(out_size, r);
        vec out(out_size);
        auto loss = [&] {
            forward(out);
            return dot(out, R);
        };
        std::vector<vec> grads;
        for (auto* x : inputs) grads.emplace_back(x->size(), 0.0);
        forward(out);
        backward(grads, R);
        for (size_t i = 0; i < inputs.size(); ++i) {
            const vec num = numeric_gradient(*inputs[i], loss);
            INFO("input " << i);
            REQUIRE(norm(num) > 0);  // the check must exercise something
            CHECK(relative_error(grads[i], num) <= gradcheck_bound);
        }
        // Accumulate contract: a second call adds the same gradient again.
        std::vector<vec> twice = grads;
        forward(out);  // restore the caches the numeric gradient overwrote
        backward(twice, R);
        for (size_t i = 0; i < inputs.size(); ++i) {
            vec doubled = grads[i];
            for (auto& g : doubled) g *= 2;
            CHECK(relative_error(twice[i], doubled) <= 1e-14);
        }
    }
};

}  // namespace attnlab::test
