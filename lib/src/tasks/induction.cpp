// induction (docs/tasks.md; Olsson et al. 2022, "In-context Learning and Induction
// Heads"), generated as safari's induction_head task (HazyResearch/safari,
// src/dataloaders/synthetics.py: generate_induction_head, ICLDataModule with
// its defaults induction_len = 1, induction_num_triggers = 1), the recipe of
// H3 and Hyena. With V the vocabulary (2 specials included) and N = seq_len:
//   - ids: 0 is safari's noop special ".", which induction_head never emits:
//     reserved, it appears in no input and no target (not padding: every
//     example fills all T positions); V-1 is the trigger, safari's
//     copy_prefix "=>"; content tokens are 1..V-2. These are safari's own ids
//     (its vocabulary is sorted as strings: "." first, "=>" last);
//   - x_0..x_{N-1} uniform over the V-2 content tokens;
//   - p uniform in [0, N-3] (numpy rng.integers(N - 2)); x_p becomes the
//     trigger, and the content token already at x_{p+1} is the target;
//   - the full sequence is x_0..x_{N-1}, trigger, target (N + 2 tokens);
//     inputs seq[:-1] (T = N + 1, ending with the trigger), and the one target
//     seq[1:] counted is the last: position N, the target after the earlier
//     trigger. The trigger occurs exactly twice (p and N); the target token
//     may also occur elsewhere.
// Example, V = 6 (content 1..4, trigger 5), N = 6, p = 2:
//   seq      3 1 5 4 2 1 5 4
//   tokens   3 1 5 4 2 1 5
//   targets  - - - - - - 4
// Deviations from safari: (1) safari trains on the next token at every
// position and tests on the last only; docs/tasks.md counts only answer positions,
// so here training and test both use the last position alone. (2) safari
// builds fixed train and test sets of distinct sequences (torch.unique, then
// redraws); here the training stream is fresh (or a pool, train_examples) and
// the test set comes from a disjoint seed, without deduplication. (3) safari's
// coin "with probability 1/2 use one trigger" is a no-op at its default of one
// trigger and is not drawn; our rng replaces numpy's, so values differ but
// the distribution is the same.
#include <stdexcept>
#include <string>

#include "attnlab/tasks/generators.hpp"

namespace attnlab {

void induction_example(std::int32_t* tokens, std::int32_t* targets, int V, int seq_len, rng& r) {
    const int N = seq_len;
    const std::int32_t trigger = V - 1;
    for (int t = 0; t < N; ++t) {
        tokens[t] = static_cast<std::int32_t>(r.uniform_int(1, V - 2));
        targets[t] = no_target;
    }
    const int p = static_cast<int>(r.uniform_index(static_cast<std::uint64_t>(N - 2)));
    tokens[p] = trigger;
    tokens[N] = trigger;
    targets[N] = tokens[p + 1];
}

std::unique_ptr<task> make_induction_task(const task_config& cfg, std::uint64_t seed) {
    const int V = cfg.vocab, N = cfg.seq_len;
    // The range the spec schema checks; then the task's rules (vocab >= 4).
    if (N < 3 || N > (1 << 30))
        throw std::logic_error("induction: need 3 <= seq_len <= 2^30; got seq_len " + std::to_string(N));
    require_task_rules(cfg);
    auto fill = [=](std::int32_t* tok, std::int32_t* tgt, rng& r) { induction_example(tok, tgt, V, N, r); };
    return std::make_unique<generated_task>(model_vocab_size(cfg), example_split{train_seq_len(cfg), fill},
                                            example_split{test_seq_len(cfg), fill}, cfg.train_examples,
                                            resolved_val_examples(cfg), cfg.test_examples, seed);
}

}  // namespace attnlab
