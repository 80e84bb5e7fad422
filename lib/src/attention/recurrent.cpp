// Recurrent form of causal attention (recurrent.hpp): feature expansions of
// the Taylor terms in full and symmetric layouts, the fixed-size state update,
// and the key/value-cache step for exp and clamped kernels. Which variant has
// a finite state, and which Taylor terms it holds, is the variant table's.
#include "attnlab/attention/recurrent.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/util/shapes.hpp"

namespace attnlab {

namespace {

std::size_t checked_mul(std::size_t a, std::size_t b) {
    if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b)
        throw std::overflow_error("recurrent state size does not fit in size_t");
    return a * b;
}

std::size_t checked_add(std::size_t a, std::size_t b) {
    if (a > std::numeric_limits<std::size_t>::max() - b)
        throw std::overflow_error("recurrent state size does not fit in size_t");
    return a + b;
}

// Depth-first over non-decreasing index sequences last <= i_1 <= ... <= i_m
// (last = the index appended before, `run` = how often in a row): each
// appended index a multiplies value by x_a c / sqrt(r), r = a's run length so
// far, and the product of the 1/sqrt(r) over a sequence is sqrt(1/alpha!).
template <class T>
void symmetric_terms(T*& out, const T* x, T c, int d, int m, int last, int run, T value) {
    if (m == 0) {
        *out++ = value;
        return;
    }
    for (int a = last; a < d; ++a) {
        const int r = a == last ? run + 1 : 1;
        symmetric_terms(out, x, c, d, m - 1, a, r, value * x[a] * c / std::sqrt(T(r)));
    }
}

// The backward of symmetric_terms below a node of the index tree whose
// value is `value`: dx[a] += (dL/dchild) value c / sqrt(r) for every edge
// that appends index a, and the node's own dL/dvalue is returned (dphi
// walks the leaves in the forward's order).
template <class T>
T symmetric_terms_backward(T* dx, const T*& dphi, const T* x, T c, int d, int m, int last, int run, T value) {
    if (m == 0) return *dphi++;
    T dvalue = 0;
    for (int a = last; a < d; ++a) {
        const int r = a == last ? run + 1 : 1;
        const T factor = c / std::sqrt(T(r));  // child = value * x_a * factor
        const T dchild = symmetric_terms_backward(dx, dphi, x, c, d, m - 1, a, r, value * x[a] * factor);
        dvalue += dchild * x[a] * factor;
        dx[a] += dchild * value * factor;
    }
    return dvalue;
}

// The series of a score kernel's state (its table row): powers >= 0 in
// increasing order. A score kernel with a finite state and no terms is a
// table error, not an empty state.
series_terms state_terms(const attention_config& cfg) {
    series_terms terms = terms_of(cfg);
    bool increasing = !terms.empty() && terms.front().power >= 0;
    for (std::size_t k = 1; k < terms.size(); ++k) increasing = increasing && terms[k].power > terms[k - 1].power;
    if (!increasing)
        throw std::invalid_argument(std::string(to_string(cfg.numerator)) + " at order " + std::to_string(cfg.order) +
                                    " has no series of increasing powers >= 0 for a recurrent state");
    return terms;
}

}  // namespace

std::size_t taylor_term_size(int d, int m, state_layout layout) {
    if (d < 1 || m < 0) throw std::invalid_argument("taylor_term_size needs d >= 1, m >= 0");
    std::size_t n = 1;
    if (layout == state_layout::full) {
        for (int i = 0; i < m; ++i) n = checked_mul(n, static_cast<std::size_t>(d));
    } else {
        // C(d+m-1, m) = prod_{i=1..m} (d-1+i) / i; each partial product is C(d-1+i, i).
        for (int i = 1; i <= m; ++i) n = checked_mul(n, static_cast<std::size_t>(d - 1 + i)) / i;
    }
    return n;
}

