// Benchmark of autoregressive generation (issue: softmax attention as an
// RNN): per-token time of decoding as the sequence grows, for exp with its
// key/value cache against recurrent variants with a fixed-size state.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/config/run_config.hpp"

namespace attnlab {

struct generate_variant {
    std::string name;  // e.g. "taylor2-symmetric"
    attention_config attention;
    state_layout layout = state_layout::symmetric;
};

// exp (KV cache); taylor orders 1..4 in both layouts; elu1.
std::vector<generate_variant> default_generate_variants();

struct generate_bench_options {
    model_config model;  // default below: 2 layers, d_model 64, 4 heads (head size 16)
    int vocab = 64;
    int max_len = 8192;  // decode this many tokens per variant
    int window = 32;     // per-token time at length L: median of the `window` steps before L
    std::uint64_t seed = 0;
    generate_bench_options();
};

struct generate_point {
    std::string variant;
    std::size_t state_floats = 0;  // per layer and head at this length (the cache grows)
    int length = 0;                // tokens decoded so far
    double us_per_token = 0;       // median over the window before `length`
};

// Lengths 64, 128, ..., up to max_len (and max_len itself).
std::vector<int> generate_lengths(int max_len);

// Decodes max_len tokens greedily with each variant (random weights; the
// cost does not depend on them) and times every step. `progress` gets a line
// per variant.
std::vector<generate_point> run_generate_bench(const generate_bench_options& opt,
                                               const std::vector<generate_variant>& variants,
                                               const std::function<void(const std::string&)>& progress);

// The CSV of the points, and the text report: per-token time per length,
// flatness (time at max_len over time at 256), crossover length against the
// cache, and the symmetric layout's size and speed against the full one.
std::string generate_bench_csv(const std::vector<generate_point>& points);
std::string generate_bench_report(const std::vector<generate_point>& points, const std::string& cache_variant);

}  // namespace attnlab
