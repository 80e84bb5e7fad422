// The memory of one training run: the model's buffer plan plus what the
// training loop allocates around the model (memory_estimate.hpp).
#include "attnlab/train/memory_estimate.hpp"

#include <algorithm>
#include <cstdint>

#include "attnlab/model/make_model.hpp"
#include "attnlab/train/optimizer.hpp"

namespace attnlab {

memory_estimate estimate_training_memory(const run_config& cfg, int threads) {
    using sz = std::size_t;
    const buffer_plan plan = run_buffer_plan(cfg, threads);
    const sz P = plan.param_count, f = sizeof(float);

    memory_estimate e;
    e.params = P * f;         // transformer: params
    e.grads = P * f;          // transformer: grads
    e.optimizer = 2 * P * f;  // adamw: first and second moments
    e.activations = plan.bytes(buffer_group::activations);
    e.attention = plan.bytes(buffer_group::attention);
    e.scratch = plan.bytes(buffer_group::backward) + plan.bytes(buffer_group::tables);
    e.per_thread = plan.bytes(buffer_group::per_thread);

    // The task (tasks/task.cpp): test set, validation set (training length),
    // training pool (train_examples > 0) and train_run's batch, tokens and
    // targets as int32 each.
    const task_config& t = cfg.task;
    const sz ids = 2 * sizeof(std::int32_t), train_T = static_cast<sz>(train_seq_len(t));
    e.scratch += static_cast<sz>(std::max(t.test_examples, 0)) * static_cast<sz>(test_seq_len(t)) * ids;
    e.scratch += static_cast<sz>(std::max(resolved_val_examples(t), 0)) * train_T * ids;
    e.scratch += static_cast<sz>(std::max(t.train_examples, 0)) * train_T * ids;
    e.scratch += static_cast<sz>(run_batch_shape(cfg).B) * train_T * ids;
    e.scratch += clip_grad_norm_partials(P) * sizeof(double);
    return e;
}

}  // namespace attnlab
