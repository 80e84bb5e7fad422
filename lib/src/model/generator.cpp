// One decoding step of the docs/model.md model with recurrent attention: the
// blocks are block_forward on one row (block.hpp), as in training; only what
// mixes positions differs, a step of each layer's state.
#include "attnlab/model/generator.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnlab {

template <class T>
class generator<T>::step_mixer final : public position_mixer<T> {
public:
    step_mixer(recurrent_attention<T>& attn, std::vector<T>& hist, const block_shape<T>& s)
        : attn_(attn), hist_(hist), s_(s) {}

    void short_conv(T* out, const T* in, const T* w) override {
        // shift the history by one token, the newest product in row 0
        const long W = 3L * s_.C;  // (3C) a row of the q, k, v product
        std::copy_backward(hist_.begin(), hist_.end() - W, hist_.end());
        std::copy_n(in, W, hist_.begin());
        short_conv_step(out, hist_.data(), w, 3 * s_.C, s_.short_conv);
    }
    void attend(T* att, const attention_inputs<T>& in) override {
        for (int h = 0; h < s_.NH; ++h) {
            const long o = static_cast<long>(h) * s_.HS;
            attn_.step(att + o, 0, h, in.q + o, in.k + o, in.v + o, in.in_gate ? in.in_gate[h] : T(1),
                       in.out_gate ? in.out_gate[h] : T(1), in.denom_params);
        }
    }
    void short_conv_backward(T*, T*, const T*, const T*) override { no_backward(); }
    void attend_backward(const attention_grads<T>&, T*, const T*, const attention_inputs<T>&) override {
        no_backward();
    }

private:
    [[noreturn]] static void no_backward() { throw std::logic_error("generation has no backward"); }
    recurrent_attention<T>& attn_;
    std::vector<T>& hist_;
    const block_shape<T>& s_;
};

template <class T>
generator<T>::generator(const transformer<T>& model, state_layout layout, int max_len)
    : model_(model), max_len_(max_len) {
    const model_config& m = model.config();
    const int C = m.d_model, NH = m.heads, HS = C / NH;
    if (m.position == position_kind::learned && max_len > model.max_T())
        throw std::invalid_argument("learned positions cover only " + std::to_string(model.max_T()) + " tokens");
    if (m.position == position_kind::rope) rope_ = std::make_unique<rope_tables<T>>(max_len, HS);
    shape_ = block_shape_of(m, model.attention(), rope_.get());
    buffer_plan_input in;
    in.model = m;
    in.attention = model.attention();
    in.vocab = model.vocab();
    in.max_T = model.max_T();
    in.float_bytes = sizeof(T);  // B 1, T 1
    plan_ = plan_model_buffers(in);
    arena_.assign(plan_.arena_elements, T(0));
    for (int l = 0; l < m.layers; ++l)
        attn_.push_back(std::make_unique<recurrent_attention<T>>(model.attention(), NH, HS, layout));
    conv_hist_.assign(m.layers, std::vector<T>(3L * C * m.short_conv, T(0)));
    logits_.assign(model.vocab(), T(0));
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
    using mb = model_buffer;
    if (pos_ >= max_len_) throw std::length_error("generator: position beyond max_len");
    if (token < 0 || token >= model_.vocab()) throw std::out_of_range("generator: token outside the vocabulary");
    const model_offsets& off = model_.offsets();
    const T* params = model_.params.data();
    const int C = shape_.C, V = model_.vocab();
    T* arena = arena_.data();
    const int L = static_cast<int>(off.blocks.size());

    embedding_forward(plan_.carve(arena, mb::residual, 0), &token, params + off.embed,
                      off.pos == block_offsets::npos ? nullptr : params + off.pos + static_cast<long>(pos_) * C, 1, 1,
                      C);
    const block_rows row{1, 1, pos_};
    for (int l = 0; l < L; ++l) {  // residual stream l + 1 (C) = block l of stream l
        step_mixer mix(*attn_[l], conv_hist_[l], shape_);
        block_params<T> bp;  // the products read W (no transposed copies)
        bp.w = block_tensors_at(params, off.blocks[l], shape_.mlp);
        block_forward(bp, block_acts_at(arena, plan_, l, 0, shape_), shape_, row, mix);
    }
    T* ln = plan_.carve(arena, mb::final_norm, 0);  // (C)
    rmsnorm_forward(ln, plan_.carve(arena, mb::final_rstd, 0), plan_.carve(arena, mb::residual, L), params + off.norm,
                    1, C, shape_.eps);
    linear_forward(logits_.data(), ln, linear_weights<T>{params + off.head, nullptr, nullptr, C, V}, 1);
    ++pos_;
    return logits_;
}

template class generator<float>;
template class generator<double>;

}  // namespace attnlab
