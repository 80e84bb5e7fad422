// attnlab bench train (train_bench.hpp).
#include "attnlab/bench/train_bench.hpp"

#include "attnlab/bench/products_bench.hpp"
#include "attnlab/ops/ops.hpp"
#include "attnlab/util/median.hpp"

#include <Eigen/Dense>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include <spdlog/fmt/fmt.h>

#include "attnlab/io/files.hpp"
#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/train/optimizer.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subprocess.hpp"
#include "attnlab/util/stopwatch.hpp"

namespace attnlab {

namespace {

using clock_type = std::chrono::steady_clock;

// /proc/self/status field in kB, as bytes.
std::size_t proc_status_bytes(const std::string& field) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
    return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false if not possible.
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    return static_cast<bool>(f.flush());
}

const char* const quickstart_yaml = R"(name: bench-quickstart
base:
  task: {kind: lookup, vocab: 128, seq_len: 64, pairs: 8, test_examples: 16}
  model: {layers: 2, d_model: 64, heads: 2, mlp: swiglu, position: rope}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 100, batch: 32, lr: 1.0e-3, warmup: 10, weight_decay: 0.1, clip: 1.0}
)";

const char* const larger_yaml = R"(name: bench-larger
base:
  task: {kind: lookup, vocab: 512, seq_len: 256, pairs: 32, test_examples: 16}
  model: {layers: 4, d_model: 256, heads: 4, mlp: swiglu, position: rope}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 100, batch: 16, lr: 1.0e-3, warmup: 10, weight_decay: 0.1, clip: 1.0}
)";

// Long context: experiments/lookup_length.yaml's model and task at T 1024
// (256 pairs, vocabulary 2048, its batch of 4 windows), where the quadratic
// attention takes most of the step.
const char* const long_yaml = R"(name: bench-long
base:
  task: {kind: lookup, vocab: 2048, seq_len: 1024, pairs: 256, power_a: 1.0, test_examples: 16}
  model: {layers: 2, d_model: 64, heads: 2, mlp: swiglu, position: rope, short_conv: 3}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 100, batch: 4, lr: 1.0e-3, warmup: 10, weight_decay: 0.1, clip: 1.0}
)";

// The committed language-model experiments' size (experiments/lm_variants.yaml):
// bytes of data/kjv.txt (scripts/get_corpus, from the working directory; any
// text serves, e.g. --set task.path=FILE), every position an answer over 256
// symbols. Few test windows: the bench times training only.
const char* const lm_yaml = R"(name: bench-lm
base:
  task: {kind: text, path: data/kjv.txt, seq_len: 128, test_examples: 16}
  model: {layers: 2, d_model: 64, heads: 2, mlp: swiglu, position: rope}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 100, batch: 32, lr: 1.0e-2, warmup: 10, weight_decay: 0.1, clip: 1.0}
)";

// The config as the JSON bench_torch.py reads.
std::string torch_config_json(const run_config& c, int vocab, int Tn) {
    return fmt::format(
        R"({{"layers": {}, "d_model": {}, "heads": {}, "vocab": {}, "seq_len": {}, "position": "{}", "mlp": "{}", )"
        R"("numerator": "{}", "order": {}, "denominator": "{}", "eps": {}}})",
        c.model.layers, c.model.d_model, c.model.heads, vocab, Tn, to_string(c.model.position), to_string(c.model.mlp),
        to_string(c.attention.numerator), c.attention.order, to_string(c.attention.denominator), c.attention.eps);
}

