// The text forms of a run's result (trainer.hpp): apart from the training
// loop, so that the readers of result files need nothing of the model.
#include <string>

#include "attnlab/train/trainer.hpp"

namespace attnlab {

const char* to_string(run_status s) {
    switch (s) {
        case run_status::ok: return "ok";
        case run_status::diverged: return "diverged";
        case run_status::interrupted: return "interrupted";
    }
    return "?";
}

std::string describe(const run_result& r) {
    std::string text = r.reason;
    if (r.nonpositive_denominator_steps > 0) {
        if (!text.empty()) text += "; ";
        text += "softmax denominator <= 0 in " + std::to_string(r.nonpositive_denominator_steps) +
                " steps (first at step " + std::to_string(r.first_nonpositive_step) + ")";
    }
    return text;
}

}  // namespace attnlab
