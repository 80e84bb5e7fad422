// Resume states (runs/<run_id>/resume.state): a run stopped by SIGINT or
// SIGTERM (or saved periodically) leaves its train_state there, written
// atomically, so that the next `attnlab run` goes on from that step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "attnlab/train/trainer.hpp"

namespace attnlab {

inline constexpr const char* resume_filename = "resume.state";

// The bytes of a resume state: a binary file (little-endian), version 2:
//   "attnlab-resume\n", u32 version, the config.yaml text of the run (u64
//   length + bytes), the step, AdamW's step count, the thread count, the
//   run_result counters and the train window (doubles as their bits), three
//   float32 arrays of the parameter count (params, first and second moments),
//   then an FNV-1a 64 checksum of everything before it.
std::string train_state_encode(const train_state& st, const std::string& config_yaml);
// The checksum that ends a resume state: FNV-1a 64 of the n bytes at p.
std::uint64_t resume_checksum(const char* p, std::size_t n);
// Decodes `bytes` (`label` names the file in messages). Throws io_error when
// it is malformed, truncated, fails its checksum or belongs to another
// config.yaml than `config_yaml`.
train_state train_state_decode(const std::string& bytes, const std::string& label, const std::string& config_yaml);
// train_state_encode written atomically to `path`.
void train_state_save(const std::string& path, const train_state& st, const std::string& config_yaml);
// The most bytes the resume state of a model of `params` parameters and a
// config.yaml of `config_bytes` may have: its three arrays, the config and
// 64 KiB for the counters and the reason (read_input's limit for the file).
std::uint64_t resume_state_max_bytes(std::size_t params, std::size_t config_bytes);
// The state in `path`; nullopt when there is no such file. The file is read
// as read_input reads (io/files.hpp): a regular file of at most `max_bytes`
// (resume_state_max_bytes), else io_error naming it. Throws io_error as
// train_state_decode.
std::optional<train_state> train_state_load(const std::string& path, const std::string& config_yaml,
                                            std::uint64_t max_bytes);

}  // namespace attnlab
