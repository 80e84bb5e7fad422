// The Taylor-term probe (attnlab probe RUN_DIR, docs/probe.md): which orders
// of exp(s) = sum_m s^m / m! a trained model's scores actually use. For every
// layer and head it runs the model on a fixed set (test or validation) and,
// over every causal pair (query t, key j <= t) of every example, averages
//   |s|^m / m!   for m = 0..max_order,
// where s is the score the numerator sees: q_t . k_j / sqrt(HS) after RoPE,
// then min(s, clamp) when the run clamps. The dominant order is the m with
// the largest mean term (Mongaras & Larson 2025 report 14-24 per layer for a
// 300M-parameter model, about 5 with a clamp at 5).
// Nothing is stored per pair: each (example, head) sums its pairs into its
// own partial, and the partials are added in (example, head) order, so the
// result does not depend on the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/model/transformer.hpp"
#include "attnlab/run/run_dir.hpp"  // probe_terms_filename, probe_heads_filename
#include "attnlab/tasks/task.hpp"

namespace attnlab {

// Sums over score pairs of |s|^m / m! (m = 0..max_order), |s| and max |s|.
class score_term_sums {
public:
    explicit score_term_sums(int max_order = 0);
    int max_order() const { return static_cast<int>(terms_.size()) - 1; }
    // Adds n scores (already scaled and clamped), e.g. one query row. The
    // sums depend on how scores are grouped into calls only in the last bits.
    void add(const double* s, int n);
    void add(double s) { add(&s, 1); }
    // Adds another sum's pairs (same max_order).
    void merge(const score_term_sums& other);

    std::uint64_t pairs() const { return pairs_; }
    const std::vector<double>& term_sums() const { return terms_; }  // (max_order + 1)
    double abs_sum() const { return abs_sum_; }
    double abs_max() const { return abs_max_; }

private:
    std::vector<double> terms_;
    std::vector<double> inverse_;     // 1/m, (max_order + 1)
    std::vector<double> abs_, term_;  // scratch of add: |s_j| and its current term, (n)
    double abs_sum_ = 0, abs_max_ = 0;
    std::uint64_t pairs_ = 0;
};

// The argmax over m of `mean_terms` (the smallest m among equal maxima).
int dominant_order(const std::vector<double>& mean_terms);

// One head of one layer, over every pair of the probed examples.
struct probe_head {
    int layer = 0, head = 0;
    std::uint64_t pairs = 0;
    std::vector<double> mean_abs_term;  // (max_order + 1): mean |s|^m / m!
    int dominant_order = 0;             // argmax of mean_abs_term
    double mean_abs_score = 0, max_abs_score = 0;
};

struct probe_result {
    std::string split;  // "test" or "val"
    int examples = 0;   // examples probed (the first of the set)
    int max_order = 0;
    int layers = 0, heads_per_layer = 0;
    std::vector<probe_head> heads;  // layer-major: heads[layer * heads_per_layer + head]
};

struct probe_options {
    int max_order = 30;
    std::string split = "test";  // "test" or "val"
    int examples = 0;            // the first N examples of the set; 0: all
    // Called after each chunk of examples with (examples done, examples in all).
    std::function<void(int, int)> progress;
};

// Probes `model` (parameters loaded, parallel form) on the first `examples`
// rows of `data`, forwarding chunk_B examples at a time. The model's
// attention must be a score kernel (std::invalid_argument otherwise).
probe_result probe_model(transformer<float>& model, const batch& data, int examples, int chunk_B,
                         const probe_options& opt);

// Probes a finished run: reads <run_dir>/config.yaml and model.safetensors as
// `attnlab eval` does (the same errors for a missing or damaged run), builds
// the run's test or validation set and calls probe_model with chunks of
// train.batch. Throws config_error for a feature-map numerator (no score) or
// more examples than the set has.
probe_result probe_run_dir(const std::string& run_dir, const probe_options& opt);

// Why the probe cannot measure `a` ("" when it can): feature maps have no score.
std::string probe_refusal(const attention_config& a);

// The outputs, written atomically into `dir`: probe_terms_filename and
// probe_heads_filename (named in run/run_dir.hpp with is_probe_output, so
// that a run's folder knows them without including the probe).
void write_probe_files(const std::string& dir, const probe_result& r);
std::string probe_terms_csv(const probe_result& r);
std::string probe_heads_csv(const probe_result& r);
// The table attnlab probe prints: per layer and head the dominant order,
// mean and max |s|.
std::string probe_table(const probe_result& r);

}  // namespace attnlab
