// comparisons.csv and the table.md sections of the comparisons (comparisons.hpp; docs/outputs.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "attnlab/io/csv.hpp"
#include "attnlab/results/comparisons.hpp"
#include "attnlab/results/run_groups.hpp"

namespace attnlab {

namespace {

std::string joined(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const std::string& item : items) {
        if (!out.empty()) out += sep;
        out += item;
    }
    return out;
}

// comparisons.csv's numbers: 10 significant digits, enough to recompute any p-value's verdict.
std::string number(double v) {
    if (std::isnan(v)) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

std::string signed_cell(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.4f", v);
    return buf;
}

std::string p_cell(double p) {
    if (std::isnan(p)) return "–";
    char buf[32];
    std::snprintf(buf, sizeof buf, p < 0.001 ? "%.1e" : "%.3f", p);
    return buf;
}

std::string seeds_text(const std::vector<int>& seeds) {
    std::string out;
    for (int s : seeds) {
        if (!out.empty()) out += ' ';
        out += std::to_string(s);
    }
    return out;
}

std::string count_cell(const outcome_count& c) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%d/%d [%.2f, %.2f]", c.k, c.n, c.interval.low, c.interval.high);
    return buf;
}

std::string needed_cell(int n) { return n > 1000 ? "> 1000" : std::to_string(n); }

}  // namespace

std::string comparisons_csv(const experiment_spec& spec, const std::vector<comparisons_result>& results) {
    const std::vector<std::string> keys = grouping_keys(spec, true);
    std::vector<std::string> header = keys;
    const std::string tuned = lr_key, baseline_tuned = "baseline_" + tuned;
    for (const char* h : {tuned.c_str(),
                          "report",
                          "baseline",
                          baseline_tuned.c_str(),
                          "metric",
                          "test",
                          "n",
                          "mean_diff",
                          "ci_low",
                          "ci_high",
                          "p",
                          "correction",
                          "family_size",
                          "p_adjusted",
                          "alpha",
                          "margin",
                          "p_level",
                          "p_level_adjusted",
                          "verdict",
                          "sd_diff",
                          "correlation",
                          "welch_low",
                          "welch_high",
                          "welch_p",
                          "welch_df",
                          "seeds_needed",
                          "seeds_needed_family",
                          "variant_k",
                          "variant_n",
                          "variant_ci_low",
                          "variant_ci_high",
                          "baseline_k",
                          "baseline_n",
                          "baseline_ci_low",
                          "baseline_ci_high",
                          "smallest_p",
                          "seeds",
                          "diverged_seeds",
                          "unpaired_seeds",
                          "builds",
                          "other_build_runs"})
        header.push_back(h);
    std::string out = csv_line(header);
    for (const comparisons_result& result : results)
        for (const comparison& c : result.rows)
            for (const metric_comparison& m : c.metrics) {
                const paired_difference& d = m.d;
                const bool tested = m.has_test();
                std::vector<std::string> row = c.variant;
                auto add = [&](const std::string& cell) { row.push_back(cell); };
                add(c.lr);
                add(result.name);
                add(variant_label(keys, c.baseline));
                add(c.baseline_lr);
                add(m.metric);
                add(m.binary ? "fisher" : "paired_t");
                add(std::to_string(m.binary ? m.variant_count.n : d.n));
                if (m.binary) {
                    const bool both = m.variant_count.n > 0 && m.baseline_count.n > 0;
                    add(both ? number(static_cast<double>(m.variant_count.k) / m.variant_count.n -
                                      static_cast<double>(m.baseline_count.k) / m.baseline_count.n)
                             : "");
                    add("");
                    add("");
                } else {
                    add(d.n > 0 ? number(d.mean) : "");
                    add(d.has_interval() ? number(d.low) : "");
                    add(d.has_interval() ? number(d.high) : "");
                }
                add(tested ? number(m.p) : "");
                add(result.correction == correction_kind::holm ? "holm" : "none");
                const auto fs = result.family_size.find(m.metric);
                add(std::to_string(fs == result.family_size.end() ? 0 : fs->second));
                add(tested ? number(m.p_adjusted) : "");
                add(number(comparison_alpha));
                add(m.margin ? number(*m.margin) : "");
                add(m.margin && tested && !m.binary ? number(m.p_level) : "");
                add(m.margin && tested && !m.binary ? number(m.p_level_adjusted) : "");
                add(verdict_name(m.result));
                if (m.binary) {
                    for (int i = 0; i < 8; ++i) add("");
                } else {
                    add(d.has_interval() ? number(d.sd) : "");
                    add(d.n >= 3 ? number(m.correlation) : "");
                    const bool welch = d.has_interval() && !std::isnan(m.welch.p);
                    add(welch ? number(m.welch.low) : "");
                    add(welch ? number(m.welch.high) : "");
                    add(welch ? number(m.welch.p) : "");
                    add(welch ? number(m.welch.df) : "");
                    add(m.seeds_needed ? needed_cell(m.seeds_needed) : "");
                    add(m.seeds_needed_family ? needed_cell(m.seeds_needed_family) : "");
                }
                if (m.binary) {
                    for (const outcome_count* oc : {&m.variant_count, &m.baseline_count}) {
                        add(std::to_string(oc->k));
                        add(std::to_string(oc->n));
                        add(oc->n > 0 ? number(oc->interval.low) : "");
                        add(oc->n > 0 ? number(oc->interval.high) : "");
                    }
                    add(tested ? number(m.smallest_p) : "");
                } else {
                    for (int i = 0; i < 9; ++i) add("");
                }
                add(m.binary ? "" : seeds_text(d.seeds));
                add(std::to_string(c.diverged_seeds));
                add(std::to_string(c.unpaired_seeds));
                add(c.builds);
                add(joined(c.other_build_runs, " "));
                out += csv_line(row);
            }
    return out;
}

