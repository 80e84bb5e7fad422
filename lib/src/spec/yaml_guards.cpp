// Guarded reading of a spec's text and YAML (see yaml_guards.hpp).
//
// yaml-cpp 0.7 replaces undecodable bytes, stops at a NUL, expands shared
// aliases without bound when walked, recurses on nesting and reports some
// errors far from their cause; each guard here turns one of those into a
// message that names the line.
#include "yaml_guards.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "attnlab/util/error.hpp"
#include "diagnostics.hpp"

namespace attnlab::spec_internal {

namespace {

// A spec is UTF-8 text. yaml-cpp would replace undecodable bytes or stop at
// a NUL with an unrelated message; this names the line and the byte instead.
void check_text(const std::string& text, const std::string& file) {
    int line = 1;
    std::size_t line_start = 0;
    std::size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark is fine
    auto bad = [&](const std::string& what) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " 0x%02x at column %zu", static_cast<unsigned char>(text[i]),
                      i - line_start + 1);
        fail({file, line, ""}, what + buf + ", expected UTF-8 text");
    };
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\n') {
            ++line;
            line_start = ++i;
            continue;
        }
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) bad("not a text file: control byte");
            ++i;
            continue;
        }
        // Lead byte, then 1-3 continuation bytes; no overlong forms, surrogates or code points > U+10FFFF.
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        bool ok = len > 0 && i + len <= text.size();
        for (std::size_t k = 1; ok && k < len; ++k) {
            const unsigned char cc = static_cast<unsigned char>(text[i + k]);
            ok = k == 1 ? (cc >= lo && cc <= hi) : (cc >= 0x80 && cc <= 0xBF);
        }
        if (!ok) bad("not UTF-8: byte");
        i += len;
    }
}

// Walks the YAML events of a spec before it is loaded: yaml-cpp shares the
// node of an anchor between its aliases, so a few lines of nested aliases
// ("billion laughs") or an alias inside its own anchor (a cycle) load
// quickly but expand without end for anything that walks them. Also refuses
// deep nesting (yaml-cpp recurses and stops only at about 500 levels, with
// the message "bad file"), a second document (yaml-cpp would read the first
// alone) and an unclosed quote (yaml-cpp takes the rest of the file as the
// string).
class yaml_guard : public YAML::EventHandler {
public:
    yaml_guard(const std::string& text, std::string file) : text_(text), file_(std::move(file)) {
        line_start_.push_back(text_.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0);  // yaml-cpp's marks skip the mark
        for (std::size_t i = 0; i < text_.size(); ++i)
            if (text_[i] == '\n') line_start_.push_back(i + 1);
    }

    void OnDocumentStart(const YAML::Mark& mark) override {
        if (++documents_ > 1)
            fail({file_, line(mark), ""}, "a second YAML document (after '---'); a spec is a single document");
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
    void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string&) override {
        if (tag != "?") check_closed(mark);
        leaf(mark, anchor);
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        for (const open_node& o : open_)
            if (o.anchor == anchor) fail({file_, line(mark), ""}, "YAML alias inside the node it refers to (a cycle)");
        aliases_ = true;
        auto it = size_.find(anchor);
        count(it == size_.end() ? 1 : it->second, mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value style) override {
        open(mark, anchor, style == YAML::EmitterStyle::Flow ? '[' : 0);
    }
    void OnSequenceEnd() override { close(); }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value style) override {
        open(mark, anchor, style == YAML::EmitterStyle::Flow ? '{' : 0);
    }
    void OnMapEnd() override { close(); }

    // The innermost [...] or {...} still open (after a syntax error): its bracket and line, or 0.
    std::pair<char, int> open_flow() const {
        if (open_.empty() || !open_.back().bracket) return {0, 0};
        return {open_.back().bracket, open_.back().line};
    }

private:
    struct open_node {
        YAML::anchor_t anchor;
        char bracket;  // '[' or '{' for a flow collection, else 0
        int line;
        std::size_t nodes;  // itself and everything read inside it so far, aliases expanded
    };

    int line(const YAML::Mark& m) const { return m.line >= 0 ? m.line + 1 : 0; }

