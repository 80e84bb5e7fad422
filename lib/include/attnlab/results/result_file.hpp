// result.yaml of a finished run: its status, final and best test metrics and
// counters (a run_result), written atomically when the run ends.
#pragma once
#include <optional>
#include <string>

#include "attnlab/train/trainer.hpp"

namespace attnlab {

// The text of a result.yaml.
std::string run_result_to_yaml(const run_result& r);
// Reads a result.yaml; nullopt when absent. Throws io_error naming it when
// malformed or not a file.
std::optional<run_result> read_run_result(const std::string& path);

}  // namespace attnlab
