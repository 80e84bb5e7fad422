// attnlab bench generate: per-token time of autoregressive decoding as the
// sequence grows, exp with its key/value cache against recurrent variants.
// Writes DIR/generate.csv and prints the report (see generate_bench.hpp);
// scripts/plot_generate.py draws the plot.
// attnlab bench train: training throughput against the PyTorch reference,
// GFLOP/s against a matmul probe, peak memory and time per op
// (train_bench.hpp); with --seq-lens, training time per token across
// sequence lengths in the quadratic and the chunked form (seq_len_bench.hpp),
// written to DIR/seq_len.{csv,txt} (plot: scripts/plot_seq_len.py).
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <spdlog/spdlog.h>

#include "attnlab/bench/generate_bench.hpp"
#include "attnlab/bench/products_bench.hpp"
#include "attnlab/bench/seq_len_bench.hpp"
#include "attnlab/bench/train_bench.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/ops/peak_fma.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/model/transformer.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/train/inference_memory.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/util/error.hpp"
#include "cli_values.hpp"
#include "commands.hpp"
#include "data_files.hpp"

namespace attnlab::cli {

namespace {

void add_bench_train(CLI::App& bench, action& chosen) {
    auto* cmd = bench.add_subcommand("train",
                                     "Training throughput of attnlab and the PyTorch reference side by side, "
                                     "GFLOP/s, peak memory, time per op");
    auto spec = std::make_shared<std::string>();
    auto config = std::make_shared<std::string>();
    auto overrides = std::make_shared<std::vector<std::string>>();
    auto opt = std::make_shared<train_bench_options>();
    opt->torch_script = data_file("reference/bench_torch.py");
    auto no_torch = std::make_shared<bool>(false);
    cmd->add_option("SPEC", *spec, "Spec whose first run's model, attention, task and batch are timed")
        ->type_name("SPEC");
    cmd->add_option("--config", *config,
                    "A built-in configuration instead of a spec: quickstart, lm (bytes of data/kjv.txt), larger or "
                    "long (T 1024)")
        ->check(one_of(bench_config_names()))
        ->type_name("NAME");
    cmd->add_option("--set", *overrides, "Override a dotted key, e.g. --set attention.numerator=taylor")
        ->type_name("KEY=VALUE");
    cmd->add_option("--threads", opt->threads, "Thread settings to time, each side")
        ->capture_default_str()
        ->check(integer_in(1, 256));
    cmd->add_option("--steps", opt->steps, "Timed steps per repeat")
        ->capture_default_str()
        ->check(integer_in(1, 100000));
    cmd->add_option("--repeats", opt->repeats, "Repeats per round, side and thread setting")
        ->capture_default_str()
        ->check(integer_in(1, 1000));
    cmd->add_option("--rounds", opt->rounds, "Alternating rounds of both sides")
        ->capture_default_str()
        ->check(integer_in(1, 100));
    cmd->add_option("--warmup", opt->warmup, "Untimed steps before each side's repeats")
        ->capture_default_str()
        ->check(integer_in(0, 1000));
    cmd->add_flag("--no-torch", *no_torch, "Time attnlab only");
    auto max_memory = std::make_shared<std::string>();
    cmd->add_option("--max-memory", *max_memory,
                    "Memory attnlab's side may take (e.g. 4G, 512M); default: what the machine has available")
        ->check(not_empty("a size such as 4G"))
        ->type_name("SIZE");
    cmd->add_option("--python", opt->python, "Python with torch and numpy")->capture_default_str();
    cmd->add_option("--torch-script", opt->torch_script, "The PyTorch side")->capture_default_str();
    auto seq = std::make_shared<seq_len_bench_options>();
    seq->seq_lens.clear();
    auto seq_out = std::make_shared<std::string>("results/bench");
    cmd->add_option("--seq-lens", seq->seq_lens,
                    "Instead: time per token at these sequence lengths (e.g. 256,512,1024,2048,4096), exp and "
                    "elu1, taylor 2, power 2 in the quadratic and the chunked form, on the first --threads setting")
        ->delimiter(',')
        ->check(integer_in(2, 1 << 20));
    cmd->add_option("--tokens", seq->tokens, "--seq-lens: tokens per step (the batch is tokens / T)")
        ->capture_default_str()
        ->check(integer_in(1, 1 << 24));
    cmd->add_option("--chunk", seq->chunk, "--seq-lens: attention.chunk of the chunked form")
        ->capture_default_str()
        ->check(integer_in(1, 1 << 20));
    cmd->add_option("--out", *seq_out, "--seq-lens: directory for seq_len.csv and seq_len.txt")
        ->capture_default_str()
        ->check(not_empty("a directory"));
    cmd->callback([=, &chosen] {
        chosen = [=] {
            if (spec->empty() == config->empty())
                throw config_error("bench train: give a SPEC or --config quickstart|lm|larger|long (one of them)");
            if (!seq->seq_lens.empty()) {
                const experiment_spec e =
                    spec->empty() ? parse_spec(bench_config_yaml(*config), "<config " + *config + ">", *overrides)
                                  : load_spec(*spec, *overrides);
                seq_len_bench_options o = *seq;
                o.model = e.runs.front().config.model;
                o.repeats = opt->repeats;
                o.warmup = std::max(1, std::min(opt->warmup, 1));
                set_threads(opt->threads.front());
                spdlog::info(
                    "bench train --seq-lens: model {} layers, d_model {}, {} heads; {} tokens per step, "
                    "{} thread{}",
                    o.model.layers, o.model.d_model, o.model.heads, o.tokens, opt->threads.front(),
                    opt->threads.front() == 1 ? "" : "s");
                const auto points = run_seq_len_bench(o, default_seq_len_variants(),
                                                      [](const std::string& s) { spdlog::info("{}", s); });
                const std::string report = seq_len_bench_report(points, o);
                make_dirs(*seq_out);
                write_file_atomic(*seq_out + "/seq_len.csv", seq_len_bench_csv(points));
                write_file_atomic(*seq_out + "/seq_len.txt", report);
                std::cout << report;
                spdlog::info(
                    "wrote {0}/seq_len.csv and seq_len.txt (plot: /usr/bin/python3 scripts/plot_seq_len.py "
                    "{0}/seq_len.csv)",
                    *seq_out);
                return exit_ok;
            }
            train_bench_options o = *opt;
            const memory_limit limit =
                resolve_memory_limit(max_memory->empty() ? 0 : parse_size(*max_memory, "--max-memory"));
            const experiment_spec e =
                spec->empty() ? parse_spec(bench_config_yaml(*config), "<config " + *config + ">", *overrides)
                              : load_spec(*spec, *overrides);
            o.config = e.runs.front().config;
            o.label = spec->empty() ? *config : *spec;
            if (e.runs.size() > 1)
                spdlog::info("bench train: timing the first of {} runs ({})", e.runs.size(), e.runs.front().id);
            // Training at the largest thread setting: the most attnlab's side allocates at once.
            const int threads = *std::max_element(o.threads.begin(), o.threads.end());
            const memory_estimate need = estimate_training_memory(o.config, threads);
            require_memory("bench train of " + e.runs.front().id, need.total(),
                           fmt::format("training at {} thread{}", threads, threads == 1 ? "" : "s"), limit,
                           "Lower train.batch, the sequence length or the model with --set, or set --max-memory");
            o.torch = !*no_torch;
            if (o.torch) put_python_package_on_path();  // bench_torch.py imports attnlab
            std::string dir = (std::filesystem::temp_directory_path() / "attnlab-bench-XXXXXX").string();
            if (!mkdtemp(dir.data())) throw std::runtime_error("cannot create a temporary directory in " + dir);
            o.work_dir = dir;
            train_bench_result result;
            try {
                result = run_train_bench(o, [](const std::string& line) { spdlog::info("{}", line); });
            } catch (...) {
                std::filesystem::remove_all(dir);
                throw;
            }
            std::filesystem::remove_all(dir);
            std::cout << format_train_bench(result);
            return exit_ok;
        };
    });
}

void add_bench_products(CLI::App& bench, action& chosen) {
    auto* cmd = bench.add_subcommand("products",
                                     "The model's matrix products one by one: attnlab's packed kernel against the "
                                     "BLAS library, GFLOP/s and % of the peak FMA bound");
    auto spec = std::make_shared<std::string>();
    auto config = std::make_shared<std::string>("larger");
    auto overrides = std::make_shared<std::vector<std::string>>();
    auto rounds = std::make_shared<int>(5);
    auto seconds = std::make_shared<double>(0.05);
    cmd->add_option("SPEC", *spec, "Spec whose first run's model is timed (instead of --config)")->type_name("SPEC");
    cmd->add_option("--config", *config, "A built-in configuration: quickstart, lm, larger or long")
        ->capture_default_str()
        ->check(one_of(bench_config_names()))
        ->type_name("NAME");
    cmd->add_option("--set", *overrides, "Override a dotted key, e.g. --set model.d_model=512")->type_name("KEY=VALUE");
    cmd->add_option("--rounds", *rounds, "Alternating rounds of the two kernels per product")
        ->capture_default_str()
        ->check(integer_in(1, 100));
    cmd->add_option("--seconds", *seconds, "Time per kernel, product and round")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 10.0));
    cmd->callback([=, &chosen] {
        chosen = [=] {
            const experiment_spec e =
                spec->empty() ? parse_spec(bench_config_yaml(*config), "<config " + *config + ">", *overrides)
                              : load_spec(*spec, *overrides);
            const run_config& c = e.runs.front().config;
            const int T = c.task.seq_len, vocab = make_task(c.task, 0)->vocab_size();
            // The rows the model multiplies at once: one micro-batch of whole sequences.
            const int rows = transformer<float>::micro_batch_sequences(T) * T;
            set_threads(1);
            const peak_fma_rate peak = measure_peak_fma(1);
            const auto shapes = model_product_shapes(c.model, vocab, rows);
            spdlog::info("bench products: {} products of d_model {} at {} rows, {} rounds", shapes.size(),
                         c.model.d_model, rows, *rounds);
            const auto timings = run_products_bench(shapes, *rounds, *seconds);
            std::cout << products_bench_report(timings, peak, blas_core_name(), spec->empty() ? *config : *spec);
            return exit_ok;
        };
    });
}

}  // namespace

