// Paired comparisons over seeds (results/comparisons.hpp), the edge-of-grid flag
// (results/run_groups.hpp), a spec's `report:` and a grid's own `seeds:`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attnlab/results/comparisons.hpp"
#include "attnlab/results/run_groups.hpp"
#include "attnlab/results/summary.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/util/build_info.hpp"
#include "attnlab/util/error.hpp"
#include "support/text_files.hpp"

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Expects parse_spec(text) to fail with a message starting with `start`.
void check_spec_error(const std::string& text, const std::string& start) {
    try {
        parse_spec(text, "spec.yaml");
        FAIL("no error, expected: " << start);
    } catch (const config_error& e) {
        CHECK_THAT(e.what(), StartsWith(start));
    }
}

const char* const base_text = R"(name: cmp
base:
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2}
  model: {layers: 1, d_model: 8, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 10, lr: 1.0e-3, warmup: 0}
)";

// A finished run whose final test loss and token accuracy are given (val loss = test loss).
run_result finished(double loss, double token_acc) {
    run_result r;
    r.final_val = {loss, token_acc, 0.0};
    r.final_test = {loss, token_acc, 0.0};
    r.steps = 10;
    return r;
}

// The rows of a CSV text as maps from column name to cell.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& csv) {
    const auto lines = lines_of(csv);
    REQUIRE(!lines.empty());
    const auto header = csv_fields(lines[0]);
    std::vector<std::map<std::string, std::string>> rows;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto f = csv_fields(lines[i]);
        REQUIRE(f.size() == header.size());
        std::map<std::string, std::string> row;
        for (std::size_t c = 0; c < f.size(); ++c) row[header[c]] = f[c];
        rows.push_back(row);
    }
    return rows;
}

}  // namespace

