// `attnlab bench train --seq-lens`: training time per token as the sequence
// grows at a constant number of tokens per step (the batch shrinks), for
// exp (quadratic) and finite-state numerators in the quadratic and the
// chunked form (attention/chunked.hpp); the crossover length of each
// finite-state variant, where the chunked form gets cheaper.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

struct seq_len_variant {
    std::string name;  // "exp", "elu1", "taylor2", "power2"
    attention_config attention;
};
// exp, elu1, taylor 2 and power 2, all with the softmax denominator.
std::vector<seq_len_variant> default_seq_len_variants();

struct seq_len_bench_options {
    model_config model;  // the timed model (vocabulary 64, every position a target)
    std::vector<int> seq_lens{256, 512, 1024, 2048, 4096};
    int tokens = 4096;  // per step: batch = max(1, tokens / T)
    int chunk = 64;     // attention.chunk of the chunked form
    int steps = 1;      // forward + backward steps per repeat
    int repeats = 5;    // rounds over all points, one timed repeat per point each (the median is reported)
    int warmup = 1;     // untimed steps per point and round
};

struct seq_len_point {
    std::string variant;
    parallel_form form = parallel_form::quadratic;
    int T = 0, B = 0;
    std::vector<double> ms_per_1k;                       // per repeat: milliseconds per 1000 tokens of a training step
    parallel_form auto_form = parallel_form::quadratic;  // what attention.form auto would pick
    double median() const;
};

// Every variant at every length, quadratic and (when it has one) chunked.
std::vector<seq_len_point> run_seq_len_bench(const seq_len_bench_options& opt,
                                             const std::vector<seq_len_variant>& variants,
                                             const std::function<void(const std::string&)>& progress);

// The crossover of one finite-state variant: the length where chunked and
// quadratic take the same time, interpolated in log T between the measured
// lengths around the first sign change; 0 when chunked is faster at every
// length measured (below the shortest), -1 when it is never faster.
double crossover_length(const std::vector<seq_len_point>& points, const std::string& variant);

std::string seq_len_bench_csv(const std::vector<seq_len_point>& points);
std::string seq_len_bench_report(const std::vector<seq_len_point>& points, const seq_len_bench_options& opt);

}  // namespace attnlab
