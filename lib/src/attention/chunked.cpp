// The chunked form (chunked.hpp): which variants have it, its cost model, and
// the attention layer's chunked numerator and its backward. Per head, with
// chunks c of Cn rows, P_q, P_k (rows, F) a chunk's state features and
// V' = g_in V:
//   forward   U_c = W_cc V'_c + P_q S,  z_c = W_cc 1 + P_q zs       (S, zs: the chunks before c)
//             S += P_k^T V'_c,  zs += P_k^T 1
//   backward  (du, dz given) a forward sweep recomputes S, zs:
//               dP_q = dU_c S^T + dz_c zs^T                         -> dq (or dphi(q))
//             a reverse sweep carries dS = sum over later chunks of P_q^T dU, dzs = P_q^T dz:
//               the diagonal block as the quadratic form's (block_numerator_backward)
//               dP_k = V'_c dS^T + 1 dzs^T,  dV'_c += P_k dS          -> dk (or dphi(k))
//               dS += P_q^T dU_c,  dzs += P_q^T dz_c
// No state is kept per chunk: the backward recomputes it (one more F x HS
// product per row), so memory stays (Cn, F) + (F, HS) per thread.
#include "attnlab/attention/chunked.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attnlab/attention/attention.hpp"
#include "attnlab/attention/recurrent.hpp"
#include "attnlab/util/shapes.hpp"