    // `nodes` more nodes in the open collection; total bounded, so no count overflows.
    void count(std::size_t nodes, const YAML::Mark& mark) {
        total_ += nodes;
        if (!open_.empty()) open_.back().nodes += nodes;
        if (total_ > max_yaml_nodes)
            fail({file_, line(mark), ""}, "more than " + std::to_string(max_yaml_nodes) + " YAML nodes" +
                                              (aliases_ ? " once its aliases are expanded (an alias bomb?)" : "") +
                                              "; a spec has a few hundred");
    }
    void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
        count(1, mark);
        if (anchor) size_[anchor] = 1;
    }
    void open(const YAML::Mark& mark, YAML::anchor_t anchor, char bracket) {
        if (static_cast<int>(open_.size()) >= max_yaml_depth)
            fail({file_, line(mark), ""},
                 "YAML nested deeper than " + std::to_string(max_yaml_depth) + " levels; a spec nests 3");
        count(1, mark);
        open_.push_back({anchor, bracket, line(mark), 0});
    }
    void close() {
        const open_node done = open_.back();
        open_.pop_back();
        const std::size_t nodes = done.nodes + 1;
        if (!open_.empty()) open_.back().nodes += nodes;
        if (done.anchor) size_[done.anchor] = nodes;
    }

    // A quoted scalar must end with its quote (anchors and tags before it are skipped).
    void check_closed(const YAML::Mark& mark) {
        if (mark.line < 0 || static_cast<std::size_t>(mark.line) >= line_start_.size()) return;
        std::size_t i = line_start_[mark.line] + static_cast<std::size_t>(mark.column);
        auto skip_space = [&] {
            while (i < text_.size() && std::strchr(" \t\r\n", text_[i])) ++i;
        };
        while (i < text_.size() && (text_[i] == '&' || text_[i] == '!')) {
            while (i < text_.size() && !std::strchr(" \t\r\n", text_[i])) ++i;
            skip_space();
        }
        if (i >= text_.size() || (text_[i] != '"' && text_[i] != '\'')) return;  // a block scalar
        const char quote = text_[i];
        for (++i; i < text_.size(); ++i) {
            const char c = text_[i];
            if (quote == '"') {
                if (c == '\\')
                    ++i;  // an escape: \" does not end the string
                else if (c == '"')
                    return;
            } else if (c == '\'') {
                if (i + 1 < text_.size() && text_[i + 1] == '\'')
                    ++i;  // '' is a quote inside '...'
                else
                    return;
            }
        }
        fail({file_, line(mark), ""},
             std::string("YAML syntax error: unclosed quote: the string opened by ") + quote + " never ends");
    }

    const std::string& text_;
    std::string file_;
    std::vector<std::size_t> line_start_;  // byte offset of each line
    std::vector<open_node> open_;
    std::map<YAML::anchor_t, std::size_t> size_;  // nodes of each anchored node, aliases expanded
    std::size_t total_ = 0;
    int documents_ = 0;
    bool aliases_ = false;
};

// yaml-cpp reports a tab in indentation as "illegal map value" or the like,
// sometimes lines later: name the first such line up to the error instead.
int tab_indented_line(const std::string& text, int up_to_line) {
    int line = 1;
    for (std::size_t i = 0; i < text.size() && (up_to_line <= 0 || line <= up_to_line); ++line) {
        std::size_t end = text.find('\n', i);
        if (end == std::string::npos) end = text.size();
        const std::size_t first = text.find_first_not_of(" \t", i);
        if (first != std::string::npos && first < end && text[first] != '\r' && text.find('\t', i) < first) return line;
        i = end + 1;
    }
    return 0;
}

}  // namespace

YAML::Node load_yaml(const std::string& text, const std::string& file) {
    check_text(text, file);
    yaml_guard guard(text, file);
    try {
        std::istringstream in(text);
        YAML::Parser parser(in);
        while (parser.HandleNextDocument(guard)) {
        }
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        // yaml-cpp marks an error found at the end of the file on the line after the last.
        const int lines = std::max<int>(1, static_cast<int>(std::count(text.begin(), text.end(), '\n')) +
                                               (text.empty() || text.back() == '\n' ? 0 : 1));
        const int at = e.mark.line >= 0 ? e.mark.line + 1 : 0;
        const int line = std::min(at, lines);
        if (const int tab = tab_indented_line(text, line))
            fail({file, tab, ""}, "YAML syntax error: tab in indentation (YAML indents with spaces only)");
        // "end of map flow not found": name the line of the bracket that is still open.
        if (const auto [bracket, open_line] = guard.open_flow();
            bracket && open_line < at && e.msg.find("flow not found") != std::string::npos)
            fail({file, open_line, ""}, "YAML syntax error: " + e.msg + ": the '" + std::string(1, bracket) +
                                            "' on this line is still open at " +
                                            (at > lines ? "the end of the file" : "line " + std::to_string(line)));
        fail({file, line, ""}, "YAML syntax error: " + e.msg);
    }
}

std::string read_text(const std::string& path, const input_kind& kind) {
    try {
        return read_input(path, kind);
    } catch (const input_error& e) {
        // "<path>: cannot read: <why>", one form for every reason.
        const std::string prefix = "cannot read: ";
        const std::string why = e.reason.rfind(prefix, 0) == 0 ? e.reason.substr(prefix.size()) : e.reason;
        throw config_error(printable(e.path + ": cannot read: " + why));
    }
}

}  // namespace attnlab::spec_internal
