// Errors of the spec loader and the YAML node helpers its pieces share:
// every bad input becomes one config_error line
// "<file>:<line>: <dotted.key.path>: <what is wrong>". Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

namespace attnlab::spec_internal {

// Where a value was written: file label, 1-based line (0: none, as for
// --set) and the dotted path as written ("base.task.vocab", "sweep[1].attention.order").
struct where {
    std::string file;
    int line = 0;
    std::string path;
};

// Control characters written as escapes (\n, \t, \x01), so that an error stays one printable line.
std::string printable(const std::string& s);

// Throws config_error "<file>:<line>: <path>: <what>".
[[noreturn]] void fail(const where& at, const std::string& what);

std::string join_path(const std::string& parent, const std::string& key);  // "a" + "b" -> "a.b"
std::string join(const std::vector<std::string>& parts, const std::string& sep);

// 1-based line of a node (0: none); a null value takes its key's line.
int line_of(const YAML::Node& n);
int value_line(const YAML::Node& key, const YAML::Node& value);

bool is_plain(const YAML::Node& n);  // unquoted, untagged scalar

// A value as an error message quotes it ("'abc'", "the string \"5\"", "a list"); long ones are cut.
std::string describe(const YAML::Node& n);

// The items of a YAML map in order; keys must be names and appear once.
std::vector<std::pair<YAML::Node, YAML::Node>> map_items(const YAML::Node& map, const std::string& file,
                                                         const std::string& path);

}  // namespace attnlab::spec_internal
