// Score kernels and denominators of SPEC §2 (this slice: exp numerator,
// softmax denominator; the others arrive with the variants issue).
#include "attnlab/attention/variants.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnlab/util/error.hpp"

namespace attnlab {

namespace {

// exp(s). With a scale-invariant denominator the row max is subtracted
// first: exp(s - m) / sum exp(s - m) equals the unshifted ratio exactly, and
// the shift keeps exp finite. m is a constant for the derivative, which is
// exact because the output does not depend on m.
template <class T>
class exp_kernel final : public score_kernel<T> {
public:
    explicit exp_kernel(bool subtract_row_max) : subtract_row_max_(subtract_row_max) {}
    void forward_row(T* w, const T* s, int n) const override {
        T m = 0;
        if (subtract_row_max_) m = *std::max_element(s, s + n);
        for (int j = 0; j < n; ++j) w[j] = std::exp(s[j] - m);
    }
    // d exp(s - m) / ds = exp(s - m) = w
    void backward_row(T* ds, const T* dw, const T*, const T* w, int n) const override {
        for (int j = 0; j < n; ++j) ds[j] = dw[j] * w[j];
    }

private:
    bool subtract_row_max_;
};

// o = u / z. do/du = 1/z; dL/dz = -(dout . u) / z^2.
// detach_denominator: z is a constant in the backward pass (dL/dz = 0).
template <class T>
class softmax_denominator final : public denominator<T> {
public:
    explicit softmax_denominator(bool detach) : detach_(detach) {}
    void forward_row(T* o, const T* u, T z, int HS) const override {
        const T inv = T(1) / z;
        for (int i = 0; i < HS; ++i) o[i] = u[i] * inv;
    }
    T backward_row(T* du, const T* dout, const T* u, T z, int HS) const override {
        const T inv = T(1) / z;
        T dot = 0;
        for (int i = 0; i < HS; ++i) {
            du[i] = dout[i] * inv;
            dot += dout[i] * u[i];
        }
        return detach_ ? T(0) : -dot * inv * inv;
    }

private:
    bool detach_;
};

bool is_scale_invariant(denominator_kind d) {
    return d == denominator_kind::softmax || d == denominator_kind::norm ||
           d == denominator_kind::rmsnorm || d == denominator_kind::layernorm;
}

}  // namespace

void check_attention_supported(const attention_config& cfg) {
    if (cfg.numerator != numerator_kind::exp)
        throw config_error(std::string("attention.numerator: '") + to_string(cfg.numerator) +
                           "' is not implemented yet (this build has: exp)");
    if (cfg.denominator != denominator_kind::softmax)
        throw config_error(std::string("attention.denominator: '") + to_string(cfg.denominator) +
                           "' is not implemented yet (this build has: softmax)");
    if (cfg.clamp || cfg.in_gate || cfg.out_gate)
        throw config_error("attention: clamp, in_gate and out_gate are not implemented yet");
}

template <class T>
std::unique_ptr<score_kernel<T>> make_score_kernel(const attention_config& cfg) {
    check_attention_supported(cfg);
    return std::make_unique<exp_kernel<T>>(is_scale_invariant(cfg.denominator));
}

template <class T>
std::unique_ptr<denominator<T>> make_denominator(const attention_config& cfg) {
    check_attention_supported(cfg);
    return std::make_unique<softmax_denominator<T>>(cfg.detach_denominator);
}

template std::unique_ptr<score_kernel<float>> make_score_kernel<float>(const attention_config&);
template std::unique_ptr<score_kernel<double>> make_score_kernel<double>(const attention_config&);
template std::unique_ptr<denominator<float>> make_denominator<float>(const attention_config&);
template std::unique_ptr<denominator<double>> make_denominator<double>(const attention_config&);

}  // namespace attnlab
