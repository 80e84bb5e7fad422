// attnlab probe (analysis/probe.hpp): the mean Taylor terms |s|^m / m! of a run's
// attention scores against an independent computation from the parameters,
// the dominant order of hand-made scores, refusals and errors, and the
// command end to end.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/analysis/probe.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subprocess.hpp"
#include "support/process_support.hpp"
#include "support/tiny_spec.hpp"

using namespace attnlab;
using attnlab::test::cli_result;
using attnlab::test::count_of;
using attnlab::test::csv_fields;
using attnlab::test::launch_options;
using attnlab::test::lines_of;
using attnlab::test::read_text;
using attnlab::test::run_cli;
using attnlab::test::temp_dir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

// A tiny lookup run: 4 test examples of 8 tokens, d_model 16 in 2 heads,
// batch 3 (so the probe forwards a chunk of 3 and one of 1).
run_config probe_config(int layers, const std::string& position, const std::string& attention, int short_conv = 0) {
    const std::string yaml =
        "name: probe\nbase:\n  seed: 3\n"
        "  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 4}\n"
        "  model: {layers: " +
        std::to_string(layers) + ", d_model: 16, heads: 2, position: " + position +
        ", short_conv: " + std::to_string(short_conv) +
        "}\n"
        "  attention: " +
        attention + "\n  train: {steps: 10, batch: 3, lr: 1.0e-3, warmup: 2}\n";
    return parse_spec(yaml, "probe.yaml").base;
}

float* param(transformer<float>& m, std::size_t offset) { return m.params.data() + offset; }

// Random parameters with q and k scaled up so that scores reach several
// units (orders up to ~10 matter), short convolution taps (when present)
// away from the identity, and every block but the last with a zero
// output (attention o and MLP down): each block's input is then the
// embedding, which the reference below computes by hand.
transformer<float> scaled_model(const run_config& cfg) {
    transformer<float> m = make_model<float>(cfg);
    m.init_params(11);
    const int C = cfg.model.d_model;
    for (int l = 0; l < cfg.model.layers; ++l) {
        const block_offsets& bo = m.offsets().blocks[static_cast<std::size_t>(l)];
        for (int i = 0; i < C * C; ++i) {
            param(m, bo.q)[i] *= 25.0f + 5.0f * l;  // another scale per layer: a mix-up of layers shows
            param(m, bo.k)[i] *= 25.0f;
        }
        for (int c = 0; c < C; ++c) param(m, bo.attn_norm)[c] = 1.0f + 0.05f * static_cast<float>(c % 5);
        for (int i = 0; bo.short_conv != block_offsets::npos && i < cfg.model.short_conv * 3 * C; ++i)
            param(m, bo.short_conv)[i] += 0.1f * static_cast<float>(i % 7) - 0.3f;
        if (l + 1 < cfg.model.layers) {
            std::fill_n(param(m, bo.o), C * C, 0.0f);
            std::fill_n(param(m, bo.mlp_down), static_cast<std::size_t>(C) * resolved_mlp_hidden(cfg.model), 0.0f);
        }
    }
    return m;
}

// config.yaml and model.safetensors of `model` in `dir`, as attnlab run leaves them.
void write_run_dir(const fs::path& dir, const run_config& cfg, const transformer<float>& model) {
    fs::create_directories(dir);
    write_file_atomic((dir / "config.yaml").string(), run_config_to_yaml(cfg));
    checkpoint_save((dir / checkpoint_filename).string(), model);
}

struct reference_head {
    std::vector<double> mean_term;
    double mean_abs = 0, max_abs = 0;
    std::uint64_t pairs = 0;
};

