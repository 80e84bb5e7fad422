// Outputs and validation (docs/outputs.md): the validation set (a third seed
// stream, disjoint from train and test; the test sets of earlier runs are
// pinned), task.val_examples, the best step chosen on validation, empty cells
// in metrics.csv, every configuration key in summary.csv, curves.csv,
// per-seed values in table.md and the learning rate chosen per variant.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "attnlab/results/run_groups.hpp"
#include "attnlab/results/summary.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"
#include "support/quiet_log.hpp"

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using row = std::vector<std::int32_t>;

row row_of(const std::vector<std::int32_t>& v, int T, int i) {
    return row(v.begin() + static_cast<std::ptrdiff_t>(i) * T, v.begin() + static_cast<std::ptrdiff_t>(i + 1) * T);
}

std::set<row> rows_of(const batch& b) {
    std::set<row> out;
    for (int i = 0; i < b.B; ++i) out.insert(row_of(b.tokens, b.T, i));
    return out;
}

// One config per task kind with so many possible sequences that two equal
// ones across splits would mean shared streams, not chance.
std::vector<task_config> roomy_configs() {
    task_config copy;
    copy.kind = task_kind::copy;
    copy.vocab = 16;
    copy.min_len = copy.test_min_len = 6;
    copy.max_len = copy.test_max_len = 8;
    task_config lookup;
    lookup.kind = task_kind::lookup;
    lookup.vocab = 64;
    lookup.seq_len = 32;
    lookup.pairs = 4;
    task_config selective;
    selective.kind = task_kind::selective_copy;
    selective.vocab = 10;
    selective.n_tokens = 4;
    selective.noise_len = 12;
    task_config induction;
    induction.kind = task_kind::induction;
    induction.vocab = 16;
    induction.seq_len = 20;
    std::vector<task_config> all = {copy, lookup, selective, induction};
    for (auto& c : all) {
        c.test_examples = 64;
        c.val_examples = 48;
    }
    return all;
}

// Metrics with the given validation loss and test token accuracy.
eval_metrics metrics(double loss, double token_acc) { return {loss, token_acc, token_acc >= 0.99 ? 1.0 : 0.0}; }

// The index of column `name` in a CSV header.
std::size_t column(const std::vector<std::string>& header, const std::string& name) {
    const auto at = std::find(header.begin(), header.end(), name);
    INFO("column " << name);
    REQUIRE(at != header.end());
    return static_cast<std::size_t>(at - header.begin());
}

}  // namespace

TEST_CASE("tasks: the test sets and training streams of earlier runs are unchanged", "[tasks][outputs]") {
    // Values recorded before the validation set existed (seed 3).
    task_config lookup;
    lookup.kind = task_kind::lookup;
    lookup.vocab = 64;
    lookup.seq_len = 16;
    lookup.pairs = 2;
    lookup.test_examples = 8;
    auto tk = make_task(lookup, 3);
    const batch& ts = tk->test_set();
    REQUIRE(ts.B == 8);
    REQUIRE(ts.T == 16);
    CHECK(row_of(ts.tokens, 16, 0) == row{2, 57, 28, 36, 28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0});
    CHECK(row_of(ts.targets, 16, 0) == row{-1, -1, -1, -1, 36, -1, -1, -1, -1, -1, -1, -1, -1, -1, 57, -1});
    CHECK(row_of(ts.tokens, 16, 1) == row{6, 56, 31, 58, 31, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0});
    CHECK(row_of(ts.tokens, 16, 7) == row{12, 32, 16, 61, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 0});
    CHECK(row_of(ts.targets, 16, 7) == row{-1, -1, -1, -1, 61, -1, -1, -1, -1, -1, -1, -1, -1, -1, 32, -1});
    batch b;
    tk->next_train_batch(b, 4);
    CHECK(row_of(b.tokens, 16, 0) == row{30, 38, 15, 48, 0, 0, 15, 0, 30, 0, 0, 0, 0, 0, 0, 0});
    CHECK(row_of(b.tokens, 16, 3) == row{1, 58, 23, 57, 1, 0, 0, 0, 0, 0, 23, 0, 0, 0, 0, 0});

    task_config copy;
    copy.kind = task_kind::copy;
    copy.vocab = 8;
    copy.min_len = 2;
    copy.max_len = 4;
    copy.test_min_len = 2;
    copy.test_max_len = 6;
    copy.test_examples = 8;
    const auto copy_task = make_task(copy, 3);
    const batch& cs = copy_task->test_set();
    REQUIRE(cs.T == 12);
    CHECK(row_of(cs.tokens, 12, 0) == row{4, 2, 5, 9, 4, 2, 5, 0, 0, 0, 0, 0});
    CHECK(row_of(cs.targets, 12, 0) == row{-1, -1, -1, 4, 2, 5, -1, -1, -1, -1, -1, -1});
    CHECK(row_of(cs.tokens, 12, 1) == row{4, 8, 9, 4, 8, 0, 0, 0, 0, 0, 0, 0});
    CHECK(row_of(cs.tokens, 12, 7) == row{6, 6, 3, 1, 4, 9, 6, 6, 3, 1, 4, 0});
}

