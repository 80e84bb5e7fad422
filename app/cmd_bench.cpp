// attnlab bench generate: per-token time of autoregressive decoding as the
// sequence grows, exp with its key/value cache against recurrent variants.
// Writes DIR/generate.csv and prints the report (see generate_bench.hpp);
// bench/plot_generate.py draws the plot.
#include <algorithm>
#include <iostream>

#include <spdlog/spdlog.h>

#include "attnlab/bench/generate_bench.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/util/error.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_bench(CLI::App& app, action& chosen) {
    auto* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    auto* gen = bench->add_subcommand("generate", "Per-token time of generation as the sequence grows: KV cache vs recurrent states");
    auto opt = std::make_shared<generate_bench_options>();
    auto out = std::make_shared<std::string>("results/bench");
    auto only = std::make_shared<std::vector<std::string>>();
    gen->add_option("--max-len", opt->max_len, "Tokens to decode per variant")->capture_default_str()->check(CLI::Range(128, 1 << 20));
    gen->add_option("--d-model", opt->model.d_model, "Model width")->capture_default_str()->check(CLI::Range(2, 4096));
    gen->add_option("--heads", opt->model.heads, "Heads")->capture_default_str()->check(CLI::Range(1, 256));
    gen->add_option("--layers", opt->model.layers, "Layers")->capture_default_str()->check(CLI::Range(1, 64));
    gen->add_option("--variant", *only, "Only these variants (repeatable), e.g. exp-kv_cache, taylor2-symmetric, elu1");
    gen->add_option("--out", *out, "Directory for generate.csv")->capture_default_str();
    gen->callback([=, &chosen] {
        chosen = [=] {
            if (opt->model.d_model % opt->model.heads != 0 || (opt->model.d_model / opt->model.heads) % 2 != 0)
                throw config_error("--d-model must be a multiple of --heads with an even head size");
            std::vector<generate_variant> variants;
            for (const auto& v : default_generate_variants())
                if (only->empty() || std::find(only->begin(), only->end(), v.name) != only->end()) variants.push_back(v);
            if (variants.empty()) throw config_error("--variant: no such variant");
            set_threads(1);  // batch 1 decoding: one core, no thread hand-offs
            spdlog::info("bench generate: {} variants, {} tokens each, d_model {}, {} heads, {} layers", variants.size(),
                         opt->max_len, opt->model.d_model, opt->model.heads, opt->model.layers);
            const auto points = run_generate_bench(*opt, variants, [](const std::string& s) { spdlog::info("{}", s); });
            make_dirs(*out);
            write_file_atomic(*out + "/generate.csv", generate_bench_csv(points));
            std::cout << generate_bench_report(points, variants.front().name);
            spdlog::info("wrote {}/generate.csv (plot: /usr/bin/python3 bench/plot_generate.py {}/generate.csv)", *out, *out);
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
