// copy (docs/tasks.md; Katharopoulos et al. 2020, Jelassi et al. 2024 "Repeat
// After Me"): x_1..x_n SEP x_1..x_n, padded with 0 to 2*max_len + 1 tokens;
// inputs seq[:-1], targets seq[1:] at the second copy. Example, n = 2 of
// max_len 3 (T = 6), SEP = S:
//   seq     x1 x2 S  x1 x2 0  0
//   tokens  x1 x2 S  x1 x2 0
//   targets -  -  x1 x2 -  -
#include <stdexcept>
#include <string>

#include "attnlab/tasks/generators.hpp"

namespace attnlab {

void copy_example(std::int32_t* tokens, std::int32_t* targets, int T, int vocab, int min_len, int max_len, rng& r) {
    const int n = static_cast<int>(r.uniform_int(min_len, max_len));
    const std::int32_t sep = vocab + 1;
    for (int t = 0; t < T; ++t) {
        tokens[t] = 0;
        targets[t] = no_target;
    }
    for (int i = 0; i < n; ++i) tokens[i] = static_cast<std::int32_t>(r.uniform_int(1, vocab));
    tokens[n] = sep;
    // Input position n + j (j = 0..n-1) is followed by x_{j+1}.
    for (int j = 0; j < n; ++j) {
        targets[n + j] = tokens[j];
        if (n + 1 + j < T) tokens[n + 1 + j] = tokens[j];
    }
}

std::unique_ptr<task> make_copy_task(const task_config& cfg, std::uint64_t seed) {
    // The ranges the spec schema checks; then the task's rules (min_len <= max_len, train and test).
    if (cfg.vocab < 1 || cfg.min_len < 1 || cfg.test_min_len < 1)
        throw std::logic_error("copy: need vocab >= 1 and lengths >= 1 (resolved defaults), got vocab " +
                               std::to_string(cfg.vocab) + ", min_len " + std::to_string(cfg.min_len) +
                               ", test_min_len " + std::to_string(cfg.test_min_len));
    require_task_rules(cfg);
    const int vocab = cfg.vocab;
    const int lo = cfg.min_len, hi = cfg.max_len;
    const int test_lo = cfg.test_min_len, test_hi = cfg.test_max_len;
    const int T = train_seq_len(cfg), test_T = test_seq_len(cfg);
    if (T < 2 * hi || test_T < 2 * test_hi) throw std::logic_error("copy: sequence too short");
    example_split train{
        T, [=](std::int32_t* tok, std::int32_t* tgt, rng& r) { copy_example(tok, tgt, T, vocab, lo, hi, r); }};
    example_split test{test_T, [=](std::int32_t* tok, std::int32_t* tgt, rng& r) {
                           copy_example(tok, tgt, test_T, vocab, test_lo, test_hi, r);
                       }};
    return std::make_unique<generated_task>(model_vocab_size(cfg), std::move(train), std::move(test),
                                            cfg.train_examples, resolved_val_examples(cfg), cfg.test_examples, seed);
}

}  // namespace attnlab
