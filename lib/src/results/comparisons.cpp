// Comparisons against baseline variants and their verdicts; the rules are in comparisons.hpp
// (comparisons_output.cpp writes them as comparisons.csv and table.md sections).
#include "attnlab/results/comparisons.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "attnlab/io/csv.hpp"
#include "attnlab/results/run_groups.hpp"
#include "attnlab/util/build_info.hpp"

namespace attnlab {

namespace {
// out + sep + item, the separator only between items.
void append_item(std::string& out, const char* sep, const std::string& item) {
    if (!out.empty()) out += sep;
    out += item;
}
}  // namespace

paired_difference paired_over_seeds(const std::map<int, double>& variant, const std::map<int, double>& baseline) {
    paired_difference d;
    std::vector<double> diffs;
    for (const auto& [seed, v] : variant) {
        const auto b = baseline.find(seed);
        if (b == baseline.end()) continue;
        d.seeds.push_back(seed);
        d.variant_values.push_back(v);
        d.baseline_values.push_back(b->second);
        diffs.push_back(v - b->second);
    }
    d.n = static_cast<int>(diffs.size());
    if (d.n == 0) return d;
    const mean_interval t = one_sample_t(diffs);
    d.mean = t.mean;
    if (d.n < 2) return d;
    d.sd = t.sd;
    d.low = t.low;
    d.high = t.high;
    d.p = t.p;
    return d;
}

const char* verdict_name(verdict v) {
    switch (v) {
        case verdict::behind: return "behind";
        case verdict::ahead: return "ahead";
        case verdict::level: return "level";
        case verdict::not_resolved: return "not resolved";
        case verdict::no_test: break;
    }
    return "no test";
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
    bool higher_is_better;
    double (*value)(const eval_metrics&);
};

std::vector<metric_def> metrics_of(task_kind kind) {
    std::vector<metric_def> m = {{"loss", false, [](const eval_metrics& e) { return e.loss; }}};
    if (kind == task_kind::text) {
        m.push_back({"bits_per_byte", false, [](const eval_metrics& e) { return bits(e.loss); }});
        return m;
    }
    m.push_back({"token_acc", true, [](const eval_metrics& e) { return e.token_acc; }});
    if (traits_of(kind).sequence_accuracy)
        m.push_back({"seq_acc", true, [](const eval_metrics& e) { return e.seq_acc; }});
    return m;
}

std::size_t key_index(const std::vector<std::string>& keys, const std::string& key) {
    return static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
}

std::string key_values_text(const key_values& kv) {
    std::string out;
    for (const auto& [k, v] : kv) append_item(out, ",", k + "=" + v);
    return out;
}

std::string among_text(const report_options& report) {
    std::string out;
    for (const auto& [k, values] : report.among) {
        std::string set;
        for (const std::string& v : values) append_item(set, ", ", v);
        append_item(out, "; ", k + " in {" + set + "}");
    }
    return out;
}

bool is_among(const report_options& report, const std::vector<std::string>& keys, const judged_variant& v) {
    for (const auto& [k, values] : report.among) {
        const std::size_t at = key_index(keys, k);
        if (at == keys.size() || std::find(values.begin(), values.end(), v.values[at]) == values.end()) return false;
    }
    return true;
}

bool is_selection_seed(const experiment_spec& spec, int seed) {
    return std::find(spec.selection_seeds.begin(), spec.selection_seeds.end(), seed) != spec.selection_seeds.end();
}

// The compared runs of both sides: their builds, and those apart from the most common one.
void judge_builds(comparison& c, const std::vector<const summary_entry*>& runs) {
    std::vector<std::pair<std::string, int>> counts;  // build -> runs, in order of first appearance
    bool unstamped = false;
    for (const summary_entry* e : runs) {
        if (!e->result.build) {
            unstamped = true;
            continue;
        }
        const std::string b = describe(*e->result.build);
        const auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& x) { return x.first == b; });
        if (it == counts.end())
            counts.emplace_back(b, 1);
        else
            ++it->second;
    }
    std::string common;
    int most = 0;
    for (const auto& [b, n] : counts)
        if (n > most) common = b, most = n;
    for (const summary_entry* e : runs) {
        c.run_ids.push_back(e->point->id);
        if (!e->result.build || describe(*e->result.build) != common) c.other_build_runs.push_back(e->point->id);
    }
    c.builds = unstamped ? "unstamped" : counts.size() > 1 ? "mixed" : "one";
}

metric_comparison compare_metric(const metric_def& m, const std::map<int, const run_result*>& side_v,
                                 const std::map<int, const run_result*>& side_b, const std::set<int>& failed) {
    metric_comparison mc;
    mc.metric = m.name;
    mc.higher_is_better = m.higher_is_better;
    std::map<int, double> mv, mb;
    for (const auto& [s, r] : side_v)
        if (!failed.count(s)) mv[s] = m.value(r->final_test);
    for (const auto& [s, r] : side_b)
        if (!failed.count(s)) mb[s] = m.value(r->final_test);
    mc.d = paired_over_seeds(mv, mb);
    mc.p = mc.d.has_interval() ? mc.d.p : std::numeric_limits<double>::quiet_NaN();
    mc.correlation = pearson_correlation(mc.d.variant_values, mc.d.baseline_values);
    mc.welch = welch_t(mc.d.variant_values, mc.d.baseline_values);
    return mc;
}

