// text (docs/tasks.md "text"): windows of a file's bytes; see tasks/text.hpp.
#include "attnlab/tasks/text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "attnlab/io/files.hpp"
#include "attnlab/io/sha256.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/rng.hpp"

namespace attnlab {

namespace {

constexpr int byte_values = 256;

std::int32_t byte_at(const std::string& bytes, std::size_t i) {
    return static_cast<std::int32_t>(static_cast<unsigned char>(bytes[i]));
}

// Row b of `out` := the window of T + 1 bytes at `start`: inputs its first T, targets its last T.
void put_window(batch& out, int b, const std::string& bytes, std::size_t start) {
    const std::size_t row = static_cast<std::size_t>(b) * static_cast<std::size_t>(out.T);
    for (int t = 0; t < out.T; ++t) {
        out.tokens[row + static_cast<std::size_t>(t)] = byte_at(bytes, start + static_cast<std::size_t>(t));
        out.targets[row + static_cast<std::size_t>(t)] = byte_at(bytes, start + static_cast<std::size_t>(t) + 1);
    }
}

// The evaluation windows k = 0 .. count-1 of the part starting at `begin`.
batch eval_set(const std::string& bytes, std::size_t begin, int T, std::size_t count) {
    batch out;
    out.resize(static_cast<int>(count), T);
    for (std::size_t k = 0; k < count; ++k)
        put_window(out, static_cast<int>(k), bytes, begin + k * static_cast<std::size_t>(T));
    return out;
}

class text_task final : public task {
public:
    text_task(std::string bytes, const task_config& cfg, std::uint64_t seed)
        : bytes_(std::move(bytes)),
          split_(split_text(bytes_.size(), cfg.holdout)),
          T_(cfg.seq_len),
          train_rng_(derive_seed(seed, stream_train)) {
        const std::size_t starts = train_window_starts(split_, T_);
        const std::size_t val = eval_windows(split_.e, T_, resolved_val_examples(cfg));
        const std::size_t test = eval_windows(split_.e, T_, cfg.test_examples);
        if (starts == 0 || val == 0 || test == 0)
            throw std::logic_error("text: " + cfg.path + " (" + std::to_string(bytes_.size()) +
                                   " bytes) is too short for windows of task.seq_len + 1 = " + std::to_string(T_ + 1) +
                                   " bytes in each part (train " + std::to_string(split_.train_bytes()) +
                                   ", validation and test " + std::to_string(split_.e) + ")");
        if (cfg.train_examples > 0) {
            pool_.resize(cfg.train_examples, T_);
            for (int b = 0; b < cfg.train_examples; ++b) put_window(pool_, b, bytes_, next_start());
        }
        val_set_ = eval_set(bytes_, split_.val_begin(), T_, val);
        test_set_ = eval_set(bytes_, split_.test_begin(), T_, test);
        baselines_ = byte_baselines(bytes_, split_, T_, test);
    }

    int vocab_size() const override { return byte_values; }
    int train_seq_len() const override { return T_; }
    int test_seq_len() const override { return T_; }
    const batch& test_set() const override { return test_set_; }
    const batch& val_set() const override { return val_set_; }
    std::optional<baseline_losses> baselines() const override { return baselines_; }

    void next_train_batch(batch& out, int B) override {
        if (B < 0) throw std::logic_error("next_train_batch: B < 0");
        out.resize(B, T_);
        const std::size_t n = static_cast<std::size_t>(T_);
        for (int b = 0; b < B; ++b) {
            if (pool_.B == 0) {
                put_window(out, b, bytes_, next_start());
                continue;
            }
            const auto src =
                static_cast<std::ptrdiff_t>(train_rng_.uniform_index(static_cast<std::uint64_t>(pool_.B)) * n);
            const auto dst = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * n);
            std::copy_n(pool_.tokens.begin() + src, T_, out.tokens.begin() + dst);
            std::copy_n(pool_.targets.begin() + src, T_, out.targets.begin() + dst);
        }
    }

private:
    // A uniform start in the train part: the window never reaches the validation bytes.
    std::size_t next_start() {
        return static_cast<std::size_t>(train_rng_.uniform_index(train_window_starts(split_, T_)));
    }

