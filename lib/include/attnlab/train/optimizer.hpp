// AdamW, the learning-rate schedule and gradient clipping of SPEC §3.
#pragma once
#include <vector>

#include "attnlab/model/params.hpp"
#include "attnlab/spec/run_config.hpp"

namespace attnlab {

// lr at step s = 1..steps: lr * s / warmup for s <= warmup, then cosine from
// lr down to min_lr at the last step (or constant lr).
double learning_rate(const train_config& cfg, int step);

// Scales grads so that their global L2 norm is at most max_norm (0: no clip).
// Returns the norm before clipping (non-finite if any gradient is).
template <class T>
double clip_grad_norm(std::vector<T>& grads, double max_norm);

// AdamW (Loshchilov & Hutter): betas (0.9, 0.95), eps 1e-8, decoupled
// weight decay on the tensors whose layout entry has decay = true.
template <class T>
class adamw {
public:
    adamw(const param_layout& layout, double weight_decay);
    void step(std::vector<T>& params, const std::vector<T>& grads, double lr);
    long steps_taken() const { return t_; }

    static constexpr double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;

private:
    const param_layout& layout_;
    double weight_decay_;
    std::vector<T> m_, v_;  // first and second moments, same layout as params
    long t_ = 0;
};

}  // namespace attnlab
