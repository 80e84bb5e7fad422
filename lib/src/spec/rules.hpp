// Constraints between keys of a resolved run (a model's head dim, a task's
// lengths, an attention's gates, a schedule) and the defaults that depend on
// other keys. The task rules and defaults are the task table's
// (tasks/task_table.hpp). Internal to lib/src/spec/.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab::spec_internal {

// A constraint between keys. When broken, the error names the involved key
// given at the most specific level (sweep > --set > base), first listed on ties.
struct rule {
    std::vector<std::string> keys;
    std::function<std::string(const run_config&)> broken;  // "" when satisfied
};

// Every rule, in the order they are checked (the first broken one is reported).
const std::vector<rule>& combination_rules();

// Defaults that depend on other keys (copy's lengths, swiglu's hidden size).
void fill_derived_defaults(run_config& c);

}  // namespace attnlab::spec_internal
