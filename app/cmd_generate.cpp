// attnlab generate RUN_DIR: sample from a finished run's model. The sample
// streams to stdout (a text run's bytes as they are; token ids for the
// synthetic tasks), the per-token times go to stderr. The recurrent form
// (default for variants with a finite state) costs the same at every
// position; the parallel form runs the whole sequence for every token.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/run/sample.hpp"
#include "attnlab/tasks/task_table.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/util/error.hpp"
#include "cli_values.hpp"
#include "commands.hpp"

namespace attnlab::cli {

namespace {

// A synthetic task's prompt: token ids separated by spaces or commas.
std::vector<std::int32_t> token_ids(const std::string& text, int V, const std::string& label) {
    std::string s = text;
    std::replace(s.begin(), s.end(), ',', ' ');
    std::istringstream in(s);
    std::vector<std::int32_t> ids;
    std::string word;
    while (in >> word) {
        std::size_t used = 0;
        long id = -1;
        try {
            id = std::stol(word, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != word.size() || id < 0 || id >= V)
            throw config_error(label + ": '" + word + "' is no token id of this run (integers 0 to " +
                               std::to_string(V - 1) + ", separated by spaces or commas)");
        ids.push_back(static_cast<std::int32_t>(id));
    }
    return ids;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

}  // namespace

void add_generate(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("generate", "Sample from a finished run's model (stdout), per-token time on stderr");
    struct options {
        std::string run_dir, prompt, prompt_file, form, layout = "symmetric", max_memory;
        int tokens = 200, top_k = 0, threads = 1;
        double temperature = 1.0;
        std::uint64_t seed = 0;
    };
    auto o = std::make_shared<options>();
    cmd->add_option("RUN_DIR", o->run_dir, "A run directory, results/<name>/runs/<run_id>")->required();
    auto* prompt = cmd->add_option("--prompt", o->prompt,
                                   "The prompt: text for a text run, token ids (\"3 17 5\") for the other tasks");
    cmd->add_option("--prompt-file", o->prompt_file,
                    "Read the prompt from this file (a regular file of at most 16 MiB)")
        ->check(not_empty("a file name"))
        ->excludes(prompt);
    cmd->add_option("--tokens", o->tokens, "Tokens to generate")->capture_default_str()->check(integer_in(0, 1 << 24));
    cmd->add_option("--temperature", o->temperature, "Softmax temperature of the draws; 0: greedy (argmax)")
        ->capture_default_str()
        ->check(number_in(0, 1e6, "a temperature"));
    cmd->add_option("--top-k", o->top_k, "Draw among the K likeliest tokens only (0: all)")
        ->capture_default_str()
        ->check(integer_in(0, 1 << 24));
    cmd->add_option("--seed", o->seed, "Seed of the draws (0 to 2^64 - 1): the same seed gives the same sample")
        ->capture_default_str()
        ->check(unsigned_64());
    cmd->add_option("--form", o->form,
                    "parallel (the whole sequence per token) or recurrent (a state per layer); default: recurrent "
                    "for variants with a finite state, else parallel")
        ->check(one_of({"parallel", "recurrent"}))
        ->type_name("parallel|recurrent");
    cmd->add_option("--layout", o->layout, "Taylor state layout of the recurrent form: symmetric or full")
        ->check(one_of({"symmetric", "full"}))
        ->capture_default_str();
    cmd->add_option("--threads", o->threads, "Threads for OpenMP and Eigen (0: all cores)")
        ->capture_default_str()
        ->check(integer_in(0, 1024));
    cmd->add_option("--max-memory", o->max_memory,
                    "Memory generation may take (e.g. 4G, 512M); default: what the machine has available")
        ->check(not_empty("a size such as 4G"))
        ->type_name("SIZE");
    cmd->callback([o, &chosen] {
        chosen = [o] {
            const run_config cfg = read_run_dir_config(o->run_dir);
            const bool text = cfg.task.kind == task_kind::text;
            const int V = model_vocab_size(cfg.task), trained_T = max_seq_len(cfg.task);
            const std::string label = o->prompt_file.empty() ? "--prompt" : o->prompt_file;
            // A regular file of at most 16 MiB (a device such as /dev/zero, a FIFO or a larger file is refused).
            const std::string raw = o->prompt_file.empty() ? o->prompt : read_input(o->prompt_file, inputs::prompt);
            std::vector<std::int32_t> prompt;
            if (text)  // bytes are the tokens (char may be signed)
                for (const char c : raw) prompt.push_back(static_cast<unsigned char>(c));
            else
                prompt = token_ids(raw, V, label);
            const bool learned = cfg.model.position == position_kind::learned;
            const sample_context ctx = fit_context(prompt, o->tokens, learned ? trained_T : 0);
            if (ctx.dropped > 0)
                spdlog::warn(
                    "the prompt is cut to its last {} tokens: the run learned {} positions and {} are to "
                    "be generated",
                    ctx.prompt.size(), trained_T, o->tokens);
            else if (ctx.max_len > trained_T)
                spdlog::warn("generating up to position {}, past the {} positions the run was trained on", ctx.max_len,
                             trained_T);

            sample_options so;
            so.tokens = o->tokens;
            so.temperature = o->temperature;
            so.top_k = o->top_k;
            so.seed = o->seed;
            const std::string form = !o->form.empty()                  ? o->form
                                     : has_finite_state(cfg.attention) ? "recurrent"
                                                                       : "parallel";
            so.form = form == "recurrent" ? attention_form::recurrent : attention_form::parallel;
            so.layout = o->layout == "full" ? state_layout::full : state_layout::symmetric;

            const int max_T = learned ? trained_T : std::max(ctx.max_len, trained_T);
            const memory_limit limit =
                resolve_memory_limit(o->max_memory.empty() ? 0 : parse_size(o->max_memory, "--max-memory"));
            const inference_memory need =
                estimate_sample_memory(cfg.model, cfg.attention, V, max_T, so.form, so.layout);
            require_memory(
                "generate from " + o->run_dir + " (" + form + " form)", need.total(),
                "model and activations " + format_bytes(static_cast<double>(need.model)) +
                    (need.state ? ", recurrent states " + format_bytes(static_cast<double>(need.state)) : ""),
                limit, "Ask for fewer --tokens, or set --max-memory");

            transformer<float> model(cfg.model, cfg.attention, V, max_T);
            const std::string ckpt = o->run_dir + "/" + checkpoint_filename;
            std::error_code ec;  // only a missing file is "no such checkpoint"; the reader names anything else
            if (!std::filesystem::exists(std::filesystem::symlink_status(ckpt, ec)))
                throw io_error(ckpt + ": no such checkpoint file (the run has not finished, or diverged)");
            checkpoint_load(ckpt, model);
            if (!std::all_of(model.params.begin(), model.params.end(), [](float x) { return std::isfinite(x); }))
                throw io_error(ckpt + ": holds non-finite values (NaN or infinity)");
            set_threads(o->threads);

            std::vector<double> times;
            double prompt_s = 0;
            const auto t0 = std::chrono::steady_clock::now();
            generate_tokens(
                model, ctx.prompt, so,
                [&](std::int32_t token, double s) {
                    if (text)
                        std::fputc(token, stdout);
                    else
                        std::fprintf(stdout, times.empty() ? "%d" : " %d", token);
                    // A sample nobody receives (a full disk) stops at once.
                    if (std::fflush(stdout) != 0 || std::ferror(stdout))
                        throw io_error(std::string("writing standard output: ") + std::strerror(errno));
                    times.push_back(s);
                },
                &prompt_s);
            const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::fputc('\n', stdout);
            if (std::fflush(stdout) != 0)
                throw io_error(std::string("writing standard output: ") + std::strerror(errno));
            // The first token's logits come with the prompt: its time is the draw alone.
            std::vector<double> steps(times.begin() + std::min<std::size_t>(1, times.size()), times.end());
            std::fprintf(stderr,
                         "attnlab generate: %d tokens in %.3f s, %s form: per token median %.3f ms, first %.3f ms, "
                         "last %.3f ms (prompt of %zu tokens: %.3f s)\n",
                         o->tokens, total, form.c_str(), 1e3 * median(steps), steps.empty() ? 0.0 : 1e3 * steps.front(),
                         steps.empty() ? 0.0 : 1e3 * steps.back(), ctx.prompt.size(), prompt_s);
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
