// Score kernels, feature maps and denominators (variant_table.hpp), each with its
// derivative (derivations beside each backward).
#include "attnlab/attention/variants.hpp"

#include "attnlab/ops/vector_math.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace attnlab {

namespace {

// ---- score kernels: w = f(s) ----

// exp(s). With a scale-invariant denominator the row max m is subtracted
// first (exp(s - m) stays finite). The backward is exact for the shifted
// function, including m's dependence on the argmax score:
//   dL/ds_j = dw_j w_j,  and dL/ds_argmax -= sum_j dw_j w_j
// (the last term vanishes for softmax and is of order eps for the norms).
// With a detached denominator m is a constant like z, so that the gradient
// is that of the unshifted u_t / sg(z_t).
template <class T>
class exp_kernel final : public score_kernel<T> {
public:
    exp_kernel(bool subtract_row_max, bool max_is_constant)
        : subtract_row_max_(subtract_row_max), max_is_constant_(max_is_constant) {}
    void forward_row(T* w, const T* s, int n) const override {
        const T m = subtract_row_max_ ? max_of(s, n) : T(0);
        exp_shifted(w, s, n, m);
    }
    // exp over n rounded up to 16 (within the width): the rows of a causal
    // block are short, and the vector loop then has no scalar tail. The extra
    // masked entries are overwritten (finite in float, where exp_shifted
    // clamps; a double overflow to inf is overwritten too).
    void forward_row_padded(T* w, const T* s, int n, int width) const override {
        const T m = subtract_row_max_ ? max_of(s, n) : T(0);
        const int len = std::min(width, (n + 15) / 16 * 16);
        exp_shifted(w, s, len, m);
        std::fill(w + n, w + width, T(0));
    }
    void backward_row(T* ds, const T* dw, const T* s, const T* w, int n) const override {
        T through_max = 0;
        for (int j = 0; j < n; ++j) {
            ds[j] = dw[j] * w[j];
            through_max += ds[j];
        }
        if (subtract_row_max_ && !max_is_constant_) ds[first_index_of_max(s, n)] -= through_max;
    }
    // ds_j = w_j (dw_j + dz) over n rounded up to 16 (w is 0 past n, so the
    // extra terms are 0), summed in vector lanes for the row max's term.
    void backward_row_padded(T* ds, T* dw, T dz, const T* s, const T* w, int n, int width) const override {
        const int len = std::min(width, (n + 15) / 16 * 16);
        const T through_max = scaled_sum(ds, dw, dz, w, len);
        std::fill(ds + n, ds + width, T(0));
        if (subtract_row_max_ && !max_is_constant_) ds[first_index_of_max(s, n)] -= through_max;
    }

private:
    bool subtract_row_max_, max_is_constant_;
};

// ds (n) = dw f'(s) for a polynomial kernel, f' written chunk by chunk into
// a stack buffer by derivative(p, s, len) (ds may alias dw).
template <class T, class Derivative>
void times_derivative(T* ds, const T* dw, const T* s, int n, Derivative derivative) {
    constexpr int chunk = 256;
    T p[chunk];
    for (int j0 = 0; j0 < n; j0 += chunk) {
        const int len = std::min(chunk, n - j0);
        derivative(p, s + j0, len);
        for (int j = 0; j < len; ++j) ds[j0 + j] = dw[j0 + j] * p[j];
    }
}

// w (n) = sum_{m=0..order} s^m / m! by Horner's rule, 1 + s(1 + s/2(1 + ... (1 + s/order))),
// one pass over the row per order (the inner loop vectorises).
template <class T>
void taylor_exp_row(T* w, const T* s, int n, int order) {
    std::fill(w, w + n, T(1));
    for (int m = order; m >= 1; --m) {
        const T inv_m = T(1) / T(m);
        for (int j = 0; j < n; ++j) w[j] = T(1) + w[j] * s[j] * inv_m;
    }
}

// Taylor polynomial of exp of order n; its derivative is the polynomial of order n-1.
template <class T>
class taylor_kernel final : public score_kernel<T> {
public:
    explicit taylor_kernel(int order) : order_(order) {}
    void forward_row(T* w, const T* s, int n) const override { taylor_exp_row(w, s, n, order_); }
    void backward_row(T* ds, const T* dw, const T* s, const T*, int n) const override {
        times_derivative(ds, dw, s, n, [&](T* p, const T* sj, int len) { taylor_exp_row(p, sj, len, order_ - 1); });
    }

private:
    int order_;
};

// w (n) = s^order / order! as the product of the factors s / m, m = 1..order,
// one pass over the row per factor: no factor overflows where s^order or
// order! alone would (order 170 at s = 100 is about 1e33).
template <class T>
void power_term_row(T* w, const T* s, int n, int order) {
    std::fill(w, w + n, T(1));
    for (int m = 1; m <= order; ++m) {
        const T inv_m = T(1) / T(m);
        for (int j = 0; j < n; ++j) w[j] *= s[j] * inv_m;
    }
}

// The order-n Taylor term alone, w = s^n / n! (n = 2: "squared q.k");
// dw/ds = s^(n-1) / (n-1)!, the term of order n-1.
template <class T>
class power_kernel final : public score_kernel<T> {
public:
    explicit power_kernel(int order) : order_(order) {}
    void forward_row(T* w, const T* s, int n) const override { power_term_row(w, s, n, order_); }
    void backward_row(T* ds, const T* dw, const T* s, const T*, int n) const override {
        times_derivative(ds, dw, s, n, [&](T* p, const T* sj, int len) { power_term_row(p, sj, len, order_ - 1); });
    }

private:
    int order_;
};

// w (n) = sum_k c_k s^p_k / p_k! over a series of increasing powers
// (config/variant_list.hpp), by Horner's rule over the gaps between powers:
//   w = r_0 (c_0 + r_1 (c_1 + ... + r_K c_K)),  r_k = prod_{m = p_(k-1)+1 .. p_k} s / m  (p_(-1) = 0),
// one pass over the row per factor s / m, as taylor_exp_row and power_term_row.
template <class T>
void series_row(T* w, const T* s, int n, const series_terms& terms) {
    std::fill(w, w + n, T(0));
    for (std::size_t k = terms.size(); k-- > 0;) {
        const T c = static_cast<T>(terms[k].coefficient);
        for (int j = 0; j < n; ++j) w[j] += c;
        for (int m = terms[k].power, lower = k == 0 ? 0 : terms[k - 1].power; m > lower; --m) {
            const T inv_m = T(1) / T(m);
            for (int j = 0; j < n; ++j) w[j] *= s[j] * inv_m;
        }
    }
}

// d/ds of c s^p / p! is c s^(p-1) / (p-1)!: the series shifted down by one power.
series_terms derivative_of(const series_terms& terms) {
    series_terms d;
    for (const series_term& t : terms)
        if (t.power >= 1) d.push_back({t.power - 1, t.coefficient});
    return d;
}

// Any row's series of terms (a polynomial numerator without a kernel of its
// own); taylor and power keep theirs, which the tests hold to their series.
template <class T>
class series_kernel final : public score_kernel<T> {
public:
    explicit series_kernel(series_terms terms) : terms_(std::move(terms)), derivative_(derivative_of(terms_)) {}
    void forward_row(T* w, const T* s, int n) const override { series_row(w, s, n, terms_); }
    void backward_row(T* ds, const T* dw, const T* s, const T*, int n) const override {
        times_derivative(ds, dw, s, n, [&](T* p, const T* sj, int len) { series_row(p, sj, len, derivative_); });
    }

private:
    series_terms terms_, derivative_;
};

// w = s: the first-order term alone.
template <class T>
class linear_kernel final : public score_kernel<T> {
public:
    void forward_row(T* w, const T* s, int n) const override { std::copy_n(s, n, w); }
    void backward_row(T* ds, const T* dw, const T*, const T*, int n) const override {
        if (ds != dw) std::copy_n(dw, n, ds);
    }
};

// ---- feature maps: phi(x) ----

// elu(x) + 1 = x + 1 for x > 0, exp(x) otherwise (Katharopoulos et al.).
template <class T>
class elu1_map final : public feature_map<T> {
public:
    void forward(T* phi, const T* x, int HS) const override {
        for (int i = 0; i < HS; ++i) phi[i] = x[i] > 0 ? x[i] + T(1) : std::exp(x[i]);
    }
    void backward(T* dx, const T* dphi, const T* x, const T* phi, int HS) const override {
        for (int i = 0; i < HS; ++i) dx[i] += dphi[i] * (x[i] > 0 ? T(1) : phi[i]);
    }
};

template <class T>
class relu_map final : public feature_map<T> {
public:
    void forward(T* phi, const T* x, int HS) const override {
        for (int i = 0; i < HS; ++i) phi[i] = x[i] > 0 ? x[i] : T(0);
    }
    void backward(T* dx, const T* dphi, const T* x, const T*, int HS) const override {
        for (int i = 0; i < HS; ++i) dx[i] += x[i] > 0 ? dphi[i] : T(0);
    }
};

// x / max(|x|, eps). Where |x| > eps: J = (I - phi phi^T) / |x|, so
// dx = (dphi - phi (phi . dphi)) / |x|; below eps it is x / eps, J = I / eps.
template <class T>
class cosine_map final : public feature_map<T> {
public:
    explicit cosine_map(T eps) : eps_(eps) {}
    void forward(T* phi, const T* x, int HS) const override {
        const T d = std::max(norm(x, HS), eps_);
        for (int i = 0; i < HS; ++i) phi[i] = x[i] / d;
    }
    void backward(T* dx, const T* dphi, const T* x, const T* phi, int HS) const override {
        const T n = norm(x, HS);
        if (n > eps_) {
            T dot = 0;
            for (int i = 0; i < HS; ++i) dot += phi[i] * dphi[i];
            for (int i = 0; i < HS; ++i) dx[i] += (dphi[i] - phi[i] * dot) / n;
        } else {
            for (int i = 0; i < HS; ++i) dx[i] += dphi[i] / eps_;
        }
    }

private:
    static T norm(const T* x, int HS) {
        T ss = 0;
        for (int i = 0; i < HS; ++i) ss += x[i] * x[i];
        return std::sqrt(ss);
    }
    T eps_;
};

// ---- denominators: o = D(u, z, count) ----

// o = u / (z + e), e = eps for the non-negative feature kernels (elu1, relu;
// as fast-transformers does) and 0 otherwise. dL/du = dout / (z + e),
// dL/dz = -(dout . u) / (z + e)^2, or 0 when the denominator is detached.
template <class T>
class softmax_denominator final : public denominator<T> {
public:
    softmax_denominator(T added_eps, bool detach) : added_eps_(added_eps), detach_(detach) {}
    T weight_sum_offset() const override { return added_eps_; }
    void forward_row(T* o, const T* u, T z, int, const T*, int HS) const override {
        const T inv = T(1) / (z + added_eps_);
        for (int i = 0; i < HS; ++i) o[i] = u[i] * inv;
    }
    T backward_row(T* du, T*, const T* dout, const T* u, T z, int, const T*, int HS) const override {
        const T inv = T(1) / (z + added_eps_);
        T dot = 0;
        for (int i = 0; i < HS; ++i) {
            du[i] = dout[i] * inv;
            dot += dout[i] * u[i];
        }
        return detach_ ? T(0) : -dot * inv * inv;
    }

private:
    T added_eps_;
    bool detach_;
};

// o = u / max(|u|, eps). Above eps: du = (dout - o (o . dout)) / |u|.
template <class T>
class norm_denominator final : public denominator<T> {
public:
    explicit norm_denominator(T eps) : eps_(eps) {}
    void forward_row(T* o, const T* u, T, int, const T*, int HS) const override {
        const T d = std::max(norm(u, HS), eps_);
        for (int i = 0; i < HS; ++i) o[i] = u[i] / d;
    }
    T backward_row(T* du, T*, const T* dout, const T* u, T, int, const T*, int HS) const override {
        const T n = norm(u, HS);
        if (n > eps_) {
            T dot = 0;  // o . dout with o = u / n
            for (int i = 0; i < HS; ++i) dot += u[i] * dout[i];
            dot /= n;
            for (int i = 0; i < HS; ++i) du[i] = (dout[i] - u[i] / n * dot) / n;
        } else {
            for (int i = 0; i < HS; ++i) du[i] = dout[i] / eps_;
        }
        return 0;
    }

private:
    static T norm(const T* u, int HS) {
        T ss = 0;
        for (int i = 0; i < HS; ++i) ss += u[i] * u[i];
        return std::sqrt(ss);
    }
    T eps_;
};

// o = gain * u * r, r = (mean(u^2) + eps)^(-1/2).
// du_i = r gain_i dout_i - (r^3 / HS) u_i sum_k dout_k gain_k u_k; dgain_i += dout_i u_i r.
template <class T>
class rmsnorm_denominator final : public denominator<T> {
public:
    explicit rmsnorm_denominator(T eps) : eps_(eps) {}
    int param_count(int HS) const override { return HS; }
    void forward_row(T* o, const T* u, T, int, const T* gain, int HS) const override {
        const T r = rstd(u, HS);
        for (int i = 0; i < HS; ++i) o[i] = gain[i] * u[i] * r;
    }
    T backward_row(T* du, T* dgain, const T* dout, const T* u, T, int, const T* gain, int HS) const override {
        const T r = rstd(u, HS);
        T dot = 0;
        for (int i = 0; i < HS; ++i) dot += dout[i] * gain[i] * u[i];
        const T k = r * r * r * dot / HS;
        for (int i = 0; i < HS; ++i) {
            du[i] = r * gain[i] * dout[i] - k * u[i];
            if (dgain) dgain[i] += dout[i] * u[i] * r;
        }
        return 0;
    }

private:
    T rstd(const T* u, int HS) const {
        T ss = 0;
        for (int i = 0; i < HS; ++i) ss += u[i] * u[i];
        return T(1) / std::sqrt(ss / HS + eps_);
    }
    T eps_;
};

// o = gain * xh + bias, xh = (u - mean) r, r = (var + eps)^(-1/2) (biased var).
// With g = dout * gain: du = r (g - mean(g) - xh mean(g * xh)).
template <class T>
class layernorm_denominator final : public denominator<T> {
public:
    explicit layernorm_denominator(T eps) : eps_(eps) {}
    int param_count(int HS) const override { return 2 * HS; }  // gain, then bias
    void forward_row(T* o, const T* u, T, int, const T* params, int HS) const override {
        T mean, r;
        moments(u, HS, mean, r);
        for (int i = 0; i < HS; ++i) o[i] = params[i] * (u[i] - mean) * r + params[HS + i];
    }
    T backward_row(T* du, T* dparams, const T* dout, const T* u, T, int, const T* params, int HS) const override {
        T mean, r;
        moments(u, HS, mean, r);
        T g_mean = 0, gx_mean = 0;
        for (int i = 0; i < HS; ++i) {
            const T xh = (u[i] - mean) * r, g = dout[i] * params[i];
            g_mean += g;
            gx_mean += g * xh;
            if (dparams) {
                dparams[i] += dout[i] * xh;
                dparams[HS + i] += dout[i];
            }
        }
        g_mean /= HS;
        gx_mean /= HS;
        for (int i = 0; i < HS; ++i) {
            const T xh = (u[i] - mean) * r;
            du[i] = r * (dout[i] * params[i] - g_mean - xh * gx_mean);
        }
        return 0;
    }

private:
    void moments(const T* u, int HS, T& mean, T& r) const {
        mean = 0;
        for (int i = 0; i < HS; ++i) mean += u[i];
        mean /= HS;
        T var = 0;
        for (int i = 0; i < HS; ++i) var += (u[i] - mean) * (u[i] - mean);
        r = T(1) / std::sqrt(var / HS + eps_);
    }
    T eps_;
};

// o = u / t (t attended positions); also the `gate` denominator, whose output
// gate the attention layer applies.
template <class T>
class length_denominator final : public denominator<T> {
public:
    void forward_row(T* o, const T* u, T, int count, const T*, int HS) const override {
        for (int i = 0; i < HS; ++i) o[i] = u[i] / T(count);
    }
    T backward_row(T* du, T*, const T* dout, const T*, T, int count, const T*, int HS) const override {
        for (int i = 0; i < HS; ++i) du[i] = dout[i] / T(count);
        return 0;
    }
};

template <class T>
class identity_denominator final : public denominator<T> {
public:
    void forward_row(T* o, const T* u, T, int, const T*, int HS) const override { std::copy_n(u, HS, o); }
    T backward_row(T* du, T*, const T* dout, const T*, T, int, const T*, int HS) const override {
        std::copy_n(dout, HS, du);
        return 0;
    }
};

}  // namespace

