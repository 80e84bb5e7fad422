// text: byte-level language modelling on a file (docs/tasks.md "text").
// The file's bytes are the tokens (vocabulary 256), split as text_split.hpp
// says. Training examples are windows of T + 1 bytes at uniform random
// offsets in the train part, drawn from the training stream
// derive_seed(seed, stream_train) (or a fixed pool of train_examples of
// them); the validation and test sets are the windows k = 0, 1, ... of their
// parts, the same for every seed. Every position is an answer: inputs are the
// window's first T bytes, targets its last T. Example, T = 3, train part
// "abcdefg", window at offset 2:
//   window   c d e f
//   tokens   c d e
//   targets  d e f
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "attnlab/config/run_config.hpp"
#include "attnlab/io/files.hpp"  // regular_file_size, read_regular_file
#include "attnlab/tasks/task.hpp"
#include "attnlab/tasks/text_split.hpp"

namespace attnlab {

// Unigram and bigram byte models fitted on the train part of `bytes` with
// add-one smoothing, p(b) = (c(b) + 1) / (N + 256) and
// p(b | a) = (c(a b) + 1) / (c(a .) + 256), where c(a .) counts the pairs of
// the train part that start with a; their mean cross-entropy (nats per
// byte) on the bytes the first `test_windows` test windows predict (bytes
// 1 .. test_windows T of the test part, each after the byte before it).
baseline_losses byte_baselines(const std::string& bytes, const text_split& split, int T, std::size_t test_windows);

// The task of a resolved config: reads cfg.path and checks it against
// cfg.size and cfg.sha256 when they are set (config_error naming the file
// when it differs). Throws std::logic_error when the config breaks the
// task's rules or no training or evaluation window fits (the loader refuses
// such a config first). The file must be a regular one; its reading stops
// with read_interrupted when `*stop` is set (Ctrl-C while a large file loads).
std::unique_ptr<task> make_text_task(const task_config& cfg, std::uint64_t seed,
                                     const std::atomic<bool>* stop = nullptr);

}  // namespace attnlab
