// Synthetic tasks (README.md, docs/spec-reference.md "task"). One table,
// task_table(), has a row per task: its small configuration, each parameter
// it reads with another value, the configurations it must refuse, its sizes
// and the check of one example. Over every row: each parameter and the seed
// reach the generator, examples and sizes follow any changed parameter, bad
// configurations throw, determinism, disjoint streams and the fixed pool.
// Then each task's own laws: hand-worked examples, the MQAR query-slot
// distribution against exact successive-sampling probabilities, the
// selective-copy positions and the induction trigger position against their
// uniform laws.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "attnlab/tasks/generators.hpp"
#include "attnlab/tasks/task.hpp"
#include "attnlab/tasks/text.hpp"
#include "support/test_data.hpp"
#include "support/text_files.hpp"

using namespace attnlab;

namespace {

using row = std::vector<std::int32_t>;

row tokens_of(const batch& b, int i) {
    return row(b.tokens.begin() + static_cast<std::ptrdiff_t>(i) * b.T,
               b.tokens.begin() + static_cast<std::ptrdiff_t>(i + 1) * b.T);
}
row targets_of(const batch& b, int i) {
    return row(b.targets.begin() + static_cast<std::ptrdiff_t>(i) * b.T,
               b.targets.begin() + static_cast<std::ptrdiff_t>(i + 1) * b.T);
}

// The small configurations the tests start from: 64 test examples, fresh
// training batches (train_examples 0) and the given vocabulary.
task_config small_task(task_kind kind, int vocab) {
    task_config c;
    c.kind = kind;
    c.vocab = vocab;
    c.test_examples = 64;
    c.train_examples = 0;
    return c;
}

task_config copy_config() {
    task_config c = small_task(task_kind::copy, 8);
    c.min_len = c.test_min_len = 2;
    c.max_len = c.test_max_len = 6;
    return c;
}

task_config lookup_config() {
    task_config c = small_task(task_kind::lookup, 64);
    c.seq_len = 32;
    c.pairs = 4;
    c.power_a = 0.01;
    c.random_filler = false;
    return c;
}

task_config selective_copy_config() {
    task_config c = small_task(task_kind::selective_copy, 10);
    c.n_tokens = 4;
    c.noise_len = 12;
    return c;
}

task_config induction_config() {
    task_config c = small_task(task_kind::induction, 16);
    c.seq_len = 20;
    return c;
}

// text reads a file: the committed fixture (32615 bytes of the KJV), and for
// the parameter `path` another file, the fixture's lines in reverse order.
const std::string& other_text_file() {
    static const test::temp_dir dir;
    static const std::string path = [] {
        const std::string p = (dir / "reversed.txt").string();
        auto lines = test::lines_of(test::read_text(test::text_fixture));
        std::reverse(lines.begin(), lines.end());
        std::string text;
        for (const auto& l : lines) text += l + "\n";
        test::write_text(p, text);
        return p;
    }();
    return path;
}

task_config text_config() {
    task_config c = small_task(task_kind::text, 0);  // no vocab key: bytes
    c.path = test::text_fixture;
    c.seq_len = 16;
    c.holdout = 0.05;  // 1630 bytes each for validation and test: 101 windows of 17
    return c;
}

// Where a window of T + 1 bytes (tokens, then the last target) lies in its
// part of the file: the train part for training windows, the test part at a
// multiple of T for test windows.
void check_text_example(const task_config& c, bool train, const row& tok, const row& tgt) {
    static std::map<std::string, std::string> files;
    if (!files.count(c.path)) files[c.path] = test::read_text(c.path);
    const std::string& bytes = files[c.path];
    const int T = c.seq_len;
    REQUIRE(static_cast<int>(tok.size()) == T);
    std::string window;
    for (int t = 0; t < T; ++t) {
        INFO("position " << t);
        CHECK(tok[t] >= 0);
        CHECK(tok[t] < 256);
        if (t + 1 < T) CHECK(tgt[t] == tok[t + 1]);  // every position is an answer: the next byte
        window += static_cast<char>(tok[t]);
    }
    window += static_cast<char>(tgt[T - 1]);
    const text_split s = split_text(bytes.size(), c.holdout);
    if (train) {
        const auto at = bytes.substr(0, s.train_bytes()).find(window);
        CHECK(at != std::string::npos);
    } else {
        const std::string part = bytes.substr(s.test_begin());
        bool found = false;
        for (std::size_t k = 0; !found && k * T + T < part.size(); ++k) found = part.compare(k * T, T + 1, window) == 0;
        CHECK(found);
    }
}

// Checks one copy example and returns its length n.
int check_copy_example(const row& tok, const row& tgt, int vocab, int T) {
    REQUIRE(static_cast<int>(tok.size()) == T);
    const std::int32_t sep = vocab + 1;
    REQUIRE(std::count(tok.begin(), tok.end(), sep) == 1);
    const int n = static_cast<int>(std::find(tok.begin(), tok.end(), sep) - tok.begin());
    REQUIRE(n >= 1);
    REQUIRE(2 * n <= T);
    for (int t = 0; t < T; ++t) {
        INFO("position " << t << " of n = " << n);
        if (t < n) {
            CHECK(tok[t] >= 1);
            CHECK(tok[t] <= vocab);
        } else if (t > n && t <= 2 * n) {
            CHECK(tok[t] == tok[t - n - 1]);  // second copy
        } else if (t > 2 * n) {
            CHECK(tok[t] == 0);  // padding
        }
        if (t >= n && t < 2 * n)
            CHECK(tgt[t] == tok[t - n]);  // target x_{t-n+1}
        else
            CHECK(tgt[t] == no_target);
    }
    return n;
}

// Query positions of a lookup example: key -> position, checking structure.
std::map<std::int32_t, int> check_lookup_example(const row& tok, const row& tgt, int V, int T, int P,
                                                 bool random_filler) {
    REQUIRE(static_cast<int>(tok.size()) == T);
    std::set<std::int32_t> keys, values;
    std::map<std::int32_t, std::int32_t> value_of;
    for (int j = 0; j < P; ++j) {
        const std::int32_t k = tok[2 * j], v = tok[2 * j + 1];
        CHECK(k >= 1);
        CHECK(k < V / 2);
        CHECK(v >= V / 2);
        CHECK(v < V);
        keys.insert(k);
        values.insert(v);
        value_of[k] = v;
    }
    CHECK(static_cast<int>(keys.size()) == P);
    CHECK(static_cast<int>(values.size()) == P);

    std::map<std::int32_t, int> query_pos;
    for (int t = 0; t < T; ++t) {
        CHECK(tok[t] >= 0);
        CHECK(tok[t] < V);
        if (tgt[t] == no_target) {
            if (t >= 2 * P && !random_filler) CHECK(tok[t] == 0);
            continue;
        }
        INFO("answer at position " << t);
        CHECK(t >= 2 * P);
        CHECK(t % 2 == 0);
        REQUIRE(value_of.count(tok[t]) == 1);  // a key of the context is queried
        CHECK(tgt[t] == value_of[tok[t]]);
        CHECK(query_pos.count(tok[t]) == 0);  // at most once
        query_pos[tok[t]] = t;
    }
    CHECK(static_cast<int>(query_pos.size()) == P);  // every key exactly once
    return query_pos;
}

// Checks one selective_copy example (A vocab, M tokens, L blanks) and returns
// the positions of its M tokens among the L + M data slots.
std::vector<int> check_selective_copy_example(const row& tok, const row& tgt, int A, int M, int L) {
    const int slots = L + M, T = L + 2 * M;
    REQUIRE(static_cast<int>(tok.size()) == T);
    REQUIRE(static_cast<int>(tgt.size()) == T);
    std::vector<int> pos;
    for (int t = 0; t < slots; ++t) {
        INFO("data slot " << t);
        CHECK(tgt[t] == no_target);
        CHECK(tok[t] >= 0);
        CHECK(tok[t] <= A - 2);  // blank or content, never the marker
        if (tok[t] != 0) pos.push_back(t);
    }
    REQUIRE(static_cast<int>(pos.size()) == M);  // content ids are >= 1: every token is seen
    for (int i = 0; i < M; ++i) {
        INFO("marker " << i);
        CHECK(tok[slots + i] == A - 1);
        CHECK(tgt[slots + i] == tok[pos[static_cast<size_t>(i)]]);  // the i-th token, in order
    }
    return pos;
}

// Checks one induction example (V vocab, N = seq_len) and returns the
// position p of the first trigger.
int check_induction_example(const row& tok, const row& tgt, int V, int N) {
    const std::int32_t trigger = V - 1;
    REQUIRE(static_cast<int>(tok.size()) == N + 1);
    REQUIRE(static_cast<int>(tgt.size()) == N + 1);
    CHECK(tok[N] == trigger);
    REQUIRE(std::count(tok.begin(), tok.end(), trigger) == 2);
    const int p = static_cast<int>(std::find(tok.begin(), tok.end(), trigger) - tok.begin());
    CHECK(p >= 0);
    CHECK(p <= N - 3);
    for (int t = 0; t <= N; ++t) {
        INFO("position " << t);
        if (t != p && t != N) {
            CHECK(tok[t] >= 1);  // id 0 (the unused special) never appears
            CHECK(tok[t] <= V - 2);
        }
        if (t < N) CHECK(tgt[t] == no_target);
    }
    CHECK(tgt[N] == tok[p + 1]);  // the token that followed the earlier trigger
    CHECK(tgt[N] >= 1);
    CHECK(tgt[N] <= V - 2);
    return p;
}

// All the data a task produces in its first steps: test set and three batches.
row data_of(const task_config& cfg, std::uint64_t seed) {
    auto tk = make_task(cfg, seed);
    row out(tk->test_set().tokens);
    out.insert(out.end(), tk->test_set().targets.begin(), tk->test_set().targets.end());
    out.insert(out.end(), tk->val_set().tokens.begin(), tk->val_set().tokens.end());
    out.insert(out.end(), tk->val_set().targets.begin(), tk->val_set().targets.end());
    batch b;
    for (int step = 0; step < 3; ++step) {
        tk->next_train_batch(b, 8);
        out.insert(out.end(), b.tokens.begin(), b.tokens.end());
        out.insert(out.end(), b.targets.begin(), b.targets.end());
    }
    return out;
}

// ------------------------------------------------------------ the task table

enum class split { train, test };

// One parameter of a task and another valid value of it.
struct parameter_change {
    const char* name;
    std::function<void(task_config&)> apply;
};

// One row per task: to add a task, add a row (and its own tests of the
// distributions it draws from below). The generic checks that follow run
// over every row.
struct task_case {
    task_config base;  // small and valid; test_examples 64, train_examples 0
    // Every task_config field the task reads, each with another valid value
    // (test_examples, val_examples and train_examples, which every task reads,
    // are added by every_parameter()).
    std::vector<parameter_change> parameters;
    // Configurations make_task must refuse with logic_error (the spec loader
    // refuses them first, with a message for the user).
    std::vector<parameter_change> invalid;
    std::function<int(const task_config&)> vocab_size;
    std::function<int(const task_config&, split)> seq_len;  // T of a split
    // Checks one example of a split against the configuration.
    std::function<void(const task_config&, split, const row& tokens, const row& targets)> check_example;
};

const std::vector<task_case>& task_table() {
    static const std::vector<task_case> table = {
        {.base = copy_config(),
         .parameters = {{"vocab", [](task_config& c) { c.vocab = 9; }},
                        {"min_len", [](task_config& c) { c.min_len = 3; }},
                        {"max_len", [](task_config& c) { c.max_len = 7; }},
                        {"test_min_len", [](task_config& c) { c.test_min_len = 3; }},
                        {"test_max_len", [](task_config& c) { c.test_max_len = 8; }}},
         .invalid = {{"min_len > max_len", [](task_config& c) { c.min_len = 7; }},
                     {"test_min_len 0 (unresolved default)", [](task_config& c) { c.test_min_len = 0; }}},
         .vocab_size = [](const task_config& c) { return c.vocab + 2; },  // pad 0 and SEP
         .seq_len = [](const task_config& c, split s) { return 2 * (s == split::train ? c.max_len : c.test_max_len); },
         .check_example =
             [](const task_config& c, split s, const row& tok, const row& tgt) {
                 const int n = check_copy_example(tok, tgt, c.vocab, static_cast<int>(tok.size()));
                 CHECK(n >= (s == split::train ? c.min_len : c.test_min_len));
                 CHECK(n <= (s == split::train ? c.max_len : c.test_max_len));
             }},
        {.base = lookup_config(),
         .parameters = {{"vocab", [](task_config& c) { c.vocab = 100; }},
                        {"seq_len", [](task_config& c) { c.seq_len = 40; }},
                        {"pairs", [](task_config& c) { c.pairs = 6; }},
                        {"power_a", [](task_config& c) { c.power_a = 1.0; }},
                        {"random_filler", [](task_config& c) { c.random_filler = true; }}},
         .invalid = {{"odd seq_len", [](task_config& c) { c.seq_len = 33; }},
                     {"4 pairs > seq_len", [](task_config& c) { c.pairs = 9; }},
                     {"vocab <= seq_len", [](task_config& c) { c.vocab = 32; }}},
         .vocab_size = [](const task_config& c) { return c.vocab; },
         .seq_len = [](const task_config& c, split) { return c.seq_len; },
         .check_example =
             [](const task_config& c, split, const row& tok, const row& tgt) {
                 check_lookup_example(tok, tgt, c.vocab, c.seq_len, c.pairs, c.random_filler);
             }},
        {.base = selective_copy_config(),
         .parameters = {{"vocab", [](task_config& c) { c.vocab = 11; }},
                        {"n_tokens", [](task_config& c) { c.n_tokens = 5; }},
                        {"noise_len", [](task_config& c) { c.noise_len = 13; }}},
         .invalid = {{"vocab 3: one content token", [](task_config& c) { c.vocab = 3; }},
                     {"no tokens", [](task_config& c) { c.n_tokens = 0; }},
                     {"negative noise_len", [](task_config& c) { c.noise_len = -1; }}},
         .vocab_size = [](const task_config& c) { return c.vocab; },
         .seq_len = [](const task_config& c, split) { return c.noise_len + 2 * c.n_tokens; },
         .check_example =
             [](const task_config& c, split, const row& tok, const row& tgt) {
                 check_selective_copy_example(tok, tgt, c.vocab, c.n_tokens, c.noise_len);
             }},
        {.base = induction_config(),
         .parameters = {{"vocab", [](task_config& c) { c.vocab = 17; }},
                        {"seq_len", [](task_config& c) { c.seq_len = 21; }}},
         .invalid = {{"vocab 3: one content token", [](task_config& c) { c.vocab = 3; }},
                     // no room for the trigger, its target and one token before the end
                     {"seq_len 2", [](task_config& c) { c.seq_len = 2; }}},
         .vocab_size = [](const task_config& c) { return c.vocab; },
         .seq_len = [](const task_config& c, split) { return c.seq_len + 1; },  // and the final trigger
         .check_example = [](const task_config& c, split, const row& tok,
                             const row& tgt) { check_induction_example(tok, tgt, c.vocab, c.seq_len); }},
        {.base = text_config(),
         .parameters = {{"seq_len", [](task_config& c) { c.seq_len = 17; }},
                        {"holdout", [](task_config& c) { c.holdout = 0.06; }},
                        {"path", [](task_config& c) { c.path = other_text_file(); }}},
         .invalid = {{"holdout 0.5", [](task_config& c) { c.holdout = 0.5; }},
                     {"no path", [](task_config& c) { c.path.clear(); }},
                     // 1630 bytes for validation and test: no window of 1631 + 1 bytes fits
                     {"seq_len 1631", [](task_config& c) { c.seq_len = 1631; }}},
         .vocab_size = [](const task_config&) { return 256; },
         .seq_len = [](const task_config& c, split) { return c.seq_len; },
         .check_example = [](const task_config& c, split s, const row& tok,
                             const row& tgt) { check_text_example(c, s == split::train, tok, tgt); }},
    };
    return table;
}

// A row's parameters and the three every task reads.
std::vector<parameter_change> every_parameter(const task_case& t) {
    std::vector<parameter_change> all = t.parameters;
    all.push_back({"test_examples", [](task_config& c) { c.test_examples = 65; }});
    all.push_back({"val_examples", [](task_config& c) { c.val_examples = 66; }});
    all.push_back({"train_examples", [](task_config& c) { c.train_examples = 50; }});
    return all;
}

task_config changed(const task_config& base, const parameter_change& change) {
    task_config c = base;
    change.apply(c);
    return c;
}

}  // namespace

