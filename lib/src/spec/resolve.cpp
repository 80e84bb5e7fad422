// Entries of a base or config file and the resolution of one run (see resolve.hpp).
#include "resolve.hpp"

#include <algorithm>
#include <vector>

#include "hints.hpp"
#include "rules.hpp"
#include "task_file.hpp"

namespace attnlab::spec_internal {

// `key_line`: line of the `base:` key (where a missing key is reported);
// `line`: line of its value.
config_source parse_config(const YAML::Node& node, const std::string& file, const std::string& path, int key_line,
                           int line) {
    config_source src{file, path, key_line, {}, {}, ""};
    if (!node.IsMap())
        fail({file, line, path}, "expected a map of " + join(names_in(""), ", ") + ", got " + describe(node));
    auto add = [&](const key_def& d, const YAML::Node& k, const YAML::Node& v) {
        where at{file, value_line(k, v), join_path(path, d.key)};
        src.values[d.key] = entry{parse_value(d, v, at), origin::base, at};
    };
    for (const auto& [k, v] : map_items(node, file, path)) {
        const std::string name = k.Scalar();
        const std::string sub_path = join_path(path, name);
        if (const key_def* d = find_key(name); d && section_of(name).empty()) {
            add(*d, k, v);
        } else if (is_section(name)) {
            if (!v.IsMap())
                fail({file, value_line(k, v), sub_path},
                     "expected a map of " + join(names_in(name), ", ") + ", got " + describe(v));
            src.section_line[name] = line_of(k);
            for (const auto& [sk, sv] : map_items(v, file, sub_path)) {
                const key_def* sd = find_key(name + "." + sk.Scalar());
                if (!sd)
                    fail({file, line_of(sk), join_path(sub_path, sk.Scalar())},
                         "unknown key" + did_you_mean(sk.Scalar(), config_candidates(name, path)) +
                             " (expected one of " + join(names_in(name), ", ") + ")");
                add(*sd, sk, sv);
            }
        } else {
            fail({file, line_of(k), sub_path}, "unknown key" + did_you_mean(name, config_candidates("", path)) +
                                                   " (expected one of " + join(names_in(""), ", ") + ")");
        }
    }
    return src;
}

// Keys required whatever the other values are (the conditional ones are
// checked per resolved run, where their condition is known).
void check_required(const config_source& src) {
    for (const key_def& d : schema()) {
        if (!d.required || !d.when.controller.empty() || src.values.count(d.key)) continue;
        std::string section = section_of(d.key);
        auto sl = src.section_line.find(section);
        if (!section.empty() && sl == src.section_line.end()) {
            std::vector<std::string> need;
            for (const key_def& r : schema())
                if (r.required && r.when.controller.empty() && section_of(r.key) == section)
                    need.push_back(r.key.substr(section.size() + 1));
            fail({src.file, src.line, join_path(src.path, section)},
                 "missing required section (with " + join(need, ", ") + ")");
        }
        fail({src.file, section.empty() ? src.line : sl->second, join_path(src.path, d.key)},
             "missing required key, expected " + expected(d));
    }
}

namespace {

std::string choice_in(const entries& e, const std::string& key) {
    if (auto it = e.find(key); it != e.end()) return it->second.v.name;
    return find_key(key)->get(run_config{})->name;  // its default
}

bool holds(const condition& c, const std::string& controller_value) {
    return std::find(c.values.begin(), c.values.end(), controller_value) != c.values.end();
}
bool applies(const key_def& d, const entries& e) {
    return d.when.controller.empty() || holds(d.when, choice_in(e, d.when.controller));
}

}  // namespace

bool applies(const key_def& d, const run_config& c) {
    return d.when.controller.empty() || holds(d.when, find_key(d.when.controller)->get(c)->name);
}

// Resolves one run. The values in force at each level: the base as written,
// the base after --set, and this run (a sweep point, or the base after --set).
// A conditional key that means nothing in this run is an error if it meant
// nothing where it was written (base, --set or this point); otherwise a later
// level made it meaningless and it is dropped, left at its default.
run_config resolve(const config_source& base, const entries& with_set, const entries& run, const std::string& point) {
    const entries* level[3] = {&base.values, &with_set, &run};
    const std::string at_point = point.empty() ? "" : " (at sweep point " + point + ")";
    run_config cfg;
    for (const key_def& d : schema()) {
        const bool meaningful = applies(d, run);
        auto it = run.find(d.key);
        if (it == run.end()) {
            if (!d.required || !meaningful) continue;
            // Required only under a condition: blame whoever set the condition.
            auto c = run.find(d.when.controller);
            if (c == run.end() || c->second.from == origin::base) {
                auto sl = base.section_line.find(section_of(d.key));
                fail({base.file, sl == base.section_line.end() ? base.line : sl->second, join_path(base.path, d.key)},
                     "missing required key (needed when " + d.when.text() + "), expected " + expected(d) + at_point);
            }
            fail(c->second.at, c->second.v.text() + " needs " + d.key + ", which is not set" + at_point);
        }
        const entry& e = it->second;
        if (!meaningful) {
            if (!e.v.is_set() || applies(d, *level[static_cast<int>(e.from)])) continue;
            fail(e.at, std::string(e.from == origin::sweep ? "swept value has no effect" : "has no effect") + ": " +
                           d.key + " applies only when " + d.when.text() + ", but " + d.when.controller + " is " +
                           choice_in(run, d.when.controller) + at_point);
        }
        d.set(cfg, e.v);
    }
    fill_derived_defaults(cfg);
    for (const rule& r : combination_rules()) {
        std::string why = r.broken(cfg);
        if (why.empty()) continue;
        const entry* blame = nullptr;
        for (const std::string& k : r.keys)
            if (auto bi = run.find(k); bi != run.end() && (!blame || bi->second.from > blame->from))
                blame = &bi->second;
        if (!blame) fail({base.file, base.line, base.path}, why + at_point);  // defaults alone: not reachable
        fail(blame->at, why + at_point);
    }
    if (!base.task_file_folder.empty()) {
        // Where a key was written; a key left out is blamed on its section.
        const auto at = [&](const std::string& key) {
            if (auto it = run.find(key); it != run.end()) return it->second.at;
            auto sl = base.section_line.find(section_of(key));
            return where{base.file, sl == base.section_line.end() ? base.line : sl->second, join_path(base.path, key)};
        };
        record_task_file(cfg, base.task_file_folder, at, at_point, base.task_file_may_be_missing);
        record_init_checkpoint(cfg, base.task_file_folder, at, at_point, base.task_file_may_be_missing);
    }
    return cfg;
}

}  // namespace attnlab::spec_internal
