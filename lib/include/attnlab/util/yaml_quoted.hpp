// One YAML spelling shared by every writer of YAML text (result.yaml,
// config.yaml's string keys).
#pragma once
#include <cstdio>
#include <string>

namespace attnlab {

// `s` as a YAML double-quoted scalar: quotes, backslashes and control
// characters escaped, so that any string reads back as it was.
inline std::string yaml_quoted(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + '"';
}

}  // namespace attnlab
