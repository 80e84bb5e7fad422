// Paired comparisons of variants against a baseline variant, over seeds
// (docs/outputs.md, "Comparisons").
//
// For each variant V at its chosen learning rate (run_groups.hpp; every run
// of V when train.lr is not swept) and its baseline B at B's own chosen rate,
// over the seeds s that finished in both: d_s = m(V, s) - m(B, s) for a final
// test metric m. Seed s of V and seed s of B see the same training stream and
// initialisation draw, so pairing by seed removes most of the seed-to-seed
// spread that an unpaired difference of means would carry. Reported: n, the
// mean of d and its 95 % Student-t interval mean ± t(0.975, n-1) sd/sqrt(n),
// sd with n - 1 in the denominator. An interval containing 0 is "not
// resolved"; with n < 2 there is no interval.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/results/summary.hpp"

namespace attnlab {

// P(|T| <= t) for Student's t with `df` >= 1 degrees of freedom, in closed
// form for integer df (Abramowitz & Stegun 26.7.3 and 26.7.4).
double student_t_central_mass(double t, int df);
// The 0.975 quantile of Student's t with `df` >= 1 degrees of freedom (12.706 at 1, 2.042 at 30).
double student_t_975(int df);

// The paired difference of one metric over seeds.
struct paired_difference {
    int n = 0;                 // paired seeds
    double mean = 0;           // mean of d_s
    double low = 0, high = 0;  // 95 % interval (n >= 2 only)
    std::vector<int> seeds;    // the paired seeds, ascending
    bool has_interval() const { return n >= 2; }
    bool resolved() const { return has_interval() && (low > 0 || high < 0); }
};
// `variant` and `baseline`: each seed's value (seeds in one map only are not paired).
paired_difference paired_over_seeds(const std::map<int, double>& variant, const std::map<int, double>& baseline);

// One variant against its baseline.
struct comparison {
    std::vector<std::string> variant;            // values of grouping_keys(spec, true)
    std::string lr, baseline_lr;                 // the chosen rates ("" when train.lr is not swept)
    std::vector<std::string> baseline;           // the baseline's values of the same keys
    std::vector<std::string> metrics;            // names, e.g. "loss", "bits_per_byte", "token_acc"
    std::vector<paired_difference> differences;  // one per metric
    int diverged_seeds = 0;                      // seeds left out because a run of either side did not finish ok
    int unpaired_seeds = 0;                      // seeds that only one side has
};

struct comparisons_result {
    std::string baseline_text;       // "attention.numerator=exp,attention.denominator=softmax"
    std::vector<std::string> match;  // keys a variant's baseline shares with it
    std::vector<comparison> rows;    // variants with exactly one baseline, in spec order
    std::vector<std::string> notes;  // variants left out and why (no or several baselines)
};

// Compares every variant (at its chosen rate) with its baseline: the variant
// whose values are `report.baseline`'s on those keys and the compared
// variant's on `report.match`'s keys.
comparisons_result compare_with_baseline(const experiment_spec& spec, const std::vector<summary_entry>& entries,
                                         const report_options& report);

// comparisons.csv of every report of the spec: one row per variant, baseline
// and metric (a pair that two reports share appears once; docs/outputs.md).
std::string comparisons_csv(const experiment_spec& spec, const std::vector<comparisons_result>& results);
// The table.md section of one report: one row per variant, "Δ [95 % CI] (n)" per metric.
std::string comparisons_md(const experiment_spec& spec, const comparisons_result& result);
// Every report of the spec (none when it names no baseline).
std::vector<comparisons_result> compare_all(const experiment_spec& spec, const std::vector<summary_entry>& entries);

}  // namespace attnlab
