#include "attnlab/ops/vector_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "exp_lanes.hpp"
#include "target_clones.hpp"

namespace attnlab {

namespace {

// GCC's vector extension: 8 floats (one AVX2 register; two SSE registers in
// the baseline clone). Written out rather than left to the auto-vectoriser,
// which evaluated exp's polynomial twice per element (once per clamp) and
// left the scalar tail to different code.
using lanes8 = float __attribute__((vector_size(32)));
// The helpers below take and return lanes8 by value: always inlined into the
// clones, so no call passes a vector (GCC warns of the baseline's ABI anyway).
#pragma GCC diagnostic ignored "-Wpsabi"
using int_lanes8 = std::int32_t __attribute__((vector_size(32)));
constexpr long width8 = 8;  // floats in a lanes8

// The first m <= 8 floats of p (the rest 0), and their store back.
__attribute__((always_inline)) inline lanes8 load_lanes(const float* p, long m) {
    lanes8 v = {};
    std::memcpy(&v, p, static_cast<std::size_t>(m) * sizeof(float));
    return v;
}
__attribute__((always_inline)) inline void store_lanes(float* p, lanes8 v, long m) {
    std::memcpy(p, &v, static_cast<std::size_t>(m) * sizeof(float));
}

// exp in 8 lanes (exp_lanes.hpp). Every element, the last partial vector's
// too, goes through this code, so an element's bits do not depend on where
// it sits in a row.
__attribute__((always_inline)) inline lanes8 exp_lanes(lanes8 x) { return detail::exp_lanes<lanes8, int_lanes8>(x); }

}  // namespace

ATTNLAB_CLONES void exp_shifted(float* out, const float* in, long n, float shift) {
    long i = 0;
    for (; i + width8 <= n; i += width8) store_lanes(out + i, exp_lanes(load_lanes(in + i, width8) - shift), width8);
    if (i < n) store_lanes(out + i, exp_lanes(load_lanes(in + i, n - i) - shift), n - i);
}

void exp_shifted(double* out, const double* in, long n, double shift) {
    for (long i = 0; i < n; ++i) out[i] = std::exp(in[i] - shift);
}

// The maximum in two vectors of 8 lanes (GCC's vector extension, so that
// each clone uses its own registers; max is exact, so the order does not
// matter). Not one vector of 16: GCC lowers a select on a vector wider than
// the CPU's to scalar code with stack round trips (5.8 % of a language-model
// training step in the AVX2 clone). The last, partial pair overlaps the one
// before it.
using lanes16 = float __attribute__((vector_size(64)));

ATTNLAB_CLONES float max_of(const float* x, long n) {
    constexpr long lanes = 16;
    if (n < lanes) {
        float m = x[0];
        for (long i = 1; i < n; ++i) m = m < x[i] ? x[i] : m;
        return m;
    }
    lanes8 lo, hi, v;
    std::memcpy(&lo, x, sizeof lo);
    std::memcpy(&hi, x + 8, sizeof hi);
    for (long i = lanes; i < n; i += lanes) {
        const float* at = x + std::min(i, n - lanes);
        std::memcpy(&v, at, sizeof v);
        lo = lo < v ? v : lo;
        std::memcpy(&v, at + 8, sizeof v);
        hi = hi < v ? v : hi;
    }
    float m = lo[0];
    for (int j = 1; j < 8; ++j) m = m < lo[j] ? lo[j] : m;
    for (int j = 0; j < 8; ++j) m = m < hi[j] ? hi[j] : m;
    return m;
}

double max_of(const double* x, long n) { return *std::max_element(x, x + n); }

ATTNLAB_CLONES float scaled_sum(float* out, const float* d, float add, const float* w, long n) {
    constexpr long lanes = 16;
    lanes16 acc = {}, dv, wv;
    long i = 0;
    for (; i + lanes <= n; i += lanes) {
        std::memcpy(&dv, d + i, sizeof dv);
        std::memcpy(&wv, w + i, sizeof wv);
        const lanes16 o = wv * (dv + add);
        std::memcpy(out + i, &o, sizeof o);
        acc += o;
    }
    float sum = 0;
    for (int j = 0; j < lanes; ++j) sum += acc[j];
    for (; i < n; ++i) {
        out[i] = w[i] * (d[i] + add);
        sum += out[i];
    }
    return sum;
}

double scaled_sum(double* out, const double* d, double add, const double* w, long n) {
    double sum = 0;
    for (long i = 0; i < n; ++i) {
        out[i] = w[i] * (d[i] + add);
        sum += out[i];
    }
    return sum;
}

ATTNLAB_CLONES float sum_of(const float* x, long n) {
    constexpr long lanes = 16;
    lanes16 acc = {}, v;
    long i = 0;
    for (; i + lanes <= n; i += lanes) {
        std::memcpy(&v, x + i, sizeof v);
        acc += v;
    }
    float sum = 0;
    for (int j = 0; j < lanes; ++j) sum += acc[j];
    for (; i < n; ++i) sum += x[i];
    return sum;
}

double sum_of(const double* x, long n) {
    double sum = 0;
    for (long i = 0; i < n; ++i) sum += x[i];
    return sum;
}

// Three passes over a row that sits in L1: exp (vectorised), the sum in 16
// lanes (a fixed order), the scale by its reciprocal.
ATTNLAB_CLONES float softmax_row(float* p, const float* z, long n) {
    const float m = max_of(z, n);
    exp_shifted(p, z, n, m);
    const float sum = sum_of(p, n);
    const float inv = 1.0f / sum;
    for (long k = 0; k < n; ++k) p[k] *= inv;
    return std::log(sum) + m;
}

double softmax_row(double* p, const double* z, long n) {
    const double m = max_of(z, n);
    exp_shifted(p, z, n, m);
    const double sum = sum_of(p, n);
    for (long i = 0; i < n; ++i) p[i] /= sum;
    return std::log(sum) + m;
}

template <class T>
long first_index_of_max(const T* x, long n) {
    const T m = max_of(x, n);
    for (long i = 0; i < n; ++i)
        if (x[i] == m) return i;  // ties: the first, as std::max_element
    return 0;                     // a NaN x[0]: std::max_element's answer too
}
template long first_index_of_max(const float*, long);
template long first_index_of_max(const double*, long);

namespace {
// out = silu(gate) up on m <= 8 lanes.
__attribute__((always_inline)) inline void swiglu_lanes(float* out, const float* gate, const float* up, long m) {
    const lanes8 g = load_lanes(gate, m);
    store_lanes(out, g / (1.0f + exp_lanes(-g)) * load_lanes(up, m), m);
}
}  // namespace

ATTNLAB_CLONES void swiglu_rows(float* out, const float* gate, const float* up, long n) {
    long i = 0;
    for (; i + width8 <= n; i += width8) swiglu_lanes(out + i, gate + i, up + i, width8);
    if (i < n) swiglu_lanes(out + i, gate + i, up + i, n - i);
}

void swiglu_rows(double* out, const double* gate, const double* up, long n) {
    for (long i = 0; i < n; ++i) out[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
}

// silu(g) = g s(g); silu'(g) = s(g) (1 + g (1 - s(g))).
namespace {
__attribute__((always_inline)) inline void swiglu_grad_lanes(float* dgate, float* dup, const float* dout,
                                                             const float* gate, const float* up, long m) {
    const lanes8 g = load_lanes(gate, m), d = load_lanes(dout, m);
    const lanes8 s = 1.0f / (1.0f + exp_lanes(-g));
    const lanes8 du = d * g * s, dg = d * load_lanes(up, m) * s * (1.0f + g * (1.0f - s));
    store_lanes(dup, load_lanes(dup, m) + du, m);
    store_lanes(dgate, load_lanes(dgate, m) + dg, m);
}
}  // namespace

ATTNLAB_CLONES void swiglu_rows_backward(float* dgate, float* dup, const float* dout, const float* gate,
                                         const float* up, long n) {
    long i = 0;
    for (; i + width8 <= n; i += width8) swiglu_grad_lanes(dgate + i, dup + i, dout + i, gate + i, up + i, width8);
    if (i < n) swiglu_grad_lanes(dgate + i, dup + i, dout + i, gate + i, up + i, n - i);
}

void swiglu_rows_backward(double* dgate, double* dup, const double* dout, const double* gate, const double* up,
                          long n) {
    for (long i = 0; i < n; ++i) {
        const double g = gate[i], s = 1.0 / (1.0 + std::exp(-g));
        const double du = dout[i] * g * s, dg = dout[i] * up[i] * s * (1.0 + g * (1.0 - s));
        dup[i] += du;
        dgate[i] += dg;
    }
}

namespace {
// y_i = x_i cos - x_{i+h} sin, y_{i+h} = x_{i+h} cos + x_i sin (i < h = HS/2).
template <class T>
inline void rope_loop(T* y, const T* x, const T* cs, const T* sn, int NH, int HS) {
    const int h2 = HS / 2;
    for (int h = 0; h < NH; ++h, x += HS, y += HS)
        for (int i = 0; i < h2; ++i) {
            const T a = x[i], b = x[i + h2];
            y[i] = a * cs[i] - b * sn[i];
            y[i + h2] = b * cs[i] + a * sn[i];
        }
}

// dx_i += dy_i cos + dy_{i+h} sin, dx_{i+h} += dy_{i+h} cos - dy_i sin.
template <class T>
inline void rope_backward_loop(T* dx, const T* dy, const T* cs, const T* sn, int NH, int HS) {
    const int h2 = HS / 2;
    for (int h = 0; h < NH; ++h, dx += HS, dy += HS)
        for (int i = 0; i < h2; ++i) {
            const T a = dy[i], b = dy[i + h2];
            dx[i] += a * cs[i] + b * sn[i];
            dx[i + h2] += b * cs[i] - a * sn[i];
        }
}
}  // namespace

ATTNLAB_CLONES void rope_row(float* y, const float* x, const float* cs, const float* sn, int NH, int HS) {
    rope_loop(y, x, cs, sn, NH, HS);
}
void rope_row(double* y, const double* x, const double* cs, const double* sn, int NH, int HS) {
    rope_loop(y, x, cs, sn, NH, HS);
}
ATTNLAB_CLONES void rope_row_backward(float* dx, const float* dy, const float* cs, const float* sn, int NH, int HS) {
    rope_backward_loop(dx, dy, cs, sn, NH, HS);
}
void rope_row_backward(double* dx, const double* dy, const double* cs, const double* sn, int NH, int HS) {
    rope_backward_loop(dx, dy, cs, sn, NH, HS);
}

namespace {
// sum_i a_i b_i c_i (c may be null: sum_i a_i b_i) in 16 interleaved partial sums.
inline float sum_products(const float* a, const float* b, const float* c, int n) {
    constexpr int lanes = 16;
    float part[lanes] = {};
    int i = 0;
    if (c) {
        for (; i + lanes <= n; i += lanes)
            for (int j = 0; j < lanes; ++j) part[j] += a[i + j] * b[i + j] * c[i + j];
    } else {
        for (; i + lanes <= n; i += lanes)
            for (int j = 0; j < lanes; ++j) part[j] += a[i + j] * b[i + j];
    }
    float s = 0;
    for (int j = 0; j < lanes; ++j) s += part[j];
    for (; i < n; ++i) s += a[i] * b[i] * (c ? c[i] : 1.0f);
    return s;
}
}  // namespace

ATTNLAB_CLONES void rmsnorm_rows(float* out, float* rstd, const float* inp, const float* weight, long N, int C,
                                 float eps) {
    for (long n = 0; n < N; ++n) {
        const float* x = inp + n * C;
        const float r = 1.0f / std::sqrt(sum_products(x, x, nullptr, C) / C + eps);
        rstd[n] = r;
        float* o = out + n * C;
        for (int c = 0; c < C; ++c) o[c] = x[c] * r * weight[c];
    }
}

void rmsnorm_rows(double* out, double* rstd, const double* inp, const double* weight, long N, int C, double eps) {
    for (long n = 0; n < N; ++n) {
        const double* x = inp + n * C;
        double ss = 0;
        for (int c = 0; c < C; ++c) ss += x[c] * x[c];
        const double r = 1.0 / std::sqrt(ss / C + eps);
        rstd[n] = r;
        double* o = out + n * C;
        for (int c = 0; c < C; ++c) o[c] = x[c] * r * weight[c];
    }
}

// dx_c += r w_c dy_c - (r^3 / C) x_c sum_k(dy_k w_k x_k);  dw_c += dy_c x_c r (rows in order).
ATTNLAB_CLONES void rmsnorm_rows_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                          const float* rstd, const float* weight, long N, int C) {
    for (long n = 0; n < N; ++n) {
        const float* x = inp + n * C;
        const float* dy = dout + n * C;
        float* dx = dinp + n * C;
        const float r = rstd[n];
        const float k = r * r * r * sum_products(dy, weight, x, C) / C;
        for (int c = 0; c < C; ++c) {
            dx[c] += r * weight[c] * dy[c] - k * x[c];
            dweight[c] += dy[c] * x[c] * r;
        }
    }
}

void rmsnorm_rows_backward(double* dinp, double* dweight, const double* dout, const double* inp, const double* rstd,
                           const double* weight, long N, int C) {
    for (long n = 0; n < N; ++n) {
        const double* x = inp + n * C;
        const double* dy = dout + n * C;
        double* dx = dinp + n * C;
        const double r = rstd[n];
        double dot = 0;
        for (int c = 0; c < C; ++c) dot += dy[c] * weight[c] * x[c];
        const double k = r * r * r * dot / C;
        for (int c = 0; c < C; ++c) {
            dx[c] += r * weight[c] * dy[c] - k * x[c];
            dweight[c] += dy[c] * x[c] * r;
        }
    }
}

}  // namespace attnlab
