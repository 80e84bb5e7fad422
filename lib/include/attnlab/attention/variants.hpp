// The pieces an attention variant is made of (SPEC §2). A variant is one
// numerator (a score kernel on the scaled scores s_tj = q_t.k_j / sqrt(HS))
// and one denominator (turning the numerator u_t = sum_j w_tj v_j into the
// head output o_t). Each piece is one small class with its derivative;
// adding a variant means adding one class here and one case in the
// factories, plus its gradient-check case.
#pragma once
#include <memory>

#include "attnlab/spec/run_config.hpp"

namespace attnlab {

// Maps one causal row of scaled scores s_t0..s_t(n-1) to weights w.
template <class T>
class score_kernel {
public:
    virtual ~score_kernel() = default;
    // w (n) = kernel(s (n))
    virtual void forward_row(T* w, const T* s, int n) const = 0;
    // ds (n) = dw (n) * dkernel/ds (overwrites ds; ds may alias dw)
    virtual void backward_row(T* ds, const T* dw, const T* s, const T* w, int n) const = 0;
};

// Turns the numerator row u_t (HS) into the head output o_t (HS), given the
// weight sum z_t = sum_j w_tj (used by softmax only).
template <class T>
class denominator {
public:
    virtual ~denominator() = default;
    virtual void forward_row(T* o, const T* u, T z, int HS) const = 0;
    // du (HS) = dL/du_t (overwrites), returns dL/dz_t.
    virtual T backward_row(T* du, const T* dout, const T* u, T z, int HS) const = 0;
};

// Factories: refuse (config_error) a numerator or denominator that is not
// implemented yet rather than run something else.
template <class T>
std::unique_ptr<score_kernel<T>> make_score_kernel(const attention_config& cfg);
template <class T>
std::unique_ptr<denominator<T>> make_denominator(const attention_config& cfg);

// Whether this build implements the variant (checked by `attnlab validate`).
void check_attention_supported(const attention_config& cfg);

}  // namespace attnlab