TEST_CASE("tasks: the validation set shares no sequence with the test set or the training stream", "[tasks][outputs]") {
    // Its own seed stream: not the training, test or parameter-init stream (3).
    CHECK(std::set<std::uint64_t>{stream_train, stream_test, 3, stream_val}.size() == 4);
    for (const task_config& c : roomy_configs()) {
        INFO("task " << to_string(c.kind));
        auto tk = make_task(c, 7);
        const batch& val = tk->val_set();
        REQUIRE(val.B == 48);
        REQUIRE(val.T == tk->train_seq_len());  // drawn like training examples
        const std::set<row> val_rows = rows_of(val);
        CHECK(val_rows.size() > 40);  // no repeated stream inside the set either

        std::set<row> test_rows = rows_of(tk->test_set());
        std::set<row> train_rows;
        batch b;
        for (int step = 0; step < 8; ++step) {
            tk->next_train_batch(b, 32);
            const auto r = rows_of(b);
            train_rows.insert(r.begin(), r.end());
        }
        int shared_test = 0, shared_train = 0;
        for (const row& r : val_rows) {
            shared_test += test_rows.count(r) > 0;
            shared_train += train_rows.count(r) > 0;
        }
        CHECK(shared_test == 0);
        CHECK(shared_train == 0);
        // Another seed gives another validation set.
        CHECK(make_task(c, 8)->val_set().tokens != val.tokens);
    }
}

TEST_CASE("tasks: val_examples reaches the generator and changes nothing else", "[tasks][outputs]") {
    for (const task_config& base : roomy_configs()) {
        INFO("task " << to_string(base.kind));
        task_config more = base;
        more.val_examples = 70;
        auto a = make_task(base, 5), b = make_task(more, 5);
        CHECK(a->val_set().B == 48);
        CHECK(b->val_set().B == 70);
        // The first 48 examples are the same stream.
        CHECK(std::equal(a->val_set().tokens.begin(), a->val_set().tokens.end(), b->val_set().tokens.begin()));
        CHECK(a->test_set().tokens == b->test_set().tokens);
        batch ba, bb;
        a->next_train_batch(ba, 16);
        b->next_train_batch(bb, 16);
        CHECK(ba.tokens == bb.tokens);
        // Unset (0): as many as the test set.
        task_config unset = base;
        unset.val_examples = 0;
        CHECK(make_task(unset, 5)->val_set().B == base.test_examples);
    }
}

TEST_CASE("spec: task.val_examples defaults to test_examples and is written to config.yaml", "[spec][outputs]") {
    const std::string head =
        "name: v\nbase:\n  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 24";
    const std::string tail =
        "}\n  model: {layers: 1, d_model: 8, heads: 2}\n  attention: {numerator: exp, denominator: softmax}\n"
        "  train: {steps: 10, lr: 1.0e-3, warmup: 0}\n";
    const run_config unset = parse_spec(head + tail, "v.yaml").base;
    CHECK(unset.task.val_examples == 24);
    CHECK_THAT(run_config_to_yaml(unset), Contains("  test_examples: 24\n  val_examples: 24\n"));
    const run_config set = parse_spec(head + ", val_examples: 40" + tail, "v.yaml").base;
    CHECK(set.task.val_examples == 40);
    CHECK(run_config_from_yaml(run_config_to_yaml(set), "config.yaml").task.val_examples == 40);
    CHECK_THROWS_AS(parse_spec(head + ", val_examples: 0" + tail, "v.yaml"), config_error);
    // The validation set's tokens and targets count in the memory estimate.
    run_config big = set;
    big.task.val_examples = 1040;
    CHECK(estimate_training_memory(big, 1).scratch - estimate_training_memory(set, 1).scratch ==
          1000u * 8 * 2 * sizeof(std::int32_t));
}

