// The shared results directory of a sweep: spec.yaml and overrides.yaml, the
// membership of the processes writing it and `attnlab summarize` (sweep_dir.hpp).
#include "attnlab/run/sweep_dir.hpp"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "attnlab/io/files.hpp"
#include "attnlab/results/comparisons.hpp"
#include "attnlab/results/run_groups.hpp"
#include "attnlab/results/summary.hpp"
#include "attnlab/run/run_check.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace fs = std::filesystem;

namespace {

// Backslashes and control characters as escapes: the text stays on one line.
std::string header_escaped(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (u < 0x20 || u == 0x7f)
            out += fmt::format("\\x{:02x}", u);
        else
            out += c;
    }
    return out;
}

}  // namespace

std::string spec_header(const experiment_spec& spec) {
    std::string header = "# attnlab " ATTNLAB_VERSION ": spec " + spec.path + " as run";
    for (const auto& s : spec.set_overrides) header += " --set " + s;
    return header_escaped(header);
}

void write_spec_as_run(const std::string& dir, const experiment_spec& spec) {
    YAML::Emitter list;
    list << YAML::BeginSeq;
    for (const auto& s : spec.set_overrides) list << YAML::DoubleQuoted << s;
    list << YAML::EndSeq;
    // overrides.yaml first: a spec.yaml is never newer than the overrides that go with it.
    write_file_atomic(dir + "/overrides.yaml", std::string("# --set overrides of the run of spec.yaml; "
                                                           "attnlab summarize applies them\n") +
                                                   (spec.set_overrides.empty() ? "[]" : list.c_str()) + "\n");
    // The spec's folder, from which its relative task.path resolves, relative to
    // this directory: it still holds when the repository is moved or cloned whole.
    write_file_atomic(dir + "/" + spec_folder_file, spec_folder_from(dir, spec.folder) + "\n");
    write_file_atomic(dir + "/spec.yaml", spec_header(spec) + "\n" + spec.source_text);
}

std::string spec_folder_from(const std::string& dir, const std::string& folder) {
    std::error_code ec;
    const fs::path from = fs::absolute(dir, ec).lexically_normal();
    const fs::path rel = fs::path(folder).lexically_relative(from);
    return rel.empty() ? folder : rel.string();
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
        const YAML::Node n = YAML::Load(read_input(path, inputs::spec));
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

experiment_spec load_spec_as_run(const std::string& dir, task_files files) {
    const std::string spec_path = dir + "/spec.yaml";
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw config_error(
            dir + ": " +
            (ec && ec != std::errc::no_such_file_or_directory ? ec.message() : std::string("no such directory")));
    // Missing: no results folder here. Anything else (a FIFO, a device, a
    // huge file) is named by read_input for what it is, and never read whole.
    if (!fs::exists(fs::symlink_status(spec_path, ec)))
        throw config_error(dir + ": no spec.yaml (not a results directory written by attnlab run)");
    const std::string text = read_input(spec_path, inputs::spec);
    const std::string overrides_path = dir + "/overrides.yaml";
    const std::vector<std::string> overrides = fs::exists(fs::symlink_status(overrides_path, ec))
                                                   ? read_overrides(overrides_path)
                                                   : overrides_from_header(text);
    std::string folder;  // none (directories written before it was): the directory itself
    if (const std::string path = dir + "/" + spec_folder_file; fs::exists(fs::symlink_status(path, ec))) {
        folder = read_input(path, inputs::folder_note);
        while (!folder.empty() && (folder.back() == '\n' || folder.back() == '\r')) folder.pop_back();
        if (fs::path(folder).is_relative()) folder = (fs::path(dir) / folder).string();
    }
    return parse_spec(text, spec_path, overrides, folder, files);
}

namespace {

int open_lock_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw io_error("cannot open " + path + ": " + std::strerror(errno));
    return fd;
}

void flock_or_throw(int fd, int op, const std::string& path) {
    while (::flock(fd, op) != 0)
        if (errno != EINTR) throw io_error("cannot lock " + path + ": " + std::strerror(errno));
}

}  // namespace

sweep_membership::sweep_membership(const std::string& dir) : dir_(dir) {
    entry_fd_ = open_lock_file(dir + "/.lock");
    flock_or_throw(entry_fd_, LOCK_EX, dir + "/.lock");  // held for a moment by each joining process
    users_fd_ = open_lock_file(dir + "/.users");
    if (::flock(users_fd_, LOCK_EX | LOCK_NB) == 0) return;  // nobody else: converted to shared by join()
    if (errno != EWOULDBLOCK) throw io_error("cannot lock " + dir + "/.users: " + std::strerror(errno));
    others_ = true;
}

void sweep_membership::join() {
    flock_or_throw(users_fd_, LOCK_SH, dir_ + "/.users");
    ::close(entry_fd_);
    entry_fd_ = -1;
}

sweep_membership::~sweep_membership() {
    if (entry_fd_ >= 0) ::close(entry_fd_);
    if (users_fd_ >= 0) ::close(users_fd_);
}