template <class T>
void taylor_term_full(T* phi, const T* x, int d, int m, T scale) {
    const T inv_root4_d = std::pow(T(d), T(-0.25));
    // Grow phi in place from phi_0 = scale: phi_l[i d + a] = phi_(l-1)[i] y_a / sqrt(l),
    // running i downwards so that phi_(l-1)[i] is read before it is overwritten.
    phi[0] = scale;
    std::size_t len = 1;
    for (int l = 1; l <= m; ++l) {
        const T c = T(1) / std::sqrt(T(l));
        for (std::size_t i = len; i-- > 0;) {
            const T p = phi[i] * c;
            for (int a = d - 1; a >= 0; --a) phi[i * d + a] = p * x[a] * inv_root4_d;
        }
        len *= d;
    }
}

template <class T>
void taylor_term_symmetric(T* phi, const T* x, int d, int m, T scale) {
    // Start before index 0 with run 0, so the first index always gets r = 1.
    symmetric_terms(phi, x, std::pow(T(d), T(-0.25)), d, m, 0, 0, scale);
}

template <class T>
void taylor_term_symmetric_backward(T* dx, const T* dphi, const T* x, int d, int m, T scale) {
    symmetric_terms_backward(dx, dphi, x, std::pow(T(d), T(-0.25)), d, m, 0, 0, scale);
}

std::size_t feature_size(const attention_config& cfg, int HS, state_layout layout) {
    if (!has_finite_state(cfg)) return 0;
    if (!is_score_kernel(cfg.numerator)) return static_cast<std::size_t>(HS);
    std::size_t F = 0;
    for (const series_term& t : state_terms(cfg)) F = checked_add(F, taylor_term_size(HS, t.power, layout));
    return F;
}

namespace {

// A count of any size in base-10^9 limbs, least significant first: enough
// arithmetic for state sizes past 64 bits (order 20 of d 2^24 is ~2^480).
struct big_count {
    static constexpr std::uint64_t base = 1000000000;
    std::vector<std::uint64_t> limbs{1};

    void times(std::uint64_t k) {  // k < 2^32
        std::uint64_t carry = 0;
        for (std::uint64_t& l : limbs) {
            const std::uint64_t v = l * k + carry;
            l = v % base;
            carry = v / base;
        }
        for (; carry > 0; carry /= base) limbs.push_back(carry % base);
    }
    void divide(std::uint64_t k) {  // exact, k < 2^32
        std::uint64_t rest = 0;
        for (std::size_t i = limbs.size(); i-- > 0;) {
            const std::uint64_t v = rest * base + limbs[i];
            limbs[i] = v / k;
            rest = v % k;
        }
        while (limbs.size() > 1 && limbs.back() == 0) limbs.pop_back();
    }
    void add(const big_count& o) {
        std::uint64_t carry = 0;
        for (std::size_t i = 0; i < o.limbs.size() || carry > 0; ++i) {
            if (i == limbs.size()) limbs.push_back(0);
            const std::uint64_t v = limbs[i] + (i < o.limbs.size() ? o.limbs[i] : 0) + carry;
            limbs[i] = v % base;
            carry = v / base;
        }
    }
    std::string text() const {
        std::string out = std::to_string(limbs.back());
        for (std::size_t i = limbs.size() - 1; i-- > 0;) {
            const std::string part = std::to_string(limbs[i]);
            out += std::string(9 - part.size(), '0') + part;
        }
        return out;
    }
};

big_count big_of(std::uint64_t n) {
    big_count c;
    c.limbs = {n % big_count::base};
    for (n /= big_count::base; n > 0; n /= big_count::base) c.limbs.push_back(n % big_count::base);
    return c;
}

}  // namespace

std::string state_floats_text(const attention_config& cfg, int HS, state_layout layout, int T,
                              std::size_t bytes_per_float) {
    big_count n;
    if (!has_finite_state(cfg)) {
        n = big_of(2);
        n.times(static_cast<std::uint64_t>(T));
        n.times(static_cast<std::uint64_t>(HS));
    } else if (!is_score_kernel(cfg.numerator)) {
        n = big_of(static_cast<std::uint64_t>(HS) + 1);  // F = HS
        n.times(static_cast<std::uint64_t>(HS));
    } else {
        big_count F = big_of(0);
        for (const series_term& t : state_terms(cfg)) {
            big_count term;  // d^m, or C(d+m-1, m) whose partial products are C(d-1+i, i)
            for (int i = 1; i <= t.power; ++i) {
                if (layout == state_layout::full) {
                    term.times(static_cast<std::uint64_t>(HS));
                } else {
                    term.times(static_cast<std::uint64_t>(HS - 1 + i));
                    term.divide(static_cast<std::uint64_t>(i));
                }
            }
            F.add(term);
        }
        n = F;  // F HS + F
        n.times(static_cast<std::uint64_t>(HS) + 1);
    }
    n.times(bytes_per_float);
    return n.text();
}

