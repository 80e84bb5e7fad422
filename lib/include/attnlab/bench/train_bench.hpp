// Training throughput benchmark (issue: speed against PyTorch): attnlab and
// the PyTorch reference (reference/bench_torch.py) train the same model on
// the same token batch, each at every thread setting asked for, in
// alternating rounds within one run; medians per side and setting, the ratio
// of the best settings, achieved GFLOP/s against a matrix-multiply probe,
// attnlab's peak memory against what training needs, and its time per op.
#pragma once
#include "attnlab/ops/peak_fma.hpp"
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

// Built-in configurations, exp/softmax, as spec text for parse_spec (so --set
// works): "quickstart" (2 layers, d_model 64, 2 heads, seq 64, batch 32, on
// lookup), "lm" (the language-model experiments' size: the same model on
// bytes of data/kjv.txt, seq 128, batch 32) and "larger" (4 layers, d_model
// 256, 4 heads, seq 256, batch 16, on lookup).
std::vector<std::string> bench_config_names();
std::string bench_config_yaml(const std::string& name);  // throws config_error for an unknown name

struct train_bench_options {
    run_config config;
    std::string label;  // shown in the report
    std::vector<int> threads{1, 2};
    int steps = 10;   // timed steps per repeat
    int repeats = 5;  // per round, side and thread setting
    int rounds = 2;   // alternating attnlab / PyTorch rounds
    int warmup = 3;   // untimed steps before each side's repeats
    bool torch = true;
    std::string python = "/usr/bin/python3";
    std::string torch_script;  // reference/bench_torch.py
    std::string work_dir;      // for the batch file handed to PyTorch
};

// Model FLOPs of one training step (a multiply-add = 2; backward = 2x the
// forward's products; the causal attention counts pairs j <= t only;
// elementwise ops not counted). The same count serves both implementations.
// forward_by_op splits the forward by the model's op-timing names (ops
// without products, such as rmsnorm, are absent); backward = 2x each.
struct flop_count {
    double forward = 0, backward = 0;
    std::map<std::string, double> forward_by_op;
    double total() const { return forward + backward; }
};
flop_count training_flops(const run_config& cfg, int vocab, int B, int Tn, int answers);

// What one training step needs to keep, in bytes of float32: parameters,
// their gradients, AdamW's two moments, and the activations the backward
// reads: the model's buffer plan (model/buffer_plan.hpp) for this batch and
// `answers` answer rows, its buffers marked kept_for_backward (per layer: the
// block input, both norms' outputs, q, k, v, u (and z, gates, features), the
// head outputs, the attention input of o, the MLP's pre-activations and
// activation; the answer rows' final norm and probabilities). Scratch that a
// backward can reuse across layers is not counted: the measured peak over
// this is the implementation's overhead.
struct memory_need {
    std::size_t params = 0, grads = 0, optimizer = 0, activations = 0;
    std::size_t total() const { return params + grads + optimizer + activations; }
};
memory_need training_memory_need(const run_config& cfg, int vocab, int B, int Tn, int answers);

// GFLOP/s of float n x n x n matrix products (Eigen, through OpenBLAS in the
// default build): one product per thread at once, each single-threaded (as
// the model's data-parallel threads run them), best of a few tries, summed.
double matmul_probe_gflops(int threads, int n = 512);

struct side_timing {
    std::string impl;  // "attnlab" or "pytorch"
    int threads = 1;
    std::vector<double> tokens_per_s;   // one per repeat, all rounds
    std::vector<double> round_medians;  // one per round: the median of its repeats
    std::string error;                  // non-empty: this side could not run
    double median() const;
};

// attnlab's best thread setting against PyTorch's within each round (each
// side's round median), one ratio per round both sides completed: pairs taken
// minutes apart see the same state of a shared machine, where medians over
// all rounds can mix a quiet round of one side with a busy one of the other.
std::vector<double> round_ratios(const std::vector<side_timing>& sides);

struct op_time {
    std::string name;
    double forward_ms = 0, backward_ms = 0;  // per step, thread 0's shard
};

struct train_bench_result {
    std::string label;
    run_config config;
    int vocab = 0, B = 0, T = 0, answers = 0;
    std::size_t param_count = 0;
    flop_count flops;
    std::vector<std::pair<int, double>> probe;      // (threads, GFLOP/s): the median of the rounds' probes
    std::vector<peak_fma_rate> peak;                // per thread setting: the peak FMA bound (ops/peak_fma.hpp)
    std::string blas_core;                          // OpenBLAS's kernel set on this CPU ("" without OpenBLAS)
    std::vector<std::vector<double>> probe_rounds;  // per thread setting (probe's order), one GFLOP/s a round
    std::vector<side_timing> sides;
    memory_need need;
    std::size_t peak_bytes = 0;  // attnlab's measured peak RSS growth (largest thread setting)
    int op_threads = 0;          // per-op times taken at this setting
    std::vector<op_time> ops;    // plus "optimizer (clip + AdamW)"
};

train_bench_result run_train_bench(const train_bench_options& opt,
                                   const std::function<void(const std::string&)>& progress);
std::string format_train_bench(const train_bench_result& r);

}  // namespace attnlab
