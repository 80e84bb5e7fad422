// A run's directory: result.yaml, the "done" test, leftovers, the run lock
// and re-scoring a finished run (run_dir.hpp).
#include "attnlab/run/run_dir.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/run/run_check.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subnormals.hpp"

namespace attnlab {

namespace fs = std::filesystem;

void write_run_result(const std::string& run_dir, const run_result& r) {
    write_file_atomic(run_dir + "/" + result_filename, run_result_to_yaml(r));
}

std::optional<run_result> finished_run_result(const std::string& run_dir, const std::string& config_yaml) {
    const run_dir_check c = check_run_dir(run_dir);
    if (c.state == run_dir_state::damaged) {
        spdlog::warn("{}; the run is not counted as finished", c.problem);
        return std::nullopt;
    }
    if (c.state != run_dir_state::finished || !same_run_config(c.config_yaml, config_yaml)) return std::nullopt;
    return c.result;
}

bool run_locked_elsewhere(const std::string& run_dir) {
    const std::string path = run_dir + "/.lock";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);  // also releases the lock if we got it
    return held;
}

std::string unfinished_reason(const std::string& run_dir, const std::string& config_yaml) {
    std::error_code ec;
    if (!fs::is_directory(run_dir, ec)) return "not started";
    if (run_locked_elsewhere(run_dir)) return "being trained by another process";
    const run_dir_check c = check_run_dir(run_dir);
    switch (c.state) {
        case run_dir_state::absent: return "not started (no config.yaml)";
        case run_dir_state::damaged: return c.problem;
        case run_dir_state::finished:
        case run_dir_state::unfinished:
            if (!same_run_config(c.config_yaml, config_yaml))
                return "config.yaml differs from the spec's (trained with another spec or --set: " +
                       differences_text(config_differences(c.config_yaml, config_yaml)) + ")";
            if (c.state == run_dir_state::finished) return "done";
            if (c.result) return "interrupted";  // result.yaml with status interrupted
            if (fs::exists(run_dir + "/" + resume_filename, ec))
                return std::string("stopped mid-way: ") + resume_filename + " saved, `attnlab run` resumes it";
            return "unfinished: no result.yaml (interrupted or killed)";
    }
    return "done";
}

run_lock::run_lock(const std::string& run_dir) : path_(run_dir + "/.lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error("cannot open " + path_ + ": " + std::strerror(errno));
    owned_ = try_lock();
}

bool run_lock::try_lock() {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    const int err = errno;
    if (err == EWOULDBLOCK || err == EINTR) return false;
    throw io_error("cannot lock " + path_ + ": " + std::strerror(err));
}

bool run_lock::wait(const std::atomic<bool>* stop) {
    // Polled rather than blocking in flock(2), so a stop request is seen at once.
    while (!owned_) {
        if (stop && stop->load()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        owned_ = try_lock();
    }
    return true;
}

run_lock::~run_lock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

bool is_probe_output(const std::string& filename) {
    return filename == probe_terms_filename || filename == probe_heads_filename || filename == "probe.png" ||
           filename == "probe.pdf";
}

namespace {
void remove_or_throw(const fs::path& p) {
    std::error_code ec;
    fs::remove(p, ec);
    if (ec) throw io_error("cannot remove " + p.string() + ": " + ec.message());
}
}  // namespace

void clear_run_dir(const std::string& run_dir) {
    remove_or_throw(run_dir + "/" + result_filename);
    std::error_code ec;
    std::vector<fs::path> stale;
    for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name == "config.yaml" || name == "metrics.csv" || name == checkpoint_filename || name == resume_filename ||
            is_probe_output(name) || name.find(".tmp") != std::string::npos)
            stale.push_back(it->path());
    }
    for (const auto& p : stale) remove_or_throw(p);
}

void remove_run_temporaries(const std::string& run_dir) {
    std::error_code ec;
    std::vector<fs::path> stale;
    for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename().string().find(".tmp") != std::string::npos) stale.push_back(it->path());
    for (const auto& p : stale) fs::remove(p, ec);
}

std::vector<std::string> run_own_files(const std::string& run_dir) {
    std::vector<std::string> out;
    for (const char* name :
         {"config.yaml", "metrics.csv", result_filename, checkpoint_filename, resume_filename, ".lock"})
        out.push_back(run_dir + "/" + name);
    return out;
}

std::string replacement_dir(const std::string& run_dir) {
    const fs::path run(run_dir);
    return (run.parent_path().parent_path() / "replacing" / run.filename()).string();
}

void check_replacement_dir(const std::string& replacement) {
    const fs::path r(replacement);
    for (const fs::path& p : {r.parent_path(), r}) {
        std::error_code ec;
        const fs::file_status st = fs::symlink_status(p, ec);
        if (!fs::exists(st) || fs::is_directory(st)) continue;
        std::string what = "not a directory";
        if (fs::is_symlink(st)) {
            const fs::path target = fs::read_symlink(p, ec);
            what = "a symbolic link" + (ec ? std::string() : " to " + target.string());
        }
        throw io_error("cannot train a replacement run in " + replacement + ": " + p.string() + " is " + what +
                       ", and attnlab trains a replacement only in a folder of the results folder itself, never "
                       "through a link to elsewhere; remove it (nothing of the run is there)");
    }
}

