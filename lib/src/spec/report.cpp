// `report:` and summarize's report options (see report.hpp).
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "diagnostics.hpp"
#include "hints.hpp"
#include "resolve.hpp"
#include "schema.hpp"
#include "sweep.hpp"
#include "yaml_guards.hpp"

namespace attnlab::spec_internal {

namespace {

const std::vector<std::string> report_keys = {"name",  "baseline", "baselines",  "match",
                                              "among", "margin",   "correction", "select_on"};
// The metrics a comparison reports (comparisons.hpp), which a margin may name.
const std::vector<std::string> margin_metrics = {"loss", "bits_per_byte", "token_acc", "seq_acc"};

// A key a baseline, match or among may name: a swept key other than seed and the tuned key.
void check_comparable(const std::string& key, const std::vector<std::string>& swept_keys, const where& at) {
    if (key == "seed" || key == tuned_key)
        fail(at, "cannot name " + key + ": variants are compared seed by seed, each at its chosen " + tuned_key);
    if (!find_key(key))
        fail(at, "unknown key" + did_you_mean(key, dotted_candidates()) + " (" + dotted_key_hint(key) + ")");
    if (std::find(swept_keys.begin(), swept_keys.end(), key) == swept_keys.end()) {
        std::string swept;
        for (const std::string& k : swept_keys) {
            if (k == "seed" || k == tuned_key) continue;
            if (!swept.empty()) swept += ", ";
            swept += k;
        }
        fail(at, "is not swept, so every variant has the same value (swept: " + (swept.empty() ? "none" : swept) + ")");
    }
}

key_values parse_baseline(const YAML::Node& v, const std::string& file, const where& at,
                          const std::vector<std::string>& swept_keys) {
    if (!v.IsMap() || v.size() == 0)
        fail(at, "expected a map of swept keys to the baseline's values, got " + describe(v));
    key_values b;
    for (const auto& [bk, bv] : map_items(v, file, at.path)) {
        const where key_at{file, value_line(bk, bv), at.path + "." + bk.Scalar()};
        check_comparable(bk.Scalar(), swept_keys, key_at);
        b.emplace_back(bk.Scalar(), parse_value(*find_key(bk.Scalar()), bv, key_at).text());
    }
    return b;
}

double parse_margin_value(const YAML::Node& v, const where& at) {
    if (!v.IsScalar()) fail(at, "expected a number > 0 in the metric's units, got " + describe(v));
    double m = 0;
    try {
        std::size_t used = 0;
        m = std::stod(v.Scalar(), &used);
        if (used != v.Scalar().size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
        fail(at, "expected a number > 0 in the metric's units, got " + describe(v));
    }
    if (!(m > 0) || !std::isfinite(m)) fail(at, "expected a number > 0 in the metric's units, got " + v.Scalar());
    return m;
}

void check_margin_metric(const std::string& metric, const where& at) {
    if (std::find(margin_metrics.begin(), margin_metrics.end(), metric) == margin_metrics.end())
        fail(at, "unknown metric" + did_you_mean(metric, as_candidates(margin_metrics)) +
                     " (expected one of loss, bits_per_byte, token_acc, seq_acc)");
}

correction_kind parse_correction(const std::string& text, const where& at) {
    if (text == "holm") return correction_kind::holm;
    if (text == "none") return correction_kind::none;
    fail(at, "expected holm or none, got '" + printable(text) + "'");
}

// The rules between a report's keys, once they are all read.
void check_report(const report_options& r, const where& at) {
    if (r.baselines.empty())
        fail({at.file, at.line, at.path + ".baselines"}, "missing required key, expected a list of baselines");
    for (const std::string& m : r.match) {
        for (const key_values& b : r.baselines)
            for (const auto& [bk, bv] : b)
                if (m == bk) fail({at.file, at.line, at.path + ".match"}, m + " is both in a baseline and in match");
        for (const auto& [ak, values] : r.among)
            if (m == ak) fail({at.file, at.line, at.path + ".among"}, m + " is both in among and in match");
    }
}

report_options parse_report(const YAML::Node& n, const std::string& file, int line,
                            const std::vector<std::string>& swept_keys, const std::string& path,
                            std::optional<std::vector<int>>& select_on) {
    if (!n.IsMap())
        fail({file, line, path}, "expected a map with keys baselines, match, among, margin, got " + describe(n));
    report_options r;
    for (const auto& [k, v] : map_items(n, file, path)) {
        const std::string key = k.Scalar();
        const where key_at{file, value_line(k, v), path + "." + key};
        if (key == "name") {
            if (!v.IsScalar() || v.Scalar().empty()) fail(key_at, "expected a non-empty name, got " + describe(v));
            r.name = v.Scalar();
        } else if (key == "baseline") {
            if (n["baselines"]) fail(key_at, "give baseline (one) or baselines (a list), not both");
            r.baselines.push_back(parse_baseline(v, file, key_at, swept_keys));
        } else if (key == "baselines") {
            if (!v.IsSequence() || v.size() == 0) fail(key_at, "expected a list of baseline maps, got " + describe(v));
            for (std::size_t i = 0; i < v.size(); ++i) {
                const where at{file, line_of(v[i]) ? line_of(v[i]) : key_at.line,
                               key_at.path + "[" + std::to_string(i) + "]"};
                r.baselines.push_back(parse_baseline(v[i], file, at, swept_keys));
                for (std::size_t j = 0; j + 1 < r.baselines.size(); ++j)
                    if (r.baselines[j] == r.baselines.back()) fail(at, "the same baseline twice");
            }
        } else if (key == "match") {
            if (!v.IsSequence()) fail(key_at, "expected a list of swept keys, got " + describe(v));
            for (const YAML::Node& item : v) {
                const where at{file, line_of(item) ? line_of(item) : key_at.line, key_at.path};
                if (!item.IsScalar()) fail(at, "expected a swept key, got " + describe(item));
                check_comparable(item.Scalar(), swept_keys, at);
                r.match.push_back(item.Scalar());
            }
        } else if (key == "among") {
            if (!v.IsMap() || v.size() == 0)
                fail(key_at, "expected a map of swept keys to lists of values, got " + describe(v));
            for (const auto& [ak, av] : map_items(v, file, key_at.path)) {
                const where at{file, value_line(ak, av), key_at.path + "." + ak.Scalar()};
                check_comparable(ak.Scalar(), swept_keys, at);
                if (!av.IsSequence() || av.size() == 0) fail(at, "expected a list of values, got " + describe(av));
                std::vector<std::string> values;
                for (const YAML::Node& item : av) {
                    const where item_at{file, line_of(item) ? line_of(item) : at.line, at.path};
                    values.push_back(parse_value(*find_key(ak.Scalar()), item, item_at).text());
                }
                r.among.emplace_back(ak.Scalar(), values);
            }
        } else if (key == "margin") {
            if (!v.IsMap() || v.size() == 0)
                fail(key_at, "expected a map of metrics to margins (e.g. {bits_per_byte: 0.05}), got " + describe(v));
            for (const auto& [mk, mv] : map_items(v, file, key_at.path)) {
                const where at{file, value_line(mk, mv), key_at.path + "." + mk.Scalar()};
                check_margin_metric(mk.Scalar(), at);
                r.margins.emplace_back(mk.Scalar(), parse_margin_value(mv, at));
            }
        } else if (key == "correction") {
            if (!v.IsScalar()) fail(key_at, "expected holm or none, got " + describe(v));
            r.correction = parse_correction(v.Scalar(), key_at);
        } else if (key == "select_on") {
            std::vector<int> seeds;
            for (const entry& e : parse_seeds(v, file, key_at.line, key_at.path))
                seeds.push_back(static_cast<int>(e.v.i));
            std::sort(seeds.begin(), seeds.end());
            if (select_on && *select_on != seeds)
                fail(key_at, "differs from another report's select_on: learning rates are chosen once for the spec");
            select_on = seeds;
        } else {
            fail({file, line_of(k), path + "." + key},
                 "unknown key" + did_you_mean(key, as_candidates(report_keys)) +
                     " (expected one of name, baseline, baselines, match, among, margin, correction, select_on)");
        }
    }
    check_report(r, {file, line, path});
    return r;
}

}  // namespace

std::vector<report_options> parse_reports(const YAML::Node& n, const std::string& file, int line,
                                          const std::vector<std::string>& swept_keys,
                                          std::vector<int>& selection_seeds) {
    std::optional<std::vector<int>> select_on;
    std::vector<report_options> out;
    if (!n.IsSequence()) {
        out.push_back(parse_report(n, file, line, swept_keys, "report", select_on));
    } else {
        if (n.size() == 0) fail({file, line, "report"}, "empty list, expected maps with keys baselines, match, among");
        for (std::size_t i = 0; i < n.size(); ++i)
            out.push_back(parse_report(n[i], file, line_of(n[i]) ? line_of(n[i]) : line, swept_keys,
                                       "report[" + std::to_string(i) + "]", select_on));
    }
    if (select_on) selection_seeds = *select_on;
    return out;
}

}  // namespace attnlab::spec_internal

namespace attnlab {

void add_report_options(experiment_spec& spec, const report_flags& flags) {
    using namespace spec_internal;
    if (flags.baselines.empty()) {
        for (const auto& [given, name] : {std::pair{!flags.match.empty(), "--match"},
                                          {!flags.among.empty(), "--among"},
                                          {!flags.margins.empty(), "--margin"},
                                          {!flags.correction.empty(), "--correction"}})
            if (given) fail({name, 0, ""}, "needs --baseline");
    } else {
        report_options r;
        r.name = "summarize options";
        for (const std::string& text : flags.baselines) {
            // One baseline: KEY=VALUE[,KEY=VALUE...]
            key_values b;
            std::size_t start = 0;
            while (start <= text.size()) {
                const std::size_t comma = std::min(text.find(',', start), text.size());
                const entry e = parse_set(text.substr(start, comma - start), training_limits(),
                                          "--baseline");  // the value checked against the key
                check_comparable(e.at.path, spec.swept_keys, {"--baseline", 0, e.at.path});
                for (const auto& [bk, bv] : b)
                    if (bk == e.at.path)
                        fail({"--baseline", 0, bk}, "named twice in one baseline '" + printable(text) + "'");
                b.emplace_back(e.at.path, e.v.text());
                start = comma + 1;
            }
            for (const key_values& other : r.baselines)
                if (other == b) fail({"--baseline", 0, ""}, "the same baseline twice: '" + printable(text) + "'");
            r.baselines.push_back(b);
        }
        for (const std::string& key : flags.match) {
            check_comparable(key, spec.swept_keys, {"--match", 0, key});
            r.match.push_back(key);
        }
        for (const std::string& text : flags.among) {
            // KEY=VALUE[,VALUE...]
            const std::size_t eq = text.find('=');
            const std::string key = text.substr(0, eq);
            if (eq == std::string::npos || key.empty())
                fail({"--among", 0, ""}, "expected KEY=VALUE[,VALUE...], got '" + printable(text) + "'");
            check_comparable(key, spec.swept_keys, {"--among", 0, key});
            std::vector<std::string> values;
            std::size_t start = eq + 1;
            while (start <= text.size()) {
                const std::size_t comma = std::min(text.find(',', start), text.size());
                const entry e = parse_set(key + "=" + text.substr(start, comma - start), training_limits(), "--among");
                values.push_back(e.v.text());
                start = comma + 1;
            }
            r.among.emplace_back(key, values);
        }
        for (const std::string& text : flags.margins) {
            const std::size_t eq = text.find('=');
            const std::string metric = text.substr(0, eq);
            const where at{"--margin", 0, metric};
            if (eq == std::string::npos || metric.empty())
                fail(at, "expected METRIC=VALUE (e.g. bits_per_byte=0.05), got '" + printable(text) + "'");
            check_margin_metric(metric, at);
            r.margins.emplace_back(metric, parse_margin_value(YAML::Node(text.substr(eq + 1)), at));
        }
        if (!flags.correction.empty()) r.correction = parse_correction(flags.correction, {"--correction", 0, ""});
        for (const std::string& m : r.match)
            for (const key_values& b : r.baselines)
                for (const auto& [bk, bv] : b)
                    if (m == bk) fail({"--match", 0, m}, "is also given to --baseline");
        spec.reports.push_back(std::move(r));
    }
    if (!flags.select_on.empty()) {
        std::vector<int> seeds = flags.select_on;
        std::sort(seeds.begin(), seeds.end());
        if (std::adjacent_find(seeds.begin(), seeds.end()) != seeds.end())
            fail({"--select-on", 0, ""}, "a seed is given twice");
        if (seeds.front() < 0)
            fail({"--select-on", 0, ""}, "expected seeds >= 0, got " + std::to_string(seeds.front()));
        spec.selection_seeds = seeds;
    }
}

}  // namespace attnlab
