// Sampling from a trained model (sample.hpp).
#include "attnlab/run/sample.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/model/generator.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/util/error.hpp"
#include "attnlab/util/rng.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

sample_context fit_context(const std::vector<std::int32_t>& prompt, int tokens, int positions) {
    if (prompt.empty()) throw config_error("generate: the prompt is empty; give at least one token");
    if (tokens < 0) throw config_error("generate: --tokens must be >= 0");
    sample_context c;
    c.prompt = prompt;
    if (positions > 0) {
        if (tokens >= positions)
            throw config_error("generate: --tokens " + std::to_string(tokens) + " leaves no room for the prompt in " +
                               std::to_string(positions) + " learned positions; ask for at most " +
                               std::to_string(positions - 1));
        const int room = positions - tokens;
        if (static_cast<int>(prompt.size()) > room) {
            c.dropped = static_cast<int>(prompt.size()) - room;
            c.prompt.erase(c.prompt.begin(), c.prompt.begin() + c.dropped);
        }
    }
    c.max_len = static_cast<int>(c.prompt.size()) + tokens;
    return c;
}

std::int32_t pick_token(const float* logits, int V, double temperature, int top_k, rng& r) {
    if (temperature <= 0) return static_cast<std::int32_t>(std::max_element(logits, logits + V) - logits);
    std::vector<int> order(static_cast<std::size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    const int k = top_k > 0 ? std::min(top_k, V) : V;
    // The k largest, ties to the lower id, so that the draw does not depend on the sort.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
    std::vector<double> p(static_cast<std::size_t>(k));
    const double top = logits[order[0]];
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += p[i] = std::exp((logits[order[i]] - top) / temperature);
    double u = r.uniform() * sum;
    for (int i = 0; i < k; ++i) {
        if (u < p[i]) return order[i];
        u -= p[i];
    }
    return order[k - 1];  // u rounded up to the sum
}

std::vector<std::int32_t> generate_tokens(transformer<float>& model, const std::vector<std::int32_t>& prompt,
                                          const sample_options& opt,
                                          const std::function<void(std::int32_t, double)>& on_token, double* prompt_s) {
    using clock = std::chrono::steady_clock;
    const int max_len = static_cast<int>(prompt.size()) + opt.tokens;
    if (prompt.empty() || max_len > model.max_T())
        throw std::logic_error("generate_tokens: prompt of " + std::to_string(prompt.size()) + " and " +
                               std::to_string(opt.tokens) + " tokens for a model of " + std::to_string(model.max_T()) +
                               " positions");
    rng r(opt.seed);
    std::vector<std::int32_t> seq = prompt, out;
    const int V = model.vocab();
    const auto t0 = clock::now();
    auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };

    if (opt.form == attention_form::recurrent) {
        generator<float> gen(model, opt.layout, max_len);
        const float* logits = nullptr;
        for (const std::int32_t t : prompt) logits = gen.step(t).data();
        if (prompt_s) *prompt_s = seconds_since(t0);
        for (int i = 0; i < opt.tokens; ++i) {
            const auto ts = clock::now();
            // The step of the previous token is this token's cost (the prompt's last for the first).
            if (i > 0) logits = gen.step(seq.back()).data();
            const std::int32_t next = pick_token(logits, V, opt.temperature, opt.top_k, r);
            seq.push_back(next);
            out.push_back(next);
            if (on_token) on_token(next, seconds_since(ts));
        }
        return out;
    }
    model.set_attention_form(attention_form::parallel);
    model.reserve(1, max_len);
    std::vector<std::int32_t> targets;
    if (prompt_s) *prompt_s = 0;
    for (int i = 0; i < opt.tokens; ++i) {
        const auto ts = clock::now();
        const int n = static_cast<int>(seq.size());
        targets.assign(static_cast<std::size_t>(n), no_target);
        targets.back() = 0;  // one answer row: the last position's logits
        model.forward(seq.data(), targets.data(), 1, n);
        const std::int32_t next = pick_token(model.answer_logits().data(), V, opt.temperature, opt.top_k, r);
        seq.push_back(next);
        out.push_back(next);
        if (on_token) on_token(next, seconds_since(ts));
    }
    return out;
}

inference_memory estimate_sample_memory(const model_config& m, const attention_config& a, int vocab, int max_len,
                                        attention_form form, state_layout layout) {
    inference_memory out = estimate_generate_memory(m, a, vocab, max_len, layout);
    if (form == attention_form::recurrent) return out;
    buffer_plan_input in;
    in.model = m;
    in.attention = a;
    in.vocab = vocab;
    in.max_T = max_len;
    in.B = 1;
    in.T = max_len;
    const buffer_plan plan = plan_model_buffers(in);
    saturating_size total = out.model;
    for (const buffer_group g : {buffer_group::activations, buffer_group::attention, buffer_group::backward,
                                 buffer_group::tables, buffer_group::per_thread})
        total += plan.bytes(g);
    out.model = total.value();
    out.state = 0;
    return out;
}

}  // namespace attnlab
