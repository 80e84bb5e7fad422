// `report:` and summarize's --baseline/--match (see report.hpp).
#include "report.hpp"

#include <algorithm>

#include "diagnostics.hpp"
#include "hints.hpp"
#include "resolve.hpp"
#include "schema.hpp"
#include "sweep.hpp"
#include "yaml_guards.hpp"

namespace attnlab::spec_internal {

namespace {

// A key a baseline or match may name: a swept key other than seed and train.lr.
void check_comparable(const std::string& key, const std::vector<std::string>& swept_keys, const where& at) {
    if (key == "seed" || key == "train.lr")
        fail(at, "cannot name " + key + ": variants are compared seed by seed, each at its chosen train.lr");
    if (!find_key(key))
        fail(at, "unknown key" + did_you_mean(key, dotted_candidates()) + " (" + dotted_key_hint(key) + ")");
    if (std::find(swept_keys.begin(), swept_keys.end(), key) == swept_keys.end()) {
        std::string swept;
        for (const std::string& k : swept_keys) {
            if (k == "seed" || k == "train.lr") continue;
            if (!swept.empty()) swept += ", ";
            swept += k;
        }
        fail(at, "is not swept, so every variant has the same value (swept: " + (swept.empty() ? "none" : swept) + ")");
    }
}

report_options parse_report(const YAML::Node& n, const std::string& file, int line,
                            const std::vector<std::string>& swept_keys, const std::string& path) {
    if (!n.IsMap()) fail({file, line, path}, "expected a map with keys baseline, match, got " + describe(n));
    report_options r;
    bool has_baseline = false;
    for (const auto& [k, v] : map_items(n, file, path)) {
        const std::string key = k.Scalar();
        const where key_at{file, value_line(k, v), path + "." + key};
        if (key == "baseline") {
            has_baseline = true;
            if (!v.IsMap() || v.size() == 0)
                fail(key_at, "expected a map of swept keys to the baseline's values, got " + describe(v));
            for (const auto& [bk, bv] : map_items(v, file, key_at.path)) {
                const where at{file, value_line(bk, bv), key_at.path + "." + bk.Scalar()};
                check_comparable(bk.Scalar(), swept_keys, at);
                r.baseline.emplace_back(bk.Scalar(), parse_value(*find_key(bk.Scalar()), bv, at).text());
            }
        } else if (key == "match") {
            if (!v.IsSequence()) fail(key_at, "expected a list of swept keys, got " + describe(v));
            for (const YAML::Node& item : v) {
                const where at{file, line_of(item) ? line_of(item) : key_at.line, key_at.path};
                if (!item.IsScalar()) fail(at, "expected a swept key, got " + describe(item));
                check_comparable(item.Scalar(), swept_keys, at);
                r.match.push_back(item.Scalar());
            }
        } else {
            fail({file, line_of(k), path + "." + key}, "unknown key" +
                                                           did_you_mean(key, as_candidates({"baseline", "match"})) +
                                                           " (expected one of baseline, match)");
        }
    }
    if (!has_baseline) fail({file, line, path + ".baseline"}, "missing required key, expected a map of swept keys");
    for (const std::string& m : r.match)
        for (const auto& [bk, bv] : r.baseline)
            if (m == bk) fail({file, line, path + ".match"}, m + " is both in the baseline and in match");
    return r;
}

}  // namespace

std::vector<report_options> parse_reports(const YAML::Node& n, const std::string& file, int line,
                                          const std::vector<std::string>& swept_keys) {
    if (!n.IsSequence()) return {parse_report(n, file, line, swept_keys, "report")};
    if (n.size() == 0) fail({file, line, "report"}, "empty list, expected maps with keys baseline, match");
    std::vector<report_options> out;
    for (std::size_t i = 0; i < n.size(); ++i)
        out.push_back(parse_report(n[i], file, line_of(n[i]) ? line_of(n[i]) : line, swept_keys,
                                   "report[" + std::to_string(i) + "]"));
    return out;
}

}  // namespace attnlab::spec_internal

namespace attnlab {

report_options parse_report_options(const experiment_spec& spec, const std::vector<std::string>& baseline,
                                    const std::vector<std::string>& match) {
    using namespace spec_internal;
    report_options r;
    for (const std::string& s : baseline) {
        entry e = parse_set(s);  // dotted.key=value, the value checked against the key
        const where at{"--baseline", 0, e.at.path};
        check_comparable(e.at.path, spec.swept_keys, at);
        r.baseline.emplace_back(e.at.path, e.v.text());
    }
    for (const std::string& key : match) {
        check_comparable(key, spec.swept_keys, {"--match", 0, key});
        r.match.push_back(key);
    }
    for (const std::string& m : r.match)
        for (const auto& [bk, bv] : r.baseline)
            if (m == bk) fail({"--match", 0, m}, "is also given to --baseline");
    return r;
}

}  // namespace attnlab
