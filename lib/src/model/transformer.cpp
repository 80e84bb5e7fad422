// Forward and backward of the SPEC §3 model, composed from ops/ and
// attention/. Backward walks the blocks in reverse with one residual
// gradient buffer dres_: every op's backward accumulates into it, so the
// identity path of each residual connection costs nothing.
#include "attnlab/model/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attnlab/tasks/task.hpp"
#include "attnlab/util/rng.hpp"

namespace attnlab {

namespace {
constexpr double rmsnorm_eps = 1e-6;
constexpr std::uint64_t init_stream = 3;  // derive_seed stream of parameter init

template <class T>
void zero(std::vector<T>& v, std::size_t n) { std::fill(v.begin(), v.begin() + n, T(0)); }
}  // namespace

template <class T>
transformer<T>::transformer(const model_config& m, const attention_config& a, int vocab, int max_T)
    : m_(m), V_(vocab), max_T_(max_T), C_(m.d_model), NH_(m.heads), HS_(m.d_model / m.heads),
      F_(resolved_mlp_hidden(m)), layout_(build_param_layout(m, a, vocab, max_T, off_)),
      a_(a), attn_(a, m.heads, m.d_model / m.heads) {
    if (C_ % NH_ != 0) throw std::invalid_argument("d_model must be a multiple of heads");
    if (uses_rope()) rope_ = std::make_unique<rope_tables<T>>(max_T_, HS_);
    params.assign(layout_.total(), T(0));
    grads.assign(layout_.total(), T(0));
}

template <class T>
void transformer<T>::init_params(std::uint64_t seed) {
    rng r(derive_seed(seed, init_stream));
    const double std_normal = 0.02, std_residual = 0.02 / std::sqrt(2.0 * m_.layers);
    for (const auto& t : layout_.tensors()) {
        T* w = params.data() + t.offset;
        for (std::size_t i = 0; i < t.size; ++i) {
            switch (t.init) {
                case param_init::normal: w[i] = static_cast<T>(std_normal * r.normal()); break;
                case param_init::normal_residual: w[i] = static_cast<T>(std_residual * r.normal()); break;
                case param_init::ones: w[i] = T(1); break;
                case param_init::zeros: w[i] = T(0); break;
            }
        }
    }
}

template <class T>
void transformer<T>::reserve(int B, int T_len) {
    if (B <= cap_B_ && T_len <= cap_T_) return;
    if (T_len > max_T_) throw std::invalid_argument("sequence longer than the model's max_T");
    cap_B_ = std::max(B, cap_B_);
    cap_T_ = std::max(T_len, cap_T_);
    const std::size_t N = static_cast<std::size_t>(cap_B_) * cap_T_;
    const std::size_t NC = N * C_, NF = N * F_;
    x_.assign(m_.layers + 1, std::vector<T>(NC));
    acts_.resize(m_.layers);
    for (auto& a : acts_) {
        a.ln1.assign(NC, 0); a.rstd1.assign(N, 0);
        if (uses_rope()) { a.q_raw.assign(NC, 0); a.k_raw.assign(NC, 0); }
        a.q.assign(NC, 0); a.k.assign(NC, 0); a.v.assign(NC, 0);
        attn_.init_cache(a.att_cache, cap_B_, cap_T_);
        if (attn_.has_in_gate()) a.g_in.assign(N * NH_, 0);
        if (attn_.has_out_gate()) a.g_out.assign(N * NH_, 0);
        a.att.assign(NC, 0); a.mid.assign(NC, 0);
        if (m_.mlp != mlp_kind::none) {
            a.ln2.assign(NC, 0); a.rstd2.assign(N, 0);
            a.fc_up.assign(NF, 0); a.act.assign(NF, 0);
            if (m_.mlp == mlp_kind::swiglu) a.fc_gate.assign(NF, 0);
        }
    }
    lnf_.assign(NC, 0); rstdf_.assign(N, 0);
    // Answer rows: at most every row.
    lnf_ans_.assign(NC, 0); logits_.assign(N * V_, 0); probs_.assign(N * V_, 0); losses_.reserve(N);
    ans_rows_.reserve(N); ans_tgt_.reserve(N); ans_pred_.reserve(N);
    for (auto* v : {&dres_, &dln_, &dq_, &dk_, &dv_, &datt_}) v->assign(NC, 0);
    if (uses_rope()) { dq_raw_.assign(NC, 0); dk_raw_.assign(NC, 0); }
    for (auto* v : {&dfc_gate_, &dfc_up_, &dact_}) v->assign(NF, 0);
    for (auto* v : {&dg_in_, &dg_out_, &dgate_pre_}) v->assign(N * NH_, 0);
    dlnf_ans_.assign(NC, 0); dlogits_.assign(N * V_, 0);
}

template <class T>
T transformer<T>::forward(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn) {
    reserve(B, Tn);
    B_ = B; T_ = Tn; tokens_ = tokens;
    const int N = B * Tn, C = C_, F = F_;
    const T eps = static_cast<T>(rmsnorm_eps);

    embedding_forward(x_[0].data(), tokens, p(off_.embed),
                      off_.pos == block_offsets::npos ? nullptr : p(off_.pos), B, Tn, C);
    for (int l = 0; l < m_.layers; ++l) {
        const block_offsets& bo = off_.blocks[l];
        layer_acts& a = acts_[l];
        const T* x = x_[l].data();
        rmsnorm_forward(a.ln1.data(), a.rstd1.data(), x, p(bo.attn_norm), N, C, eps);
        if (uses_rope()) {
            linear_forward(a.q_raw.data(), a.ln1.data(), p(bo.q), (const T*)nullptr, N, C, C);
            linear_forward(a.k_raw.data(), a.ln1.data(), p(bo.k), (const T*)nullptr, N, C, C);
            rope_forward(a.q.data(), a.q_raw.data(), *rope_, B, Tn, NH_, HS_);
            rope_forward(a.k.data(), a.k_raw.data(), *rope_, B, Tn, NH_, HS_);
        } else {
            linear_forward(a.q.data(), a.ln1.data(), p(bo.q), (const T*)nullptr, N, C, C);
            linear_forward(a.k.data(), a.ln1.data(), p(bo.k), (const T*)nullptr, N, C, C);
        }
        linear_forward(a.v.data(), a.ln1.data(), p(bo.v), (const T*)nullptr, N, C, C);
        // gates: sigmoid(a_h . x + b_h) per head and position, from the attention input x = ln1
        if (attn_.has_in_gate()) {
            linear_forward(a.g_in.data(), a.ln1.data(), p(bo.in_gate), p(bo.in_gate_bias), N, C, NH_);
            sigmoid_forward(a.g_in.data(), a.g_in.data(), static_cast<long>(N) * NH_);
        }
        if (attn_.has_out_gate()) {
            linear_forward(a.g_out.data(), a.ln1.data(), p(bo.out_gate), p(bo.out_gate_bias), N, C, NH_);
            sigmoid_forward(a.g_out.data(), a.g_out.data(), static_cast<long>(N) * NH_);
        }
        if (recurrent_) recurrent_->forward(a.att.data(), attention_inputs_of(l), B, Tn);
        else attn_.forward(a.att.data(), a.att_cache, attention_inputs_of(l), B, Tn);
        // mid = x + att @ Wo^T
        linear_forward(a.mid.data(), a.att.data(), p(bo.o), (const T*)nullptr, N, C, C);
        add_inplace(a.mid.data(), x, static_cast<long>(N) * C);

        T* x_next = x_[l + 1].data();
        if (m_.mlp == mlp_kind::none) {
            std::copy(a.mid.begin(), a.mid.begin() + static_cast<long>(N) * C, x_next);
            continue;
        }
        rmsnorm_forward(a.ln2.data(), a.rstd2.data(), a.mid.data(), p(bo.mlp_norm), N, C, eps);
        if (m_.mlp == mlp_kind::swiglu) {
            linear_forward(a.fc_gate.data(), a.ln2.data(), p(bo.mlp_gate), (const T*)nullptr, N, C, F);
            linear_forward(a.fc_up.data(), a.ln2.data(), p(bo.mlp_up), (const T*)nullptr, N, C, F);
            swiglu_forward(a.act.data(), a.fc_gate.data(), a.fc_up.data(), N, F);
            linear_forward(x_next, a.act.data(), p(bo.mlp_down), (const T*)nullptr, N, F, C);
        } else {  // gelu
            linear_forward(a.fc_up.data(), a.ln2.data(), p(bo.mlp_up), p(bo.mlp_up_bias), N, C, F);
            gelu_forward(a.act.data(), a.fc_up.data(), static_cast<long>(N) * F);
            linear_forward(x_next, a.act.data(), p(bo.mlp_down), p(bo.mlp_down_bias), N, F, C);
        }
        add_inplace(x_next, a.mid.data(), static_cast<long>(N) * C);
    }
    rmsnorm_forward(lnf_.data(), rstdf_.data(), x_[m_.layers].data(), p(off_.norm), N, C, eps);

    // Gather the answer rows: only they reach the head and the loss.
    ans_rows_.clear(); ans_tgt_.clear();
    for (int n = 0; n < N; ++n)
        if (targets[n] != no_target) {
            if (targets[n] < 0 || targets[n] >= V_) throw std::out_of_range("target outside the vocabulary");
            ans_rows_.push_back(n);
            ans_tgt_.push_back(targets[n]);
        }
    const int A = static_cast<int>(ans_rows_.size());
    for (int a = 0; a < A; ++a)
        std::copy_n(lnf_.data() + static_cast<long>(ans_rows_[a]) * C, C, lnf_ans_.data() + static_cast<long>(a) * C);
    linear_forward(logits_.data(), lnf_ans_.data(), p(off_.head), (const T*)nullptr, A, C, V_);
    losses_.resize(A);
    const T loss = cross_entropy_forward(probs_.data(), losses_.data(), logits_.data(), ans_tgt_.data(), A, V_);
    ans_pred_.resize(A);
    for (int a = 0; a < A; ++a) {
        const T* z = logits_.data() + static_cast<long>(a) * V_;
        ans_pred_[a] = static_cast<std::int32_t>(std::max_element(z, z + V_) - z);
    }
    return loss;
}

template <class T>
attention_inputs<T> transformer<T>::attention_inputs_of(int l) const {
    const block_offsets& bo = off_.blocks[l];
    const layer_acts& a = acts_[l];
    attention_inputs<T> in;
    in.q = a.q.data(); in.k = a.k.data(); in.v = a.v.data();
    if (attn_.has_in_gate()) in.in_gate = a.g_in.data();
    if (attn_.has_out_gate()) in.out_gate = a.g_out.data();
    if (bo.out_norm != block_offsets::npos) in.denom_params = p(bo.out_norm);
    return in;
}

template <class T>
long transformer<T>::nonpositive_denominator_rows() const {
    long n = 0;
    for (const auto& a : acts_) n += a.att_cache.nonpositive_rows();
    return n;
}

template <class T>
T transformer<T>::min_abs_denominator() const {
    T m = std::numeric_limits<T>::infinity();
    for (const auto& a : acts_) m = std::min(m, a.att_cache.min_abs_denominator());
    return m;
}

template <class T>
void transformer<T>::zero_grad() { std::fill(grads.begin(), grads.end(), T(0)); }

template <class T>
void transformer<T>::set_attention_form(attention_form form, state_layout layout) {
    if (form == attention_form::parallel) recurrent_.reset();
    else recurrent_ = std::make_unique<recurrent_attention<T>>(a_, NH_, HS_, layout);
}

template <class T>
void transformer<T>::backward() {
    if (recurrent_) throw std::logic_error("backward() needs the parallel attention form");
    const int B = B_, Tn = T_, N = B * Tn, C = C_, F = F_;
    const int A = static_cast<int>(ans_rows_.size());
    const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;

    // head and final norm
    zero(dlogits_, static_cast<std::size_t>(A) * V_);
    if (A > 0) cross_entropy_backward(dlogits_.data(), probs_.data(), ans_tgt_.data(), T(1) / A, A, V_);
    zero(dlnf_ans_, static_cast<std::size_t>(A) * C);
    linear_backward(dlnf_ans_.data(), g(off_.head), (T*)nullptr, dlogits_.data(), lnf_ans_.data(),
                    p(off_.head), A, C, V_);
    zero(dln_, NC);
    for (int a = 0; a < A; ++a)
        std::copy_n(dlnf_ans_.data() + static_cast<long>(a) * C, C, dln_.data() + static_cast<long>(ans_rows_[a]) * C);
    zero(dres_, NC);
    rmsnorm_backward(dres_.data(), g(off_.norm), dln_.data(), x_[m_.layers].data(), rstdf_.data(),
                     p(off_.norm), N, C);

    for (int l = m_.layers - 1; l >= 0; --l) {
        const block_offsets& bo = off_.blocks[l];
        layer_acts& a = acts_[l];
        // dres = dL/dx_{l+1}; MLP branch adds its path to dL/dmid.
        if (m_.mlp != mlp_kind::none) {
            zero(dact_, NF);
            zero(dfc_up_, NF);
            zero(dln_, NC);
            if (m_.mlp == mlp_kind::swiglu) {
                linear_backward(dact_.data(), g(bo.mlp_down), (T*)nullptr, dres_.data(), a.act.data(),
                                p(bo.mlp_down), N, F, C);
                zero(dfc_gate_, NF);
                swiglu_backward(dfc_gate_.data(), dfc_up_.data(), dact_.data(), a.fc_gate.data(), a.fc_up.data(), N, F);
                linear_backward(dln_.data(), g(bo.mlp_gate), (T*)nullptr, dfc_gate_.data(), a.ln2.data(),
                                p(bo.mlp_gate), N, C, F);
                linear_backward(dln_.data(), g(bo.mlp_up), (T*)nullptr, dfc_up_.data(), a.ln2.data(),
                                p(bo.mlp_up), N, C, F);
            } else {  // gelu
                linear_backward(dact_.data(), g(bo.mlp_down), g(bo.mlp_down_bias), dres_.data(), a.act.data(),
                                p(bo.mlp_down), N, F, C);
                gelu_backward(dfc_up_.data(), dact_.data(), a.fc_up.data(), static_cast<long>(NF));
                linear_backward(dln_.data(), g(bo.mlp_up), g(bo.mlp_up_bias), dfc_up_.data(), a.ln2.data(),
                                p(bo.mlp_up), N, C, F);
            }
            rmsnorm_backward(dres_.data(), g(bo.mlp_norm), dln_.data(), a.mid.data(), a.rstd2.data(),
                             p(bo.mlp_norm), N, C);
        }
        // dres = dL/dmid; attention branch adds its path to dL/dx_l.
        zero(datt_, NC);
        linear_backward(datt_.data(), g(bo.o), (T*)nullptr, dres_.data(), a.att.data(), p(bo.o), N, C, C);
        zero(dq_, NC); zero(dk_, NC); zero(dv_, NC);
        const std::size_t NG = static_cast<std::size_t>(N) * NH_;
        zero(dg_in_, NG); zero(dg_out_, NG);
        attention_grads<T> ag;
        ag.dq = dq_.data(); ag.dk = dk_.data(); ag.dv = dv_.data();
        ag.din_gate = dg_in_.data(); ag.dout_gate = dg_out_.data();
        ag.ddenom_params = bo.out_norm == block_offsets::npos ? nullptr : g(bo.out_norm);
        attn_.backward(ag, datt_.data(), a.att_cache, attention_inputs_of(l), B, Tn);
        const T* dq = dq_.data();
        const T* dk = dk_.data();
        if (uses_rope()) {
            zero(dq_raw_, NC); zero(dk_raw_, NC);
            rope_backward(dq_raw_.data(), dq_.data(), *rope_, B, Tn, NH_, HS_);
            rope_backward(dk_raw_.data(), dk_.data(), *rope_, B, Tn, NH_, HS_);
            dq = dq_raw_.data();
            dk = dk_raw_.data();
        }
        zero(dln_, NC);
        linear_backward(dln_.data(), g(bo.q), (T*)nullptr, dq, a.ln1.data(), p(bo.q), N, C, C);
        linear_backward(dln_.data(), g(bo.k), (T*)nullptr, dk, a.ln1.data(), p(bo.k), N, C, C);
        linear_backward(dln_.data(), g(bo.v), (T*)nullptr, dv_.data(), a.ln1.data(), p(bo.v), N, C, C);
        if (attn_.has_in_gate()) {
            zero(dgate_pre_, NG);
            sigmoid_backward(dgate_pre_.data(), dg_in_.data(), a.g_in.data(), static_cast<long>(NG));
            linear_backward(dln_.data(), g(bo.in_gate), g(bo.in_gate_bias), dgate_pre_.data(), a.ln1.data(),
                            p(bo.in_gate), N, C, NH_);
        }
        if (attn_.has_out_gate()) {
            zero(dgate_pre_, NG);
            sigmoid_backward(dgate_pre_.data(), dg_out_.data(), a.g_out.data(), static_cast<long>(NG));
            linear_backward(dln_.data(), g(bo.out_gate), g(bo.out_gate_bias), dgate_pre_.data(), a.ln1.data(),
                            p(bo.out_gate), N, C, NH_);
        }
        rmsnorm_backward(dres_.data(), g(bo.attn_norm), dln_.data(), x_[l].data(), a.rstd1.data(),
                         p(bo.attn_norm), N, C);
    }
    embedding_backward(g(off_.embed), off_.pos == block_offsets::npos ? nullptr : g(off_.pos),
                       dres_.data(), tokens_, B, Tn, C);
}

template class transformer<float>;
template class transformer<double>;

}  // namespace attnlab
