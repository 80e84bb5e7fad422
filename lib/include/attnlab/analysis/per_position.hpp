// Per-position loss (attnlab eval RUN --per-position FILE.csv, docs/outputs.md):
// the mean test cross-entropy at each position t = 0..T-1 of the evaluation
// windows, over the answer positions only (every position for text; the
// answers of a synthetic task). It shows how much of the context a model
// uses: a language model's loss falls with t as long as more context helps.
// The sums are those of the test loss, grouped by position, so the mean of
// the rows weighted by their counts is the test loss.
#pragma once
#include <string>
#include <vector>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/config/run_config.hpp"
#include "attnlab/model/transformer.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

// The answers at one position over every example.
struct position_loss {
    long count = 0;       // answer positions t over the examples
    double loss_sum = 0;  // their cross-entropy, nats
};

// Forwards `data` (B, T) in chunks of chunk_B examples: (T) sums by position.
template <class T>
std::vector<position_loss> per_position_losses(transformer<T>& model, const batch& data, int chunk_B);

// The same for a finished run (trained with `trained`) scored as `evaluated`
// (eval's --set: test-time keys, or another variant with the same
// parameters; analysis/truncation.hpp) in `form`, in T: float as trained or
// double (eval --precision double; run/run_dir.hpp's load_run_model).
template <class T = float>
std::vector<position_loss> per_position_run_dir(const std::string& run_dir, const run_config& trained,
                                                const run_config& evaluated, attention_form form, state_layout layout);

// position,loss,bits_per_byte,count,trained,evaluated,precision: one row per
// position; loss empty where no answer falls (count 0), bits_per_byte for text
// only, trained and evaluated the variants (variant_label), precision the
// scalar the model was scored in (float or double).
std::string per_position_csv(const run_config& trained, const run_config& evaluated,
                             const std::vector<position_loss>& rows,
                             eval_precision precision = eval_precision::float32);

}  // namespace attnlab