std::string spec_as_run_difference(const std::string& dir, const experiment_spec& spec) {
    const std::string spec_path = dir + "/spec.yaml";
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(spec_path, ec))) return "";
    std::string text = read_input(spec_path, inputs::spec);
    const std::string source = text.substr(std::min(text.size(), text.find('\n') + 1));
    const std::string overrides_path = dir + "/overrides.yaml";
    std::vector<std::string> overrides;
    try {
        overrides = fs::exists(fs::symlink_status(overrides_path, ec)) ? read_overrides(overrides_path)
                                                                       : overrides_from_header(text);
    } catch (const io_error& e) {
        return e.what();
    }
    if (source == spec.source_text && overrides == spec.set_overrides) return "";
    std::string what = overrides == spec.set_overrides ? "another spec" : "other --set overrides";
    try {
        const experiment_spec stored = load_spec_as_run(dir);
        std::map<std::string, std::string> ours;
        for (const auto& p : spec.runs) ours[p.id] = run_config_to_yaml(p.config);
        std::map<std::string, std::vector<std::string>> runs_by_change;  // change -> run ids
        for (const auto& p : stored.runs) {
            const auto it = ours.find(p.id);
            if (it == ours.end()) continue;
            const auto diffs = config_differences(run_config_to_yaml(p.config), it->second);
            if (!diffs.empty()) runs_by_change[differences_text(diffs)].push_back(p.id);
        }
        for (const auto& [change, ids] : runs_by_change)
            what += fmt::format("; {} in {} run{} ({}{})", change, ids.size(), ids.size() == 1 ? "" : "s", ids.front(),
                                ids.size() > 1 ? ", ..." : "");
    } catch (const std::exception&) {
        // spec.yaml no longer loads: the text difference alone is reported
    }
    return what;
}

namespace {

// Without its text file (task_files::read_if_present), a text run's file is
// known by the size and sha256 its finished run recorded in config.yaml: they
// are taken from there, so that the run still matches its spec and
// summary.csv records them. Returns whether it did.
bool take_task_file_from_run(run_config& cfg, const run_dir_check& c, const std::string& run_dir) {
    task_config& t = cfg.task;
    if (t.kind != task_kind::text || (t.size != 0 && !t.sha256.empty()) || c.state != run_dir_state::finished)
        return false;
    const run_config recorded = run_config_from_yaml(c.config_yaml, run_dir + "/config.yaml");
    if (t.size == 0) t.size = recorded.task.size;
    if (t.sha256.empty()) t.sha256 = recorded.task.sha256;
    return true;
}

// The same for a run's starting checkpoint (train.init), which git does not
// keep: where it is absent its sha256 is unknown, and the finished run's
// record (path and sha256) is taken when it names the same run folder
// (checkpoint_run_folder), wherever the repository was when the run trained.
void take_init_from_run(run_config& cfg, const run_dir_check& c, const std::string& run_dir) {
    train_config& t = cfg.train;
    if (t.init.empty() || !t.init_sha256.empty() || c.state != run_dir_state::finished) return;
    const run_config recorded = run_config_from_yaml(c.config_yaml, run_dir + "/config.yaml");
    if (recorded.train.init_sha256.empty() ||
        checkpoint_run_folder(recorded.train.init) != checkpoint_run_folder(t.init))
        return;
    t.init = recorded.train.init;
    t.init_sha256 = recorded.train.init_sha256;
}

}  // namespace

summarize_outcome summarize_sweep_dir(const std::string& dir, const report_flags* flags) {
    // A text experiment can be summarized where its corpus is not (a fresh clone).
    experiment_spec spec = load_spec_as_run(dir, task_files::read_if_present);
    if (flags) add_report_options(spec, *flags);
    if (const int n = remove_stale_temporaries(dir); n > 0)
        spdlog::info("removed {} temporary file{} of killed processes in {}", n, n == 1 ? "" : "s", dir);
    summarize_outcome out;
    out.total = static_cast<int>(spec.runs.size());
    std::vector<summary_entry> entries;
    std::set<std::string> ids;
    std::set<std::string> files_from_runs;  // text files not on this machine
    for (auto& point : spec.runs) {
        ids.insert(point.id);
        const std::string run_dir = dir + "/runs/" + point.id;
        const run_dir_check c = check_run_dir(run_dir);
        if (take_task_file_from_run(point.config, c, run_dir)) files_from_runs.insert(point.config.task.path);
        take_init_from_run(point.config, c, run_dir);
        const std::string config_yaml = run_config_to_yaml(point.config);
        if (c.state == run_dir_state::finished && same_run_config(c.config_yaml, config_yaml)) {
            entries.push_back({&point, *c.result});
            ++out.found;
        } else {
            out.missing.emplace_back(point.id, unfinished_reason(run_dir, config_yaml));
        }
    }
    std::error_code ec;
    for (fs::directory_iterator it(dir + "/runs", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::error_code entry_ec;  // a symbolic link that loops or dangles is named, not thrown
        const bool folder = it->is_directory(entry_ec);
        if (entry_ec && !ids.count(name))
            spdlog::warn("{}: {}; not a run, left out", it->path().string(), entry_ec.message());
        else if (folder && !ids.count(name))
            out.strays.push_back(name);
    }
    std::sort(out.strays.begin(), out.strays.end());
    for (const std::string& f : files_from_runs)
        spdlog::info("{} is not on this machine: its size and sha256 are taken from the runs' config.yaml", f);
    write_summary_files(dir, dir + "/runs", spec, entries);
    out.lr_warnings = learning_rate_warnings(spec, select_learning_rates(spec, entries));
    out.builds = build_mix_text(entries);
    out.comparison_warnings = comparison_build_warnings(compare_all(spec, entries));
    return out;
}

std::string build_mix_text(const std::vector<summary_entry>& entries) {
    std::vector<std::pair<std::string, int>> counts;  // in order of first appearance
    for (const auto& e : entries) {
        const std::string b = e.result.build ? describe(*e.result.build) : "(not recorded)";
        const auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == b; });
        if (it == counts.end())
            counts.emplace_back(b, 1);
        else
            ++it->second;
    }
    if (counts.size() < 2) return "";
    std::string text;
    for (const auto& [b, n] : counts)
        text += (text.empty() ? "" : ", ") + std::to_string(n) + (n == 1 ? " run by " : " runs by ") + b;
    return text;
}

}  // namespace attnlab
