// Whole-model gradient checks in double on a micro model (every position
// and MLP kind, exact softmax attention), and model-level invariants.
#include <catch2/catch.hpp>

#include <omp.h>

#include <tuple>

#include "attnlab/model/transformer.hpp"
#include "attnlab/tasks/task.hpp"
#include "support/model_check.hpp"

using namespace attnlab;
using namespace attnlab::test;

TEST_CASE("whole micro model: analytic gradient = central differences", "[model][grad]") {
    const auto mlp = GENERATE(mlp_kind::swiglu, mlp_kind::gelu, mlp_kind::none);
    const auto pos = GENERATE(position_kind::rope, position_kind::learned, position_kind::none);
    attention_config a;  // exp / softmax
    INFO("mlp " << to_string(mlp) << ", position " << to_string(pos));
    CHECK(whole_model_gradient_error(micro_model(mlp, pos), a) <= gradcheck_bound);
}

TEST_CASE("whole micro model, every position an answer: analytic gradient = central differences", "[model][grad]") {
    attention_config a;  // exp / softmax
    CHECK(whole_model_gradient_error(micro_model(mlp_kind::swiglu, position_kind::rope), a, true) <= gradcheck_bound);
}

TEST_CASE("parameter layout follows docs/model.md names and shapes", "[model]") {
    transformer<float> model(small_model(2, 16, mlp_kind::swiglu, position_kind::learned), attention_config{}, 11, 9);
    const auto& L = model.layout();
    CHECK(L.find("embed.weight").shape == std::vector<int>{11, 16});
    CHECK(L.find("pos.weight").shape == std::vector<int>{9, 16});
    CHECK(L.find("blocks.1.attn.o.weight").shape == std::vector<int>{16, 16});
    CHECK(L.find("blocks.0.mlp.gate.weight").shape == std::vector<int>{48, 16});  // 8/3*16 = 42.7 -> 48
    CHECK(L.find("blocks.0.mlp.down.weight").shape == std::vector<int>{16, 48});
    CHECK(L.find("head.weight").shape == std::vector<int>{11, 16});
    CHECK_FALSE(L.find("norm.weight").decay);
    CHECK(L.find("blocks.0.attn.q.weight").decay);
    CHECK(L.total() == model.params.size());
}

TEST_CASE("initialisation: std 0.02, residual projections scaled, gains 1", "[model]") {
    transformer<double> model(small_model(4, 64, mlp_kind::gelu, position_kind::none), attention_config{}, 64, 16);
    model.init_params(3);
    auto stddev = [&](const std::string& name) {
        const auto& t = model.layout().find(name);
        double s = 0;
        for (size_t i = 0; i < t.size; ++i) s += model.params[t.offset + i] * model.params[t.offset + i];
        return std::sqrt(s / t.size);
    };
    CHECK(stddev("blocks.0.attn.q.weight") == Approx(0.02).epsilon(0.05));
    CHECK(stddev("blocks.0.attn.o.weight") == Approx(0.02 / std::sqrt(8.0)).epsilon(0.05));
    CHECK(stddev("blocks.3.mlp.down.weight") == Approx(0.02 / std::sqrt(8.0)).epsilon(0.05));
    CHECK(stddev("norm.weight") == 1.0);
    CHECK(stddev("blocks.0.mlp.up.bias") == 0.0);
}

TEST_CASE("the model is causal: later tokens do not change earlier predictions", "[model]") {
    transformer<double> model(micro_model(), attention_config{}, 7, 5);
    model.init_params(1);
    for (auto& w : model.params) w *= 20;  // make outputs depend strongly on inputs
    std::vector<std::int32_t> tok = {1, 2, 3, 4, 5}, tgt = {0, 0, 0, 0, 0};
    model.forward(tok.data(), tgt.data(), 1, 5);
    const std::vector<double> before = model.answer_losses();
    tok[4] = 6;
    model.forward(tok.data(), tgt.data(), 1, 5);
    const std::vector<double> after = model.answer_losses();
    for (int t = 0; t < 4; ++t) CHECK(after[t] == before[t]);
    CHECK(after[4] != before[4]);
}

TEST_CASE("data-parallel shards: same loss, predictions and gradients for any thread count", "[model]") {
    // B 5 splits unevenly (2+3, 1+2+2); answer rows are uneven across
    // sequences; the rmsnorm denominator and the gates have parameters whose
    // gradients sum over heads and shards.
    const int V = 9, B = 5, T = 64;  // enough work for a shard per sequence (min_shard_work)
    model_config m = micro_model();
    m.d_model = 128;
    transformer<double> model(m, gated_taylor_rmsnorm(), V, T);
    model.init_params(7);
    std::vector<std::int32_t> tokens, targets;
    random_batch(tokens, targets, V, B, T, 3, 4);

    auto run = [&](int threads) {
        omp_set_num_threads(threads);
        model.zero_grad();
        const double loss = model.forward(tokens.data(), targets.data(), B, T);
        const auto pred = model.predictions();
        CHECK(model.shard_count() == std::min(threads, B));
        model.backward();
        return std::make_tuple(loss, pred, model.grads);
    };
    const int saved = omp_get_max_threads();
    const auto [loss1, pred1, grad1] = run(1);
    for (int threads : {2, 3, 8}) {
        INFO(threads << " threads");
        const auto [loss, pred, grad] = run(threads);
        CHECK(loss == loss1);  // summed in row order whatever the shards
        CHECK(pred == pred1);
        CHECK(relative_error(grad, grad1) <= 1e-13);
        CHECK(norm(grad) > 0);
    }
    omp_set_num_threads(saved);
}

TEST_CASE("forward_backward: the loss, predictions and gradients of forward then backward", "[model]") {
    // Micro-batches of whole sequences inside each thread's shard: T 64 gives
    // one sequence per micro-batch, T 5 several, with a last one shorter.
    const int T = GENERATE(64, 5);
    const int per_micro_batch = transformer<double>::micro_batch_sequences(T);
    const int B = T == 64 ? 5 : 3 * per_micro_batch + 2;
    const int V = 9;
    INFO("T " << T << ", B " << B << ", " << per_micro_batch << " sequence(s) per micro-batch");
    REQUIRE(B > 2 * per_micro_batch);  // every shard of 1 or 2 threads has more than one micro-batch
    model_config m = micro_model();
    m.d_model = 64;
    transformer<double> model(m, gated_taylor_rmsnorm(), V, T);
    model.init_params(11);
    std::vector<std::int32_t> tokens, targets;
    random_batch(tokens, targets, V, B, T, 4, 3);

    const int saved = omp_get_max_threads();
    for (int threads : {1, 2}) {
        INFO(threads << " thread(s)");
        omp_set_num_threads(threads);
        model.zero_grad();
        const double loss = model.forward(tokens.data(), targets.data(), B, T);
        const auto pred = model.predictions();
        const auto losses = model.answer_losses();
        model.backward();
        const std::vector<double> grad = model.grads;

        model.zero_grad();
        const double fused_loss = model.forward_backward(tokens.data(), targets.data(), B, T);
        CHECK(fused_loss == Approx(loss).epsilon(1e-14));
        CHECK(model.predictions() == pred);
        CHECK(relative_error(model.answer_losses(), losses) <= 1e-14);
        CHECK(relative_error(model.grads, grad) <= 1e-13);
        CHECK(norm(grad) > 0);
    }
    omp_set_num_threads(saved);
}
