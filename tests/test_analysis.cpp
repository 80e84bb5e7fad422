// Analyses of trained models and their logs (lib/include/attnlab/analysis/):
// scoring an exp model with its numerator truncated (the kernel a --set
// variant gets on a hand-computed 3-token row, order 40 against exp on a
// trained model with bounded scores, the refusals, the sweep's CSV through
// the CLI), eval --precision double (the same scores as float on a trained
// model; order 160 back at exp in double where float's round-off is not, on
// a model whose scores reach 25), the per-position loss of a text run
// against its test loss, and loss spikes (a hand-made series,
// train.log_every: 1 in metrics.csv and summary.csv's empty cell for a run
// without per-step losses), and the rows train.log_every adds as a resumed
// run sees them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "attnlab/analysis/per_position.hpp"
#include "attnlab/analysis/probe.hpp"
#include "attnlab/analysis/truncation.hpp"
#include "attnlab/attention/variants.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/results/loss_spikes.hpp"
#include "attnlab/results/metrics_csv.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"
#include "support/test_data.hpp"
#include "support/text_files.hpp"
#include "support/tiny_spec.hpp"

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// An exp/softmax run config as a spec would resolve it.
run_config exp_config() {
    const std::string yaml =
        "seed: 0\n"
        "task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}\n"
        "model: {layers: 1, d_model: 16, heads: 2}\n"
        "attention: {numerator: exp, denominator: softmax}\n"
        "train: {steps: 10, batch: 4, lr: 1.0e-3, warmup: 2}\n";
    return run_config_from_yaml(yaml, "exp.yaml");
}

