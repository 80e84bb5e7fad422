// Experiment-spec loader (docs/spec-reference.md): reads a spec's top-level
// keys and drives the pieces, each in its own file of lib/src/spec/:
//   yaml_guards  the text and its YAML, with size, UTF-8, alias-bomb,
//                nesting and syntax guards
//   diagnostics  the one-line errors "<file>:<line>: <key>: <what>"
//   values       one key's value from its scalar text, and back
//   schema       the table of every key (type, range, required, condition),
//                conditions read from the variant and task tables
//   hints        did-you-mean suggestions
//   rules        constraints between keys (the tasks' from the task table)
//   resolve      the base as entries; one run from base, --set and a point
//   sweep        --set, grids, unions of grids, seeds, run ids, expansion
//
// yaml-cpp 0.7 ignores unknown keys, keeps repeated keys and converts
// leniently ("yes" is a bool, "1.0" an int for some types), so every value is
// read from its scalar text, and every map is walked key by key.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/spec/spec.hpp"
#include "diagnostics.hpp"
#include "hints.hpp"
#include "resolve.hpp"
#include "schema.hpp"
#include "report.hpp"
#include "sweep.hpp"
#include "yaml_guards.hpp"

namespace attnlab {

using namespace spec_internal;

namespace {

std::string absolute_folder(const std::string& folder) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(folder.empty() ? "." : folder, ec);
    return ec ? folder : abs.lexically_normal().string();
}

experiment_spec parse_spec_checked(const std::string& text, const std::string& file,
                                   const std::vector<std::string>& set_overrides, const std::string& folder,
                                   task_files files) {
    experiment_spec spec;
    spec.path = file;
    spec.folder = absolute_folder(folder.empty() ? std::filesystem::path(file).parent_path().string() : folder);
    spec.source_text = text;
    spec.set_overrides = set_overrides;

    const YAML::Node root = load_yaml(text, file);
    if (root.IsNull()) fail({file, 1, ""}, "empty spec, expected a map with keys name, base, sweep, seeds");
    const int root_line = line_of(root) ? line_of(root) : 1;
    if (!root.IsMap())
        fail({file, root_line, ""}, "expected a map with keys name, base, sweep, seeds, got " + describe(root));
    struct item {
        YAML::Node value;
        int key_line, line;
    };
    std::map<std::string, item> top;
    for (const auto& [k, v] : map_items(root, file, "")) {
        const std::string key = k.Scalar();
        if (key != "name" && key != "base" && key != "sweep" && key != "seeds" && key != "report") {
            // A typo of a top-level key, or a key of the base written outside it (`model:`).
            std::vector<candidate> near = as_candidates({"name", "base", "sweep", "seeds", "report"});
            for (const std::string& n : names_in("")) near.push_back({n, "base." + n});
            for (const key_def& d : schema())
                if (const std::string s = section_of(d.key); !s.empty())
                    near.push_back({d.key.substr(s.size() + 1), "base." + d.key});
            fail({file, line_of(k), key},
                 "unknown key" + did_you_mean(key, near) + " (expected one of name, base, sweep, seeds, report)");
        }
        top[key] = {v, line_of(k), value_line(k, v)};
    }

    if (!top.count("name")) fail({file, root_line, "name"}, "missing required key, expected a name ([A-Za-z0-9._-]+)");
    const YAML::Node& name = top["name"].value;
    if (!name.IsScalar() || !name_is_safe(name.Scalar()))
        fail({file, top["name"].line, "name"}, "expected a name of letters, digits, '.', '_', '-' (at most " +
                                                   std::to_string(max_file_name) + "), got " + describe(name));
    spec.name = name.Scalar();

    if (!top.count("base"))
        fail({file, root_line, "base"}, "missing required key, expected a map with one complete run configuration");
    config_source base = parse_config(top["base"].value, file, "base", top["base"].key_line, top["base"].line);
    base.task_file_folder = spec.folder;
    base.task_file_may_be_missing = files == task_files::read_if_present;
    check_required(base);

    std::vector<grid> grids;
    if (top.count("sweep")) grids = parse_sweep(top["sweep"].value, file, top["sweep"].line);
    std::optional<std::vector<entry>> seeds;
    if (top.count("seeds")) seeds = parse_seeds(top["seeds"].value, file, top["seeds"].line, "seeds");

    for (const grid& g : grids)
        for (const axis& a : g.axes)
            if (std::find(spec.swept_keys.begin(), spec.swept_keys.end(), a.key) == spec.swept_keys.end())
                spec.swept_keys.push_back(a.key);

    // Count the runs before making them: a few lists can multiply to more
    // runs than memory holds.
    if (!grids.empty()) check_run_count(grids, seeds ? seeds->size() : 1, {file, top["sweep"].key_line, "sweep"});

    entries with_set = base.values;
    for (const std::string& s : set_overrides) {
        entry e = parse_set(s, training_limits());
        const std::string& key = e.at.path;
        bool swept = std::find(spec.swept_keys.begin(), spec.swept_keys.end(), key) != spec.swept_keys.end();
        bool grid_seeds = std::any_of(grids.begin(), grids.end(), [](const grid& g) { return g.seeds.has_value(); });
        if (swept || (key == "seed" && (seeds || grid_seeds)))
            fail(e.at, "is swept in the spec; --set cannot override it");
        with_set[key] = e;
    }
    spec.swept_keys.push_back("seed");

    spec.base = resolve(base, with_set, with_set, "");
    if (!seeds) {
        value v = value::of(vtype::integer);
        v.i = spec.base.seed;
        seeds = std::vector<entry>{entry{v, origin::base, {}}};
    }

    expand_runs(spec, base, with_set, grids, *seeds,
                {file, top.count("sweep") ? top["sweep"].key_line : root_line, "sweep"});
    if (top.count("report"))
        spec.reports =
            parse_reports(top["report"].value, file, top["report"].line, spec.swept_keys, spec.selection_seeds);
    return spec;
}

}  // namespace

