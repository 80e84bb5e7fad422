// A value of one spec key, read from its scalar text (yaml-cpp converts
// leniently: "yes" is a bool, "1.0" an int for some types), and its text as
// config.yaml writes it. Internal to lib/src/spec/.
#pragma once
#include "attnlab/util/yaml_quoted.hpp"
#include <string>

namespace attnlab::spec_internal {

enum class vtype { integer, number, boolean, choice, text };

struct value {
    vtype type = vtype::integer;
    long long i = 0;
    double f = 0;
    bool b = false;
    std::string name;  // choice, text

    static value of(vtype t) {
        value v;
        v.type = t;
        return v;
    }
    // false and the empty string count as not set
    bool is_set() const { return !(type == vtype::boolean && !b) && !(type == vtype::text && name.empty()); }
    std::string text() const;       // as a cell or a run id shows it: strings as they are
    std::string yaml_text() const;  // as config.yaml writes it: strings double-quoted
};

// Shortest text that reads back to the same double, always with a '.' in
// the mantissa so YAML 1.1 readers (PyYAML) also see a float.
std::string format_number(double x);

bool parse_int(const std::string& t, long long& out);
// Decimal floats only (no hex, inf or nan, which from_chars would take).
bool parse_double(const std::string& t, double& out);

}  // namespace attnlab::spec_internal
