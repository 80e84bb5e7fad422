// The whole model evaluated with recurrent attention (recurrent.hpp): same
// losses as the parallel form in double for every numerator and denominator
// of the variant table, and a trained model makes the same prediction at
// every answer position of its test set.
#include <catch2/catch.hpp>

#include "attnlab/model/generator.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/train/trainer.hpp"
#include "support/model_check.hpp"
#include "support/tiny_config.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {
// Every numerator and every denominator of the table (see
// each_numerator_with_a_denominator), gates on some of them.
std::vector<attention_config> model_cases(int order) {
    std::vector<attention_config> cases = each_numerator_with_a_denominator(order);
    for (std::size_t i = 0; i < cases.size(); ++i) {
        cases[i].in_gate = i % 2 == 0;
        cases[i].out_gate = i % 3 == 0 && !traits_of(cases[i].denominator).has_output_gate;
    }
    return cases;
}
}  // namespace

TEST_CASE("model forward: recurrent form = parallel form in double", "[recurrent][model]") {
    const std::vector<attention_config> cases = model_cases(3);
    task_config t;
    t.kind = task_kind::lookup;
    t.vocab = 16;
    t.seq_len = 8;
    t.pairs = 2;
    t.test_examples = 6;
    auto data = make_task(t, 3);
    const batch& test = data->test_set();
    for (const auto& a : cases) {
        for (auto layout : {state_layout::symmetric, state_layout::full}) {
            INFO(describe(a));
            transformer<double> model(micro_model(), a, data->vocab_size(), test.T);
            model.init_params(7);
            rng r(8);
            for (auto& w : model.params) w += 0.2 * r.normal();
            const double parallel = model.forward(test.tokens.data(), test.targets.data(), test.B, test.T);
            const std::vector<double> parallel_losses = model.answer_losses();
            model.set_attention_form(attention_form::recurrent, layout);
            const double recurrent = model.forward(test.tokens.data(), test.targets.data(), test.B, test.T);
            CHECK(std::abs(recurrent - parallel) <= 1e-10);
            for (size_t i = 0; i < parallel_losses.size(); ++i)
                CHECK(std::abs(model.answer_losses()[i] - parallel_losses[i]) <= 1e-10);
            CHECK_THROWS(model.backward());
        }
    }
}

// [sanitized]: one of the slow tests the sanitized build runs too (training, then the recurrent form).
TEST_CASE("a trained lookup model predicts the same in recurrent and parallel form",
          "[recurrent][model][slow][sanitized]") {
    run_config c = tiny_config({.vocab = 32,
                                .seq_len = 16,
                                .test_examples = 256,
                                .layers = 2,
                                .d_model = 32,
                                .steps = 300,
                                .lr = 3e-3,
                                .warmup = 50,
                                .eval_every = 300});
    c.attention.numerator = numerator_kind::taylor;
    c.attention.order = 2;
    c.attention.denominator = denominator_kind::softmax;
    std::vector<float> trained;
    train_callbacks cb;
    cb.on_finished = [&](const transformer<float>& m) { trained = m.params; };
    const run_result r = train_run(c, cb);
    REQUIRE(r.status == run_status::ok);
    CHECK(r.final_test.token_acc > 0.3);  // trained well past chance (1/16), so predictions are not trivial

    auto data = make_task(c.task, static_cast<std::uint64_t>(c.seed));
    const batch& test = data->test_set();
    transformer<float> model = make_model<float>(c);
    model.params = trained;
    model.forward(test.tokens.data(), test.targets.data(), test.B, test.T);
    const std::vector<std::int32_t> parallel = model.predictions();
    REQUIRE(parallel.size() == static_cast<size_t>(test.B * 2));  // 2 answers per example
    for (auto layout : {state_layout::symmetric, state_layout::full}) {
        model.set_attention_form(attention_form::recurrent, layout);
        model.forward(test.tokens.data(), test.targets.data(), test.B, test.T);
        CHECK(model.predictions() == parallel);
    }
}

TEST_CASE("generation step by step gives the parallel model's next-token losses", "[recurrent][model]") {
    // Targets = next tokens at every position: the parallel forward's losses
    // must equal -log softmax(step logits)[next token] of the generator.
    const std::vector<attention_config> cases = model_cases(2);
    const std::vector<std::int32_t> seq = {3, 1, 4, 1, 5, 6, 2, 6, 5};  // 8 inputs, 8 next tokens
    const int T = 8, V = 7;
    std::vector<std::int32_t> tokens(seq.begin(), seq.end() - 1), targets(seq.begin() + 1, seq.end());
    for (auto pos : {position_kind::rope, position_kind::learned}) {
        for (const auto& a : cases) {
            INFO(describe(a) << ", " << to_string(pos));
            transformer<double> model(micro_model(mlp_kind::gelu, pos), a, V, T);
            model.init_params(11);
            rng r(12);
            for (auto& w : model.params) w += 0.2 * r.normal();
            model.forward(tokens.data(), targets.data(), 1, T);
            const std::vector<double> expected = model.answer_losses();
            generator<double> gen(model, state_layout::symmetric, T);
            for (int t = 0; t < T; ++t) {
                const std::vector<double>& z = gen.step(tokens[t]);
                double mx = z[0], sum = 0;
                for (double v : z) mx = std::max(mx, v);
                for (double v : z) sum += std::exp(v - mx);
                CHECK(std::abs(std::log(sum) + mx - z[targets[t]] - expected[t]) <= 1e-10);
            }
            CHECK_THROWS(gen.step(0));  // past max_len
        }
    }
}
