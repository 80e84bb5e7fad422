// One block as free functions (model/block.hpp): block_backward = central
// differences of block_forward in double, for its parameters and its input;
// the backward accumulates (a second call adds the same again); generation
// (the generator, block_forward on one row) = the training forward's rows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "attnlab/attention/attention.hpp"
#include "attnlab/model/block.hpp"
#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/model/generator.hpp"
#include "attnlab/model/transformer.hpp"
#include "support/gradcheck.hpp"
#include "support/model_check.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {

// Whole sequences through the attention layer's own (batch-wide) forward and
// backward and the short convolution: what a training shard does, on one thread.
class sequences_mixer final : public position_mixer<double> {
public:
    sequences_mixer(const attention_layer<double>& attn, attention_cache<double>& cache, int B, int T, int C, int K)
        : attn_(attn), cache_(cache), B_(B), T_(T), C_(C), K_(K) {}
    void short_conv(double* out, const double* in, const double* w) override {
        short_conv_forward(out, in, w, B_, T_, 3 * C_, K_);
    }
    void attend(double* att, const attention_inputs<double>& in) override { attn_.forward(att, cache_, in, B_, T_); }
    void short_conv_backward(double* dinout, double* dw, const double* in, const double* w) override {
        attnlab::short_conv_backward(dinout, dw, in, w, B_, T_, 3 * C_, K_);
    }
    void attend_backward(const attention_grads<double>& g, double* ddenom, const double* datt,
                         const attention_inputs<double>& in) override {
        attention_grads<double> with_denom = g;
        with_denom.ddenom_params = ddenom;
        attn_.backward(with_denom, datt, cache_, in, B_, T_);
    }

private:
    const attention_layer<double>& attn_;
    attention_cache<double>& cache_;
    int B_, T_, C_, K_;
};

// The buffer plan of model m with attention a for B sequences of T tokens.
buffer_plan block_test_plan(const model_config& m, const attention_config& a, int B, int T, std::size_t float_bytes) {
    buffer_plan_input in;
    in.model = m;
    in.attention = a;
    in.vocab = 7;
    in.max_T = T;
    in.B = B;
    in.T = T;
    in.float_bytes = float_bytes;
    return plan_model_buffers(in);
}

// One block of model m (its layer 0) with attention a over B sequences of T,
// its parameters and input drawn at random, and the loss sum(out * R).
struct one_block {
    static constexpr int B = 2, T = 5;
    model_config m;
    attention_config a;
    model_offsets off;
    std::vector<double> params, grads, x, R;
    attention_layer<double> attn;
    attention_cache<double> cache;
    rope_tables<double> rope;
    block_shape<double> shape;
    buffer_plan plan;
    std::vector<double> arena;

    one_block(const model_config& m_, const attention_config& a_)
        : m(m_), a(a_), attn(a_, m_.heads, m_.d_model / m_.heads), rope(T, m_.d_model / m_.heads) {
        m.layers = 1;
        params.assign(build_param_layout(m, a, 7, T, off).total(), 0.0);
        grads.assign(params.size(), 0.0);
        shape = block_shape_of(m, a, m.position == position_kind::rope ? &rope : nullptr);
        plan = block_test_plan(m, a, B, T, sizeof(double));
        arena.assign(plan.arena_elements, 0.0);
        attn.init_cache(cache, B, T);
        rng r(17);
        for (auto& w : params) w = 0.4 * r.normal();
        x = random_vector(static_cast<std::size_t>(B) * T * m.d_model, r);
        R = random_vector(x.size(), r);
    }
    block_params<double> weights() const {
        block_params<double> p;
        p.w = block_tensors_at(static_cast<const double*>(params.data()), off.blocks[0], m.mlp);
        return p;
    }
    sequences_mixer mixer() { return sequences_mixer(attn, cache, B, T, m.d_model, m.short_conv); }
    // The views of the arena, with the block's input and output pointed at x and out.
    block_acts<double> acts(std::vector<double>& out) {
        block_acts<double> v = block_acts_at(arena.data(), plan, 0, 0, shape);
        v.x = x.data();
        v.out = out.data();
        return v;
    }
    double loss() {
        std::vector<double> out(x.size());
        sequences_mixer mix = mixer();
        block_forward(weights(), acts(out), shape, block_rows{B, T, 0}, mix);
        return dot(out, R);
    }
    // dx (R in, dL/dx out) and grads += after a forward.
    void backward(std::vector<double>& dx) {
        sequences_mixer mix = mixer();
        std::vector<double> out(x.size());  // not read
        block_scratch<double> d = block_scratch_at(arena.data(), plan, 0, shape);
        d.dres = dx.data();
        block_backward(block_tensors_at(grads.data(), off.blocks[0], m.mlp), weights(), acts(out), d, shape,
                       block_rows{B, T, 0}, mix);
    }
};

}  // namespace