TEST_CASE("student t: the 0.975 quantile against a printed table, df 1..30", "[comparisons]") {
    // Two-sided 95 % critical values, as printed in statistics tables (3 decimals).
    const double printed[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    for (int df = 1; df <= 30; ++df) {
        INFO("df " << df);
        CHECK(std::abs(student_t_quantile(0.975, df) - printed[df - 1]) < 6e-4);
    }
    CHECK(std::abs(student_t_quantile(0.975, 120) - 1.980) < 6e-4);
    CHECK(std::abs(student_t_quantile(0.975, 1000) - 1.962) < 6e-4);
    // The mass itself: P(|T| <= 1) = 0.5 at df 1 (Cauchy), and 1 - 1/sqrt(3)... at df 2: t / sqrt(2 + t^2).
    CHECK(student_t_cdf(1.0, 1) - student_t_cdf(-1.0, 1) == Approx(0.5).epsilon(1e-12));
    CHECK(student_t_cdf(1.5, 2) - student_t_cdf(-1.5, 2) == Approx(1.5 / std::sqrt(2 + 2.25)).epsilon(1e-12));
}

TEST_CASE("paired differences: mean and 95 % interval worked by hand", "[comparisons]") {
    // d = 0.10, 0.12, 0.11, 0.13: mean 0.115, sd = sqrt(0.0005 / 3) = 0.0129099,
    // se = sd / 2 = 0.00645497, t(0.975, 3) = 3.182446, half width 0.0205426.
    const paired_difference d =
        paired_over_seeds({{0, 1.10}, {1, 1.12}, {2, 1.11}, {3, 1.13}}, {{0, 1.0}, {1, 1.0}, {2, 1.0}, {3, 1.0}});
    REQUIRE(d.n == 4);
    CHECK(d.mean == Approx(0.115).margin(1e-12));
    CHECK(d.low == Approx(0.115 - 0.0205426).margin(1e-6));
    CHECK(d.high == Approx(0.115 + 0.0205426).margin(1e-6));
    CHECK(d.resolved());

    // d = 0.5, 1.0, 1.5: mean 1, sd 0.5, half width 4.302653 * 0.5 / sqrt(3) = 1.242069: contains 0.
    const paired_difference wide = paired_over_seeds({{0, 1.0}, {1, 2.0}, {2, 4.0}}, {{0, 0.5}, {1, 1.0}, {2, 2.5}});
    CHECK(wide.mean == Approx(1.0));
    CHECK(wide.low == Approx(1.0 - 1.242069).margin(1e-6));
    CHECK(wide.high == Approx(1.0 + 1.242069).margin(1e-6));
    CHECK_FALSE(wide.resolved());

    // Seeds on one side only are not paired; one pair gives a mean and no interval.
    const paired_difference one = paired_over_seeds({{0, 2.0}, {5, 9.0}}, {{0, 1.5}, {7, 0.0}});
    CHECK(one.n == 1);
    CHECK(one.mean == Approx(0.5));
    CHECK(one.seeds == std::vector<int>{0});
    CHECK_FALSE(one.has_interval());
    CHECK_FALSE(one.resolved());
    CHECK(paired_over_seeds({{1, 1.0}}, {{2, 1.0}}).n == 0);
}

TEST_CASE("comparisons: paired by seed whatever the row order, missing seeds, one seed", "[comparisons]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  - {attention.numerator: [exp, linear], train.lr: [1.0e-3, 1.0e-2]}
  - {attention.numerator: [elu1], train.lr: [1.0e-3]}
  - {attention.numerator: [exp], train.lr: [1.0e-3], seeds: [2, 3]}
  - {attention.numerator: [linear], train.lr: [1.0e-3], seeds: [2]}
seeds: [0, 1]
report: {baseline: {attention.numerator: exp}}
)",
                                            "spec.yaml");
    REQUIRE(spec.reports.size() == 1);
    // Final test losses by (numerator, lr, seed): exp 1e-3 is chosen (val = test here), linear 1e-3 too.
    std::map<std::string, double> loss = {{"exp,0.001,0", 1.00},    {"exp,0.001,1", 1.10},    {"exp,0.001,2", 1.20},
                                          {"exp,0.001,3", 1.30},    {"exp,0.01,0", 2.00},     {"exp,0.01,1", 2.00},
                                          {"linear,0.001,0", 1.50}, {"linear,0.001,1", 1.70}, {"linear,0.001,2", 1.60},
                                          {"linear,0.01,0", 3.0},   {"linear,0.01,1", 3.0},   {"elu1,0.001,0", 1.40},
                                          {"elu1,0.001,1", 1.45}};
    std::vector<summary_entry> entries;
    for (const run_point& p : spec.runs) {
        const auto c = config_map(p.config);
        const std::string key =
            c.at("attention.numerator") + "," + c.at("train.lr") + "," + std::to_string(p.config.seed);
        REQUIRE(loss.count(key));
        entries.push_back({&p, finished(loss.at(key), 0.5)});
    }
    REQUIRE(entries.size() == loss.size());
    // Pairing is by seed: shuffled rows give the same result.
    std::mt19937 rng(7);
    std::shuffle(entries.begin(), entries.end(), rng);

    const comparisons_result res = compare_with_baselines(spec, entries, spec.reports[0]);
    REQUIRE(res.rows.size() == 2);  // linear and elu1; exp is the baseline
    const comparison* linear = nullptr;
    const comparison* elu1 = nullptr;
    for (const comparison& c : res.rows) (c.variant[0] == "linear" ? linear : elu1) = &c;
    REQUIRE(linear);
    REQUIRE(elu1);
    CHECK(linear->lr == "0.001");
    CHECK(linear->baseline_lr == "0.001");
    REQUIRE(linear->metrics[0].metric == "loss");
    // linear seeds 0, 1, 2 against exp seeds 0, 1, 2 (exp's seed 3 is unpaired): d = 0.5, 0.6, 0.4.
    const paired_difference& d = linear->metrics[0].d;
    CHECK(d.n == 3);
    CHECK(d.seeds == std::vector<int>{0, 1, 2});
    CHECK(d.mean == Approx(0.5));
    // sd 0.1, half width 4.302653 * 0.1 / sqrt(3) = 0.248414
    CHECK(d.low == Approx(0.5 - 0.248414).margin(1e-6));
    CHECK(linear->unpaired_seeds == 1);
    // elu1 has seeds 0, 1: d = 0.4, 0.35.
    CHECK(elu1->metrics[0].d.n == 2);
    CHECK(elu1->metrics[0].d.mean == Approx(0.375));
    CHECK(elu1->unpaired_seeds == 2);

    // comparisons.csv: one row per variant and metric, with the interval (no run diverged: no diverged rows).
    const auto rows = csv_rows(comparisons_csv(spec, {res}));
    REQUIRE(rows.size() == 8);  // 2 variants x (loss, token_acc, seq_acc, solved)
    CHECK(rows[0].at("metric") == "loss");
    CHECK(rows[0].at("n") == (rows[0].at("attention.numerator") == "linear" ? "3" : "2"));
    CHECK(rows[0].at("baseline") == "attention.numerator=exp");

    // table.md: the section, the interval cells, "not resolved" where 0 is inside.
    const std::string table = summary_table_md(spec, entries);
    INFO(table);
    CHECK_THAT(table, Contains("## Comparisons\n\nBaseline: attention.numerator=exp."));
    CHECK_THAT(table, Contains("| attention.numerator=linear | attention.numerator=exp | 0.001 / 0.001 | "
                               "+0.5000 [+0.2516, +0.7484] | 3 |"));
    // token_acc is equal on every seed: p = 1.
    CHECK_THAT(table, Contains("+0.0000 [+0.0000, +0.0000] | 3 | 1.000 | 1.000 | not resolved |"));
}