void write_batch_file(const std::string& path, const batch& b) {
    std::string bytes;
    auto put = [&](std::int32_t v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(b.B);
    put(b.T);
    for (auto t : b.tokens) put(t);
    for (auto t : b.targets) put(t);
    write_file_atomic(path, bytes);
}

// One training step as the trainer does it (without the data and metrics),
// on the model train_run builds.
struct attnlab_stepper {
    transformer<float> model;
    adamw<float> opt;
    const batch& data;
    attnlab_stepper(const run_config& c, const batch& b)
        : model(make_model<float>(c)), opt(model.layout(), c.train.weight_decay), data(b) {
        model.init_params(0);
    }
    double step() {
        model.zero_grad();
        const double loss = model.forward_backward(data.tokens.data(), data.targets.data(), data.B, data.T);
        clip_grad_norm(model.grads, 1.0);
        opt.step(model.params, model.grads, 1e-3);
        return loss;
    }
};

// Parses {"threads": N, "tokens_per_s": [...], ...} from bench_torch.py.
std::vector<double> parse_tokens_per_s(const std::string& json) {
    const auto key = json.find("\"tokens_per_s\"");
    if (key == std::string::npos) throw std::runtime_error("no tokens_per_s in its output");
    const auto open = json.find('[', key), close = json.find(']', key);
    if (open == std::string::npos || close == std::string::npos) throw std::runtime_error("bad tokens_per_s list");
    std::vector<double> out;
    std::stringstream list(json.substr(open + 1, close - open - 1));
    std::string item;
    while (std::getline(list, item, ',')) out.push_back(std::stod(item));
    return out;
}

std::string last_line(const std::string& text) {
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    const auto nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string human_bytes(double b) { return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0)); }

// The peak FMA bound's GFLOP/s at a thread setting (0 if not measured).
double peak_at(const std::vector<peak_fma_rate>& peak, int threads) {
    for (const peak_fma_rate& p : peak)
        if (p.threads == threads) return p.gflops;
    return 0;
}

// The probe's GFLOP/s at a thread setting (0 if not probed).
double probe_at(const std::vector<std::pair<int, double>>& probe, int threads) {
    for (auto [th, g] : probe)
        if (th == threads) return g;
    return 0;
}

}  // namespace

std::vector<std::string> bench_config_names() { return {"quickstart", "lm", "larger", "long"}; }

std::string bench_config_yaml(const std::string& name) {
    if (name == "quickstart") return quickstart_yaml;
    if (name == "lm") return lm_yaml;
    if (name == "larger") return larger_yaml;
    if (name == "long") return long_yaml;
    throw config_error("--config: unknown configuration '" + name + "', expected quickstart, lm, larger or long");
}

double side_timing::median() const { return median_of(tokens_per_s); }

std::vector<double> round_ratios(const std::vector<side_timing>& sides) {
    std::size_t rounds = 0;
    for (const auto& s : sides) rounds = std::max(rounds, s.round_medians.size());
    std::vector<double> ratios;
    for (std::size_t k = 0; k < rounds; ++k) {
        double best_attn = 0, best_torch = 0;
        for (const auto& s : sides) {
            if (!s.error.empty() || k >= s.round_medians.size()) continue;
            double& best = s.impl == "attnlab" ? best_attn : best_torch;
            best = std::max(best, s.round_medians[k]);
        }
        if (best_attn > 0 && best_torch > 0) ratios.push_back(best_attn / best_torch);
    }
    return ratios;
}

flop_count training_flops(const run_config& c, int vocab, int B, int Tn, int answers) {
    const double N = static_cast<double>(B) * Tn, C = c.model.d_model, F = resolved_mlp_hidden(c.model);
    const double NH = c.model.heads, HS = C / NH, L = c.model.layers;
    const double pairs = B * NH * Tn * (Tn + 1.0) / 2.0;  // causal (t, j <= t) per head
    double qkv = 2 * N * C * C * 3;
    if (c.attention.in_gate) qkv += 2 * N * C * NH;
    if (uses_out_gate(c.attention)) qkv += 2 * N * C * NH;
    double mlp = 0;
    if (c.model.mlp == mlp_kind::swiglu) mlp = 2 * N * C * F * 3;
    if (c.model.mlp == mlp_kind::gelu) mlp = 2 * N * C * F * 2;
    flop_count f;
    // Keyed by the model's op-timing names (Transformer::timings()).
    f.forward_by_op = {{"q/k/v (+rope, gates)", L * qkv},
                       {"attention", L * 2 * pairs * HS * 2},  // scores (or feature products) and w v
                       {"output projection", L * 2 * N * C * C},
                       {"mlp", L * mlp},
                       {"head + loss", 2.0 * answers * C * vocab}};
    for (const auto& [op, flops] : f.forward_by_op) f.forward += flops;
    f.backward = 2 * f.forward;
    return f;
}