// ------------------------------------------------- checks of every task

TEST_CASE("tasks: the table has one row per task kind", "[tasks]") {
    std::set<std::string> kinds;
    for (const task_case& t : task_table()) kinds.insert(to_string(t.base.kind));
    CHECK(kinds == std::set<std::string>{"copy", "lookup", "selective_copy", "induction", "text"});
    CHECK(task_table().size() == kinds.size());
}

TEST_CASE("tasks: every parameter reaches its generator", "[tasks]") {
    for (const task_case& t : task_table()) {
        DYNAMIC_SECTION(to_string(t.base.kind)) {
            const row ref = data_of(t.base, 1);
            CHECK(data_of(t.base, 1) == ref);
            for (const parameter_change& p : every_parameter(t)) {
                INFO("changed " << p.name);
                CHECK(data_of(changed(t.base, p), 1) != ref);
            }
            CHECK(data_of(t.base, 2) != ref);  // seed
            // The pool's size, not only whether there is one.
            task_config pool_50 = t.base, pool_60 = t.base;
            pool_50.train_examples = 50;
            pool_60.train_examples = 60;
            CHECK(data_of(pool_50, 1) != data_of(pool_60, 1));
        }
    }
}

TEST_CASE("tasks: with any parameter changed, the examples and sizes follow the configuration", "[tasks]") {
    for (const task_case& t : task_table()) {
        DYNAMIC_SECTION(to_string(t.base.kind)) {
            std::vector<parameter_change> changes = {{"nothing", [](task_config&) {}}};
            for (const parameter_change& p : every_parameter(t)) changes.push_back(p);
            for (const parameter_change& p : changes) {
                INFO("changed " << p.name);
                const task_config c = changed(t.base, p);
                auto tk = make_task(c, 1);
                CHECK(tk->vocab_size() == t.vocab_size(c));
                CHECK(tk->train_seq_len() == t.seq_len(c, split::train));
                CHECK(tk->test_seq_len() == t.seq_len(c, split::test));
                batch b;
                tk->next_train_batch(b, 50);
                REQUIRE(b.B == 50);
                REQUIRE(b.T == t.seq_len(c, split::train));
                for (int i = 0; i < b.B; ++i) t.check_example(c, split::train, tokens_of(b, i), targets_of(b, i));
                const batch& ts = tk->test_set();
                REQUIRE(ts.B == c.test_examples);
                REQUIRE(ts.T == t.seq_len(c, split::test));
                for (int i = 0; i < ts.B; ++i) t.check_example(c, split::test, tokens_of(ts, i), targets_of(ts, i));
            }
        }
    }
}

