// Trains one run (SPEC §3 "Training", §4 metrics): the step loop, periodic
// test evaluation, divergence detection and the metrics each step reports.
// Where the metrics go (CSV, terminal) is the caller's business: the trainer
// hands every row to a metrics_sink.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>

#include "attnlab/model/transformer.hpp"
#include "attnlab/spec/run_config.hpp"
#include "attnlab/tasks/task.hpp"

namespace attnlab {

// Metrics over a set of examples, counted on answer positions only.
struct eval_metrics {
    double loss = 0;       // mean cross-entropy over all answer positions
    double token_acc = 0;  // per example: answers right / answers; then mean over examples
    double seq_acc = 0;    // fraction of examples with every answer right
};

// One row of metrics.csv.
struct metrics_row {
    int step = 0;
    std::string split;     // "train" (mean over the steps since the last row) or "test"
    eval_metrics m;
    double lr = 0;
    double grad_norm = 0;  // train: mean pre-clip norm since the last row
    double tokens_per_s = 0;
    double elapsed_s = 0;
};

enum class run_status { ok, diverged, interrupted };
const char* to_string(run_status s);

struct run_result {
    run_status status = run_status::ok;
    std::string reason;         // why it diverged or stopped ("" when ok)
    int steps = 0;              // optimizer steps completed
    eval_metrics final_test;
    eval_metrics best_test;     // best test token accuracy seen
    int best_step = 0;
    double wall_s = 0;
    std::size_t params = 0;
    // Training steps in which some softmax sum z_t was <= 0 (signed kernels:
    // linear, cosine, odd Taylor orders), and the first such step (0: none).
    long nonpositive_denominator_steps = 0;
    int first_nonpositive_step = 0;
};

// One line for the summary: why a run diverged, and the steps whose softmax
// denominator crossed zero ("" when there is nothing to say).
std::string describe(const run_result& r);

struct train_callbacks {
    std::function<void(const metrics_row&)> on_row;  // each metrics row, in order
    const std::atomic<bool>* stop = nullptr;         // set (e.g. by SIGINT): end the run as interrupted
    // Called once with the trained model when the run completes all its steps
    // (status ok; not for diverged or interrupted runs), after the last
    // metrics row: where the parameters go (a checkpoint) is the caller's business.
    std::function<void(const transformer<float>&)> on_finished = {};
};

// Scores `data` with the model in batches of at most chunk_B examples.
eval_metrics evaluate(transformer<float>& model, const batch& data, int chunk_B);

run_result train_run(const run_config& cfg, const train_callbacks& cb);

}  // namespace attnlab