bool is_score_kernel(numerator_kind n) { return traits_of(n).family == numerator_family::score_kernel; }

bool uses_out_gate(const attention_config& cfg) { return cfg.out_gate || traits_of(cfg.denominator).has_output_gate; }

bool is_scale_invariant(denominator_kind d) { return traits_of(d).scale_invariant; }

namespace {
// An order-taking numerator (the table's takes_order) computes orders from
// lowest_order on; the spec's limits (spec/overrides.hpp) refuse other values
// before a run starts, so this is a precondition, not a bound of its own.
void require_order(const attention_config& cfg) {
    if (cfg.order < lowest_order)
        throw std::invalid_argument(std::string(to_string(cfg.numerator)) +
                                    " needs order >= " + std::to_string(lowest_order));
}

// The factories the variant table's rows point to (variant_table.cpp), one
// pair (float, double) per kernel.
template <template <class> class K, class T>
std::unique_ptr<score_kernel<T>> make_plain_kernel(const attention_config&) {
    return std::make_unique<K<T>>();
}
template <template <class> class K, class T>
std::unique_ptr<score_kernel<T>> make_order_kernel(const attention_config& cfg) {
    require_order(cfg);
    return std::make_unique<K<T>>(cfg.order);
}
template <class T>
std::unique_ptr<score_kernel<T>> make_series_kernel(const attention_config& cfg) {
    if (traits_of(cfg.numerator).takes_order) require_order(cfg);
    return std::make_unique<series_kernel<T>>(terms_of(cfg));
}
template <class T>
std::unique_ptr<score_kernel<T>> make_exp_kernel(const attention_config& cfg) {
    return std::make_unique<exp_kernel<T>>(is_scale_invariant(cfg.denominator), cfg.detach_denominator);
}
template <template <class> class M, class T>
std::unique_ptr<feature_map<T>> make_plain_map(const attention_config&) {
    return std::make_unique<M<T>>();
}
template <class T>
std::unique_ptr<feature_map<T>> make_cosine_map(const attention_config& cfg) {
    return std::make_unique<cosine_map<T>>(static_cast<T>(cfg.eps));
}
}  // namespace

