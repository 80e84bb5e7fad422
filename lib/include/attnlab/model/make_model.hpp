// The model of a run, built in one place: everything that trains, re-scores
// or measures a run's model (train_run, evaluate_run_dir, bench train, the
// memory estimate) sizes it from the run_config here, so they agree.
#pragma once
#include <cstddef>

#include "attnlab/config/run_config.hpp"
#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/model/transformer.hpp"

namespace attnlab {

// The largest batch a run feeds its model: train.batch sequences (at least
// one) of the longer of the training and test inputs (the test set is scored
// in chunks of train.batch).
struct batch_shape {
    int B = 1, T = 1;
};
batch_shape run_batch_shape(const run_config& cfg);

// The transformer of `cfg` (vocabulary of its task, positions up to its
// longest input) with its activations reserved for run_batch_shape(cfg).
// Parameters are zero: init_params or a checkpoint fills them.
template <class T = float>
transformer<T> make_model(const run_config& cfg);

// The buffers of make_model<float>(cfg) when `threads` threads (threads < 1:
// one) train it: what the memory estimate sums; scalar_bytes 8 gives those
// of make_model<double> (attnlab eval --precision double).
buffer_plan run_buffer_plan(const run_config& cfg, int threads, std::size_t scalar_bytes = sizeof(float));

}  // namespace attnlab