metric_comparison compare_counts(const std::string& name, bool higher_is_better, int kv, int nv, int kb, int nb) {
    metric_comparison mc;
    mc.metric = name;
    mc.binary = true;
    mc.higher_is_better = higher_is_better;
    mc.variant_count = {kv, nv, nv > 0 ? clopper_pearson(kv, nv) : proportion_interval{0, 1}};
    mc.baseline_count = {kb, nb, nb > 0 ? clopper_pearson(kb, nb) : proportion_interval{0, 1}};
    if (nv > 0 && nb > 0) {
        mc.p = fisher_exact_two_sided(kv, nv, kb, nb);
        mc.smallest_p = fisher_smallest_p(nv, nb);
    } else {
        mc.p = std::numeric_limits<double>::quiet_NaN();
    }
    return mc;
}

// Holm (or no) adjustment within each metric's family, then the verdicts.
void judge_family(comparisons_result& res) {
    std::map<std::string, std::vector<metric_comparison*>> families;
    for (comparison& c : res.rows)
        for (metric_comparison& m : c.metrics)
            if (m.has_test()) families[m.metric].push_back(&m);
    for (auto& [metric, family] : families) {
        res.family_size[metric] = static_cast<int>(family.size());
        std::vector<double> p, p_level;
        for (const metric_comparison* m : family) {
            p.push_back(m->p);
            p_level.push_back(m->margin ? m->p_level : std::numeric_limits<double>::quiet_NaN());
        }
        const bool holm = res.correction == correction_kind::holm;
        const std::vector<double> p_adj = holm ? holm_adjust(p) : p;
        const std::vector<double> p_level_adj = holm ? holm_adjust(p_level) : p_level;
        const int k = static_cast<int>(family.size());
        for (std::size_t i = 0; i < family.size(); ++i) {
            metric_comparison& m = *family[i];
            m.p_adjusted = p_adj[i];
            if (m.margin) m.p_level_adjusted = p_level_adj[i];
            if (m.margin && !m.binary && m.d.sd > 0) {
                m.seeds_needed = seeds_needed(m.d.sd, *m.margin);
                m.seeds_needed_family = seeds_needed(m.d.sd, *m.margin, comparison_alpha / (holm ? k : 1));
            }
            const double diff = m.binary ? static_cast<double>(m.variant_count.k) / m.variant_count.n -
                                               static_cast<double>(m.baseline_count.k) / m.baseline_count.n
                                         : m.d.mean;
            if (m.p_adjusted < comparison_alpha && diff != 0)
                m.result = (diff > 0) == m.higher_is_better ? verdict::ahead : verdict::behind;
            else if (m.margin && m.p_level_adjusted < comparison_alpha / 2)
                m.result = verdict::level;
            else
                m.result = verdict::not_resolved;
        }
    }
}

}  // namespace

