// The synthetic tasks as one table: a row per task with its YAML name, the
// task.* keys only it reads, the defaults it derives from other keys and its
// rules between keys. The spec loader (conditions, rules, derived defaults)
// and the generators (their preconditions) read a row instead of switching
// on the kind, so a new task is a new enum value (config/kinds.hpp), its
// sizes (model vocabulary, train and test input lengths: config/run_config.cpp,
// which the model is sized from without knowing tasks), a new row in
// task_table.cpp and its generator in tasks/.
#pragma once
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

// A constraint between keys of one task. `keys` are the spec keys involved
// (the loader blames the one given at the most specific level, the first
// listed on ties); `broken` returns "" when satisfied, else the message.
struct task_rule {
    std::vector<std::string> keys;
    std::string (*broken)(const task_config& t);
};

struct task_traits {
    task_kind kind;
    const char* name;                       // the YAML value of task.kind
    std::vector<std::string> keys;          // the task.* keys it reads besides test_/val_/train_examples
    void (*fill_defaults)(task_config& t);  // defaults that depend on other keys (copy's lengths)
    std::vector<task_rule> rules;           // in the order they are checked
    const char* summary;                    // one line: what an example is
    // Whether seq_acc (every answer of an example right) means anything; when
    // not (text: every position is an answer), it is NaN and written as an empty cell.
    bool sequence_accuracy = true;
};

const task_traits& traits_of(task_kind k);

// Every row, in enum order.
const std::vector<task_traits>& task_rows();

// The YAML name ("?" for a value outside the enum).
const char* to_string(task_kind k);

// The message of the first broken rule of the task, "" when all hold.
std::string broken_task_rule(const task_config& t);

// For the generators: throws std::logic_error "<task>: <message>" when a
// rule of the task is broken (the loader refuses such a config first).
void require_task_rules(const task_config& t);

}  // namespace attnlab
