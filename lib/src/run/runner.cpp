// The sweep runner: a pool of `jobs` workers over this shard's runs, the
// outputs of docs/outputs.md, terminal progress for each run and for the sweep.
// The design (atomicity, locks, threads, shards) is described in runner.hpp.
#include "attnlab/run/runner.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <mutex>
#include <omp.h>
#include <optional>
#include <set>
#include <thread>
#include <unistd.h>
#include <vector>

#include <Eigen/Core>
#include <spdlog/spdlog.h>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/results/metrics_csv.hpp"
#include "attnlab/results/run_groups.hpp"
#include "attnlab/results/summary.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/run/run_check.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/run/sweep_guard.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/stopwatch.hpp"

namespace attnlab {

void set_threads(int n) {
    if (n <= 0) return;
    omp_set_num_threads(n);
    Eigen::setNbThreads(n);
}

shard_spec parse_shard(const std::string& text) {
    auto bad = [&](const std::string& why) { return config_error("--shard: " + why + ", got '" + text + "'"); };
    const auto slash = text.find('/');
    if (slash == std::string::npos) throw bad("expected I/N (0-based shard I of N, e.g. 0/3)");
    auto number = [&](const std::string& s, int& v) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return !s.empty() && ec == std::errc() && end == s.data() + s.size();
    };
    shard_spec s;
    if (!number(text.substr(0, slash), s.index) || !number(text.substr(slash + 1), s.count))
        throw bad("expected I/N with whole numbers I and N (e.g. 0/3)");
    if (s.count < 1) throw bad("N must be at least 1");
    if (s.index < 0 || s.index >= s.count) throw bad("I must be in 0..N-1 (0-based)");
    return s;
}

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::string duration_text(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long t = std::lround(s);
    char buf[32];
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", t);
    return buf;
}

// A cell that does not apply to its row is empty, never 0.
std::string optional_cell(const std::optional<double>& v) { return v ? format_number(*v) : ""; }

std::vector<std::string> metrics_fields(const metrics_row& r) {
    return {std::to_string(r.step),
            r.split,
            format_number(r.m.loss),
            format_number(r.m.token_acc),
            std::isnan(r.m.seq_acc) ? "" : format_number(r.m.seq_acc),  // NaN: does not apply (text)
            optional_cell(r.lr),
            optional_cell(r.grad_norm),
            optional_cell(r.tokens_per_s ? std::optional<double>(std::round(*r.tokens_per_s)) : std::nullopt),
            format_number(std::round(r.elapsed_s * 1000) / 1000)};
}

// metrics.csv, appended a row at a time (write(2) on an O_APPEND descriptor,
// so an error such as a full disk is reported with the file and its cause).
class metrics_file {
public:
    explicit metrics_file(const std::string& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd_ < 0) throw io_error("cannot write " + path + ": " + std::strerror(errno));
    }
    ~metrics_file() {
        if (fd_ >= 0) ::close(fd_);
    }
    metrics_file(const metrics_file&) = delete;
    metrics_file& operator=(const metrics_file&) = delete;
    void row(const std::vector<std::string>& fields) {
        const std::string line = csv_line(fields);
        for (std::size_t done = 0; done < line.size();) {
            const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw io_error("cannot write " + path_ + ": " + std::strerror(errno));
            done += static_cast<std::size_t>(n);
        }
    }

private:
    std::string path_;
    int fd_ = -1;
};

// What became of one run a worker took.
enum class attempt_kind { trained, done_elsewhere, busy, interrupted, stopped_waiting };
struct attempt {
    attempt_kind kind = attempt_kind::trained;
    run_result result;
};

class sweep_runner {
public:
    sweep_runner(const experiment_spec& spec, const runner_options& opt) : spec_(spec), opt_(opt) {}

    sweep_outcome run();

private:
    const experiment_spec& spec_;
    const runner_options& opt_;
    std::atomic<bool> own_stop_{false};
    std::atomic<bool>* stop_ = nullptr;
    sweep_outcome out_;
    int per_run_threads_ = 1;
    clock_type::time_point sweep_t0_, pool_t0_;

