// Enum names, the task sizes and the MLP size of a run configuration.
#include "attnlab/config/run_config.hpp"

#include <algorithm>
#include <limits>

namespace attnlab {

const char* to_string(position_kind v) {
    switch (v) {
        case position_kind::rope: return "rope";
        case position_kind::learned: return "learned";
        case position_kind::none: return "none";
    }
    return "?";
}
const char* to_string(mlp_kind v) {
    switch (v) {
        case mlp_kind::swiglu: return "swiglu";
        case mlp_kind::gelu: return "gelu";
        case mlp_kind::none: return "none";
    }
    return "?";
}
const char* to_string(schedule_kind v) {
    switch (v) {
        case schedule_kind::cosine: return "cosine";
        case schedule_kind::constant: return "constant";
    }
    return "?";
}

const char* to_string(parallel_form v) {
    switch (v) {
        case parallel_form::automatic: return "auto";
        case parallel_form::quadratic: return "quadratic";
        case parallel_form::chunked: return "chunked";
    }
    return "?";
}

// No `default:`: -Wswitch names a new task_kind without its sizes.
int model_vocab_size(const task_config& t) {
    switch (t.kind) {
        case task_kind::copy:  // pad 0, SEP vocab+1; in 64 bits (a copy rule keeps it an int)
            return static_cast<int>(std::min<long long>(t.vocab + 2LL, std::numeric_limits<int>::max()));
        case task_kind::text: return 256;  // bytes
        case task_kind::lookup:
        case task_kind::selective_copy:
        case task_kind::induction: return t.vocab;
    }
    return 0;
}

int train_seq_len(const task_config& t) {
    switch (t.kind) {
        case task_kind::copy: return 2 * t.max_len;  // x_1..x_n SEP x_1..x_n padded, inputs drop the last
        case task_kind::lookup:
        case task_kind::text: return t.seq_len;
        case task_kind::selective_copy: return t.noise_len + 2 * t.n_tokens;  // L + M slots, M markers
        case task_kind::induction: return t.seq_len + 1;  // the trigger's answer is a target, not an input
    }
    return 0;
}

int test_seq_len(const task_config& t) { return t.kind == task_kind::copy ? 2 * t.test_max_len : train_seq_len(t); }

int max_seq_len(const task_config& t) { return std::max(train_seq_len(t), test_seq_len(t)); }

int resolved_val_examples(const task_config& t) { return t.val_examples > 0 ? t.val_examples : t.test_examples; }

int resolved_mlp_hidden(const model_config& m) {
    switch (m.mlp) {
        case mlp_kind::swiglu:
            if (m.mlp_hidden > 0) return m.mlp_hidden;
            return ((8 * m.d_model + 2) / 3 + 7) / 8 * 8;  // ceil(8/3 d) rounded up to 8
        case mlp_kind::gelu: return 4 * m.d_model;
        case mlp_kind::none: return 0;
    }
    return 0;
}

}  // namespace attnlab
