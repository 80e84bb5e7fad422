// Determinism (README "Determinism"): the same spec, seed and thread count
// give the same metrics.csv (all but its wall-clock columns tokens_per_s and
// elapsed_s, which docs/outputs.md keeps in it) and the same model.safetensors, byte
// for byte, with 1 thread and with 2; and a run resumed from its state after
// any step (train_state, in process and through the resume-state file format)
// equals the run that never stopped.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <omp.h>
#include <map>
#include <string>
#include <vector>

#include "attnlab/io/csv.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/train/trainer.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"
#include "support/tiny_config.hpp"

using namespace attnlab;
using namespace attnlab::test;
namespace fs = std::filesystem;

namespace {

// Large enough that every OpenMP loop and the attention go parallel with 2 threads
// (N x C = 16 x 64 x 64 rows x columns, B x NH x T^2 x HS = 16 x 2 x 64^2 x 32).
const std::string parallel_spec = R"(name: det
base:
  seed: 3
  task: {kind: lookup, vocab: 128, seq_len: 64, pairs: 8, test_examples: 64}
  model: {layers: 2, d_model: 64, heads: 2, mlp: swiglu, position: rope}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 12, batch: 16, lr: 3.0e-3, warmup: 5, eval_every: 6}
)";

struct run_files {
    std::string metrics, model;
};

run_files run_once(const temp_dir& tmp, const fs::path& spec, const std::string& name, int threads) {
    const fs::path out = tmp / name;
    const auto r =
        run_cli({"run", spec.string(), "--out", out.string(), "--threads", std::to_string(threads)}, tmp.path());
    INFO(r.err);
    REQUIRE(r.code == 0);
    const fs::path run = out / "det" / "runs" / "seed=3";
    return {read_text(run / "metrics.csv"), read_text(run / "model.safetensors")};
}

}  // namespace

// [heavy]: four trainings through the binary; the sanitized build leaves it out.
TEST_CASE("the same spec, seed and thread count give the same metrics and checkpoint, byte for byte",
          "[determinism][heavy]") {
    temp_dir tmp;
    const fs::path spec = tmp / "det.yaml";
    write_text(spec, parallel_spec);
    for (const int threads : {1, 2}) {
        INFO(threads << " threads");
        const std::string n = std::to_string(threads);
        const run_files a = run_once(tmp, spec, "first_" + n, threads);
        const run_files b = run_once(tmp, spec, "second_" + n, threads);
        CHECK(lines_of(a.metrics).size() == 1 + 2 + 3 * 2);  // header, val and test at 0, then train, val, test
        CHECK(metrics_without_timings(a.metrics) == metrics_without_timings(b.metrics));
        CHECK(a.model == b.model);
    }
}

namespace {

run_config determinism_config() {
    return tiny_config({.seed = 5, .steps = 60, .batch = 4, .warmup = 3, .eval_every = 20});
}

// Metrics rows without their timings, as text (an empty cell where a value does not apply).
std::string row_text(const metrics_row& r) {
    auto cell = [](const std::optional<double>& v) { return v ? format_number(*v) : std::string(); };
    return csv_line({std::to_string(r.step), r.split, format_number(r.m.loss), format_number(r.m.token_acc),
                     format_number(r.m.seq_acc), cell(r.lr), cell(r.grad_norm)});
}

// In-process training on one OpenMP thread (a busy machine makes waiting threads slow).
struct one_thread {
    int was = omp_get_max_threads();
    one_thread() { omp_set_num_threads(1); }
    ~one_thread() { omp_set_num_threads(was); }
};

struct recorded {
    std::string rows;
    std::vector<float> params;
    run_result result;
    std::map<int, train_state> states;  // by step
};

recorded train(const run_config& cfg, const train_state* resume, bool save_every_step) {
    recorded out;
    train_callbacks cb;
    cb.on_row = [&](const metrics_row& r) { out.rows += row_text(r); };
    cb.on_finished = [&](const transformer<float>& m) { out.params = m.params; };
    if (save_every_step) {
        cb.save_every_s = 1e-300;  // after every step
        cb.save_state = [&](const train_state& st) { out.states[st.step] = st; };
    }
    out.result = train_run(cfg, cb, resume);
    return out;
}

}  // namespace