void replace_run_dir(const std::string& run_dir, const std::string& replacement) {
    check_replacement_dir(replacement);
    std::error_code ec;
    for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name == "config.yaml" || name == "metrics.csv" || name == checkpoint_filename || name == resume_filename ||
            name == result_filename || name == ".lock" || is_probe_output(name) ||
            name.find(".tmp") != std::string::npos || fs::exists(replacement + "/" + name))
            continue;
        std::error_code move_ec;
        fs::rename(it->path(), replacement + "/" + name, move_ec);
        if (move_ec)
            throw io_error("cannot move " + it->path().string() + " to " + replacement + ": " + move_ec.message());
    }
    if (::renameat2(AT_FDCWD, replacement.c_str(), AT_FDCWD, run_dir.c_str(), RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS)
            throw io_error("cannot exchange " + replacement + " and " + run_dir + ": " + std::strerror(errno));
        // No exchange here: a crash between the two renames leaves both runs whole, the old one aside.
        const std::string aside = replacement + ".old";
        if (std::rename(run_dir.c_str(), aside.c_str()) != 0 ||
            std::rename(replacement.c_str(), run_dir.c_str()) != 0 ||
            std::rename(aside.c_str(), replacement.c_str()) != 0)
            throw io_error("cannot move " + replacement + " to " + run_dir + ": " + std::strerror(errno));
    }
    sync_directory(fs::path(run_dir).parent_path().string());
    fs::remove_all(replacement, ec);  // the old run
    if (ec) spdlog::warn("cannot remove the replaced run, now in {}: {}", replacement, ec.message());
}

run_config read_run_dir_config(const std::string& run_dir) {
    std::error_code ec;
    if (!fs::is_directory(run_dir, ec))
        throw config_error(
            run_dir + ": " +
            (ec && ec != std::errc::no_such_file_or_directory ? ec.message() : std::string("no such run directory")));
    const std::string config_path = run_dir + "/config.yaml";
    // Missing: no run here. Anything else (a FIFO, a device, a huge file) is
    // named by the reader for what it is.
    if (!fs::exists(fs::symlink_status(config_path, ec)))
        throw config_error(config_path + ": no such file (not a run directory of `attnlab run`?)");
    return run_config_from_yaml_file(config_path);
}

eval_metrics evaluate_run_dir(const std::string& run_dir, attention_form form, state_layout layout) {
    const run_config cfg = read_run_dir_config(run_dir);
    return evaluate_run_dir(run_dir, cfg, cfg, form, layout);
}

template <class T>
transformer<T> load_run_model(const std::string& run_dir, const run_config& trained, const run_config& test) {
    const std::string ckpt = run_dir + "/" + checkpoint_filename;
    std::error_code ec;
    // Only a missing file is "no such checkpoint"; the reader names anything
    // else (a device, a FIFO, a directory) for what it is.
    if (!fs::exists(fs::symlink_status(ckpt, ec))) {
        // Say why when result.yaml knows: diverged runs have no checkpoint.
        std::string why = "the run has not finished";
        try {
            if (auto r = read_run_result(run_dir + "/result.yaml"))
                why = r->status == run_status::diverged
                          ? "the run diverged, so nothing was saved"
                          : "saved by an attnlab without checkpoints, or its parameters were not finite";
        } catch (const io_error&) {
            // a malformed result.yaml: the generic reason stands
        }
        throw io_error(ckpt + ": no such checkpoint file (" + why + ")");
    }
    // A learned position table has the trained length (RoPE's tables are made for the test's).
    const int trained_T = max_seq_len(trained.task), test_T = max_seq_len(test.task);
    if (trained.model.position == position_kind::learned && test_T != trained_T)
        throw config_error("the run learned positions for inputs of up to " + std::to_string(trained_T) +
                           " tokens (model.position: learned); the test's longest input would be " +
                           std::to_string(test_T));

    // As train_run builds and sizes the model.
    transformer<T> model = make_model<T>(test);
    checkpoint_load(ckpt, model);
    for (const auto& t : model.layout().tensors())  // a NaN would only show as a NaN loss
        if (!std::all_of(model.params.begin() + static_cast<std::ptrdiff_t>(t.offset),
                         model.params.begin() + static_cast<std::ptrdiff_t>(t.offset + t.size),
                         [](T x) { return std::isfinite(x); }))
            throw io_error(ckpt + ": tensor " + t.name + " holds non-finite values (NaN or infinity)");
    return model;
}

template <class T>
eval_metrics evaluate_run_dir(const std::string& run_dir, const run_config& trained, const run_config& test,
                              attention_form form, state_layout layout) {
    // So that a run's own test set scores as training recorded it (in double
    // only values below 2.2e-308 are flushed, as fast and as harmless).
    const subnormals_flushed as_in_training;
    transformer<T> model = load_run_model<T>(run_dir, trained, test);
    auto data = make_task(test.task, static_cast<std::uint64_t>(test.seed));
    model.set_attention_form(form, layout);
    return evaluate(model, data->test_set(), test.train.batch);
}

template transformer<float> load_run_model<float>(const std::string&, const run_config&, const run_config&);
template transformer<double> load_run_model<double>(const std::string&, const run_config&, const run_config&);
template eval_metrics evaluate_run_dir<float>(const std::string&, const run_config&, const run_config&, attention_form,
                                              state_layout);
template eval_metrics evaluate_run_dir<double>(const std::string&, const run_config&, const run_config&, attention_form,
                                               state_layout);

}  // namespace attnlab
