// The rows of the task table (see the header). What each task's keys mean is
// in docs/spec-reference.md; the generators are in this directory.
#include "attnlab/tasks/task_table.hpp"

#include <cstddef>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace attnlab {

namespace {

using std::to_string;

// ---------------------------------------------------------------- copy

// The model vocabulary, vocab + 2 (pad 0, SEP vocab+1), must be an int.
std::string copy_vocab_rule(const task_config& t) {
    constexpr long long most = std::numeric_limits<int>::max() - 2LL;
    if (t.vocab <= most) return "";
    return "copy needs task.vocab <= " + to_string(most) + " (the model's vocabulary, vocab + 2 with pad and SEP, " +
           "must fit in 32 bits), got " + to_string(t.vocab);
}

void copy_defaults(task_config& t) {
    if (t.min_len == 0) t.min_len = t.max_len;
    if (t.test_min_len == 0) t.test_min_len = t.min_len;
    if (t.test_max_len == 0) t.test_max_len = t.max_len;
}

std::string copy_min_len_rule(const task_config& t) {
    if (t.min_len <= t.max_len) return "";
    return "task.min_len " + to_string(t.min_len) + " exceeds task.max_len " + to_string(t.max_len);
}

std::string copy_test_len_rule(const task_config& t) {
    if (t.test_min_len <= t.test_max_len) return "";
    return "task.test_min_len " + to_string(t.test_min_len) + " exceeds task.test_max_len " +
           to_string(t.test_max_len) + " (test lengths default to min_len, max_len)";
}

// ---------------------------------------------------------------- vocabulary minimums

// lookup: a key id in [1, V/2); selective_copy and induction: 2 content ids
// beside their 2 special ids (else the answer is fixed). `why` names the ids.
std::string vocab_at_least_4(const task_config& t, const char* why) {
    if (t.vocab >= 4) return "";
    return std::string(to_string(t.kind)) + " needs task.vocab >= 4" + why + ", got " + to_string(t.vocab);
}
std::string lookup_vocab_rule(const task_config& t) { return vocab_at_least_4(t, ""); }
std::string selective_copy_vocab_rule(const task_config& t) {
    return vocab_at_least_4(t, " (blank 0, marker vocab-1, content 1..vocab-2)");
}
std::string induction_vocab_rule(const task_config& t) {
    return vocab_at_least_4(t, " (2 specials, content 1..vocab-2)");
}

// ---------------------------------------------------------------- lookup

// P pairs in context, then (T - 2P)/2 query slots of two tokens each.
std::string lookup_even_rule(const task_config& t) {
    if (t.seq_len % 2 == 0) return "";
    return "lookup needs an even task.seq_len, got " + to_string(t.seq_len);
}
std::string lookup_pairs_rule(const task_config& t) {
    if (4LL * t.pairs <= t.seq_len) return "";
    return "lookup needs 4 * task.pairs <= task.seq_len, got 4 * " + to_string(t.pairs) + " > " + to_string(t.seq_len);
}
// Zoology's recipe draws query slots and keys from the same vocabulary.
std::string lookup_vocab_above_len_rule(const task_config& t) {
    if (t.vocab > t.seq_len) return "";
    return "lookup needs task.vocab > task.seq_len, got " + to_string(t.vocab) + " <= " + to_string(t.seq_len);
}

// ---------------------------------------------------------------- text

// Below 0.5 the train part (n - 2 floor(f n) bytes) is never empty; whether
// windows fit is the file's business (the loader reads it, tasks/text.cpp).
std::string text_holdout_rule(const task_config& t) {
    if (t.holdout > 0 && t.holdout < 0.5) return "";
    char got[32];
    std::snprintf(got, sizeof got, "%.17g", t.holdout);
    return std::string("text needs 0 < task.holdout < 0.5, got ") + got;
}

void no_defaults(task_config&) {}

const std::vector<task_traits>& rows() {
    static const std::vector<task_traits> table = {
        {task_kind::copy,
         "copy",
         {"vocab", "min_len", "max_len", "test_min_len", "test_max_len"},
         copy_defaults,
         {{{"task.vocab", "task.kind"}, copy_vocab_rule},
          {{"task.min_len", "task.max_len"}, copy_min_len_rule},
          {{"task.test_min_len", "task.test_max_len", "task.min_len", "task.max_len"}, copy_test_len_rule}},
         "x_1..x_n SEP, then the n tokens again"},
        {task_kind::lookup,
         "lookup",
         {"vocab", "seq_len", "pairs", "power_a", "random_filler"},
         no_defaults,
         {{{"task.vocab", "task.kind"}, lookup_vocab_rule},
          {{"task.seq_len", "task.kind"}, lookup_even_rule},
          {{"task.pairs", "task.seq_len", "task.kind"}, lookup_pairs_rule},
          {{"task.vocab", "task.seq_len", "task.kind"}, lookup_vocab_above_len_rule}},
         "P key-value pairs, then queries of the keys (MQAR)"},
        {task_kind::selective_copy,
         "selective_copy",
         {"vocab", "n_tokens", "noise_len"},
         no_defaults,
         {{{"task.vocab", "task.kind"}, selective_copy_vocab_rule}},
         "M tokens among L blanks, then M markers that recall them in order"},
        {task_kind::induction,
         "induction",
         {"vocab", "seq_len"},
         no_defaults,
         {{{"task.vocab", "task.kind"}, induction_vocab_rule}},
         "random tokens with one trigger, then the trigger: recall the token after the first"},
        {task_kind::text,
         "text",
         {"seq_len", "path", "holdout", "sha256", "size"},
         no_defaults,
         {{{"task.holdout", "task.kind"}, text_holdout_rule}},
         "T + 1 bytes of a file: predict every next byte",
         false},
    };
    return table;
}

bool task_rows_in_enum_order() {
    if (rows().size() != static_cast<std::size_t>(task_count)) return false;
    for (int i = 0; i < task_count; ++i)
        if (static_cast<int>(rows()[static_cast<std::size_t>(i)].kind) != i) return false;
    return true;
}
static_assert(static_cast<int>(task_kind::text) + 1 == task_count, "task_count is stale");

}  // namespace

const std::vector<task_traits>& task_rows() {
    static const bool ordered = task_rows_in_enum_order();
    if (!ordered) throw std::logic_error("task table: one row per task_kind, in enum order");
    return rows();
}

const task_traits& traits_of(task_kind k) { return task_rows().at(static_cast<std::size_t>(k)); }

const char* to_string(task_kind k) {
    const auto i = static_cast<std::size_t>(k);
    return i < rows().size() ? rows()[i].name : "?";
}

std::string broken_task_rule(const task_config& t) {
    for (const task_rule& r : traits_of(t.kind).rules)
        if (std::string why = r.broken(t); !why.empty()) return why;
    return "";
}

void require_task_rules(const task_config& t) {
    if (std::string why = broken_task_rule(t); !why.empty())
        throw std::logic_error(std::string(to_string(t.kind)) + ": " + why);
}

}  // namespace attnlab
