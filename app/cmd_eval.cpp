// attnlab eval RUN_DIR: score a finished run's checkpoint on its test set.
// Prints one line, `test loss L token_acc A seq_acc S`, with the numbers
// formatted as in metrics.csv, so they equal the run's last `test` row; for
// the text task `test loss L token_acc A bits_per_byte B` instead, since
// sequence accuracy does not apply to a language model.
// --set changes test-time keys only (length generalisation: a copy run
// scored on longer sequences); the memory guard refuses, before anything is
// allocated, an evaluation that cannot fit (docs/outputs-policy.md).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

#include "attnlab/io/csv.hpp"
#include "attnlab/train/inference_memory.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/spec/did_you_mean.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/util/error.hpp"
#include "cli_values.hpp"
#include "commands.hpp"

namespace attnlab::cli {

namespace {

// The keys eval --set may change: they choose the test set, not the model.
const std::vector<std::string> test_time_keys = {"task.test_examples", "task.test_min_len", "task.test_max_len"};

// The run's config with `overrides` ("key=value") applied through the spec
// loader, so values are checked and refused in its words ("--set: ...").
run_config with_test_overrides(const run_config& trained, const std::vector<std::string>& overrides,
                               const std::string& label) {
    if (overrides.empty()) return trained;
    for (const std::string& o : overrides) {
        const std::string key = o.substr(0, o.find('='));
        if (std::find(test_time_keys.begin(), test_time_keys.end(), key) == test_time_keys.end())
            throw config_error("--set: " + key + ": not a test-time key" + did_you_mean(key, test_time_keys) +
                               " (eval changes only " + either_of(test_time_keys) +
                               "; other keys would change the trained model)");
    }
    std::string yaml = "name: eval\nbase:\n";
    const std::string config = run_config_to_yaml(trained);
    for (std::size_t at = 0; at < config.size();) {
        const std::size_t end = std::min(config.find('\n', at), config.size());
        yaml += "  " + config.substr(at, end - at) + "\n";
        at = end + 1;
    }
    return parse_spec(yaml, label, overrides).base;
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
    cmd->add_option("--set", *overrides,
                    "Change a test-time key (task.test_examples, task.test_min_len, task.test_max_len), e.g. --set "
                    "task.test_max_len=64 to score longer copies")
        ->type_name("KEY=VALUE");
    cmd->add_option("--max-memory", *max_memory,
                    "Memory the evaluation may take (e.g. 4G, 512M); default: what the machine has available")
        ->type_name("SIZE");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            const attention_form f = *form == "recurrent" ? attention_form::recurrent : attention_form::parallel;
            const state_layout l = *layout == "full" ? state_layout::full : state_layout::symmetric;
            const memory_limit limit =
                resolve_memory_limit(max_memory->empty() ? 0 : parse_size(*max_memory, "--max-memory"));
            const run_config trained = read_run_dir_config(*run_dir);
            const run_config test = with_test_overrides(trained, *overrides, *run_dir + "/config.yaml");
            set_threads(*threads);
            const int cores = static_cast<int>(std::thread::hardware_concurrency());
            const inference_memory need = estimate_eval_memory(test, *threads > 0 ? *threads : cores, f, l);
            require_memory(
                "eval of " + *run_dir + " (" + *form + " form)", need.total(), eval_memory_terms(need), limit,
                f == attention_form::recurrent
                    ? (l == state_layout::full ? "Use --form parallel or --layout symmetric, or set --max-memory"
                                               : "Use --form parallel, or set --max-memory")
                    : "Lower task.test_examples or the test lengths with --set, or set --max-memory");
            const eval_metrics m = evaluate_run_dir(*run_dir, trained, test, f, l);
            std::cout << "test loss " << format_number(m.loss) << " token_acc " << format_number(m.token_acc);
            if (test.task.kind == task_kind::text)
                std::cout << " bits_per_byte " << format_number(m.loss / std::log(2.0)) << "\n";
            else
                std::cout << " seq_acc " << format_number(m.seq_acc) << "\n";
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
