// attnlab: thin entry point. Parses the command line, sets up logging, runs
// the chosen subcommand and maps typed errors to exit codes (0 ok, 2 bad
// input, 1 anything else) with one line on stderr.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "attnlab/util/error.hpp"
#include "cli_errors.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
    using namespace attnlab;
    CLI::App app{"attnlab: train small attention variants on synthetic tasks from YAML experiment specs"};
    app.set_version_flag("--version", std::string("attnlab ") + ATTNLAB_VERSION);
    app.require_subcommand(1);
    cli::action chosen;
    cli::add_run(app, chosen);
    cli::add_validate(app, chosen);
    cli::add_list(app, chosen);
    cli::add_state(app, chosen);
    cli::add_bench(app, chosen);
    cli::add_eval(app, chosen);
    cli::add_summarize(app, chosen);
    cli::add_probe(app, chosen);
    cli::add_generate(app, chosen);
    cli::add_variants(app, chosen);

    // Progress goes to stderr so that stdout carries only results (list, validate).
    auto logger = spdlog::stderr_color_mt("attnlab");
    logger->set_pattern("%H:%M:%S %^%l%$ %v");
    spdlog::set_default_logger(logger);

    if (const auto message = cli::verb_error(app, std::vector<std::string>(argv + 1, argv + argc))) {
        std::fprintf(stderr, "attnlab: error: %s\n", message->c_str());
        return cli::exit_bad_input;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        std::fprintf(stderr, "attnlab: error: %s\n", cli::describe_parse_error(app, e).c_str());
        return cli::exit_bad_input;
    }
    try {
        return chosen();
    } catch (const config_error& e) {
        std::fprintf(stderr, "attnlab: error: %s\n", e.what());
        return cli::exit_bad_input;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnlab: error: %s\n", e.what());
        return cli::exit_failure;
    }
}