memory_need training_memory_need(const run_config& c, int vocab, int B, int Tn, int answers) {
    buffer_plan_input in;
    in.model = c.model;
    in.attention = c.attention;
    in.vocab = vocab;
    in.max_T = Tn;
    in.B = B;
    in.T = Tn;
    in.answers = answers;  // the head keeps the answer rows only
    in.float_bytes = sizeof(float);
    const buffer_plan plan = plan_model_buffers(in);
    memory_need m;
    m.params = plan.param_count * sizeof(float);
    m.grads = m.params;
    m.optimizer = 2 * m.params;
    m.activations = plan.kept_for_backward_bytes();
    return m;
}

double matmul_probe_gflops(int threads, int n) {
    // Each thread multiplies its own matrices on one core, as the model's
    // data-parallel threads do: the sum is the machine's matmul throughput.
    set_threads(1);
    double seconds = 0;
#pragma omp parallel num_threads(threads) reduction(max : seconds)
    {
        Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
        c.noalias() = a * b;  // warm up
        double best = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
#pragma omp barrier
            const auto t0 = clock_type::now();
            c.noalias() = a * b;
            best = std::min(best, seconds_since(t0));
        }
        if (!std::isfinite(c.sum())) best = 1e30;  // keeps the product from being optimised away
        seconds = best;
    }
    return threads * 2.0 * n * n * n / seconds / 1e9;
}

