// The fused exp kernels (fused_exp.hpp). Every function below is inlined into
// one version per instruction set (ATTNLAB_VERSIONS), whose vectors V hold L
// lanes of T (the CPU's register width); a panel row of 32 keys is PV of them.
// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "fused_exp.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "attnlab/ops/small_gemm.hpp"

#include "../ops/exp_lanes.hpp"
#include "../ops/target_clones.hpp"

namespace attnlab::fused_exp {

namespace {

std::atomic<long> kernel_runs{0};

// Query rows that pass the keys together (a group): their scores (8, 32)
// are 16 AVX-512 registers of floats, their u (8, HS) 16 at a time. (4 rows
// measured slower at head sizes 16 and 32: fewer accumulators hide less of
// the multiply-add's latency.)
constexpr int group_rows = 8;
// Accumulators a product keeps in registers: 16 of AVX-512's 32, 8 of the others' 16.
template <int VB>
constexpr int accumulators = VB == 64 ? 16 : 8;
static_assert(backward_rows % group_rows == 0 && panel_keys % group_rows == 0);

template <class T, int VB>
struct lanes {
    using V = typename detail::simd<T, VB>::type;
    static constexpr int L = detail::simd<T, VB>::lanes;
    static constexpr int PV = panel_keys / L;  // vectors of a panel row
};

template <int Bytes>
struct int32_lanes {
    using type [[gnu::vector_size(Bytes)]] = std::int32_t;
};

template <class V>
[[gnu::always_inline]] inline V load(const void* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class V>
[[gnu::always_inline]] inline void store(void* p, V v) {
    std::memcpy(p, &v, sizeof v);
}

// exp of each lane: floats by exp_lanes (vector_math's bits), doubles by std::exp.
template <class T, int VB>
[[gnu::always_inline]] inline typename lanes<T, VB>::V exp_of(typename lanes<T, VB>::V x) {
    using V = typename lanes<T, VB>::V;
    if constexpr (std::is_same_v<T, float>) {
        return detail::exp_lanes<V, typename int32_lanes<VB>::type>(x);
    } else {
        for (int i = 0; i < lanes<T, VB>::L; ++i) x[i] = std::exp(x[i]);
        return x;
    }
}

// Lanes [c L, c L + L) of a panel row that are keys a row sees (index < n),
// as a select mask (only the diagonal's panels have unseen keys).
template <class T, int VB>
[[gnu::always_inline]] inline auto seen(int c, int n) {
    using V = typename lanes<T, VB>::V;
    constexpr int L = lanes<T, VB>::L;
    V key;
#pragma GCC unroll 16
    for (int i = 0; i < L; ++i) key[i] = static_cast<T>(i);
    return key < static_cast<T>(n - c * L);
}

// The largest and the sum of a vector's lanes, halving it (log2 L steps, not
// a chain of L). The max skips a NaN in the upper half only (as max_of, NaN
// rows are not served in any particular way).
template <class T, int VB>
[[gnu::always_inline]] inline T lane_max(typename detail::simd<T, VB>::type v) {
    if constexpr (VB == 2 * static_cast<int>(sizeof(T))) {
        return v[0] < v[1] ? v[1] : v[0];
    } else {
        using H = typename detail::simd<T, VB / 2>::type;
        H lo, hi;
        std::memcpy(&lo, &v, sizeof lo);
        std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
        return lane_max<T, VB / 2>(lo < hi ? hi : lo);
    }
}
template <class T, int VB>
[[gnu::always_inline]] inline T lane_sum(typename detail::simd<T, VB>::type v) {
    if constexpr (VB == 2 * static_cast<int>(sizeof(T))) {
        return v[0] + v[1];
    } else {
        using H = typename detail::simd<T, VB / 2>::type;
        H lo, hi;
        std::memcpy(&lo, &v, sizeof lo);
        std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
        return lane_sum<T, VB / 2>(lo + hi);
    }
}

// S (8, 32) = scale X P, X the rows x[0..8) (HS each), P a panel (HS, 32);
// then min(S, clamp) with the clamp on. The forward and the backward
// compute scores with this one function: the same bits.
template <class T, int VB, int HS>
[[gnu::always_inline]] inline void panel_product(T* S, const T* const* x, const T* panel, T scale, bool clamp_on,
                                                 T clamp) {
    using V = typename lanes<T, VB>::V;
    constexpr int L = lanes<T, VB>::L, PV = lanes<T, VB>::PV;
    constexpr int G = std::min(PV, accumulators<VB> / group_rows);  // vectors of keys at a time
    for (int g = 0; g < PV; g += G) {
        V acc[group_rows][G] = {};
        for (int i = 0; i < HS; ++i) {
            V b[G];
            for (int c = 0; c < G; ++c) b[c] = load<V>(panel + i * panel_keys + (g + c) * L);
            for (int r = 0; r < group_rows; ++r) {
                const T a = x[r][i];
                for (int c = 0; c < G; ++c) acc[r][c] += a * b[c];
            }
        }
        for (int r = 0; r < group_rows; ++r)
            for (int c = 0; c < G; ++c) {
                V s = acc[r][c] * scale;
                if (clamp_on) s = clamp < s ? V{} + clamp : s;
                store(S + r * panel_keys + (g + c) * L, s);
            }
    }
}

// C (rows <= group_rows of HS, row stride ldc) += alpha sum_{k < n} A(r, k) B_k,
// A(r, k) from a buffer of rows of 32: A[r 32 + k], or A[k 32 + r] when
// TA (the transposed use: ds^T, w^T), and B_k the row B + k ldb (HS). The
// sum runs in registers, column groups of C at a time; C is read and written
// once per call.
template <class T, int VB, int HS, bool TA>
[[gnu::always_inline]] inline void add_rows_product(T* C, long ldc, int rows, const T* A, const T* B, long ldb, int n,
                                                    T alpha) {
    using V = typename lanes<T, VB>::V;
    constexpr int L = lanes<T, VB>::L, HV = HS / L;
    constexpr int CG = std::min(HV, accumulators<VB> / group_rows);  // vectors of C at a time
    constexpr int a_r = TA ? 1 : panel_keys, a_k = TA ? panel_keys : 1;
    static_assert(HS % L == 0 && HV % CG == 0);
    for (int g = 0; g < HV; g += CG) {
        V acc[group_rows][CG] = {};
        for (int k = 0; k < n; ++k) {
            V b[CG];
            for (int c = 0; c < CG; ++c) b[c] = load<V>(B + k * ldb + (g + c) * L);
            for (int r = 0; r < group_rows; ++r) {
                const T a = A[r * a_r + k * a_k];
                for (int c = 0; c < CG; ++c) acc[r][c] += a * b[c];
            }
        }
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < CG; ++c) {
                T* dst = C + r * ldc + (g + c) * L;
                store(dst, load<V>(dst) + acc[r][c] * alpha);
            }
    }
}

// A row's online softmax state in the forward: max m so far, the first key
// holding it, and the sum of its weights (L lanes, rescaled with u).
template <class T, int VB>
struct row_state {
    T m = -std::numeric_limits<T>::infinity();
    T argmax = -1;
    typename lanes<T, VB>::V sum = {};
};

// One row's scores s (32) of keys [p0, p0 + 32), n of them seen, into
// weights exp(s - m) in place (0 where unseen). A panel whose max is above
// m raises it (strictly: the first key holding the max stays) and rescales
// what the row has summed, u (HS) and the sum, by exp(m_old - m_new).
template <class T, int VB, int HS>
[[gnu::always_inline]] inline void weigh_row(T* s, T* u, row_state<T, VB>& st, int p0, int n) {
    using V = typename lanes<T, VB>::V;
    constexpr int L = lanes<T, VB>::L, PV = lanes<T, VB>::PV;
    constexpr T minus_inf = -std::numeric_limits<T>::infinity();
    const bool all_seen = n >= panel_keys;
    V x[PV];
    for (int c = 0; c < PV; ++c) x[c] = load<V>(s + c * L);
    if (!all_seen)
        for (int c = 0; c < PV; ++c) x[c] = seen<T, VB>(c, n) ? x[c] : V{} + minus_inf;
    V top = x[0];
    for (int c = 1; c < PV; ++c) top = top < x[c] ? x[c] : top;
    const T panel_max = lane_max<T, VB>(top);
    if (panel_max > st.m) {
        const T rescale = std::exp(st.m - panel_max);  // 0 on the row's first panel
        for (int i = 0; i < HS; ++i) u[i] *= rescale;
        st.sum *= rescale;
        st.m = panel_max;
        int j = 0;
        while (j < n - 1 && !(s[j] == panel_max)) ++j;
        st.argmax = static_cast<T>(p0 + j);
    }
    for (int c = 0; c < PV; ++c) {
        V w = exp_of<T, VB>(x[c] - st.m);
        if (!all_seen) w = seen<T, VB>(c, n) ? w : V{};  // exp's clamp leaves 1e-38 for -inf
        st.sum += w;
        store(s + c * L, w);
    }
}

// Query rows whose state (u, max, sum) stays in L1 while a panel of keys
// and their values pass: each panel is read once per 32 rows, not per 8.
constexpr int forward_rows = 32;
static_assert(forward_rows % group_rows == 0);

// Query rows [t0, t0 + 32) (fewer at the end) against every key they see,
// a panel at a time, 8 rows at a time (a group's missing rows at the end
// are copies of the last row, their results dropped).
template <class T, int VB, int HS>
[[gnu::always_inline]] inline void forward_block(const head_operands<T>& h, const forward_outputs<T>& o, int t0) {
    const int rows = std::min(forward_rows, h.Tn - t0), last = t0 + rows - 1;
    alignas(64) T S[group_rows * panel_keys];  // (8, 32) a group's scores, then weights
    alignas(64) T U[forward_rows * HS] = {};   // (32, HS) sum_j w_tj v'_j
    row_state<T, VB> st[forward_rows];
    for (int p0 = 0; p0 <= last; p0 += panel_keys) {
        const int first = std::max(0, p0 - t0) / group_rows * group_rows;  // rows before it see no key of the panel
        for (int r0 = first; r0 < rows; r0 += group_rows) {
            const T* q[group_rows];  // (8) rows of HS
            int t[group_rows];
            for (int r = 0; r < group_rows; ++r) {
                t[r] = std::min(t0 + r0 + r, last);
                q[r] = h.q + static_cast<long>(t[r]) * h.ld_qk;
            }
            panel_product<T, VB, HS>(S, q, h.k_panels + static_cast<long>(p0) * HS, h.scale, h.clamp_on, h.clamp);
            for (int r = 0; r < group_rows; ++r)
                weigh_row<T, VB, HS>(S + r * panel_keys, U + (r0 + r) * HS, st[r0 + r], p0,
                                     std::min(panel_keys, t[r] + 1 - p0));
            const int keys = std::min(panel_keys, t[group_rows - 1] + 1 - p0);  // seen by the group's last row
            add_rows_product<T, VB, HS, false>(U + r0 * HS, HS, group_rows, S, h.v + static_cast<long>(p0) * h.ld_v,
                                               h.ld_v, keys, T(1));
        }
    }
    for (int r = 0; r < rows; ++r) {
        const int tr = t0 + r;
        std::copy(U + r * HS, U + (r + 1) * HS, o.u + static_cast<long>(tr) * HS);
        if (o.z) o.z[tr] = lane_sum<T, VB>(st[r].sum);
        o.row_max[tr] = st[r].m;
        o.argmax[tr] = st[r].argmax;
    }
}

template <class T, int VB, int HS>
[[gnu::always_inline]] inline void forward_head(const head_operands<T>& h, const forward_outputs<T>& o) {
    for (int t0 = 0; t0 < h.Tn; t0 += forward_rows) forward_block<T, VB, HS>(h, o, t0);
}

// One row's w (32) and ds (32) of keys [p0, p0 + 32), n of them seen, from
// its scores s and dw = du_t . v'_j, in place: w = exp(s - m_t),
// ds = w (dw + dz_t), 0 where unseen and, with the clamp, where s is at it.
// Returns sum_j w (dw + dz_t) over the seen keys (the row max's term: before the clamp's zeros).
template <class T, int VB>
[[gnu::always_inline]] inline T weigh_row_backward(T* s, T* dw, T m, T dz, int n, bool clamp_on, T clamp) {
    using V = typename lanes<T, VB>::V;
    constexpr int L = lanes<T, VB>::L, PV = lanes<T, VB>::PV;
    const bool all_seen = n >= panel_keys;
    V through = {};
    for (int c = 0; c < PV; ++c) {
        const V x = load<V>(s + c * L);
        V w = exp_of<T, VB>(x - m);
        if (!all_seen) w = seen<T, VB>(c, n) ? w : V{};
        V ds = w * (load<V>(dw + c * L) + dz);
        through += ds;
        if (clamp_on) ds = x < clamp ? ds : V{};  // min(s, c) passes the gradient only below c
        store(s + c * L, w);
        store(dw + c * L, ds);
    }
    return lane_sum<T, VB>(through);
}

// Query rows [t0, t0 + 64) (fewer at the end) against every key they see,
// a panel at a time: the rows' w and ds (64, 32) for the panel, dq of each
// group of 8 rows as soon as its ds is known, then dk and dv' of the panel's keys.
template <class T, int VB, int HS>
[[gnu::always_inline]] inline void backward_block(const head_operands<T>& h, const backward_inputs<T>& in,
                                                  const backward_outputs<T>& o, int t0) {
    const int rows = std::min(backward_rows, h.Tn - t0), last = t0 + rows - 1;
    const long ld = h.ld_qk;
    alignas(64) T W[backward_rows * panel_keys];   // (64, 32) w, 0 where unseen
    alignas(64) T dS[backward_rows * panel_keys];  // (64, 32) dw, then ds
    T through[backward_rows] = {};                 // (64) sum_j ds_tj of each row
    for (int p0 = 0; p0 <= last; p0 += panel_keys) {
        const int keys = std::min(panel_keys, last + 1 - p0);
        const int first = std::max(0, p0 - t0) / group_rows * group_rows;  // rows before it see no key of the panel
        for (int r0 = first; r0 < rows; r0 += group_rows) {
            const T* q[group_rows];   // (8) rows of HS
            const T* du[group_rows];  // (8) rows of HS
            int t[group_rows];
            for (int r = 0; r < group_rows; ++r) {
                t[r] = std::min(t0 + r0 + r, last);
                q[r] = h.q + t[r] * ld;
                du[r] = in.du + static_cast<long>(t[r]) * HS;
            }
            T* w = W + r0 * panel_keys;  // (8, 32)
            T* ds = dS + r0 * panel_keys;
            panel_product<T, VB, HS>(w, q, h.k_panels + static_cast<long>(p0) * HS, h.scale, h.clamp_on, h.clamp);
            panel_product<T, VB, HS>(ds, du, in.v_panels + static_cast<long>(p0) * HS, T(1), false, T(0));
            const int group = std::min(group_rows, rows - r0);  // the rest: copies of the last row, not summed
            for (int r = 0; r < group; ++r) {
                const T dz = in.dz ? in.dz[t[r]] : T(0);
                through[r0 + r] += weigh_row_backward<T, VB>(w + r * panel_keys, ds + r * panel_keys, in.row_max[t[r]],
                                                             dz, t[r] + 1 - p0, h.clamp_on, h.clamp);
            }
            // dq (group, HS) += scale ds (group, keys) K (keys, HS)
            add_rows_product<T, VB, HS, false>(o.dq + (t0 + r0) * ld, ld, group, ds, h.k + p0 * ld, ld, keys, h.scale);
        }
        const int n = rows - first;  // rows that see the panel
        for (int j0 = 0; j0 < keys; j0 += group_rows) {
            const int group = std::min(group_rows, keys - j0);
            // dk (group keys, HS) += scale ds^T Q,  dv' (group keys, HS) += w^T dU, over the rows that see them
            add_rows_product<T, VB, HS, true>(o.dk + (p0 + j0) * ld, ld, group, dS + first * panel_keys + j0,
                                              h.q + (t0 + first) * ld, ld, n, h.scale);
            add_rows_product<T, VB, HS, true>(o.dv + static_cast<long>(p0 + j0) * HS, HS, group,
                                              W + first * panel_keys + j0, in.du + static_cast<long>(t0 + first) * HS,
                                              HS, n, T(1));
        }
    }
    if (!in.max_grad) return;
    for (int r = 0; r < rows; ++r) {  // the row max's term
        const long tr = t0 + r;
        if (h.clamp_on && !(in.row_max[tr] < h.clamp)) continue;
        const long a = static_cast<long>(in.argmax[tr]);
        if (a < 0) continue;  // a row of NaN: no max
        const T c = h.scale * through[r];
        T* dq_t = o.dq + tr * ld;
        T* dk_a = o.dk + a * ld;
        const T* q_t = h.q + tr * ld;
        const T* k_a = h.k + a * ld;
        for (int i = 0; i < HS; ++i) {
            dq_t[i] -= c * k_a[i];
            dk_a[i] -= c * q_t[i];
        }
    }
}

template <class T, int VB, int HS>
[[gnu::always_inline]] inline void backward_head(const head_operands<T>& h, const backward_inputs<T>& in,
                                                 const backward_outputs<T>& o) {
    for (int t0 = 0; t0 < h.Tn; t0 += backward_rows) backward_block<T, VB, HS>(h, in, o, t0);
}

// The head size as a constant of each version.
template <class T, int VB>
[[gnu::always_inline]] inline void forward_at(const head_operands<T>& h, const forward_outputs<T>& o) {
    switch (h.HS) {
        case 16: forward_head<T, VB, 16>(h, o); break;
        case 32: forward_head<T, VB, 32>(h, o); break;
        case 64: forward_head<T, VB, 64>(h, o); break;
        default: break;
    }
}

template <class T, int VB>
[[gnu::always_inline]] inline void backward_at(const head_operands<T>& h, const backward_inputs<T>& in,
                                               const backward_outputs<T>& o) {
    switch (h.HS) {
        case 16: backward_head<T, VB, 16>(h, in, o); break;
        case 32: backward_head<T, VB, 32>(h, in, o); break;
        case 64: backward_head<T, VB, 64>(h, in, o); break;
        default: break;
    }
}

ATTNLAB_VERSIONS(fused_forward_float, (forward_at<float, bytes>),
                 (const head_operands<float>& h, const forward_outputs<float>& o), (h, o))
ATTNLAB_VERSIONS(fused_forward_double, (forward_at<double, bytes>),
                 (const head_operands<double>& h, const forward_outputs<double>& o), (h, o))
ATTNLAB_VERSIONS(fused_backward_float, (backward_at<float, bytes>),
                 (const head_operands<float>& h, const backward_inputs<float>& in, const backward_outputs<float>& o),
                 (h, in, o))
ATTNLAB_VERSIONS(fused_backward_double, (backward_at<double, bytes>),
                 (const head_operands<double>& h, const backward_inputs<double>& in, const backward_outputs<double>& o),
                 (h, in, o))

// A whole panel is the transpose of its 32 rows (small_gemm.hpp's
// transpose_into, in 8 x 8 vector tiles); the last, partial one is padded
// with keys of 0.
template <class T>
void pack_panels_of(T* panels, const T* x, int ld, int Tn, int HS) {
    for (int p0 = 0; p0 < Tn; p0 += panel_keys) {
        T* panel = panels + static_cast<long>(p0) * HS;  // (HS, 32)
        const T* rows = x + static_cast<long>(p0) * ld;  // (32, HS), rows ld apart
        if (p0 + panel_keys <= Tn) {
            transpose_into(panel, rows, panel_keys, HS, ld);
            continue;
        }
        for (int i = 0; i < HS; ++i)
            for (int j = 0; j < panel_keys; ++j)
                panel[i * panel_keys + j] = p0 + j < Tn ? rows[static_cast<long>(j) * ld + i] : T(0);
    }
}

}  // namespace

bool serves_head_size(int HS) { return HS == 16 || HS == 32 || HS == 64; }

std::size_t panel_elements(int T_cap, int HS) {
    const std::size_t panels = (static_cast<std::size_t>(T_cap) + panel_keys - 1) / panel_keys;
    return panels * panel_keys * static_cast<std::size_t>(HS);
}

void pack_panels(float* panels, const float* x, int ld, int Tn, int HS) { pack_panels_of(panels, x, ld, Tn, HS); }
void pack_panels(double* panels, const double* x, int ld, int Tn, int HS) { pack_panels_of(panels, x, ld, Tn, HS); }

void forward(const head_operands<float>& h, const forward_outputs<float>& out) {
    kernel_runs.fetch_add(1, std::memory_order_relaxed);
    fused_forward_float(h, out);
}
void forward(const head_operands<double>& h, const forward_outputs<double>& out) {
    kernel_runs.fetch_add(1, std::memory_order_relaxed);
    fused_forward_double(h, out);
}
void backward(const head_operands<float>& h, const backward_inputs<float>& in, const backward_outputs<float>& out) {
    kernel_runs.fetch_add(1, std::memory_order_relaxed);
    fused_backward_float(h, in, out);
}
void backward(const head_operands<double>& h, const backward_inputs<double>& in, const backward_outputs<double>& out) {
    kernel_runs.fetch_add(1, std::memory_order_relaxed);
    fused_backward_double(h, in, out);
}

long runs() { return kernel_runs.load(std::memory_order_relaxed); }

}  // namespace attnlab::fused_exp
