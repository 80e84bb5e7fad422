// attnlab generate: sampling from a trained run, token by token, in the
// parallel form (the whole sequence through the model for every token) or
// the recurrent form (each layer's state, or the key/value cache of exp and
// clamped kernels: model/generator.hpp). docs/running.md "attnlab generate".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attnlab/model/transformer.hpp"
#include "attnlab/train/inference_memory.hpp"
#include "attnlab/util/rng.hpp"

namespace attnlab {

struct sample_options {
    int tokens = 200;                                 // tokens to generate
    double temperature = 1.0;                         // 0: greedy (argmax)
    int top_k = 0;                                    // 0: every token
    std::uint64_t seed = 0;                           // the draws' stream
    attention_form form = attention_form::recurrent;  // parallel: recompute every prefix
    state_layout layout = state_layout::symmetric;    // of the recurrent form's Taylor states
};

// The context a generation runs in: the prompt, cut to its last tokens when
// prompt + tokens would exceed `positions` (a learned position table's
// rows; 0: no limit), and the positions the model is built for.
struct sample_context {
    std::vector<std::int32_t> prompt;  // as fed to the model
    int dropped = 0;                   // tokens cut from the prompt's start
    int max_len = 0;                   // prompt + tokens
};
// Throws config_error when the prompt is empty or `tokens` alone leaves no
// room for one prompt token under `positions`.
sample_context fit_context(const std::vector<std::int32_t>& prompt, int tokens, int positions);

// The next token from logits (V): argmax when temperature is 0 (the first of
// equals), else a draw from softmax(logits / temperature) over the top_k
// largest (all when 0), with one uniform draw of `r`.
std::int32_t pick_token(const float* logits, int V, double temperature, int top_k, rng& r);

// Generates opt.tokens tokens after `prompt` (a fit_context prompt) with
// `model`, whose max_T must be at least prompt + tokens. on_token(token,
// seconds) is called as each token is chosen, with the time its step took
// (the prompt's steps are timed apart, in *prompt_s). Returns the tokens.
std::vector<std::int32_t> generate_tokens(transformer<float>& model, const std::vector<std::int32_t>& prompt,
                                          const sample_options& opt,
                                          const std::function<void(std::int32_t, double)>& on_token,
                                          double* prompt_s = nullptr);

// Memory of generate_tokens: the model and, per form, every layer's state
// (recurrent) or the activations of one max_len sequence (parallel).
inference_memory estimate_sample_memory(const model_config& m, const attention_config& a, int vocab, int max_len,
                                        attention_form form, state_layout layout);

}  // namespace attnlab
