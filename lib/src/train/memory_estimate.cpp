// The memory of one training run: the model's buffer plan plus what the
// training loop allocates around the model (memory_estimate.hpp).
#include "attnlab/train/memory_estimate.hpp"

#include <algorithm>
#include <cstdint>

#include "attnlab/model/make_model.hpp"
#include "attnlab/tasks/text_split.hpp"
#include "attnlab/train/optimizer.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

namespace {
// Examples of an evaluation set: text holds only the windows that fit in its
// part of the file (task.size, recorded by the loader), the others `wanted`.
int eval_examples(const task_config& t, int wanted) {
    if (t.kind != task_kind::text || t.size <= 0) return std::max(wanted, 0);
    const text_split s = split_text(static_cast<std::size_t>(t.size), t.holdout);
    return static_cast<int>(eval_windows(s.e, t.seq_len, wanted));
}
}  // namespace

memory_estimate estimate_training_memory(const run_config& cfg, int threads, std::size_t scalar_bytes) {
    // Every sum and product saturates (util/saturating_size.hpp): a huge config is never estimated small.
    using sz = saturating_size;
    const buffer_plan plan = run_buffer_plan(cfg, threads, scalar_bytes);
    const sz P = plan.param_count, f = scalar_bytes;

    memory_estimate e;
    e.params = (P * f).value();         // transformer: params
    e.grads = (P * f).value();          // transformer: grads
    e.optimizer = (2 * P * f).value();  // adamw: first and second moments
    e.activations = plan.bytes(buffer_group::activations);
    e.attention = plan.bytes(buffer_group::attention);
    sz scratch = sz(plan.bytes(buffer_group::backward)) + plan.bytes(buffer_group::tables);
    e.per_thread = plan.bytes(buffer_group::per_thread);

    // The task (tasks/task.cpp): test set, validation set (training length),
    // training pool (train_examples > 0) and train_run's batch, tokens and
    // targets as int32 each.
    const task_config& t = cfg.task;
    const sz ids = 2 * sizeof(std::int32_t), train_T = static_cast<std::size_t>(train_seq_len(t));
    scratch += static_cast<std::size_t>(eval_examples(t, t.test_examples)) *
               sz(static_cast<std::size_t>(test_seq_len(t))) * ids;
    scratch += static_cast<std::size_t>(eval_examples(t, resolved_val_examples(t))) * train_T * ids;
    scratch += static_cast<std::size_t>(std::max(t.train_examples, 0)) * train_T * ids;
    scratch += static_cast<std::size_t>(run_batch_shape(cfg).B) * train_T * ids;
    scratch += sz(clip_grad_norm_partials(P.value())) * sizeof(double);
    if (t.kind == task_kind::text)
        scratch += static_cast<std::size_t>(std::max(t.size, 0));  // the file's bytes, held once
    e.scratch = scratch.value();
    return e;
}

}  // namespace attnlab
