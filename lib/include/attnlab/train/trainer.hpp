// Trains one run (docs/model.md "Training", docs/outputs.md): the step loop,
// periodic evaluation on the validation and test sets, divergence detection
// and the metrics each step reports. Where the metrics go (CSV, terminal) is
// the caller's business: the trainer hands every row to train_callbacks::on_row.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "attnlab/model/transformer.hpp"
#include "attnlab/config/run_config.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/build_info.hpp"

namespace attnlab {

// Metrics over a set of examples, counted on answer positions only.
struct eval_metrics {
    double loss = 0;       // mean cross-entropy over all answer positions
    double token_acc = 0;  // per example: answers right / answers; then mean over examples
    double seq_acc = 0;    // fraction of examples with every answer right; NaN where it does not apply (text)
};

// One row of metrics.csv. A value that does not apply to the row is empty
// (nullopt), never 0.
struct metrics_row {
    int step = 0;
    std::string split;  // "train" (mean over the steps since the last row), "val" or "test"
    eval_metrics m;
    std::optional<double> lr;            // the rate of step `step`; none at step 0 (no step taken)
    std::optional<double> grad_norm;     // train rows: mean pre-clip norm since the last row
    std::optional<double> tokens_per_s;  // train rows: training throughput since the last row
    double elapsed_s = 0;
};

enum class run_status { ok, diverged, interrupted };
const char* to_string(run_status s);

struct run_result {
    run_status status = run_status::ok;
    std::string reason;                  // why it diverged or stopped ("" when ok)
    int steps = 0;                       // optimizer steps completed
    eval_metrics final_val, final_test;  // at the last evaluation
    // The evaluation with the lowest validation loss (the first of equals),
    // and the validation and test metrics there: the test set never chooses.
    int best_step = 0;
    eval_metrics best_val, best_test;
    double wall_s = 0;
    std::size_t params = 0;
    // Training steps in which some softmax sum z_t was <= 0 (signed kernels:
    // linear, cosine, odd Taylor orders), and the first such step (0: none).
    long nonpositive_denominator_steps = 0;
    int first_nonpositive_step = 0;
    // The task's reference test losses (text: unigram and bigram byte
    // models), for scale; set by train_run, not part of a resume state.
    std::optional<baseline_losses> baselines;
    // The form training computed attention in at its sequence length
    // (quadratic or chunked; attention.form auto chooses), as the model
    // reports it; "" when unknown (result.yaml written before the chunked form
    // existed).
    std::string attention_form;
    // The build that trained the run (result.yaml's `build:`); absent in
    // files written before it was recorded. Provenance, not configuration.
    std::optional<build_info> build;
};

// Records the evaluation at `step` (evaluations come in step order, the first
// at step 0): it becomes the final one, and the best one when its validation
// loss is lower than the best so far (a NaN loss is never best).
void record_evaluation(run_result& r, int step, const eval_metrics& val, const eval_metrics& test);

// One line for the summary: why a run diverged, and the steps whose softmax
// denominator crossed zero ("" when there is nothing to say).
std::string describe(const run_result& r);

// Sums behind the train metrics of the steps since the last metrics row
// (the mean over them is the next `train` row).
struct train_window {
    double loss_sum = 0, token_acc_sum = 0, seq_right = 0;  // over answers, examples, examples
    long answers = 0, examples = 0;
    double grad_norm_sum = 0;  // pre-clip norms
    int steps = 0;             // optimizer steps in the window
    double seconds = 0;        // wall-clock time spent on them (tokens_per_s only)
};

// Everything train_run needs to go on after `step` optimizer steps exactly
// as if it had never stopped: the parameters, AdamW's moments and step count,
// the counters of the result so far and the open train-metrics window. The
// training data stream is not stored: it is regenerated from the seed and the
// batches of the steps already done are drawn and discarded (cheap). With the
// same build and thread count, a run stopped at any step and resumed from its
// state gives the same metrics and parameters, bit for bit, as one that was
// never stopped (only the wall-clock fields differ).
struct train_state {
    int step = 0;                       // optimizer steps completed (0..train.steps-1)
    std::vector<float> params;          // model parameters, param_layout order
    std::vector<float> adam_m, adam_v;  // AdamW first and second moments, same layout
    long adam_steps = 0;                // AdamW's step count t (bias corrections)
    run_result result;                  // counters so far; wall_s: training time so far
    train_window window;                // train metrics since the last row
    int threads = 0;                    // OpenMP threads the run was trained with (informative)
};

struct train_callbacks {
    std::function<void(const metrics_row&)> on_row;  // each metrics row, in order
    // Set (e.g. by SIGINT): the run ends as interrupted after the step in
    // progress; save_state receives its state first.
    const std::atomic<bool>* stop = nullptr;
    // Called once with the trained model when the run completes all its steps
    // (status ok; not for diverged or interrupted runs), after the last
    // metrics row: where the parameters go (a checkpoint) is the caller's business.
    std::function<void(const transformer<float>&)> on_finished = {};
    // Called once before the first step with the form the model computes
    // the attention of training batches in (transformer::parallel_form_at).
    std::function<void(parallel_form)> on_attention_form = {};
    // Receives the state of the run between two steps: when `stop` ends it,
    // and, if save_every_s > 0, after the first step that ends at least
    // save_every_s seconds after the last save (periodic saves, so that a
    // process killed outright loses little). Where it goes is the caller's business.
    std::function<void(const train_state&)> save_state = {};
    double save_every_s = 0;
};

// Scores `data` with the model in batches of at most chunk_B examples: in
// float as training does, or in double (a trained model's parameters
// widened: attnlab eval --precision double); the sums are in double either way.
template <class T>
eval_metrics evaluate(transformer<T>& model, const batch& data, int chunk_B);

// The scalar a trained model is evaluated in (attnlab eval --precision): its
// own float, or double, where round-off cannot hide what a variant computes
// (a high Taylor order at large negative scores).
enum class eval_precision { float32, float64 };
// "float" or "double", as --precision and the files of eval name it.
inline const char* to_string(eval_precision p) { return p == eval_precision::float64 ? "double" : "float"; }
template <class T>
inline constexpr eval_precision precision_of =
    std::is_same_v<T, double> ? eval_precision::float64 : eval_precision::float32;

// Trains the run from step 0, or, given `resume`, from the step after
// resume->step (its parameters, moments, counters and window are taken as
// they are). Throws std::invalid_argument when `resume` does not fit the
// config (sizes of its buffers, its step).
run_result train_run(const run_config& cfg, const train_callbacks& cb, const train_state* resume = nullptr);

}  // namespace attnlab
