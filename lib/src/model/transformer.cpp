// The docs/model.md model: forward and backward of one shard of the batch
// (whole sequences), composed from ops/ and attention/ and read top to
// bottom like llm.c: the blocks in order, then in reverse. The backward keeps
// one residual gradient buffer dres_: every op's backward accumulates into
// it, so the identity path of each residual connection costs nothing. Which
// thread runs which shard, micro-batches, the sum of the threads' gradients,
// the buffers, the transposed-weight cache and the op timers are the parallel
// machinery's (transformer_parallel.cpp).
#include "attnlab/model/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attnlab/ops/vector_math.hpp"
#include "attnlab/util/rng.hpp"
#include "transformer_detail.hpp"

namespace attnlab {

using model_detail::lap_timer;
using model_detail::zero;

namespace {
constexpr std::uint64_t init_stream = 3;  // derive_seed stream of parameter init
}  // namespace

template <class T>
transformer<T>::transformer(const model_config& m, const attention_config& a, int vocab, int max_T)
    : m_(m),
      V_(vocab),
      max_T_(max_T),
      C_(m.d_model),
      NH_(m.heads),
      HS_(m.d_model / m.heads),
      F_(resolved_mlp_hidden(m)),
      layout_(build_param_layout(m, a, vocab, max_T, off_)),
      a_(a),
      attn_(a, m.heads, m.d_model / m.heads) {
    if (C_ % NH_ != 0) throw std::invalid_argument("d_model must be a multiple of heads");
    if (uses_rope()) rope_ = std::make_unique<rope_tables<T>>(max_T_, HS_);  // rope_cos, rope_sin of the plan
    // One product for q, k, v and one for SwiGLU's gate and up need their
    // weights adjacent in the layout, as build_param_layout adds them.
    const std::size_t CC = static_cast<std::size_t>(C_) * C_, FC = static_cast<std::size_t>(F_) * C_;
    for (const block_offsets& bo : off_.blocks) {
        if (bo.k != bo.q + CC || bo.v != bo.k + CC) throw std::logic_error("q, k, v weights are not adjacent");
        if (m_.mlp == mlp_kind::swiglu && bo.mlp_up != bo.mlp_gate + FC)
            throw std::logic_error("mlp gate and up weights are not adjacent");
    }
    params.assign(layout_.total(), T(0));
    grads.assign(layout_.total(), T(0));
    init_parallel();  // the weight cache and the op timers (transformer_parallel.cpp)
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
                case param_init::first_row_ones: w[i] = T(i < static_cast<std::size_t>(t.shape[1]) ? 1 : 0); break;
            }
        }
    }
}

// ---------------------------------------------------------------- forward

