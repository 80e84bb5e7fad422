// Per-example generators of the synthetic tasks (docs/tasks.md) and the one task
// class built on them. A generator writes one example, a row of T input ids
// and T targets (no_target off the answer positions), drawing only from the
// project rng so data is identical on every platform.
//
// generated_task owns the split logic shared by all tasks: the training
// stream from derive_seed(seed, stream_train), either fresh examples on every
// call or, when train_examples > 0, a pool of train_examples examples (the
// first train_examples examples of that same stream, made once) from which
// batches draw uniformly with replacement; the test set of test_examples
// examples from derive_seed(seed, stream_test); and the validation set of
// val_examples examples of the training split (its length and generator)
// from derive_seed(seed, stream_val). Both sets are made once, in the constructor.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/tasks/task_table.hpp"  // sizes and require_task_rules
#include "attnlab/util/rng.hpp"

namespace attnlab {

// copy: x_1..x_n SEP x_1..x_n, then pad 0, x_i uniform in 1..vocab,
// SEP = vocab + 1, n uniform in [min_len, max_len]; the row is the input
// seq[:-1] of a sequence of T + 1 tokens, T >= 2 * max_len. Targets seq[1:]
// at the answer positions n .. 2n-1 (the second copy), no_target elsewhere.
void copy_example(std::int32_t* tokens, std::int32_t* targets, int T, int vocab, int min_len, int max_len, rng& r);

// lookup (MQAR): zoology's multiquery_ar recipe for one example of length T
// with vocabulary V and P pairs; see lib/src/tasks/lookup.cpp.
void lookup_example(std::int32_t* tokens, std::int32_t* targets, int T, int V, int P, double power_a,
                    bool random_filler, rng& r);

// Unnormalised weights (g+1)^(power_a-1), g = 0..space-1, of the query slots.
std::vector<double> lookup_slot_weights(int space, double power_a);

// selective_copy (Gu & Dao 2023; S4's torch_copying_data, variable=True):
// writes T = L + 2M tokens and targets. Slots 0..L+M-1 hold M tokens uniform
// in 1..A-2 at M distinct uniformly chosen positions, in order, and blank 0
// elsewhere; slots L+M..L+2M-1 hold the marker A-1, and marker i's target is
// token i. See lib/src/tasks/selective_copy.cpp.
void selective_copy_example(std::int32_t* tokens, std::int32_t* targets, int A, int M, int L, rng& r);

// induction (Olsson et al. 2022; safari's induction_head): writes
// T = seq_len + 1 tokens and targets: seq_len tokens uniform in 1..V-2 with
// the trigger V-1 at one position p in [0, seq_len-3], then the trigger;
// the one target, at position seq_len, is the token at p + 1. Id 0 is
// reserved and never written. See lib/src/tasks/induction.cpp.
void induction_example(std::int32_t* tokens, std::int32_t* targets, int V, int seq_len, rng& r);

// One row: writes T tokens and T targets.
using example_fn = std::function<void(std::int32_t* tokens, std::int32_t* targets, rng& r)>;

struct example_split {
    int T = 0;
    example_fn fill;
};

class generated_task final : public task {
public:
    generated_task(int vocab_size, example_split train, example_split test, int train_examples, int val_examples,
                   int test_examples, std::uint64_t seed);

    int vocab_size() const override { return vocab_size_; }
    int train_seq_len() const override { return train_.T; }
    int test_seq_len() const override { return test_.T; }
    void next_train_batch(batch& out, int B) override;
    const batch& test_set() const override { return test_set_; }
    const batch& val_set() const override { return val_set_; }

private:
    int vocab_size_;
    example_split train_;
    example_split test_;
    rng train_rng_;
    batch pool_;      // (train_examples, T_train); empty when streaming fresh
    batch test_set_;  // (test_examples, T_test)
    batch val_set_;   // (val_examples, T_train)
};

std::unique_ptr<task> make_copy_task(const task_config& cfg, std::uint64_t seed);
std::unique_ptr<task> make_lookup_task(const task_config& cfg, std::uint64_t seed);
std::unique_ptr<task> make_selective_copy_task(const task_config& cfg, std::uint64_t seed);
std::unique_ptr<task> make_induction_task(const task_config& cfg, std::uint64_t seed);

}  // namespace attnlab