    std::vector<std::size_t> queue_;                  // spec indices of the runs to train, in spec order
    std::set<std::size_t> rebuild_;                   // finished runs retrained with this build (--rerun-other-builds)
    std::atomic<std::size_t> next_{0};                // next queue position a worker takes
    std::mutex mu_;                                   // guards everything below, the summary files and the log order
    std::vector<std::optional<run_result>> results_;  // by spec index
    std::vector<std::size_t> deferred_;               // runs another process held: waited for after the queue
    double trained_s_ = 0;
    int trained_ = 0;
    std::exception_ptr error_;
    std::unique_ptr<sweep_membership> membership_;  // this process's claim on the folder

    std::string run_dir(std::size_t i) const { return out_.dir + "/runs/" + spec_.runs[i].id; }
    std::string tag(std::size_t i) const {
        return fmt::format("[{}/{} {}]", i + 1, spec_.runs.size(), spec_.runs[i].id);
    }
    std::string summary_dir() const {
        if (!opt_.shard.sharded()) return out_.dir;
        return fmt::format("{}/shards/{}-of-{}", out_.dir, opt_.shard.index, opt_.shard.count);
    }
    void write_summary();                   // under mu_
    std::vector<std::string> lr_warnings_;  // of the last summary, logged once at the end
    void log_progress();                    // under mu_
    void worker();
    bool next_run(std::size_t& i, bool& wait);
    void record(std::size_t i, const attempt& a);  // under mu_
    attempt train_one(std::size_t i, bool wait);
    void check_memory() const;
};

void sweep_runner::write_summary() {
    std::vector<summary_entry> entries;
    for (std::size_t i = 0; i < results_.size(); ++i)
        if (results_[i]) entries.push_back({&spec_.runs[i], *results_[i]});
    write_summary_files(summary_dir(), out_.dir + "/runs", spec_, entries);
    lr_warnings_ = learning_rate_warnings(spec_, select_learning_rates(spec_, entries));
}

void sweep_runner::log_progress() {
    const int done = out_.skipped + out_.ok + out_.diverged;
    const int remaining = out_.total - done - out_.busy;
    std::string left = "?";
    if (remaining <= 0)
        left = "0s";
    else if (trained_ > 0)
        left = duration_text(seconds_since(pool_t0_) / trained_ * remaining);
    std::string busy;
    if (out_.busy > 0) busy = fmt::format(", {} left to other processes", out_.busy);
    spdlog::info("sweep: {}/{} runs done ({} skipped{}), elapsed {}, time left ~{}", done, out_.total, out_.skipped,
                 busy, duration_text(seconds_since(sweep_t0_)), left);
}

// The resume state of an unfinished run, if it can be resumed: its file
// loads, fits the run's config, and metrics.csv holds the rows up to its step
// (cut back to them here). nullopt, with a warning when a state was there
// but does not fit: the run is then redone from step 0.
std::optional<train_state> resumable_state(const std::string& dir, const std::string& config_yaml,
                                           const run_config& cfg, const std::string& tg) {
    const std::string path = dir + "/" + resume_filename;
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    auto drop = [&](const std::string& why) -> std::optional<train_state> {
        spdlog::warn("{} cannot be resumed ({}); it is redone from step 0", tg, why);
        return std::nullopt;
    };
    model_offsets off;
    const std::size_t n =
        build_param_layout(cfg.model, cfg.attention, model_vocab_size(cfg.task), max_seq_len(cfg.task), off).total();
    std::optional<train_state> st;
    try {
        if (read_input(dir + "/config.yaml", inputs::run_config) != config_yaml)
            return drop("config.yaml differs from the spec's");
        st = train_state_load(path, config_yaml, resume_state_max_bytes(n, config_yaml.size()));
    } catch (const io_error& e) {
        return drop(e.what());
    }
    if (!st) return std::nullopt;
    if (st->params.size() != n)
        return drop(path + " holds " + std::to_string(st->params.size()) + " parameters, the model " +
                    std::to_string(n));
    if (st->step >= cfg.train.steps)
        return drop(path + ": step " + std::to_string(st->step) + " is past the run's end");
    std::string why;
    if (!keep_metrics_up_to(dir + "/metrics.csv", cfg.train, st->step, why)) return drop(why);
    return st;
}

