// attnlab eval RUN_DIR: score a finished run's checkpoint on its test set.
// Prints one line, `test loss L token_acc A seq_acc S`, with the numbers
// formatted as in metrics.csv, so they equal the run's last `test` row.
#include <iostream>
#include <memory>

#include "attnlab/io/csv.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_eval(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "eval", "Score a finished run's model.safetensors on its test set (regenerated from config.yaml)");
    auto run_dir = std::make_shared<std::string>();
    auto threads = std::make_shared<int>(0);
    cmd->add_option("RUN_DIR", *run_dir, "A run directory, results/<name>/runs/<run_id>")->required();
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen (0: all cores)")->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->callback([=, &chosen] {
        chosen = [=] {
            set_threads(*threads);
            const eval_metrics m = evaluate_run_dir(*run_dir);
            std::cout << "test loss " << format_number(m.loss) << " token_acc " << format_number(m.token_acc)
                      << " seq_acc " << format_number(m.seq_acc) << "\n";
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