template <class T>
void transformer<T>::forward_shard(const shard& sh, attention_scratch<T>& scratch, bool timed) {
    const int Tn = T_, C = C_, F = F_, Bs = sh.b1 - sh.b0, N = Bs * Tn;
    const long n0 = static_cast<long>(sh.b0) * Tn;  // first row of the shard
    const long rc = n0 * C, rf = n0 * F, rg = n0 * NH_;
    const T eps = static_cast<T>(rmsnorm_eps);
    lap_timer lap(timed, times_.forward_s);

    embedding_forward(x_[0].data() + rc, tokens_ + n0, p(off_.embed),
                      off_.pos == block_offsets::npos ? nullptr : p(off_.pos), Bs, Tn, C);
    lap(op_embed);
    for (int l = 0; l < m_.layers; ++l) {
        const block_offsets& bo = off_.blocks[l];
        layer_acts& a = acts_[l];
        const T* x = x_[l].data() + rc;
        T* ln1 = a.ln1.data() + rc;
        rmsnorm_forward(ln1, a.rstd1.data() + n0, x, p(bo.attn_norm), N, C, eps);
        lap(op_norm);
        // q, k, v as one product of the adjacent (3C, C) weights (wider is faster
        // than three), into the backward's dqkv_ (free until then), then split.
        T* qkv = dqkv_.data() + 3 * rc;  // (N, 3C)
        qkv_forward(qkv, a.qkv_in.empty() ? nullptr : a.qkv_in.data() + 3 * rc, ln1, bo, Bs);
        split_qkv(a.q.data() + rc, a.k.data() + rc, a.v.data() + rc, qkv, N);
        // gates: sigmoid(a_h . x + b_h) per head and position, from the attention input x = ln1
        if (attn_.has_in_gate()) {
            T* g = a.g_in.data() + rg;
            linear_forward(g, ln1, p(bo.in_gate), p(bo.in_gate_bias), N, C, NH_);
            sigmoid_forward(g, g, static_cast<long>(N) * NH_);
        }
        if (attn_.has_out_gate()) {
            T* g = a.g_out.data() + rg;
            linear_forward(g, ln1, p(bo.out_gate), p(bo.out_gate_bias), N, C, NH_);
            sigmoid_forward(g, g, static_cast<long>(N) * NH_);
        }
        lap(op_qkv);
        if (recurrent_) {  // a single shard (plan_shards)
            recurrent_->forward(a.att.data(), attention_inputs_of(l), Bs, Tn);
        } else {
            attn_.forward_heads(a.att.data(), a.att_cache, attention_inputs_of(l), Tn, sh.b0 * NH_, sh.b1 * NH_,
                                scratch);
        }
        lap(op_attention);
        // mid = x + att @ Wo^T, the product added onto the copy of x
        T* mid = a.mid.data() + rc;
        std::copy(x, x + static_cast<long>(N) * C, mid);
        linear_forward_add(mid, a.att.data() + rc, p(bo.o), N, C, C, pt(bo.o));
        lap(op_out_proj);

        T* x_next = x_[l + 1].data() + rc;
        if (m_.mlp == mlp_kind::none) {
            std::copy(mid, mid + static_cast<long>(N) * C, x_next);
            continue;
        }
        T* ln2 = a.ln2.data() + rc;
        rmsnorm_forward(ln2, a.rstd2.data() + n0, mid, p(bo.mlp_norm), N, C, eps);
        lap(op_norm);
        T* act = a.act.data() + rf;
        if (m_.mlp == mlp_kind::swiglu) {
            // gate and up as one product of the adjacent (2F, C) weights
            T* gate_up = a.fc_gate_up.data() + 2 * rf;  // (N, 2F)
            linear_forward(gate_up, ln2, p(bo.mlp_gate), (const T*)nullptr, N, C, 2 * F, pt(bo.mlp_gate));
            swiglu_fused_forward(act, gate_up, N, F);
            std::copy(mid, mid + static_cast<long>(N) * C, x_next);
            linear_forward_add(x_next, act, p(bo.mlp_down), N, F, C, pt(bo.mlp_down));
        } else {  // gelu
            T* up = a.fc_up.data() + rf;
            linear_forward(up, ln2, p(bo.mlp_up), p(bo.mlp_up_bias), N, C, F, pt(bo.mlp_up));
            gelu_forward(act, up, static_cast<long>(N) * F);
            linear_forward(x_next, act, p(bo.mlp_down), p(bo.mlp_down_bias), N, F, C, pt(bo.mlp_down));
            add_inplace(x_next, mid, static_cast<long>(N) * C);
        }
        lap(op_mlp);
    }
    rmsnorm_forward(lnf_.data() + rc, rstdf_.data() + n0, x_[m_.layers].data() + rc, p(off_.norm), N, C, eps);
    lap(op_norm);

    // head and loss on this shard's answer rows [a0, a1)
    const int As = sh.a1 - sh.a0;
    const T* lnf_ans = answer_norm_rows(sh);  // (As, C)
    T* logits = logits_.data() + static_cast<long>(sh.a0) * V_;
    linear_forward(logits, lnf_ans, p(off_.head), (const T*)nullptr, As, C, V_, pt(off_.head));
    cross_entropy_forward(probs_.data() + static_cast<long>(sh.a0) * V_, losses_.data() + sh.a0, logits,
                          ans_tgt_.data() + sh.a0, As, V_);
    for (int a = 0; a < As; ++a) {
        const T* z = logits + static_cast<long>(a) * V_;
        ans_pred_[sh.a0 + a] = static_cast<std::int32_t>(first_index_of_max(z, V_));
    }
    lap(op_head);
}

