// The shared results directory of a sweep: spec.yaml and overrides.yaml, the
// "done" test of a run, the per-run lock and `attnlab summarize` (SPEC §6).
#include "attnlab/run/sweep_dir.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <set>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "attnlab/io/files.hpp"
#include "attnlab/run/summary.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace fs = std::filesystem;

void write_spec_as_run(const std::string& dir, const experiment_spec& spec) {
    YAML::Emitter list;
    list << YAML::BeginSeq;
    for (const auto& s : spec.set_overrides) list << YAML::DoubleQuoted << s;
    list << YAML::EndSeq;
    // overrides.yaml first: a spec.yaml is never newer than the overrides that go with it.
    write_file_atomic(dir + "/overrides.yaml", std::string("# --set overrides of the run of spec.yaml; "
                                                           "attnlab summarize applies them\n") +
                                                   (spec.set_overrides.empty() ? "[]" : list.c_str()) + "\n");
    std::string header = "# attnlab " ATTNLAB_VERSION ": spec " + spec.path + " as run";
    for (const auto& s : spec.set_overrides) header += " --set " + s;
    write_file_atomic(dir + "/spec.yaml", header + "\n" + spec.source_text);
}

namespace {

// Overrides from spec.yaml's first line, "# attnlab V: spec P as run --set A --set B"
// (directories written before overrides.yaml existed; a value containing " --set " is misread).
std::vector<std::string> overrides_from_header(const std::string& spec_text) {
    const std::string first = spec_text.substr(0, spec_text.find('\n'));
    std::vector<std::string> out;
    if (first.rfind("# attnlab ", 0) != 0) return out;
    const std::string sep = " --set ";
    for (auto at = first.find(sep); at != std::string::npos;) {
        const auto next = first.find(sep, at + sep.size());
        out.push_back(
            first.substr(at + sep.size(), next == std::string::npos ? std::string::npos : next - at - sep.size()));
        at = next;
    }
    return out;
}

std::vector<std::string> read_overrides(const std::string& path) {
    try {
        const YAML::Node n = YAML::LoadFile(path);
        std::vector<std::string> out;
        if (!n.IsSequence()) throw io_error(path + ": expected a list of KEY=VALUE strings");
        for (const auto& item : n) {
            if (!item.IsScalar()) throw io_error(path + ": expected a list of KEY=VALUE strings");
            out.push_back(item.Scalar());
        }
        return out;
    } catch (const YAML::Exception& e) {
        throw io_error(path + ": malformed (" + e.what() + ")");
    }
}

}  // namespace

experiment_spec load_spec_as_run(const std::string& dir) {
    const std::string spec_path = dir + "/spec.yaml";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw config_error(dir + ": no such directory");
    if (!fs::is_regular_file(spec_path, ec))
        throw config_error(dir + ": no spec.yaml (not a results directory written by attnlab run)");
    const std::string text = read_file(spec_path);
    const std::string overrides_path = dir + "/overrides.yaml";
    const std::vector<std::string> overrides =
        fs::exists(overrides_path, ec) ? read_overrides(overrides_path) : overrides_from_header(text);
    return parse_spec(text, spec_path, overrides);
}

std::optional<run_result> finished_run_result(const std::string& run_dir, const std::string& config_yaml) {
    const std::string cfg_path = run_dir + "/config.yaml";
    std::error_code ec;
    if (!fs::exists(cfg_path, ec)) return std::nullopt;
    try {
        // Read the result first: a concurrent redo removes result.yaml before it rewrites config.yaml.
        auto r = read_run_result(run_dir + "/result.yaml");
        if (!r || r->status == run_status::interrupted) return std::nullopt;
        if (read_file(cfg_path) != config_yaml) return std::nullopt;
        return r;
    } catch (const io_error& e) {  // a malformed result (a crash mid-write by an older version): redo the run
        spdlog::warn("{}; the run will be redone", e.what());
        return std::nullopt;
    }
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
    if (!fs::exists(run_dir + "/config.yaml", ec)) return "not started (no config.yaml)";
    try {
        if (read_file(run_dir + "/config.yaml") != config_yaml)
            return "config.yaml differs from the spec's (trained with another spec or --set)";
        const auto r = read_run_result(run_dir + "/result.yaml");
        if (!r) {
            if (fs::exists(run_dir + "/" + resume_filename, ec))
                return std::string("stopped mid-way: ") + resume_filename + " saved, `attnlab run` resumes it";
            return "unfinished: no result.yaml (interrupted or killed)";
        }
        if (r->status == run_status::interrupted) return "interrupted";
    } catch (const io_error& e) {
        return e.what();
    }
    return "done";
}

run_lock::run_lock(const std::string& run_dir) {
    const std::string path = run_dir + "/.lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw io_error("cannot open " + path + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd);
        if (err == EWOULDBLOCK) return;
        throw io_error("cannot lock " + path + ": " + std::strerror(err));
    }
    fd_ = fd;
}

run_lock::~run_lock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

summarize_outcome summarize_sweep_dir(const std::string& dir) {
    const experiment_spec spec = load_spec_as_run(dir);
    summarize_outcome out;
    out.total = static_cast<int>(spec.runs.size());
    std::vector<summary_entry> entries;
    std::set<std::string> ids;
    for (const auto& point : spec.runs) {
        ids.insert(point.id);
        const std::string run_dir = dir + "/runs/" + point.id;
        const std::string config_yaml = run_config_to_yaml(point.config);
        if (auto r = finished_run_result(run_dir, config_yaml)) {
            entries.push_back({&point, *r});
            ++out.found;
        } else {
            out.missing.emplace_back(point.id, unfinished_reason(run_dir, config_yaml));
        }
    }
    std::error_code ec;
    for (fs::directory_iterator it(dir + "/runs", ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory() && !ids.count(it->path().filename().string()))
            out.strays.push_back(it->path().filename().string());
    std::sort(out.strays.begin(), out.strays.end());
    write_summary_files(dir, dir + "/runs", spec, entries);
    return out;
}

}  // namespace attnlab
