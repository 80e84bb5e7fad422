// Autoregressive decoding, one token at a time (docs/attention.md "Recurrent form"):
// every attention layer keeps its recurrent state (S, z per head; or the
// key/value cache for exp and clamped kernels), so a step costs the same at
// every position for variants with a finite state and grows with the
// position for the cache. Used for generation and its benchmark.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/model/transformer.hpp"

namespace attnlab {

template <class T>
class generator {
public:
    // `model` must outlive the generator; max_len bounds positions (rope, KV cache).
    generator(const transformer<T>& model, state_layout layout, int max_len);

    void reset();
    // Feeds `token` at the next position; returns the logits (V) for the token after it.
    const std::vector<T>& step(std::int32_t token);
    int position() const { return pos_; }

private:
    const transformer<T>& model_;
    int max_len_, C_, NH_, HS_, F_, V_, pos_ = 0;
    std::vector<std::unique_ptr<recurrent_attention<T>>> attn_;  // one per layer
    std::unique_ptr<rope_tables<T>> rope_;
    // one-token activations
    std::vector<T> x_, ln_, q_, k_, v_, att_, proj_;  // (C)
    std::vector<T> qkv_raw_, qkv_conv_;               // (3C) the q, k, v product, and after the short convolution
    // per layer with model.short_conv K: (K, 3C), row i the product of i tokens ago (0 before the start)
    std::vector<std::vector<T>> conv_hist_;
    std::vector<T> g_in_, g_out_;           // (NH)
    std::vector<T> fc_gate_, fc_up_, act_;  // (F)
    std::vector<T> rstd_, logits_;          // (1), (V)
};

}  // namespace attnlab
