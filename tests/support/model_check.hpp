// Whole-model gradient check on a micro model.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "attnlab/model/transformer.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/rng.hpp"
#include "gradcheck.hpp"
#include "variant_cases.hpp"

namespace attnlab::test {

// Relative error of the analytic gradient of a micro model (V = 7, B = 2,
// T = 5) against central differences over every parameter: the larger of
// forward() + backward()'s and forward_backward()'s.
// Signed kernels (weight_sign::any in the variant table: linear, cosine, odd
// Taylor orders) can put a softmax sum z_t near 0, where u_t / z_t is so
// ill-conditioned that no finite difference is accurate; the check then
// takes the first parameter draw whose sums all satisfy |z_t| >= 0.05 (the
// first draw for the other variants: non-negative kernels only reach z_t = 0
// together with u_t = 0, except score kernels without a constant term, whose
// weights vanish at s = 0 alone: they are conditioned like signed ones).
// every_row: every position has a target (language modelling), the head's
// path without the answer-row copies.
inline double whole_model_gradient_error(const model_config& m, const attention_config& a, bool every_row = false) {
    const int V = 7, B = 2, T = 5;
    const std::vector<std::int32_t> tokens = {1, 3, 0, 6, 2, 5, 5, 1, 4, 0};
    const std::vector<std::int32_t> targets =
        every_row ? std::vector<std::int32_t>{3, 2, 5, 4, 6, 0, 1, 3, 3, 1}
                  : std::vector<std::int32_t>{no_target, 2, no_target, 4, 6, 0, no_target, 3, 3, 1};
    transformer<double> model(m, a, V, T);
    const bool signed_kernel = signed_weights(a) || vanishing_score_weights(a);
    bool conditioned = false;
    for (std::uint64_t draw = 0; draw < 100 && !conditioned; ++draw) {
        model.init_params(42 + draw);
        // Larger than the training init so that every nonlinearity is exercised.
        rng r(5 + draw);
        for (auto& w : model.params) w += 0.3 * r.normal();
        model.forward(tokens.data(), targets.data(), B, T);
        conditioned = !signed_kernel || model.min_abs_denominator() >= 0.05;
    }
    REQUIRE(conditioned);

    model.zero_grad();
    model.forward(tokens.data(), targets.data(), B, T);
    model.backward();
    const std::vector<double> analytic = model.grads;
    model.zero_grad();
    model.forward_backward(tokens.data(), targets.data(), B, T);  // the training step's path
    const std::vector<double> analytic_step = model.grads;
    const std::vector<double> numeric =
        numeric_gradient(model.params, [&] { return model.forward(tokens.data(), targets.data(), B, T); });
    REQUIRE(norm(numeric) > 0);
    return std::max(relative_error(analytic, numeric), relative_error(analytic_step, numeric));
}

// A model of `layers` blocks of width d_model with 2 heads.
inline model_config small_model(int layers, int d_model, mlp_kind mlp = mlp_kind::swiglu,
                                position_kind pos = position_kind::rope) {
    model_config m;
    m.layers = layers;
    m.d_model = d_model;
    m.heads = 2;
    m.mlp = mlp;
    m.position = pos;
    return m;
}

// The micro model of the gradient checks: 2 blocks of width 8.
inline model_config micro_model(mlp_kind mlp = mlp_kind::swiglu, position_kind pos = position_kind::rope) {
    return small_model(2, 8, mlp, pos);
}

// Random tokens of a vocabulary of V, (B, T); targets at rows n % every == 1 and the first 3.
inline void random_batch(std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets, int V, int B, int T,
                         std::uint64_t seed, int every) {
    rng r(seed);
    tokens.assign(static_cast<std::size_t>(B) * T, 0);
    targets.assign(static_cast<std::size_t>(B) * T, no_target);
    for (auto& t : tokens) t = static_cast<std::int32_t>(r.uniform_int(0, V - 1));
    for (int n = 0; n < B * T; ++n)
        if (n % every == 1 || n < 3) targets[n] = static_cast<std::int32_t>(r.uniform_int(0, V - 1));
}
}  // namespace attnlab::test