TEST_CASE("a run resumed from its state after any step equals the run that never stopped", "[determinism]") {
    const one_thread threads;
    for (const auto num : {numerator_kind::exp, numerator_kind::linear}) {
        run_config cfg = determinism_config();
        cfg.attention.numerator = num;  // linear/softmax: counts non-positive
                                        // softmax sums, carried over too
        INFO(to_string(num));
        const recorded full = train(cfg, nullptr, true);
        REQUIRE(full.result.status == run_status::ok);
        REQUIRE(full.states.size() == static_cast<std::size_t>(cfg.train.steps - 1));  // after steps 1..59
        const std::string config_yaml = "# the config of this run\n";
        for (const int k : {1, 7, 20, 21, 39, 40, 59}) {
            INFO("resumed after step " << k);
            // Through the file format, as the runner does.
            const std::string bytes = train_state_encode(full.states.at(k), config_yaml);
            const train_state st = train_state_decode(bytes, "state", config_yaml);
            CHECK(st.step == k);
            const recorded rest = train(cfg, &st, false);
            REQUIRE(rest.result.status == run_status::ok);
            // The rows after step k, the final parameters (bit for bit) and the result's counters.
            const int next_row = (k / cfg.train.eval_every + 1) * cfg.train.eval_every;
            std::string first_row = "\n";
            first_row += std::to_string(next_row);
            first_row += ",train,";
            const auto at = full.rows.find(first_row);
            REQUIRE(at != std::string::npos);
            CHECK(rest.rows == full.rows.substr(at + 1));
            REQUIRE(rest.params.size() == full.params.size());
            CHECK(std::memcmp(rest.params.data(), full.params.data(), full.params.size() * sizeof(float)) == 0);
            CHECK(rest.result.steps == full.result.steps);
            CHECK(rest.result.best_step == full.result.best_step);
            CHECK(rest.result.best_test.token_acc == full.result.best_test.token_acc);
            CHECK(rest.result.final_test.loss == full.result.final_test.loss);
            CHECK(rest.result.nonpositive_denominator_steps == full.result.nonpositive_denominator_steps);
            CHECK(rest.result.first_nonpositive_step == full.result.first_nonpositive_step);
        }
        if (num == numerator_kind::linear) CHECK(full.result.nonpositive_denominator_steps > 0);
    }
}

TEST_CASE("resume states: damaged, truncated or foreign files are refused with the file named", "[determinism]") {
    const one_thread threads;
    const run_config cfg = determinism_config();
    const recorded full = train(cfg, nullptr, true);
    const train_state& st = full.states.at(10);
    const std::string bytes = train_state_encode(st, "config A\n");
    const train_state back = train_state_decode(bytes, "f", "config A\n");
    CHECK(back.params == st.params);
    CHECK(back.adam_m == st.adam_m);
    CHECK(back.adam_v == st.adam_v);
    CHECK(back.adam_steps == 10);
    CHECK(back.window.steps == st.window.steps);
    CHECK(back.window.loss_sum == st.window.loss_sum);
    CHECK(back.result.best_step == st.result.best_step);

    using Catch::Matchers::Contains;
    CHECK_THROWS_WITH(train_state_decode(bytes, "runs/x/resume.state", "config B\n"),
                      Contains("runs/x/resume.state") && Contains("another config.yaml"));
    CHECK_THROWS_AS(train_state_decode(bytes.substr(0, bytes.size() / 2), "f", "config A\n"), io_error);
    std::string flipped = bytes;
    flipped[flipped.size() / 2] ^= 1;
    CHECK_THROWS_WITH(train_state_decode(flipped, "f", "config A\n"), Contains("checksum"));
    CHECK_THROWS_WITH(train_state_decode("hello", "f", "config A\n"), Contains("not a resume state"));

    // train_run checks that a state fits the config.
    run_config bigger = cfg;
    bigger.model.d_model = 32;
    train_callbacks cb;
    CHECK_THROWS_AS(train_run(bigger, cb, &st), std::invalid_argument);
}