TEST_CASE("tasks: violated invariants throw logic_error", "[tasks]") {
    for (const task_case& t : task_table()) {
        INFO("task " << to_string(t.base.kind));
        REQUIRE_FALSE(t.invalid.empty());
        for (const parameter_change& p : t.invalid) {
            INFO(p.name);
            CHECK_THROWS_AS(make_task(changed(t.base, p), 0), std::logic_error);
        }
    }
}

TEST_CASE("tasks: determinism, disjoint streams and the fixed pool", "[tasks]") {
    for (const task_case& t : task_table()) {
        const task_config& base = t.base;
        INFO("task " << to_string(base.kind));
        SECTION(std::string("same seed, same data: ") + to_string(base.kind)) {
            auto t1 = make_task(base, 7), t2 = make_task(base, 7);
            CHECK(t1->test_set().tokens == t2->test_set().tokens);
            CHECK(t1->test_set().targets == t2->test_set().targets);
            batch b1, b2;
            for (int step = 0; step < 5; ++step) {
                t1->next_train_batch(b1, 16);
                t2->next_train_batch(b2, 16);
                CHECK(b1.tokens == b2.tokens);
                CHECK(b1.targets == b2.targets);
            }
            // Successive batches are fresh examples.
            batch b3;
            t1->next_train_batch(b3, 16);
            CHECK(b3.tokens != b1.tokens);
        }
        SECTION(std::string("train and test streams differ: ") + to_string(base.kind)) {
            auto tk = make_task(base, 7);
            batch b;
            tk->next_train_batch(b, base.test_examples);
            REQUIRE(b.T == tk->test_set().T);
            CHECK(b.tokens != tk->test_set().tokens);
            std::set<row> test_rows;
            for (int i = 0; i < tk->test_set().B; ++i) test_rows.insert(tokens_of(tk->test_set(), i));
            int shared = 0;
            for (int i = 0; i < b.B; ++i) shared += test_rows.count(tokens_of(b, i)) > 0;
            CHECK(shared < b.B / 10);
        }
        SECTION(std::string("pool: batches only hold pool examples: ") + to_string(base.kind)) {
            task_config c = base;
            c.train_examples = 20;
            // The pool is the first train_examples examples of the training stream.
            task_config fresh = base;
            fresh.train_examples = 0;
            batch pool;
            make_task(fresh, 7)->next_train_batch(pool, 20);
            std::set<row> pool_rows;
            std::map<row, row> pool_targets;
            for (int i = 0; i < pool.B; ++i) {
                pool_rows.insert(tokens_of(pool, i));
                pool_targets[tokens_of(pool, i)] = targets_of(pool, i);
            }
            REQUIRE(pool_rows.size() == 20);

            auto tk = make_task(c, 7);
            std::set<row> seen;
            batch b, first;
            tk->next_train_batch(first, 16);
            for (int step = 0; step < 50; ++step) {
                tk->next_train_batch(b, 16);
                for (int i = 0; i < b.B; ++i) {
                    const row tok = tokens_of(b, i);
                    REQUIRE(pool_rows.count(tok) == 1);
                    CHECK(targets_of(b, i) == pool_targets[tok]);
                    seen.insert(tok);
                }
            }
            CHECK(seen.size() == 20);         // uniform draws reach the whole pool
            CHECK(b.tokens != first.tokens);  // and batches differ
            // The test set does not depend on the pool.
            CHECK(tk->test_set().tokens == make_task(fresh, 7)->test_set().tokens);
        }
    }
}

