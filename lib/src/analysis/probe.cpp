// The Taylor-term probe of a run (analysis/probe.hpp, docs/probe.md).
#include "attnlab/analysis/probe.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "attnlab/attention/variant_table.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace {

// Adds the causal scores of one head of one example to `sums`: s_tj =
// q_t . k_j / sqrt(HS) for j <= t (then min(s, clamp)), in double from the
// model's q and k. Q, K: the head's (T, HS) rows with row stride C.
void add_head_scores(score_term_sums& sums, const float* Q, const float* K, int Tn, int C, int HS, double scale,
                     const std::optional<double>& clamp) {
    std::vector<double> row(static_cast<std::size_t>(Tn));  // (t + 1) scores of query t
    for (int t = 0; t < Tn; ++t) {
        const float* q = Q + static_cast<long>(t) * C;
        for (int j = 0; j <= t; ++j) {
            const float* k = K + static_cast<long>(j) * C;
            double dot = 0;
            for (int i = 0; i < HS; ++i) dot += static_cast<double>(q[i]) * static_cast<double>(k[i]);
            row[j] = clamp ? std::min(dot * scale, *clamp) : dot * scale;
        }
        sums.add(row.data(), t + 1);
    }
}

probe_head head_of(int layer, int head, const score_term_sums& sums) {
    probe_head h;
    h.layer = layer;
    h.head = head;
    h.pairs = sums.pairs();
    const double n = sums.pairs() > 0 ? static_cast<double>(sums.pairs()) : 1.0;
    for (double t : sums.term_sums()) h.mean_abs_term.push_back(t / n);
    h.dominant_order = dominant_order(h.mean_abs_term);
    h.mean_abs_score = sums.abs_sum() / n;
    h.max_abs_score = sums.abs_max();
    return h;
}

std::string score_kernel_names() {
    std::string names;
    for (int i = 0; i < numerator_count; ++i)
        if (numerator_rows()[i].family == numerator_family::score_kernel)
            names += (names.empty() ? "" : ", ") + std::string(numerator_rows()[i].name);
    return names;
}

}  // namespace

std::string probe_refusal(const attention_config& a) {
    const numerator_traits& t = traits_of(a.numerator);
    if (t.family == numerator_family::score_kernel) return "";
    return std::string("attention.numerator: ") + t.name + " is a feature map (w = " + t.summary +
           "): its weights have no score q.k/sqrt(d) whose Taylor terms could be measured; the probe takes "
           "score kernels only (" +
           score_kernel_names() + ")";
}

probe_result probe_model(transformer<float>& model, const batch& data, int examples, int chunk_B,
                         const probe_options& opt) {
    if (const std::string why = probe_refusal(model.attention()); !why.empty()) throw std::invalid_argument(why);
    if (examples < 1 || examples > data.B) throw std::invalid_argument("probe_model: examples outside 1..data.B");
    if (chunk_B < 1) throw std::invalid_argument("probe_model: chunk_B must be >= 1");
    const int L = model.config().layers, NH = model.config().heads, C = model.config().d_model, HS = C / NH;
    const int Tn = data.T, M = opt.max_order;
    const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
    const std::optional<double> clamp = model.attention().clamp;

    std::vector<score_term_sums> totals(static_cast<std::size_t>(L) * NH, score_term_sums(M));  // (L, NH)
    std::vector<score_term_sums> partial;  // (B, NH) of one chunk and layer
    for (int first = 0; first < examples; first += chunk_B) {
        const int B = std::min(chunk_B, examples - first);
        const std::size_t off = static_cast<std::size_t>(first) * Tn;
        model.forward(data.tokens.data() + off, data.targets.data() + off, B, Tn);
        for (int l = 0; l < L; ++l) {
            const float* Q = model.queries(l);  // (B, T, C)
            const float* K = model.keys(l);     // (B, T, C)
            partial.assign(static_cast<std::size_t>(B) * NH, score_term_sums(M));
#pragma omp parallel for schedule(dynamic)
            for (int bh = 0; bh < B * NH; ++bh) {
                const long at = static_cast<long>(bh / NH) * Tn * C + static_cast<long>(bh % NH) * HS;
                add_head_scores(partial[static_cast<std::size_t>(bh)], Q + at, K + at, Tn, C, HS, scale, clamp);
            }
            // In (example, head) order: the same sums for any thread count.
            for (int bh = 0; bh < B * NH; ++bh)
                totals[static_cast<std::size_t>(l) * NH + bh % NH].merge(partial[static_cast<std::size_t>(bh)]);
        }
        if (opt.progress) opt.progress(first + B, examples);
    }

    probe_result r;
    r.examples = examples;
    r.max_order = M;
    r.layers = L;
    r.heads_per_layer = NH;
    r.split = opt.split;
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < NH; ++h) r.heads.push_back(head_of(l, h, totals[static_cast<std::size_t>(l) * NH + h]));
    return r;
}

probe_result probe_run_dir(const std::string& run_dir, const probe_options& opt) {
    if (opt.split != "test" && opt.split != "val")
        throw config_error("--split " + opt.split + ": expected test or val");
    const run_config cfg = read_run_dir_config(run_dir);
    if (const std::string why = probe_refusal(cfg.attention); !why.empty())
        throw config_error(run_dir + "/config.yaml: " + why);
    transformer<float> model = load_run_model(run_dir, cfg, cfg);
    auto data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed));
    const batch& set = opt.split == "val" ? data->val_set() : data->test_set();
    if (opt.examples > set.B)
        throw config_error("--examples " + std::to_string(opt.examples) + ": the " + opt.split + " set of " + run_dir +
                           " has " + std::to_string(set.B) + " examples");
    const int examples = opt.examples > 0 ? opt.examples : set.B;
    return probe_model(model, set, examples, std::max(1, cfg.train.batch), opt);
}

std::string probe_terms_csv(const probe_result& r) {
    std::string out = csv_line({"layer", "head", "order", "mean_abs_term"});
    for (const probe_head& h : r.heads)
        for (std::size_t m = 0; m < h.mean_abs_term.size(); ++m)
            out += csv_line({std::to_string(h.layer), std::to_string(h.head), std::to_string(m),
                             format_number(h.mean_abs_term[m])});
    return out;
}

std::string probe_heads_csv(const probe_result& r) {
    std::string out = csv_line({"layer", "head", "split", "examples", "pairs", "max_order", "dominant_order",
                                "mean_abs_score", "max_abs_score"});
    for (const probe_head& h : r.heads)
        out += csv_line({std::to_string(h.layer), std::to_string(h.head), r.split, std::to_string(r.examples),
                         std::to_string(h.pairs), std::to_string(r.max_order), std::to_string(h.dominant_order),
                         format_number(h.mean_abs_score), format_number(h.max_abs_score)});
    return out;
}

void write_probe_files(const std::string& dir, const probe_result& r) {
    make_dirs(dir);
    write_file_atomic(dir + "/" + probe_terms_filename, probe_terms_csv(r));
    write_file_atomic(dir + "/" + probe_heads_filename, probe_heads_csv(r));
}

std::string probe_table(const probe_result& r) {
    std::string out = "layer  head  dominant_order  mean_abs_score  max_abs_score\n";
    char line[128];
    for (const probe_head& h : r.heads) {
        std::snprintf(line, sizeof line, "%5d  %4d  %14d  %14.4g  %13.4g\n", h.layer, h.head, h.dominant_order,
                      h.mean_abs_score, h.max_abs_score);
        out += line;
    }
    return out;
}

}  // namespace attnlab
