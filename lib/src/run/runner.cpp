// The sweep runner: one run after another, outputs of SPEC §6, terminal progress.
#include "attnlab/run/runner.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <omp.h>

#include <Eigen/Core>
#include <spdlog/spdlog.h>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/run/summary.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

void set_threads(int n) {
    if (n <= 0) return;
    omp_set_num_threads(n);
    Eigen::setNbThreads(n);
}

namespace {

namespace fs = std::filesystem;

std::string duration_text(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long t = std::lround(s);
    char buf[32];
    if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    else std::snprintf(buf, sizeof buf, "%lds", t);
    return buf;
}

// spec.yaml: the spec as run, i.e. its text plus the --set overrides applied.
std::string spec_as_run(const experiment_spec& spec) {
    std::string header = "# attnlab " ATTNLAB_VERSION ": spec " + spec.path + " as run";
    for (const auto& s : spec.set_overrides) header += " --set " + s;
    return header + "\n" + spec.source_text;
}

const std::vector<std::string> metrics_header = {"step", "split", "loss", "token_acc", "seq_acc", "lr",
                                                 "grad_norm", "tokens_per_s", "elapsed_s"};

std::vector<std::string> metrics_fields(const metrics_row& r) {
    return {std::to_string(r.step), r.split, format_number(r.m.loss), format_number(r.m.token_acc),
            format_number(r.m.seq_acc), format_number(r.lr), format_number(r.grad_norm),
            format_number(std::round(r.tokens_per_s)), format_number(std::round(r.elapsed_s * 1000) / 1000)};
}

// A run is done when its result.yaml exists beside the same config.yaml.
std::optional<run_result> finished_result(const std::string& run_dir, const std::string& config_yaml) {
    const std::string cfg_path = run_dir + "/config.yaml";
    if (!fs::exists(cfg_path)) return std::nullopt;
    if (read_file(cfg_path) != config_yaml) return std::nullopt;
    try {
        auto r = read_run_result(run_dir + "/result.yaml");
        if (r && r->status == run_status::interrupted) return std::nullopt;
        return r;
    } catch (const io_error& e) {  // e.g. a crash mid-write by an older version: redo the run
        spdlog::warn("{}; the run will be redone", e.what());
        return std::nullopt;
    }
}

}  // namespace

sweep_outcome run_sweep(const experiment_spec& spec, const runner_options& opt) {
    if (opt.out_root.empty()) throw config_error("--out: the output directory must not be empty");
    set_threads(opt.threads);
    sweep_outcome out;
    out.dir = opt.out_root + "/" + spec.name;
    out.total = static_cast<int>(spec.runs.size());
    make_dirs(out.dir + "/runs");
    write_file_atomic(out.dir + "/spec.yaml", spec_as_run(spec));

    std::vector<summary_entry> done;
    auto write_summary = [&] {
        write_file_atomic(out.dir + "/summary.csv", summary_csv(spec, done));
        write_file_atomic(out.dir + "/table.md", summary_table_md(spec, done));
    };

    const auto sweep_t0 = std::chrono::steady_clock::now();
    double trained_s = 0;  // wall time of the runs trained in this invocation
    int trained = 0;
    for (int i = 0; i < out.total; ++i) {
        const run_point& point = spec.runs[i];
        const std::string run_dir = out.dir + "/runs/" + point.id;
        const std::string config_yaml = run_config_to_yaml(point.config);
        const std::string tag = fmt::format("[{}/{} {}]", i + 1, out.total, point.id);

        if (auto r = finished_result(run_dir, config_yaml)) {
            spdlog::info("{} already done ({}), skipped", tag, to_string(r->status));
            done.push_back({&point, *r});
            ++out.skipped;
            continue;
        }
        make_dirs(run_dir);
        fs::remove(run_dir + "/result.yaml");
        fs::remove(run_dir + "/" + checkpoint_filename);  // a stale one would not match this config
        write_file_atomic(run_dir + "/config.yaml", config_yaml);
        csv_writer metrics(run_dir + "/metrics.csv", metrics_header);

        const int runs_left_after = out.total - i - 1;
        const int steps = point.config.train.steps;
        train_callbacks cb;
        cb.stop = opt.stop;
        double last_train_loss = NAN, last_train_acc = NAN, last_tps = NAN;
        cb.on_row = [&](const metrics_row& r) {
            metrics.row(metrics_fields(r));
            if (r.split == "train") {
                last_train_loss = r.m.loss;
                last_train_acc = r.m.token_acc;
                last_tps = r.tokens_per_s;
                return;
            }
            if (r.step == 0) {
                spdlog::info("{} training {} steps", tag, steps);
                return;
            }
            const double run_left = r.elapsed_s / r.step * (steps - r.step);
            const double per_run = trained > 0 ? trained_s / trained : r.elapsed_s / r.step * steps;
            spdlog::info("{} step {}/{} | train loss {:.4f} acc {:.3f} | test loss {:.4f} acc {:.3f} seq {:.3f} | "
                         "{:.1f}k tok/s | left: run {}, sweep {}",
                         tag, r.step, steps, last_train_loss, last_train_acc, r.m.loss, r.m.token_acc,
                         r.m.seq_acc, last_tps / 1000, duration_text(run_left),
                         duration_text(run_left + runs_left_after * per_run));
        };
        // Checkpoint: written before result.yaml, which marks the run complete.
        bool saved = false;
        cb.on_finished = [&](const transformer<float>& model) {
            if (!params_finite(model)) return;
            checkpoint_save(run_dir + "/" + checkpoint_filename, model);
            saved = true;
        };
        const run_result res = train_run(point.config, cb);
        if (res.status == run_status::interrupted) {
            spdlog::warn("{} interrupted; it will be redone when the spec is run again", tag);
            out.interrupted = true;
            break;
        }
        write_file_atomic(run_dir + "/result.yaml", run_result_to_yaml(res));
        done.push_back({&point, res});
        trained_s += res.wall_s;
        ++trained;
        if (res.status == run_status::diverged) {
            ++out.diverged;
            spdlog::warn("{} diverged: {}; no checkpoint saved", tag, res.reason);
        } else {
            ++out.ok;
            spdlog::info("{} done in {}: test token acc {:.4f}, seq acc {:.4f} (best {:.4f} at step {})", tag,
                         duration_text(res.wall_s), res.final_test.token_acc, res.final_test.seq_acc,
                         res.best_test.token_acc, res.best_step);
            if (!saved) spdlog::warn("{} parameters not finite; no checkpoint saved", tag);
        }
        write_summary();
    }
    write_summary();
    const double sweep_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_t0).count();
    spdlog::info("{}: {} runs ({} trained ok, {} diverged, {} skipped as done) in {}; summary in {}/summary.csv",
                 spec.name, out.total, out.ok, out.diverged, out.skipped, duration_text(sweep_s), out.dir);
    return out;
}

}  // namespace attnlab
