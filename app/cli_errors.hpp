// Command-line mistakes in attnlab's words. CLI11's own messages ("A
// subcommand is required", "Check recurent value in {...} FAILED") name
// neither the verb nor the fix; these name both, with a did-you-mean when a
// name is near a known one. main() prints them as one line
// "attnlab: error: <message>" and exits with code 2.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attnlab::cli {

// Looks at the verbs before CLI11 parses `args` (argv without the program):
// a missing or unknown verb (`attnlab rn`, `attnlab bench trian`), or an
// option before the verb, gives its message; nullopt when the verbs are fine.
std::optional<std::string> verb_error(const CLI::App& app, const std::vector<std::string>& args);

// The message for a failed parse of `app` (missing argument, unknown option,
// extra positional, bad value ...).
std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e);

}  // namespace attnlab::cli