const numerator_kernels exp_kernels{.score_float = make_exp_kernel<float>, .score_double = make_exp_kernel<double>};
const numerator_kernels taylor_kernels{.score_float = make_order_kernel<taylor_kernel, float>,
                                       .score_double = make_order_kernel<taylor_kernel, double>};
const numerator_kernels linear_kernels{.score_float = make_plain_kernel<linear_kernel, float>,
                                       .score_double = make_plain_kernel<linear_kernel, double>};
const numerator_kernels power_kernels{.score_float = make_order_kernel<power_kernel, float>,
                                      .score_double = make_order_kernel<power_kernel, double>};
const numerator_kernels series_kernels{.score_float = make_series_kernel<float>,
                                       .score_double = make_series_kernel<double>};
const numerator_kernels elu1_kernels{.map_float = make_plain_map<elu1_map, float>,
                                     .map_double = make_plain_map<elu1_map, double>};
const numerator_kernels relu_kernels{.map_float = make_plain_map<relu_map, float>,
                                     .map_double = make_plain_map<relu_map, double>};
const numerator_kernels cosine_kernels{.map_float = make_cosine_map<float>, .map_double = make_cosine_map<double>};

namespace {
template <class T>
std::unique_ptr<denominator<T>> make_softmax(const attention_config& cfg) {
    // Weights that can be exactly 0 everywhere (relu, elu1 after underflow) get
    // eps, as fast-transformers does.
    const bool may_vanish = traits_of(cfg.numerator).sign(cfg.order) == weight_sign::non_negative;
    return std::make_unique<softmax_denominator<T>>(may_vanish ? static_cast<T>(cfg.eps) : T(0),
                                                    cfg.detach_denominator);
}
template <template <class> class D, class T>
std::unique_ptr<denominator<T>> make_eps_denominator(const attention_config& cfg) {
    return std::make_unique<D<T>>(static_cast<T>(cfg.eps));
}
template <template <class> class D, class T>
std::unique_ptr<denominator<T>> make_plain_denominator(const attention_config&) {
    return std::make_unique<D<T>>();
}
}  // namespace