attempt sweep_runner::train_one(std::size_t i, bool wait) {
    const run_point& point = spec_.runs[i];
    const std::string dir = run_dir(i), tg = tag(i);
    const std::string config_yaml = run_config_to_yaml(point.config);
    make_dirs(dir);
    run_lock lock(dir);
    if (!lock.owned()) {
        if (!wait) {
            spdlog::info(
                "{} is being trained by another process (its lock is held); put off until the other runs are done", tg);
            return {attempt_kind::busy, {}};
        }
        spdlog::info("{} waiting for the other process training it to finish or stop", tg);
        if (!lock.wait(stop_)) return {attempt_kind::stopped_waiting, {}};
    }
    // Under the lock, look again: another process may have finished the run since the scan.
    const run_dir_check now = check_run_dir(dir);
    const bool stored_finished = now.state == run_dir_state::finished || now.state == run_dir_state::damaged;
    const bool same_config = same_run_config(now.config_yaml, config_yaml);
    const build_info build_now = current_build(per_run_threads_);
    const bool rebuild = rebuild_.count(i) && now.state == run_dir_state::finished && same_config &&
                         !(now.result->build && describe(*now.result->build) == describe(build_now));
    if (now.state == run_dir_state::finished && same_config && !rebuild) {
        spdlog::info("{} already done ({}), skipped", tg, to_string(now.result->status));
        return {attempt_kind::done_elsewhere, *now.result};
    }
    // A finished run with another configuration (or, with --rerun-other-builds,
    // of another build) is replaced only once the new one is done: it is
    // trained in `work` beside it (a kill or Ctrl-C leaves the old run whole,
    // and the same command resumes the new one).
    const bool replacing = stored_finished && (!same_config || rebuild);
    const std::string work = replacing ? replacement_dir(dir) : dir;
    if (rebuild) {
        spdlog::info(
            "{} was trained by {}; retrained by this build ({}) in {}, which replaces it when done "
            "(--rerun-other-builds)",
            tg, now.result->build ? describe(*now.result->build) : "a build that left no stamp", describe(build_now),
            work);
        check_replacement_dir(work);
        make_dirs(work);
    } else if (replacing) {
        const std::string diffs = differences_text(config_differences(now.config_yaml, config_yaml));
        if (!opt_.overwrite)
            throw config_error(
                fmt::format("{}: finished (by another process) with another configuration: {}; it is not overwritten. "
                            "Use another --out, or --overwrite to retrain it",
                            dir, diffs));
        spdlog::warn(
            "{} finished with another configuration ({}); retrained in {}, which replaces it when done "
            "(--overwrite)",
            tg, diffs, work);
        check_replacement_dir(work);
        make_dirs(work);
    }  // a damaged run with this config was named by the scan: it is trained again
    const int steps = point.config.train.steps;
    const std::string state_path = work + "/" + resume_filename;
    const std::optional<train_state> resume = resumable_state(work, config_yaml, point.config, tg);
    if (resume) {
        fs::remove(work + "/result.yaml");
        remove_run_temporaries(work);
        spdlog::info("{} training {} steps, resumed after step {} from {}", tg, steps, resume->step, state_path);
        if (resume->threads != per_run_threads_)
            spdlog::warn(
                "{} was trained with {} threads before, {} now: its results will differ in the last bits "
                "from those of a run never stopped",
                tg, resume->threads, per_run_threads_);
    } else {
        clear_run_dir(work);
        write_file_atomic(work + "/config.yaml", config_yaml);
        write_file_atomic(work + "/metrics.csv", csv_line(metrics_csv_columns()));
    }
    metrics_file metrics(work + "/metrics.csv");
    train_callbacks cb;
    cb.on_attention_form = [&](parallel_form form) {
        spdlog::info("{} attention in the {} form{}", tg, to_string(form),
                     point.config.attention.form == parallel_form::automatic ? " (attention.form auto)" : "");
    };
    cb.stop = stop_;
    double last_train_loss = NAN, last_train_acc = NAN, last_tps = NAN, last_val_loss = NAN, last_val_acc = NAN;
    cb.on_row = [&](const metrics_row& r) {
        metrics.row(metrics_fields(r));
        if (r.split == "train") {
            last_train_loss = r.m.loss;
            last_train_acc = r.m.token_acc;
            last_tps = r.tokens_per_s.value_or(NAN);
            return;
        }
        if (r.split == "val") {
            last_val_loss = r.m.loss;
            last_val_acc = r.m.token_acc;
            return;
        }
        if (r.step == 0) {
            spdlog::info("{} training {} steps", tg, steps);
            return;
        }
        const double run_left = r.elapsed_s / r.step * (steps - r.step);
        double sweep_left;
        {
            std::lock_guard<std::mutex> g(mu_);
            const double per_run = trained_ > 0 ? trained_s_ / trained_ : r.elapsed_s / r.step * steps;
            const std::size_t started = std::min(next_.load(), queue_.size());
            sweep_left = run_left + static_cast<double>(queue_.size() - started) * per_run / opt_.jobs;
        }
        // Text: the test loss also in bits per byte, and no sequence accuracy.
        const std::string test_extra = point.config.task.kind == task_kind::text
                                           ? fmt::format(" ({:.4f} bits/byte)", r.m.loss / std::log(2.0))
                                           : fmt::format(" seq {:.3f}", r.m.seq_acc);
        spdlog::info(
            "{} step {}/{} | train loss {:.4f} acc {:.3f} | val loss {:.4f} acc {:.3f} | test loss {:.4f} acc {:.3f}{} "
            "| {:.1f}k tok/s | left: run {}, sweep {}",
            tg, r.step, steps, last_train_loss, last_train_acc, last_val_loss, last_val_acc, r.m.loss, r.m.token_acc,
            test_extra, last_tps / 1000, duration_text(run_left), duration_text(sweep_left));
    };
    // Checkpoint: written before result.yaml, which marks the run complete.
    bool saved = false;
    cb.on_finished = [&](const transformer<float>& model) {
        if (!params_finite(model)) return;
        const build_info build = current_build(per_run_threads_);
        checkpoint_save(work + "/" + checkpoint_filename, model, &build);
        saved = true;
    };
    // Resume state: when stopped, and every save_every_s seconds.
    cb.save_state = [&](const train_state& st) { train_state_save(state_path, st, config_yaml); };
    cb.save_every_s = opt_.save_every_s;
    const run_result res = train_run(point.config, cb, resume ? &*resume : nullptr);
    if (res.status == run_status::interrupted) {
        if (res.reason.rfind("interrupted at step", 0) != 0)  // stopped while its data loaded: nothing saved
            spdlog::warn("{} interrupted while its data loaded ({}); the same command runs it again", tg, res.reason);
        else
            spdlog::warn("{} interrupted after step {}/{}; its state is saved in {}: the same command resumes it", tg,
                         res.steps, steps, state_path);
        return {attempt_kind::interrupted, res};
    }
    run_result done = res;
    done.build = current_build(per_run_threads_);
    write_run_result(work, done);
    std::error_code ec;
    fs::remove(state_path, ec);  // after result.yaml: the run is done, its state of no more use
    if (replacing) {
        replace_run_dir(dir, work);
        spdlog::info("{} replaced the run with another configuration in {}", tg, dir);
    }
    if (resume) {
        std::lock_guard<std::mutex> g(mu_);
        ++out_.resumed;
    }
    if (res.status == run_status::diverged) {
        spdlog::warn("{} diverged: {}; no checkpoint saved", tg, res.reason);
    } else {
        const std::string test_extra = point.config.task.kind == task_kind::text
                                           ? fmt::format("loss {:.4f} ({:.4f} bits/byte)", res.final_test.loss,
                                                         res.final_test.loss / std::log(2.0))
                                           : fmt::format("seq acc {:.4f}", res.final_test.seq_acc);
        spdlog::info("{} done in {}: test token acc {:.4f}, {} (at step {}, lowest val loss: test token acc {:.4f})",
                     tg, duration_text(res.wall_s), res.final_test.token_acc, test_extra, res.best_step,
                     res.best_test.token_acc);
        if (!saved) spdlog::warn("{} parameters not finite; no checkpoint saved", tg);
    }
    return {attempt_kind::trained, done};
}