// Trains `spec` (named `name`) with `attnlab run --threads 1` into `dir` and
// returns the directory of its run `id`.
fs::path trained_run(const temp_dir& dir, const std::string& name, const std::string& spec, const std::string& id) {
    write_text(dir / (name + ".yaml"), spec);
    const cli_result r =
        run_cli({"run", (dir / (name + ".yaml")).string(), "--out", (dir / "out").string(), "--threads", "1"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    return dir / "out" / name / "runs" / id;
}

}  // namespace

TEST_CASE("truncation: --set gives the kernel of the truncated exp, checked on a 3-token row by hand",
          "[analysis][truncation]") {
    const run_config trained = exp_config();
    const double s[3] = {0.5, -1.0, 2.0};  // scaled scores of one query over 3 keys
    struct want_row {
        std::vector<std::string> set;
        double w[3];  // by hand
    };
    const want_row c = GENERATE(values<want_row>({
        {{"attention.numerator=taylor", "attention.order=2"}, {1.625, 0.5, 5.0}},  // 1 + s + s^2/2
        {{"attention.numerator=taylor", "attention.order=3"},                      // + s^3/6
         {1.625 + 0.125 / 6, 0.5 - 1.0 / 6, 5.0 + 8.0 / 6}},
        {{"attention.numerator=power", "attention.order=2"}, {0.125, 0.5, 2.0}},  // s^2/2
        {{"attention.numerator=linear"}, {0.5, -1.0, 2.0}},                       // s
        {{"attention.numerator=taylor", "attention.order=40"},                    // exp to double precision
         {std::exp(0.5), std::exp(-1.0), std::exp(2.0)}},
    }));
    INFO(c.set[0] << " " << (c.set.size() > 1 ? c.set[1] : ""));
    const run_config evaluated = evaluated_config(trained, c.set);
    CHECK(evaluated.model.d_model == trained.model.d_model);
    CHECK(evaluated.attention.denominator == denominator_kind::softmax);
    const auto kernel = make_score_kernel<double>(evaluated.attention);
    REQUIRE(kernel);
    double w[3];
    kernel->forward_row(w, s, 3);
    for (int j = 0; j < 3; ++j) CHECK(w[j] == Approx(c.w[j]).epsilon(1e-12));
    // softmax divides by their sum: the attention weights of the 3 tokens.
    const double z = c.w[0] + c.w[1] + c.w[2];
    for (int j = 0; j < 3; ++j) CHECK(w[j] / (w[0] + w[1] + w[2]) == Approx(c.w[j] / z).epsilon(1e-12));
    CHECK(variant_label(evaluated.attention) != variant_label(trained.attention));
}

TEST_CASE("truncation: eval refuses model keys and variants whose parameters differ, with the reason",
          "[analysis][truncation]") {
    const run_config trained = exp_config();
    CHECK_THROWS_MATCHES(evaluated_config(trained, {"model.d_model=32"}), config_error,
                         Catch::Matchers::Predicate<config_error>([](const config_error& e) {
                             const std::string m = e.what();
                             return m.find("--set: model.d_model: eval cannot change it") != std::string::npos &&
                                    m.find("would change the trained model") != std::string::npos;
                         }));
    // rmsnorm has a gain per head size: the checkpoint has no such tensor.
    CHECK_THROWS_WITH(evaluated_config(trained, {"attention.denominator=rmsnorm"}),
                      Contains("trained as exp/softmax; exp/rmsnorm has other parameters") && Contains("out_norm") &&
                          Contains("is in the evaluated model only"));
    CHECK_THROWS_WITH(evaluated_config(trained, {"attention.denominator=layernorm"}), Contains("has other parameters"));
    // A denominator without parameters fits the checkpoint.
    CHECK(evaluated_config(trained, {"attention.denominator=norm"}).attention.denominator == denominator_kind::norm);
    // Orders beyond training's range up to max_eval_order; the loader's own checks stand.
    CHECK_THROWS_WITH(evaluated_config(trained, {"attention.numerator=taylor", "attention.order=161"}),
                      Contains("--set: attention.order: expected an integer in [1, 160], got 161"));
    CHECK_THROWS_AS(evaluated_config(trained, {"attention.numerator=taylor"}), config_error);
    CHECK_THROWS_AS(evaluated_config(trained, {"attention.numerator=softmaxx"}), config_error);
}

TEST_CASE("truncation: the order list of --truncate", "[analysis][truncation]") {
    CHECK(parse_order_list("1..4,8,16", "--truncate") == std::vector<int>{1, 2, 3, 4, 8, 16});
    CHECK(parse_order_list("40", "--truncate") == std::vector<int>{40});
    CHECK_THROWS_WITH(parse_order_list("1..4,3", "--truncate"), Contains("'3' repeats or goes back"));
    CHECK_THROWS_WITH(parse_order_list("0..3", "--truncate"), Contains("'0..3' is out of range"));
    CHECK_THROWS_WITH(parse_order_list("4..2", "--truncate"), Contains("empty range"));
    CHECK_THROWS_WITH(parse_order_list("1,,2", "--truncate"), Contains("'' is not an order"));
}

TEST_CASE("truncation: on a trained exp model with bounded scores, order 40 matches exp within 1e-5",
          "[analysis][truncation][cli]") {
    temp_dir dir;
    const fs::path run = trained_run(dir, "trunc", tiny_lookup_spec("trunc", 300, 100, ""), "seed=0");
    const run_config trained = read_run_dir_config(run.string());
    // Bounded scores: the series of order 40 has converged wherever |s| < ~10.
    probe_options po;
    po.max_order = 4;
    const probe_result p = probe_run_dir(run.string(), po);
    for (const probe_head& h : p.heads) REQUIRE(h.max_abs_score < 8.0);

    const auto rows = truncation_sweep(run.string(), trained, trained, numerator_kind::taylor, {1, 2, 40});
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].attention.numerator == numerator_kind::exp);
    CHECK(rows[0].m.loss == evaluate_run_dir(run.string()).loss);
    CHECK(std::abs(rows[3].m.loss - rows[0].m.loss) < 1e-5);
    // The truncation is applied: low orders score differently.
    CHECK(std::abs(rows[1].m.loss - rows[0].m.loss) > 1e-4);

    // Through the CLI: the variant named beside the trained one, and the sweep's CSV.
    const cli_result one = run_cli(
        {"eval", run.string(), "--threads", "1", "--set", "attention.numerator=taylor", "--set", "attention.order=40"});
    INFO(one.err);
    REQUIRE(one.code == 0);
    CHECK_THAT(one.out, Contains("(evaluated as taylor 40/softmax, trained as exp/softmax)"));
    const cli_result sweep =
        run_cli({"eval", run.string(), "--threads", "1", "--truncate", "1..2,40", "--out", (dir / "t.csv").string()});
    INFO(sweep.err);
    REQUIRE(sweep.code == 0);
    const auto lines = lines_of(read_text(dir / "t.csv"));
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] == "trained,evaluated,numerator,order,test_loss,bits_per_byte,token_acc,seq_acc,precision");
    CHECK_THAT(lines[1], Contains("exp/softmax,exp/softmax,exp,,"));
    CHECK_THAT(lines[4], Contains("exp/softmax,taylor 40/softmax,taylor,40," + format_number(rows[3].m.loss)));
    CHECK_THAT(lines[4], EndsWith(",float"));
    const cli_result refused = run_cli({"eval", run.string(), "--set", "model.d_model=32"});
    CHECK(refused.code == 2);
    CHECK_THAT(refused.err, Contains("model.d_model"));
}

