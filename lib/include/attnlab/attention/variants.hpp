// The pieces an attention variant is made of (docs/spec-reference.md,
// `attention`; the table of variants: variant_table.hpp). A variant is one
// numerator and one denominator:
//   score kernels  w_tj = f(s_tj), s_tj = q_t.k_j / sqrt(HS) (optionally
//   clamped) feature maps   w_tj = phi(q_t) . phi(k_j) denominators   o_t =
//   D(u_t, z_t, t), u_t = sum_j w_tj g_j v_j, z_t = sum_j w_tj
// Each piece is one small class with its derivative, made by the factory its
// variant table row points to. Adding a variant: docs/attention.md, "Adding
// a variant".
// The gates (in_gate, out_gate, and the `gate` denominator, which is `length`
// times an output gate) are applied by the attention layer around these.
#pragma once
#include <algorithm>
#include <memory>

#include "attnlab/attention/variant_table.hpp"
#include "attnlab/config/run_config.hpp"

namespace attnlab {

// Maps one causal row of (clamped) scaled scores s_t0..s_t(n-1) to weights w.
template <class T>
class score_kernel {
public:
    virtual ~score_kernel() = default;
    // w (n) = f(s (n))
    virtual void forward_row(T* w, const T* s, int n) const = 0;
    // The same for the first n of a row of width >= n whose other entries s
    // holds finite values for (a causal block's masked scores); w[n, width)
    // becomes 0. A kernel may evaluate f over more than n entries first, when
    // a vector loop without a scalar tail is cheaper than a short exact one.
    virtual void forward_row_padded(T* w, const T* s, int n, int width) const {
        forward_row(w, s, n);
        std::fill(w + n, w + width, T(0));
    }
    // ds (n) = dL/ds given dw (n) = dL/dw (ds may alias dw)
    virtual void backward_row(T* ds, const T* dw, const T* s, const T* w, int n) const = 0;
    // The backward of forward_row_padded, with dz added to every dw first (the
    // softmax sum's gradient, 0 without it): ds (n) = dL/ds given dL/dw = dw + dz,
    // ds[n, width) = 0. dw is overwritten (ds may alias it); w[n, width) is 0.
    virtual void backward_row_padded(T* ds, T* dw, T dz, const T* s, const T* w, int n, int width) const {
        for (int j = 0; j < n; ++j) dw[j] += dz;
        backward_row(ds, dw, s, w, n);
        std::fill(ds + n, ds + width, T(0));
    }
};

// Maps a head vector x (HS) to its features phi(x) (HS).
template <class T>
class feature_map {
public:
    virtual ~feature_map() = default;
    virtual void forward(T* phi, const T* x, int HS) const = 0;
    // dx (HS) += J_phi(x)^T dphi
    virtual void backward(T* dx, const T* dphi, const T* x, const T* phi, int HS) const = 0;
};

// Turns the numerator row u_t (HS) into the head output o_t (HS). `count` is
// the number of attended positions t (1-based); `params` the learnable
// out_norm gain then bias (param_count() values, shared by heads). Whether
// z_t is needed at all is the table's uses_weight_sum.
template <class T>
class denominator {
public:
    virtual ~denominator() = default;
    // What the denominator adds to z_t before dividing (softmax's eps for the
    // non-negative feature maps): z_t + offset <= 0 is a sum that crossed zero.
    virtual T weight_sum_offset() const { return T(0); }
    virtual int param_count(int HS) const {
        (void)HS;
        return 0;
    }
    virtual void forward_row(T* o, const T* u, T z, int count, const T* params, int HS) const = 0;
    // du (HS) = dL/du_t (overwrites); dparams (param_count) += dL/dparams; returns dL/dz_t.
    virtual T backward_row(T* du, T* dparams, const T* dout, const T* u, T z, int count, const T* params,
                           int HS) const = 0;
};

// Thin reads of the variant table (variant_table.hpp).
bool is_score_kernel(numerator_kind n);           // the score_kernel family
bool uses_out_gate(const attention_config& cfg);  // out_gate, or a denominator with its own output gate
// The output does not change when u and z are scaled, so exp subtracts the
// row max first (docs/spec-reference.md, `attention`).
bool is_scale_invariant(denominator_kind d);

// A row's factories, one per float type (variants.cpp defines one object per
// kernel, the row in variant_table.cpp points to it). A numerator has the
// score-kernel pair or the feature-map pair; the other stays null.
template <class T>
using score_kernel_factory = std::unique_ptr<score_kernel<T>> (*)(const attention_config&);
template <class T>
using feature_map_factory = std::unique_ptr<feature_map<T>> (*)(const attention_config&);
template <class T>
using denominator_factory = std::unique_ptr<denominator<T>> (*)(const attention_config&);

struct numerator_kernels {
    score_kernel_factory<float> score_float = nullptr;
    score_kernel_factory<double> score_double = nullptr;
    feature_map_factory<float> map_float = nullptr;
    feature_map_factory<double> map_double = nullptr;
};
struct denominator_kernels {
    denominator_factory<float> make_float = nullptr;
    denominator_factory<double> make_double = nullptr;
};

// The kernels each row of the list names (config/variant_list.hpp), one
// object per kernel (a kernel two rows share is declared twice, which is
// allowed). series_kernels evaluates any row's series of terms, so a new
// polynomial numerator needs no kernel of its own.
#define ATTNLAB_DECLARE_KERNELS(name, family, order, state, sign, terms, kernels, ...) \
    extern const numerator_kernels kernels##_kernels;
ATTNLAB_NUMERATORS(ATTNLAB_DECLARE_KERNELS)
#undef ATTNLAB_DECLARE_KERNELS
#define ATTNLAB_DECLARE_KERNELS(name, weight_sum, scale_invariant, gate, detachable, params, kernels, ...) \
    extern const denominator_kernels kernels##_kernels;
ATTNLAB_DENOMINATORS(ATTNLAB_DECLARE_KERNELS)
#undef ATTNLAB_DECLARE_KERNELS
extern const numerator_kernels series_kernels;

// The kernels of a configuration through its rows' factories (the score
// kernel is null for feature maps and vice versa).
template <class T>
std::unique_ptr<score_kernel<T>> make_score_kernel(const attention_config& cfg);
template <class T>
std::unique_ptr<feature_map<T>> make_feature_map(const attention_config& cfg);
template <class T>
std::unique_ptr<denominator<T>> make_denominator(const attention_config& cfg);

}  // namespace attnlab
