// attnlab: thin entry point. Parses the command line, sets up logging, runs
// the chosen subcommand and maps typed errors to exit codes (0 ok, 2 bad
// input, 1 anything else) with one line on stderr. Standard output is
// flushed and closed before the exit, and a failed write (a full disk,
// /dev/full) is an error too, so that no command reports success for
// results that were never written.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "attnlab/util/error.hpp"
#include "cli_errors.hpp"
#include "commands.hpp"

namespace {

// `code`, or 1 with "attnlab: error: writing standard output: <cause>" when
// anything written to stdout (by std::cout or stdio) failed, now or earlier,
// or stdout cannot be flushed or closed.
int finish_stdout(int code) {
    errno = 0;
    std::cout.flush();  // std::cout writes through stdout's buffer: a failure shows in errno here
    int err = std::cout ? 0 : errno;
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (err == 0) err = errno;
    bool failed = !flushed || std::ferror(stdout) || !std::cout;
    errno = 0;
    if (std::fclose(stdout) != 0 && errno != EBADF) {  // EBADF: stdout was closed and nothing was written
        failed = true;
        if (err == 0) err = errno;
    }
    if (!failed) return code;
    std::fprintf(stderr, "attnlab: error: writing standard output: %s\n",
                 err != 0 ? std::strerror(err) : "an earlier write failed");
    return code == 0 ? attnlab::cli::exit_failure : code;
}

}  // namespace

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
        if (e.get_exit_code() == 0) return finish_stdout(app.exit(e));  // --help, --version
        std::fprintf(stderr, "attnlab: error: %s\n", cli::describe_parse_error(app, e).c_str());
        return cli::exit_bad_input;
    }
    try {
        return finish_stdout(chosen());
    } catch (const config_error& e) {
        std::fprintf(stderr, "attnlab: error: %s\n", e.what());
        return cli::exit_bad_input;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnlab: error: %s\n", e.what());
        return cli::exit_failure;
    }
}
