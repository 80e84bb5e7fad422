// Synthetic tasks (docs/tasks.md). A task turns a seed into a stream of
// training batches and two fixed sets, validation and test, each from its own
// seed stream: results choose on validation, the test set only reports. Each
// example is an input sequence and, at each position, either the target token
// (an answer position) or no_target; loss and accuracy count answer positions
// only.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/tasks/task_table.hpp"

namespace attnlab {

// no_target, the target of a position that is not an answer: config/kinds.hpp.

// Stream tags for derive_seed: the training stream, the test set and the
// validation set of one run seed are drawn from these disjoint streams
// (3 is the model's parameter init, model/transformer.cpp). Train and test
// keep the tags they always had, so test sets of earlier runs stay the same.
inline constexpr std::uint64_t stream_train = 1;
inline constexpr std::uint64_t stream_test = 2;
inline constexpr std::uint64_t stream_val = 4;

// B examples of length T, row-major (B, T).
struct batch {
    int B = 0;
    int T = 0;
    std::vector<std::int32_t> tokens;   // (B, T) input ids in [0, vocab_size)
    std::vector<std::int32_t> targets;  // (B, T) target id, or no_target

    void resize(int b, int t) {
        B = b;
        T = t;
        tokens.assign(static_cast<size_t>(b) * t, 0);
        targets.assign(static_cast<size_t>(b) * t, no_target);
    }
};

// Reference test losses in nats per token, for scale (text: byte models
// fitted on the train part with add-one smoothing, scored on the bytes the
// test set predicts; tasks/text.hpp).
struct baseline_losses {
    double unigram = 0;
    double bigram = 0;
};

class task {
public:
    virtual ~task() = default;
    virtual int vocab_size() const = 0;     // model vocabulary
    virtual int train_seq_len() const = 0;  // T of training batches
    virtual int test_seq_len() const = 0;   // T of the test set
    // Fill `out` with the next B training examples of the stream.
    virtual void next_train_batch(batch& out, int B) = 0;
    // The fixed test set (test_examples examples), generated once.
    virtual const batch& test_set() const = 0;
    // The fixed validation set (val_examples examples, T = train_seq_len()),
    // drawn like training examples (copy: training lengths), generated once.
    virtual const batch& val_set() const = 0;
    // Reference losses on the test set, for tasks that have them (text).
    virtual std::optional<baseline_losses> baselines() const { return std::nullopt; }
};

// Training stream seeded from derive_seed(seed, stream_train), test set from
// derive_seed(seed, stream_test), validation set from derive_seed(seed,
// stream_val): disjoint by construction. `stop`: see make_text_task.
std::unique_ptr<task> make_task(const task_config& cfg, std::uint64_t seed, const std::atomic<bool>* stop = nullptr);

}  // namespace attnlab