// The probe of one head recomputed from the parameters in double, for a
// block whose input is the embedding (+ learned position): RMSNorm, q and k
// as W x, the short convolution sum_i w[i] x[t - i] within the example,
// RoPE by its formula (rotate-half, base 10000), s = q.k / sqrt(HS),
// min(s, clamp), and |s|^m / m! by pow and tgamma.
reference_head reference(const transformer<float>& m, const run_config& cfg, const batch& data, int examples, int layer,
                         int head, int M) {
    const int C = cfg.model.d_model, HS = C / cfg.model.heads, T = data.T;
    const block_offsets& bo = m.offsets().blocks[static_cast<std::size_t>(layer)];
    const float* P = m.params.data();
    reference_head r;
    r.mean_term.assign(static_cast<std::size_t>(M) + 1, 0.0);
    double abs_sum = 0;
    for (int b = 0; b < examples; ++b) {
        std::vector<std::vector<double>> q(static_cast<std::size_t>(T)), k(static_cast<std::size_t>(T));
        for (int t = 0; t < T; ++t) {
            const int token = data.tokens[static_cast<std::size_t>(b) * T + t];
            std::vector<double> x(static_cast<std::size_t>(C));
            for (int c = 0; c < C; ++c) {
                x[c] = P[m.offsets().embed + static_cast<std::size_t>(token) * C + c];
                if (cfg.model.position == position_kind::learned)
                    x[c] += P[m.offsets().pos + static_cast<std::size_t>(t) * C + c];
            }
            double ss = 0;
            for (double v : x) ss += v * v;
            const double rstd = 1.0 / std::sqrt(ss / C + 1e-6);
            for (int c = 0; c < C; ++c) x[c] *= rstd * P[bo.attn_norm + c];
            std::vector<double>& qt = q[static_cast<std::size_t>(t)];
            std::vector<double>& kt = k[static_cast<std::size_t>(t)];
            qt.assign(static_cast<std::size_t>(HS), 0.0);
            kt.assign(static_cast<std::size_t>(HS), 0.0);
            for (int i = 0; i < HS; ++i)
                for (int c = 0; c < C; ++c) {
                    const std::size_t row = static_cast<std::size_t>(head * HS + i) * C + c;  // [out, in]
                    qt[i] += P[bo.q + row] * x[c];
                    kt[i] += P[bo.k + row] * x[c];
                }
        }
        if (cfg.model.short_conv > 0) {  // w (K, 3C): q's channels first, then k's
            const std::vector<std::vector<double>> q_in = q, k_in = k;
            for (int t = 0; t < T; ++t)
                for (int i = 0; i < HS; ++i) {
                    double qs = 0, ks = 0;
                    for (int d = 0; d < cfg.model.short_conv && d <= t; ++d) {
                        const std::size_t tap = bo.short_conv + static_cast<std::size_t>(d) * 3 * C + head * HS + i;
                        qs += P[tap] * q_in[t - d][i];
                        ks += P[tap + C] * k_in[t - d][i];
                    }
                    q[t][i] = qs;
                    k[t][i] = ks;
                }
        }
        for (int t = 0; t < T && cfg.model.position == position_kind::rope; ++t)
            for (std::vector<double>* v : {&q[t], &k[t]}) {
                const std::vector<double> u = *v;
                for (int i = 0; i < HS / 2; ++i) {
                    const double angle = t * std::pow(10000.0, -2.0 * i / HS);
                    (*v)[i] = u[i] * std::cos(angle) - u[i + HS / 2] * std::sin(angle);
                    (*v)[i + HS / 2] = u[i + HS / 2] * std::cos(angle) + u[i] * std::sin(angle);
                }
            }
        for (int t = 0; t < T; ++t)
            for (int j = 0; j <= t; ++j) {
                double s = 0;
                for (int i = 0; i < HS; ++i) s += q[t][i] * k[j][i];
                s /= std::sqrt(static_cast<double>(HS));
                if (cfg.attention.clamp) s = std::min(s, *cfg.attention.clamp);
                const double a = std::abs(s);
                for (int o = 0; o <= M; ++o) r.mean_term[o] += std::pow(a, o) / std::tgamma(o + 1.0);
                abs_sum += a;
                r.max_abs = std::max(r.max_abs, a);
                ++r.pairs;
            }
    }
    for (double& v : r.mean_term) v /= static_cast<double>(r.pairs);
    r.mean_abs = abs_sum / static_cast<double>(r.pairs);
    return r;
}

