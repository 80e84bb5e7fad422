// lookup: multi-query associative recall (MQAR; Arora, Eyuboglu et al. 2023,
// "Zoology"), generated as zoology's multiquery_ar
// (HazyResearch/zoology, zoology/data/associative_recall.py) so numbers
// compare. With V the vocabulary, T the (even) length and P pairs:
//   - keys: P distinct ids from [1, V/2), values: P distinct ids from
//     [V/2, V), each uniform without replacement in draw order;
//   - context k_1 v_1 .. k_P v_P at positions 0 .. 2P-1;
//   - space = (T - 2P)/2 query slots; key j gets slot g_j, drawn without
//     replacement with probability proportional to (g+1)^(power_a - 1)
//     (numpy's choice(replace=False, p=...): successive sampling, i.e. draw
//     by weight, remove, renormalise);
//   - input position 2P + 2 g_j holds k_j and its target is v_j (the value
//     never appears in the input after the context);
//   - every other position holds 0, or with random_filler a uniform id in
//     [0, V) (zoology: inputs[inputs == 0] = randint(vocab_size)).
// Example (zoology's docstring), V = 12, T = 16, P = 2, no filler:
//   tokens   2 8 4 7 0 0 4 0 0 0 0 0 2 0 0 0
//   targets  - - - - - - 7 - - - - - 8 - - -
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attnlab/tasks/generators.hpp"

namespace attnlab {

namespace {

// n distinct ids uniform in [lo, hi), in draw order. Redrawing a repeat is
// exact uniform sampling without replacement; n <= hi - lo.
void draw_distinct(std::int32_t* out, int n, int lo, int hi, rng& r) {
    for (int i = 0; i < n; ++i) {
        std::int32_t x;
        do {
            x = static_cast<std::int32_t>(lo + r.uniform_index(static_cast<std::uint64_t>(hi - lo)));
        } while (std::find(out, out + i, x) != out + i);
        out[i] = x;
    }
}

}  // namespace

std::vector<double> lookup_slot_weights(int space, double power_a) {
    std::vector<double> w(static_cast<size_t>(space));
    for (int g = 0; g < space; ++g) w[static_cast<size_t>(g)] = std::pow(g + 1.0, power_a - 1.0);
    return w;
}

void lookup_example(std::int32_t* tokens, std::int32_t* targets, int T, int V, int P, double power_a,
                    bool random_filler, rng& r) {
    const int context = 2 * P;
    const int space = (T - context) / 2;
    std::vector<std::int32_t> keys(static_cast<size_t>(P)), values(static_cast<size_t>(P));
    draw_distinct(keys.data(), P, 1, V / 2, r);
    draw_distinct(values.data(), P, V / 2, V, r);

    for (int t = 0; t < T; ++t) {
        tokens[t] = 0;
        targets[t] = no_target;
    }
    for (int j = 0; j < P; ++j) {
        tokens[2 * j] = keys[static_cast<size_t>(j)];
        tokens[2 * j + 1] = values[static_cast<size_t>(j)];
    }

    // Successive sampling of P slots; a drawn slot's weight drops to 0.
    std::vector<double> w = lookup_slot_weights(space, power_a);
    for (int j = 0; j < P; ++j) {
        double total = 0.0;
        for (double x : w) total += x;
        const double u = r.uniform() * total;
        int g = -1;
        double acc = 0.0;
        for (int s = 0; s < space; ++s) {
            if (w[static_cast<size_t>(s)] == 0.0) continue;
            g = s;  // last available slot, in case rounding leaves u >= acc at the end
            acc += w[static_cast<size_t>(s)];
            if (u < acc) break;
        }
        if (g < 0) throw std::logic_error("lookup: no query slot left");
        w[static_cast<size_t>(g)] = 0.0;
        const int pos = context + 2 * g;
        tokens[pos] = keys[static_cast<size_t>(j)];
        targets[pos] = values[static_cast<size_t>(j)];
    }

    if (random_filler)
        for (int t = 0; t < T; ++t)
            if (tokens[t] == 0) tokens[t] = static_cast<std::int32_t>(r.uniform_index(static_cast<std::uint64_t>(V)));
}

std::unique_ptr<task> make_lookup_task(const task_config& cfg, std::uint64_t seed) {
    const int V = cfg.vocab, T = cfg.seq_len, P = cfg.pairs;
    // The ranges the spec schema checks; then the task's rules (even T, 4P <= T < V).
    if (P < 1 || !std::isfinite(cfg.power_a))
        throw std::logic_error("lookup: need pairs >= 1 and a finite power_a; got pairs " + std::to_string(P) +
                               ", power_a " + std::to_string(cfg.power_a));
    require_task_rules(cfg);
    const double a = cfg.power_a;
    const bool filler = cfg.random_filler;
    auto fill = [=](std::int32_t* tok, std::int32_t* tgt, rng& r) { lookup_example(tok, tgt, T, V, P, a, filler, r); };
    return std::make_unique<generated_task>(model_vocab_size(cfg), example_split{train_seq_len(cfg), fill},
                                            example_split{test_seq_len(cfg), fill}, cfg.train_examples,
                                            cfg.test_examples, seed);
}

}  // namespace attnlab
