// selective_copy (docs/tasks.md; Gu & Dao 2023, "Mamba", §3.1 and App. E.1),
// generated as S4's torch_copying_data(L, M, A, variable=True)
// (state-spaces/s4, src/dataloaders/datasets/copying.py), which the Mamba
// paper's selective copying uses. With A the vocabulary, M tokens to copy and
// L blanks, one example has T = L + 2M input positions:
//   - M tokens uniform in 1..A-2, with replacement, in draw order;
//   - M distinct positions among the L + M data slots 0..L+M-1, every subset
//     equally likely (S4: randperm(L+M)[:M], sorted); token i goes to the
//     i-th smallest position; the other L slots hold the blank 0;
//   - M markers A-1 at positions L+M .. L+2M-1;
//   - marker i (position L+M+i) has target token i: the model reads the
//     markers and answers the tokens in order. S4 compares its outputs at
//     the last M positions with the tokens in the same way; no target is
//     shifted, unlike copy's seq[1:].
// Example, A = 6 (content 1..4, marker 5), M = 3, L = 4, positions {1, 2, 5}:
//   tokens   0 3 1 0 0 4 0 5 5 5
//   targets  - - - - - - - 3 1 4
// Deviation: S4 draws a fresh example per sample index; here the stream or
// the fixed pool of generated_task, and our rng, so the data differ in value
// but not in distribution.
#include <stdexcept>
#include <string>

#include "attnlab/tasks/generators.hpp"

namespace attnlab {

void selective_copy_example(std::int32_t* tokens, std::int32_t* targets, int A, int M, int L, rng& r) {
    const int slots = L + M;
    const int T = slots + M;
    for (int t = 0; t < T; ++t) {
        tokens[t] = 0;
        targets[t] = no_target;
    }
    // The tokens go straight to their targets, then to their slots.
    for (int i = 0; i < M; ++i) {
        targets[slots + i] = static_cast<std::int32_t>(r.uniform_int(1, A - 2));
        tokens[slots + i] = A - 1;
    }
    // Selection sampling (Knuth, TAOCP 3.4.2, Algorithm S): slot s is taken
    // with probability (still needed) / (slots left), which makes every
    // M-subset equally likely and yields the positions in increasing order.
    int placed = 0;
    for (int s = 0; s < slots && placed < M; ++s) {
        const auto left = static_cast<std::uint64_t>(slots - s);
        if (r.uniform_index(left) < static_cast<std::uint64_t>(M - placed)) {
            tokens[s] = targets[slots + placed];
            ++placed;
        }
    }
    if (placed != M) throw std::logic_error("selective_copy: placed " + std::to_string(placed) + " of M tokens");
}

std::unique_ptr<task> make_selective_copy_task(const task_config& cfg, std::uint64_t seed) {
    const int A = cfg.vocab, M = cfg.n_tokens, L = cfg.noise_len;
    // The ranges the spec schema checks; then the task's rules (vocab >= 4).
    if (M < 1 || L < 0 || static_cast<long long>(L) + 2LL * M > (1LL << 30))
        throw std::logic_error(
            "selective_copy: need n_tokens >= 1, noise_len >= 0, noise_len + 2 n_tokens <= 2^30; got n_tokens " +
            std::to_string(M) + ", noise_len " + std::to_string(L));
    require_task_rules(cfg);
    auto fill = [=](std::int32_t* tok, std::int32_t* tgt, rng& r) { selective_copy_example(tok, tgt, A, M, L, r); };
    return std::make_unique<generated_task>(model_vocab_size(cfg), example_split{train_seq_len(cfg), fill},
                                            example_split{test_seq_len(cfg), fill}, cfg.train_examples,
                                            resolved_val_examples(cfg), cfg.test_examples, seed);
}

}  // namespace attnlab