train_bench_result run_train_bench(const train_bench_options& opt,
                                   const std::function<void(const std::string&)>& progress) {
    train_bench_result r;
    r.label = opt.label;
    r.config = opt.config;
    auto data = make_task(opt.config.task, 0);
    batch b;
    data->next_train_batch(b, opt.config.train.batch);
    r.vocab = data->vocab_size();
    r.B = b.B;
    r.T = b.T;
    r.answers =
        static_cast<int>(std::count_if(b.targets.begin(), b.targets.end(), [](auto t) { return t != no_target; }));
    r.flops = training_flops(opt.config, r.vocab, r.B, r.T, r.answers);
    r.need = training_memory_need(opt.config, r.vocab, r.B, r.T, r.answers);

    // The probe runs before every round, not once: other guests of a shared
    // machine move its rate by a fifth between minutes, and the percentages
    // divide by its median over the rounds.
    r.probe_rounds.assign(opt.threads.size(), {});
    auto probe_round = [&] {
        std::string s;
        for (std::size_t i = 0; i < opt.threads.size(); ++i) {
            r.probe_rounds[i].push_back(matmul_probe_gflops(opt.threads[i]));
            s += fmt::format("{} thread(s) {:.1f} GFLOP/s  ", opt.threads[i], r.probe_rounds[i].back());
        }
        progress("matmul probe: " + s);
    };

    std::string batch_path;
    if (opt.torch) {
        make_dirs(opt.work_dir);
        batch_path = opt.work_dir + "/bench_batch.bin";
        write_batch_file(batch_path, b);
    }
    for (int th : opt.threads) {
        r.sides.push_back({"attnlab", th, {}, {}, {}});
        if (opt.torch) r.sides.push_back({"pytorch", th, {}, {}, {}});
    }
    const double tokens_per_step = static_cast<double>(b.B) * b.T;

    for (int round = 0; round < opt.rounds; ++round) {
        probe_round();
        for (auto& side : r.sides) {
            if (!side.error.empty()) continue;
            if (side.impl == "attnlab") {
                set_threads(side.threads);
                const std::size_t rss0 = proc_status_bytes("VmRSS");
                const bool peak_ok = reset_peak_rss();
                {
                    attnlab_stepper s(opt.config, b);
                    r.param_count = s.model.params.size();
                    for (int i = 0; i < opt.warmup; ++i) s.step();
                    for (int rep = 0; rep < opt.repeats; ++rep) {
                        const auto t0 = clock_type::now();
                        double loss = 0;
                        for (int i = 0; i < opt.steps; ++i) loss = s.step();
                        side.tokens_per_s.push_back(opt.steps * tokens_per_step / seconds_since(t0));
                        if (!std::isfinite(loss)) side.error = "loss not finite";
                    }
                }
                if (peak_ok) r.peak_bytes = std::max(r.peak_bytes, proc_status_bytes("VmHWM") - rss0);
            } else {
                const std::vector<std::string> argv = {opt.python,     opt.torch_script,
                                                       "--config",     torch_config_json(opt.config, r.vocab, r.T),
                                                       "--batch-file", batch_path,
                                                       "--threads",    std::to_string(side.threads),
                                                       "--steps",      std::to_string(opt.steps),
                                                       "--repeats",    std::to_string(opt.repeats),
                                                       "--warmup",     std::to_string(opt.warmup)};
                // OpenBLAS at its best kernel for this CPU; bench_torch.py then
                // sets OpenBLAS's thread count itself (for this process alone).
                const auto out = run_process(
                    argv, {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", std::to_string(side.threads)}},
                    {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"});
                if (out.exit_code != 0) {
                    side.error = fmt::format("{} exited {}: {}", opt.torch_script, out.exit_code, last_line(out.err));
                } else {
                    try {
                        for (double v : parse_tokens_per_s(out.out)) side.tokens_per_s.push_back(v);
                    } catch (const std::exception& e) {
                        side.error = std::string("unreadable output of bench_torch.py: ") + e.what();
                    }
                }
            }
            if (side.error.empty() && side.tokens_per_s.size() != (round + 1) * static_cast<std::size_t>(opt.repeats))
                side.error = fmt::format("{} figures after round {}, expected {} per round", side.tokens_per_s.size(),
                                         round + 1, opt.repeats);
            if (side.error.empty())  // this round's repeats
                side.round_medians.push_back(
                    median_of(std::vector<double>(side.tokens_per_s.end() - opt.repeats, side.tokens_per_s.end())));
            progress(side.error.empty() ? fmt::format("round {}: {} {} thread(s): median {:.0f} tokens/s", round + 1,
                                                      side.impl, side.threads, side.round_medians.back())
                                        : fmt::format("{} {} thread(s): {}", side.impl, side.threads, side.error));
        }
    }

    if (opt.rounds < 1) probe_round();  // the percentages still need one
    for (std::size_t i = 0; i < opt.threads.size(); ++i)
        r.probe.emplace_back(opt.threads[i], median_of(r.probe_rounds[i]));
    // The physical bound: the peak FMA rate of the kernels' instruction set (best of its passes).
    for (int th : opt.threads) {
        r.peak.push_back(measure_peak_fma(th));
        progress(fmt::format("peak FMA ({}, {} lanes): {} thread(s) {:.1f} GFLOP/s", r.peak.back().isa,
                             r.peak.back().lanes, th, r.peak.back().gflops));
    }
    r.blas_core = blas_core_name();

    // Per-op times at attnlab's best setting, in a separate pass (clock reads).
    const side_timing* best = nullptr;
    for (const auto& s : r.sides)
        if (s.impl == "attnlab" && s.error.empty() && (!best || s.median() > best->median())) best = &s;
    if (best) {
        r.op_threads = best->threads;
        set_threads(best->threads);
        attnlab_stepper s(opt.config, b);
        for (int i = 0; i < opt.warmup; ++i) s.step();
        s.model.enable_op_timing(true);
        s.model.reset_timings();
        double opt_s = 0;
        for (int i = 0; i < opt.steps; ++i) {
            s.model.zero_grad();
            s.model.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T);
            const auto t0 = clock_type::now();
            clip_grad_norm(s.model.grads, 1.0);
            s.opt.step(s.model.params, s.model.grads, 1e-3);
            opt_s += seconds_since(t0);
        }
        const auto& t = s.model.timings();
        for (size_t k = 0; k < t.names.size(); ++k)
            r.ops.push_back({t.names[k], 1e3 * t.forward_s[k] / opt.steps, 1e3 * t.backward_s[k] / opt.steps});
        r.ops.push_back({"optimizer (clip + AdamW)", 0.0, 1e3 * opt_s / opt.steps});
    }
    return r;
}

std::string format_train_bench(const train_bench_result& r) {
    const run_config& c = r.config;
    std::string s;
    s += fmt::format(
        "config {}: {} layers, d_model {}, {} heads, {} mlp, {} positions, {}; {} batch {} x seq {} "
        "({} answer rows), vocab {}; {} parameters\n",
        r.label, c.model.layers, c.model.d_model, c.model.heads, to_string(c.model.mlp), to_string(c.model.position),
        variant_label(c.attention), to_string(c.task.kind), r.B, r.T, r.answers, r.vocab, r.param_count);
    s += fmt::format("model FLOPs per training step: {:.3f} GFLOP (forward {:.3f}, backward 2x forward)\n",
                     r.flops.total() / 1e9, r.flops.forward / 1e9);
    s += fmt::format("\n{:<10} {:>7} {:>13} {:>9} {:>9} {:>10} {:>10} {:>8}\n", "impl", "threads", "tokens/s",
                     "step ms", "GFLOP/s", "% of peak", "% of probe", "repeats");
    const double tokens_per_step = static_cast<double>(r.B) * r.T;
    double best_attn = 0, best_torch = 0;
    int best_attn_th = 0, best_torch_th = 0;
    for (const auto& side : r.sides) {
        if (!side.error.empty()) {
            s += fmt::format("{:<10} {:>7}  not measured: {}\n", side.impl, side.threads, side.error);
            continue;
        }
        const double tps = side.median(), step_s = tokens_per_step / tps, gflops = r.flops.total() / step_s / 1e9;
        const double probe = probe_at(r.probe, side.threads), peak = peak_at(r.peak, side.threads);
        s += fmt::format("{:<10} {:>7} {:>13.0f} {:>9.2f} {:>9.2f} {:>9.1f}% {:>9.1f}% {:>8}\n", side.impl,
                         side.threads, tps, 1e3 * step_s, gflops, peak > 0 ? 100 * gflops / peak : 0.0,
                         probe > 0 ? 100 * gflops / probe : 0.0, side.tokens_per_s.size());
        if (side.impl == "attnlab" && tps > best_attn) {
            best_attn = tps;
            best_attn_th = side.threads;
        }
        if (side.impl == "pytorch" && tps > best_torch) {
            best_torch = tps;
            best_torch_th = side.threads;
        }
    }
    for (const peak_fma_rate& p : r.peak)
        s += fmt::format("{}{} thread(s) {:.1f} GFLOP/s",
                         &p == &r.peak.front() ? "peak FMA bound (float32, " + p.isa +
                                                     " as attnlab's kernels; best of "
                                                     "9 passes): "
                                               : "; ",
                         p.threads, p.gflops);
    if (!r.peak.empty()) s += "\n";
#ifdef ATTNLAB_OPENBLAS
    s += "BLAS: OpenBLAS, core " + (r.blas_core.empty() ? std::string("unknown") : r.blas_core) +
         (large_products_in_use() == large_products::blas
              ? " (every product attnlab's small kernel does not take: ATTNLAB_LARGE_PRODUCTS=blas)\n"
              : " (the probe, and products of fewer than 64 rows or columns too large for attnlab's small "
                "kernel; attnlab's packed kernel does the large ones)\n");
    s += "matmul probe (float 512^3 per thread, OpenBLAS through Eigen):";
#else
    s += "matmul probe (float 512^3 per thread, Eigen):";
#endif
    for (std::size_t i = 0; i < r.probe.size(); ++i) {
        const auto [lo, hi] = std::minmax_element(r.probe_rounds[i].begin(), r.probe_rounds[i].end());
        s += fmt::format(" {} thread(s) {:.1f} GFLOP/s (median of {} rounds, {:.1f}-{:.1f});", r.probe[i].first,
                         r.probe[i].second, r.probe_rounds[i].size(), *lo, *hi);
    }
    s += "\n";
    if (best_attn > 0 && best_torch > 0)
        s += fmt::format(
            "attnlab / pytorch, each at its best setting: {:.2f}x ({:.0f} tokens/s on {} thread(s) vs "
            "{:.0f} on {})\n",
            best_attn / best_torch, best_attn, best_attn_th, best_torch, best_torch_th);
    if (const auto ratios = round_ratios(r.sides); !ratios.empty()) {
        s += "the same, round by round (each side's best setting in that round):";
        for (double x : ratios) s += fmt::format(" {:.2f}x", x);
        s += fmt::format("; median {:.2f}x\n", median_of(ratios));
    }
    if (best_attn > 0) {
        // The bound set by the probe: every product at the probe's rate and
        // nothing else taking time.
        const double probe = probe_at(r.probe, best_attn_th);
        const double ceiling = probe > 0 ? probe * 1e9 / r.flops.total() * tokens_per_step : 0;
        if (ceiling > 0)
            s += fmt::format(
                "attnlab at the probe's rate on {} thread(s) (the bound for these FLOPs): {:.0f} tokens/s{}\n",
                best_attn_th, ceiling,
                best_torch > 0 ? fmt::format(", {:.2f}x pytorch's best", ceiling / best_torch) : "");
    }
    const double need = static_cast<double>(r.need.total());
    s += fmt::format(
        "\nmemory: measured peak {} (RSS growth while training, largest thread setting); training needs "
        "{} (parameters {}, gradients {}, AdamW moments {}, activations {}): ratio {:.2f}\n",
        human_bytes(static_cast<double>(r.peak_bytes)), human_bytes(need), human_bytes(r.need.params),
        human_bytes(r.need.grads), human_bytes(r.need.optimizer), human_bytes(r.need.activations),
        need > 0 ? r.peak_bytes / need : 0.0);
    if (!r.ops.empty()) {
        double total = 0;
        for (const auto& o : r.ops) total += o.forward_ms + o.backward_ms;
        // Thread 0 runs about 1/threads of the batch: its share of the FLOPs
        // against one thread's share of the probe.
        const double shard = 1.0 / r.op_threads, probe_1 = probe_at(r.probe, r.op_threads) * shard;
        const double peak_1 = peak_at(r.peak, r.op_threads) * shard;
        s += fmt::format(
            "\ntime per op, attnlab on {} thread(s) (thread 0's shard; ms per step; GFLOP/s of the "
            "products, against 1 thread's share of the peak FMA bound and of the probe):\n",
            r.op_threads);
        s += fmt::format("{:<26} {:>9} {:>9} {:>7} {:>9} {:>10} {:>10}\n", "op", "forward", "backward", "share",
                         "GFLOP/s", "% of peak", "% of probe");
        for (const auto& o : r.ops) {
            s += fmt::format("{:<26} {:>9.3f} {:>9.3f} {:>6.1f}%", o.name, o.forward_ms, o.backward_ms,
                             total > 0 ? 100 * (o.forward_ms + o.backward_ms) / total : 0.0);
            const auto f = r.flops.forward_by_op.find(o.name);
            const double ms = o.forward_ms + o.backward_ms;
            if (f != r.flops.forward_by_op.end() && f->second > 0 && ms > 0) {
                const double gflops = 3 * f->second * shard / (ms * 1e-3) / 1e9;  // forward + 2x backward
                s += fmt::format(" {:>9.2f} {:>9.1f}% {:>9.1f}%", gflops, peak_1 > 0 ? 100 * gflops / peak_1 : 0.0,
                                 probe_1 > 0 ? 100 * gflops / probe_1 : 0.0);
            }
            s += "\n";
        }
        s += fmt::format("{:<26} {:>19.3f}\n", "total", total);
    }
    return s;
}

}  // namespace attnlab
