// Parallel form of causal attention for a (kernel, denominator) variant.
// Backward, per head (rows t, columns j <= t):
//   (du_t, dz_t) = denom'(dout_t)
//   dw_tj = du_t . v_j + dz_t          (dz_t because z_t = sum_j w_tj)
//   dv_j += sum_t w_tj du_t
//   ds_tj = dw_tj * kernel'(s_tj)
//   dq_t += ds_t. K / sqrt(HS),  dk_j += ds_.j^T Q / sqrt(HS)
#include "attnlab/attention/attention.hpp"

#include <cmath>

#include "attnlab/util/shapes.hpp"

namespace attnlab {

namespace {
// Below this many multiply-adds per call the threads cost more than they save.
constexpr long parallel_threshold = 1L << 16;
long attention_work(int B, int NH, int Tn, int HS) { return static_cast<long>(B) * NH * Tn * Tn * HS; }
}  // namespace

template <class T>
void attention_cache<T>::resize(int B_, int T_, int NH_, int HS_) {
    B = B_; T_cap = T_; NH = NH_; HS = HS_;
    const size_t bh = static_cast<size_t>(B) * NH;
    scores.assign(bh * T_cap * T_cap, T(0));
    weights.assign(bh * T_cap * T_cap, T(0));
    wsum.assign(bh * T_cap, T(0));
    numer.assign(bh * T_cap * HS, T(0));
}

template <class T>
attention_layer<T>::attention_layer(const attention_config& cfg, int NH, int HS)
    : NH_(NH), HS_(HS), scale_(T(1) / std::sqrt(T(HS))),
      kernel_(make_score_kernel<T>(cfg)), denom_(make_denominator<T>(cfg)) {}

template <class T>
void attention_layer<T>::forward(T* out, attention_cache<T>& cache, const T* q, const T* k,
                                 const T* v, int B, int Tn) const {
    const int NH = NH_, HS = HS_, C = NH * HS;
#pragma omp parallel for schedule(static) if (attention_work(B, NH, Tn, HS) > parallel_threshold)
    for (int bh = 0; bh < B * NH; ++bh) {
        const int b = bh / NH, h = bh % NH;
        const long off = static_cast<long>(b) * Tn * C + h * HS;
        const_strided_map<T> Q(q + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
        const_strided_map<T> K(k + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
        const_strided_map<T> V(v + off, Tn, HS, Eigen::OuterStride<>(C));  // (T, HS)
        strided_map<T> O(out + off, Tn, HS, Eigen::OuterStride<>(C));      // (T, HS)
        const size_t tt = static_cast<size_t>(bh) * cache.T_cap * cache.T_cap;
        matrix_map<T> S(cache.scores.data() + tt, Tn, Tn);                   // (T, T)
        matrix_map<T> W(cache.weights.data() + tt, Tn, Tn);                  // (T, T)
        matrix_map<T> U(cache.numer.data() + static_cast<size_t>(bh) * cache.T_cap * HS, Tn, HS);
        T* z = cache.wsum.data() + static_cast<size_t>(bh) * cache.T_cap;        // (T)

        S.noalias() = (Q * K.transpose()) * scale_;
        for (int t = 0; t < Tn; ++t) {
            kernel_->forward_row(&W(t, 0), &S(t, 0), t + 1);
            for (int j = t + 1; j < Tn; ++j) W(t, j) = T(0);
            z[t] = W.row(t).head(t + 1).sum();
        }
        U.noalias() = W.template triangularView<Eigen::Lower>() * V;
        for (int t = 0; t < Tn; ++t) denom_->forward_row(&O(t, 0), &U(t, 0), z[t], HS);
    }
}

template <class T>
void attention_layer<T>::backward(T* dq, T* dk, T* dv, const T* dout,
                                  const attention_cache<T>& cache, const T* q, const T* k,
                                  const T* v, int B, int Tn) const {
    const int NH = NH_, HS = HS_, C = NH * HS;
#pragma omp parallel if (attention_work(B, NH, Tn, HS) > parallel_threshold)
    {
        row_matrix<T> dU(Tn, HS), dW(Tn, Tn);  // per-thread scratch
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; ++bh) {
            const int b = bh / NH, h = bh % NH;
            const long off = static_cast<long>(b) * Tn * C + h * HS;
            const_strided_map<T> Q(q + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> K(k + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> V(v + off, Tn, HS, Eigen::OuterStride<>(C));
            const_strided_map<T> dO(dout + off, Tn, HS, Eigen::OuterStride<>(C));
            strided_map<T> dQ(dq + off, Tn, HS, Eigen::OuterStride<>(C));
            strided_map<T> dK(dk + off, Tn, HS, Eigen::OuterStride<>(C));
            strided_map<T> dV(dv + off, Tn, HS, Eigen::OuterStride<>(C));
            const size_t tt = static_cast<size_t>(bh) * cache.T_cap * cache.T_cap;
            const_matrix_map<T> S(cache.scores.data() + tt, Tn, Tn);
            const_matrix_map<T> W(cache.weights.data() + tt, Tn, Tn);
            const_matrix_map<T> U(cache.numer.data() + static_cast<size_t>(bh) * cache.T_cap * HS, Tn, HS);
            const T* z = cache.wsum.data() + static_cast<size_t>(bh) * cache.T_cap;

            row_vector<T> dz(Tn);
            for (int t = 0; t < Tn; ++t)
                dz(t) = denom_->backward_row(&dU(t, 0), dO.row(t).data(), U.row(t).data(), z[t], HS);
            dW.noalias() = dU * V.transpose();
            dV.noalias() += W.transpose() * dU;  // W is zero above the diagonal
            for (int t = 0; t < Tn; ++t) {
                for (int j = 0; j <= t; ++j) dW(t, j) += dz(t);
                kernel_->backward_row(&dW(t, 0), &dW(t, 0), S.row(t).data(), W.row(t).data(), t + 1);
                for (int j = t + 1; j < Tn; ++j) dW(t, j) = T(0);
            }
            // dW now holds ds (T, T), lower triangular
            dQ.noalias() += (dW * K) * scale_;
            dK.noalias() += (dW.transpose() * Q) * scale_;
        }
    }
}

template struct attention_cache<float>;
template struct attention_cache<double>;
template class attention_layer<float>;
template class attention_layer<double>;

}  // namespace attnlab
