// attnlab eval RUN_DIR: score a finished run's checkpoint on its test set.
// Prints one line, `test loss L token_acc A seq_acc S`, with the numbers
// formatted as in metrics.csv, so they equal the run's last `test` row.
#include <iostream>
#include <map>
#include <memory>

#include "attnlab/io/csv.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/run/run_dir.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_eval(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "eval", "Score a finished run's model.safetensors on its test set (regenerated from config.yaml)");
    auto run_dir = std::make_shared<std::string>();
    auto threads = std::make_shared<int>(0);
    cmd->add_option("RUN_DIR", *run_dir, "A run directory, results/<name>/runs/<run_id>")->required();
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen (0: all cores)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1024));
    auto form = std::make_shared<attention_form>(attention_form::parallel);
    auto layout = std::make_shared<state_layout>(state_layout::symmetric);
    cmd->add_option("--form", *form, "Attention form: parallel (quadratic) or recurrent (step by step with a state)")
        ->transform(
            CLI::CheckedTransformer(std::map<std::string, attention_form>{{"parallel", attention_form::parallel},
                                                                          {"recurrent", attention_form::recurrent}})
                .description(""))
        ->default_str("parallel")
        ->type_name("parallel|recurrent");
    cmd->add_option("--layout", *layout, "Taylor state layout of the recurrent form: symmetric or full")
        ->transform(CLI::CheckedTransformer(std::map<std::string, state_layout>{{"symmetric", state_layout::symmetric},
                                                                                {"full", state_layout::full}})
                        .description(""))
        ->default_str("symmetric")
        ->type_name("symmetric|full");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            set_threads(*threads);
            const eval_metrics m = evaluate_run_dir(*run_dir, *form, *layout);
            std::cout << "test loss " << format_number(m.loss) << " token_acc " << format_number(m.token_acc)
                      << " seq_acc " << format_number(m.seq_acc) << "\n";
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
