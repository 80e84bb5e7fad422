// The shared results directory of a sweep: spec.yaml and overrides.yaml and
// `attnlab summarize` (sweep_dir.hpp).
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
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/summary.hpp"
#include "attnlab/train/resume_state.hpp"
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
    write_file_atomic(dir + "/summary.csv", summary_csv(spec, entries));
    write_file_atomic(dir + "/table.md", summary_table_md(spec, entries));
    return out;
}

}  // namespace attnlab
