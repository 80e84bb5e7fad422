// The memory of one training run, term by term from the buffers that
// train_run, transformer<float> and attention_layer allocate (see the header).
// Sizes: N = B * T rows (B = train.batch, T = the longer of the train and test
// inputs, as train_run reserves), C = d_model, F = MLP hidden size, NH heads
// of HS, V = model vocabulary, L = layers, P = parameter count.
#include "attnlab/model/memory_estimate.hpp"

#include <algorithm>
#include <cstdint>

#include "attnlab/attention/attention.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

memory_estimate estimate_training_memory(const run_config& cfg, int threads) {
    using sz = saturating_size;  // every sum and product saturates: a huge config is never estimated small
    constexpr sz f = sizeof(float);
    const model_config& m = cfg.model;
    const attention_config& a = cfg.attention;
    const task_config& t = cfg.task;

    const sz V = static_cast<sz>(model_vocab_size(t));
    const sz train_T = static_cast<sz>(train_seq_len(t)), test_T = static_cast<sz>(test_seq_len(t));
    const sz T = std::max(train_T, test_T);  // train_run: reserve(batch, max(train T, test T))
    const sz B = static_cast<sz>(std::max(cfg.train.batch, 1));
    const sz N = B * T;
    const sz C = static_cast<sz>(m.d_model), NH = static_cast<sz>(m.heads), HS = C / NH;
    const sz F = static_cast<sz>(resolved_mlp_hidden(m));
    const sz L = static_cast<sz>(m.layers);
    const sz NC = N * C, NF = N * F, NG = N * NH;
    const bool rope = m.position == position_kind::rope;
    const bool mlp = m.mlp != mlp_kind::none;
    const bool in_gate = a.in_gate;
    const bool out_gate = a.out_gate || a.denominator == denominator_kind::gate;  // uses_out_gate()
    const bool features = a.numerator == numerator_kind::elu1 || a.numerator == numerator_kind::relu ||
                          a.numerator == numerator_kind::cosine;  // make_feature_map() != nullptr
    // denominator<T>::param_count(HS): rmsnorm's gain, layernorm's gain and bias.
    const sz denom_params = a.denominator == denominator_kind::rmsnorm     ? HS
                            : a.denominator == denominator_kind::layernorm ? 2 * HS
                                                                           : 0;

    memory_estimate e;
    // transformer(): params.assign(layout.total()), grads.assign(layout.total()).
    model_offsets off;
    const sz P =
        build_param_layout(m, a, model_vocab_size(t), std::max(train_seq_len(t), test_seq_len(t)), off).total();
    e.params = (P * f).value();
    e.grads = (P * f).value();
    // adamw(): m_ and v_, layout.total() each (optimizer.cpp).
    e.optimizer = (2 * P * f).value();

    // transformer::reserve(B, T):
    sz act = 0;
    act += (L + 1) * NC;            // x_: L + 1 residual streams
    sz per_layer = 0;               // acts_[l]:
    per_layer += NC + N;            // ln1, rstd1
    per_layer += 3 * NC;            // q, k, v (q and k rotated in place with RoPE)
    if (in_gate) per_layer += NG;   // g_in
    if (out_gate) per_layer += NG;  // g_out
    per_layer += 2 * NC;            // att, mid
    if (mlp) {
        per_layer += NC + N;                             // ln2, rstd2
        per_layer += 2 * NF;                             // fc_up, act
        if (m.mlp == mlp_kind::swiglu) per_layer += NF;  // fc_gate
    }
    act += L * per_layer;
    act += NC + N;                                                     // lnf_, rstdf_
    act += NC;                                                         // lnf_ans_ (every row may be an answer)
    act += 2 * N * V;                                                  // logits_, probs_
    act += N;                                                          // losses_ (reserved)
    e.activations = (act * f + 3 * N * sizeof(std::int32_t)).value();  // ans_rows_ (int), ans_tgt_, ans_pred_

    // attention_layer::init_cache -> attention_cache::resize(B, T, NH, HS, P_denom), per layer
    // (the (T, T) scores and weights live in the per-thread scratch below, a row block at a time):
    const sz bh = B * NH;
    sz cache = 0;
    cache += bh * T;                                              // wsum (B, NH, T)
    cache += bh * T * HS;                                         // numer (B, NH, T, HS)
    cache += bh * denom_params;                                   // dparams (B, NH, P_denom)
    cache += bh;                                                  // min_abs_wsum (B * NH)
    if (features) cache += 2 * bh * T * HS;                       // phi_q, phi_k (feature maps only)
    e.attention = (L * (cache * f + bh * sizeof(long))).value();  // + nonpositive_wsum (B * NH longs)

    // transformer::reserve, backward scratch (allocated whatever the config):
    sz scr = 0;
    scr += 6 * NC;            // dres_, dln_, dq_, dk_, dv_, datt_
    if (rope) scr += 2 * NC;  // dq_raw_, dk_raw_
    scr += 3 * NF;            // dfc_gate_, dfc_up_, dact_
    scr += 3 * NG;            // dg_in_, dg_out_, dgate_pre_
    scr += NC + N * V;        // dlnf_ans_, dlogits_
    // rope_tables(max_T, HS): cos and sin, (max_T, HS / 2) each.
    if (rope) scr += 2 * T * (HS / 2);
    sz data = scr * f;
    // The task (tasks/task.cpp): test set, training pool (train_examples > 0)
    // and train_run's batch, tokens and targets as int32 each.
    const sz ids = 2 * sizeof(std::int32_t);
    data += static_cast<sz>(std::max(t.test_examples, 0)) * test_T * ids;
    data += static_cast<sz>(std::max(t.train_examples, 0)) * train_T * ids;
    data += B * train_T * ids;
    // clip_grad_norm (optimizer.cpp): one double per chunk of 4096 gradients.
    data += (P + 4095) / 4096 * sizeof(double);
    e.scratch = data.value();

    // Data parallelism (transformer::plan_shards): the batch is split into
    // S = min(threads, B) shards of whole sequences, one per OpenMP thread.
    // Each shard has its attention_scratch (scratch_[s], resized by
    // attention_scratch::resize(T, HS)): S, W, dW (block_rows, T); Vg, dU,
    // dVg, dFq, dFk (T, HS), whatever the variant; dz (T); row (HS). Shards
    // 1.. accumulate their gradients in their own buffer of P floats
    // (shard_grads_), summed into grads after the backward.
    const sz shards = std::min(static_cast<sz>(std::max(threads, 1)), B);
    const sz block = static_cast<sz>(attention_scratch<float>::block_rows) * T;
    const sz attention_scratch_floats = 3 * block + 5 * T * HS + T + HS;
    e.per_thread = ((shards * attention_scratch_floats + (shards - 1) * P) * f).value();
    return e;
}

}  // namespace attnlab