// A model whose every score is exactly `c` (every pair, every head): all
// tokens embed to the same vector of ones, no positions, RMSNorm gain 1, so
// each block's input is ones(C); q = a 1 and k = sign a 1 with a^2 sqrt(HS) = c.
transformer<float> constant_score_model(const run_config& cfg, double c, double sign) {
    transformer<float> m = make_model<float>(cfg);
    m.init_params(5);
    const int C = cfg.model.d_model, HS = C / cfg.model.heads;
    const float a = static_cast<float>(std::sqrt(c / std::sqrt(static_cast<double>(HS))));
    std::fill_n(param(m, m.offsets().embed), static_cast<std::size_t>(m.vocab()) * C, 1.0f);
    for (const block_offsets& bo : m.offsets().blocks) {
        std::fill_n(param(m, bo.attn_norm), C, 1.0f);
        std::fill_n(param(m, bo.q), C * C, 0.0f);
        std::fill_n(param(m, bo.k), C * C, 0.0f);
        for (int i = 0; i < C; ++i) {
            param(m, bo.q)[i * C + i] = a;
            param(m, bo.k)[i * C + i] = static_cast<float>(sign) * a;
        }
        std::fill_n(param(m, bo.o), C * C, 0.0f);  // later blocks see ones(C) too
        std::fill_n(param(m, bo.mlp_down), static_cast<std::size_t>(C) * resolved_mlp_hidden(cfg.model), 0.0f);
    }
    return m;
}

probe_options options(int max_order, int examples = 0) {
    probe_options o;
    o.max_order = max_order;
    o.examples = examples;
    return o;
}

}  // namespace

TEST_CASE("probe: mean terms, mean and max |s| equal an independent computation from the parameters", "[probe]") {
    struct variant {
        const char* name;
        int layers;
        const char* position;
        const char* attention;
        int short_conv;
    };
    const variant v = GENERATE(values<variant>({
        {"rope, exp", 1, "rope", "{numerator: exp, denominator: softmax}", 0},
        {"rope, exp, short_conv 3", 1, "rope", "{numerator: exp, denominator: softmax}", 3},
        {"2 layers, learned positions, taylor-2, short_conv 2", 2, "learned",
         "{numerator: taylor, order: 2, denominator: norm}", 2},
        {"learned positions, taylor-2", 1, "learned", "{numerator: taylor, order: 2, denominator: norm}", 0},
        {"rope, clamp 1.5", 1, "rope", "{numerator: exp, clamp: 1.5, denominator: length}", 0},
        {"2 layers, no positions, power-2", 2, "none", "{numerator: power, order: 2, denominator: norm}", 0},
        {"linear (a score kernel too)", 1, "rope", "{numerator: linear, denominator: norm}", 0},
    }));
    INFO(v.name);
    const run_config cfg = probe_config(v.layers, v.position, v.attention, v.short_conv);
    const transformer<float> model = scaled_model(cfg);
    temp_dir dir;
    write_run_dir(dir / "run", cfg, model);
    const int M = 20, examples = 4;  // every test example: chunks of 3 and 1
    const probe_result r = probe_run_dir((dir / "run").string(), options(M));
    REQUIRE(r.layers == v.layers);
    REQUIRE(r.heads_per_layer == 2);
    REQUIRE(r.heads.size() == static_cast<std::size_t>(v.layers) * 2);
    CHECK(r.examples == examples);
    CHECK(r.split == "test");

    const auto data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed));
    bool clamped = false;
    for (const probe_head& h : r.heads) {
        INFO("layer " << h.layer << " head " << h.head);
        const reference_head ref = reference(model, cfg, data->test_set(), examples, h.layer, h.head, M);
        CHECK(h.pairs == ref.pairs);
        CHECK(h.pairs == static_cast<std::uint64_t>(examples) * 8 * 9 / 2);
        REQUIRE(h.mean_abs_term.size() == static_cast<std::size_t>(M) + 1);
        for (int m = 0; m <= M; ++m) {
            INFO("order " << m);
            CHECK(h.mean_abs_term[m] == Approx(ref.mean_term[m]).epsilon(1e-4));
        }
        CHECK(h.mean_abs_score == Approx(ref.mean_abs).epsilon(1e-5));
        CHECK(h.max_abs_score == Approx(ref.max_abs).epsilon(1e-5));
        const int ref_dominant =
            static_cast<int>(std::max_element(ref.mean_term.begin(), ref.mean_term.end()) - ref.mean_term.begin());
        CHECK(h.dominant_order == ref_dominant);
        CHECK(h.max_abs_score > 2.0);  // the scores reach the orders the test is about
        if (cfg.attention.clamp) {     // the clamp changed some scores (their sizes differ without it)
            run_config unclamped = cfg;
            unclamped.attention.clamp.reset();
            const reference_head raw = reference(model, unclamped, data->test_set(), examples, h.layer, h.head, M);
            clamped = clamped || std::abs(raw.mean_abs - h.mean_abs_score) > 1e-3;
        }
    }
    if (cfg.attention.clamp) CHECK(clamped);
}

