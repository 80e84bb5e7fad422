// attnlab probe RUN_DIR: which Taylor orders of exp(s) a finished run's
// attention scores use (analysis/probe.hpp, docs/probe.md). Writes probe.csv and
// probe_heads.csv (atomically, into the run directory or --out), prints the
// dominant order of every layer and head, and draws the figure with
// scripts/plot_probe.py when a python3 with matplotlib is there (otherwise
// says "figures skipped" and why; the CSV files are the result).
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include <spdlog/spdlog.h>

#include "attnlab/analysis/probe.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/train/inference_memory.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subprocess.hpp"
#include "cli_values.hpp"
#include "commands.hpp"
#include "data_files.hpp"

namespace attnlab::cli {

namespace {

namespace fs = std::filesystem;
using probe_clock = std::chrono::steady_clock;

// Progress on stderr once the probe has run for 2 s, then every 2 s.
class probe_progress {
public:
    void operator()(int done, int total) {
        const double elapsed = std::chrono::duration<double>(probe_clock::now() - start_).count();
        if (elapsed - last_ < 2.0 || done >= total) return;
        last_ = elapsed;
        spdlog::info("probe: {}/{} examples, {:.0f} s elapsed, ~{:.0f} s left", done, total, elapsed,
                     elapsed * (total - done) / done);
    }

private:
    probe_clock::time_point start_ = probe_clock::now();
    double last_ = 0;
};

// The python that draws the figure: $ATTNLAB_PYTHON, else Debian's (as ctest plots).
std::string plot_python() {
    const char* p = std::getenv("ATTNLAB_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

// Runs scripts/plot_probe.py on `dir`; missing python, script or matplotlib
// skip the figures with a warning. Any other failure of the script is an error.
void draw_probe_figure(const std::string& dir, const std::string& title) {
    const std::string script = data_file("scripts/plot_probe.py");
    const std::string python = plot_python();
    std::error_code ec;
    if (!fs::is_regular_file(script, ec)) {
        spdlog::warn("figures skipped: {} not found (the figure needs attnlab's source tree)", script);
        return;
    }
    if (!fs::exists(python, ec)) {
        spdlog::warn("figures skipped: no {} (install Debian's python3-matplotlib)", python);
        return;
    }
    put_python_package_on_path();
    const process_output r = run_process({python, script, dir, "--title", title});
    if (r.exit_code == 3) {  // plot_probe.py: matplotlib cannot be imported
        spdlog::warn("figures skipped: {}", r.err.substr(0, r.err.find_last_not_of('\n') + 1));
        return;
    }
    if (r.exit_code != 0)
        throw std::runtime_error("scripts/plot_probe.py failed (exit code " + std::to_string(r.exit_code) +
                                 "): " + r.err.substr(0, r.err.find_last_not_of('\n') + 1));
    spdlog::info("wrote {}/probe.png and probe.pdf", dir);
}

std::string describe(const probe_result& r, const std::string& run_dir) {
    const std::uint64_t pairs = r.heads.empty() ? 0 : r.heads.front().pairs;
    return "Taylor terms of the attention scores of " + run_dir + " on its " + r.split + " set (" +
           std::to_string(r.examples) + " examples, " + std::to_string(pairs) +
           " causal pairs per head): dominant order = argmax over m = 0.." + std::to_string(r.max_order) +
           " of mean |s|^m / m!\n";
}

}  // namespace

void add_probe(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "probe", "Measure which Taylor orders of exp(q.k/sqrt(d)) a finished run's attention scores use");
    auto run_dir = std::make_shared<std::string>();
    auto opt = std::make_shared<probe_options>();
    auto out = std::make_shared<std::string>();
    auto threads = std::make_shared<int>(0);
    auto max_memory = std::make_shared<std::string>();
    auto no_plot = std::make_shared<bool>(false);
    cmd->add_option("RUN_DIR", *run_dir, "A run directory, results/<name>/runs/<run_id>")->required();
    cmd->add_option("--max-order", opt->max_order, "Largest Taylor order m measured")
        ->capture_default_str()
        ->check(integer_in(0, 1000));
    cmd->add_option("--split", opt->split, "The set whose scores are measured")
        ->capture_default_str()
        ->check(one_of({"test", "val"}))
        ->type_name("test|val");
    cmd->add_option("--examples", opt->examples, "Only the first N examples of the set (0: all)")
        ->capture_default_str()
        ->check(integer_in(0, 1L << 30));
    cmd->add_option("--out", *out, "Folder for probe.csv, probe_heads.csv and the figure (default: RUN_DIR)")
        ->check(not_empty("a directory"))
        ->type_name("DIR");
    cmd->add_option("--threads", *threads, "Threads for OpenMP and Eigen (0: all cores)")
        ->capture_default_str()
        ->check(integer_in(0, 1024));
    cmd->add_option("--max-memory", *max_memory,
                    "Memory the probe may take (e.g. 4G, 512M); default: what the machine has available")
        ->check(not_empty("a size such as 4G"))
        ->type_name("SIZE");
    cmd->add_flag("--no-plot", *no_plot, "Write the CSV files only, without the figure");
    cmd->callback([=, &chosen] {
        chosen = [=] {
            const memory_limit limit =
                resolve_memory_limit(max_memory->empty() ? 0 : parse_size(*max_memory, "--max-memory"));
            const run_config cfg = read_run_dir_config(*run_dir);
            set_threads(*threads);
            const int cores = static_cast<int>(std::thread::hardware_concurrency());
            // As eval's parallel form: the probe adds only its sums, (B, NH, max_order + 1) doubles.
            const inference_memory need = estimate_eval_memory(cfg, *threads > 0 ? *threads : cores,
                                                               attention_form::parallel, state_layout::symmetric);
            require_memory("probe of " + *run_dir, need.total(),
                           "model, activations for train.batch examples and data " +
                               format_bytes(static_cast<double>(need.total())),
                           limit, "Set --max-memory");
            probe_options o = *opt;
            o.progress = probe_progress();
            const probe_result r = probe_run_dir(*run_dir, o);
            const std::string dir = out->empty() ? *run_dir : *out;
            write_probe_files(dir, r);
            std::cout << describe(r, *run_dir) << probe_table(r) << std::flush;  // before the warnings
            for (const probe_head& h : r.heads)
                if (h.dominant_order == r.max_order && r.max_order > 0)
                    spdlog::warn("layer {} head {}: the dominant order is the largest measured ({}); raise --max-order",
                                 h.layer, h.head, r.max_order);
            spdlog::info("wrote {}/{} and {}", dir, probe_terms_filename, probe_heads_filename);
            if (!*no_plot) draw_probe_figure(dir, fs::path(*run_dir).lexically_normal().filename().string());
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
