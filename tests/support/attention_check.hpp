// Gradient check of the attention layer alone (attention.hpp) in double:
// the variant's q, k, v, the gates it uses and its denominator parameters.
#pragma once
#include "attnlab/attention/attention.hpp"
#include "gradcheck.hpp"

namespace attnlab::test {

// Gradient check of the attention layer alone for one variant: q, k, v, the
// gates it uses and its denominator parameters are all checked.
struct layer_dims {
    int B = 2, T = 5, NH = 2, HS = 3;
};

// Every quadratic-form attention of the test takes `path` while this lives.
struct forced_quadratic_path {
    quadratic_path old;
    explicit forced_quadratic_path(quadratic_path path) : old(force_quadratic_path(path)) {}
    ~forced_quadratic_path() { force_quadratic_path(old); }
    forced_quadratic_path(const forced_quadratic_path&) = delete;
    forced_quadratic_path& operator=(const forced_quadratic_path&) = delete;
};

inline void check_attention_layer_once(const attention_config& cfg, layer_dims dims);

// The check in the path the layer picks by itself (the kept weights at
// these sizes), then with the tiled path forced, then, for a variant the
// fused path serves and short rows, the fused path at head size 16 (the
// smallest it serves; its longer rows are checked against the kept weights
// in test_attention_chunked.cpp).
inline void check_attention_layer(const attention_config& cfg, layer_dims dims = {}) {
    check_attention_layer_once(cfg, dims);
    {
        INFO("tiled path");
        const forced_quadratic_path tiled(quadratic_path::tiled);
        check_attention_layer_once(cfg, dims);
    }
    layer_dims fused = dims;
    fused.HS = 16;
    if (dims.T > 8 || !fused_path_serves(cfg, fused.HS)) return;
    INFO("fused path, HS 16");
    const forced_quadratic_path path(quadratic_path::fused);
    const long runs = fused_attention_runs();
    check_attention_layer_once(cfg, fused);
    CHECK(fused_attention_runs() > runs);
}

inline void check_attention_layer_once(const attention_config& cfg, layer_dims dims) {
    const int B = dims.B, T = dims.T, NH = dims.NH, HS = dims.HS, C = NH * HS, N = B * T;
    attention_layer<double> att(cfg, NH, HS);
    attention_cache<double> cache;
    att.init_cache(cache, B, T);
    rng r(21);
    vec q = random_vector(N * C, r, 0.7), k = random_vector(N * C, r, 0.7), v = random_vector(N * C, r);
    vec g_in(N * NH), g_out(N * NH), params(att.denominator_param_count());
    for (auto& g : g_in) g = 0.1 + 0.8 * r.uniform();
    for (auto& g : g_out) g = 0.1 + 0.8 * r.uniform();
    for (auto& p : params) p = 1.0 + 0.3 * r.normal();

    std::vector<vec*> inputs = {&q, &k, &v};
    if (att.has_in_gate()) inputs.push_back(&g_in);
    if (att.has_out_gate()) inputs.push_back(&g_out);
    if (!params.empty()) inputs.push_back(&params);
    auto in_of = [&] {
        attention_inputs<double> in;
        in.q = q.data();
        in.k = k.data();
        in.v = v.data();
        if (att.has_in_gate()) in.in_gate = g_in.data();
        if (att.has_out_gate()) in.out_gate = g_out.data();
        if (!params.empty()) in.denom_params = params.data();
        return in;
    };
    op_check c{inputs, [&](vec& out) { att.forward(out.data(), cache, in_of(), B, T); },
               [&](std::vector<vec>& g, const vec& d) {
                   attention_grads<double> ag;
                   ag.dq = g[0].data();
                   ag.dk = g[1].data();
                   ag.dv = g[2].data();
                   std::size_t i = 3;
                   if (att.has_in_gate()) ag.din_gate = g[i++].data();
                   if (att.has_out_gate()) ag.dout_gate = g[i++].data();
                   if (!params.empty()) ag.ddenom_params = g[i++].data();
                   att.backward(ag, d.data(), cache, in_of(), B, T);
               },
               static_cast<size_t>(N * C)};
    c.run();
}

}  // namespace attnlab::test