TEST_CASE("comparisons: one paired seed, a diverged seed, no baseline, two baselines", "[comparisons]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  attention.numerator: [exp, linear]
  attention.denominator: [softmax, norm]
seeds: [0, 1]
report:
  - {baseline: {attention.numerator: exp, attention.denominator: softmax}}
  - {baseline: {attention.numerator: exp}, match: [attention.denominator]}
  - {baseline: {attention.numerator: exp}}
)",
                                            "spec.yaml");
    REQUIRE(spec.reports.size() == 3);
    std::vector<summary_entry> entries;
    for (const run_point& p : spec.runs) entries.push_back({&p, finished(1.0 + 0.1 * p.config.seed, 0.5)});
    // linear/norm seed 1 diverged; exp/norm has only seed 0 (seed 1 left out of the entries).
    std::vector<summary_entry> kept;
    for (summary_entry& e : entries) {
        const auto c = config_map(e.point->config);
        const bool lin_norm = c.at("attention.numerator") == "linear" && c.at("attention.denominator") == "norm";
        const bool exp_norm = c.at("attention.numerator") == "exp" && c.at("attention.denominator") == "norm";
        if (lin_norm && e.point->config.seed == 1) e.result.status = run_status::diverged;
        if (exp_norm && e.point->config.seed == 1) continue;
        kept.push_back(e);
    }
    const std::vector<comparisons_result> all = compare_all(spec, kept);
    REQUIRE(all.size() == 3);
    // Against exp/softmax: exp/norm, linear/softmax, linear/norm.
    CHECK(all[0].rows.size() == 3);
    // With match: linear/softmax vs exp/softmax, linear/norm vs exp/norm (exp/norm is its own baseline).
    REQUIRE(all[1].rows.size() == 2);
    // linear/norm (seed 1 diverged) against exp/norm (seed 0 only): one pair, seed 1 unpaired.
    const comparison& lin_norm = all[1].rows[1];
    CHECK(lin_norm.baseline == std::vector<std::string>{"exp", "norm"});
    CHECK(lin_norm.metrics[0].d.n == 1);
    CHECK_FALSE(lin_norm.metrics[0].d.has_interval());
    CHECK(lin_norm.unpaired_seeds == 1);
    CHECK(lin_norm.diverged_seeds == 0);
    CHECK_THAT(comparisons_md(spec, all[1]), Contains("+0.0000 (one paired seed) | 1 | – | – | no test |"));
    // The same variant against exp/softmax (both seeds): seed 1 is left out as diverged.
    const comparison& lin_norm_vs_softmax = all[0].rows[2];
    CHECK(lin_norm_vs_softmax.variant == std::vector<std::string>{"linear", "norm"});
    CHECK(lin_norm_vs_softmax.metrics[0].d.n == 1);
    CHECK(lin_norm_vs_softmax.diverged_seeds == 1);
    CHECK_THAT(comparisons_md(spec, all[0]), Contains("left out of the paired metrics: 1 diverged, 0 unpaired seeds"));
    // The third names only the numerator: two exp variants match, so nothing is compared.
    CHECK(all[2].rows.empty());
    REQUIRE_FALSE(all[2].notes.empty());
    CHECK_THAT(all[2].notes[0], Contains("2 variants match the baseline"));
}

