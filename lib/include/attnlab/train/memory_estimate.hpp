// How much memory training one run takes, in bytes, before it starts: the
// runner refuses a sweep whose runs cannot fit (attnlab run --max-memory).
//
// The estimate adds up what train_run allocates for float training: the
// model's parameters and gradients, every buffer of its plan (buffer_plan.hpp:
// activations, attention caches, backward scratch, RoPE tables and the
// per-thread buffers of the data-parallel passes, for the batch make_model
// reserves), AdamW's two moments, the gradient norm's partial sums and the
// task's data (test set, training pool, one batch). It leaves out what does
// not grow with the run: the program, its libraries, thread stacks and
// Eigen's small product blocking buffers (a few MiB in all).
// tests/test_memory_estimate.cpp compares the total with the peak memory of a
// real run.
#pragma once
#include <cstddef>

#include "attnlab/config/run_config.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

struct memory_estimate {
    std::size_t params = 0;       // the flat parameter buffer
    std::size_t grads = 0;        // its gradient, same size
    std::size_t optimizer = 0;    // AdamW's first and second moments
    std::size_t activations = 0;  // transformer::reserve: residual streams, per-layer activations, head and loss
    std::size_t attention = 0;    // every layer's attention_cache: sums, numerators, features
    std::size_t scratch = 0;      // backward scratch of the model, RoPE tables, the task's data
    std::size_t per_thread = 0;   // per data-parallel shard (one per thread, at most one per sequence of
                                  // the batch): attention scratch, and a gradient buffer for all but the first
    // Every term and the total saturate at size_saturated (util/saturating_size.hpp) instead of wrapping.
    std::size_t total() const {
        std::size_t sum = 0;
        for (std::size_t term : {params, grads, optimizer, activations, attention, scratch, per_thread})
            sum = add_saturating(sum, term);
        return sum;
    }
};

// Bytes to train `cfg` in float with `threads` OpenMP threads (threads < 1 counts as 1).
// The estimate grows with the thread count: per_thread is the only term that does.
// scalar_bytes 8: the same model in double (the evaluation of eval --precision double).
memory_estimate estimate_training_memory(const run_config& cfg, int threads, std::size_t scalar_bytes = sizeof(float));

}  // namespace attnlab