TEST_CASE("probe: the dominant order of scores |s| = c is floor(c); a clamp caps positive scores only", "[probe]") {
    struct scenario {
        double c, sign;
        const char* clamp;
        int dominant;
        double abs_score;
    };
    const scenario sc = GENERATE(values<scenario>({
        {7.5, 1, "", 7, 7.5},
        {3.3, 1, "", 3, 3.3},
        {7.5, -1, "", 7, 7.5},
        {0.4, 1, "", 0, 0.4},
        {7.5, 1, ", clamp: 4.5", 4, 4.5},
        {7.5, -1, ", clamp: 4.5", 7, 7.5},  // min(-7.5, 4.5) = -7.5
    }));
    INFO("c " << sc.c << " sign " << sc.sign << sc.clamp);
    const run_config cfg =
        probe_config(2, "none", std::string("{numerator: exp, denominator: softmax") + sc.clamp + "}");
    transformer<float> model = constant_score_model(cfg, sc.c, sc.sign);
    const auto data = make_task(cfg.task, 0);
    const probe_result r = probe_model(model, data->test_set(), 4, 3, options(30));
    for (const probe_head& h : r.heads) {
        INFO("layer " << h.layer << " head " << h.head);
        CHECK(h.dominant_order == sc.dominant);
        CHECK(h.mean_abs_score == Approx(sc.abs_score).epsilon(1e-5));
        CHECK(h.max_abs_score == Approx(sc.abs_score).epsilon(1e-5));
        for (int m = 0; m <= 30; ++m)
            CHECK(h.mean_abs_term[m] == Approx(std::pow(sc.abs_score, m) / std::tgamma(m + 1.0)).epsilon(1e-4));
    }
}

TEST_CASE("probe: the sums do not depend on the thread count", "[probe]") {
    const run_config cfg = probe_config(2, "rope", "{numerator: exp, denominator: softmax}");
    transformer<float> model = scaled_model(cfg);
    const auto data = make_task(cfg.task, 0);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const probe_result one = probe_model(model, data->test_set(), 4, 3, options(25));
    omp_set_num_threads(std::max(2, threads));
    const probe_result two = probe_model(model, data->test_set(), 4, 3, options(25));
    omp_set_num_threads(threads);
    CHECK(probe_terms_csv(one) == probe_terms_csv(two));
    CHECK(probe_heads_csv(one) == probe_heads_csv(two));
}

TEST_CASE("probe: large orders neither overflow nor lose the terms of small scores", "[probe]") {
    score_term_sums big(150);
    big.add(300.0);  // 300^150 alone overflows a double; 300^150 / 150! does not
    for (int m : {0, 1, 50, 150}) {
        INFO("order " << m);
        const double expected = std::exp(m * std::log(300.0) - std::lgamma(m + 1.0));
        CHECK(std::isfinite(big.term_sums()[m]));
        CHECK(big.term_sums()[m] == Approx(expected).epsilon(1e-12));
    }
    score_term_sums zero(5);
    zero.add(0.0);  // 0^0 / 0! = 1, every other term 0
    CHECK(zero.term_sums() == std::vector<double>{1, 0, 0, 0, 0, 0});
    CHECK(dominant_order({1.0, 3.0, 3.0, 2.0}) == 1);  // the first of equal maxima
}