TEST_CASE("learning-rate choice: the edge of the grid is flagged, and added seeds do not move it", "[comparisons]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  - {attention.numerator: [exp, linear, elu1], train.lr: [1.0e-3, 3.0e-3, 1.0e-2]}
  - {attention.numerator: [exp], train.lr: [3.0e-3], seeds: [2, 3, 4]}
seeds: [0, 1]
)",
                                            "spec.yaml");
    // Val loss by numerator and lr (seeds 0, 1): exp best at 3e-3 (interior), linear at 1e-3
    // (lowest), elu1 at 1e-2 (highest). exp's added seeds 2-4 are poor: on all seeds 3e-3 would lose.
    std::map<std::string, double> loss = {{"exp,0.001", 1.2},    {"exp,0.003", 1.0},    {"exp,0.01", 1.1},
                                          {"linear,0.001", 1.0}, {"linear,0.003", 1.1}, {"linear,0.01", 1.2},
                                          {"elu1,0.001", 1.2},   {"elu1,0.003", 1.1},   {"elu1,0.01", 1.0}};
    std::vector<summary_entry> entries;
    for (const run_point& p : spec.runs) {
        const auto c = config_map(p.config);
        const double l = p.config.seed >= 2 ? 5.0 : loss.at(c.at("attention.numerator") + "," + c.at("train.lr"));
        entries.push_back({&p, finished(l, 0.995)});  // every run solves: only the edges are flagged
    }
    const lr_selection sel = select_learning_rates(spec, entries);
    REQUIRE(sel.variants.size() == 3);
    CHECK(sel.variants[0].rates[sel.variants[0].chosen].lr == "0.003");
    CHECK(sel.variants[0].selection_seeds == std::vector<int>{0, 1});
    CHECK(sel.variants[0].rates[sel.variants[0].chosen].members.size() == 5);  // reported on all 5 seeds
    CHECK(sel.variants[0].edge == lr_edge::interior);
    CHECK(sel.variants[1].edge == lr_edge::lowest);
    CHECK(sel.variants[2].edge == lr_edge::highest);
    const std::vector<std::string> warnings = learning_rate_warnings(spec, sel);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0] == "0.001 is the lowest rate tried for attention.numerator=linear: extend the grid");
    CHECK(warnings[1] == "0.01 is the highest rate tried for attention.numerator=elu1: extend the grid");
    const std::string table = summary_table_md(spec, entries);
    INFO(table);
    CHECK_THAT(table, Contains("| linear | 0.001 (lowest tried) |"));
    CHECK_THAT(table, Contains("| elu1 | 0.01 (highest tried) |"));
    CHECK_THAT(table, Contains("| exp | 0.003 | 5 |"));
}

TEST_CASE("learning-rate choice: a grid where no run solves the task on validation is flagged", "[comparisons]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  attention.numerator: [exp, linear]
  train.lr: [1.0e-3, 3.0e-3, 1.0e-2]
seeds: [0, 1]
)",
                                            "spec.yaml");
    // Both choose 3e-3 (interior). exp: one run, seed 1 at 1e-2, solves (0.995 on validation).
    // linear: every run fails on validation (best 0.4, seed 0 at 1e-2), though seed 1 at 1e-3
    // "solves" on test (the test set plays no part) and a diverged run reports 0.999.
    std::vector<summary_entry> entries;
    for (const run_point& p : spec.runs) {
        const auto c = config_map(p.config);
        const std::string lr = c.at("train.lr");
        run_result r = finished(lr == "0.003" ? 1.0 : 1.5, 0.3);
        if (c.at("attention.numerator") == "exp" && lr == "0.01" && p.config.seed == 1) r.final_val.token_acc = 0.995;
        if (c.at("attention.numerator") == "linear") {
            if (lr == "0.01" && p.config.seed == 0) r.final_val.token_acc = 0.4;
            if (lr == "0.001" && p.config.seed == 1) r.final_test.token_acc = 0.999;
            if (lr == "0.01" && p.config.seed == 1) {
                r.status = run_status::diverged;
                r.final_val.token_acc = 0.999;
            }
        }
        entries.push_back({&p, r});
    }
    const lr_selection sel = select_learning_rates(spec, entries);
    REQUIRE(sel.variants.size() == 2);
    CHECK(sel.variants[0].some_run_solves);
    CHECK_FALSE(sel.variants[1].some_run_solves);
    CHECK(sel.variants[1].best_val_accuracy == 0.4);
    const std::vector<std::string> warnings = learning_rate_warnings(spec, sel);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] ==
          "no rate tried for attention.numerator=linear solves the task on validation (best final validation token "
          "accuracy 0.4000, at 0.01): the chosen rate is the best of runs that failed");
    const std::string table = summary_table_md(spec, entries);
    INFO(table);
    CHECK_THAT(table, Contains("| linear | 0.003 (none solved) |"));
    CHECK_THAT(table, Contains("| exp | 0.003 |"));
    CHECK_THAT(table, Contains("A rate marked (none solved) is the best of a grid in which no run solved"));

    // Copy judges by sequence accuracy: token accuracy 0.999 with half the copies wrong does not solve.
    const experiment_spec copy = parse_spec(R"(name: c
base:
  task: {kind: copy, vocab: 8, min_len: 1, max_len: 4, test_examples: 16}
  model: {layers: 1, d_model: 8, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 10, lr: 1.0e-3, warmup: 0}
sweep:
  train.lr: [1.0e-3, 3.0e-3]
)",
                                            "copy.yaml");
    std::vector<summary_entry> copies;
    for (const run_point& p : copy.runs) {
        run_result r = finished(1.0, 0.999);
        r.final_val.seq_acc = p.config.train.lr > 2e-3 ? 0.5 : 0.25;
        copies.push_back({&p, r});
    }
    const std::vector<std::string> copy_warnings = learning_rate_warnings(copy, select_learning_rates(copy, copies));
    REQUIRE(copy_warnings.size() == 2);  // 1e-3 is the lowest rate tried, and nothing solved
    CHECK(copy_warnings[1] ==
          "no rate tried for the only variant solves the task on validation (best final validation sequence accuracy "
          "0.5000, at 0.003): the chosen rate is the best of runs that failed");
    copies[1].result.final_val.seq_acc = 0.95;  // one run copies 95 % of its sequences exactly: solved
    CHECK(learning_rate_warnings(copy, select_learning_rates(copy, copies)).size() == 1);
}

