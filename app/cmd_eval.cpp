// attnlab eval RUN_DIR: score a finished run's checkpoint on its test set.
// Prints one line, `test loss L token_acc A seq_acc S`, with the numbers
// formatted as in metrics.csv, so they equal the run's last `test` row; for
// the text task `test loss L token_acc A bits_per_byte B` instead, since
// sequence accuracy does not apply to a language model.
// --set changes test-time keys (length generalisation: a copy run scored on
// longer sequences) and the attention variant when the checkpoint fits it
// unchanged (a truncated exp); --truncate sweeps the order into a CSV and
// --per-position writes the loss by position (analysis/: the work is there).
// --precision double scores any of them with the float checkpoint widened to
// double, so that float round-off (a high Taylor order at large negative
// scores) can be told from what the variant itself loses.
// The memory guard refuses, before anything is allocated, an evaluation
// that cannot fit (docs/outputs-policy.md).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

#include "attnlab/analysis/per_position.hpp"
#include "attnlab/analysis/truncation.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/train/inference_memory.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/spec/overrides.hpp"
#include "attnlab/util/error.hpp"
#include "cli_values.hpp"
#include "commands.hpp"

namespace attnlab::cli {

namespace {

// "test loss L token_acc A seq_acc S" (text: bits_per_byte B for seq_acc), as metrics.csv formats them.
std::string metrics_line(const eval_metrics& m, const run_config& c) {
    std::string line = "test loss " + format_number(m.loss) + " token_acc " + format_number(m.token_acc);
    if (c.task.kind == task_kind::text) return line + " bits_per_byte " + format_number(m.loss / std::log(2.0));
    return line + " seq_acc " + format_number(m.seq_acc);
}

std::string eval_memory_terms(const inference_memory& m) {
    auto b = [](std::size_t n) { return format_bytes(static_cast<double>(n)); };
    return "model, activations and data " + b(m.model) + (m.state > 0 ? ", recurrent states " + b(m.state) : "");
}

}  // namespace

void add_eval(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "eval", "Score a finished run's model.safetensors on its test set (regenerated from config.yaml)");
    auto run_dir = std::make_shared<std::string>();
    auto threads = std::make_shared<int>(0);
    auto overrides = std::make_shared<std::vector<std::string>>();
    auto max_memory = std::make_shared<std::string>();
    cmd->add_option("RUN_DIR", *run_dir, "A run directory, results/<name>/runs/<run_id>")->required();
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen (0: all cores)")
        ->capture_default_str()
        ->check(integer_in(0, 1024));
    auto form = std::make_shared<std::string>("parallel");
    auto layout = std::make_shared<std::string>("symmetric");
    cmd->add_option("--form", *form, "Attention form: parallel (quadratic) or recurrent (step by step with a state)")
        ->check(one_of({"parallel", "recurrent"}))
        ->capture_default_str()
        ->type_name("parallel|recurrent");
    cmd->add_option("--layout", *layout, "Taylor state layout of the recurrent form: symmetric or full")
        ->check(one_of({"symmetric", "full"}))
        ->capture_default_str()
        ->type_name("symmetric|full");
    const config_limits& limits = evaluation_limits();  // the keys eval may change, and how far
    cmd->add_option("--set", *overrides,
                    "Change a test-time key, or the variant when the checkpoint fits it (" + limits.why +
                        "; attention.order up to " + std::to_string(limits.max_order) +
                        "), e.g. --set task.test_max_len=64 to score longer copies, or --set "
                        "attention.numerator=taylor --set attention.order=4 to score an exp model cut to 4 orders")
        ->type_name("KEY=VALUE");
    auto truncate = std::make_shared<std::string>();
    auto truncate_with = std::make_shared<std::string>("taylor");
    auto out = std::make_shared<std::string>();
    auto per_position = std::make_shared<std::string>();
    auto* truncate_opt =
        cmd->add_option("--truncate", *truncate,
                        "Score the model as trained, then with its numerator replaced by --truncate-with at each "
                        "order, e.g. 1..16,24,32 (parallel form); writes --out")
            ->check(not_empty("a list of orders such as 1..16,24,32"))
            ->type_name("ORDERS");
    // The numerators that take an order, from the variant table.
    std::vector<std::string> with_order;
    for (int i = 0; i < numerator_count; ++i)
        if (numerator_rows()[i].takes_order) with_order.emplace_back(numerator_rows()[i].name);
    cmd->add_option("--truncate-with", *truncate_with,
                    "The numerator of --truncate, one that takes an order: taylor (default), power ...")
        ->check(one_of(with_order))
        ->type_name("taylor|power|...")
        ->needs(truncate_opt);
    auto* out_opt = cmd->add_option("--out", *out, "The CSV --truncate writes (one row per order)")
                        ->check(not_empty("a file name"))
                        ->type_name("FILE.csv")
                        ->needs(truncate_opt);
    truncate_opt->needs(out_opt);
    cmd->add_option("--per-position", *per_position,
                    "Also write the mean test loss at each position of the evaluation windows to this CSV")
        ->check(not_empty("a file name"))
        ->type_name("FILE.csv")
        ->excludes(truncate_opt);
    auto precision = std::make_shared<std::string>("float");
    cmd->add_option("--precision", *precision,
                    "The scalar the model is scored in: float, as trained, or double (the checkpoint widened; the "
                    "whole forward pass in double: twice the memory, 2 to 3 times the time)")
        ->check(one_of({"float", "double"}))
        ->capture_default_str()
        ->type_name("float|double");
    cmd->add_option("--max-memory", *max_memory,
                    "Memory the evaluation may take (e.g. 4G, 512M); default: what the machine has available")
        ->check(not_empty("a size such as 4G"))
        ->type_name("SIZE");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            const attention_form f = *form == "recurrent" ? attention_form::recurrent : attention_form::parallel;
            const state_layout l = *layout == "full" ? state_layout::full : state_layout::symmetric;
            const bool wide = *precision == "double";
            const eval_precision scalar = wide ? eval_precision::float64 : eval_precision::float32;
            // " in double" after a variant's name when it was scored so; nothing for float, as before.
            const std::string in_scalar = wide ? std::string(" in ") + to_string(scalar) : std::string();
            const memory_limit limit =
                resolve_memory_limit(max_memory->empty() ? 0 : parse_size(*max_memory, "--max-memory"));
            const run_config trained = read_run_dir_config(*run_dir);
            // What the outputs may not replace: the run's own files and the text it was trained on.
            std::vector<std::string> inputs = run_own_files(*run_dir);
            if (trained.task.kind == task_kind::text) inputs.push_back(trained.task.path);
            // Checked before anything is computed, and again when written.
            if (!out->empty()) check_output_file(*out, "--out", inputs);
            if (!per_position->empty()) check_output_file(*per_position, "--per-position", inputs);
            const run_config test = evaluated_config(trained, *overrides);
            const bool changed = variant_label(test.attention) != variant_label(trained.attention);
            std::vector<int> orders;
            if (!truncate->empty()) {
                if (changed) throw config_error("--truncate: give the variant with --truncate-with, not --set");
                if (f == attention_form::recurrent)
                    throw config_error("--truncate: sweeps score the parallel form (drop --form recurrent)");
                orders = parse_order_list(*truncate, "--truncate");
            }
            // Sized for the costliest variant scored (the highest order of a sweep).
            run_config sized = test;
            if (!orders.empty()) {
                sized.attention.numerator = *numerator_from_name(*truncate_with);
                sized.attention.order = orders.back();
            }
            set_threads(*threads);
            const int cores = static_cast<int>(std::thread::hardware_concurrency());
            const inference_memory need = estimate_eval_memory(sized, *threads > 0 ? *threads : cores, f, l,
                                                               wide ? sizeof(double) : sizeof(float));
            require_memory(
                "eval of " + *run_dir + " (" + *form + " form)", need.total(), eval_memory_terms(need), limit,
                f == attention_form::recurrent
                    ? (l == state_layout::full ? "Use --form parallel or --layout symmetric, or set --max-memory"
                                               : "Use --form parallel, or set --max-memory")
                    : "Lower task.test_examples or the test lengths with --set, or set --max-memory");
            if (!orders.empty()) {
                const auto progress = [&](const truncation_row& r) {
                    std::cout << variant_label(r.attention) << in_scalar << ": " << metrics_line(r.m, test)
                              << std::endl;
                };
                const numerator_kind with = sized.attention.numerator;
                const auto rows = wide ? truncation_sweep<double>(*run_dir, trained, test, with, orders, progress)
                                       : truncation_sweep<float>(*run_dir, trained, test, with, orders, progress);
                write_output_file(*out, truncation_csv(trained, rows), "--out", inputs);
                std::cout << "wrote " << *out << "\n";
                return exit_ok;
            }
            const eval_metrics m = wide ? evaluate_run_dir<double>(*run_dir, trained, test, f, l)
                                        : evaluate_run_dir<float>(*run_dir, trained, test, f, l);
            std::cout << metrics_line(m, test);
            if (changed)
                std::cout << " (evaluated as " << variant_label(test.attention) << in_scalar << ", trained as "
                          << variant_label(trained.attention) << ")";
            else if (wide)
                std::cout << " (evaluated" << in_scalar << ")";
            std::cout << "\n";
            if (!per_position->empty()) {
                const auto rows = wide ? per_position_run_dir<double>(*run_dir, trained, test, f, l)
                                       : per_position_run_dir<float>(*run_dir, trained, test, f, l);
                write_output_file(*per_position, per_position_csv(trained, test, rows, scalar), "--per-position",
                                  inputs);
                std::cout << "wrote " << *per_position << "\n";
            }
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