TEST_CASE("probe: feature-map numerators are refused, naming the run's config.yaml", "[probe]") {
    const std::string fm = GENERATE(as<std::string>{}, "elu1", "relu", "cosine");
    const run_config cfg = probe_config(1, "rope", "{numerator: " + fm + ", denominator: softmax}");
    temp_dir dir;
    write_run_dir(dir / "run", cfg, make_model<float>(cfg));
    const std::string config = (dir / "run" / "config.yaml").string();
    CHECK_THROWS_MATCHES(probe_run_dir((dir / "run").string(), options(10)), config_error,
                         Catch::Matchers::Message(config + ": " + probe_refusal(cfg.attention)));
    CHECK_THAT(probe_refusal(cfg.attention), StartsWith("attention.numerator: " + fm + " is a feature map") &&
                                                 Contains("exp, taylor, linear, power"));
    transformer<float> model = make_model<float>(cfg);
    const auto data = make_task(cfg.task, 0);
    CHECK_THROWS_AS(probe_model(model, data->test_set(), 1, 1, options(10)), std::invalid_argument);
}

TEST_CASE("probe: a missing or damaged run directory gives eval's errors", "[probe]") {
    temp_dir dir;
    const std::string run = (dir / "run").string();
    CHECK_THROWS_MATCHES(probe_run_dir(run, options(5)), config_error,
                         Catch::Matchers::Message(run + ": no such run directory"));
    const run_config cfg = probe_config(1, "rope", "{numerator: exp, denominator: softmax}");
    fs::create_directories(run);
    CHECK_THROWS_WITH(probe_run_dir(run, options(5)), StartsWith(run + "/config.yaml: no such file"));
    write_file_atomic(run + "/config.yaml", run_config_to_yaml(cfg));
    CHECK_THROWS_WITH(probe_run_dir(run, options(5)), StartsWith(run + "/model.safetensors: no such checkpoint file"));
    write_run_dir(run, cfg, scaled_model(cfg));
    const std::string ckpt = read_file(run + "/model.safetensors");
    write_file_atomic(run + "/model.safetensors", ckpt.substr(0, ckpt.size() / 2));
    CHECK_THROWS_WITH(probe_run_dir(run, options(5)), StartsWith(run + "/model.safetensors: "));
    write_run_dir(run, cfg, scaled_model(cfg));
    CHECK_THROWS_MATCHES(probe_run_dir(run, options(5, 5)), config_error,
                         Catch::Matchers::Message("--examples 5: the test set of " + run + " has 4 examples"));
}

