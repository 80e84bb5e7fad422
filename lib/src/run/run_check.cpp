// The finished-run test and configuration differences of run_check.hpp.
#include "attnlab/run/run_check.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "attnlab/io/files.hpp"
#include "attnlab/results/metrics_csv.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace fs = std::filesystem;

namespace {

// The step of the last row of metrics.csv; empty with `why` set when the
// file is missing, has no rows, or a row is damaged (metrics_problem).
std::optional<int> last_metrics_step(const std::string& path, std::string& why) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec))) {
        why = path + ": missing";
        return std::nullopt;
    }
    std::string text;
    try {
        text = read_input(path, inputs::table);  // a FIFO, a device or a huge file is named, never read
    } catch (const io_error& e) {
        why = e.what();
        return std::nullopt;
    }
    // Every row, not only the last: a damaged cell would reach curves.csv.
    int step = -1;
    if (std::string problem = metrics_problem(text, path, step); !problem.empty()) {
        why = problem;
        return std::nullopt;
    }
    if (step < 0) {
        why = path + ": no rows";
        return std::nullopt;
    }
    return step;
}

// Why a run with `r` as its result is not complete; empty when it is.
std::string missing_part(const std::string& run_dir, const run_result& r) {
    std::string why;
    const std::string metrics = run_dir + "/metrics.csv";
    const auto last = last_metrics_step(metrics, why);
    if (!last) return why;
    const bool ok = r.status == run_status::ok;
    if (ok ? *last != r.steps : *last > r.steps)
        return metrics + ": its last row is step " + std::to_string(*last) + ", result.yaml says " +
               std::to_string(r.steps) + " steps (truncated or from another attempt)";
    // No check of model.safetensors: it is written before result.yaml, so a
    // finished run without one had it removed afterwards (committed results
    // leave checkpoints out). Its results stand; eval and probe need it.
    return "";
}

void flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>& out) {
    if (n.IsMap()) {
        for (const auto& kv : n)
            flatten(kv.second, prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar(), out);
        return;
    }
    if (n.IsScalar()) {
        out[prefix] = n.Scalar();
        return;
    }
    YAML::Emitter e;
    e << YAML::Flow << n;
    out[prefix] = e.c_str();
}

std::map<std::string, std::string> flat_keys(const std::string& yaml) {
    std::map<std::string, std::string> out;
    try {
        flatten(YAML::Load(yaml), "", out);
    } catch (const YAML::Exception&) {
        out["(config.yaml)"] = "(unreadable)";
    }
    return out;
}

// Numbers are compared as numbers: a hand-edited `lr: 1.0e-3` is the 0.001
// attnlab writes. The file's path and checksum are text, whatever they look like.
bool same_number(const std::string& key, const std::string& a, const std::string& b) {
    if (key == "task.path" || key == "task.sha256" || key == "train.init" || key == "train.init_sha256") return false;
    const auto number = [](const std::string& s, double& out) {
        const char* first = s.data() + (s.size() > 1 && s[0] == '+');
        const auto [p, ec] = std::from_chars(first, s.data() + s.size(), out);
        return !s.empty() && ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
    };
    double x = 0, y = 0;
    return number(a, x) && number(b, y) && x == y;
}

}  // namespace

run_dir_check check_run_dir(const std::string& run_dir) {
    run_dir_check c;
    const std::string cfg_path = run_dir + "/config.yaml";
    std::error_code ec;
    if (!fs::exists(cfg_path, ec)) return c;
    try {
        c.config_yaml = read_input(cfg_path, inputs::run_config);
    } catch (const io_error& e) {
        c.state = run_dir_state::damaged;
        c.problem = e.what();
        return c;
    }
    c.state = run_dir_state::unfinished;
    try {
        c.result = read_run_result(run_dir + "/result.yaml");
    } catch (const io_error& e) {
        c.state = run_dir_state::damaged;
        c.problem = e.what();
        return c;
    }
    if (!c.result || c.result->status == run_status::interrupted) return c;  // unfinished
    c.problem = missing_part(run_dir, *c.result);
    c.state = c.problem.empty() ? run_dir_state::finished : run_dir_state::damaged;
    return c;
}

std::vector<config_difference> config_differences(const std::string& old_yaml, const std::string& new_yaml) {
    auto a = flat_keys(old_yaml), b = flat_keys(new_yaml);
    // A text task's file is the same file when its bytes are (size and sha256,
    // compared as keys below), wherever it lies: a repository may be cloned elsewhere.
    const auto records_bytes = [](const std::map<std::string, std::string>& m) {
        return m.count("task.size") && m.count("task.sha256");
    };
    if (records_bytes(a) && records_bytes(b)) {
        a.erase("task.path");
        b.erase("task.path");
    }
    if (a.count("train.init_sha256") && b.count("train.init_sha256")) {  // the same for a run's starting checkpoint
        a.erase("train.init");
        b.erase("train.init");
    }
    std::vector<config_difference> out;
    for (const auto& [key, value] : a) {
        const auto it = b.find(key);
        const std::string other = it == b.end() ? "(none)" : it->second;
        if (other != value && !same_number(key, value, other)) out.push_back({key, value, other});
    }
    for (const auto& [key, value] : b)
        if (!a.count(key)) out.push_back({key, "(none)", value});
    return out;
}

std::string checkpoint_run_folder(const std::string& path) {
    fs::path p = fs::path(path).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    if (p.filename() == "model.safetensors") p = p.parent_path();
    std::vector<std::string> parts;
    for (const auto& part : p) parts.push_back(part.string());
    const std::size_t keep = std::min<std::size_t>(3, parts.size());
    std::string tail;
    for (std::size_t i = parts.size() - keep; i < parts.size(); ++i) tail += (tail.empty() ? "" : "/") + parts[i];
    return tail;
}

bool same_run_config(const std::string& old_yaml, const std::string& new_yaml) {
    return old_yaml == new_yaml || config_differences(old_yaml, new_yaml).empty();
}

std::string differences_text(const std::vector<config_difference>& diffs) {
    if (diffs.empty()) return "same keys and values, other text";
    std::string text;
    for (const auto& d : diffs) text += (text.empty() ? "" : ", ") + d.key + " " + d.old_value + " -> " + d.new_value;
    return text;
}

}  // namespace attnlab
