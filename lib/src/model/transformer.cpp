// The docs/model.md model: forward and backward of one shard of the batch
// (whole sequences), composed from ops/ and attention/ and read top to
// bottom like llm.c: embedding, the blocks in order (block.hpp's
// block_forward), the head and loss, then in reverse. The backward keeps one
// residual gradient buffer dres: every block's backward accumulates into it,
// so the identity path of each residual connection costs nothing. Every
// backward accumulates into the gradients; the caller zeroes them once. Which
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
      layout_(build_param_layout(m, a, vocab, max_T, off_)),
      a_(a),
      attn_(a, m.heads, m.d_model / m.heads),
      shape_(block_shape_of<T>(m, a, nullptr)) {
    if (m.d_model % m.heads != 0) throw std::invalid_argument("d_model must be a multiple of heads");
    if (m_.position == position_kind::rope) {
        rope_ = std::make_unique<rope_tables<T>>(max_T_, shape_.HS);  // rope_cos, rope_sin of the plan
        shape_.rope = rope_.get();
    }
    // One product for q, k, v and one for SwiGLU's gate and up need their
    // weights adjacent in the layout, as build_param_layout adds them.
    const std::size_t C = static_cast<std::size_t>(shape_.C), CC = C * C, FC = static_cast<std::size_t>(shape_.F) * C;
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

// ---------------------------------------------------------------- one shard's blocks

// The position-mixing parts of block `layer` on a shard. The block's views
// start at the shard's first row n0; the attention layer indexes the batch's
// buffers by (sequence, head) pairs, so it is handed their starts (the views
// moved back by n0 rows, inside the same buffers).
template <class T>
class transformer<T>::shard_mixer final : public position_mixer<T> {
public:
    shard_mixer(transformer& t, const shard& sh, int layer, attention_scratch<T>& scratch, lap_timer& lap)
        : t_(t),
          sh_(sh),
          cache_(t.caches_[layer]),
          scratch_(scratch),
          lap_(lap),
          n0_(static_cast<long>(sh.b0) * t.T_) {}

    void short_conv(T* out, const T* in, const T* w) override {
        short_conv_forward(out, in, w, sequences(), t_.T_, 3 * t_.shape_.C, t_.shape_.short_conv);
    }
    void attend(T* att, const attention_inputs<T>& in) override {
        if (t_.recurrent_) {  // a single shard (plan_shards): the views are the buffers
            t_.recurrent_->forward(att, in, sequences(), t_.T_);
            return;
        }
        t_.attn_.forward_heads(att - rows(t_.shape_.C), cache_, batch(in), t_.T_, h0(), h1(), scratch_);
    }
    void short_conv_backward(T* dinout, T* dw, const T* in, const T* w) override {
        attnlab::short_conv_backward(dinout, dw, in, w, sequences(), t_.T_, 3 * t_.shape_.C, t_.shape_.short_conv);
    }
    void attend_backward(const attention_grads<T>& g, T* ddenom, const T* datt,
                         const attention_inputs<T>& in) override {
        const long rc = rows(t_.shape_.C), rg = rows(t_.shape_.NH);
        attention_grads<T> b = g;
        b.dq -= rc;
        b.dk -= rc;
        b.dv -= rc;
        if (b.din_gate) b.din_gate -= rg;
        if (b.dout_gate) b.dout_gate -= rg;
        t_.attn_.backward_heads(b, datt - rc, cache_, batch(in), t_.T_, h0(), h1(), scratch_);
        if (ddenom) t_.attn_.sum_denominator_grads(ddenom, cache_, h0(), h1());
    }
    void done(block_op op) override {
        switch (op) {
            case block_op::norm: lap_(op_norm); break;
            case block_op::qkv: lap_(op_qkv); break;
            case block_op::attention: lap_(op_attention); break;
            case block_op::out_proj: lap_(op_out_proj); break;
            case block_op::mlp: lap_(op_mlp); break;
        }
    }

private:
    int sequences() const { return sh_.b1 - sh_.b0; }
    int h0() const { return sh_.b0 * t_.shape_.NH; }
    int h1() const { return sh_.b1 * t_.shape_.NH; }
    long rows(int width) const { return n0_ * width; }  // elements before the shard's rows
    attention_inputs<T> batch(attention_inputs<T> in) const {
        const long rc = rows(t_.shape_.C), rg = rows(t_.shape_.NH);
        in.q -= rc;
        in.k -= rc;
        in.v -= rc;
        if (in.in_gate) in.in_gate -= rg;
        if (in.out_gate) in.out_gate -= rg;
        return in;
    }

    transformer& t_;
    const shard& sh_;
    attention_cache<T>& cache_;
    attention_scratch<T>& scratch_;
    lap_timer& lap_;
    long n0_;  // the shard's first row
};

template <class T>
block_params<T> transformer<T>::block_params_of(int l) const {
    const block_offsets& bo = off_.blocks[l];
    block_params<T> bp;
    bp.w = block_tensors_at(params.data(), bo, m_.mlp);
    bp.wt.qkv = pt(bo.q);
    bp.wt.o = pt(bo.o);
    if (m_.mlp == mlp_kind::swiglu) bp.wt.gate_up = pt(bo.mlp_gate);
    if (m_.mlp == mlp_kind::gelu) bp.wt.up = pt(bo.mlp_up);
    if (m_.mlp != mlp_kind::none) bp.wt.down = pt(bo.mlp_down);
    return bp;
}

template <class T>
std::size_t transformer<T>::checked_layer(int layer) const {
    if (layer < 0 || layer >= m_.layers || arena_.empty()) throw std::out_of_range("no such layer in the last forward");
    return static_cast<std::size_t>(layer);
}

// ---------------------------------------------------------------- forward

template <class T>
void transformer<T>::forward_shard(const shard& sh, attention_scratch<T>& scratch, bool timed) {
    using mb = model_buffer;
    const int Tn = T_, C = shape_.C, Bs = sh.b1 - sh.b0, N = Bs * Tn, L = m_.layers;
    const long n0 = static_cast<long>(sh.b0) * Tn;  // first row of the shard
    const long rc = n0 * C;
    lap_timer lap(timed, times_.forward_s);

    embedding_forward(buf(mb::residual, 0, rc), tokens_ + n0, p(off_.embed),
                      off_.pos == block_offsets::npos ? nullptr : p(off_.pos), Bs, Tn, C);
    lap(op_embed);
    const block_rows rows{Bs, Tn, 0};
    for (int l = 0; l < L; ++l) {  // stream l + 1 (N, C) = block l of stream l, each kept for the backward
        shard_mixer mix(*this, sh, l, scratch, lap);
        block_forward(block_params_of(l), block_acts_at(arena_.data(), plan_, l, n0, shape_), shape_, rows, mix);
    }
    rmsnorm_forward(buf(mb::final_norm, 0, rc), buf(mb::final_rstd, 0, n0), buf(mb::residual, L, rc), p(off_.norm), N,
                    C, shape_.eps);
    lap(op_norm);

    // head and loss on this shard's answer rows [a0, a1)
    const int As = sh.a1 - sh.a0;
    const T* lnf_ans = answer_norm_rows(sh);  // (As, C)
    T* logits = logits_.data() + static_cast<long>(sh.a0) * V_;
    const linear_weights<T> head{p(off_.head), pt(off_.head), nullptr, C, V_};
    linear_forward(logits, lnf_ans, head, As);  // (As, V)
    cross_entropy_forward(buf(mb::probs, 0, static_cast<long>(sh.a0) * V_), losses_.data() + sh.a0, logits,
                          ans_tgt_.data() + sh.a0, As, V_);
    for (int a = 0; a < As; ++a) {
        const T* z = logits + static_cast<long>(a) * V_;
        ans_pred_[sh.a0 + a] = static_cast<std::int32_t>(first_index_of_max(z, V_));
    }
    lap(op_head);
}

template <class T>
const T* transformer<T>::answer_norm_rows(const shard& sh) {
    using mb = model_buffer;
    const int C = shape_.C;
    if (every_row_answers()) return buf(mb::final_norm, 0, static_cast<long>(sh.a0) * C);
    T* lnf_ans = buf(mb::answer_norm, 0, static_cast<long>(sh.a0) * C);  // (As, C)
    for (int a = 0; a < sh.a1 - sh.a0; ++a)
        std::copy_n(buf(mb::final_norm, 0, static_cast<long>(ans_rows_[sh.a0 + a]) * C), C,
                    lnf_ans + static_cast<long>(a) * C);
    return lnf_ans;
}

template <class T>
const std::vector<T>& transformer<T>::answer_logits() const {
    return logits_;
}

// ---------------------------------------------------------------- backward

template <class T>
void transformer<T>::backward_shard(const shard& sh, T* grad, attention_scratch<T>& scratch, bool timed) {
    using mb = model_buffer;
    const int Tn = T_, C = shape_.C, Bs = sh.b1 - sh.b0, N = Bs * Tn, L = m_.layers;
    const long n0 = static_cast<long>(sh.b0) * Tn;
    const long rc = n0 * C, NC = static_cast<long>(N) * C;
    const int A = static_cast<int>(ans_rows_.size()), As = sh.a1 - sh.a0;
    lap_timer lap(timed, times_.backward_s);
    const block_scratch<T> d = block_scratch_at(arena_.data(), plan_, n0, shape_);
    T* dres = d.dres;  // (N, C) dL/dx of the stream, from the top down
    T* dln = d.dln;    // (N, C) dL/d(final norm)
    const linear_weights<T> head{p(off_.head), pt(off_.head), nullptr, C, V_};

    // head and final norm: the loss is the mean over all A answer rows
    T* dlogits = buf(mb::d_logits, 0, static_cast<long>(sh.a0) * V_);  // (As, V)
    zero(dlogits, static_cast<std::size_t>(As) * V_);
    if (As > 0)
        cross_entropy_backward(dlogits, buf(mb::probs, 0, static_cast<long>(sh.a0) * V_), ans_tgt_.data() + sh.a0,
                               T(1) / A, As, V_);
    zero(dln, NC);
    if (every_row_answers()) {  // answer a is row a: dln directly, and the final norm the forward read
        linear_backward({dln, grad + off_.head}, dlogits, buf(mb::final_norm, 0, rc), head, As);
    } else {
        T* dlnf_ans = buf(mb::d_answer_norm, 0, static_cast<long>(sh.a0) * C);  // (As, C)
        zero(dlnf_ans, static_cast<std::size_t>(As) * C);
        linear_backward({dlnf_ans, grad + off_.head}, dlogits, buf(mb::answer_norm, 0, static_cast<long>(sh.a0) * C),
                        head, As);
        for (int a = 0; a < As; ++a)
            std::copy_n(dlnf_ans + static_cast<long>(a) * C, C,
                        buf(mb::d_norm, 0, static_cast<long>(ans_rows_[sh.a0 + a]) * C));
    }
    lap(op_head);
    zero(dres, NC);
    rmsnorm_backward(dres, grad + off_.norm, dln, buf(mb::residual, L, rc), buf(mb::final_rstd, 0, n0), p(off_.norm), N,
                     C);
    lap(op_norm);

    const block_rows rows{Bs, Tn, 0};
    for (int l = L - 1; l >= 0; --l) {  // dres: dL/d(stream l + 1) in, dL/d(stream l) out
        shard_mixer mix(*this, sh, l, scratch, lap);
        block_backward(block_tensors_at(grad, off_.blocks[l], m_.mlp), block_params_of(l),
                       block_acts_at(arena_.data(), plan_, l, n0, shape_), d, shape_, rows, mix);
    }
    embedding_backward(grad + off_.embed, off_.pos == block_offsets::npos ? nullptr : grad + off_.pos, dres,
                       tokens_ + n0, Bs, Tn, C);
    lap(op_embed);
}

// ---------------------------------------------------------------- forms, and what the last forward saw

template <class T>
void transformer<T>::set_attention_form(attention_form form, state_layout layout) {
    if (form == attention_form::parallel)
        recurrent_.reset();
    else
        recurrent_ = std::make_unique<recurrent_attention<T>>(a_, shape_.NH, shape_.HS, layout);
}

template <class T>
parallel_form transformer<T>::parallel_form_at(int Tn) const {
    return attn_.form_at(Tn);
}

template <class T>
long transformer<T>::nonpositive_denominator_rows() const {
    long n = 0;
    for (const auto& c : caches_) n += c.nonpositive_rows();
    return n;
}

template <class T>
T transformer<T>::min_abs_denominator() const {
    T m = std::numeric_limits<T>::infinity();
    for (const auto& c : caches_) m = std::min(m, c.min_abs_denominator());
    return m;
}

template class transformer<float>;
template class transformer<double>;

}  // namespace attnlab