void add_bench(CLI::App& app, action& chosen) {
    auto* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    auto* gen = bench->add_subcommand(
        "generate", "Per-token time of generation as the sequence grows: KV cache vs recurrent states");
    auto opt = std::make_shared<generate_bench_options>();
    auto out = std::make_shared<std::string>("results/bench");
    auto only = std::make_shared<std::vector<std::string>>();
    auto max_memory = std::make_shared<std::string>();
    gen->add_option("--max-len", opt->max_len, "Tokens to decode per variant")
        ->capture_default_str()
        ->check(integer_in(128, 1 << 20));
    gen->add_option("--d-model", opt->model.d_model, "Model width")->capture_default_str()->check(integer_in(2, 4096));
    gen->add_option("--heads", opt->model.heads, "Heads")->capture_default_str()->check(integer_in(1, 256));
    gen->add_option("--layers", opt->model.layers, "Layers")->capture_default_str()->check(integer_in(1, 64));
    std::vector<std::string> variant_names;
    for (const auto& v : default_generate_variants()) variant_names.push_back(v.name);
    gen->add_option("--variant", *only, "Only these variants (repeatable), e.g. exp-kv_cache, taylor2-symmetric, elu1")
        ->check(one_of(variant_names));
    gen->add_option("--max-memory", *max_memory,
                    "Memory one variant may take (e.g. 4G, 512M); default: what the machine has available")
        ->check(not_empty("a size such as 4G"))
        ->type_name("SIZE");
    gen->add_option("--out", *out, "Directory for generate.csv")
        ->capture_default_str()
        ->check(not_empty("a directory"));
    gen->callback([=, &chosen] {
        chosen = [=] {
            if (opt->model.d_model % opt->model.heads != 0 || (opt->model.d_model / opt->model.heads) % 2 != 0)
                throw config_error("--d-model must be a multiple of --heads with an even head size");
            std::vector<generate_variant> variants;
            for (const auto& v : default_generate_variants())
                if (only->empty() || std::find(only->begin(), only->end(), v.name) != only->end())
                    variants.push_back(v);
            if (variants.empty()) throw config_error("--variant: no such variant");
            // The variants run one after another: the largest must fit.
            const memory_limit limit =
                resolve_memory_limit(max_memory->empty() ? 0 : parse_size(*max_memory, "--max-memory"));
            for (const auto& v : variants) {
                const inference_memory need =
                    estimate_generate_memory(opt->model, v.attention, opt->vocab, opt->max_len, v.layout);
                require_memory("bench generate of " + v.name, need.total(),
                               fmt::format("model {}, states of {} tokens {}", format_bytes(double(need.model)),
                                           opt->max_len, format_bytes(double(need.state))),
                               limit, "Lower --max-len, --d-model or --layers, or set --max-memory");
            }
            set_threads(1);  // batch 1 decoding: one core, no thread hand-offs
            spdlog::info("bench generate: {} variants, {} tokens each, d_model {}, {} heads, {} layers",
                         variants.size(), opt->max_len, opt->model.d_model, opt->model.heads, opt->model.layers);
            const auto points = run_generate_bench(*opt, variants, [](const std::string& s) { spdlog::info("{}", s); });
            make_dirs(*out);
            write_file_atomic(*out + "/generate.csv", generate_bench_csv(points));
            std::cout << generate_bench_report(points, variants.front().name);
            spdlog::info("wrote {}/generate.csv (plot: /usr/bin/python3 scripts/plot_generate.py {}/generate.csv)",
                         *out, *out);
            return exit_ok;
        };
    });
    add_bench_train(*bench, chosen);
    add_bench_products(*bench, chosen);
}

}  // namespace attnlab::cli