// ------------------------------------------------- each task's own laws

TEST_CASE("copy: hand-worked example of length 1", "[tasks]") {
    // min_len = max_len = 1: seq x SEP x, inputs [x SEP], targets [-, x].
    task_config c = copy_config();
    c.vocab = 5;
    c.min_len = c.max_len = c.test_min_len = c.test_max_len = 1;
    auto tk = make_task(c, 3);
    batch b;
    tk->next_train_batch(b, 4);
    REQUIRE(b.T == 2);
    for (int i = 0; i < 4; ++i) {
        const row tok = tokens_of(b, i), tgt = targets_of(b, i);
        CHECK(tok[0] >= 1);
        CHECK(tok[0] <= 5);
        CHECK(tok[1] == 6);
        CHECK(tgt[0] == no_target);
        CHECK(tgt[1] == tok[0]);
    }
}

TEST_CASE("copy: structure, lengths and sizes", "[tasks]") {
    task_config c = copy_config();
    c.min_len = 3;
    c.max_len = 9;
    c.test_min_len = 3;
    c.test_max_len = 9;
    auto tk = make_task(c, 11);
    CHECK(tk->vocab_size() == c.vocab + 2);
    CHECK(tk->train_seq_len() == 18);
    CHECK(tk->test_seq_len() == 18);
    batch b;
    tk->next_train_batch(b, 400);
    REQUIRE(b.B == 400);
    REQUIRE(b.T == 18);
    std::set<int> lengths;
    for (int i = 0; i < b.B; ++i) {
        const int n = check_copy_example(tokens_of(b, i), targets_of(b, i), c.vocab, b.T);
        CHECK(n >= 3);
        CHECK(n <= 9);
        lengths.insert(n);
    }
    CHECK(lengths.size() == 7);  // every length in [3, 9] occurs in 400 draws
    const batch& ts = tk->test_set();
    REQUIRE(ts.B == c.test_examples);
    for (int i = 0; i < ts.B; ++i) check_copy_example(tokens_of(ts, i), targets_of(ts, i), c.vocab, ts.T);
}

