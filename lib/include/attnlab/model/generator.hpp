// Autoregressive decoding, one token at a time (docs/attention.md "Recurrent form"):
// every attention layer keeps its recurrent state (S, z per head; or the
// key/value cache for exp and clamped kernels), so a step costs the same at
// every position for variants with a finite state and grows with the
// position for the cache. Each block is block.hpp's block_forward on one
// row, the function training calls. Used for generation and its benchmark.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/model/block.hpp"
#include "attnlab/model/buffer_plan.hpp"
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
    // A block's short convolution and attention, one step of their state.
    class step_mixer;

    const transformer<T>& model_;
    int max_len_, pos_ = 0;
    std::unique_ptr<rope_tables<T>> rope_;
    block_shape<T> shape_;
    buffer_plan plan_;      // of one row (B 1, T 1)
    std::vector<T> arena_;  // its float buffers: the residual streams and every block's views
    std::vector<std::unique_ptr<recurrent_attention<T>>> attn_;  // one per layer
    // per layer with model.short_conv K: (K, 3C), row i the product of i tokens ago (0 before the start)
    std::vector<std::vector<T>> conv_hist_;
    std::vector<T> logits_;  // (V)
};

}  // namespace attnlab