TEST_CASE("attnlab probe writes probe.csv, probe_heads.csv and the figure, and prints the dominant orders",
          "[probe][cli]") {
    temp_dir dir;
    // A trained run, as a user has it.
    const fs::path spec = dir / "tiny.yaml";
    attnlab::test::write_text(spec,
                              attnlab::test::tiny_lookup_spec("tiny", 20, 10, "sweep:\n  - {model.layers: [2]}\n"));
    const cli_result trained = run_cli({"run", spec.string(), "--out", (dir / "out").string(), "--threads", "1"});
    INFO("run stderr: " << trained.err);
    REQUIRE(trained.code == 0);
    const fs::path run = dir / "out" / "tiny" / "runs" / "model.layers=2,seed=0";
    REQUIRE(fs::is_regular_file(run / "model.safetensors"));

    const int L = 2, H = 2, M = 12;
    const cli_result r = run_cli({"probe", run.string(), "--max-order", std::to_string(M), "--split", "val"});
    INFO("probe stderr: " << r.err);
    REQUIRE(r.code == 0);
    const auto terms = lines_of(read_text(run / "probe.csv"));
    REQUIRE(terms.size() == static_cast<std::size_t>(L * H * (M + 1)) + 1);
    CHECK(terms[0] == "layer,head,order,mean_abs_term");
    const auto heads = lines_of(read_text(run / "probe_heads.csv"));
    REQUIRE(heads.size() == static_cast<std::size_t>(L * H) + 1);
    CHECK(heads[0] == "layer,head,split,examples,pairs,max_order,dominant_order,mean_abs_score,max_abs_score");
    CHECK(csv_fields(heads[1])[2] == "val");

    // The files hold what the library computes; stdout a row per layer and head.
    probe_options o = options(M);
    o.split = "val";
    const probe_result in_process = probe_run_dir(run.string(), o);
    CHECK(read_text(run / "probe.csv") == probe_terms_csv(in_process));
    CHECK(read_text(run / "probe_heads.csv") == probe_heads_csv(in_process));
    CHECK_THAT(r.out, Contains(probe_table(in_process)));
    CHECK(count_of(r.out, "\n") == static_cast<std::size_t>(L * H) + 2);

    // The figure, when /usr/bin/python3 has matplotlib (scripts/setup installs it).
    const bool matplotlib = run_process({"/usr/bin/python3", "-c", "import matplotlib"}).exit_code == 0;
    if (matplotlib) {
        CHECK(fs::file_size(run / "probe.png") > 1000);
        CHECK(fs::file_size(run / "probe.pdf") > 1000);
    } else {
        CHECK_THAT(r.err, Contains("figures skipped"));
    }

    // --out elsewhere, with a python that has no matplotlib (site-packages off)
    // and with none: the CSV files, and "figures skipped" saying why.
    const fs::path no_matplotlib = dir / "python_without_site";
    attnlab::test::write_text(no_matplotlib, "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
    fs::permissions(no_matplotlib, fs::perms::owner_all);
    for (const fs::path& python : {no_matplotlib, dir / "no_python"}) {
        INFO("ATTNLAB_PYTHON=" << python);
        const fs::path elsewhere = dir / ("out_" + python.filename().string());
        const cli_result skipped = run_cli({"probe", run.string(), "--out", elsewhere.string(), "--examples", "3"},
                                           launch_options().with_env("ATTNLAB_PYTHON", python.string()));
        INFO("stderr: " << skipped.err);
        CHECK(skipped.code == 0);
        CHECK(lines_of(read_text(elsewhere / "probe.csv")).size() == static_cast<std::size_t>(L * H * 31) + 1);
        CHECK(csv_fields(lines_of(read_text(elsewhere / "probe_heads.csv"))[1])[3] == "3");
        CHECK_THAT(skipped.err,
                   Contains("figures skipped: ") &&
                       Contains(python == no_matplotlib ? "cannot import matplotlib" : "no " + python.string()));
        CHECK_FALSE(fs::exists(elsewhere / "probe.png"));
    }
}

TEST_CASE("attnlab probe refuses feature maps and missing runs with exit code 2 and one line", "[probe][cli]") {
    temp_dir dir;
    const run_config cfg = probe_config(1, "rope", "{numerator: elu1, denominator: softmax}");
    write_run_dir(dir / "run", cfg, make_model<float>(cfg));
    const cli_result fm = run_cli({"probe", (dir / "run").string()});
    CHECK(fm.code == 2);
    CHECK(fm.out.empty());
    CHECK_THAT(fm.err, StartsWith("attnlab: error: " + (dir / "run" / "config.yaml").string() +
                                  ": attention.numerator: elu1 is a feature map"));
    CHECK(count_of(fm.err, "\n") == 1);
    CHECK_FALSE(fs::exists(dir / "run" / "probe.csv"));

    const cli_result none = run_cli({"probe", (dir / "nope").string()});
    CHECK(none.code == 2);
    CHECK(none.err == "attnlab: error: " + (dir / "nope").string() + ": no such run directory\n");
}
