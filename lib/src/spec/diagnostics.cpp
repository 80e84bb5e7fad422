// Errors of the spec loader and the YAML node helpers (see diagnostics.hpp).
#include "diagnostics.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "attnlab/util/error.hpp"

namespace attnlab::spec_internal {

// Control characters (a newline in a quoted key or value, a stray escape)
// are written as escapes, so that an error stays one printable line.
std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c != 0x7f) {
            out += static_cast<char>(c);
            continue;
        }
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out;
}

// Keys, paths and values of any length are echoed (a 100,000-character
// --set key or task.path); each is cut like a long value, so an error stays
// a line one can read.
std::string cut_long_words(const std::string& msg) {
    constexpr std::size_t longest = 200, kept = 100;
    std::string out;
    for (std::size_t at = 0; at < msg.size();) {
        const std::size_t end = std::min(msg.find(' ', at), msg.size());
        if (end - at > longest) {
            std::size_t word = end;  // a key's ':' or a list's ',' stays after the cut
            while (word > at && msg[word - 1] != '\0' && std::strchr(":,;", msg[word - 1])) --word;
            out += msg.substr(at, kept) + "... (" + std::to_string(word - at) + " characters)" +
                   msg.substr(word, end - word);
        } else
            out += msg.substr(at, end - at);
        if (end < msg.size()) out += ' ';
        at = end + 1;
    }
    // and words cut one by one can still add up (a path of many short names with spaces)
    constexpr std::size_t longest_line = 2000;
    if (out.size() > longest_line)
        out = out.substr(0, longest_line / 2) + "... (" + std::to_string(out.size()) + " characters)";
    return out;
}

[[noreturn]] void fail(const where& at, const std::string& what) {
    std::string msg = at.file;
    if (at.line > 0) msg += ":" + std::to_string(at.line);
    msg += ": ";
    if (!at.path.empty()) msg += at.path + ": ";
    throw config_error(cut_long_words(printable(msg + what)));
}

std::string join_path(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
}

// yaml-cpp marks are 0-based; a null value (`key:` and nothing) is marked at
// the next token, so it takes its key's line.
int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }
int value_line(const YAML::Node& key, const YAML::Node& value) {
    return value.IsNull() || line_of(value) == 0 ? line_of(key) : line_of(value);
}

bool is_plain(const YAML::Node& n) { return n.Tag() == "?"; }  // unquoted, untagged scalar

// A value as an error message quotes it; long ones are cut.
std::string describe(const YAML::Node& n) {
    if (n.IsNull()) return "nothing";
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a map";
    std::string text = n.Scalar();
    if (text.size() > 60) text = text.substr(0, 50) + "... (" + std::to_string(text.size()) + " characters)";
    if (is_plain(n)) return "'" + text + "'";
    return "the string \"" + text + "\"";
}

// The items of a YAML map in order; keys must be names and appear once
// (yaml-cpp keeps both copies of a repeated key and the last one would win).
std::vector<std::pair<YAML::Node, YAML::Node>> map_items(const YAML::Node& map, const std::string& file,
                                                         const std::string& path) {
    std::vector<std::pair<YAML::Node, YAML::Node>> out;
    std::set<std::string> seen;
    for (const auto& kv : map) {
        if (!kv.first.IsScalar())
            fail({file, line_of(kv.first), path}, "expected a key name, got " + describe(kv.first));
        if (!seen.insert(kv.first.Scalar()).second)
            fail({file, line_of(kv.first), join_path(path, kv.first.Scalar())}, "duplicate key");
        out.emplace_back(kv.first, kv.second);
    }
    return out;
}

}  // namespace attnlab::spec_internal