// The next run for a worker: the queue in spec order, then the runs put off
// because another process held them (`wait`: this time their lock is waited for).
bool sweep_runner::next_run(std::size_t& i, bool& wait) {
    const std::size_t q = next_.fetch_add(1);
    if (q < queue_.size()) {
        i = queue_[q];
        wait = false;
        return true;
    }
    std::lock_guard<std::mutex> g(mu_);
    if (deferred_.empty()) return false;
    i = deferred_.front();
    deferred_.erase(deferred_.begin());
    wait = true;
    return true;
}

void sweep_runner::record(std::size_t i, const attempt& a) {
    switch (a.kind) {
        case attempt_kind::interrupted: out_.interrupted = true; return;
        case attempt_kind::stopped_waiting:
            ++out_.busy;
            out_.interrupted = true;
            return;
        case attempt_kind::busy: deferred_.push_back(i); return;
        case attempt_kind::done_elsewhere:
            results_[i] = a.result;
            ++out_.skipped;
            break;
        case attempt_kind::trained:
            results_[i] = a.result;
            trained_s_ += a.result.wall_s;
            ++trained_;
            ++(a.result.status == run_status::diverged ? out_.diverged : out_.ok);
            break;
    }
    write_summary();
    log_progress();
}

void sweep_runner::worker() {
    omp_set_num_threads(per_run_threads_);  // per calling thread: this worker's runs
    try {
        std::size_t i = 0;
        bool wait = false;
        while (!stop_->load() && next_run(i, wait)) {
            const attempt a = train_one(i, wait);
            std::lock_guard<std::mutex> g(mu_);
            record(i, a);
            if (a.kind == attempt_kind::interrupted || a.kind == attempt_kind::stopped_waiting) return;
        }
    } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_) error_ = std::current_exception();
        stop_->store(true);  // the other workers end their runs as interrupted
    }
}

