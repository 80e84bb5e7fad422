// Parallel form of causal attention for a (numerator, denominator) variant.
// Backward, per head (rows t, columns j <= t), with V' = g_in * V:
//   dd_t = g_out_t dout_t,  dg_out_t += dout_t . D(u_t)
//   (du_t, dz_t) = D'(dd_t)
//   dw_tj = du_t . v'_j + dz_t          (dz_t because z_t = sum_j w_tj)
//   dv'_j = sum_t w_tj du_t;  dv_j += g_in_j dv'_j;  dg_in_j += dv'_j . v_j
//   score kernels: ds_tj = dw_tj f'(s_tj) [s_tj < clamp];
//                  dq_t += ds_t. K / sqrt(HS),  dk_j += ds_.j^T Q / sqrt(HS)
//   feature maps:  dphi(q_t) = dw_t. Phi(K),  dphi(k_j) = dw_.j^T Phi(Q), then phi'
#include "attnlab/attention/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnlab/util/shapes.hpp"

namespace attnlab {

namespace {
// Below this many multiply-adds per call the threads cost more than they save.
constexpr long parallel_threshold = 1L << 16;
long attention_work(int B, int NH, int Tn, int HS) { return static_cast<long>(B) * NH * Tn * Tn * HS; }
}  // namespace

template <class T>
void attention_cache<T>::resize(int B_, int T_, int NH_, int HS_, int P) {
    B = B_; T_cap = T_; NH = NH_; HS = HS_;
    const size_t bh = static_cast<size_t>(B) * NH;
    scores.assign(bh * T_cap * T_cap, T(0));
    weights.assign(bh * T_cap * T_cap, T(0));
    wsum.assign(bh * T_cap, T(0));
    numer.assign(bh * T_cap * HS, T(0));
    dparams.assign(bh * P, T(0));
    nonpositive_wsum.assign(bh, 0);
    min_abs_wsum.assign(bh, std::numeric_limits<T>::infinity());
}

template <class T>
long attention_cache<T>::nonpositive_rows() const {
    long n = 0;
    for (long c : nonpositive_wsum) n += c;
    return n;
}

template <class T>
T attention_cache<T>::min_abs_denominator() const {
    T m = std::numeric_limits<T>::infinity();
    for (T z : min_abs_wsum) m = std::min(m, z);
    return m;
}

template <class T>
attention_layer<T>::attention_layer(const attention_config& cfg, int NH, int HS)
    : NH_(NH), HS_(HS), scale_(T(1) / std::sqrt(T(HS))), clamp_on_(cfg.clamp.has_value()),
      clamp_(static_cast<T>(cfg.clamp.value_or(0.0))), in_gate_(cfg.in_gate), out_gate_(uses_out_gate(cfg)),
      kernel_(make_score_kernel<T>(cfg)), features_(make_feature_map<T>(cfg)), denom_(make_denominator<T>(cfg)) {}

template <class T>
void attention_layer<T>::init_cache(attention_cache<T>& cache, int B, int T_cap) const {
    cache.resize(B, T_cap, NH_, HS_, denominator_param_count());
    if (features_) {
        const size_t n = static_cast<size_t>(B) * NH_ * T_cap * HS_;
        cache.phi_q.assign(n, T(0));
        cache.phi_k.assign(n, T(0));
    }
}

template <class T>
void attention_layer<T>::forward(T* out, attention_cache<T>& cache, const attention_inputs<T>& in, int B,
                                 int Tn) const {
    const int NH = NH_, HS = HS_, C = NH * HS;
    const bool need_z = denom_->uses_weight_sum();
#pragma omp parallel if (attention_work(B, NH, Tn, HS) > parallel_threshold)
    {
        row_matrix<T> Vg(in_gate_ ? Tn : 0, HS);  // per-thread scratch: g_in * V
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; ++bh) {
            const int b = bh / NH, h = bh % NH;
            const long off = static_cast<long>(b) * Tn * C + h * HS;
            const long gate_off = static_cast<long>(b) * Tn * NH + h;  // (N, NH) index of (b, t=0, h)
            const_strided_map<T> Q(in.q + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
            const_strided_map<T> K(in.k + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
            const_strided_map<T> V(in.v + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
            strided_map<T> O(out + off, Tn, HS, Eigen::OuterStride<>(C));         // (T, HS)
            const size_t tt = static_cast<size_t>(bh) * cache.T_cap * cache.T_cap;
            const size_t th = static_cast<size_t>(bh) * cache.T_cap * HS;
            matrix_map<T> W(cache.weights.data() + tt, Tn, Tn);  // (T, T)
            matrix_map<T> U(cache.numer.data() + th, Tn, HS);    // (T, HS)
            T* z = cache.wsum.data() + static_cast<size_t>(bh) * cache.T_cap;  // (T)

            if (kernel_) {
                matrix_map<T> S(cache.scores.data() + tt, Tn, Tn);  // (T, T)
                S.noalias() = (Q * K.transpose()) * scale_;
                for (int t = 0; t < Tn; ++t) {
                    if (clamp_on_)
                        for (int j = 0; j <= t; ++j) S(t, j) = std::min(S(t, j), clamp_);
                    kernel_->forward_row(&W(t, 0), &S(t, 0), t + 1);
                }
            } else {
                matrix_map<T> Fq(cache.phi_q.data() + th, Tn, HS), Fk(cache.phi_k.data() + th, Tn, HS);
                for (int t = 0; t < Tn; ++t) {
                    features_->forward(&Fq(t, 0), Q.row(t).data(), HS);
                    features_->forward(&Fk(t, 0), K.row(t).data(), HS);
                }
                W.noalias() = Fq * Fk.transpose();
            }
            long nonpositive = 0;
            T min_abs = std::numeric_limits<T>::infinity();
            for (int t = 0; t < Tn; ++t) {
                for (int j = t + 1; j < Tn; ++j) W(t, j) = T(0);
                if (need_z) {
                    z[t] = W.row(t).head(t + 1).sum();
                    const T divisor = z[t] + denom_->weight_sum_offset();
                    nonpositive += !(divisor > T(0));
                    min_abs = std::min(min_abs, std::abs(divisor));
                }
            }
            cache.nonpositive_wsum[bh] = nonpositive;
            cache.min_abs_wsum[bh] = min_abs;
            if (in_gate_) {
                for (int t = 0; t < Tn; ++t) Vg.row(t) = V.row(t) * in.in_gate[gate_off + static_cast<long>(t) * NH];
                U.noalias() = W.template triangularView<Eigen::Lower>() * Vg;
            } else {
                U.noalias() = W.template triangularView<Eigen::Lower>() * V;
            }
            for (int t = 0; t < Tn; ++t) {
                denom_->forward_row(&O(t, 0), &U(t, 0), need_z ? z[t] : T(0), t + 1, in.denom_params, HS);
                if (out_gate_) O.row(t) *= in.out_gate[gate_off + static_cast<long>(t) * NH];
            }
        }
    }
}

template <class T>
void attention_layer<T>::backward(const attention_grads<T>& grads, const T* dout, attention_cache<T>& cache,
                                  const attention_inputs<T>& in, int B, int Tn) const {
    const int NH = NH_, HS = HS_, C = NH * HS;
    const int P = denominator_param_count();
    const bool need_z = denom_->uses_weight_sum();
    std::fill(cache.dparams.begin(), cache.dparams.end(), T(0));
#pragma omp parallel if (attention_work(B, NH, Tn, HS) > parallel_threshold)
    {
        // per-thread scratch
        row_matrix<T> dU(Tn, HS), dW(Tn, Tn), dVg(Tn, HS), Vg(in_gate_ ? Tn : 0, HS);
        row_matrix<T> dFq(features_ ? Tn : 0, HS), dFk(features_ ? Tn : 0, HS);
        std::vector<T> dd(HS), o_row(HS), dz(Tn);
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; ++bh) {
            const int b = bh / NH, h = bh % NH;
            const long off = static_cast<long>(b) * Tn * C + h * HS;
            const long gate_off = static_cast<long>(b) * Tn * NH + h;
            const_strided_map<T> Q(in.q + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> K(in.k + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> V(in.v + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> dO(dout + off, Tn, HS, Eigen::OuterStride<>(C));
            strided_map<T> dQ(grads.dq + off, Tn, HS, Eigen::OuterStride<>(C));
            strided_map<T> dK(grads.dk + off, Tn, HS, Eigen::OuterStride<>(C));
            strided_map<T> dV(grads.dv + off, Tn, HS, Eigen::OuterStride<>(C));
            const size_t tt = static_cast<size_t>(bh) * cache.T_cap * cache.T_cap;
            const size_t th = static_cast<size_t>(bh) * cache.T_cap * HS;
            const_matrix_map<T> W(cache.weights.data() + tt, Tn, Tn);
            const_matrix_map<T> U(cache.numer.data() + th, Tn, HS);
            const T* z = cache.wsum.data() + static_cast<size_t>(bh) * cache.T_cap;
            T* dparams = P ? cache.dparams.data() + static_cast<size_t>(bh) * P : nullptr;

            for (int t = 0; t < Tn; ++t) {
                const T zt = need_z ? z[t] : T(0);
                const T* dout_t = dO.row(t).data();
                if (out_gate_) {
                    const long gi = gate_off + static_cast<long>(t) * NH;
                    denom_->forward_row(o_row.data(), U.row(t).data(), zt, t + 1, in.denom_params, HS);
                    T dg = 0;
                    for (int i = 0; i < HS; ++i) {
                        dd[i] = dout_t[i] * in.out_gate[gi];
                        dg += dout_t[i] * o_row[i];
                    }
                    grads.dout_gate[gi] += dg;
                    dout_t = dd.data();
                }
                dz[t] = denom_->backward_row(&dU(t, 0), dparams, dout_t, U.row(t).data(), zt, t + 1,
                                             in.denom_params, HS);
            }
            if (in_gate_) {
                for (int t = 0; t < Tn; ++t) Vg.row(t) = V.row(t) * in.in_gate[gate_off + static_cast<long>(t) * NH];
                dW.noalias() = dU * Vg.transpose();
            } else {
                dW.noalias() = dU * V.transpose();
            }
            dVg.noalias() = W.transpose() * dU;  // W is zero above the diagonal
            if (in_gate_) {
                for (int j = 0; j < Tn; ++j) {
                    const long gi = gate_off + static_cast<long>(j) * NH;
                    dV.row(j) += dVg.row(j) * in.in_gate[gi];
                    grads.din_gate[gi] += dVg.row(j).dot(V.row(j));
                }
            } else {
                dV += dVg;
            }
            for (int t = 0; t < Tn; ++t) {
                if (need_z)
                    for (int j = 0; j <= t; ++j) dW(t, j) += dz[t];
                for (int j = t + 1; j < Tn; ++j) dW(t, j) = T(0);
            }
            if (kernel_) {
                const_matrix_map<T> S(cache.scores.data() + tt, Tn, Tn);
                for (int t = 0; t < Tn; ++t) {
                    kernel_->backward_row(&dW(t, 0), &dW(t, 0), S.row(t).data(), W.row(t).data(), t + 1);
                    if (clamp_on_)  // min(s, c) passes the gradient only below c
                        for (int j = 0; j <= t; ++j)
                            if (!(S(t, j) < clamp_)) dW(t, j) = T(0);
                }
                // dW now holds ds (T, T), lower triangular
                dQ.noalias() += (dW * K) * scale_;
                dK.noalias() += (dW.transpose() * Q) * scale_;
            } else {
                const_matrix_map<T> Fq(cache.phi_q.data() + th, Tn, HS), Fk(cache.phi_k.data() + th, Tn, HS);
                dFq.noalias() = dW * Fk;
                dFk.noalias() = dW.transpose() * Fq;
                for (int t = 0; t < Tn; ++t) {
                    features_->backward(&dQ(t, 0), &dFq(t, 0), Q.row(t).data(), Fq.row(t).data(), HS);
                    features_->backward(&dK(t, 0), &dFk(t, 0), K.row(t).data(), Fk.row(t).data(), HS);
                }
            }
        }
    }
    // Sum the per-head parameter gradients in a fixed order (deterministic).
    if (P && grads.ddenom_params)
        for (int bh = 0; bh < B * NH; ++bh)
            for (int i = 0; i < P; ++i) grads.ddenom_params[i] += cache.dparams[static_cast<size_t>(bh) * P + i];
}

template struct attention_cache<float>;
template struct attention_cache<double>;
template class attention_layer<float>;
template class attention_layer<double>;

}  // namespace attnlab