TEST_CASE("the best step is the one with the lowest validation loss, whatever the test set says", "[train][outputs]") {
    run_result r;
    record_evaluation(r, 0, metrics(3.0, 0.0), metrics(3.0, 0.05));
    CHECK(r.best_step == 0);
    record_evaluation(r, 10, metrics(1.0, 0.0), metrics(1.2, 0.50));  // lowest val loss
    record_evaluation(r, 20, metrics(1.5, 0.0), metrics(0.4, 0.95));  // best on test: not chosen
    record_evaluation(r, 30, metrics(NAN, 0.0), metrics(0.1, 0.99));  // NaN is never best
    record_evaluation(r, 40, metrics(1.0, 0.0), metrics(0.9, 0.70));  // a tie keeps the first
    CHECK(r.best_step == 10);
    CHECK(r.best_val.loss == 1.0);
    CHECK(r.best_test.token_acc == 0.50);
    CHECK(r.final_val.loss == 1.0);
    CHECK(r.final_test.token_acc == 0.70);

    // result.yaml keeps all four sets of metrics.
    r.steps = 40;
    temp_dir tmp;
    write_text(tmp / "result.yaml", run_result_to_yaml(r));
    const auto back = read_run_result((tmp / "result.yaml").string());
    REQUIRE(back);
    CHECK(back->best_step == 10);
    CHECK(back->best_val.loss == r.best_val.loss);
    CHECK(back->best_test.token_acc == r.best_test.token_acc);
    CHECK(back->final_val.loss == r.final_val.loss);
    CHECK(back->final_test.token_acc == r.final_test.token_acc);
}

TEST_CASE("learning-rate selection on constructed results: lowest mean final val loss per variant",
          "[summary][outputs]") {
    const experiment_spec spec = parse_spec(R"(name: lrs
base:
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2}
  model: {layers: 1, d_model: 8, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 10, lr: 1.0e-3, warmup: 0}
sweep:
  attention.numerator: [exp, linear]
  train.lr: [1.0e-3, 3.0e-3, 1.0e-2]
seeds: [0, 1]
)",
                                            "lrs.yaml");
    REQUIRE(spec.runs.size() == 12);  // numerator x lr x seed, seeds innermost
    // (final val loss, final test token acc) per run, in spec order.
    const std::vector<std::pair<double, double>> outcome = {
        // exp: 0.001 has the lowest mean val loss (1.1); 0.003 is better on test; 0.01 diverged once.
        {1.0, 0.281},
        {1.2, 0.30},
        {0.5, 0.97},
        {2.0, 0.99},
        {0.1, 1.0},
        {0.2, 1.0},
        // linear: 0.01 (mean 0.55) wins.
        {3.0, 0.1},
        {3.0, 0.1},
        {2.0, 0.2},
        {2.2, 0.2},
        {0.6, 0.96},
        {0.5, 0.28},
    };
    std::vector<summary_entry> entries;
    for (std::size_t i = 0; i < spec.runs.size(); ++i) {
        run_result r;
        r.final_val = metrics(outcome[i].first, 0.0);
        r.final_test = metrics(outcome[i].first, outcome[i].second);
        r.steps = 10;
        entries.push_back({&spec.runs[i], r});
    }
    entries[5].result.status = run_status::diverged;  // exp, lr 0.01, seed 1

    const lr_selection sel = select_learning_rates(spec, entries);
    REQUIRE(sel.swept);
    REQUIRE(sel.variants.size() == 2);
    CHECK(sel.variants[0].variant == std::vector<std::string>{"exp"});
    REQUIRE(sel.variants[0].rates.size() == 3);
    CHECK(sel.variants[0].rates[sel.variants[0].chosen].lr == "0.001");
    CHECK(sel.variants[0].rates[0].mean_final_val_loss == Approx(1.1));
    CHECK(sel.variants[0].rates[2].diverged == 1);
    CHECK(sel.variants[1].variant == std::vector<std::string>{"linear"});
    CHECK(sel.variants[1].rates[sel.variants[1].chosen].lr == "0.01");
    const std::vector<bool> expected = {true, true, false, false, false, false, false, false, false, false, true, true};
    CHECK(sel.selected == expected);

    // summary.csv marks the chosen rows.
    const auto lines = lines_of(summary_csv(spec, entries));
    REQUIRE(lines.size() == 13);
    const auto header = csv_fields(lines[0]);
    const std::size_t at = column(header, "lr_selected");
    for (std::size_t i = 0; i < entries.size(); ++i)
        CHECK(csv_fields(lines[i + 1])[at] == (expected[i] ? "true" : "false"));

    // table.md: the chosen rate and its test metrics, each seed's value, then every rate.
    const std::string table = summary_table_md(spec, entries);
    INFO(table);
    CHECK_THAT(table, Contains("## Each variant at its chosen learning rate"));
    CHECK_THAT(table, Contains("| exp | 0.001 | 2 | 0 | 0/2 |"));
    CHECK_THAT(table, Contains("| linear | 0.01 | 2 | 0 | 0/2 |"));
    CHECK_THAT(table, Contains("s0: 0.281, s1: 0.300"));  // the bimodal or not, every seed shows
    CHECK_THAT(table, Contains("s0: 1.000, s1: diverged"));
    CHECK_THAT(table, Contains("## Every learning rate"));
    CHECK_THAT(table, Contains("| exp | 0.003 | 2 | 0 | 1/2 |"));

    // Without a swept train.lr nothing is selected and the column stays empty.
    const experiment_spec one = parse_spec(R"(name: one
base:
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2}
  model: {layers: 1, d_model: 8, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 10, lr: 1.0e-3, warmup: 0}