template <class T>
const T* transformer<T>::answer_norm_rows(const shard& sh) {
    if (every_row_answers()) return lnf_.data() + static_cast<long>(sh.a0) * C_;
    T* lnf_ans = lnf_ans_.data() + static_cast<long>(sh.a0) * C_;
    for (int a = 0; a < sh.a1 - sh.a0; ++a)
        std::copy_n(lnf_.data() + static_cast<long>(ans_rows_[sh.a0 + a]) * C_, C_,
                    lnf_ans + static_cast<long>(a) * C_);
    return lnf_ans;
}

template <class T>
const std::vector<T>& transformer<T>::answer_logits() const {
    return logits_;
}

template <class T>
attention_inputs<T> transformer<T>::attention_inputs_of(int l) const {
    const block_offsets& bo = off_.blocks[l];
    const layer_acts& a = acts_[l];
    attention_inputs<T> in;
    in.q = a.q.data();
    in.k = a.k.data();
    in.v = a.v.data();
    if (attn_.has_in_gate()) in.in_gate = a.g_in.data();
    if (attn_.has_out_gate()) in.out_gate = a.g_out.data();
    if (bo.out_norm != block_offsets::npos) in.denom_params = p(bo.out_norm);
    return in;
}

template <class T>
void transformer<T>::qkv_forward(T* qkv, T* qkv_in, const T* ln1, const block_offsets& bo, int Bs) const {
    const int C = C_, N = Bs * T_;
    if (bo.short_conv == block_offsets::npos) {
        linear_forward(qkv, ln1, p(bo.q), (const T*)nullptr, N, C, 3 * C, pt(bo.q));
        return;
    }
    linear_forward(qkv_in, ln1, p(bo.q), (const T*)nullptr, N, C, 3 * C, pt(bo.q));
    short_conv_forward(qkv, qkv_in, p(bo.short_conv), Bs, T_, 3 * C, m_.short_conv);
}

template <class T>
void transformer<T>::split_qkv(T* q, T* k, T* v, const T* qkv, int N) const {
    const int C = C_;
    for (int n = 0; n < N; ++n) {
        const T* row = qkv + 3L * n * C;
        const long o = static_cast<long>(n) * C;
        if (uses_rope()) {  // shards hold whole sequences: n % T is the position
            rope_forward_at(q + o, row, *rope_, n % T_, NH_, HS_);
            rope_forward_at(k + o, row + C, *rope_, n % T_, NH_, HS_);
        } else {
            std::copy_n(row, C, q + o);
            std::copy_n(row + C, C, k + o);
        }
        std::copy_n(row + 2 * C, C, v + o);
    }
}

// ---------------------------------------------------------------- backward

