// AdamW, schedule and clipping (docs/model.md, "Training").
#include "attnlab/train/optimizer.hpp"

#include <algorithm>
#include <cmath>

namespace attnlab {

double learning_rate(const train_config& cfg, int step) {
    if (cfg.warmup > 0 && step <= cfg.warmup) return cfg.lr * step / cfg.warmup;
    if (cfg.schedule == schedule_kind::constant) return cfg.lr;
    const int decay_steps = cfg.steps - cfg.warmup;
    if (decay_steps <= 0) return cfg.lr;
    const double progress = static_cast<double>(step - cfg.warmup) / decay_steps;  // (0, 1]
    constexpr double pi = 3.14159265358979323846;
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + std::cos(pi * progress));
}

namespace {
// Elementwise loops go parallel above this size. The norm sums fixed chunks
// and then the chunk sums in order, so it does not depend on the threads.
constexpr long optimizer_parallel_threshold = 1L << 15;
constexpr long norm_chunk = 1L << 12;
}  // namespace

std::size_t clip_grad_norm_partials(std::size_t n) {
    const auto chunk = static_cast<std::size_t>(norm_chunk);
    return (n + chunk - 1) / chunk;
}

template <class T>
double clip_grad_norm(std::vector<T>& grads, double max_norm) {
    const long n = static_cast<long>(grads.size());
    const long chunks = static_cast<long>(clip_grad_norm_partials(grads.size()));
    std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static) if (n > optimizer_parallel_threshold)
    for (long c = 0; c < chunks; ++c) {
        double ss = 0;
        for (long i = c * norm_chunk; i < std::min(n, (c + 1) * norm_chunk); ++i)
            ss += static_cast<double>(grads[i]) * grads[i];
        partial[c] = ss;
    }
    double ss = 0;
    for (double p : partial) ss += p;
    const double norm = std::sqrt(ss);
    if (max_norm > 0 && std::isfinite(norm) && norm > max_norm) {
        const T scale = static_cast<T>(max_norm / norm);
#pragma omp parallel for schedule(static) if (n > optimizer_parallel_threshold)
        for (long i = 0; i < n; ++i) grads[i] *= scale;
    }
    return norm;
}

template <class T>
adamw<T>::adamw(const param_layout& layout, double weight_decay)
    : layout_(layout), weight_decay_(weight_decay), m_(layout.total(), T(0)), v_(layout.total(), T(0)) {
    // Work items of at most update_chunk elements, each inside one tensor, so
    // that a step is one parallel loop (not one per tensor).
    constexpr std::size_t update_chunk = 1 << 14;
    for (const auto& t : layout_.tensors())
        for (std::size_t b = 0; b < t.size; b += update_chunk)
            chunks_.push_back({t.offset + b, std::min(t.size - b, update_chunk), t.decay});
}

template <class T>
void adamw<T>::step(std::vector<T>& params, const std::vector<T>& grads, double lr) {
    ++t_;
    const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(t_));
    const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(t_));
    const T b1 = T(beta1), b2 = T(beta2);
    const T step_size = static_cast<T>(lr / bc1), inv_sqrt_bc2 = static_cast<T>(1.0 / std::sqrt(bc2));
    const T wd = static_cast<T>(lr * weight_decay_);
    const long n_chunks = static_cast<long>(chunks_.size());
#pragma omp parallel for schedule(static) if (static_cast <long>(params.size()) > optimizer_parallel_threshold)
    for (long c = 0; c < n_chunks; ++c) {
        const chunk& ch = chunks_[c];
        const T decay = ch.decay ? wd : T(0);
        // Distinct buffers: restrict lets the loop vectorise without overlap checks.
        T* __restrict p = params.data() + ch.offset;
        const T* __restrict g = grads.data() + ch.offset;
        T* __restrict m = m_.data() + ch.offset;
        T* __restrict v = v_.data() + ch.offset;
        for (std::size_t i = 0; i < ch.size; ++i) {
            m[i] = b1 * m[i] + (T(1) - b1) * g[i];
            v[i] = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
            // p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)
            p[i] -= decay * p[i];
            p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + T(eps));
        }
    }
}

template double clip_grad_norm<float>(std::vector<float>&, double);
template double clip_grad_norm<double>(std::vector<double>&, double);
template class adamw<float>;
template class adamw<double>;

}  // namespace attnlab
