#include "attnlab/bench/generate_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include "attnlab/io/csv.hpp"
#include "attnlab/model/generator.hpp"

namespace attnlab {

generate_bench_options::generate_bench_options() {
    model.layers = 2;
    model.d_model = 64;
    model.heads = 4;
    model.mlp = mlp_kind::swiglu;
    model.position = position_kind::rope;
}

std::vector<generate_variant> default_generate_variants() {
    std::vector<generate_variant> v;
    attention_config exp;
    v.push_back({"exp-kv_cache", exp, state_layout::symmetric});
    for (int order = 1; order <= 4; ++order)
        for (auto layout : {state_layout::symmetric, state_layout::full}) {
            attention_config a;
            a.numerator = numerator_kind::taylor;
            a.order = order;
            v.push_back(
                {"taylor" + std::to_string(order) + (layout == state_layout::symmetric ? "-symmetric" : "-full"), a,
                 layout});
        }
    attention_config elu1;
    elu1.numerator = numerator_kind::elu1;
    v.push_back({"elu1", elu1, state_layout::symmetric});
    return v;
}

std::vector<int> generate_lengths(int max_len) {
    std::vector<int> out;
    for (int L = 64; L < max_len; L *= 2) out.push_back(L);
    out.push_back(max_len);
    return out;
}

std::vector<generate_point> run_generate_bench(const generate_bench_options& opt,
                                               const std::vector<generate_variant>& variants,
                                               const std::function<void(const std::string&)>& progress) {
    using clock = std::chrono::steady_clock;
    const std::vector<int> lengths = generate_lengths(opt.max_len);
    const int HS = opt.model.d_model / opt.model.heads;
    std::vector<generate_point> points;
    for (const auto& var : variants) {
        transformer<float> model(opt.model, var.attention, opt.vocab, opt.max_len);
        model.init_params(opt.seed);
        generator<float> gen(model, var.layout, opt.max_len);
        std::vector<double> us(opt.max_len);
        std::int32_t token = 1;
        const auto t_start = clock::now();
        for (int t = 0; t < opt.max_len; ++t) {
            const auto t0 = clock::now();
            const std::vector<float>& logits = gen.step(token);
            token = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            us[t] = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
        }
        for (int L : lengths) {
            const int w = std::min(opt.window, L / 2);
            std::vector<double> win(us.begin() + (L - w), us.begin() + L);
            std::nth_element(win.begin(), win.begin() + w / 2, win.end());
            points.push_back({var.name, state_floats(var.attention, HS, var.layout, L), L, win[w / 2]});
        }
        if (progress) {
            char line[200];
            std::snprintf(line, sizeof line, "%-20s %d tokens in %.1f s", var.name.c_str(), opt.max_len,
                          std::chrono::duration<double>(clock::now() - t_start).count());
            progress(line);
        }
    }
    return points;
}

std::string generate_bench_csv(const std::vector<generate_point>& points) {
    std::string out = csv_line({"variant", "length", "state_floats_per_head", "us_per_token", "tokens_per_s"});
    for (const auto& p : points)
        out += csv_line({p.variant, std::to_string(p.length), std::to_string(p.state_floats),
                         format_number(p.us_per_token), format_number(1e6 / p.us_per_token)});
    return out;
}

std::string generate_bench_report(const std::vector<generate_point>& points, const std::string& cache_variant) {
    std::vector<std::string> order;
    std::map<std::string, std::map<int, const generate_point*>> by;
    std::vector<int> lengths;
    for (const auto& p : points) {
        if (!by.count(p.variant)) order.push_back(p.variant);
        by[p.variant][p.length] = &p;
        if (std::find(lengths.begin(), lengths.end(), p.length) == lengths.end()) lengths.push_back(p.length);
    }
    std::ostringstream s;
    char buf[256];
    s << "per-token decode time (us, median of the steps just before each length)\n";
    std::snprintf(buf, sizeof buf, "%-20s %12s", "variant", "state/head");
    s << buf;
    for (int L : lengths) {
        std::snprintf(buf, sizeof buf, " %8d", L);
        s << buf;
    }
    s << "\n";
    for (const auto& v : order) {
        std::snprintf(buf, sizeof buf, "%-20s %12zu", v.c_str(), by[v].rbegin()->second->state_floats);
        s << buf;
        for (int L : lengths) {
            std::snprintf(buf, sizeof buf, " %8.1f", by[v][L]->us_per_token);
            s << buf;
        }
        s << "\n";
    }
    const int max_len = lengths.back();
    s << "\nflatness: time at " << max_len << " / time at 256 (1.00 = flat); crossover: first length where the\n"
      << "variant's step is cheaper than " << cache_variant << "'s\n";
    const auto& cache = by[cache_variant];
    for (const auto& v : order) {
        const auto& m = by[v];
        const double flat = m.count(256) ? m.at(max_len)->us_per_token / m.at(256)->us_per_token : 0;
        std::string cross = "none up to " + std::to_string(max_len);
        if (v != cache_variant && !cache.empty())
            for (int L : lengths)
                if (m.at(L)->us_per_token < cache.at(L)->us_per_token) {
                    cross = std::to_string(L);
                    break;
                }
        if (v == cache_variant) cross = "-";
        std::snprintf(buf, sizeof buf, "%-20s flatness %5.2f  crossover %s\n", v.c_str(), flat, cross.c_str());
        s << buf;
    }
    s << "\nsymmetric vs full layout (state floats per head; time per token at " << max_len << ")\n";
    for (int order = 1; order <= 12; ++order) {
        const std::string sym = "taylor" + std::to_string(order) + "-symmetric",
                          full = "taylor" + std::to_string(order) + "-full";
        if (!by.count(sym) || !by.count(full)) continue;
        const auto* a = by[sym].at(max_len);
        const auto* b = by[full].at(max_len);
        std::snprintf(buf, sizeof buf, "order %d: size %zu / %zu = %.3f, time %.1f / %.1f us = %.3f\n", order,
                      a->state_floats, b->state_floats, double(a->state_floats) / b->state_floats, a->us_per_token,
                      b->us_per_token, a->us_per_token / b->us_per_token);
        s << buf;
    }
    return s.str();
}

}  // namespace attnlab
