// One fully resolved run configuration (docs/model.md, docs/tasks.md, docs/spec-reference.md): what a spec's `base`
// becomes after a sweep point, a seed and --set overrides are applied and
// every key has been checked. Defaults here are the documented defaults
// (docs/spec-reference.md); the loader fills every field.
#pragma once
#include <optional>
#include <string>

#include "attnlab/config/kinds.hpp"  // numerator_kind, denominator_kind, task_kind

namespace attnlab {

enum class position_kind { rope, learned, none };
enum class mlp_kind { swiglu, gelu, none };
enum class schedule_kind { cosine, constant };
// How training and parallel evaluation compute attention over a sequence
// (docs/attention.md, "The chunked form"): `automatic` (written `auto`) picks
// per sequence length by a cost model (attention/attention.hpp, choose_form).
enum class parallel_form { automatic, quadratic, chunked };

struct task_config {
    task_kind kind = task_kind::lookup;
    // copy: content tokens (ids 1..vocab); lookup: model vocabulary V;
    // selective_copy: model vocabulary A (blank 0, content 1..A-2, marker A-1);
    // induction: model vocabulary with its 2 specials (unused 0, content
    // 1..vocab-2, trigger vocab-1); text: not a key (bytes, 256)
    int vocab = 64;
    // lookup (MQAR, zoology recipe): T, even, V > T; induction: random tokens
    // before the final trigger (input length seq_len + 1); text: T, the
    // window's inputs (each window holds T + 1 bytes)
    int seq_len = 32;
    // lookup
    int pairs = 4;               // P, 4P <= T
    double power_a = 0.01;       // query-gap distribution exponent
    bool random_filler = false;  // non-query slots: 0, or random tokens
    // copy
    int min_len = 0;  // 0 in a spec means "= max_len"; resolved by the loader
    int max_len = 16;
    int test_min_len = 0;  // resolved: defaults to min_len
    int test_max_len = 0;  // resolved: defaults to max_len
    // selective_copy (input length noise_len + 2 n_tokens)
    int n_tokens = 16;   // M tokens to copy
    int noise_len = 64;  // L blanks among the M tokens
    // text (byte-level language modelling on a file, vocabulary 256)
    std::string path;       // absolute once loaded (a spec's relative path: from the spec's folder)
    double holdout = 0.05;  // f: the validation and test parts are floor(f n) bytes each
    std::string sha256;     // of the file: recorded by the loader; given in a spec, checked
    int size = 0;           // bytes of the file: recorded by the loader; given, checked
    // every task
    int test_examples = 256;
    int val_examples = 0;    // resolved: defaults to test_examples (resolved_val_examples)
    int train_examples = 0;  // 0: fresh batches every step; > 0: a fixed pool
};

constexpr int max_short_conv = 8;  // the longest model.short_conv kernel

struct model_config {
    int layers = 2;
    int d_model = 64;
    int heads = 2;
    mlp_kind mlp = mlp_kind::swiglu;
    int mlp_hidden = 0;  // resolved: swiglu default 8/3*d_model rounded up to a multiple of 8
    position_kind position = position_kind::rope;
    // Kernel size of the causal depthwise convolution on q, k, v (docs/model.md
    // "Short convolution"); 0: none, else 2..8.
    int short_conv = 0;
};

struct attention_config {
    numerator_kind numerator = numerator_kind::exp;
    int order = 0;                // numerators that take one (taylor, power): n >= 1
    std::optional<double> clamp;  // score kernels only: s -> min(s, clamp)
    denominator_kind denominator = denominator_kind::softmax;
    bool in_gate = false;
    bool out_gate = false;
    bool detach_denominator = false;  // softmax only
    double eps = 1e-6;
    parallel_form form = parallel_form::automatic;
    int chunk = 64;  // chunk length of the chunked form
};

struct train_config {
    int steps = 1000;
    int batch = 32;
    double lr = 3e-3;
    double min_lr = 0.0;
    int warmup = 100;
    schedule_kind schedule = schedule_kind::cosine;
    double weight_decay = 0.1;
    double clip = 1.0;  // global-norm clip; 0 disables
    int eval_every = 100;
    // A `train` row of metrics.csv every log_every steps besides those of the
    // evaluations (1: every step's loss, for loss_spikes); 0: at evaluations only.
    int log_every = 0;
    // A checkpoint (model.safetensors, absolute once the spec is loaded) whose
    // parameters replace the random ones before step 1: fine-tuning. Empty: none.
    std::string init;
    std::string init_sha256;  // the checkpoint's sha256, recorded at load and checked before training
};

struct run_config {
    int seed = 0;
    task_config task;
    model_config model;
    attention_config attention;
    train_config train;
};

// Names of enum values as they are written in YAML (numerator_kind's and
// denominator_kind's: attention/variant_table.hpp; task_kind's:
// tasks/task_table.hpp).
const char* to_string(position_kind v);
const char* to_string(mlp_kind v);
const char* to_string(schedule_kind v);
const char* to_string(parallel_form v);

// Derived task sizes every module agrees on (the model is sized from them
// without knowing tasks; run_config.cpp, one case per task_kind).
int model_vocab_size(const task_config& t);  // copy: vocab + 2 (pad 0, SEP vocab+1); text: 256; others: vocab
// Input length T of training batches: copy 2 max_len, lookup seq_len,
// selective_copy noise_len + 2 n_tokens, induction seq_len + 1, text seq_len.
int train_seq_len(const task_config& t);
int test_seq_len(const task_config& t);  // input length T of the test set (copy:
                                         // 2 test_max_len)
int max_seq_len(const task_config& t);   // longest input (sizes the learned position table)

int resolved_mlp_hidden(const model_config& m);
int resolved_val_examples(const task_config& t);  // val_examples, or test_examples when unset (0)

}  // namespace attnlab