std::size_t state_floats(const attention_config& cfg, int HS, state_layout layout, int T) {
    if (!has_finite_state(cfg))
        return checked_mul(checked_mul(2, static_cast<std::size_t>(T)), static_cast<std::size_t>(HS));
    const std::size_t F = feature_size(cfg, HS, layout);
    return checked_add(checked_mul(F, static_cast<std::size_t>(HS)), F);  // S (F, HS) and z (F)
}

template <class T>
recurrent_attention<T>::recurrent_attention(const attention_config& cfg, int NH, int HS, state_layout layout)
    : cfg_(cfg),
      NH_(NH),
      HS_(HS),
      layout_(layout),
      F_(attnlab::feature_size(cfg, HS, layout)),
      scale_(T(1) / std::sqrt(T(HS))),
      in_gate_(cfg.in_gate),
      out_gate_(uses_out_gate(cfg)),
      kernel_(has_finite_state(cfg) ? nullptr : make_score_kernel<T>(cfg)),
      map_(make_feature_map<T>(cfg)),
      denom_(make_denominator<T>(cfg)),
      terms_(finite_state() && !map_ ? state_terms(cfg) : series_terms{}) {
    if (!has_finite_state(cfg) && !kernel_)  // only a score kernel can step through a key/value cache
        throw std::logic_error(std::string("variant table: ") + to_string(cfg.numerator) +
                               " has no finite state but is not a score kernel");
}

// The query's features carry each term's coefficient, the key's do not, so
// that phi(q) . phi(k) = sum_k c_k s^p_k / p_k! for coefficients of any sign.
template <class T>
void recurrent_attention<T>::features(T* phi, const T* x, bool query) const {
    if (!finite_state()) throw std::logic_error("features: this variant keeps a key/value cache");
    if (map_) {
        map_->forward(phi, x, HS_);
        return;
    }
    for (const series_term& t : terms_) {
        const T scale = query ? static_cast<T>(t.coefficient) : T(1);
        if (layout_ == state_layout::full)
            taylor_term_full(phi, x, HS_, t.power, scale);
        else
            taylor_term_symmetric(phi, x, HS_, t.power, scale);
        phi += taylor_term_size(HS_, t.power, layout_);
    }
}

template <class T>
void recurrent_attention<T>::reset(int B, int T_cap) {
    T_cap_ = T_cap;
    heads_.assign(static_cast<std::size_t>(B) * NH_, head_state{});
    for (auto& st : heads_) {
        st.u.assign(HS_, T(0));
        if (finite_state()) {
            st.S.assign(F_ * HS_, T(0));
            st.z.assign(F_, T(0));
            st.phi_q.assign(F_, T(0));
            st.phi_k.assign(F_, T(0));
        } else {
            st.keys.assign(static_cast<std::size_t>(T_cap) * HS_, T(0));
            st.values.assign(static_cast<std::size_t>(T_cap) * HS_, T(0));
            st.s.assign(T_cap, T(0));
            st.w.assign(T_cap, T(0));
        }
    }
}

template <class T>
void recurrent_attention<T>::step(T* o, int b, int h, const T* q, const T* k, const T* v, T g_in, T g_out,
                                  const T* params) {
    head_state& st = heads_.at(static_cast<std::size_t>(b) * NH_ + h);
    if (finite_state())
        step_finite(st, o, q, k, v, g_in, g_out, params);
    else
        step_cache(st, o, q, k, v, g_in, g_out, params);
}

