// Reading and writing the value of one spec key (see values.hpp).
#include "values.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace attnlab::spec_internal {

// Shortest text that reads back to the same double, always with a '.' in
// the mantissa so YAML 1.1 readers (PyYAML) also see a float.
std::string format_number(double x) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, x);
    std::string s(buf, res.ptr);
    if (s.find('.') == std::string::npos) {
        auto e = s.find('e');
        s.insert(e == std::string::npos ? s.size() : e, ".0");
    }
    return s;
}

std::string value::text() const {
    switch (type) {
        case vtype::integer: return std::to_string(i);
        case vtype::number: return format_number(f);
        case vtype::boolean: return b ? "true" : "false";
        case vtype::choice:
        case vtype::text: return name;
    }
    return "?";
}

std::string value::yaml_text() const { return type == vtype::text ? yaml_quoted(name) : text(); }

bool parse_int(const std::string& t, long long& out) {
    const char* first = t.data() + (t.size() > 1 && t[0] == '+');
    const char* last = t.data() + t.size();
    auto res = std::from_chars(first, last, out);
    return res.ec == std::errc() && res.ptr == last;
}

// Decimal floats only (no hex, inf or nan, which from_chars would take).
bool parse_double(const std::string& t, double& out) {
    if (t.empty() || t.find_first_not_of("0123456789+-.eE") != std::string::npos ||
        t.find_first_of("0123456789") == std::string::npos)
        return false;
    const char* first = t.data() + (t.size() > 1 && t[0] == '+');
    const char* last = t.data() + t.size();
    auto res = std::from_chars(first, last, out);
    return res.ec == std::errc() && res.ptr == last && std::isfinite(out);
}

}  // namespace attnlab::spec_internal