namespace attnlab {

std::size_t chunked_feature_size(const attention_config& cfg, int HS) {
    return has_chunked_form(cfg) ? feature_size(cfg, HS, state_layout::symmetric) : 0;
}

form_costs form_costs_of(const attention_config& cfg, int T, int HS) {
    form_costs c;
    const double per_product = 7.0 * HS;  // 2 products forward, 5 backward, HS multiply-adds each
    constexpr int block_rows = attention_scratch<float>::block_rows;
    double pairs = 0;  // (row, key) pairs the quadratic form's row blocks compute
    for (int t0 = 0; t0 < T; t0 += block_rows)
        pairs += double(std::min(T, t0 + block_rows) - t0) * std::min(T, t0 + block_rows);
    c.quadratic = per_product * pairs;
    if (!has_chunked_form(cfg) || cfg.chunk < 1) {
        c.chunked = std::numeric_limits<double>::infinity();
        return c;
    }
    double diagonal = 0;  // pairs of the chunks' diagonal blocks
    for (int t0 = 0; t0 < T; t0 += cfg.chunk) diagonal += std::pow(double(std::min(T, t0 + cfg.chunk) - t0), 2);
    c.chunked = per_product * (diagonal + chunked_state_cost * double(chunked_feature_size(cfg, HS)) * T);
    return c;
}

parallel_form choose_form(const attention_config& cfg, int T, int HS) {
    if (cfg.form != parallel_form::automatic) return cfg.form;
    const form_costs c = form_costs_of(cfg, T, HS);
    return c.chunked < c.quadratic ? parallel_form::chunked : parallel_form::quadratic;
}

template <class T>
void attention_layer<T>::state_features(T* p, const T* x, const T* fx, int t0, int t1, bool query) const {
    const int HS = HS_, C = NH_ * HS;
    const Eigen::Index F = static_cast<Eigen::Index>(F_);
    matrix_map<T> P(p, t1 - t0, F);  // (rows, F)
    if (features_) {                 // F = HS: the feature map's own phi
        P = const_matrix_map<T>(fx + static_cast<long>(t0) * HS, t1 - t0, HS);
        return;
    }
    for (int t = t0; t < t1; ++t) {
        T* row = &P(t - t0, 0);
        for (const series_term& term : terms_) {
            const T scale = query ? static_cast<T>(term.coefficient) : T(1);
            taylor_term_symmetric(row, x + static_cast<long>(t) * C, HS, term.power, scale);
            row += taylor_term_size(HS, term.power, state_layout::symmetric);
        }
    }
}

template <class T>
void attention_layer<T>::state_features_backward(T* dx, T* dfx, const T* dp, const T* x, int t0, int t1,
                                                 bool query) const {
    const int HS = HS_, C = NH_ * HS;
    const Eigen::Index F = static_cast<Eigen::Index>(F_);
    const_matrix_map<T> dP(dp, t1 - t0, F);  // (rows, F)
    if (features_) {
        matrix_map<T>(dfx + static_cast<long>(t0) * HS, t1 - t0, HS) += dP;
        return;
    }
    for (int t = t0; t < t1; ++t) {
        const T* row = dp + static_cast<long>(t - t0) * F;
        for (const series_term& term : terms_) {
            const T scale = query ? static_cast<T>(term.coefficient) : T(1);
            taylor_term_symmetric_backward(dx + static_cast<long>(t) * C, row, x + static_cast<long>(t) * C, HS,
                                           term.power, scale);
            row += taylor_term_size(HS, term.power, state_layout::symmetric);
        }
    }
}

template <class T>
void attention_layer<T>::numerator_chunked(T* u, T* z, attention_scratch<T>& scratch, const T* q, const T* k,
                                           const T* fq, const T* fk, int Tn) const {
    using vector_map = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
    const int HS = HS_, Cn = std::min(cfg_.chunk, Tn);
    const Eigen::Index F = static_cast<Eigen::Index>(F_);
    matrix_map<T> U(u, Tn, HS);                         // (T, HS)
    const_matrix_map<T> Vg(scratch.Vg.data(), Tn, HS);  // (T, HS)
    matrix_map<T> S(scratch.St.data(), F, HS);          // (F, HS)
    vector_map zs(scratch.zs.data(), F);                // (F)
    S.setZero();
    zs.setZero();
    for (int c0 = 0; c0 < Tn; c0 += Cn) {
        const int c1 = std::min(Tn, c0 + Cn), rows = c1 - c0;
        block_numerator(u, z, scratch, scratch_block(scratch), q, fq, Tn, c0, c1, c0, c1);
        if (c0 > 0) {                                      // the chunks before: through the state
            matrix_map<T> Pq(scratch.Pq.data(), rows, F);  // (rows, F)
            state_features(Pq.data(), q, fq, c0, c1, true);
            U.middleRows(c0, rows).noalias() += Pq * S;
            if (needs_weight_sum_) vector_map(z + c0, rows).noalias() += Pq * zs;
        }
        if (c1 < Tn) {                                     // this chunk's keys, for the chunks after
            matrix_map<T> Pk(scratch.Pk.data(), rows, F);  // (rows, F)
            state_features(Pk.data(), k, fk, c0, c1, false);
            S.noalias() += Pk.transpose() * Vg.middleRows(c0, rows);
            zs += Pk.colwise().sum().transpose();
        }
    }
}

template <class T>
void attention_layer<T>::numerator_backward_chunked(T* dq, T* dk, attention_scratch<T>& scratch, const T* q, const T* k,
                                                    const T* fq, const T* fk, int Tn) const {
    using vector_map = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
    const int HS = HS_, Cn = std::min(cfg_.chunk, Tn);
    const Eigen::Index F = static_cast<Eigen::Index>(F_);
    const bool need_z = needs_weight_sum_;
    const_matrix_map<T> dU(scratch.dU.data(), Tn, HS), Vg(scratch.Vg.data(), Tn, HS);  // (T, HS)
    matrix_map<T> dVg(scratch.dVg.data(), Tn, HS);                                     // (T, HS)
    vector_map dz(scratch.dz.data(), Tn);                                              // (T)
    matrix_map<T> S(scratch.St.data(), F, HS), dS(scratch.dSt.data(), F, HS);          // (F, HS)
    vector_map zs(scratch.zs.data(), F), dzs(scratch.dzs.data(), F);                   // (F)

    // Forward sweep: the state before each chunk again, and dP_q from it.
    S.setZero();
    zs.setZero();
    for (int c0 = 0; c0 < Tn; c0 += Cn) {
        const int c1 = std::min(Tn, c0 + Cn), rows = c1 - c0;
        if (c0 > 0) {
            matrix_map<T> dP(scratch.dP.data(), rows, F);  // (rows, F)
            dP.noalias() = dU.middleRows(c0, rows) * S.transpose();
            if (need_z) dP.noalias() += dz.segment(c0, rows) * zs.transpose();
            state_features_backward(dq, scratch.dFq.data(), dP.data(), q, c0, c1, true);
        }
        if (c1 < Tn) {
            matrix_map<T> Pk(scratch.Pk.data(), rows, F);
            state_features(Pk.data(), k, fk, c0, c1, false);
            S.noalias() += Pk.transpose() * Vg.middleRows(c0, rows);
            zs += Pk.colwise().sum().transpose();
        }
    }

    // Reverse sweep: each chunk's diagonal block, and its keys' share of the
    // later chunks' gradient dS, dzs.
    dS.setZero();
    dzs.setZero();
    for (int c0 = (Tn - 1) / Cn * Cn; c0 >= 0; c0 -= Cn) {
        const int c1 = std::min(Tn, c0 + Cn), rows = c1 - c0;
        block_numerator_backward(dq, dk, scratch, scratch_block(scratch), q, k, fq, fk, Tn, c0, c1, c0, c1);
        if (c1 < Tn) {
            matrix_map<T> Pk(scratch.Pk.data(), rows, F), dP(scratch.dP.data(), rows, F);  // (rows, F)
            state_features(Pk.data(), k, fk, c0, c1, false);
            dP.noalias() = Vg.middleRows(c0, rows) * dS.transpose();
            if (need_z) dP.rowwise() += dzs.transpose();
            dVg.middleRows(c0, rows).noalias() += Pk * dS;
            state_features_backward(dk, scratch.dFk.data(), dP.data(), k, c0, c1, false);
        }
        if (c0 > 0) {
            matrix_map<T> Pq(scratch.Pq.data(), rows, F);
            state_features(Pq.data(), q, fq, c0, c1, true);
            dS.noalias() += Pq.transpose() * dU.middleRows(c0, rows);
            if (need_z) dzs.noalias() += Pq.transpose() * dz.segment(c0, rows);
        }
    }
}

#define ATTNLAB_INSTANTIATE_CHUNKED(T)                                                                               \
    template void attention_layer<T>::state_features(T*, const T*, const T*, int, int, bool) const;                  \
    template void attention_layer<T>::state_features_backward(T*, T*, const T*, const T*, int, int, bool) const;     \
    template void attention_layer<T>::numerator_chunked(T*, T*, attention_scratch<T>&, const T*, const T*, const T*, \
                                                        const T*, int) const;                                        \
    template void attention_layer<T>::numerator_backward_chunked(T*, T*, attention_scratch<T>&, const T*, const T*,  \
                                                                 const T*, const T*, int) const;

ATTNLAB_INSTANTIATE_CHUNKED(float)
ATTNLAB_INSTANTIATE_CHUNKED(double)

}  // namespace attnlab
