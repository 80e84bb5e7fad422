// attnlab validate SPEC: check a spec without running anything.
#include <iostream>

#include "commands.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

void add_validate(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("validate", "Check a spec (every key, every run) without running it");
    auto opts = std::make_shared<spec_options>();
    opts->add_to(*cmd);
    cmd->callback([opts, &chosen] {
        chosen = [opts] {
            const experiment_spec spec = opts->load();
            std::cout << opts->path << ": ok, " << spec.runs.size() << " run" << (spec.runs.size() == 1 ? "" : "s")
                      << " (" << spec.name << ")\n";
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
