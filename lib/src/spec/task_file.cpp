// A text run's file, read and checked when the spec is loaded (see task_file.hpp).
#include "task_file.hpp"

#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "attnlab/io/files.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/io/sha256.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/tasks/text.hpp"
#include "attnlab/util/error.hpp"
#include "values.hpp"

namespace attnlab::spec_internal {

namespace fs = std::filesystem;

namespace {

struct file_facts {
    std::size_t size = 0;
    std::string sha256;
};

// Every run of a sweep names the same file: it is hashed once per path,
// size and modification time. It is measured first (only a regular file has
// a size a read keeps to) and refused above the limit before a byte is read;
// then hashed in pieces, so validating never holds the file.
file_facts facts_of(const std::string& path, const std::function<void(std::uint64_t)>& check_size) {
    static std::mutex mu;
    static std::map<std::tuple<std::string, std::uintmax_t, fs::file_time_type>, file_facts> known;
    const std::uint64_t size = regular_file_size(path);  // io_error naming the file
    check_size(size);
    std::error_code ec;
    const auto key = std::make_tuple(path, size, fs::last_write_time(path, ec));
    {
        std::lock_guard<std::mutex> g(mu);
        if (!ec)
            if (auto it = known.find(key); it != known.end()) return it->second;
    }
    sha256_hasher hash;
    read_regular_file(path, size, [&](const char* data, std::size_t n) { hash.update(data, n); });
    file_facts f{static_cast<std::size_t>(size), hash.hex()};
    std::lock_guard<std::mutex> g(mu);
    if (!ec) known[key] = f;
    return f;
}

std::string absolute_path(const std::string& path, const std::string& folder) {
    fs::path p(path);
    if (p.is_relative()) p = fs::path(folder) / p;
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec);
    return (ec ? p : abs).lexically_normal().string();
}

}  // namespace

void record_task_file(run_config& cfg, const std::string& folder,
                      const std::function<where(const std::string& key)>& at, const std::string& at_point,
                      bool may_be_missing) {
    task_config& t = cfg.task;
    if (t.kind != task_kind::text) return;
    const std::string path = absolute_path(t.path, folder);
    std::error_code missing;
    if (may_be_missing && !fs::exists(path, missing) && !missing) {
        t.path = path;
        return;
    }
    const auto check_size = [&](std::uint64_t size) {
        if (size == 0) fail(at("task.path"), path + " is empty" + at_point);
        if (size > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
            fail(at("task.path"), path + " has " + std::to_string(size) + " bytes, more than the " +
                                      std::to_string(std::numeric_limits<int>::max()) + " a text task takes" +
                                      at_point);
    };
    file_facts f;
    try {
        f = facts_of(path, check_size);
    } catch (const io_error& e) {
        fail(at("task.path"), std::string("cannot read the text file: ") + e.what() + at_point);
    }
    if (!t.sha256.empty() && t.sha256 != f.sha256)
        fail(at("task.sha256"),
             path + " has sha256 " + f.sha256 + ", not the " + t.sha256 + " the spec asks for" + at_point);
    if (t.size != 0 && static_cast<std::size_t>(t.size) != f.size)
        fail(at("task.size"), path + " has " + std::to_string(f.size) + " bytes, not the " + std::to_string(t.size) +
                                  " the spec says" + at_point);
    const text_split split = split_text(f.size, t.holdout);
    const std::string window = "windows of task.seq_len + 1 = " + std::to_string(t.seq_len + 1) + " bytes";
    if (train_window_starts(split, t.seq_len) == 0)
        fail(at("task.seq_len"), "no training window fits: " + window + ", but the train part of " + path + " (" +
                                     std::to_string(f.size) + " bytes) has " + std::to_string(split.train_bytes()) +
                                     at_point);
    if (eval_windows_that_fit(split.e, t.seq_len) == 0)
        fail(at("task.seq_len"), "no evaluation window fits: " + window + ", but the validation and test parts of " +
                                     path + " (" + std::to_string(f.size) + " bytes, task.holdout " +
                                     format_number(t.holdout) + ") have " + std::to_string(split.e) + " each" +
                                     at_point);
    t.path = path;
    t.size = static_cast<int>(f.size);
    t.sha256 = f.sha256;
}

void record_init_checkpoint(run_config& cfg, const std::string& folder,
                            const std::function<where(const std::string& key)>& at, const std::string& at_point,
                            bool may_be_missing) {
    train_config& t = cfg.train;
    if (t.init.empty()) return;
    std::string path = absolute_path(t.init, folder);
    std::error_code ec;
    if (fs::is_directory(path, ec)) path = (fs::path(path) / "model.safetensors").string();  // a run's checkpoint
    if (may_be_missing && !fs::exists(path, ec) && !ec) {
        t.init = path;
        return;
    }
    file_facts f;
    model_offsets offsets;
    const param_layout layout =
        build_param_layout(cfg.model, cfg.attention, model_vocab_size(cfg.task), max_seq_len(cfg.task), offsets);
    try {
        f = facts_of(path, [&](std::uint64_t size) {
            if (size == 0) fail(at("train.init"), path + " is empty" + at_point);
        });
        safetensors_read(path, layout.named_tensors());  // every tensor of this run's model, by name and shape
    } catch (const io_error& e) {
        fail(at("train.init"), std::string("cannot start from this checkpoint: ") + e.what() + at_point);
    }
    if (!t.init_sha256.empty() && t.init_sha256 != f.sha256)
        fail(at("train.init_sha256"),
             path + " has sha256 " + f.sha256 + ", not the " + t.init_sha256 + " the spec asks for" + at_point);
    t.init = path;
    t.init_sha256 = f.sha256;
}

}  // namespace attnlab::spec_internal