comparisons_result compare_with_baselines(const experiment_spec& spec, const std::vector<summary_entry>& entries,
                                          const report_options& report) {
    comparisons_result res;
    res.name = report.name;
    const std::vector<std::string> keys = grouping_keys(spec, true);
    for (const key_values& b : report.baselines) res.baselines.push_back(key_values_text(b));
    res.match = report.match;
    res.among = among_text(report);
    res.correction = report.correction;
    res.selection_seeds = spec.selection_seeds;
    const std::vector<judged_variant> variants = judged_variants(spec, entries);
    const task_kind kind = entries.empty() ? task_kind::text : entries.front().point->config.task.kind;

    auto is_baseline_for = [&](const key_values& baseline, const judged_variant& b, const judged_variant& v) {
        for (const auto& [k, value] : baseline) {
            const std::size_t at = key_index(keys, k);
            if (at == keys.size() || b.values[at] != value) return false;
        }
        for (const std::string& k : report.match) {
            const std::size_t at = key_index(keys, k);
            if (at < keys.size() && b.values[at] != v.values[at]) return false;
        }
        return true;
    };
    bool some_run_diverged = false;
    for (const judged_variant& v : variants) {
        if (!is_among(report, keys, v)) continue;
        for (std::size_t bi = 0; bi < report.baselines.size(); ++bi) {
            const key_values& baseline = report.baselines[bi];
            std::vector<const judged_variant*> found;
            for (const judged_variant& b : variants)
                if (is_baseline_for(baseline, b, v)) found.push_back(&b);
            if (found.size() == 1 && found[0] == &v) continue;  // the baseline itself
            const std::string label = variant_label(keys, v.values);
            if (found.empty()) {
                res.notes.push_back(label + ": no variant matches the baseline " + res.baselines[bi]);
                continue;
            }
            if (found.size() > 1) {
                std::string which;
                for (const judged_variant* b : found) append_item(which, "; ", variant_label(keys, b->values));
                res.notes.push_back(label + ": " + std::to_string(found.size()) + " variants match the baseline " +
                                    res.baselines[bi] + " (" + which + "); name more keys in the baseline or in match");
                continue;
            }
            const judged_variant& b = *found[0];
            comparison c;
            c.variant = v.values;
            c.lr = v.lr;
            c.baseline_lr = b.lr;
            c.baseline = b.values;
            c.baseline_text = res.baselines[bi];
            // Each side's runs by seed, selection seeds left out; a seed whose run on either side failed
            // is left out of the continuous metrics.
            std::map<int, const run_result*> side_v, side_b;
            std::set<int> failed, v_seeds, b_seeds;
            std::vector<const summary_entry*> compared;
            int v_diverged = 0, b_diverged = 0, v_solved = 0, b_solved = 0;
            auto collect = [&](const std::vector<std::size_t>& members, std::map<int, const run_result*>& side,
                               std::set<int>& seeds, int& diverged, int& solved) {
                for (std::size_t i : members) {
                    const summary_entry& e = entries[i];
                    if (is_selection_seed(spec, e.point->config.seed)) continue;
                    compared.push_back(&e);
                    seeds.insert(e.point->config.seed);
                    if (e.result.status == run_status::ok) {
                        side[e.point->config.seed] = &e.result;
                        solved += solves_task(kind, e.result.final_test);
                    } else {
                        failed.insert(e.point->config.seed);
                        ++diverged;
                    }
                }
            };
            collect(v.members, side_v, v_seeds, v_diverged, v_solved);
            collect(b.members, side_b, b_seeds, b_diverged, b_solved);
            for (int s : v_seeds) c.unpaired_seeds += !b_seeds.count(s);
            for (int s : b_seeds) c.unpaired_seeds += !v_seeds.count(s);
            for (int s : failed) c.diverged_seeds += v_seeds.count(s) && b_seeds.count(s);
            some_run_diverged |= v_diverged + b_diverged > 0;
            for (const metric_def& m : metrics_of(kind)) c.metrics.push_back(compare_metric(m, side_v, side_b, failed));
            const int nv = static_cast<int>(v_seeds.size()), nb = static_cast<int>(b_seeds.size());
            if (kind != task_kind::text)
                c.metrics.push_back(compare_counts("solved", true, v_solved, nv, b_solved, nb));
            c.metrics.push_back(compare_counts("diverged", false, v_diverged, nv, b_diverged, nb));
            for (metric_comparison& m : c.metrics) {
                for (const auto& [metric, margin] : report.margins)
                    if (metric == m.metric) m.margin = margin;
                if (m.margin && m.d.has_interval()) {
                    std::vector<double> diffs;
                    for (std::size_t i = 0; i < m.d.variant_values.size(); ++i)
                        diffs.push_back(m.d.variant_values[i] - m.d.baseline_values[i]);
                    m.p_level = std::max(one_sided_p_above(diffs, -*m.margin), one_sided_p_below(diffs, *m.margin));
                }
            }
            judge_builds(c, compared);
            res.rows.push_back(std::move(c));
        }
    }
    // Divergence is a family only where some compared run diverged; elsewhere its rows say nothing.
    if (!some_run_diverged)
        for (comparison& c : res.rows)
            c.metrics.erase(std::remove_if(c.metrics.begin(), c.metrics.end(),
                                           [](const metric_comparison& m) { return m.metric == "diverged"; }),
                            c.metrics.end());
    judge_family(res);
    return res;
}

std::vector<comparisons_result> compare_all(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::vector<comparisons_result> out;
    for (const report_options& r : spec.reports) out.push_back(compare_with_baselines(spec, entries, r));
    return out;
}

std::vector<std::string> comparison_build_warnings(const std::vector<comparisons_result>& results) {
    std::vector<std::string> out;
    std::set<std::string> named;  // a run is named once
    int flagged = 0;
    std::vector<std::string> runs;
    for (const comparisons_result& r : results)
        for (const comparison& c : r.rows) {
            if (c.builds == "one") continue;
            ++flagged;
            for (const std::string& id : c.other_build_runs)
                if (named.insert(id).second) runs.push_back(id);
        }
    if (flagged == 0) return out;
    std::string list;
    for (std::size_t i = 0; i < runs.size() && i < 8; ++i) list += (i ? ", " : "") + runs[i];
    if (runs.size() > 8) list += " and " + std::to_string(runs.size() - 8) + " more (table.md lists them)";
    out.push_back(std::to_string(flagged) + " comparison" + (flagged == 1 ? " pairs runs" : "s pair runs") +
                  " of different builds or without a build stamp; " + std::to_string(runs.size()) +
                  " runs differ from their comparison's most common build: " + list +
                  " (attnlab run --rerun-other-builds retrains them with this build)");
    return out;
}

}  // namespace attnlab
