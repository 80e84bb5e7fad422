// The subcommands of the attnlab CLI, one file each (cmd_<verb>.cpp). Each
// add_<verb> registers its options on the app and sets `action` to the code
// that runs when that verb was chosen; the action returns the exit code.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace attnlab::cli {

using action = std::function<int()>;

void add_run(CLI::App& app, action& chosen);
void add_validate(CLI::App& app, action& chosen);
void add_list(CLI::App& app, action& chosen);
void add_state(CLI::App& app, action& chosen);
void add_bench(CLI::App& app, action& chosen);
void add_eval(CLI::App& app, action& chosen);
void add_summarize(CLI::App& app, action& chosen);
void add_probe(CLI::App& app, action& chosen);
void add_generate(CLI::App& app, action& chosen);
void add_variants(CLI::App& app, action& chosen);

// Exit codes: success, any failure other than bad input, bad input.
inline constexpr int exit_ok = 0, exit_failure = 1, exit_bad_input = 2, exit_interrupted = 130;

}  // namespace attnlab::cli
