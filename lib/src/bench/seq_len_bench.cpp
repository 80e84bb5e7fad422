// attnlab bench train --seq-lens (seq_len_bench.hpp): one model, a training
// step (forward and backward, no optimizer: its cost does not depend on T)
// timed at each sequence length with the batch shrunk to keep the tokens per
// step constant. Every repeat is a round over all points, each point with
// its own model, built anew in each round.
#include "attnlab/bench/seq_len_bench.hpp"

#include "attnlab/util/median.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

#include <spdlog/fmt/fmt.h>

#include "attnlab/attention/chunked.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/model/transformer.hpp"
#include "attnlab/util/rng.hpp"

namespace attnlab {

namespace {

constexpr int bench_vocab = 64;

attention_config with_softmax(numerator_kind n, int order) {
    attention_config a;
    a.numerator = n;
    a.order = order;
    a.denominator = denominator_kind::softmax;
    return a;
}

// Milliseconds per 1000 tokens of `steps` forward + backward passes.
double time_steps(transformer<float>& model, const std::vector<std::int32_t>& tokens,
                  const std::vector<std::int32_t>& targets, int B, int T, int steps) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        model.zero_grad();
        model.forward_backward(tokens.data(), targets.data(), B, T);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return 1e6 * seconds / (double(steps) * B * T);
}

const seq_len_point* find_point(const std::vector<seq_len_point>& points, const std::string& variant,
                                parallel_form form, int T) {
    for (const seq_len_point& p : points)
        if (p.variant == variant && p.form == form && p.T == T) return &p;
    return nullptr;
}

std::vector<int> lengths_of(const std::vector<seq_len_point>& points) {
    std::vector<int> out;
    for (const seq_len_point& p : points)
        if (std::find(out.begin(), out.end(), p.T) == out.end()) out.push_back(p.T);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> variants_of(const std::vector<seq_len_point>& points) {
    std::vector<std::string> out;
    for (const seq_len_point& p : points)
        if (std::find(out.begin(), out.end(), p.variant) == out.end()) out.push_back(p.variant);
    return out;
}

}  // namespace

std::vector<seq_len_variant> default_seq_len_variants() {
    return {{"exp", with_softmax(numerator_kind::exp, 0)},
            {"elu1", with_softmax(numerator_kind::elu1, 0)},
            {"taylor2", with_softmax(numerator_kind::taylor, 2)},
            {"power2", with_softmax(numerator_kind::power, 2)}};
}

double seq_len_point::median() const {
    if (ms_per_1k.empty()) return NAN;
    return median_of(ms_per_1k);
}

std::vector<seq_len_point> run_seq_len_bench(const seq_len_bench_options& opt,
                                             const std::vector<seq_len_variant>& variants,
                                             const std::function<void(const std::string&)>& progress) {
    std::vector<seq_len_point> points;
    std::vector<attention_config> configs;  // of each point
    const int HS = opt.model.d_model / opt.model.heads;
    for (const seq_len_variant& v : variants)
        for (const parallel_form form : {parallel_form::quadratic, parallel_form::chunked}) {
            attention_config a = v.attention;
            a.form = form;
            a.chunk = opt.chunk;
            if (form == parallel_form::chunked && !has_chunked_form(a)) continue;
            for (const int T : opt.seq_lens) {
                seq_len_point p;
                p.variant = v.name;
                p.form = form;
                p.T = T;
                p.B = std::max(1, opt.tokens / T);
                attention_config automatic = a;
                automatic.form = parallel_form::automatic;
                p.auto_form = choose_form(automatic, T, HS);
                points.push_back(std::move(p));
                configs.push_back(a);
            }
        }
    // Rounds over every point, so that a slow spell of a shared machine
    // falls on all points alike instead of on the few timed during it. One
    // model lives at a time.
    for (int round = 0; round < opt.repeats; ++round) {
        for (std::size_t i = 0; i < points.size(); ++i) {
            seq_len_point& p = points[i];
            transformer<float> model(opt.model, configs[i], bench_vocab, p.T);
            model.init_params(1);
            const std::size_t N = static_cast<std::size_t>(p.B) * p.T;
            std::vector<std::int32_t> tokens(N), targets(N);
            rng r(2);
            for (std::size_t j = 0; j < N; ++j) {
                tokens[j] = static_cast<std::int32_t>(r.uniform() * bench_vocab) % bench_vocab;
                targets[j] = static_cast<std::int32_t>(r.uniform() * bench_vocab) % bench_vocab;
            }
            if (opt.warmup > 0) time_steps(model, tokens, targets, p.B, p.T, opt.warmup);
            p.ms_per_1k.push_back(time_steps(model, tokens, targets, p.B, p.T, opt.steps));
        }
        progress(fmt::format("round {}/{} of {} points done", round + 1, opt.repeats, points.size()));
    }
    for (const seq_len_point& p : points)
        progress(fmt::format("{:8} {:9} T {:5} B {:3}: {:8.2f} ms per 1k tokens (median of {})", p.variant,
                             to_string(p.form), p.T, p.B, p.median(), p.ms_per_1k.size()));
    return points;
}

double crossover_length(const std::vector<seq_len_point>& points, const std::string& variant) {
    const std::vector<int> lengths = lengths_of(points);
    double prev_gap = NAN;  // log(chunked / quadratic) at the previous length
    int prev_T = 0;
    for (const int T : lengths) {
        const seq_len_point* q = find_point(points, variant, parallel_form::quadratic, T);
        const seq_len_point* c = find_point(points, variant, parallel_form::chunked, T);
        if (!q || !c) continue;
        const double gap = std::log(c->median() / q->median());
        if (gap < 0) {
            if (std::isnan(prev_gap)) return 0;  // faster already at the shortest length
            // gap is linear in log T between the two lengths: where it crosses 0.
            const double f = prev_gap / (prev_gap - gap);
            return std::exp(std::log(double(prev_T)) + f * (std::log(double(T)) - std::log(double(prev_T))));
        }
        prev_gap = gap;
        prev_T = T;
    }
    return -1;
}

std::string seq_len_bench_csv(const std::vector<seq_len_point>& points) {
    std::string out =
        csv_line({"variant", "form", "seq_len", "batch", "ms_per_1k_tokens", "min", "max", "repeats", "auto_form"});
    for (const seq_len_point& p : points) {
        const auto [lo, hi] = std::minmax_element(p.ms_per_1k.begin(), p.ms_per_1k.end());
        out += csv_line({p.variant, to_string(p.form), std::to_string(p.T), std::to_string(p.B),
                         format_number(p.median()), format_number(*lo), format_number(*hi),
                         std::to_string(p.ms_per_1k.size()), to_string(p.auto_form)});
    }
    return out;
}

std::string seq_len_bench_report(const std::vector<seq_len_point>& points, const seq_len_bench_options& opt) {
    std::ostringstream s;
    const std::vector<int> lengths = lengths_of(points);
    const std::vector<std::string> variants = variants_of(points);
    s << fmt::format("Training time per token (forward + backward), ms per 1000 tokens, median of {} repeats;\n",
                     opt.repeats)
      << fmt::format("{} tokens per step (batch = {} / T), model {} layers, d_model {}, {} heads, chunk {}.\n",
                     opt.tokens, opt.tokens, opt.model.layers, opt.model.d_model, opt.model.heads, opt.chunk)
      << "A * marks the form attention.form auto picks.\n\n";
    s << fmt::format("{:>6} {:>4}", "T", "B");
    struct column {
        std::string variant;
        parallel_form form;
    };
    std::vector<column> columns;
    for (const std::string& v : variants)
        for (const parallel_form f : {parallel_form::quadratic, parallel_form::chunked})
            if (find_point(points, v, f, lengths.front())) columns.push_back({v, f});
    for (const column& c : columns) s << fmt::format(" {:>18}", c.variant + " " + to_string(c.form));
    s << "\n";
    for (const int T : lengths) {
        const seq_len_point* any = find_point(points, columns.front().variant, columns.front().form, T);
        s << fmt::format("{:>6} {:>4}", T, any ? any->B : 0);
        for (const column& c : columns) {
            const seq_len_point* p = find_point(points, c.variant, c.form, T);
            const bool chunkable = find_point(points, c.variant, parallel_form::chunked, T) != nullptr;
            s << fmt::format(" {:>17.2f}{}", p ? p->median() : NAN,
                             p && chunkable && p->auto_form == c.form ? "*" : " ");
        }
        s << "\n";
    }
    s << fmt::format("\nGrowth of the time per token from T {} to T {}:\n", lengths.front(), lengths.back());
    for (const column& c : columns) {
        const seq_len_point* a = find_point(points, c.variant, c.form, lengths.front());
        const seq_len_point* b = find_point(points, c.variant, c.form, lengths.back());
        if (a && b)
            s << fmt::format("  {:18} {:6.2f}x\n", c.variant + " " + to_string(c.form), b->median() / a->median());
    }
    s << "\nCrossover (chunked faster from T about):\n";
    for (const std::string& v : variants) {
        if (!find_point(points, v, parallel_form::chunked, lengths.front())) continue;
        const double x = crossover_length(points, v);
        if (x == 0)
            s << fmt::format("  {:8} below {} (chunked faster at every length)\n", v, lengths.front());
        else if (x < 0)
            s << fmt::format("  {:8} above {} (quadratic faster at every length)\n", v, lengths.back());
        else
            s << fmt::format("  {:8} {:.0f}\n", v, x);
    }
    return s.str();
}

}  // namespace attnlab