template <class T>
void recurrent_attention<T>::step_finite(head_state& st, T* o, const T* q, const T* k, const T* v, T g_in, T g_out,
                                         const T* params) {
    const int HS = HS_;
    const Eigen::Index F = static_cast<Eigen::Index>(F_);
    matrix_map<T> S(st.S.data(), F, HS);                                // (F, HS)
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> z(st.z.data(), F);  // (F)
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> pq(st.phi_q.data(), F), pk(st.phi_k.data(), F);
    Eigen::Map<const row_vector<T>> vt(v, HS);     // (HS)
    Eigen::Map<row_vector<T>> u(st.u.data(), HS);  // (HS)
    features(pk.data(), k, false);
    features(pq.data(), q, true);
    S.noalias() += pk * (g_in * vt);  // rank-1 update, (F, 1) x (1, HS)
    z += pk;
    u.noalias() = pq.transpose() * S;  // (1, F) x (F, HS)
    const T zt = pq.dot(z);
    ++st.count;
    denom_->forward_row(o, u.data(), zt, st.count, params, HS);
    for (int i = 0; i < HS; ++i) o[i] *= g_out;
}

template <class T>
void recurrent_attention<T>::step_cache(head_state& st, T* o, const T* q, const T* k, const T* v, T g_in, T g_out,
                                        const T* params) {
    const int HS = HS_;
    if (st.count >= T_cap_)
        throw std::length_error("recurrent_attention: key/value cache full at " + std::to_string(T_cap_) +
                                " positions");
    const int t = st.count++;
    T* kt = st.keys.data() + static_cast<std::size_t>(t) * HS;
    T* vt = st.values.data() + static_cast<std::size_t>(t) * HS;
    for (int i = 0; i < HS; ++i) {
        kt[i] = k[i];
        vt[i] = g_in * v[i];
    }
    const int n = st.count;
    // w (n): scores against the cache, clamped, then the kernel (which
    // subtracts the row max for exp with a scale-invariant denominator).
    const_matrix_map<T> K(st.keys.data(), n, HS), V(st.values.data(), n, HS);              // (n, HS)
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> s(st.s.data(), n), w(st.w.data(), n);  // (n)
    s.noalias() = (K * Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(q, HS)) * scale_;
    if (cfg_.clamp)
        for (int j = 0; j < n; ++j) s[j] = std::min(s[j], static_cast<T>(*cfg_.clamp));
    kernel_->forward_row(w.data(), s.data(), n);
    Eigen::Map<row_vector<T>> u(st.u.data(), HS);  // (HS)
    u.noalias() = w.transpose() * V;
    denom_->forward_row(o, u.data(), w.sum(), n, params, HS);
    for (int i = 0; i < HS; ++i) o[i] *= g_out;
}

template <class T>
void recurrent_attention<T>::forward(T* out, const attention_inputs<T>& in, int B, int Tn) {
    const int NH = NH_, HS = HS_, C = NH * HS;
    reset(B, Tn);
#pragma omp parallel for schedule(static) if (B * NH > 1)
    for (int bh = 0; bh < B * NH; ++bh) {
        const int b = bh / NH, h = bh % NH;
        for (int t = 0; t < Tn; ++t) {
            const long row = static_cast<long>(b) * Tn + t;
            const long off = row * C + h * HS;  // (N, C) index of (b, t, h, 0)
            const long gi = row * NH + h;       // (N, NH) index of (b, t, h)
            step(out + off, b, h, in.q + off, in.k + off, in.v + off, in_gate_ ? in.in_gate[gi] : T(1),
                 out_gate_ ? in.out_gate[gi] : T(1), in.denom_params);
        }
    }
}

#define ATTNLAB_INSTANTIATE_RECURRENT(T)                                                  \
    template void taylor_term_full<T>(T*, const T*, int, int, T);                         \
    template void taylor_term_symmetric<T>(T*, const T*, int, int, T);                    \
    template void taylor_term_symmetric_backward<T>(T*, const T*, const T*, int, int, T); \
    template class recurrent_attention<T>;

ATTNLAB_INSTANTIATE_RECURRENT(float)
ATTNLAB_INSTANTIATE_RECURRENT(double)

}  // namespace attnlab