std::string comparisons_md(const experiment_spec& spec, const comparisons_result& result) {
    if (result.baselines.empty()) return "";
    const std::vector<std::string> keys = grouping_keys(spec, true);
    const bool holm = result.correction == correction_kind::holm;
    std::ostringstream s;
    s << "## Comparisons" << (result.name.empty() ? "" : ": " + result.name) << "\n\n";
    s << "Baseline" << (result.baselines.size() > 1 ? "s" : "") << ": ";
    for (std::size_t i = 0; i < result.baselines.size(); ++i) s << (i ? "; " : "") << result.baselines[i];
    if (!result.match.empty()) {
        s << ", with the compared variant's ";
        for (std::size_t i = 0; i < result.match.size(); ++i) s << (i ? ", " : "") << result.match[i];
    }
    s << ". Compared: " << (result.among.empty() ? "every other variant" : result.among) << ". ";
    if (!result.selection_seeds.empty())
        s << "Seeds " << seeds_text(result.selection_seeds) << " only chose learning rates and are left out. ";
    s << "Each row: variant − baseline, each side at its chosen rate, seed paired with seed; the 95 % interval is "
         "unadjusted; p is the paired t-test's (Fisher's exact test's for counts), "
      << (holm ? "Holm-adjusted within the family of this table" : "not adjusted (correction: none)")
      << "; the verdict uses the adjusted p at 0.05 (level: both one-sided tests against ±margin reject at 0.025, "
         "adjusted the same way). Losses in nats, bits_per_byte in bits; positive loss = the variant is worse.\n\n";
    if (result.rows.empty()) s << "No variant could be compared.\n\n";
    // One table per metric (loss is left out for text: bits_per_byte is the same test in other units).
    std::vector<std::string> metrics;
    bool text = false;
    for (const comparison& c : result.rows)
        for (const metric_comparison& m : c.metrics) {
            text |= m.metric == "bits_per_byte";
            if (std::find(metrics.begin(), metrics.end(), m.metric) == metrics.end()) metrics.push_back(m.metric);
        }
    std::vector<std::string> notes;
    for (const std::string& metric : metrics) {
        if (text && metric == "loss") continue;
        const auto fs = result.family_size.find(metric);
        const int k = fs == result.family_size.end() ? 0 : fs->second;
        std::optional<double> margin;
        bool binary = false;
        for (const comparison& c : result.rows)
            for (const metric_comparison& m : c.metrics)
                if (m.metric == metric) margin = m.margin, binary = m.binary;
        s << "### " << metric << " (" << k << " comparison" << (k == 1 ? "" : "s") << " in the family"
          << (margin ? ", margin ±" + number(*margin) : ", no margin declared: nothing is level") << ")\n\n";
        s << "| variant | baseline | train.lr | ";
        if (binary)
            s << "variant k/n [95 % CI] | baseline k/n [95 % CI] | p | p " << (holm ? "(Holm)" : "(unadjusted)")
              << " | verdict | smallest p possible |\n|---|---|---|---|---|---|---|---|---|\n";
        else
            s << "Δ [95 % CI] | n | p | p " << (holm ? "(Holm)" : "(unadjusted)")
              << " | verdict | Welch 95 % CI | r | seeds for level |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
        for (const comparison& c : result.rows)
            for (const metric_comparison& m : c.metrics) {
                if (m.metric != metric) continue;
                const std::string label = variant_label(keys, c.variant);
                s << "| " << label << " | " << c.baseline_text << " | " << (c.lr.empty() ? "–" : c.lr) << " / "
                  << (c.baseline_lr.empty() ? "–" : c.baseline_lr) << " | ";
                if (binary) {
                    s << count_cell(m.variant_count) << " | " << count_cell(m.baseline_count) << " | "
                      << (m.has_test() ? p_cell(m.p) : "–") << " | " << (m.has_test() ? p_cell(m.p_adjusted) : "–")
                      << " | " << verdict_name(m.result) << " | " << (m.has_test() ? p_cell(m.smallest_p) : "–")
                      << " |\n";
                    if (m.has_test() && m.smallest_p >= comparison_alpha)
                        notes.push_back(label + " vs " + c.baseline_text + ", " + metric + ": with " +
                                        std::to_string(m.variant_count.n) + " and " +
                                        std::to_string(m.baseline_count.n) +
                                        " runs no outcome can reach p < 0.05 (smallest possible " +
                                        p_cell(m.smallest_p) + "): this comparison cannot resolve");
                    continue;
                }
                const paired_difference& d = m.d;
                if (d.n == 0)
                    s << "no paired seed | 0 | – | – | " << verdict_name(m.result) << " | – | – | – |\n";
                else if (!d.has_interval())
                    s << signed_cell(d.mean) << " (one paired seed) | 1 | – | – | " << verdict_name(m.result)
                      << " | – | – | – |\n";
                else {
                    s << signed_cell(d.mean) << " [" << signed_cell(d.low) << ", " << signed_cell(d.high) << "] | "
                      << d.n << " | " << p_cell(m.p) << " | " << p_cell(m.p_adjusted) << " | " << verdict_name(m.result)
                      << " | ";
                    if (std::isnan(m.welch.p))
                        s << "–";
                    else
                        s << "[" << signed_cell(m.welch.low) << ", " << signed_cell(m.welch.high) << "]";
                    s << " | "
                      << (d.n >= 3 && !std::isnan(m.correlation) ? signed_cell(m.correlation).substr(0, 5) : "–")
                      << " | ";
                    if (m.seeds_needed == 0)
                        s << "–";
                    else
                        s << needed_cell(m.seeds_needed)
                          << (holm && k > 1 ? " (" + needed_cell(m.seeds_needed_family) + " with Holm)" : "");
                    s << " |\n";
                    if (m.seeds_needed && m.result != verdict::behind && m.result != verdict::ahead &&
                        m.result != verdict::level && d.n < (holm ? m.seeds_needed_family : m.seeds_needed))
                        notes.push_back(label + " vs " + c.baseline_text + ", " + metric + ": " + std::to_string(d.n) +
                                        " seeds cannot show level at ±" + number(*m.margin) + " at this spread (sd " +
                                        number(d.sd) + "); it would take " +
                                        needed_cell(holm ? m.seeds_needed_family : m.seeds_needed));
                }
            }
        s << "\n";
    }
    for (const comparison& c : result.rows) {
        const std::string label = variant_label(keys, c.variant);
        if (c.diverged_seeds || c.unpaired_seeds)
            notes.push_back(label + " vs " + c.baseline_text +
                            ": left out of the paired metrics: " + std::to_string(c.diverged_seeds) + " diverged, " +
                            std::to_string(c.unpaired_seeds) + " unpaired seed" + (c.unpaired_seeds == 1 ? "" : "s"));
        if (c.builds != "one") {
            notes.push_back(label + " vs " + c.baseline_text + ": runs of " +
                            (c.builds == "mixed" ? "different builds" : "no recorded build") +
                            "; apart from the comparison's most common build: " + joined(c.other_build_runs, ", "));
        }
    }
    for (const std::string& n : result.notes) notes.push_back(n);
    for (const std::string& n : notes) s << "- " << n << "\n";
    if (!notes.empty()) s << "\n";
    return s.str();
}

}  // namespace attnlab
