// The schema: one table, schema(), describes every key of a run
// configuration: its type, range, whether it is required, and the condition
// under which it means anything. Parsing the base, --set, sweeps, checking
// and the YAML written beside each run are all driven by it, so a new key is
// one table row (plus a rule in rules.cpp if it constrains other keys). The
// attention keys' conditions come from the variant table, the task keys'
// from the task table. Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/spec/overrides.hpp"
#include "diagnostics.hpp"
#include "values.hpp"

namespace attnlab::spec_internal {

// A key means something only while the enum key `controller` has one of `values`.
struct condition {
    std::string controller;  // empty: always
    std::vector<std::string> values;

    std::string text() const {
        return controller + (values.size() == 1 ? " is " + values[0] : " is one of " + join(values, ", "));
    }
};

inline constexpr double int_max = std::numeric_limits<int>::max();
inline constexpr double inf = std::numeric_limits<double>::infinity();

struct key_def {
    std::string key;  // dotted path in a run config: "task.vocab"
    vtype type = vtype::integer;
    bool required = false;  // wherever its condition holds
    condition when;
    double lo = -inf, hi = inf;  // integer/number range
    bool lo_open = false;        // lo < v rather than lo <= v
    std::vector<std::string> choices;
    // text: what a value must look like ("" for any non-empty string), and the check
    std::string text_form;
    bool (*text_ok)(const std::string&) = nullptr;
    // A bound that depends on the purpose (attention.order's highest value):
    // the field of config_limits that replaces hi (within()).
    int config_limits::*upper_limit = nullptr;
    std::function<void(run_config&, const value&)> set;
    std::function<std::optional<value>(const run_config&)> get;  // nullopt: unset (clamp)

    key_def& range(double l, double h) {
        lo = l;
        hi = h;
        return *this;
    }
    key_def& above(double l) {
        lo = l;
        lo_open = true;
        return *this;
    }
    key_def& at_least(double l) {
        lo = l;
        return *this;
    }
    key_def& up_to_limit(int config_limits::*field) {
        upper_limit = field;
        hi = training_limits().*field;
        return *this;
    }
    key_def& needed() {
        required = true;
        return *this;
    }
    key_def& only_when(condition c) {
        when = std::move(c);
        return *this;
    }
};

// Every key, in run_config order (the order of config.yaml).
const std::vector<key_def>& schema();

const key_def* find_key(const std::string& key);  // nullptr: no such key
std::string section_of(const std::string& key);   // "task.vocab" -> "task", "seed" -> ""
bool is_section(const std::string& name);         // task, model, attention, train
// The names allowed in a map: `section` "" is the top of a run config.
std::vector<std::string> names_in(const std::string& section);

// The key as `limits` bound it (its hi from the limits' field, if it has one).
key_def within(const key_def& d, const config_limits& limits);

// What a key accepts, as its errors say: "an integer >= 1", "one of exp, taylor, ...".
std::string expected(const key_def& d);

// The value of key `d` from node `n`; numbers and bools must be plain scalars.
value parse_value(const key_def& d, const YAML::Node& n, const where& at);

}  // namespace attnlab::spec_internal
