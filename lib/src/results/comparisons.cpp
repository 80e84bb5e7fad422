// Paired comparisons against a baseline variant; the rules are in comparisons.hpp.
#include "attnlab/results/comparisons.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "attnlab/io/csv.hpp"
#include "attnlab/results/run_groups.hpp"

namespace attnlab {

double student_t_central_mass(double t, int df) {
    const double pi = 3.14159265358979323846;
    const double theta = std::atan(std::abs(t) / std::sqrt(static_cast<double>(df)));
    const double c2 = std::cos(theta) * std::cos(theta);
    double sum = 1, term = 1;
    if (df % 2 == 1) {
        // (2/pi) (theta + sin cos [1 + (2/3) cos^2 + (2·4)/(3·5) cos^4 + ... up to cos^(df-3)])
        if (df == 1) return 2 * theta / pi;
        for (int k = 1; k <= (df - 3) / 2; ++k) {
            term *= 2.0 * k / (2.0 * k + 1) * c2;
            sum += term;
        }
        return 2 / pi * (theta + std::sin(theta) * std::cos(theta) * sum);
    }
    // sin [1 + (1/2) cos^2 + (1·3)/(2·4) cos^4 + ... up to cos^(df-2)]
    for (int k = 1; k <= (df - 2) / 2; ++k) {
        term *= (2.0 * k - 1) / (2.0 * k) * c2;
        sum += term;
    }
    return std::sin(theta) * sum;
}

double student_t_975(int df) {
    // The mass is increasing in t: bisect to double precision (t(0.975, 1) = 12.7).
    double low = 0, high = 64;
    for (int i = 0; i < 200 && high - low > 1e-12; ++i) {
        const double mid = 0.5 * (low + high);
        (student_t_central_mass(mid, df) < 0.95 ? low : high) = mid;
    }
    return 0.5 * (low + high);
}

paired_difference paired_over_seeds(const std::map<int, double>& variant, const std::map<int, double>& baseline) {
    paired_difference d;
    std::vector<double> diffs;
    for (const auto& [seed, v] : variant) {
        const auto b = baseline.find(seed);
        if (b == baseline.end()) continue;
        d.seeds.push_back(seed);
        diffs.push_back(v - b->second);
    }
    d.n = static_cast<int>(diffs.size());
    if (d.n == 0) return d;
    for (double x : diffs) d.mean += x;
    d.mean /= d.n;
    if (d.n < 2) return d;
    double ss = 0;
    for (double x : diffs) ss += (x - d.mean) * (x - d.mean);
    const double half = student_t_975(d.n - 1) * std::sqrt(ss / (d.n - 1)) / std::sqrt(static_cast<double>(d.n));
    d.low = d.mean - half;
    d.high = d.mean + half;
    return d;
}

namespace {

// A variant at the rate it is judged at.
struct judged_variant {
    std::vector<std::string> values;   // grouping_keys(spec, true)
    std::string lr;                    // "" when train.lr is not swept
    std::vector<std::size_t> members;  // indices into the entries
};

std::vector<judged_variant> judged_variants(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::vector<judged_variant> out;
    const lr_selection sel = select_learning_rates(spec, entries);
    if (sel.swept) {
        for (const lr_choice& c : sel.variants)
            out.push_back({c.variant, c.rates[c.chosen].lr, c.rates[c.chosen].members});
        return out;
    }
    for (const run_group& g : group_runs(entries, grouping_keys(spec, true))) out.push_back({g.values, "", g.members});
    return out;
}

struct metric_def {
    std::string name;
    double (*value)(const eval_metrics&);
};

std::vector<metric_def> metrics_of(task_kind kind) {
    std::vector<metric_def> m = {{"loss", [](const eval_metrics& e) { return e.loss; }}};
    if (kind == task_kind::text) {
        m.push_back({"bits_per_byte", [](const eval_metrics& e) { return bits(e.loss); }});
        return m;
    }
    m.push_back({"token_acc", [](const eval_metrics& e) { return e.token_acc; }});
    if (traits_of(kind).sequence_accuracy) m.push_back({"seq_acc", [](const eval_metrics& e) { return e.seq_acc; }});
    return m;
}

std::size_t key_index(const std::vector<std::string>& keys, const std::string& key) {
    return static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
}

}  // namespace

comparisons_result compare_with_baseline(const experiment_spec& spec, const std::vector<summary_entry>& entries,
                                         const report_options& report) {
    comparisons_result res;
    const std::vector<std::string> keys = grouping_keys(spec, true);
    for (const auto& [k, v] : report.baseline) {
        if (!res.baseline_text.empty()) res.baseline_text += ',';
        res.baseline_text += k + "=" + v;
    }
    res.match = report.match;
    const std::vector<judged_variant> variants = judged_variants(spec, entries);

    auto is_baseline_for = [&](const judged_variant& b, const judged_variant& v) {
        for (const auto& [k, value] : report.baseline) {
            const std::size_t at = key_index(keys, k);
            if (at == keys.size() || b.values[at] != value) return false;
        }
        for (const std::string& k : report.match) {
            const std::size_t at = key_index(keys, k);
            if (at < keys.size() && b.values[at] != v.values[at]) return false;
        }
        return true;
    };
    for (const judged_variant& v : variants) {
        std::vector<const judged_variant*> found;
        for (const judged_variant& b : variants)
            if (is_baseline_for(b, v)) found.push_back(&b);
        if (found.size() == 1 && found[0] == &v) continue;  // the baseline itself
        const std::string label = variant_label(keys, v.values);
        if (found.empty()) {
            res.notes.push_back(label + ": no variant matches the baseline");
            continue;
        }
        if (found.size() > 1) {
            std::string which;
            for (const judged_variant* b : found) {
                if (!which.empty()) which += "; ";
                which += variant_label(keys, b->values);
            }
            res.notes.push_back(label + ": " + std::to_string(found.size()) + " variants match the baseline (" + which +
                                "); name more keys in the baseline or in match");
            continue;
        }
        const judged_variant& b = *found[0];
        comparison c{v.values, v.lr, b.lr, b.values, {}, {}, 0, 0};
        const task_kind kind = entries[v.members.front()].point->config.task.kind;
        // Each side's finished runs by seed; a seed whose run on either side failed is left out.
        std::map<int, const run_result*> side_v, side_b;
        std::set<int> failed;
        auto collect = [&](const std::vector<std::size_t>& members, std::map<int, const run_result*>& side) {
            for (std::size_t i : members) {
                const summary_entry& e = entries[i];
                if (e.result.status == run_status::ok)
                    side[e.point->config.seed] = &e.result;
                else
                    failed.insert(e.point->config.seed);
            }
        };
        collect(v.members, side_v);
        collect(b.members, side_b);
        std::set<int> v_seeds, b_seeds;
        for (std::size_t i : v.members) v_seeds.insert(entries[i].point->config.seed);
        for (std::size_t i : b.members) b_seeds.insert(entries[i].point->config.seed);
        for (int s : v_seeds) c.unpaired_seeds += !b_seeds.count(s);
        for (int s : b_seeds) c.unpaired_seeds += !v_seeds.count(s);
        for (int s : failed) c.diverged_seeds += v_seeds.count(s) && b_seeds.count(s);
        for (const metric_def& m : metrics_of(kind)) {
            std::map<int, double> mv, mb;
            for (const auto& [s, r] : side_v)
                if (!failed.count(s)) mv[s] = m.value(r->final_test);
            for (const auto& [s, r] : side_b)
                if (!failed.count(s)) mb[s] = m.value(r->final_test);
            c.metrics.push_back(m.name);
            c.differences.push_back(paired_over_seeds(mv, mb));
        }
        res.rows.push_back(std::move(c));
    }
    return res;
}

namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string signed_cell(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.4f", v);
    return buf;
}

std::string join_keys(const std::vector<std::string>& keys) {
    std::string out;
    for (const std::string& k : keys) {
        if (!out.empty()) out += ", ";
        out += k;
    }
    return out;
}

std::string seeds_text(const std::vector<int>& seeds) {
    std::string out;
    for (int s : seeds) {
        if (!out.empty()) out += ' ';
        out += std::to_string(s);
    }
    return out;
}

}  // namespace