template <class T>
void transformer<T>::backward_shard(const shard& sh, T* grad, attention_scratch<T>& scratch, bool timed) {
    const int Tn = T_, C = C_, F = F_, Bs = sh.b1 - sh.b0, N = Bs * Tn;
    const long n0 = static_cast<long>(sh.b0) * Tn;
    const long rc = n0 * C, rf = n0 * F, rg = n0 * NH_;
    const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;
    const std::size_t NG = static_cast<std::size_t>(N) * NH_;
    const int A = static_cast<int>(ans_rows_.size()), As = sh.a1 - sh.a0;
    auto G = [&](std::size_t off) { return grad + off; };
    lap_timer lap(timed, times_.backward_s);
    T* dres = dres_.data() + rc;
    T* dln = dln_.data() + rc;

    // head and final norm: the loss is the mean over all A answer rows
    T* dlogits = dlogits_.data() + static_cast<long>(sh.a0) * V_;
    if (As > 0)
        cross_entropy_backward(dlogits, probs_.data() + static_cast<long>(sh.a0) * V_, ans_tgt_.data() + sh.a0,
                               T(1) / A, As, V_, grad_write::overwrite);
    if (every_row_answers()) {  // answer a is row a: dln directly, and lnf_ the forward read
        linear_backward(dln, G(off_.head), (T*)nullptr, dlogits, lnf_.data() + rc, p(off_.head), As, C, V_,
                        grad_write::overwrite);
    } else {
        T* dlnf_ans = dlnf_ans_.data() + static_cast<long>(sh.a0) * C;
        linear_backward(dlnf_ans, G(off_.head), (T*)nullptr, dlogits, lnf_ans_.data() + static_cast<long>(sh.a0) * C,
                        p(off_.head), As, C, V_, grad_write::overwrite);
        zero(dln, NC);
        for (int a = 0; a < As; ++a)
            std::copy_n(dlnf_ans + static_cast<long>(a) * C, C,
                        dln_.data() + static_cast<long>(ans_rows_[sh.a0 + a]) * C);
    }
    lap(op_head);
    zero(dres, NC);
    rmsnorm_backward(dres, G(off_.norm), dln, x_[m_.layers].data() + rc, rstdf_.data() + n0, p(off_.norm), N, C);
    lap(op_norm);

    // Each branch's first product overwrites its scratch (dact, dln, datt, ...):
    // nothing to zero before it.
    constexpr grad_write overwrite = grad_write::overwrite;
    for (int l = m_.layers - 1; l >= 0; --l) {
        const block_offsets& bo = off_.blocks[l];
        layer_acts& a = acts_[l];
        // dres = dL/dx_{l+1}; MLP branch adds its path to dL/dmid.
        if (m_.mlp != mlp_kind::none) {
            T* dact = dact_.data() + rf;
            const T* ln2 = a.ln2.data() + rc;
            if (m_.mlp == mlp_kind::swiglu) {
                T* dgate_up = dfc_gate_up_.data() + 2 * rf;  // (N, 2F)
                linear_backward(dact, G(bo.mlp_down), (T*)nullptr, dres, a.act.data() + rf, p(bo.mlp_down), N, F, C,
                                overwrite);
                swiglu_fused_backward(dgate_up, dact, a.fc_gate_up.data() + 2 * rf, N, F, overwrite);
                // gate and up weights (and their gradients) are adjacent: one (2F, C) product
                linear_backward(dln, G(bo.mlp_gate), (T*)nullptr, dgate_up, ln2, p(bo.mlp_gate), N, C, 2 * F,
                                overwrite);
            } else {  // gelu
                T* dup = dfc_up_.data() + rf;
                zero(dup, NF);
                linear_backward(dact, G(bo.mlp_down), G(bo.mlp_down_bias), dres, a.act.data() + rf, p(bo.mlp_down), N,
                                F, C, overwrite);
                gelu_backward(dup, dact, a.fc_up.data() + rf, static_cast<long>(NF));
                linear_backward(dln, G(bo.mlp_up), G(bo.mlp_up_bias), dup, ln2, p(bo.mlp_up), N, C, F, overwrite);
            }
            lap(op_mlp);
            rmsnorm_backward(dres, G(bo.mlp_norm), dln, a.mid.data() + rc, a.rstd2.data() + n0, p(bo.mlp_norm), N, C);
            lap(op_norm);
        }
        // dres = dL/dmid; attention branch adds its path to dL/dx_l.
        T* datt = datt_.data() + rc;
        linear_backward(datt, G(bo.o), (T*)nullptr, dres, a.att.data() + rc, p(bo.o), N, C, C, overwrite);
        lap(op_out_proj);
        zero(dq_.data() + rc, NC);
        zero(dk_.data() + rc, NC);
        zero(dv_.data() + rc, NC);
        zero(dg_in_.data() + rg, NG);
        zero(dg_out_.data() + rg, NG);
        attention_grads<T> ag;
        ag.dq = dq_.data();
        ag.dk = dk_.data();
        ag.dv = dv_.data();
        ag.din_gate = dg_in_.data();
        ag.dout_gate = dg_out_.data();
        attn_.backward_heads(ag, datt_.data(), a.att_cache, attention_inputs_of(l), Tn, sh.b0 * NH_, sh.b1 * NH_,
                             scratch);
        if (bo.out_norm != block_offsets::npos)
            attn_.sum_denominator_grads(G(bo.out_norm), a.att_cache, sh.b0 * NH_, sh.b1 * NH_);
        lap(op_attention);
        // q, k, v weights (and their gradients) are adjacent: one (3C, C) product
        T* dqkv = dqkv_.data() + 3 * rc;  // (N, 3C)
        merge_qkv_grads(dqkv, dq_.data() + rc, dk_.data() + rc, dv_.data() + rc, N);
        if (bo.short_conv != block_offsets::npos)  // dqkv: the convolution's output gradient -> its input's
            short_conv_backward(dqkv, G(bo.short_conv), a.qkv_in.data() + 3 * rc, p(bo.short_conv), Bs, Tn, 3 * C,
                                m_.short_conv);
        const T* ln1 = a.ln1.data() + rc;
        linear_backward(dln, G(bo.q), (T*)nullptr, dqkv, ln1, p(bo.q), N, C, 3 * C, overwrite);
        T* dpre = dgate_pre_.data() + rg;
        if (attn_.has_in_gate()) {
            zero(dpre, NG);
            sigmoid_backward(dpre, dg_in_.data() + rg, a.g_in.data() + rg, static_cast<long>(NG));
            linear_backward(dln, G(bo.in_gate), G(bo.in_gate_bias), dpre, ln1, p(bo.in_gate), N, C, NH_);
        }
        if (attn_.has_out_gate()) {
            zero(dpre, NG);
            sigmoid_backward(dpre, dg_out_.data() + rg, a.g_out.data() + rg, static_cast<long>(NG));
            linear_backward(dln, G(bo.out_gate), G(bo.out_gate_bias), dpre, ln1, p(bo.out_gate), N, C, NH_);
        }
        lap(op_qkv);
        rmsnorm_backward(dres, G(bo.attn_norm), dln, x_[l].data() + rc, a.rstd1.data() + n0, p(bo.attn_norm), N, C);
        lap(op_norm);
    }
    embedding_backward(G(off_.embed), off_.pos == block_offsets::npos ? nullptr : G(off_.pos), dres, tokens_ + n0, Bs,
                       Tn, C);
    lap(op_embed);
}

