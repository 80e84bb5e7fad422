// The training loop of one run.
#include "attnlab/train/trainer.hpp"

#include <chrono>
#include <cmath>

#include "attnlab/train/optimizer.hpp"

namespace attnlab {

const char* to_string(run_status s) {
    switch (s) {
        case run_status::ok: return "ok";
        case run_status::diverged: return "diverged";
        case run_status::interrupted: return "interrupted";
    }
    return "?";
}

namespace {

// Running sums of answer-position metrics over examples.
struct metrics_accumulator {
    double loss_sum = 0, token_acc_sum = 0, seq_right = 0;
    long answers = 0, examples = 0;

    // Adds the examples of the model's last forward on a (B, T) batch.
    void add(const transformer<float>& model, const batch& data, int first, int B) {
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
double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

}  // namespace

std::string describe(const run_result& r) {
    std::string text = r.reason;
    if (r.nonpositive_denominator_steps > 0) {
        if (!text.empty()) text += "; ";
        text += "softmax denominator <= 0 in " + std::to_string(r.nonpositive_denominator_steps) + " steps (first at step " +
                std::to_string(r.first_nonpositive_step) + ")";
    }
    return text;
}

eval_metrics evaluate(transformer<float>& model, const batch& data, int chunk_B) {
    metrics_accumulator acc;
    for (int first = 0; first < data.B; first += chunk_B) {
        const int B = std::min(chunk_B, data.B - first);
        const std::size_t off = static_cast<std::size_t>(first) * data.T;
        model.forward(data.tokens.data() + off, data.targets.data() + off, B, data.T);
        acc.add(model, data, first, B);
    }
    return acc.result();
}

run_result train_run(const run_config& cfg, const train_callbacks& cb) {
    const auto t0 = clock_type::now();
    auto data = make_task(cfg.task, static_cast<std::uint64_t>(cfg.seed));
    transformer<float> model(cfg.model, cfg.attention, data->vocab_size(), max_seq_len(cfg.task));
    model.init_params(static_cast<std::uint64_t>(cfg.seed));
    adamw<float> opt(model.layout(), cfg.train.weight_decay);
    const train_config& tc = cfg.train;
    const batch& test = data->test_set();
    model.reserve(std::max(tc.batch, 1), std::max(data->train_seq_len(), data->test_seq_len()));

    run_result res;
    res.params = model.params.size();
    auto emit = [&](const metrics_row& r) { if (cb.on_row) cb.on_row(r); };

    // The test metrics at `step`; tracks the best and the final.
    auto test_row = [&](int step, double lr) {
        metrics_row r;
        r.step = step;
        r.split = "test";
        r.m = evaluate(model, test, tc.batch);
        r.lr = lr;
        r.elapsed_s = seconds_since(t0);
        if (step == 0 || r.m.token_acc > res.best_test.token_acc) {
            res.best_test = r.m;
            res.best_step = step;
        }
        res.final_test = r.m;
        emit(r);
        return r.m;
    };
    test_row(0, 0.0);

    batch b;
    metrics_accumulator window;  // train metrics since the last row
    double grad_norm_sum = 0;
    int window_steps = 0;
    auto window_t0 = clock_type::now();
    for (int step = 1; step <= tc.steps; ++step) {
        if (cb.stop && cb.stop->load()) {
            res.status = run_status::interrupted;
            res.reason = "interrupted at step " + std::to_string(step);
            break;
        }
        data->next_train_batch(b, tc.batch);
        model.zero_grad();
        const float loss = model.forward(b.tokens.data(), b.targets.data(), b.B, b.T);
        window.add(model, b, 0, b.B);
        if (model.nonpositive_denominator_rows() > 0) {
            if (res.nonpositive_denominator_steps++ == 0) res.first_nonpositive_step = step;
        }
        model.backward();
        const double gnorm = clip_grad_norm(model.grads, tc.clip);
        if (!std::isfinite(loss) || !std::isfinite(gnorm)) {
            res.status = run_status::diverged;
            res.reason = std::string(std::isfinite(loss) ? "gradient" : "loss") + " not finite at step " +
                         std::to_string(step);
            res.steps = step - 1;
            break;
        }
        const double lr = learning_rate(tc, step);
        opt.step(model.params, model.grads, lr);
        res.steps = step;
        grad_norm_sum += gnorm;
        ++window_steps;

        if (step % tc.eval_every == 0 || step == tc.steps) {
            metrics_row r;
            r.step = step;
            r.split = "train";
            r.m = window.result();
            r.lr = lr;
            r.grad_norm = grad_norm_sum / window_steps;
            r.tokens_per_s = static_cast<double>(window_steps) * b.B * b.T / seconds_since(window_t0);
            r.elapsed_s = seconds_since(t0);
            emit(r);
            test_row(step, lr);
            window = metrics_accumulator{};
            grad_norm_sum = 0;
            window_steps = 0;
            window_t0 = clock_type::now();
        }
    }
    res.wall_s = seconds_since(t0);
    if (res.status == run_status::ok && cb.on_finished) cb.on_finished(model);
    return res;
}

}  // namespace attnlab