std::vector<comparisons_result> compare_all(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::vector<comparisons_result> out;
    for (const report_options& r : spec.reports) out.push_back(compare_with_baseline(spec, entries, r));
    return out;
}

std::string comparisons_csv(const experiment_spec& spec, const std::vector<comparisons_result>& results) {
    const std::vector<std::string> keys = grouping_keys(spec, true);
    std::vector<std::string> header = keys;
    for (const char* h : {"train.lr", "baseline", "baseline_train.lr", "metric", "n", "mean_diff", "ci_low", "ci_high",
                          "resolved", "seeds", "diverged_seeds", "unpaired_seeds"})
        header.push_back(h);
    std::string out = csv_line(header);
    std::set<std::pair<std::vector<std::string>, std::vector<std::string>>> written;  // (variant, baseline)
    for (const comparisons_result& result : results)
        for (const comparison& c : result.rows) {
            if (!written.insert({c.variant, c.baseline}).second) continue;
            for (std::size_t m = 0; m < c.metrics.size(); ++m) {
                const paired_difference& d = c.differences[m];
                std::vector<std::string> row = c.variant;
                row.push_back(c.lr);
                row.push_back(variant_label(keys, c.baseline));
                row.push_back(c.baseline_lr);
                row.push_back(c.metrics[m]);
                row.push_back(std::to_string(d.n));
                row.push_back(d.n > 0 ? number(d.mean) : "");
                row.push_back(d.has_interval() ? number(d.low) : "");
                row.push_back(d.has_interval() ? number(d.high) : "");
                row.push_back(d.has_interval() ? (d.resolved() ? "true" : "false") : "");
                row.push_back(seeds_text(d.seeds));
                row.push_back(std::to_string(c.diverged_seeds));
                row.push_back(std::to_string(c.unpaired_seeds));
                out += csv_line(row);
            }
        }
    return out;
}