TEST_CASE("eval in double: a trained exp model scores as in float to 1e-5, in every path",
          "[analysis][precision][cli]") {
    temp_dir dir;
    const fs::path run = trained_run(dir, "wide", tiny_lookup_spec("wide", 300, 100, ""), "seed=0");
    const run_config cfg = read_run_dir_config(run.string());
    const auto parallel = attention_form::parallel;
    const auto symmetric = state_layout::symmetric;
    const eval_metrics f = evaluate_run_dir<float>(run.string(), cfg, cfg, parallel, symmetric);
    const eval_metrics d = evaluate_run_dir<double>(run.string(), cfg, cfg, parallel, symmetric);
    CHECK(f.loss == evaluate_run_dir(run.string()).loss);  // float is the default
    CHECK(d.loss == Approx(f.loss).epsilon(1e-5));
    CHECK(d.loss != f.loss);  // computed in double, not float converted
    // The recurrent form (a key/value cache for exp) agrees in double far below float's round-off.
    CHECK(evaluate_run_dir<double>(run.string(), cfg, cfg, attention_form::recurrent, symmetric).loss ==
          Approx(d.loss).epsilon(1e-12));
    // Per position: the count-weighted mean is the double test loss.
    long count = 0;
    double sum = 0;
    for (const position_loss& p : per_position_run_dir<double>(run.string(), cfg, cfg, parallel, symmetric)) {
        count += p.count;
        sum += p.loss_sum;
    }
    CHECK(sum / static_cast<double>(count) == Approx(d.loss).epsilon(1e-12));
    // The sweep's rows in double, the first the model as trained.
    const auto rows = truncation_sweep<double>(run.string(), cfg, cfg, numerator_kind::taylor, {40});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].m.loss == d.loss);
    CHECK(rows[0].precision == eval_precision::float64);
    CHECK(std::abs(rows[1].m.loss - d.loss) < 1e-5);  // bounded scores: order 40 is exp

    // Through the CLI: the line says so, and the per-position CSV records it.
    const cli_result r = run_cli(
        {"eval", run.string(), "--threads", "1", "--precision", "double", "--per-position", (dir / "pp.csv").string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("test loss " + format_number(d.loss) + " ") && Contains("(evaluated in double)"));
    CHECK_THAT(lines_of(read_text(dir / "pp.csv"))[1], EndsWith(",exp/softmax,exp/softmax,double"));
    const cli_result as = run_cli({"eval", run.string(), "--threads", "1", "--precision", "double", "--set",
                                   "attention.numerator=taylor", "--set", "attention.order=40"});
    INFO(as.err);
    REQUIRE(as.code == 0);
    CHECK_THAT(as.out, Contains("(evaluated as taylor 40/softmax in double, trained as exp/softmax)"));
    const cli_result plain = run_cli({"eval", run.string(), "--threads", "1", "--precision", "float"});
    REQUIRE(plain.code == 0);
    CHECK(plain.out == "test loss " + format_number(f.loss) + " token_acc " + format_number(f.token_acc) + " seq_acc " +
                           format_number(f.seq_acc) + "\n");
}

