// One decoding step of the docs/model.md model with recurrent attention; the same
// ops as transformer::forward on a single row.
#include "attnlab/model/generator.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnlab {

template <class T>
generator<T>::generator(const transformer<T>& model, state_layout layout, int max_len)
    : model_(model),
      max_len_(max_len),
      C_(model.config().d_model),
      NH_(model.config().heads),
      HS_(C_ / NH_),
      F_(resolved_mlp_hidden(model.config())),
      V_(model.vocab()) {
    if (model.config().position == position_kind::learned && max_len > model.max_T())
        throw std::invalid_argument("learned positions cover only " + std::to_string(model.max_T()) + " tokens");
    for (int l = 0; l < model.config().layers; ++l)
        attn_.push_back(std::make_unique<recurrent_attention<T>>(model.attention(), NH_, HS_, layout));
    if (model.config().position == position_kind::rope) rope_ = std::make_unique<rope_tables<T>>(max_len, HS_);
    for (auto* v : {&x_, &ln_, &q_, &k_, &v_, &att_, &proj_}) v->assign(C_, T(0));
    qkv_raw_.assign(3 * C_, T(0));
    qkv_conv_.assign(3 * C_, T(0));
    conv_hist_.assign(model.config().layers, std::vector<T>(3L * C_ * model.config().short_conv, T(0)));
    g_in_.assign(NH_, T(1));
    g_out_.assign(NH_, T(1));
    for (auto* v : {&fc_gate_, &fc_up_, &act_}) v->assign(F_, T(0));
    rstd_.assign(1, T(0));
    logits_.assign(V_, T(0));
    reset();
}

template <class T>
void generator<T>::reset() {
    for (auto& a : attn_) a->reset(1, max_len_);
    for (auto& h : conv_hist_) std::fill(h.begin(), h.end(), T(0));
    pos_ = 0;
}

template <class T>
const std::vector<T>& generator<T>::step(std::int32_t token) {
    if (pos_ >= max_len_) throw std::length_error("generator: position beyond max_len");
    if (token < 0 || token >= V_) throw std::out_of_range("generator: token outside the vocabulary");
    const model_offsets& off = model_.offsets();
    auto p = [&](std::size_t o) { return model_.params.data() + o; };
    const T eps = static_cast<T>(rmsnorm_eps);
    const int C = C_, F = F_;

    embedding_forward(x_.data(), &token, p(off.embed),
                      off.pos == block_offsets::npos ? nullptr : p(off.pos) + static_cast<long>(pos_) * C, 1, 1, C);
    for (std::size_t l = 0; l < off.blocks.size(); ++l) {
        const block_offsets& bo = off.blocks[l];
        rmsnorm_forward(ln_.data(), rstd_.data(), x_.data(), p(bo.attn_norm), 1, C, eps);
        const T* none = nullptr;
        // q, k, v as one product of their adjacent (3C, C) weights, as the transformer does
        linear_forward(qkv_raw_.data(), ln_.data(), p(bo.q), none, 1, C, 3 * C);
        const T* qkv = qkv_raw_.data();
        if (bo.short_conv != block_offsets::npos) {
            std::vector<T>& hist = conv_hist_[l];  // shift by one token, the newest product in row 0
            std::copy_backward(hist.begin(), hist.end() - 3L * C, hist.end());
            std::copy_n(qkv_raw_.begin(), 3 * C, hist.begin());
            short_conv_step(qkv_conv_.data(), hist.data(), p(bo.short_conv), 3 * C, model_.config().short_conv);
            qkv = qkv_conv_.data();
        }
        if (rope_) {
            rope_forward_at(q_.data(), qkv, *rope_, pos_, NH_, HS_);
            rope_forward_at(k_.data(), qkv + C, *rope_, pos_, NH_, HS_);
        } else {
            std::copy_n(qkv, C, q_.data());
            std::copy_n(qkv + C, C, k_.data());
        }
        std::copy_n(qkv + 2 * C, C, v_.data());
        if (bo.in_gate != block_offsets::npos) {
            linear_forward(g_in_.data(), ln_.data(), p(bo.in_gate), p(bo.in_gate_bias), 1, C, NH_);
            sigmoid_forward(g_in_.data(), g_in_.data(), NH_);
        }
        if (bo.out_gate != block_offsets::npos) {
            linear_forward(g_out_.data(), ln_.data(), p(bo.out_gate), p(bo.out_gate_bias), 1, C, NH_);
            sigmoid_forward(g_out_.data(), g_out_.data(), NH_);
        }
        const T* denom_params = bo.out_norm == block_offsets::npos ? nullptr : p(bo.out_norm);
        for (int h = 0; h < NH_; ++h)
            attn_[l]->step(att_.data() + h * HS_, 0, h, q_.data() + h * HS_, k_.data() + h * HS_, v_.data() + h * HS_,
                           g_in_[h], g_out_[h], denom_params);
        linear_forward(proj_.data(), att_.data(), p(bo.o), none, 1, C, C);
        add_inplace(x_.data(), proj_.data(), C);

        const mlp_kind mlp = model_.config().mlp;
        if (mlp == mlp_kind::none) continue;
        rmsnorm_forward(ln_.data(), rstd_.data(), x_.data(), p(bo.mlp_norm), 1, C, eps);
        if (mlp == mlp_kind::swiglu) {
            linear_forward(fc_gate_.data(), ln_.data(), p(bo.mlp_gate), none, 1, C, F);
            linear_forward(fc_up_.data(), ln_.data(), p(bo.mlp_up), none, 1, C, F);
            swiglu_forward(act_.data(), fc_gate_.data(), fc_up_.data(), 1, F);
            linear_forward(proj_.data(), act_.data(), p(bo.mlp_down), none, 1, F, C);
        } else {
            linear_forward(fc_up_.data(), ln_.data(), p(bo.mlp_up), p(bo.mlp_up_bias), 1, C, F);
            gelu_forward(act_.data(), fc_up_.data(), F);
            linear_forward(proj_.data(), act_.data(), p(bo.mlp_down), p(bo.mlp_down_bias), 1, F, C);
        }
        add_inplace(x_.data(), proj_.data(), C);
    }
    rmsnorm_forward(ln_.data(), rstd_.data(), x_.data(), p(off.norm), 1, C, eps);
    linear_forward(logits_.data(), ln_.data(), p(off.head), static_cast<const T*>(nullptr), 1, C, V_);
    ++pos_;
    return logits_;
}

template class generator<float>;
template class generator<double>;

}  // namespace attnlab