TEST_CASE("copy: test lengths differ from training lengths", "[tasks]") {
    task_config c = copy_config();
    c.min_len = c.max_len = 4;
    c.test_min_len = 6;
    c.test_max_len = 10;
    c.test_examples = 300;
    auto tk = make_task(c, 5);
    CHECK(tk->train_seq_len() == 8);
    CHECK(tk->test_seq_len() == 20);
    batch b;
    tk->next_train_batch(b, 100);
    REQUIRE(b.T == 8);
    for (int i = 0; i < b.B; ++i) CHECK(check_copy_example(tokens_of(b, i), targets_of(b, i), c.vocab, b.T) == 4);
    const batch& ts = tk->test_set();
    REQUIRE(ts.B == 300);
    REQUIRE(ts.T == 20);
    std::set<int> lengths;
    for (int i = 0; i < ts.B; ++i) {
        const int n = check_copy_example(tokens_of(ts, i), targets_of(ts, i), c.vocab, ts.T);
        CHECK(n >= 6);
        CHECK(n <= 10);
        lengths.insert(n);
    }
    CHECK(lengths.size() == 5);
}

TEST_CASE("copy: tokens cover exactly the vocabulary", "[tasks]") {
    task_config c = copy_config();
    c.vocab = 12;
    auto tk = make_task(c, 2);
    batch b;
    tk->next_train_batch(b, 2000);
    std::vector<long> count(static_cast<size_t>(c.vocab + 2), 0);
    long content = 0;
    for (int i = 0; i < b.B; ++i) {
        const row tok = tokens_of(b, i), tgt = targets_of(b, i);
        const int n = static_cast<int>(std::find(tok.begin(), tok.end(), c.vocab + 1) - tok.begin());
        for (int t = 0; t < b.T; ++t) {
            REQUIRE(tok[t] >= 0);
            REQUIRE(tok[t] < tk->vocab_size());
            if (tgt[t] != no_target) {
                CHECK(tgt[t] >= 1);
                CHECK(tgt[t] <= c.vocab);
            }
        }
        for (int t = 0; t < n; ++t) {
            ++count[static_cast<size_t>(tok[t])];
            ++content;
        }
    }
    CHECK(count[0] == 0);
    CHECK(count[static_cast<size_t>(c.vocab + 1)] == 0);
    // Uniform over 1..vocab: each share within 6 standard deviations of 1/vocab.
    const double p = 1.0 / c.vocab;
    const double sd = std::sqrt(p * (1 - p) / content);
    for (int v = 1; v <= c.vocab; ++v) CHECK(std::abs(double(count[static_cast<size_t>(v)]) / content - p) < 6 * sd);
}