seeds: [0, 1]
)",
                                           "one.yaml");
    std::vector<summary_entry> two = {{&one.runs[0], entries[0].result}, {&one.runs[1], entries[1].result}};
    CHECK_FALSE(select_learning_rates(one, two).swept);
    const auto one_lines = lines_of(summary_csv(one, two));
    CHECK(csv_fields(one_lines[1])[column(csv_fields(one_lines[0]), "lr_selected")].empty());
    CHECK_THAT(summary_table_md(one, two), !Contains("chosen learning rate") && Contains("s0: 0.281, s1: 0.300"));
}

TEST_CASE("solved: copy counts exact copies, lookup counts tokens, text never", "[summary][outputs]") {
    // A copy run with 0.995 of its tokens right but half its copies wrong has not learned to copy.
    CHECK_FALSE(solves_task(task_kind::copy, {0.1, 0.995, 0.5}));
    CHECK(solves_task(task_kind::copy, {0.1, 0.97, 0.9}));
    CHECK_FALSE(solves_task(task_kind::copy, {0.1, 0.999, 0.899}));
    CHECK(solves_task(task_kind::lookup, {0.1, 0.99, 0.0}));
    CHECK_FALSE(solves_task(task_kind::lookup, {0.1, 0.989, 1.0}));
    CHECK_FALSE(solves_task(task_kind::text, {0.1, 1.0, 1.0}));

    // table.md counts by that rule: 1 of 2 copy seeds solved (the token rule would say 2), and says so.
    const experiment_spec spec = parse_spec(R"(name: solved
base:
  task: {kind: copy, vocab: 4, max_len: 3, test_examples: 8}
  model: {layers: 1, d_model: 8, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 6, lr: 1.0e-3, warmup: 1}
seeds: [0, 1]
)",
                                            "solved.yaml");
    std::vector<summary_entry> entries;
    for (const eval_metrics& test : {eval_metrics{0.1, 0.995, 0.5}, eval_metrics{0.1, 0.995, 0.95}}) {
        run_result r;
        r.final_val = test;
        r.final_test = test;
        r.steps = 6;
        entries.push_back({&spec.runs[entries.size()], r});
    }
    const std::string table = summary_table_md(spec, entries);
    INFO(table);
    CHECK_THAT(table, Contains("| 2 | 0 | 1/2 |"));
    CHECK_THAT(table, Contains("copy: test sequence accuracy >= 0.9"));
}

