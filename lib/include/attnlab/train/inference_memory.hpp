// How much memory evaluating a run (attnlab eval) or decoding token by token
// (attnlab bench generate) takes, in bytes, before anything is allocated: the
// verbs refuse a configuration that cannot fit (docs/outputs-policy.md,
// "Memory guard"). Sums saturate (util/saturating_size.hpp): a state too
// large for 64 bits counts as size_saturated.
#pragma once
#include <cstddef>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/config/run_config.hpp"
#include "attnlab/model/transformer.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

// Bytes of recurrent_attention<float>::reset(B, T) with NH heads of HS: per
// (b, h), a finite state's S (F, HS), z (F) and the features of q and k (F
// each), or the key/value cache's keys and values (T, HS) and its score and
// weight rows (T); and the output row u (HS). scalar_bytes 8: those of
// recurrent_attention<double>.
std::size_t recurrent_state_bytes(const attention_config& a, int NH, int HS, int B, int T, state_layout layout,
                                  std::size_t scalar_bytes = sizeof(float));

struct inference_memory {
    std::size_t model = 0;  // parameters (and the gradient buffer the model always has), activations, data
    std::size_t state = 0;  // the recurrent form's states or key/value caches
    std::size_t total() const { return add_saturating(model, state); }
};

// evaluate_run_dir with `threads`: the training estimate less AdamW's moments
// (the model, its buffers for train.batch x the longest input, the task's
// data), and with the recurrent form one layer's states for train.batch
// sequences (the layers share one recurrent_attention, reset per layer).
// scalar_bytes 8: evaluate_run_dir<double>, whose model and states take twice
// the bytes, plus the checkpoint's float values read before they are widened.
inference_memory estimate_eval_memory(const run_config& cfg, int threads, attention_form form, state_layout layout,
                                      std::size_t scalar_bytes = sizeof(float));

// One variant of bench generate: parameters and gradients, the RoPE tables,
// and every layer's state (batch 1) for max_len positions.
inference_memory estimate_generate_memory(const model_config& m, const attention_config& a, int vocab, int max_len,
                                          state_layout layout);

}  // namespace attnlab