TEST_CASE("lookup: structure of many examples", "[tasks]") {
    for (bool filler : {false, true}) {
        INFO("random_filler = " << filler);
        task_config c = lookup_config();
        c.vocab = 128;
        c.seq_len = 64;
        c.pairs = 8;
        c.random_filler = filler;
        auto tk = make_task(c, 9);
        CHECK(tk->vocab_size() == 128);
        CHECK(tk->train_seq_len() == 64);
        CHECK(tk->test_seq_len() == 64);
        batch b;
        tk->next_train_batch(b, 500);
        long filler_slots = 0, filler_zero = 0;
        double filler_sum = 0;
        for (int i = 0; i < b.B; ++i) {
            const row tok = tokens_of(b, i), tgt = targets_of(b, i);
            check_lookup_example(tok, tgt, c.vocab, c.seq_len, c.pairs, filler);
            for (int t = 2 * c.pairs; t < b.T; ++t) {
                if (tgt[t] != no_target) continue;
                ++filler_slots;
                filler_zero += tok[t] == 0;
                filler_sum += tok[t];
            }
        }
        if (!filler) {
            CHECK(filler_zero == filler_slots);
        } else {
            // Uniform in [0, V): mean (V-1)/2 = 63.5, sd of the mean ~ 37/sqrt(20000).
            CHECK(std::abs(filler_sum / filler_slots - 63.5) < 2.0);
            CHECK(filler_zero < filler_slots / 50);
        }
        const batch& ts = tk->test_set();
        REQUIRE(ts.B == c.test_examples);
        for (int i = 0; i < ts.B; ++i)
            check_lookup_example(tokens_of(ts, i), targets_of(ts, i), c.vocab, c.seq_len, c.pairs, filler);
    }
}

