// Reading a spec's text and its YAML with guards: a size limit, UTF-8 text,
// no alias bombs or cycles, bounded nesting, one document, closed quotes,
// and syntax errors that name the line they concern (tabs, open brackets).
// Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include "attnlab/io/files.hpp"

#include <cstddef>
#include <string>

namespace attnlab::spec_internal {

// Limits far above any real spec (a few KB, a few hundred YAML nodes, maps
// nested 3 deep) and far below what would exhaust memory or time: a spec is
// refused, with a message, before it could do either.
// (A spec's size limit is inputs::spec, io/files.hpp.)
inline constexpr std::size_t max_yaml_nodes = 100000;  // aliases count as the nodes they repeat
inline constexpr int max_yaml_depth = 64;

// The file's bytes (read_input, io/files.hpp); a missing or unreadable file,
// one that is not a regular file (a directory, /dev/zero, a FIFO) or one
// larger than `kind` allows is a config_error "<path>: cannot read: <why>".
std::string read_text(const std::string& path, const input_kind& kind = inputs::spec);

// The YAML of a spec or config, after the guards; errors name `file` and a line.
YAML::Node load_yaml(const std::string& text, const std::string& file);

}  // namespace attnlab::spec_internal