std::string comparisons_md(const experiment_spec& spec, const comparisons_result& result) {
    if (result.baseline_text.empty()) return "";
    const std::vector<std::string> keys = grouping_keys(spec, true);
    std::ostringstream s;
    s << "## Paired differences against " << result.baseline_text
      << (result.match.empty() ? "" : " (same " + join_keys(result.match) + ")") << "\n\n"
      << "Baseline: " << result.baseline_text;
    if (!result.match.empty()) {
        s << ", with the compared variant's ";
        for (std::size_t i = 0; i < result.match.size(); ++i) s << (i ? ", " : "") << result.match[i];
    }
    s << ". Each cell: mean over seeds of (variant - baseline), seed paired with seed, each side at its chosen "
         "rate, then the 95 % Student-t interval and the number of paired seeds n; \"not resolved\" when the "
         "interval contains 0. Losses in nats (bits_per_byte in bits); a positive loss difference means the variant "
         "is worse.\n\n";
    if (result.rows.empty()) s << "No variant could be compared.\n\n";
    if (!result.rows.empty()) {
        // Columns: every metric of any row (tasks of one sweep may differ), in order of first appearance.
        std::vector<std::string> metrics;
        for (const comparison& c : result.rows)
            for (const std::string& m : c.metrics)
                if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
        s << "|";
        for (const auto& k : keys) s << " " << k << " |";
        s << " train.lr | baseline train.lr |";
        for (const auto& m : metrics) s << " Δ " << m << " [95 % CI] (n) |";
        s << " left out |\n|";
        for (std::size_t i = 0; i < keys.size() + 3 + metrics.size(); ++i) s << "---|";
        s << "\n";
        for (const comparison& c : result.rows) {
            s << "|";
            for (const auto& v : c.variant) s << " " << (v.empty() ? "–" : v) << " |";
            s << " " << (c.lr.empty() ? "–" : c.lr) << " | " << (c.baseline_lr.empty() ? "–" : c.baseline_lr) << " |";
            for (const std::string& m : metrics) {
                s << " ";
                const std::size_t at = key_index(c.metrics, m);
                if (at == c.metrics.size()) {
                    s << "– |";
                    continue;
                }
                const paired_difference& d = c.differences[at];
                if (d.n == 0)
                    s << "no paired seed";
                else if (!d.has_interval())
                    s << signed_cell(d.mean) << " (1): one paired seed, no interval";
                else
                    s << signed_cell(d.mean) << " [" << signed_cell(d.low) << ", " << signed_cell(d.high) << "] ("
                      << d.n << ")" << (d.resolved() ? "" : " not resolved");
                s << " |";
            }
            std::string left;
            if (c.diverged_seeds) left += std::to_string(c.diverged_seeds) + " diverged";
            if (c.unpaired_seeds) {
                if (!left.empty()) left += ", ";
                left += std::to_string(c.unpaired_seeds) + " unpaired";
            }
            s << " " << (left.empty() ? "–" : left) << " |\n";
        }
        s << "\n";
    }
    for (const std::string& n : result.notes) s << "- " << n << "\n";
    if (!result.notes.empty()) s << "\n";
    return s.str();
}

}  // namespace attnlab
