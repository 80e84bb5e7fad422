// The spec the end-to-end tests train: runs of a tiny exact-softmax model on
// lookup that take a fraction of a second each.
#pragma once
#include <string>

namespace attnlab::test {

// name NAME; seed 0; lookup with vocab 16, 8 tokens, 2 pairs and 16 test
// examples; 1 layer of d_model 16 with 2 heads; STEPS steps of batch 4 at lr
// 1e-3 (warmup 2), evaluated every EVAL_EVERY steps; then `rest` (sweep:,
// seeds:) after the base.
inline std::string tiny_lookup_spec(const std::string& name, int steps, int eval_every, const std::string& rest) {
    return "name: " + name +
           "\n"
           "base:\n"
           "  seed: 0\n"
           "  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}\n"
           "  model: {layers: 1, d_model: 16, heads: 2}\n"
           "  attention: {numerator: exp, denominator: softmax}\n"
           "  train: {steps: " +
           std::to_string(steps) + ", batch: 4, lr: 1.0e-3, warmup: 2, eval_every: " + std::to_string(eval_every) +
           "}\n" + rest;
}

}  // namespace attnlab::test