TEST_CASE("lookup: query slots follow successive sampling by (g+1)^(a-1)", "[tasks]") {
    // Key 1 (context position 0) takes the first draw: P(g) = w_g / sum w.
    // Key 2 takes the second: P(g) = sum_{h != g} p_h p_g / (1 - p_h).
    for (double a : {0.01, 1.0}) {
        INFO("power_a = " << a);
        task_config c = lookup_config();
        c.vocab = 256;
        c.seq_len = 64;
        c.pairs = 4;
        c.power_a = a;
        const int space = (c.seq_len - 2 * c.pairs) / 2;  // 28
        std::vector<double> p = lookup_slot_weights(space, a);
        double sum = 0;
        for (double x : p) sum += x;
        for (double& x : p) x /= sum;
        std::vector<double> p2(static_cast<size_t>(space), 0.0);
        for (int g = 0; g < space; ++g)
            for (int h = 0; h < space; ++h)
                if (h != g) p2[static_cast<size_t>(g)] += p[size_t(h)] * p[size_t(g)] / (1 - p[size_t(h)]);

        auto tk = make_task(c, 21);
        const int N = 6000;
        batch b;
        tk->next_train_batch(b, N);
        std::vector<double> f1(static_cast<size_t>(space), 0.0), f2(static_cast<size_t>(space), 0.0);
        for (int i = 0; i < N; ++i) {
            const row tok = tokens_of(b, i);
            const auto pos = check_lookup_example(tok, targets_of(b, i), c.vocab, c.seq_len, c.pairs, false);
            f1[static_cast<size_t>((pos.at(tok[0]) - 2 * c.pairs) / 2)] += 1.0 / N;
            f2[static_cast<size_t>((pos.at(tok[2]) - 2 * c.pairs) / 2)] += 1.0 / N;
        }
        for (int g = 0; g < space; ++g) {
            INFO("slot " << g);
            const double q1 = p[size_t(g)], q2 = p2[size_t(g)];
            CHECK(std::abs(f1[size_t(g)] - q1) < 5 * std::sqrt(q1 * (1 - q1) / N) + 1e-3);
            CHECK(std::abs(f2[size_t(g)] - q2) < 5 * std::sqrt(q2 * (1 - q2) / N) + 1e-3);
        }
        if (a < 0.5) {
            // Near-1/(g+1) weights: the first slot is far likelier than the last.
            CHECK(p[0] / p[size_t(space - 1)] > 20);
            CHECK(f1[0] > 10 * f1[size_t(space - 1)]);
            CHECK(f1[0] + f1[1] + f1[2] > 0.35);
        } else {
            CHECK(p[0] == Approx(1.0 / space));
        }
    }
}

TEST_CASE("lookup: power_a reaches the query slots, not only the random stream", "[tasks]") {
    // With a = 1 late slots are common, with a = 0.01 they are rare.
    auto late_share = [](double power_a) {
        task_config c = lookup_config();
        c.power_a = power_a;
        auto tk = make_task(c, 4);
        batch b;
        tk->next_train_batch(b, 2000);
        long late = 0, all = 0;
        for (int t = 0; t < b.B * b.T; ++t) {
            if (b.targets[size_t(t)] == no_target) continue;
            ++all;
            late += (t % b.T) >= b.T / 2;
        }
        return double(late) / all;
    };
    CHECK(late_share(1.0) > late_share(0.01) + 0.1);
}

TEST_CASE("selective_copy: hand-worked examples without noise", "[tasks]") {
    // noise_len 0: the M tokens fill slots 0..M-1, then M markers; marker i
    // answers token i. A = 4: content {1, 2}, marker 3.
    task_config c = selective_copy_config();
    c.vocab = 4;
    c.n_tokens = 2;
    c.noise_len = 0;
    auto tk = make_task(c, 3);
    CHECK(tk->vocab_size() == 4);
    batch b;
    tk->next_train_batch(b, 8);
    REQUIRE(b.T == 4);
    for (int i = 0; i < b.B; ++i) {
        const row tok = tokens_of(b, i), tgt = targets_of(b, i);
        CHECK((tok[0] == 1 || tok[0] == 2));
        CHECK((tok[1] == 1 || tok[1] == 2));
        CHECK(tok[2] == 3);
        CHECK(tok[3] == 3);
        CHECK(tgt == row{no_target, no_target, tok[0], tok[1]});
    }
}

TEST_CASE("selective_copy: structure of many examples and sizes", "[tasks]") {
    task_config c = selective_copy_config();
    c.vocab = 12;
    c.n_tokens = 6;
    c.noise_len = 20;
    auto tk = make_task(c, 9);
    CHECK(tk->vocab_size() == 12);
    CHECK(tk->train_seq_len() == 20 + 2 * 6);
    CHECK(tk->test_seq_len() == 32);
    batch b;
    tk->next_train_batch(b, 1000);
    REQUIRE(b.B == 1000);
    REQUIRE(b.T == 32);
    const int slots = c.noise_len + c.n_tokens;
    std::vector<double> occupied(static_cast<size_t>(slots), 0.0);
    std::vector<long> count(static_cast<size_t>(c.vocab), 0);
    long tokens = 0;
    for (int i = 0; i < b.B; ++i) {
        const row tok = tokens_of(b, i), tgt = targets_of(b, i);
        for (int p : check_selective_copy_example(tok, tgt, c.vocab, c.n_tokens, c.noise_len)) {
            occupied[static_cast<size_t>(p)] += 1.0 / b.B;
            ++count[static_cast<size_t>(tok[p])];
            ++tokens;
        }
    }
    // Every slot holds a token with probability M / (L + M) = 0.23.
    const double q = double(c.n_tokens) / slots, sd_q = std::sqrt(q * (1 - q) / b.B);
    for (int s = 0; s < slots; ++s) {
        INFO("slot " << s);
        CHECK(std::abs(occupied[static_cast<size_t>(s)] - q) < 6 * sd_q);
    }
    // Tokens uniform over 1..A-2.
    CHECK(count[0] == 0);
    CHECK(count[static_cast<size_t>(c.vocab - 1)] == 0);
    const double p = 1.0 / (c.vocab - 2), sd = std::sqrt(p * (1 - p) / tokens);
    for (int v = 1; v <= c.vocab - 2; ++v) {
        INFO("token " << v);
        CHECK(std::abs(double(count[static_cast<size_t>(v)]) / tokens - p) < 6 * sd);
    }
    const batch& ts = tk->test_set();
    REQUIRE(ts.B == c.test_examples);
    REQUIRE(ts.T == 32);
    for (int i = 0; i < ts.B; ++i)
        check_selective_copy_example(tokens_of(ts, i), targets_of(ts, i), c.vocab, c.n_tokens, c.noise_len);
}

