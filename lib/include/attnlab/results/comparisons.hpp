// Comparisons of variants against baseline variants, over seeds, with the
// verdicts of docs/outputs.md ("Comparisons and verdicts").
//
// A report (the spec's `report:`, or summarize's options) is one family. For
// each variant V among the report's variants, at its chosen learning rate
// (run_groups.hpp; every run of V when train.lr is not swept), and each
// baseline B of the report at B's own chosen rate:
//
// - Continuous metrics (final test loss, bits per byte, token and sequence
//   accuracy), paired over the seeds that finished ok in both: d_s = m(V, s) -
//   m(B, s). Seed s of V and of B see the same training stream and
//   initialisation draw. Reported: n, mean(d), its 95 % Student-t interval
//   mean ± t(0.975, n-1) sd/sqrt(n) and the two-sided paired t-test's p; beside
//   them the Welch (unpaired) interval over the same seeds and the
//   between-seed correlation of the two sides, so a reader sees whether the
//   pairing helped. The verdict always uses the paired test.
// - Binary outcomes over every run of each side: diverged (did not finish
//   ok) and, for synthetic tasks, solved (summary.hpp's solves_task): counts
//   k of n with the Clopper-Pearson 95 % interval, Fisher's exact two-sided
//   test, and the smallest p the two arms' sizes allow.
//
// Family and correction: the comparisons of one report on one metric (every
// variant against every baseline) form a family; Holm's step-down
// correction adjusts their p-values (report.correction: none turns it off).
// Verdict, at alpha 0.05 on the adjusted p: `behind` when V is worse (higher
// loss, bits or divergences; lower accuracy or solved), `ahead` when better;
// otherwise `level` when the report declares a margin m for the metric and
// both one-sided tests against -m and +m reject at alpha/2 after the same
// correction (unadjusted: the 95 % interval lies inside ±m); otherwise
// `not resolved`. Without a margin nothing is level.
//
// Power: with a margin, the seeds needed to call a comparison level when the
// true difference is 0, at its observed sd of differences: the smallest n
// with t(0.975, n-1) sd/sqrt(n) < m, and the same at alpha/k for a family of
// k (the strictest step of Holm).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/results/statistics.hpp"
#include "attnlab/results/summary.hpp"

namespace attnlab {

inline constexpr double comparison_alpha = 0.05;

// The paired difference of one metric over seeds.
struct paired_difference {
    int n = 0;                                            // paired seeds
    double mean = 0;                                      // mean of d_s
    double sd = 0;                                        // sd of d_s (n - 1 in the denominator; n >= 2)
    double low = 0, high = 0;                             // 95 % interval (n >= 2 only)
    double p = 1;                                         // two-sided paired t-test of mean 0 (n >= 2 only)
    std::vector<int> seeds;                               // the paired seeds, ascending
    std::vector<double> variant_values, baseline_values;  // per paired seed
    bool has_interval() const { return n >= 2; }
    bool resolved() const { return has_interval() && (low > 0 || high < 0); }
};
// `variant` and `baseline`: each seed's value (seeds in one map only are not paired).
paired_difference paired_over_seeds(const std::map<int, double>& variant, const std::map<int, double>& baseline);

enum class verdict { behind, ahead, level, not_resolved, no_test };
const char* verdict_name(verdict v);  // "behind", "ahead", "level", "not resolved", "no test"

// k of n runs with an outcome, and its Clopper-Pearson 95 % interval.
struct outcome_count {
    int k = 0, n = 0;
    proportion_interval interval{0, 1};
};

// One metric of one variant against one baseline.
struct metric_comparison {
    std::string metric;  // "loss", "bits_per_byte", "token_acc", "seq_acc", "solved", "diverged"
    bool binary = false;
    bool higher_is_better = false;                // accuracies and solved
    paired_difference d;                          // continuous metrics
    outcome_count variant_count, baseline_count;  // binary outcomes
    double smallest_p = 1;                        // binary: the smallest Fisher p the arms' sizes allow
    double p = 1, p_adjusted = 1;                 // paired t or Fisher, two-sided; adjusted within the family
    std::optional<double> margin;                 // declared for this metric
    double p_level = 1, p_level_adjusted = 1;     // equivalence (TOST): the larger one-sided p
    // Continuous metrics with a margin: the seeds needed for level at the observed sd (0: no spread to judge).
    int seeds_needed = 0, seeds_needed_family = 0;
    double correlation = 0;  // between the sides over the paired seeds (NaN when undefined)
    mean_interval welch;     // unpaired difference over the same seeds
    verdict result = verdict::no_test;
    bool has_test() const { return binary ? variant_count.n > 0 && baseline_count.n > 0 : d.has_interval(); }
};

// One variant against one baseline.
struct comparison {
    std::vector<std::string> variant;   // values of grouping_keys(spec, true)
    std::string lr, baseline_lr;        // the chosen rates ("" when train.lr is not swept)
    std::vector<std::string> baseline;  // the baseline's values of the same keys
    std::string baseline_text;          // the baseline as the report names it ("attention.numerator=exp")
    std::vector<metric_comparison> metrics;
    int diverged_seeds = 0;  // seeds left out of continuous metrics because a run of either side did not finish ok
    int unpaired_seeds = 0;  // seeds that only one side has
    // Builds of the compared runs: "one" (every run stamped by one build),
    // "mixed" or "unstamped" (some run carries no build stamp).
    std::string builds = "one";
    std::vector<std::string>
        other_build_runs;              // runs of a build other than the comparison's most common one, or unstamped
    std::vector<std::string> run_ids;  // every compared run of both sides (selection seeds excepted)
};

struct comparisons_result {
    std::string name;                    // the report's name ("" when it has none)
    std::vector<std::string> baselines;  // "attention.numerator=exp,attention.denominator=softmax", one per baseline
    std::vector<std::string> match;      // keys a variant's baseline shares with it
    std::string among;                   // "attention.numerator in {exp}" or ""
    correction_kind correction = correction_kind::holm;
    std::vector<comparison> rows;      // each compared variant against each baseline, in spec order
    std::vector<std::string> notes;    // variants left out and why (no or several baselines)
    std::vector<int> selection_seeds;  // left out of every comparison (report.select_on)
    // Family size per metric: the comparisons whose p entered the correction.
    std::map<std::string, int> family_size;
};

// Compares every variant among the report's (at its chosen rate) with each of
// its baselines: the variant whose values are the baseline's on those keys
// and the compared variant's on `report.match`'s keys; then adjusts the
// family's p-values and gives each comparison its verdict.
comparisons_result compare_with_baselines(const experiment_spec& spec, const std::vector<summary_entry>& entries,
                                          const report_options& report);

// comparisons.csv of every report of the spec: one row per report, variant,
// baseline and metric (docs/outputs.md).
std::string comparisons_csv(const experiment_spec& spec, const std::vector<comparisons_result>& results);
// The table.md section of one report: per metric, one row per comparison.
std::string comparisons_md(const experiment_spec& spec, const comparisons_result& result);
// Every report of the spec (none when it names no baseline).
std::vector<comparisons_result> compare_all(const experiment_spec& spec, const std::vector<summary_entry>& entries);
// What a reader of the comparisons should be warned about, one line each:
// comparisons whose sides come from different builds or from runs without a
// build stamp, naming the runs.
std::vector<std::string> comparison_build_warnings(const std::vector<comparisons_result>& results);

}  // namespace attnlab