experiment_spec parse_spec(const std::string& yaml_text, const std::string& file_label,
                           const std::vector<std::string>& set_overrides, const std::string& folder, task_files files) {
    try {
        return parse_spec_checked(yaml_text, file_label, set_overrides, folder, files);
    } catch (const YAML::Exception& e) {  // defensive: yaml-cpp errors outside load_yaml
        fail({file_label, e.mark.line >= 0 ? e.mark.line + 1 : 0, ""}, "YAML error: " + e.msg);
    }
}

experiment_spec load_spec(const std::string& path, const std::vector<std::string>& set_overrides) {
    return parse_spec(read_text(path), path, set_overrides);
}

std::string run_config_to_yaml(const run_config& cfg) {
    std::string out, section;
    for (const key_def& d : schema()) {
        if (!applies(d, cfg)) continue;
        std::optional<value> v = d.get(cfg);
        if (!v) continue;
        const std::string s = section_of(d.key);
        if (s.empty()) {
            out += d.key + ": " + v->yaml_text() + "\n";
            continue;
        }
        if (s != section) out += s + ":\n";
        section = s;
        out += "  " + d.key.substr(s.size() + 1) + ": " + v->yaml_text() + "\n";
    }
    return out;
}

std::vector<std::string> config_keys() {
    std::vector<std::string> out;
    for (const key_def& d : schema()) out.push_back(d.key);
    return out;
}

std::vector<swept_value> config_values(const run_config& cfg) {
    std::vector<swept_value> out;
    for (const key_def& d : schema())
        if (applies(d, cfg))
            if (std::optional<value> v = d.get(cfg)) out.push_back({d.key, v->text()});
    return out;
}

run_config run_config_from_yaml(const std::string& yaml_text, const std::string& file_label) {
    try {
        const YAML::Node root = load_yaml(yaml_text, file_label);
        if (root.IsNull())
            fail({file_label, 1, ""}, "empty config, expected a map of seed, task, model, attention, train");
        const config_source src = parse_config(root, file_label, "", 1, line_of(root) ? line_of(root) : 1);
        check_required(src);
        return resolve(src, src.values, src.values, "");
    } catch (const YAML::Exception& e) {
        fail({file_label, e.mark.line >= 0 ? e.mark.line + 1 : 0, ""}, "YAML error: " + e.msg);
    }
}

run_config run_config_from_yaml_file(const std::string& path) {
    return run_config_from_yaml(read_text(path, inputs::run_config), path);
}

}  // namespace attnlab