    std::string bytes_;  // the whole file, held once
    text_split split_;
    int T_;
    rng train_rng_;
    batch pool_;  // (train_examples, T); empty when streaming fresh windows
    batch val_set_, test_set_;
    baseline_losses baselines_;
};

}  // namespace

baseline_losses byte_baselines(const std::string& bytes, const text_split& split, int T, std::size_t test_windows) {
    std::vector<double> unigram(byte_values, 0.0), pair(byte_values * byte_values, 0.0), first(byte_values, 0.0);
    const std::size_t N = split.train_bytes();
    for (std::size_t i = 0; i < N; ++i) unigram[static_cast<std::size_t>(byte_at(bytes, i))] += 1;
    for (std::size_t i = 0; i + 1 < N; ++i) {
        const auto a = static_cast<std::size_t>(byte_at(bytes, i)), b = static_cast<std::size_t>(byte_at(bytes, i + 1));
        pair[a * byte_values + b] += 1;
        first[a] += 1;
    }
    baseline_losses out;
    const std::size_t begin = split.test_begin(), predicted = test_windows * static_cast<std::size_t>(T);
    for (std::size_t i = 1; i <= predicted; ++i) {
        const auto a = static_cast<std::size_t>(byte_at(bytes, begin + i - 1)),
                   b = static_cast<std::size_t>(byte_at(bytes, begin + i));
        out.unigram -= std::log((unigram[b] + 1) / (static_cast<double>(N) + byte_values));
        out.bigram -= std::log((pair[a * byte_values + b] + 1) / (first[a] + byte_values));
    }
    if (predicted > 0) {
        out.unigram /= static_cast<double>(predicted);
        out.bigram /= static_cast<double>(predicted);
    }
    return out;
}

std::unique_ptr<task> make_text_task(const task_config& cfg, std::uint64_t seed, const std::atomic<bool>* stop) {
    require_task_rules(cfg);
    if (cfg.seq_len < 1 || cfg.path.empty())
        throw std::logic_error("text: need task.seq_len >= 1 and a task.path, got seq_len " +
                               std::to_string(cfg.seq_len));
    // Measured before it is read: the loader recorded the file's size (the
    // memory guard counted it), and a file changed since is refused.
    const std::uint64_t size = regular_file_size(cfg.path);
    if (cfg.size > 0 && size != static_cast<std::uint64_t>(cfg.size))
        throw config_error("task.path: " + cfg.path + " has " + std::to_string(size) +
                           " bytes, the run's task.size says " + std::to_string(cfg.size) +
                           " (the file changed since the spec was loaded)");
    if (size > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
        throw config_error("task.path: " + cfg.path + " has " + std::to_string(size) + " bytes, more than the " +
                           std::to_string(std::numeric_limits<int>::max()) + " a text task takes");
    std::string bytes;
    bytes.reserve(static_cast<std::size_t>(size));
    sha256_hasher hash;  // piece by piece, so that a stop is seen while hashing too
    read_regular_file(
        cfg.path, size,
        [&](const char* data, std::size_t n) {
            bytes.append(data, n);
            if (!cfg.sha256.empty()) hash.update(data, n);
        },
        stop);
    if (!cfg.sha256.empty())
        if (const std::string sum = hash.hex(); sum != cfg.sha256)
            throw config_error("task.path: " + cfg.path + " has sha256 " + sum + ", the run's task.sha256 says " +
                               cfg.sha256 + " (the file changed since the spec was loaded)");
    return std::make_unique<text_task>(std::move(bytes), cfg, seed);
}

}  // namespace attnlab