void sweep_runner::check_memory() const {
    if (queue_.empty()) return;
    const memory_limit limit =
        opt_.max_memory > 0 ? memory_limit{opt_.max_memory, "--max-memory"} : machine_memory_limit();
    if (limit.bytes == 0) {
        spdlog::debug("memory: no limit known (no /proc/meminfo, no cgroup limit); not checked");
        return;
    }
    std::vector<std::pair<std::size_t, std::size_t>> sizes;  // (bytes, spec index), largest first
    for (std::size_t i : queue_)
        sizes.emplace_back(estimate_training_memory(spec_.runs[i].config, per_run_threads_).total(), i);
    std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const std::size_t at_once = std::min<std::size_t>(static_cast<std::size_t>(opt_.jobs), sizes.size());
    std::size_t need = 0;
    for (std::size_t k = 0; k < at_once; ++k) need = add_saturating(need, sizes[k].first);
    const std::string& biggest = spec_.runs[sizes[0].second].id;
    if (need <= limit.bytes) {
        spdlog::info(
            "memory: ~{} for the largest run{}, limit {} ({})", format_bytes(static_cast<double>(sizes[0].first)),
            at_once > 1
                ? fmt::format(", ~{} for the {} largest at once", format_bytes(static_cast<double>(need)), at_once)
                : "",
            format_bytes(static_cast<double>(limit.bytes)), limit.source);
        return;
    }
    const memory_estimate e = estimate_training_memory(spec_.runs[sizes[0].second].config, per_run_threads_);
    auto b = [](std::size_t n) { return format_bytes(static_cast<double>(n)); };
    std::string msg = fmt::format(
        "not enough memory: run {} needs about {} to train (parameters {}, gradients {}, AdamW {}, activations {}, "
        "attention {}, scratch and data {}, {} thread{} {})",
        biggest, b(e.total()), b(e.params), b(e.grads), b(e.optimizer), b(e.activations), b(e.attention), b(e.scratch),
        per_run_threads_, per_run_threads_ == 1 ? "" : "s", b(e.per_thread));
    if (at_once > 1)
        msg += fmt::format(", and the {} largest runs trained at once (--jobs {}) {}", at_once, opt_.jobs, b(need));
    msg += fmt::format(
        "; the limit is {} ({}). Lower train.batch, the sequence length or the model, use fewer "
        "--jobs, or set --max-memory; nothing was run",
        b(limit.bytes), limit.source);
    throw config_error(msg);
}