TEST_CASE("a sweep of lookup and copy runs at two rates: metrics, summary, curves and table", "[summary][outputs]") {
    const experiment_spec spec = parse_spec(R"(name: outs
base:
  seed: 0
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 8, val_examples: 6}
  model: {layers: 1, d_model: 8, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 6, batch: 4, lr: 1.0e-3, warmup: 1, eval_every: 3}
sweep:
  - {train.lr: [1.0e-3, 3.0e-2]}
  - {task.kind: [copy], task.max_len: [3], train.lr: [1.0e-3, 3.0e-2]}
seeds: [0, 1]
)",
                                            "outs.yaml");
    REQUIRE(spec.runs.size() == 8);
    temp_dir tmp;
    quiet_log quiet;
    runner_options opt;
    opt.out_root = tmp.path().string();
    opt.threads = 1;
    const sweep_outcome out = run_sweep(spec, opt);
    REQUIRE(out.ok == 8);
    const fs::path dir = out.dir;

    // metrics.csv: val and test at step 0, then train, val and test per evaluation;
    // a cell that does not apply is empty, never 0.
    std::size_t metrics_rows = 0;
    for (const run_point& p : spec.runs) {
        const auto lines = lines_of(read_text(dir / "runs" / p.id / "metrics.csv"));
        REQUIRE(lines.size() == 1 + 2 + 3 * 2);
        const auto header = csv_fields(lines[0]);
        const std::size_t split = column(header, "split"), lr = column(header, "lr"),
                          grad = column(header, "grad_norm"), tps = column(header, "tokens_per_s");
        for (std::size_t i = 1; i < lines.size(); ++i) {
            INFO(p.id << ": " << lines[i]);
            const auto f = csv_fields(lines[i]);
            REQUIRE(f.size() == header.size());
            const bool train = f[split] == "train";
            CHECK(f[split] == (i % 3 == 1 ? "val" : i % 3 == 2 ? "test" : "train"));
            CHECK(f[lr].empty() == (f[0] == "0"));
            CHECK(f[grad].empty() == !train);
            CHECK(f[tps].empty() == !train);
            if (!f[lr].empty()) CHECK(std::stod(f[lr]) >= 0);  // a number (the cosine schedule ends at 0)
        }
        metrics_rows += lines.size() - 1;
    }

    // summary.csv: every configuration key for every run, resolved; empty where it does not apply.
    const auto sum = lines_of(read_text(dir / "summary.csv"));
    REQUIRE(sum.size() == 9);
    const auto header = csv_fields(sum[0]);
    for (const std::string& k : config_keys()) column(header, k);
    const std::size_t kind = column(header, "task.kind"), vocab = column(header, "task.vocab"),
                      seq_len = column(header, "task.seq_len"), max_len = column(header, "task.max_len"),
                      val_examples = column(header, "task.val_examples"), steps = column(header, "train.steps"),
                      val_loss = column(header, "final_val_loss"), selected = column(header, "lr_selected"),
                      lr = column(header, "train.lr"), best_val = column(header, "best_val_loss");
    column(header, "best_test_token_acc");
    column(header, "final_test_token_acc");
    std::map<std::string, std::map<std::string, double>> val_sum;  // kind -> lr -> sum of final val losses
    std::map<std::string, std::string> chosen;                     // kind -> lr marked selected
    for (std::size_t i = 1; i < sum.size(); ++i) {
        INFO(sum[i]);
        const auto f = csv_fields(sum[i]);
        REQUIRE(f.size() == header.size());
        CHECK(f[vocab] == "16");
        CHECK(f[val_examples] == "6");
        CHECK(f[steps] == "6");
        CHECK(f[seq_len].empty() == (f[kind] == "copy"));
        CHECK(f[max_len].empty() == (f[kind] == "lookup"));
        CHECK(std::stod(f[best_val]) <= std::stod(f[val_loss]));  // the best is the lowest val loss seen
        val_sum[f[kind]][f[lr]] += std::stod(f[val_loss]);
        if (f[selected] == "true") {
            CHECK((chosen[f[kind]].empty() || chosen[f[kind]] == f[lr]));
            chosen[f[kind]] = f[lr];
        } else {
            CHECK(f[selected] == "false");
        }
    }
    for (const auto& [k, by_lr] : val_sum) {
        INFO("variant " << k);
        const auto best = std::min_element(by_lr.begin(), by_lr.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        CHECK(chosen[k] == best->first);
    }

    // curves.csv: every metrics row of every run, led by run_id, seed and the swept keys.
    const auto curves = lines_of(read_text(dir / "curves.csv"));
    CHECK(curves.size() == 1 + metrics_rows);
    CHECK(curves[0] ==
          "run_id,seed,train.lr,task.kind,task.max_len,step,split,loss,token_acc,seq_acc,lr,grad_norm,"
          "tokens_per_s,elapsed_s");
    CHECK(curves[1].rfind("\"train.lr=0.001,seed=0\",0,0.001,lookup,,0,val,", 0) == 0);
    CHECK(curves.back().rfind("\"train.lr=0.03,task.kind=copy,task.max_len=3,seed=1\",1,0.03,copy,3,6,test,", 0) == 0);

    // table.md: each seed's value beside the mean.
    const std::string table = read_text(dir / "table.md");
    CHECK(count_of(table, "s0: ") == 2 * (2 + 4));  // token_acc and seq_acc, chosen and every-rate rows
    CHECK_THAT(table, Contains("s1: "));

    // summarize rewrites the same three files.
    const std::string summary_text = read_text(dir / "summary.csv"), curves_text = read_text(dir / "curves.csv"),
                      table_text = read_text(dir / "table.md");
    fs::remove(dir / "curves.csv");
    const summarize_outcome again = summarize_sweep_dir(dir.string());
    CHECK(again.found == 8);
    CHECK(read_text(dir / "curves.csv") == curves_text);
    CHECK(read_text(dir / "summary.csv") == summary_text);
    CHECK(read_text(dir / "table.md") == table_text);
}
