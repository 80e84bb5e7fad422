// attnlab list SPEC: the runs a spec expands to, one id per line.
// --json: the resolved runs for another trainer (python -m attnlab.train,
// docs/engines.md): each run's id, its config.yaml text exactly as attnlab run
// writes it, its vocabulary, the rows of its learned position table and its
// parameter count, so that the spec is parsed and validated here only.
// --init-dir DIR: each run's initial weights (the trainer's initialisation
// from the run's seed) as DIR/<run_id>.safetensors, the start both trainers
// share. --sweep-dir OUT: OUT/<name>/spec.yaml, overrides.yaml and
// spec_folder.txt as attnlab run writes them, so `attnlab summarize OUT/<name>`
// reads the folder another trainer fills.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "attnlab/io/files.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "cli_values.hpp"
#include "commands.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

namespace {

// The model of a run with its initial parameters. Sized for one sequence: the
// parameters do not depend on the batch, and a paper-scale run's activations
// for a whole batch would take gigabytes.
transformer<float> initial_model(const run_config& cfg) {
    run_config one = cfg;
    one.train.batch = 1;
    transformer<float> model = make_model<float>(one);
    model.init_params(static_cast<std::uint64_t>(cfg.seed));
    return model;
}

}  // namespace

void add_list(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("list", "Print the ids of the runs a spec expands to, one per line");
    auto opts = std::make_shared<spec_options>();
    auto json = std::make_shared<bool>(false);
    auto init_dir = std::make_shared<std::string>();
    auto sweep_dir = std::make_shared<std::string>();
    opts->add_to(*cmd);
    cmd->add_flag("--json", *json,
                  "Print the resolved runs as JSON: id, config.yaml text, vocab, max_positions, params (for "
                  "python -m attnlab.train)");
    cmd->add_option("--init-dir", *init_dir, "Write each run's initial weights to DIR/<run_id>.safetensors")
        ->check(not_empty("a directory"))
        ->type_name("DIR");
    cmd->add_option("--sweep-dir", *sweep_dir,
                    "Write OUT/<name>/spec.yaml, overrides.yaml and spec_folder.txt as attnlab run does")
        ->check(not_empty("a directory"))
        ->type_name("OUT");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            const experiment_spec spec = opts->load();
            if (!sweep_dir->empty()) {
                const std::string dir = *sweep_dir + "/" + spec.name;
                make_dirs(dir);
                write_spec_as_run(dir, spec);
            }
            if (!init_dir->empty()) make_dirs(*init_dir);
            nlohmann::ordered_json out;
            out["name"] = spec.name;
            out["runs"] = nlohmann::ordered_json::array();
            for (const auto& run : spec.runs) {
                if (!*json && init_dir->empty()) {
                    std::cout << run.id << "\n";
                    continue;
                }
                const transformer<float> model = initial_model(run.config);
                if (!init_dir->empty()) checkpoint_save(*init_dir + "/" + run.id + ".safetensors", model, nullptr);
                if (!*json) {
                    std::cout << run.id << "\n";
                    continue;
                }
                nlohmann::ordered_json r;
                r["id"] = run.id;
                r["config_yaml"] = run_config_to_yaml(run.config);
                r["vocab"] = model.vocab();
                r["max_positions"] = model.max_T();
                r["params"] = model.params.size();
                // The reference losses result.yaml records (text: unigram and bigram byte models).
                if (run.config.task.kind == task_kind::text) {
                    const auto base =
                        make_task(run.config.task, static_cast<std::uint64_t>(run.config.seed))->baselines();
                    if (base)
                        r["baselines"] = {{"unigram_test_loss", base->unigram}, {"bigram_test_loss", base->bigram}};
                }
                out["runs"].push_back(r);
            }
            if (*json) std::cout << out.dump(1) << "\n";
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
