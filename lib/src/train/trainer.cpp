// The training loop of one run.
#include "attnlab/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <omp.h>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attnlab/io/files.hpp"
#include "attnlab/io/sha256.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/train/checkpoint.hpp"  // params_finite, checkpoint_load
#include "attnlab/train/optimizer.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/subnormals.hpp"
#include "attnlab/util/stopwatch.hpp"

namespace attnlab {

namespace {

// train.init: the checkpoint's parameters in place of the random ones. The
// file must still be the one the spec was loaded with (its sha256 is in the
// run's config), or the run would not be the one config.yaml describes.
void start_from_checkpoint(const train_config& tc, transformer<float>& model) {
    try {
        sha256_hasher hash;
        read_regular_file(tc.init, regular_file_size(tc.init),
                          [&](const char* bytes, std::size_t n) { hash.update(bytes, n); });
        if (!tc.init_sha256.empty() && hash.hex() != tc.init_sha256)
            throw config_error("train.init: " + tc.init + " has changed since the spec was loaded (sha256 " +
                               hash.hex() + ", the run's config records " + tc.init_sha256 + ")");
        checkpoint_load(tc.init, model);
    } catch (const io_error& e) {
        throw io_error(std::string("train.init: ") + e.what());
    }
}

// What a step that went non-finite looked like, for result.yaml's reason:
// the largest |score| q·k/sqrt(HS) of any head (before a clamp) and the
// largest row log-sum-exp of the scores exp sees (after the clamp), from a
// forward pass of the diverging batch with the last finite parameters. exp
// overflows float32 past 88.7, so a log-sum-exp near it names the overflow;
// a modest one points at the gradient instead.
std::string fmt_reason(const char* format, ...) {
    char buf[256];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    return buf;
}

struct score_extremes {
    double max_abs_score = 0, max_row_logsumexp = -std::numeric_limits<double>::infinity();
};
score_extremes diverging_batch_scores(transformer<float>& model, const batch& b, std::optional<double> clamp) {
    score_extremes x;
    model.forward(b.tokens.data(), b.targets.data(), b.B, b.T);
    const int L = model.config().layers, NH = model.config().heads, C = model.config().d_model, HS = C / NH;
    const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
    for (int l = 0; l < L; ++l) {
        const float* Q = model.queries(l);  // (B, T, C)
        const float* K = model.keys(l);     // (B, T, C)
        for (int bh = 0; bh < b.B * NH; ++bh) {
            const long at = static_cast<long>(bh / NH) * b.T * C + static_cast<long>(bh % NH) * HS;
            for (int i = 0; i < b.T; ++i) {
                double row_max = -std::numeric_limits<double>::infinity(), row_sum = 0;
                std::vector<double> row(static_cast<std::size_t>(i) + 1);
                for (int j = 0; j <= i; ++j) {
                    double s = 0;
                    for (int d = 0; d < HS; ++d)
                        s += static_cast<double>(Q[at + static_cast<long>(i) * C + d]) *
                             K[at + static_cast<long>(j) * C + d];
                    s *= scale;
                    x.max_abs_score = std::max(x.max_abs_score, std::abs(s));
                    row[static_cast<std::size_t>(j)] = clamp ? std::min(s, *clamp) : s;
                    row_max = std::max(row_max, row[static_cast<std::size_t>(j)]);
                }
                for (double s : row) row_sum += std::exp(s - row_max);
                x.max_row_logsumexp = std::max(x.max_row_logsumexp, row_max + std::log(row_sum));
            }
        }
    }
    return x;
}

// Running sums of answer-position metrics over examples.
struct metrics_accumulator {
    double loss_sum = 0, token_acc_sum = 0, seq_right = 0;
    long answers = 0, examples = 0;

    // Adds the examples of the model's last forward on a (B, T) batch.
    template <class S>
    void add(const transformer<S>& model, const batch& data, int first, int B) {
        const auto& rows = model.answer_rows();
        const auto& pred = model.predictions();
        const auto& loss = model.answer_losses();
        const int T = data.T;
        std::size_t a = 0;
        for (int b = 0; b < B; ++b) {
            int right = 0, total = 0;
            for (; a < rows.size() && rows[a] / T == b; ++a) {
                const int t = rows[a] % T;
                const auto target = data.targets[static_cast<std::size_t>(first + b) * T + t];
                right += pred[a] == target;
                ++total;
                loss_sum += loss[a];
            }
            answers += total;
            if (total == 0) continue;  // an example without answers says nothing
            ++examples;
            token_acc_sum += static_cast<double>(right) / total;
            seq_right += right == total;
        }
    }

