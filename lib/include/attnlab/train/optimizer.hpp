// AdamW, the learning-rate schedule and gradient clipping of docs/model.md.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "attnlab/model/params.hpp"
#include "attnlab/config/run_config.hpp"

namespace attnlab {

// lr at step s = 1..steps: lr * s / warmup for s <= warmup, then cosine from
// lr down to min_lr at the last step (or constant lr).
double learning_rate(const train_config& cfg, int step);

// Scales grads so that their global L2 norm is at most max_norm (0: no clip).
// Returns the norm before clipping (non-finite if any gradient is).
template <class T>
double clip_grad_norm(std::vector<T>& grads, double max_norm);
// The partial sums clip_grad_norm allocates for n gradients (doubles): one
// per fixed chunk, so that the norm does not depend on the thread count.
std::size_t clip_grad_norm_partials(std::size_t n);

// AdamW (Loshchilov & Hutter): betas (0.9, 0.95), eps 1e-8, decoupled
// weight decay on the tensors whose layout entry has decay = true.
template <class T>
class adamw {
public:
    adamw(const param_layout& layout, double weight_decay);
    void step(std::vector<T>& params, const std::vector<T>& grads, double lr);
    long steps_taken() const { return t_; }
    // The moments and step count, to save and restore a run mid-training
    // (train_state): restore() takes buffers of the layout's size.
    const std::vector<T>& first_moment() const { return m_; }
    const std::vector<T>& second_moment() const { return v_; }
    void restore(std::vector<T> m, std::vector<T> v, long t) {
        m_ = std::move(m);
        v_ = std::move(v);
        t_ = t;
    }

    static constexpr double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;

private:
    const param_layout& layout_;
    double weight_decay_;
    std::vector<T> m_, v_;  // first and second moments, same layout as params
    struct chunk {
        std::size_t offset, size;
        bool decay;
    };
    std::vector<chunk> chunks_;  // the parameters in pieces of one tensor each
    long t_ = 0;
};

}  // namespace attnlab