TEST_CASE("spec: a grid's own seeds, and report errors with file, line and key", "[comparisons][spec]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  - {attention.numerator: [exp, linear]}
  - {attention.numerator: [exp], seeds: [2, 3]}
seeds: [0, 1]
)",
                                            "spec.yaml");
    std::vector<std::string> ids;
    for (const run_point& p : spec.runs) ids.push_back(p.id);
    CHECK(ids == std::vector<std::string>{"attention.numerator=exp,seed=0", "attention.numerator=exp,seed=1",
                                          "attention.numerator=linear,seed=0", "attention.numerator=linear,seed=1",
                                          "attention.numerator=exp,seed=2", "attention.numerator=exp,seed=3"});

    const std::string sweep = std::string(base_text) + "sweep:\n  attention.numerator: [exp, linear]\n";
    check_spec_error(std::string(base_text) + "sweep:\n  - {attention.numerator: [exp], seeds: [1, 1]}\n",
                     "spec.yaml:8: sweep[0].seeds: duplicate seed 1");
    check_spec_error(std::string(base_text) + "sweep:\n  - {seeds: [1]}\n",
                     "spec.yaml:8: sweep[0]: a grid of seeds alone");
    check_spec_error(sweep + "report: {baseline: {attention.denominator: softmax}}\n",
                     "spec.yaml:9: report.baseline.attention.denominator: is not swept");
    check_spec_error(sweep + "report: {baseline: {train.lr: 0.01}}\n",
                     "spec.yaml:9: report.baseline.train.lr: cannot name");
    check_spec_error(sweep + "report: {baseline: {attention.numerator: expo}}\n",
                     "spec.yaml:9: report.baseline.attention.numerator:");
    check_spec_error(sweep + "report: {basline: {attention.numerator: exp}}\n",
                     "spec.yaml:9: report.basline: unknown key, did you mean 'baseline'?");
    check_spec_error(sweep + "report: {match: [attention.numerator]}\n", "spec.yaml:9: report.baselines: missing");
    check_spec_error(sweep + "report:\n  - {baseline: {attention.numerator: exp}, match: [attention.numerator]}\n",
                     "spec.yaml:10: report[0].match: attention.numerator is both in a baseline and in match");

    // summarize --baseline/--match: the same checks, naming the option; the report is added to the spec's.
    experiment_spec swept = parse_spec(sweep + "report: {baseline: {attention.numerator: linear}}\n", "spec.yaml");
    add_report_options(swept, {{"attention.numerator=exp"}, {}, {}, {}, "", {}});
    REQUIRE(swept.reports.size() == 2);
    REQUIRE(swept.reports[1].baselines.size() == 1);
    CHECK(swept.reports[1].baselines[0] == key_values{{"attention.numerator", "exp"}});
    CHECK(swept.reports[1].name == "summarize options");
    CHECK_THROWS_WITH(add_report_options(swept, {{"attention.order=2"}, {}, {}, {}, "", {}}),
                      StartsWith("--baseline: attention.order: is not swept"));
    CHECK_THROWS_WITH(add_report_options(swept, {{"attention.numerator=exp"}, {"attention.numerator"}, {}, {}, "", {}}),
                      StartsWith("--match: attention.numerator: is also given to --baseline"));
}

