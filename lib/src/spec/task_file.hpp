// The file a text run reads (docs/tasks.md "text"), checked when a spec is
// loaded, before anything runs: task.path resolved from the spec's folder,
// the file read, its size and sha256 recorded in the run's config (so they
// reach config.yaml) and checked against task.size and task.sha256 when the
// spec gives them, and the windows of task.seq_len + 1 bytes made sure to
// fit. Internal to lib/src/spec/.
#pragma once
#include <functional>
#include <string>

#include "attnlab/config/run_config.hpp"
#include "diagnostics.hpp"

namespace attnlab::spec_internal {

// Nothing for other tasks. `folder` (absolute) resolves a relative path; `at` gives where a task key was written, for
// the error; `at_point` is appended to messages (the sweep point). `may_be_missing`: a file that does not exist
// only has its path resolved (task_files::read_if_present).
void record_task_file(run_config& cfg, const std::string& folder,
                      const std::function<where(const std::string& key)>& at, const std::string& at_point,
                      bool may_be_missing = false);

// The checkpoint a run starts from (train.init; docs/spec-reference.md
// "train"), likewise: resolved from the spec's folder (a run folder means its
// model.safetensors), read against the run's model (every tensor's name and
// shape), its sha256 recorded in train.init_sha256 and checked against it
// when the spec gives one. Nothing when train.init is unset.
void record_init_checkpoint(run_config& cfg, const std::string& folder,
                            const std::function<where(const std::string& key)>& at, const std::string& at_point,
                            bool may_be_missing = false);

}  // namespace attnlab::spec_internal