sweep_outcome sweep_runner::run() {
    if (opt_.out_root.empty()) throw config_error("--out: the output directory must not be empty");
    if (opt_.jobs < 1) throw config_error("--jobs: expected at least 1, got " + std::to_string(opt_.jobs));
    if (opt_.shard.count < 1 || opt_.shard.index < 0 || opt_.shard.index >= opt_.shard.count)
        throw config_error(fmt::format("--shard: I must be in 0..N-1, got {}/{}", opt_.shard.index, opt_.shard.count));
    stop_ = opt_.stop ? opt_.stop : &own_stop_;
    sweep_t0_ = clock_type::now();
    out_.dir = opt_.out_root + "/" + spec_.name;
    out_.summary_path = summary_dir() + "/summary.csv";

    // Threads: see runner.hpp.
    const int caller_omp = omp_get_max_threads();
    const int caller_eigen = Eigen::nbThreads();
    const int total_threads = opt_.threads > 0 ? opt_.threads : caller_omp;
    per_run_threads_ = std::max(1, total_threads / opt_.jobs);
    const int eigen_threads = opt_.jobs > 1 ? 1 : opt_.threads;

    // This shard's runs: the finished ones are skipped, the others queued in spec order (or refused).
    results_.assign(spec_.runs.size(), std::nullopt);
    std::vector<std::size_t> owned, others;
    for (std::size_t i = 0; i < spec_.runs.size(); ++i) (opt_.shard.owns(i) ? owned : others).push_back(i);
    out_.total = static_cast<int>(owned.size());
    sweep_scan scan = scan_sweep_runs(
        spec_, out_.dir, owned, opt_.overwrite, [this](std::size_t i) { return tag(i); }, others);
    if (opt_.rerun_other_builds) {
        const std::vector<std::size_t> again = rebuild_runs(spec_, scan.done, current_build(per_run_threads_));
        rebuild_.insert(again.begin(), again.end());
        scan.done.erase(std::remove_if(scan.done.begin(), scan.done.end(),
                                       [&](const auto& d) { return rebuild_.count(d.first) > 0; }),
                        scan.done.end());
        scan.to_train.insert(scan.to_train.end(), again.begin(), again.end());
        std::sort(scan.to_train.begin(), scan.to_train.end());
        spdlog::info("--rerun-other-builds: {} finished run{} of other builds to retrain with this one ({})",
                     again.size(), again.size() == 1 ? "" : "s", describe(current_build(per_run_threads_)));
    }
    for (auto& [i, r] : scan.done) results_[i] = r;
    out_.skipped = static_cast<int>(scan.done.size());
    queue_ = std::move(scan.to_train);
    check_memory();  // before anything is written

    make_dirs(out_.dir + "/runs");
    make_dirs(summary_dir());
    membership_ = claim_sweep_dir(out_.dir, spec_, opt_.overwrite);
    for (const auto& note : scan.notes) spdlog::warn("{}", note);
    if (eigen_threads > 0) Eigen::setNbThreads(eigen_threads);
    const int workers = static_cast<int>(std::min<std::size_t>(opt_.jobs, queue_.size()));
    std::string share;
    if (opt_.shard.sharded())
        share = fmt::format(" (shard {}/{} of {})", opt_.shard.index, opt_.shard.count, spec_.runs.size());
    spdlog::info("sweep {}: {} runs{}, {} already done, {} to train: {} at a time, {} thread{} each", spec_.name,
                 out_.total, share, out_.skipped, queue_.size(), std::max(workers, 1), per_run_threads_,
                 per_run_threads_ == 1 ? "" : "s");

    pool_t0_ = clock_type::now();
    {
        std::vector<std::thread> pool;
        for (int w = 1; w < workers; ++w) pool.emplace_back([this] { worker(); });
        if (workers > 0) worker();  // the calling thread is worker 0
        for (auto& t : pool) t.join();
    }
    omp_set_num_threads(caller_omp);
    if (eigen_threads > 0) Eigen::setNbThreads(caller_eigen);
    if (error_) std::rethrow_exception(error_);
    if (!deferred_.empty()) {  // stopped before their turn came
        out_.busy += static_cast<int>(deferred_.size());
        out_.interrupted = true;
    }
    if (stop_->load() && out_.skipped + out_.ok + out_.diverged + out_.busy < out_.total) out_.interrupted = true;

    write_summary();
    spdlog::info("{}: {} runs ({} trained ok, {} diverged, {} skipped as done) in {}; summary in {}", spec_.name,
                 out_.total, out_.ok, out_.diverged, out_.skipped, duration_text(seconds_since(sweep_t0_)),
                 out_.summary_path);
    if (!opt_.shard.sharded())
        for (const std::string& w : lr_warnings_) spdlog::warn("{}", w);
    if (out_.busy > 0)
        spdlog::warn(
            "{} runs were being trained by another process when this one was stopped and are not in this "
            "summary; `attnlab summarize {}` collects them when they are done",
            out_.busy, out_.dir);
    if (opt_.shard.sharded() && !out_.interrupted)
        spdlog::info(
            "shard {}/{} done; when every shard is, `attnlab summarize {}` writes {}/summary.csv and "
            "table.md",
            opt_.shard.index, opt_.shard.count, out_.dir, out_.dir);
    return out_;
}

}  // namespace

sweep_outcome run_sweep(const experiment_spec& spec, const runner_options& opt) {
    sweep_runner runner(spec, opt);
    return runner.run();
}

}  // namespace attnlab