TEST_CASE("verdicts: Holm within the family, level inside a declared margin, counts with Fisher", "[comparisons]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  attention.numerator: [exp, linear, elu1, cosine]
seeds: [0, 1, 2, 3]
report:
  name: four
  baselines: [{attention.numerator: exp}]
  margin: {loss: 0.1}
)",
                                            "spec.yaml");
    REQUIRE(spec.reports.size() == 1);
    REQUIRE(spec.reports[0].margins.size() == 1);
    // Final test losses per seed; token accuracy 0.995 solves, 0.5 does not.
    const std::map<std::string, std::vector<double>> loss = {{"exp", {1.00, 1.10, 0.95, 1.05}},
                                                             {"linear", {1.50, 1.62, 1.44, 1.58}},
                                                             {"elu1", {1.01, 1.09, 0.97, 1.04}},
                                                             {"cosine", {1.2, 0.9, 1.3, 0.8}}};
    const std::map<std::string, std::vector<double>> acc = {{"exp", {0.995, 0.995, 0.995, 0.995}},
                                                            {"linear", {0.5, 0.5, 0.5, 0.5}},
                                                            {"elu1", {0.995, 0.995, 0.995, 0.995}},
                                                            {"cosine", {0.995, 0.5, 0.995, 0.5}}};
    std::vector<summary_entry> entries;
    for (const run_point& p : spec.runs) {
        const std::string n = config_map(p.config).at("attention.numerator");
        entries.push_back({&p, finished(loss.at(n)[p.config.seed], acc.at(n)[p.config.seed])});
    }
    const comparisons_result res = compare_with_baselines(spec, entries, spec.reports[0]);
    REQUIRE(res.rows.size() == 3);
    CHECK(res.name == "four");
    auto metric = [&](const std::string& numerator, const std::string& name) -> const metric_comparison& {
        for (const comparison& c : res.rows)
            if (c.variant[0] == numerator)
                for (const metric_comparison& m : c.metrics)
                    if (m.metric == name) return m;
        FAIL("no " << name << " for " << numerator);
        throw;
    };
    // References: scipy.stats.ttest_1samp(d, 0).pvalue; TOST = max of ttest_1samp(d, -0.1,
    // alternative='greater') and ttest_1samp(d, 0.1, alternative='less'); Holm by its definition over the 3.
    const metric_comparison& linear = metric("linear", "loss");
    CHECK(linear.p == Approx(1.2632452069744027e-05).epsilon(1e-8));
    CHECK(linear.p_adjusted == Approx(3.789735620923208e-05).epsilon(1e-8));
    CHECK(linear.result == verdict::behind);
    const metric_comparison& elu1 = metric("elu1", "loss");
    CHECK(elu1.p == Approx(0.7608203755145106).epsilon(1e-8));
    CHECK(elu1.p_adjusted == 1.0);
    CHECK(elu1.p_level == Approx(0.000491400948859723).epsilon(1e-8));
    CHECK(elu1.p_level_adjusted == Approx(0.0014742028465791692).epsilon(1e-8));
    CHECK(elu1.result == verdict::level);
    CHECK(elu1.correlation == Approx(0.995429293735804).epsilon(1e-8));  // scipy.stats.pearsonr
    CHECK(elu1.welch.p == Approx(0.9534721933154566).epsilon(1e-8));     // ttest_ind(equal_var=False)
    const metric_comparison& cosine = metric("cosine", "loss");
    CHECK(cosine.p_level_adjusted == Approx(0.647015180018903).epsilon(1e-8));
    CHECK(cosine.result == verdict::not_resolved);
    // Without a margin nothing is level: token accuracy has none (elu1's is equal to exp's on every seed).
    CHECK(metric("elu1", "token_acc").result == verdict::not_resolved);
    CHECK_FALSE(metric("elu1", "token_acc").margin);
    // Power: cosine's sd of differences is large; level at ±0.1 would take more seeds than it has.
    CHECK(cosine.seeds_needed > 4);
    CHECK(cosine.seeds_needed_family >= cosine.seeds_needed);

    // Solved: exp 4/4, linear 0/4 (Fisher p 0.0286; scipy.stats.fisher_exact([[0, 4], [4, 0]])), cosine
    // 2/4 (0.4286), elu1 4/4 (1). Holm over the 3: linear's 0.0857 does not resolve.
    const metric_comparison& solved = metric("linear", "solved");
    CHECK(solved.binary);
    CHECK(solved.variant_count.k == 0);
    CHECK(solved.baseline_count.k == 4);
    CHECK(solved.p == Approx(0.028571428571428567).epsilon(1e-9));
    CHECK(solved.p_adjusted == Approx(3 * 0.028571428571428567).epsilon(1e-9));
    CHECK(solved.result == verdict::not_resolved);
    CHECK(solved.smallest_p == Approx(0.028571428571428567).epsilon(1e-9));
    // scipy.stats.binomtest(2, 4).proportion_ci(method='exact')
    CHECK(metric("cosine", "solved").variant_count.interval.low == Approx(0.06758598648854298).epsilon(1e-9));
    CHECK(metric("cosine", "solved").variant_count.interval.high == Approx(0.932414013511457).epsilon(1e-9));
    // No run diverged: no divergence rows.
    for (const comparison& c : res.rows)
        for (const metric_comparison& m : c.metrics) CHECK(m.metric != "diverged");

    // The same family without correction: linear's solved count is resolved behind.
    experiment_spec uncorrected = spec;
    uncorrected.reports[0].correction = correction_kind::none;
    const comparisons_result raw = compare_with_baselines(uncorrected, entries, uncorrected.reports[0]);
    for (const comparison& c : raw.rows)
        for (const metric_comparison& m : c.metrics)
            if (c.variant[0] == "linear" && m.metric == "solved") CHECK(m.result == verdict::behind);

    // comparisons.csv records the margin, the correction, alpha and the verdicts.
    const auto rows = csv_rows(comparisons_csv(spec, {res}));
    bool seen_level = false;
    for (const auto& row : rows) {
        CHECK(row.at("correction") == "holm");
        CHECK(row.at("alpha") == "0.05");
        CHECK(row.at("report") == "four");
        if (row.at("attention.numerator") == "elu1" && row.at("metric") == "loss") {
            seen_level = true;
            CHECK(row.at("verdict") == "level");
            CHECK(row.at("margin") == "0.1");
            CHECK(row.at("family_size") == "3");
        }
    }
    CHECK(seen_level);
    const std::string md = comparisons_md(spec, res);
    INFO(md);
    CHECK_THAT(md, Contains("### loss (3 comparisons in the family, margin ±0.1)"));
    CHECK_THAT(md, Contains("### token_acc (3 comparisons in the family, no margin declared: nothing is level)"));
    CHECK_THAT(md, Contains("seeds cannot show level at ±0.1"));
}