TEST_CASE("eval in double: where float round-off swamps a high Taylor order, double comes back to exp",
          "[analysis][precision][truncation][cli]") {
    temp_dir dir;
    const fs::path run = trained_run(dir, "big", tiny_lookup_spec("big", 300, 100, ""), "seed=0");
    const run_config cfg = read_run_dir_config(run.string());
    probe_options po;
    po.max_order = 4;
    const auto max_abs_score = [&] {
        double m = 0;
        for (const probe_head& h : probe_run_dir(run.string(), po).heads) m = std::max(m, h.max_abs_score);
        return m;
    };
    // Every score scaled to reach |s| = 25 (the query weights scaled, the
    // checkpoint saved again). At s = -25 the order-160 polynomial sums terms
    // up to ~e^25 / 12 = 6e9: float's round-off (~400) is far above
    // exp(-25) = 1.4e-11, and above a row's e^s_max unless s_max > ~6; double's
    // (~1e-6) matters only in rows whose largest score is below about -14.
    const double scale = 25.0 / max_abs_score();
    {
        transformer<float> model = load_run_model(run.string(), cfg, cfg);
        for (const param_tensor& t : model.layout().tensors())
            if (t.name.find("attn.q.weight") != std::string::npos)
                for (std::size_t i = t.offset; i < t.offset + t.size; ++i)
                    model.params[i] = static_cast<float>(model.params[i] * scale);
        checkpoint_save((run / checkpoint_filename).string(), model);
    }
    REQUIRE(max_abs_score() == Approx(25.0).epsilon(1e-3));

    const auto f = truncation_sweep<float>(run.string(), cfg, cfg, numerator_kind::taylor, {40, 160});
    const auto d = truncation_sweep<double>(run.string(), cfg, cfg, numerator_kind::taylor, {40, 160});
    REQUIRE(f.size() == 3);
    REQUIRE(d.size() == 3);
    const double exp_loss = d[0].m.loss;
    CHECK(f[0].m.loss == Approx(exp_loss).epsilon(1e-5));  // exp itself: the same in both
    // Order 40 is too low for |s| = 25 in either precision (the series needs more orders) ...
    CHECK(std::abs(d[1].m.loss - exp_loss) > 1e-2);
    CHECK(f[1].m.loss == Approx(d[1].m.loss).epsilon(1e-4));
    // ... order 160 has converged: double comes back to exp, float's round-off does not.
    INFO("float " << f[2].m.loss << ", double " << d[2].m.loss << ", exp " << exp_loss);
    CHECK(std::abs(d[2].m.loss - exp_loss) < 1e-6);
    CHECK(std::abs(f[2].m.loss - exp_loss) > 1e-2);

    // Through the CLI: the precision column says which.
    for (const std::string precision : {"float", "double"}) {
        const std::string out = (dir / (precision + ".csv")).string();
        const cli_result r = run_cli(
            {"eval", run.string(), "--threads", "1", "--truncate", "160", "--precision", precision, "--out", out});
        INFO(r.err);
        REQUIRE(r.code == 0);
        const auto lines = lines_of(read_text(out));
        REQUIRE(lines.size() == 3);
        CHECK(lines[0] == "trained,evaluated,numerator,order,test_loss,bits_per_byte,token_acc,seq_acc,precision");
        const auto& row = precision == "float" ? f[2] : d[2];
        CHECK_THAT(lines[2], StartsWith("exp/softmax,taylor 160/softmax,taylor,160," + format_number(row.m.loss)) &&
                                 EndsWith("," + precision));
        CHECK_THAT(r.out, Contains(precision == "float" ? "taylor 160/softmax: test loss"
                                                        : "taylor 160/softmax in double: test loss"));
    }
}

