// Checkpoints of a run (SPEC §3 "Checkpoints", §6): the trained parameters in
// runs/<run_id>/model.safetensors, beside the config.yaml that rebuilds the
// model, so that a run can be evaluated again (attnlab eval) or loaded by
// other tools (PyTorch names and shapes, float32).
//
// The resume states of interrupted runs are in resume_state.hpp.
#pragma once
#include <string>

#include "attnlab/model/transformer.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

inline constexpr const char* checkpoint_filename = "model.safetensors";

// Writes the model's parameters to `path` atomically.
void checkpoint_save(const std::string& path, const transformer<float>& model);

// Replaces the model's parameters by those in `path`. Throws io_error naming
// the file when it is missing, malformed, or holds another model (a tensor
// missing, extra or of another shape); the model is unchanged then.
void checkpoint_load(const std::string& path, transformer<float>& model);

// True when every parameter is finite (a checkpoint worth writing).
bool params_finite(const transformer<float>& model);

// Scores the test set of a finished run: reads <run_dir>/config.yaml,
// regenerates the test set from the run's seed, loads <run_dir>/model.safetensors
// and evaluates in chunks of train.batch examples, as the trainer does, so the
// metrics equal the last `test` row of the run's metrics.csv exactly (same
// build and thread count). With the recurrent form, attention runs step by
// step with a fixed-size state in `layout` (SPEC §2). Throws config_error for
// a missing directory or a bad config.yaml, io_error for a missing or bad
// checkpoint.
eval_metrics evaluate_run_dir(const std::string& run_dir, attention_form form = attention_form::parallel,
                              state_layout layout = state_layout::symmetric);

}  // namespace attnlab