template <class T>
void transformer<T>::merge_qkv_grads(T* dqkv, const T* dq, const T* dk, const T* dv, int N) const {
    const int C = C_;
    for (int n = 0; n < N; ++n) {
        T* row = dqkv + 3L * n * C;
        const long o = static_cast<long>(n) * C;
        if (uses_rope()) {  // rope_backward_at accumulates
            std::fill_n(row, 2 * C, T(0));
            rope_backward_at(row, dq + o, *rope_, n % T_, NH_, HS_);
            rope_backward_at(row + C, dk + o, *rope_, n % T_, NH_, HS_);
        } else {
            std::copy_n(dq + o, C, row);
            std::copy_n(dk + o, C, row + C);
        }
        std::copy_n(dv + o, C, row + 2 * C);
    }
}

// ---------------------------------------------------------------- forms, and what the last forward saw

template <class T>
void transformer<T>::set_attention_form(attention_form form, state_layout layout) {
    if (form == attention_form::parallel)
        recurrent_.reset();
    else
        recurrent_ = std::make_unique<recurrent_attention<T>>(a_, NH_, HS_, layout);
}

template <class T>
parallel_form transformer<T>::parallel_form_at(int Tn) const {
    return attn_.form_at(Tn);
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

template class transformer<float>;
template class transformer<double>;

}  // namespace attnlab
