// Memory of evaluation and token-by-token decoding (inference_memory.hpp).
#include "attnlab/train/inference_memory.hpp"

#include <stdexcept>

#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

std::size_t recurrent_state_bytes(const attention_config& a, int NH, int HS, int B, int T, state_layout layout,
                                  std::size_t scalar_bytes) {
    using sz = saturating_size;
    const sz hs = static_cast<std::size_t>(HS), t = static_cast<std::size_t>(T);
    sz per_head = hs;  // u
    if (has_finite_state(a)) {
        sz F = size_saturated;  // a feature size beyond 64 bits (feature_size throws)
        try {
            F = feature_size(a, HS, layout);
        } catch (const std::overflow_error&) {
        }
        per_head += F * hs + 3 * F;  // S, z, phi_q, phi_k
    } else {
        per_head += 2 * t * hs + 2 * t;  // keys, values, s, w
    }
    const sz heads = sz(static_cast<std::size_t>(B)) * static_cast<std::size_t>(NH);
    return (heads * per_head * scalar_bytes).value();
}

inference_memory estimate_eval_memory(const run_config& cfg, int threads, attention_form form, state_layout layout,
                                      std::size_t scalar_bytes) {
    const bool recurrent = form == attention_form::recurrent;
    // The recurrent form runs as one data-parallel shard (transformer::plan_shards).
    memory_estimate e = estimate_training_memory(cfg, recurrent ? 1 : threads, scalar_bytes);
    e.optimizer = 0;
    // A wider model reads the checkpoint's floats (checkpoint_load) beside its own parameters.
    if (scalar_bytes != sizeof(float)) e.scratch = add_saturating(e.scratch, e.params / scalar_bytes * sizeof(float));
    inference_memory out;
    out.model = e.total();
    if (recurrent) {
        const int HS = cfg.model.d_model / cfg.model.heads;
        const batch_shape shape = run_batch_shape(cfg);  // what make_model reserves, and eval scores in chunks of
        out.state = recurrent_state_bytes(cfg.attention, cfg.model.heads, HS, shape.B, shape.T, layout, scalar_bytes);
    }
    return out;
}

inference_memory estimate_generate_memory(const model_config& m, const attention_config& a, int vocab, int max_len,
                                          state_layout layout) {
    using sz = saturating_size;
    const int HS = m.d_model / m.heads;
    model_offsets off;
    const sz P = build_param_layout(m, a, vocab, max_len, off).total();
    sz model = 2 * P * sizeof(float);  // params, grads
    if (m.position == position_kind::rope)
        model += 2 * sz(static_cast<std::size_t>(max_len)) * static_cast<std::size_t>(HS / 2) * sizeof(float);
    model += sz(static_cast<std::size_t>(max_len)) * sizeof(double);  // the bench's step times
    inference_memory out;
    out.model = model.value();
    // and the short convolution's last K q, k, v products per layer
    const sz conv_hist =
        sz(static_cast<std::size_t>(m.short_conv)) * static_cast<std::size_t>(3 * m.d_model) * sizeof(float);
    out.state = (sz(static_cast<std::size_t>(m.layers)) *
                 (recurrent_state_bytes(a, m.heads, HS, 1, max_len, layout) + conv_hist))
                    .value();
    return out;
}

}  // namespace attnlab
