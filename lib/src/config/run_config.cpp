// Enum names and the MLP size of a run configuration (the task sizes are in
// tasks/task_table.cpp).
#include "attnlab/config/run_config.hpp"

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