TEST_CASE("per-position loss: on a text run, the count-weighted mean is the test loss", "[analysis][cli]") {
    temp_dir dir;
    const std::string spec = "name: pp\nbase:\n  seed: 0\n  task: {kind: text, path: " + text_fixture +
                             ", seq_len: 16, test_examples: 8}\n"
                             "  model: {layers: 1, d_model: 16, heads: 2}\n"
                             "  attention: {numerator: exp, denominator: softmax}\n"
                             "  train: {steps: 20, batch: 4, lr: 1.0e-3, warmup: 1, eval_every: 10}\n";
    const fs::path run = trained_run(dir, "pp", spec, "seed=0");
    const run_config cfg = read_run_dir_config(run.string());
    const auto rows = per_position_run_dir(run.string(), cfg, cfg, attention_form::parallel, state_layout::symmetric);
    REQUIRE(rows.size() == 16);
    long count = 0;
    double weighted = 0;
    for (const position_loss& p : rows) {
        CHECK(p.count == 8);  // text: every position of every window answers
        count += p.count;
        weighted += p.count * (p.loss_sum / static_cast<double>(p.count));
    }
    const double test_loss = evaluate_run_dir(run.string()).loss;
    CHECK(weighted / static_cast<double>(count) == Approx(test_loss).epsilon(1e-12));
    // The losses differ by position (the first byte has no context).
    CHECK(rows[0].loss_sum != rows[15].loss_sum);

    const cli_result r = run_cli({"eval", run.string(), "--threads", "1", "--per-position", (dir / "pp.csv").string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto lines = lines_of(read_text(dir / "pp.csv"));
    REQUIRE(lines.size() == 17);
    CHECK(lines[0] == "position,loss,bits_per_byte,count,trained,evaluated,precision");
    CHECK_THAT(lines[1], Contains("0," + format_number(rows[0].loss_sum / 8) + ","));
    CHECK_THAT(lines[1], Contains(",8,exp/softmax,exp/softmax,float"));
}

TEST_CASE("per-position loss beyond the trained length: --set task.seq_len, refused for learned positions",
          "[analysis][cli]") {
    temp_dir dir;
    auto spec = [](const std::string& name, const std::string& position) {
        return "name: " + name + "\nbase:\n  seed: 0\n  task: {kind: text, path: " + text_fixture +
               ", seq_len: 16, test_examples: 8}\n"
               "  model: {layers: 1, d_model: 16, heads: 2, position: " +
               position +
               "}\n"
               "  attention: {numerator: exp, denominator: softmax}\n"
               "  train: {steps: 20, batch: 4, lr: 1.0e-3, warmup: 1, eval_every: 10}\n";
    };
    const fs::path rope = trained_run(dir, "ext", spec("ext", "rope"), "seed=0");
    const cli_result r = run_cli({"eval", rope.string(), "--threads", "1", "--set", "task.seq_len=48", "--per-position",
                                  (dir / "ext.csv").string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto lines = lines_of(read_text(dir / "ext.csv"));
    REQUIRE(lines.size() == 1 + 48);  // positions 0..47: three times the 16 it was trained on
    CHECK_THAT(lines[48], StartsWith("47,"));
    // Windows of the trained length score as eval without --set does.
    const cli_result same = run_cli({"eval", rope.string(), "--threads", "1", "--set", "task.seq_len=16"});
    CHECK(same.out == run_cli({"eval", rope.string(), "--threads", "1"}).out);
    // A learned position table has 16 rows: a longer window has no position to look up.
    const fs::path learned = trained_run(dir, "lrn", spec("lrn", "learned"), "seed=0");
    const cli_result refused = run_cli({"eval", learned.string(), "--set", "task.seq_len=48"});
    CHECK(refused.code == 2);
    CHECK_THAT(refused.err, Contains("other parameters than the run's checkpoint") && Contains("pos.weight") &&
                                Contains("learned positions"));
}

TEST_CASE("per-position loss: a synthetic task counts its answer positions only", "[analysis][cli]") {
    temp_dir dir;
    const fs::path run = trained_run(dir, "ppl", tiny_lookup_spec("ppl", 4, 2, ""), "seed=0");
    const run_config cfg = read_run_dir_config(run.string());
    const auto rows = per_position_run_dir(run.string(), cfg, cfg, attention_form::parallel, state_layout::symmetric);
    // lookup: the query half of the 8 tokens answers, the key-value half does not.
    long answers = 0;
    for (const position_loss& p : rows) answers += p.count;
    CHECK(answers > 0);
    CHECK(answers < 16L * 8);
    CHECK(rows[0].count == 0);
}

TEST_CASE("loss spikes: a hand-made series", "[analysis][spikes]") {
    std::vector<double> losses(70, 1.0);
    losses[10] = 5.0;  // in the first 50 steps: not judged
    losses[55] = 1.6;  // 1.6 > 1.5 * 1: a spike
    losses[56] = 1.5;  // not above 1.5 times the median: none
    losses[60] = 2.0;  // a spike
    losses[61] = std::nan("");
    CHECK(loss_spikes(losses) == std::vector<std::size_t>{55, 60});
    // An even window: the median is the mean of the two middle values.
    std::vector<double> alt;
    for (int i = 0; i < 50; ++i) alt.push_back(i % 2 ? 2.0 : 1.0);  // median 1.5: threshold 2.25
    alt.push_back(2.2);
    alt.push_back(2.3);  // its window holds 2.2 instead of the first 1.0: median 2.0, threshold 3
    alt.push_back(2.26);
    CHECK(loss_spikes(alt).empty());
    alt[51] = 3.1;
    CHECK(loss_spikes(alt) == std::vector<std::size_t>{51});
    // A falling trend is not a spike.
    std::vector<double> falling;
    for (int i = 0; i < 200; ++i) falling.push_back(5.0 * std::exp(-i / 40.0) + 0.1);
    CHECK(loss_spikes(falling).empty());
}

TEST_CASE("loss spikes: per-step losses from metrics.csv; an empty cell without them", "[analysis][spikes][cli]") {
    train_config tc;
    tc.log_every = 1;
    const std::string header = "step,split,loss,token_acc,seq_acc,lr,grad_norm,tokens_per_s,elapsed_s\n";
    CHECK(per_step_train_losses(header + "0,val,3,0,0,,,,1\n1,train,2.5,0,0,1,1,1,1\n2,train,2,0,0,1,1,1,1\n", tc) ==
          std::vector<double>{2.5, 2.0});
    CHECK_FALSE(per_step_train_losses(header + "1,train,2.5,0,0,1,1,1,1\n3,train,2,0,0,1,1,1,1\n", tc));
    tc.log_every = 0;
    CHECK_FALSE(per_step_train_losses(header + "1,train,2.5,0,0,1,1,1,1\n2,train,2,0,0,1,1,1,1\n", tc));

    temp_dir dir;
    const std::string spec = tiny_lookup_spec("spk", 60, 20, "sweep:\n  train.log_every: [0, 1]\n");
    trained_run(dir, "spk", spec, "train.log_every=0,seed=0");
    const fs::path res = dir / "out" / "spk";
    // The default leaves config.yaml as before the key existed.
    CHECK_THAT(read_text(res / "runs" / "train.log_every=0,seed=0" / "config.yaml"), !Contains("log_every"));
    const auto metrics = lines_of(read_text(res / "runs" / "train.log_every=1,seed=0" / "metrics.csv"));
    CHECK(metrics.size() == 1 + 2 + 60 + 2 * 3);  // header, step 0's val and test, a train row per step, 3 evaluations
    const auto summary = lines_of(read_text(res / "summary.csv"));
    REQUIRE(summary.size() == 3);
    // loss_spikes is the next to last column (steps_to_solve the last).
    const auto header_cells = csv_fields(summary[0]);
    REQUIRE(header_cells.size() >= 2);
    CHECK(header_cells[header_cells.size() - 2] == "loss_spikes");
    CHECK(header_cells.back() == "steps_to_solve");
    const auto spikes_cell = [](const std::string& row) {
        const auto cells = csv_fields(row);
        return cells[cells.size() - 2];
    };
    const std::string no_log = summary[1].find("log_every=0") != std::string::npos ? summary[1] : summary[2];
    const std::string logged = summary[1].find("log_every=0") != std::string::npos ? summary[2] : summary[1];
    CHECK(spikes_cell(no_log).empty());
    CHECK_FALSE(spikes_cell(logged).empty());
    const auto losses = per_step_train_losses(read_text(res / "runs" / "train.log_every=1,seed=0" / "metrics.csv"), [] {
        train_config c;
        c.log_every = 1;
        return c;
    }());
    REQUIRE(losses);
    CHECK(losses->size() == 60);
    CHECK(spikes_cell(logged) == std::to_string(loss_spikes(*losses).size()));
    CHECK_THAT(read_text(res / "table.md"), Contains("loss_spikes by seed"));
}

TEST_CASE("train.log_every: train rows every N steps, counted by the resume cut; a resumed run writes the same rows",
          "[analysis][spikes]") {
    run_config cfg = exp_config();
    cfg.train.steps = 30;
    cfg.train.eval_every = 10;
    cfg.train.log_every = 4;
    std::vector<metrics_row> full;
    std::map<int, train_state> states;
    train_callbacks cb;
    cb.on_row = [&](const metrics_row& r) { full.push_back(r); };
    cb.save_every_s = 1e-300;  // a state after every step
    cb.save_state = [&](const train_state& st) { states[st.step] = st; };
    REQUIRE(train_run(cfg, cb).status == run_status::ok);
    std::vector<int> train_steps;
    for (const metrics_row& r : full)
        if (r.split == "train") train_steps.push_back(r.step);
    // Multiples of 4, and the evaluations at 10, 20 and 30.
    CHECK(train_steps == std::vector<int>{4, 8, 10, 12, 16, 20, 24, 28, 30});
    for (const int k : {3, 4, 9, 10, 13, 20, 29}) {
        INFO("after step " << k);
        const auto upto = static_cast<std::size_t>(
            std::count_if(full.begin(), full.end(), [&](const metrics_row& r) { return r.step <= k; }));
        CHECK(metrics_rows_after(cfg.train, k) == upto);  // what a resume keeps of metrics.csv
        std::vector<metrics_row> rest;
        train_callbacks again;
        again.on_row = [&](const metrics_row& r) { rest.push_back(r); };
        REQUIRE(train_run(cfg, again, &states.at(k)).status == run_status::ok);
        REQUIRE(rest.size() == full.size() - upto);
        for (std::size_t i = 0; i < rest.size(); ++i) {
            CHECK(rest[i].step == full[upto + i].step);
            CHECK(rest[i].split == full[upto + i].split);
            CHECK(rest[i].m.loss == full[upto + i].m.loss);
        }
    }
}