TEST_CASE("block: backward = central differences of the forward in double, parameters and input", "[block][grad]") {
    const int variant = GENERATE(0, 1, 2, 3);
    model_config m = micro_model();
    attention_config a;  // exp / softmax
    switch (variant) {
        case 0: break;  // swiglu, rope
        case 1:
            m.mlp = mlp_kind::gelu;
            m.position = position_kind::none;
            a = gated_taylor_rmsnorm();
            break;
        case 2:
            m.mlp = mlp_kind::none;
            m.short_conv = 3;
            break;
        case 3:
            m.short_conv = 2;
            a = gated_taylor_rmsnorm();
            break;
    }
    INFO("variant " << variant);
    one_block b(m, a);

    b.loss();
    std::vector<double> dx = b.R;  // dL/d(out)
    b.backward(dx);
    const std::vector<double> numeric_params = numeric_gradient(b.params, [&] { return b.loss(); });
    const std::vector<double> numeric_x = numeric_gradient(b.x, [&] { return b.loss(); });
    REQUIRE(norm(numeric_params) > 0);
    CHECK(relative_error(b.grads, numeric_params) <= gradcheck_bound);
    CHECK(relative_error(dx, numeric_x) <= gradcheck_bound);

    // One rule: a backward accumulates. A second call, the parameter
    // gradients not zeroed, adds the same gradients again.
    const std::vector<double> once = b.grads, dx_once = dx;
    b.loss();
    dx = b.R;
    b.backward(dx);
    for (std::size_t i = 0; i < once.size(); ++i) CHECK(b.grads[i] == Approx(2 * once[i]).epsilon(1e-12).margin(1e-12));
    CHECK(dx == dx_once);
}

TEST_CASE("block: generation through the shared block = the training forward, row by row", "[block][recurrent]") {
    // Every position an answer: the parallel forward's logits at row t must
    // equal the generator's after its step t (block_forward on one row with
    // the recurrent state), in double.
    const std::vector<std::int32_t> tokens = {3, 1, 4, 1, 5, 6, 2, 6}, targets = {1, 4, 1, 5, 6, 2, 6, 5};
    const int T = 8, V = 7;
    model_config m = micro_model(mlp_kind::swiglu, position_kind::rope);
    const int variant = GENERATE(0, 1);
    attention_config a;
    if (variant == 1) {
        m.mlp = mlp_kind::gelu;
        m.short_conv = 3;
        a = gated_taylor_rmsnorm();
    }
    INFO("variant " << variant);
    transformer<double> model(m, a, V, T);
    model.init_params(5);
    rng r(6);
    for (auto& w : model.params) w += 0.2 * r.normal();
    model.forward(tokens.data(), targets.data(), 1, T);
    const std::vector<double> logits = model.answer_logits();  // (T, V)
    generator<double> gen(model, state_layout::symmetric, T);
    for (int t = 0; t < T; ++t) {
        const std::vector<double>& z = gen.step(tokens[t]);
        for (int v = 0; v < V; ++v)
            CHECK(z[v] == Approx(logits[static_cast<std::size_t>(t) * V + v]).epsilon(1e-10).margin(1e-10));
    }
}

TEST_CASE("block: the buffer plan carves every arena buffer apart, 64-byte aligned", "[block]") {
    model_config m = micro_model();
    m.short_conv = 3;
    const buffer_plan plan = block_test_plan(m, gated_taylor_rmsnorm(), 3, 5, sizeof(float));
    struct span {
        std::size_t begin, end;
    };
    std::vector<span> spans;
    for (const buffer_entry& e : plan.entries) {
        if (e.offset == buffer_entry::npos) continue;
        CHECK(e.offset % 16 == 0);  // floats
        CHECK(e.stride % 16 == 0);
        CHECK(e.stride >= e.elements);
        spans.push_back({e.offset, e.offset + e.stride * e.copies});
    }
    std::sort(spans.begin(), spans.end(), [](const span& x, const span& y) { return x.begin < y.begin; });
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i - 1].end <= spans[i].begin);
    REQUIRE_FALSE(spans.empty());
    CHECK(spans.back().end <= plan.arena_elements);
    CHECK(plan[model_buffer::logits].offset == buffer_entry::npos);  // handed out as a vector
}
