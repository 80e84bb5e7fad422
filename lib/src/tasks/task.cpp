// Training stream, fixed pool, validation and test sets shared by every task (docs/tasks.md),
// and make_task, which picks a task's generators from its config.
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "attnlab/tasks/generators.hpp"
#include "attnlab/tasks/text.hpp"

namespace attnlab {

namespace {

// B examples of one split, row b written by fill from r.
void fill_batch(batch& out, int B, const example_split& split, rng& r) {
    out.resize(B, split.T);
    for (int b = 0; b < B; ++b) {
        const size_t row = static_cast<size_t>(b) * split.T;
        split.fill(out.tokens.data() + row, out.targets.data() + row, r);
    }
}

}  // namespace

generated_task::generated_task(int vocab_size, example_split train, example_split test, int train_examples,
                               int val_examples, int test_examples, std::uint64_t seed)
    : vocab_size_(vocab_size),
      train_(std::move(train)),
      test_(std::move(test)),
      train_rng_(derive_seed(seed, stream_train)) {
    if (vocab_size_ < 1 || train_.T < 1 || test_.T < 1 || train_examples < 0 || val_examples < 0 || test_examples < 0)
        throw std::logic_error("generated_task: bad sizes (vocab " + std::to_string(vocab_size_) + ", T " +
                               std::to_string(train_.T) + "/" + std::to_string(test_.T) + ", examples " +
                               std::to_string(train_examples) + "/" + std::to_string(val_examples) + "/" +
                               std::to_string(test_examples) + ")");
    if (train_examples > 0) fill_batch(pool_, train_examples, train_, train_rng_);
    rng test_rng(derive_seed(seed, stream_test));
    fill_batch(test_set_, test_examples, test_, test_rng);
    rng val_rng(derive_seed(seed, stream_val));
    fill_batch(val_set_, val_examples, train_, val_rng);
}

void generated_task::next_train_batch(batch& out, int B) {
    if (B < 0) throw std::logic_error("next_train_batch: B < 0");
    if (pool_.B == 0) {
        fill_batch(out, B, train_, train_rng_);
        return;
    }
    const int T = train_.T;
    out.resize(B, T);
    for (int b = 0; b < B; ++b) {
        const auto src = static_cast<std::ptrdiff_t>(train_rng_.uniform_index(pool_.B)) * T;
        const auto dst = static_cast<std::ptrdiff_t>(b) * T;
        std::copy_n(pool_.tokens.begin() + src, T, out.tokens.begin() + dst);
        std::copy_n(pool_.targets.begin() + src, T, out.targets.begin() + dst);
    }
}

std::unique_ptr<task> make_task(const task_config& cfg, std::uint64_t seed, const std::atomic<bool>* stop) {
    switch (cfg.kind) {
        case task_kind::copy: return make_copy_task(cfg, seed);
        case task_kind::lookup: return make_lookup_task(cfg, seed);
        case task_kind::selective_copy: return make_selective_copy_task(cfg, seed);
        case task_kind::induction: return make_induction_task(cfg, seed);
        case task_kind::text: return make_text_task(cfg, seed, stop);
    }
    throw std::logic_error("make_task: unknown task kind");
}

}  // namespace attnlab
