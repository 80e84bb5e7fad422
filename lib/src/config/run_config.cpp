// Enum names and derived sizes of a run configuration (SPEC §3, §4).
#include "attnlab/config/run_config.hpp"

#include <algorithm>

namespace attnlab {

const char* to_string(task_kind v) {
    switch (v) {
        case task_kind::copy: return "copy";
        case task_kind::lookup: return "lookup";
        case task_kind::selective_copy: return "selective_copy";
        case task_kind::induction: return "induction";
    }
    return "?";
}
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

int model_vocab_size(const task_config& t) { return t.kind == task_kind::copy ? t.vocab + 2 : t.vocab; }

// copy: x_1..x_n SEP x_1..x_n padded to 2*max_len + 1 tokens, inputs drop the
// last; selective_copy: L + M slots then M markers; induction: seq_len random
// tokens then the trigger (its answer is a target, not an input).
namespace {
int seq_len_of(const task_config& t, int copy_max_len) {
    switch (t.kind) {
        case task_kind::copy: return 2 * copy_max_len;
        case task_kind::lookup: return t.seq_len;
        case task_kind::selective_copy: return t.noise_len + 2 * t.n_tokens;
        case task_kind::induction: return t.seq_len + 1;
    }
    return 0;
}
}  // namespace

int train_seq_len(const task_config& t) { return seq_len_of(t, t.max_len); }
int test_seq_len(const task_config& t) { return seq_len_of(t, t.test_max_len); }
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
