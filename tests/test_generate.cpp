// attnlab generate's sampling (run/sample.hpp): both forms compute the same
// model, so greedy decoding gives the same tokens; a seed fixes the sample;
// a prompt longer than the learned positions is cut to its last tokens.
#include <set>

#include <catch2/catch.hpp>

#include "attnlab/run/sample.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/rng.hpp"
#include "support/model_check.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;

namespace {

// A random model of `vocab` tokens whose weights are large enough for its
// logits to be far apart (greedy decoding then has no near-ties).
transformer<float> random_model(const attention_config& a, int vocab, int max_T, position_kind pos) {
    model_config m = micro_model();
    m.position = pos;
    transformer<float> model(m, a, vocab, max_T);
    model.init_params(11);
    rng r(12);
    for (auto& w : model.params) w += 0.3f * static_cast<float>(r.normal());
    return model;
}

attention_config generate_variant(numerator_kind n, denominator_kind d, int order = 0) {
    attention_config a;
    a.numerator = n;
    a.denominator = d;
    a.order = order;
    return a;
}

std::vector<std::int32_t> sample(transformer<float>& model, const std::vector<std::int32_t>& prompt, sample_options o) {
    return generate_tokens(model, prompt, o, nullptr);
}

}  // namespace

TEST_CASE("generate: greedy decoding gives the same tokens in both forms", "[generate]") {
    for (const auto& a : {generate_variant(numerator_kind::exp, denominator_kind::softmax),
                          generate_variant(numerator_kind::taylor, denominator_kind::norm, 2),
                          generate_variant(numerator_kind::elu1, denominator_kind::softmax)}) {
        INFO(describe(a));
        const std::vector<std::int32_t> prompt = {3, 1, 4, 1, 5};
        sample_options o;
        o.tokens = 24;
        o.temperature = 0;
        transformer<float> par = random_model(a, 16, 29, position_kind::rope);
        transformer<float> rec = random_model(a, 16, 29, position_kind::rope);
        o.form = attention_form::parallel;
        const auto p = sample(par, prompt, o);
        o.form = attention_form::recurrent;
        const auto r = sample(rec, prompt, o);
        CHECK(p == r);
        CHECK(p.size() == 24);
        // not a constant sequence: the check compares real decoding
        CHECK(std::set<std::int32_t>(p.begin(), p.end()).size() > 1);
    }
}

TEST_CASE("generate: the same seed gives the same sample, another seed another", "[generate]") {
    const attention_config a = generate_variant(numerator_kind::taylor, denominator_kind::norm, 2);
    transformer<float> model = random_model(a, 16, 45, position_kind::rope);
    sample_options o;
    o.tokens = 40;
    o.temperature = 1.5;
    o.seed = 5;
    const auto first = sample(model, {2, 7}, o);
    CHECK(sample(model, {2, 7}, o) == first);
    o.seed = 6;
    CHECK(sample(model, {2, 7}, o) != first);
    o.top_k = 1;  // one candidate: the greedy tokens whatever the seed
    const auto top1 = sample(model, {2, 7}, o);
    o.temperature = 0;
    CHECK(sample(model, {2, 7}, o) == top1);
}

TEST_CASE("generate: pick_token", "[generate]") {
    const std::vector<float> logits = {0.5f, 3.0f, 3.0f, -1.0f};
    rng r(1);
    CHECK(pick_token(logits.data(), 4, 0.0, 0, r) == 1);  // the first of equals
    int counts[4] = {0, 0, 0, 0};
    for (int i = 0; i < 2000; ++i) ++counts[pick_token(logits.data(), 4, 1.0, 2, r)];
    CHECK(counts[0] == 0);  // outside the top 2
    CHECK(counts[3] == 0);
    CHECK(counts[1] > 800);
    CHECK(counts[2] > 800);
}

TEST_CASE("generate: a prompt longer than the learned positions is cut to its last tokens", "[generate]") {
    std::vector<std::int32_t> prompt(20);
    for (int i = 0; i < 20; ++i) prompt[i] = i % 16;
    const sample_context c = fit_context(prompt, 6, 16);
    CHECK(c.dropped == 10);
    CHECK(c.prompt == std::vector<std::int32_t>(prompt.begin() + 10, prompt.end()));
    CHECK(c.max_len == 16);
    // it then runs within the table, in both forms, greedily alike
    const attention_config a = generate_variant(numerator_kind::taylor, denominator_kind::norm, 2);
    transformer<float> model = random_model(a, 16, 16, position_kind::learned);
    sample_options o;
    o.tokens = 6;
    o.temperature = 0;
    o.form = attention_form::parallel;
    const auto p = sample(model, c.prompt, o);
    o.form = attention_form::recurrent;
    CHECK(sample(model, c.prompt, o) == p);
    // no cut without a table, none when it fits
    CHECK(fit_context(prompt, 6, 0).dropped == 0);
    CHECK(fit_context(prompt, 6, 0).max_len == 26);
    CHECK(fit_context(prompt, 6, 64).dropped == 0);
    CHECK_THROWS_AS(fit_context(prompt, 16, 16), config_error);
    CHECK_THROWS_AS(fit_context({}, 4, 0), config_error);
}