    eval_metrics result() const {
        eval_metrics m;
        if (answers > 0) m.loss = loss_sum / answers;
        if (examples > 0) {
            m.token_acc = token_acc_sum / examples;
            m.seq_acc = seq_right / examples;
        }
        return m;
    }
};

using clock_type = std::chrono::steady_clock;

}  // namespace

void record_evaluation(run_result& r, int step, const eval_metrics& val, const eval_metrics& test) {
    const bool better = val.loss < r.best_val.loss || (std::isnan(r.best_val.loss) && !std::isnan(val.loss));
    if (step == 0 || better) {
        r.best_step = step;
        r.best_val = val;
        r.best_test = test;
    }
    r.final_val = val;
    r.final_test = test;
}

template <class T>
eval_metrics evaluate(transformer<T>& model, const batch& data, int chunk_B) {
    metrics_accumulator acc;
    for (int first = 0; first < data.B; first += chunk_B) {
        const int B = std::min(chunk_B, data.B - first);
        const std::size_t off = static_cast<std::size_t>(first) * data.T;
        model.forward(data.tokens.data() + off, data.targets.data() + off, B, data.T);
        acc.add(model, data, first, B);
    }
    return acc.result();
}

template eval_metrics evaluate<float>(transformer<float>&, const batch&, int);
template eval_metrics evaluate<double>(transformer<double>&, const batch&, int);

run_result train_run(const run_config& cfg, const train_callbacks& cb, const train_state* resume) {
    const auto t0 = clock_type::now();
    const subnormals_flushed fast_underflow;  // sharp softmax rows would otherwise slow x86 ~12x
    // Ctrl-C while a large text file loads: stopped before step 0, nothing to save yet.
    const auto stopped_before_start = [](const std::string& why) {
        run_result stopped;
        stopped.status = run_status::interrupted;
        stopped.reason = why;
        return stopped;
    };
    std::unique_ptr<task> data;
    try {
        data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed), cb.stop);
    } catch (const read_interrupted& e) {
        return stopped_before_start(e.what());
    }
    if (cb.stop && cb.stop->load()) return stopped_before_start("interrupted while the task's data was made");
    // Where every position is an answer (text), "every answer right" is not a metric.
    const bool seq_acc_applies = traits_of(cfg.task.kind).sequence_accuracy;
    auto applicable = [seq_acc_applies](eval_metrics m) {
        if (!seq_acc_applies) m.seq_acc = std::numeric_limits<double>::quiet_NaN();
        return m;
    };
    transformer<float> model = make_model<float>(cfg);
    model.init_params(static_cast<std::uint64_t>(cfg.seed));
    if (!cfg.train.init.empty() && !resume) start_from_checkpoint(cfg.train, model);
    adamw<float> opt(model.layout(), cfg.train.weight_decay);
    const train_config& tc = cfg.train;
    const batch& val = data->val_set();
    const batch& test = data->test_set();

    run_result res;
    metrics_accumulator window;  // train metrics since the last row
    double grad_norm_sum = 0;
    int window_steps = 0;
    double window_s0 = 0;  // seconds of the window spent before a resume
    double elapsed0 = 0;   // seconds of the run spent before a resume
    int first_step = 1;
    batch b;
    double last_loss = 0, last_gnorm = 0;  // of the last finite step, for a divergence's reason
    if (resume) {
        const std::size_t n = model.params.size();
        if (resume->params.size() != n || resume->adam_m.size() != n || resume->adam_v.size() != n)
            throw std::invalid_argument("resume state: " + std::to_string(resume->params.size()) +
                                        " parameters, the model has " + std::to_string(n));
        if (resume->step < 0 || resume->step >= tc.steps || resume->adam_steps < 0)
            throw std::invalid_argument("resume state: step " + std::to_string(resume->step) + " is not in 0.." +
                                        std::to_string(tc.steps - 1));
        model.params = resume->params;
        opt.restore(resume->adam_m, resume->adam_v, resume->adam_steps);
        res = resume->result;
        res.status = run_status::ok;
        res.reason.clear();
        const train_window& w = resume->window;
        window.loss_sum = w.loss_sum;
        window.token_acc_sum = w.token_acc_sum;
        window.seq_right = w.seq_right;
        window.answers = w.answers;
        window.examples = w.examples;
        grad_norm_sum = w.grad_norm_sum;
        window_steps = w.steps;
        window_s0 = w.seconds;
        elapsed0 = resume->result.wall_s;
        // The data stream: draw and drop the batches of the steps already done.
        for (int s = 1; s <= resume->step; ++s) data->next_train_batch(b, tc.batch);
        first_step = resume->step + 1;
    }
    res.params = model.params.size();
    const parallel_form form = model.parallel_form_at(train_seq_len(cfg.task));
    res.attention_form = to_string(form);
    if (cb.on_attention_form) cb.on_attention_form(form);
    auto elapsed = [&] { return elapsed0 + seconds_since(t0); };
    auto emit = [&](const metrics_row& r) {
        if (cb.on_row) cb.on_row(r);
    };
    res.baselines = data->baselines();

    // The val and test rows at `step` (lr: the rate of that step, none at
    // step 0); the result tracks the final and the best evaluation.
    auto evaluation_rows = [&](int step, std::optional<double> lr) {
        metrics_row v;
        v.step = step;
        v.split = "val";
        v.m = applicable(evaluate(model, val, tc.batch));
        v.lr = lr;
        v.elapsed_s = elapsed();
        emit(v);
        metrics_row t = v;
        t.split = "test";
        t.m = applicable(evaluate(model, test, tc.batch));
        t.elapsed_s = elapsed();
        emit(t);
        record_evaluation(res, step, v.m, t.m);
    };
    if (!resume) evaluation_rows(0, std::nullopt);

    auto window_t0 = clock_type::now();
    auto last_save = clock_type::now();
    // The state after `step` steps (the window's sums as they stand).
    auto state_after = [&](int step) {
        train_state st;
        st.step = step;
        st.params = model.params;
        st.adam_m = opt.first_moment();
        st.adam_v = opt.second_moment();
        st.adam_steps = opt.steps_taken();
        st.result = res;
        st.result.wall_s = elapsed();
        st.window = {window.loss_sum, window.token_acc_sum, window.seq_right, window.answers,
                     window.examples, grad_norm_sum,        window_steps,     window_s0 + seconds_since(window_t0)};
        st.threads = omp_get_max_threads();
        return st;
    };
    for (int step = first_step; step <= tc.steps; ++step) {
        if (cb.stop && cb.stop->load()) {
            res.status = run_status::interrupted;
            res.reason = "interrupted at step " + std::to_string(step);
            if (cb.save_state) cb.save_state(state_after(step - 1));
            break;
        }
        data->next_train_batch(b, tc.batch);
        model.zero_grad();
        const float loss = model.forward_backward(b.tokens.data(), b.targets.data(), b.B, b.T);
        window.add(model, b, 0, b.B);
        if (model.nonpositive_denominator_rows() > 0) {
            if (res.nonpositive_denominator_steps++ == 0) res.first_nonpositive_step = step;
        }
        const double gnorm = clip_grad_norm(model.grads, tc.clip);
        if (!std::isfinite(loss) || !std::isfinite(gnorm)) {
            res.status = run_status::diverged;
            res.reason =
                std::string(std::isfinite(loss) ? "gradient" : "loss") + " not finite at step " + std::to_string(step);
            if (step > first_step)
                res.reason += fmt_reason(" (step %d, the last finite: loss %.4g, gradient norm %.4g before clipping)",
                                         step - 1, last_loss, last_gnorm);
            if (params_finite(model)) {
                const score_extremes x = diverging_batch_scores(model, b, cfg.attention.clamp);
                res.reason += fmt_reason(
                    "; its batch with the last finite parameters: largest |score| %.4g, largest "
                    "row log-sum-exp of exp's scores %.4g (float32 exp overflows past 88.7)",
                    x.max_abs_score, x.max_row_logsumexp);
            }
            res.steps = step - 1;
            break;
        }
        last_loss = loss;
        last_gnorm = gnorm;
        const double lr = learning_rate(tc, step);
        opt.step(model.params, model.grads, lr);
        res.steps = step;
        grad_norm_sum += gnorm;
        ++window_steps;

        const bool evaluates = step % tc.eval_every == 0 || step == tc.steps;
        if (evaluates || (tc.log_every > 0 && step % tc.log_every == 0)) {
            metrics_row r;
            r.step = step;
            r.split = "train";
            r.m = applicable(window.result());
            r.lr = lr;
            r.grad_norm = grad_norm_sum / window_steps;
            r.tokens_per_s = static_cast<double>(window_steps) * b.B * b.T / (window_s0 + seconds_since(window_t0));
            r.elapsed_s = elapsed();
            emit(r);
            if (evaluates) evaluation_rows(step, lr);
            window = metrics_accumulator{};
            grad_norm_sum = 0;
            window_steps = 0;
            window_s0 = 0;
            window_t0 = clock_type::now();
        }
        if (cb.save_state && cb.save_every_s > 0 && step < tc.steps && seconds_since(last_save) >= cb.save_every_s) {
            cb.save_state(state_after(step));
            last_save = clock_type::now();
        }
    }
    res.wall_s = elapsed();
    if (res.status == run_status::ok && cb.on_finished) cb.on_finished(model);
    return res;
}

}  // namespace attnlab
