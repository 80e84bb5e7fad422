// Checkpoints of a run: the trained parameters in runs/<run_id>/model.safetensors,
// beside the config.yaml that rebuilds the model, so that a run can be
// evaluated again (attnlab eval, run/run_dir.hpp) or loaded by other tools
// (PyTorch names and shapes, float32).
//
// The resume states of interrupted runs are in resume_state.hpp.
#pragma once
#include <string>

#include "attnlab/model/transformer.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

inline constexpr const char* checkpoint_filename = "model.safetensors";

// Writes the model's parameters to `path` atomically. The header's metadata
// holds what a reader needs to rebuild the model beside config.yaml (vocab,
// max_positions: the embedding's and the learned positions' rows) and, when
// `build` is given, the provenance of build_info.hpp (docs/outputs.md).
void checkpoint_save(const std::string& path, const transformer<float>& model, const build_info* build = nullptr);

// Replaces the model's parameters by those in `path` (a double model gets
// the float values widened, exactly). Throws io_error naming the file when it
// is missing, malformed, or holds another model (a tensor missing, extra or of
// another shape); the model is unchanged then.
template <class T>
void checkpoint_load(const std::string& path, transformer<T>& model);

// True when every parameter is finite (a checkpoint worth writing).
bool params_finite(const transformer<float>& model);

}  // namespace attnlab