TEST_CASE("verdicts: several baselines, among, selection seeds left out, builds named", "[comparisons]") {
    const experiment_spec spec = parse_spec(std::string(base_text) + R"(sweep:
  - {attention.numerator: [exp, linear, elu1], train.lr: [1.0e-3, 1.0e-2], seeds: [9]}
  - {attention.numerator: [exp, linear, elu1], train.lr: [1.0e-3]}
seeds: [0, 1, 2]
report:
  baselines: [{attention.numerator: exp}, {attention.numerator: elu1}]
  among: {attention.numerator: [linear]}
  select_on: [9]
)",
                                            "spec.yaml");
    CHECK(spec.selection_seeds == std::vector<int>{9});
    // Seed 9 alone chooses (1e-3's validation loss is below 1e-2's there); seeds 0-2 exist at 1e-3
    // only, so each variant is judged at 1e-3, on seeds 0, 1 and 2.
    std::vector<summary_entry> entries;
    for (const run_point& p : spec.runs) {
        const auto c = config_map(p.config);
        const std::string n = c.at("attention.numerator");
        double l = n == "linear" ? 1.5 : n == "elu1" ? 1.2 : 1.0;
        l += 0.01 * p.config.seed;
        if (c.at("train.lr") == "0.01") l = 2.0;
        if (p.config.seed == 9) l -= 0.5;  // a seed that would move every mean if it were compared
        run_result r = finished(l, 0.5);
        r.build = build_info{p.config.seed == 2 && n == "exp" ? "bbbbbbbbbbbb" : "aaaaaaaaaaaa", "Release", "avx2", 1};
        entries.push_back({&p, r});
    }
    const comparisons_result res = compare_with_baselines(spec, entries, spec.reports[0]);
    // Only linear is compared, with each of the two baselines.
    REQUIRE(res.rows.size() == 2);
    CHECK(res.rows[0].baseline_text == "attention.numerator=exp");
    CHECK(res.rows[1].baseline_text == "attention.numerator=elu1");
    for (const comparison& c : res.rows) {
        CHECK(c.variant[0] == "linear");
        CHECK(c.lr == "0.001");
        CHECK(c.metrics[0].d.seeds == std::vector<int>{0, 1, 2});  // seed 9 chose, and is not compared
    }
    CHECK(res.rows[0].metrics[0].d.mean == Approx(0.5));
    CHECK(res.rows[1].metrics[0].d.mean == Approx(0.3));
    CHECK(res.family_size.at("loss") == 2);  // both baselines in one family
    // exp's seed 2 comes from another build: the comparison with exp names it, the one with elu1 is clean.
    CHECK(res.rows[0].builds == "mixed");
    CHECK(res.rows[0].other_build_runs == std::vector<std::string>{"attention.numerator=exp,train.lr=0.001,seed=2"});
    CHECK(res.rows[1].builds == "one");
    const std::vector<std::string> warnings = comparison_build_warnings({res});
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Contains("1 comparison pairs runs of different builds"));
    CHECK_THAT(warnings[0], Contains("attention.numerator=exp,train.lr=0.001,seed=2"));
    // A compared run without a stamp makes both its comparisons "unstamped"; a selection seed's does not count.
    for (summary_entry& e : entries)
        if (e.point->config.seed == 9 || e.point->id == "attention.numerator=linear,train.lr=0.001,seed=0")
            e.result.build.reset();
    const comparisons_result unstamped = compare_with_baselines(spec, entries, spec.reports[0]);
    CHECK(unstamped.rows[0].builds == "unstamped");
    CHECK(unstamped.rows[1].builds == "unstamped");
    CHECK(unstamped.rows[1].other_build_runs ==
          std::vector<std::string>{"attention.numerator=linear,train.lr=0.001,seed=0"});

    // Report errors name file, line and key.
    const std::string sweep = std::string(base_text) + "sweep:\n  attention.numerator: [exp, linear]\n";
    check_spec_error(sweep + "report: {baselines: [{attention.numerator: exp}], margin: {los: 0.1}}\n",
                     "spec.yaml:9: report.margin.los: unknown metric, did you mean 'loss'?");
    check_spec_error(sweep + "report: {baselines: [{attention.numerator: exp}], margin: {loss: -1}}\n",
                     "spec.yaml:9: report.margin.loss: expected a number > 0");
    check_spec_error(sweep + "report: {baselines: [{attention.numerator: exp}], correction: bonferroni}\n",
                     "spec.yaml:9: report.correction: expected holm or none, got 'bonferroni'");
    check_spec_error(sweep + "report: {baselines: [{attention.numerator: exp}, {attention.numerator: exp}]}\n",
                     "spec.yaml:9: report.baselines[1]: the same baseline twice");
    check_spec_error(
        sweep + "report: {baseline: {attention.numerator: exp}, baselines: [{attention.numerator: exp}]}\n",
        "spec.yaml:9: report.baseline: give baseline (one) or baselines (a list), not both");
    check_spec_error(sweep +
                         "report:\n  - {baselines: [{attention.numerator: exp}], select_on: [1]}\n"
                         "  - {baselines: [{attention.numerator: linear}], select_on: [2]}\n",
                     "spec.yaml:11: report[1].select_on: differs from another report's select_on");
    check_spec_error(
        sweep + "report: {baselines: [{attention.numerator: exp}], among: {attention.numerator: [expo]}}\n",
        "spec.yaml:9: report.among.attention.numerator:");
}