const denominator_kernels softmax_kernels{make_softmax<float>, make_softmax<double>};
const denominator_kernels norm_kernels{make_eps_denominator<norm_denominator, float>,
                                       make_eps_denominator<norm_denominator, double>};
const denominator_kernels rmsnorm_kernels{make_eps_denominator<rmsnorm_denominator, float>,
                                          make_eps_denominator<rmsnorm_denominator, double>};
const denominator_kernels layernorm_kernels{make_eps_denominator<layernorm_denominator, float>,
                                            make_eps_denominator<layernorm_denominator, double>};
// `gate` is `length` times the output gate, which the attention layer applies.
const denominator_kernels length_kernels{make_plain_denominator<length_denominator, float>,
                                         make_plain_denominator<length_denominator, double>};
const denominator_kernels identity_kernels{make_plain_denominator<identity_denominator, float>,
                                           make_plain_denominator<identity_denominator, double>};

namespace {
// The float or the double factory of a pair.
template <class T, class F, class D>
auto factory_for(F for_float, D for_double) {
    if constexpr (std::is_same_v<T, float>)
        return for_float;
    else
        return for_double;
}
}  // namespace

// The kernel of a row, or null when the row's family has none of this kind.
template <class T>
std::unique_ptr<score_kernel<T>> make_score_kernel(const attention_config& cfg) {
    const numerator_kernels& k = *traits_of(cfg.numerator).kernels;
    const auto make = factory_for<T>(k.score_float, k.score_double);
    return make ? make(cfg) : nullptr;
}

template <class T>
std::unique_ptr<feature_map<T>> make_feature_map(const attention_config& cfg) {
    const numerator_kernels& k = *traits_of(cfg.numerator).kernels;
    const auto make = factory_for<T>(k.map_float, k.map_double);
    return make ? make(cfg) : nullptr;
}

template <class T>
std::unique_ptr<denominator<T>> make_denominator(const attention_config& cfg) {
    const denominator_kernels& k = *traits_of(cfg.denominator).kernels;
    return factory_for<T>(k.make_float, k.make_double)(cfg);
}

#define ATTNLAB_INSTANTIATE_VARIANTS(T)                                                      \
    template std::unique_ptr<score_kernel<T>> make_score_kernel<T>(const attention_config&); \
    template std::unique_ptr<feature_map<T>> make_feature_map<T>(const attention_config&);   \
    template std::unique_ptr<denominator<T>> make_denominator<T>(const attention_config&);

ATTNLAB_INSTANTIATE_VARIANTS(float)
ATTNLAB_INSTANTIATE_VARIANTS(double)

}  // namespace attnlab
