// Reading a spec's text and its YAML with guards: a size limit, UTF-8 text,
// no alias bombs or cycles, bounded nesting, one document, closed quotes,
// and syntax errors that name the line they concern (tabs, open brackets).
// Internal to lib/src/spec/.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

namespace attnlab::spec_internal {

// Limits far above any real spec (a few KB, a few hundred YAML nodes, maps
// nested 3 deep) and far below what would exhaust memory or time: a spec is
// refused, with a message, before it could do either.
inline constexpr std::size_t max_spec_bytes = std::size_t{4} << 20;
inline constexpr std::size_t max_yaml_nodes = 100000;  // aliases count as the nodes they repeat
inline constexpr int max_yaml_depth = 64;

// The file's bytes; a directory, an unreadable file or one larger than
// max_spec_bytes is a config_error "<path>: cannot read: <why>".
std::string read_text(const std::string& path);

// The YAML of a spec or config, after the guards; errors name `file` and a line.
YAML::Node load_yaml(const std::string& text, const std::string& file);

}  // namespace attnlab::spec_internal
