// attnlab list SPEC: the runs a spec expands to, one id per line.
#include <iostream>

#include "commands.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

void add_list(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("list", "Print the ids of the runs a spec expands to, one per line");
    auto opts = std::make_shared<spec_options>();
    opts->add_to(*cmd);
    cmd->callback([opts, &chosen] {
        chosen = [opts] {
            for (const auto& run : opts->load().runs) std::cout << run.id << "\n";
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