TEST_CASE("selective_copy: every set of positions is equally likely", "[tasks]") {
    // L = 3, M = 2: the C(5, 2) = 10 position sets each have probability 0.1.
    task_config c = selective_copy_config();
    c.n_tokens = 2;
    c.noise_len = 3;
    auto tk = make_task(c, 17);
    const int N = 20000;
    batch b;
    tk->next_train_batch(b, N);
    std::map<std::vector<int>, double> freq;
    for (int i = 0; i < N; ++i)
        freq[check_selective_copy_example(tokens_of(b, i), targets_of(b, i), c.vocab, 2, 3)] += 1.0 / N;
    REQUIRE(freq.size() == 10);
    const double sd = std::sqrt(0.1 * 0.9 / N);
    for (const auto& [pos, f] : freq) {
        INFO("positions " << pos[0] << ", " << pos[1]);
        CHECK(std::abs(f - 0.1) < 6 * sd);
    }
}

TEST_CASE("induction: hand-worked example of the shortest sequence", "[tasks]") {
    // seq_len 3, V = 4 (content {1, 2}, trigger 3): p is in [0, 0], so
    // x_0 = trigger, x_1 its target, x_2 random, then the final trigger:
    // tokens [3, x1, x2, 3], target x1 at position 3 only.
    task_config c = induction_config();
    c.vocab = 4;
    c.seq_len = 3;
    auto tk = make_task(c, 5);
    CHECK(tk->vocab_size() == 4);
    batch b;
    tk->next_train_batch(b, 8);
    REQUIRE(b.T == 4);
    for (int i = 0; i < b.B; ++i) {
        const row tok = tokens_of(b, i), tgt = targets_of(b, i);
        CHECK(tok[0] == 3);
        CHECK((tok[1] == 1 || tok[1] == 2));
        CHECK((tok[2] == 1 || tok[2] == 2));
        CHECK(tok[3] == 3);
        CHECK(tgt == row{no_target, no_target, no_target, tok[1]});
    }
}

TEST_CASE("induction: structure of many examples and sizes", "[tasks]") {
    task_config c = induction_config();
    c.vocab = 12;
    c.seq_len = 24;
    auto tk = make_task(c, 9);
    CHECK(tk->vocab_size() == 12);
    CHECK(tk->train_seq_len() == 25);
    CHECK(tk->test_seq_len() == 25);
    const int N = 4400;
    batch b;
    tk->next_train_batch(b, N);
    REQUIRE(b.T == 25);
    // p uniform over [0, seq_len - 3]: 22 values.
    const int np = c.seq_len - 2;
    std::vector<double> fp(static_cast<size_t>(np), 0.0);
    std::vector<long> count(static_cast<size_t>(c.vocab), 0), answers(static_cast<size_t>(c.vocab), 0);
    long content = 0;
    for (int i = 0; i < N; ++i) {
        const row tok = tokens_of(b, i), tgt = targets_of(b, i);
        const int p = check_induction_example(tok, tgt, c.vocab, c.seq_len);
        fp[static_cast<size_t>(p)] += 1.0 / N;
        ++answers[static_cast<size_t>(tgt[static_cast<size_t>(c.seq_len)])];
        for (int t = 0; t < c.seq_len; ++t)
            if (t != p) {
                ++count[static_cast<size_t>(tok[t])];
                ++content;
            }
    }
    const double q = 1.0 / np, sd_q = std::sqrt(q * (1 - q) / N);
    for (int p = 0; p < np; ++p) {
        INFO("trigger at " << p);
        CHECK(std::abs(fp[static_cast<size_t>(p)] - q) < 6 * sd_q);
    }
    // Content tokens and answers uniform over 1..V-2.
    const double u = 1.0 / (c.vocab - 2);
    for (int v = 1; v <= c.vocab - 2; ++v) {
        INFO("token " << v);
        CHECK(std::abs(double(count[size_t(v)]) / content - u) < 6 * std::sqrt(u * (1 - u) / content));
        CHECK(std::abs(double(answers[size_t(v)]) / N - u) < 6 * std::sqrt(u * (1 - u) / N));
    }
    const batch& ts = tk->test_set();
    REQUIRE(ts.B == c.test_examples);
    for (int i = 0; i < ts.B; ++i) check_induction_example(tokens_of(ts, i), targets_of(ts, i), c.vocab, c.seq_len);
}
