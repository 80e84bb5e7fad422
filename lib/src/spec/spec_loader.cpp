// Experiment-spec loader (SPEC §5, docs/spec-reference.md).
//
// One table, schema(), describes every key of a run configuration: its type,
// range, whether it is required, and the condition under which it means
// anything. Parsing the base, --set, sweeps, checking and the YAML written
// beside each run are all driven by it, so a new key is one table row (plus
// a rule in combination_rules() if it constrains other keys).
//
// yaml-cpp 0.7 ignores unknown keys, keeps repeated keys and converts
// leniently ("yes" is a bool, "1.0" an int for some types), so every value is
// read from its scalar text here, and every map is walked key by key.
#include "attnlab/spec/spec.hpp"
#include "attnlab/spec/did_you_mean.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "attnlab/util/error.hpp"

namespace attnlab {
namespace {

// ---------------------------------------------------------------- errors

// Where a value was written: file label, 1-based line (0: none, as for
// --set) and the dotted path as written ("base.task.vocab", "sweep[1].attention.order").
struct where {
    std::string file;
    int line = 0;
    std::string path;
};

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

[[noreturn]] void fail(const where& at, const std::string& what) {
    std::string msg = at.file;
    if (at.line > 0) msg += ":" + std::to_string(at.line);
    msg += ": ";
    if (!at.path.empty()) msg += at.path + ": ";
    throw config_error(printable(msg + what));
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

// ---------------------------------------------------------------- input guards

// Limits far above any real spec (a few KB, a few hundred YAML nodes, maps
// nested 3 deep, a few hundred runs) and far below what would exhaust memory
// or time: a spec is refused, with a message, before it could do either.
constexpr std::size_t max_spec_bytes = std::size_t{4} << 20;
constexpr std::size_t max_yaml_nodes = 100000;  // aliases count as the nodes they repeat
constexpr int max_yaml_depth = 64;
constexpr std::size_t max_runs = 100000;
constexpr std::size_t max_file_name = 255;  // the name and every run id name a directory

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

std::string read_text(const std::string& path) {
    auto cannot = [&](const std::string& why) { throw config_error(printable(path + ": cannot read: " + why)); };
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) cannot("is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) cannot(std::strerror(errno));
    // Bounded, so that a device (/dev/zero) or a huge file is refused rather than read into memory.
    std::string text;
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_spec_bytes)
            cannot("more than " + std::to_string(max_spec_bytes >> 20) + " MiB, too large for a spec");
    }
    if (in.bad()) cannot("read error");
    return text;
}

// ---------------------------------------------------------------- values

enum class vtype { integer, number, boolean, choice };

struct value {
    vtype type = vtype::integer;
    long long i = 0;
    double f = 0;
    bool b = false;
    std::string name;  // choice

    static value of(vtype t) {
        value v;
        v.type = t;
        return v;
    }
    bool is_set() const { return !(type == vtype::boolean && !b); }  // false counts as not set
    std::string text() const;
};

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
        case vtype::choice: return name;
    }
    return "?";
}

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

// ---------------------------------------------------------------- schema

// A key means something only while the enum key `controller` has one of `values`.
struct condition {
    std::string controller;  // empty: always
    std::vector<std::string> values;

    std::string text() const {
        return controller + (values.size() == 1 ? " is " + values[0] : " is one of " + join(values, ", "));
    }
};

constexpr double int_max = INT_MAX;
constexpr double inf = std::numeric_limits<double>::infinity();

struct key_def {
    std::string key;  // dotted path in a run config: "task.vocab"
    vtype type = vtype::integer;
    bool required = false;  // wherever its condition holds
    condition when;
    double lo = -inf, hi = inf;  // integer/number range
    bool lo_open = false;        // lo < v rather than lo <= v
    std::vector<std::string> choices;
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
    key_def& needed() {
        required = true;
        return *this;
    }
    key_def& only_when(condition c) {
        when = std::move(c);
        return *this;
    }
};

// `ref` is a generic lambda giving the field of a (const or not) run_config.
template <class Ref>
key_def int_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::integer;
    d.hi = int_max;
    d.set = [ref](run_config& c, const value& v) { ref(c) = static_cast<int>(v.i); };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        value v = value::of(vtype::integer);
        v.i = ref(c);
        return v;
    };
    return d;
}

template <class Ref>
key_def number_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::number;
    d.set = [ref](run_config& c, const value& v) { ref(c) = v.f; };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        if constexpr (std::is_same_v<std::decay_t<decltype(ref(c))>, std::optional<double>>) {
            if (!ref(c)) return std::nullopt;
            value v = value::of(vtype::number);
            v.f = *ref(c);
            return v;
        } else {
            value v = value::of(vtype::number);
            v.f = ref(c);
            return v;
        }
    };
    return d;
}

template <class Ref>
key_def bool_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::boolean;
    d.set = [ref](run_config& c, const value& v) { ref(c) = v.b; };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        value v = value::of(vtype::boolean);
        v.b = ref(c);
        return v;
    };
    return d;
}

// The allowed names are the enum's to_string values, so a new enum value in
// run_config.hpp is accepted here without another list to keep in step.
template <class E, class Ref>
key_def enum_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::choice;
    for (int i = 0; std::string(to_string(static_cast<E>(i))) != "?"; ++i)
        d.choices.emplace_back(to_string(static_cast<E>(i)));
    d.set = [ref, choices = d.choices](run_config& c, const value& v) {
        auto it = std::find(choices.begin(), choices.end(), v.name);
        ref(c) = static_cast<E>(it - choices.begin());
    };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        value v = value::of(vtype::choice);
        v.name = to_string(ref(c));
        return v;
    };
    return d;
}

#define FIELD(member) \
    [](auto& c) -> auto& { return c.member; }

// Every key, in run_config order (the order of config.yaml). Upper bounds
// on d_model and task lengths keep derived sizes (8/3 d, 2 max_len,
// seq_len + 1, noise_len + 2 n_tokens) in int.
const std::vector<key_def>& schema() {
    static const std::vector<key_def> keys = [] {
        const condition lookup_only{"task.kind", {"lookup"}};
        const condition copy_only{"task.kind", {"copy"}};
        const condition selective_copy_only{"task.kind", {"selective_copy"}};
        const condition has_seq_len{"task.kind", {"lookup", "induction"}};
        const condition taylor_only{"attention.numerator", {"taylor"}};
        const condition score_kernels{"attention.numerator", {"exp", "taylor", "linear"}};
        const condition softmax_only{"attention.denominator", {"softmax"}};
        const condition swiglu_only{"model.mlp", {"swiglu"}};
        const double max_len = 1 << 28, max_d_model = 1 << 24;
        return std::vector<key_def>{
            int_key("seed", FIELD(seed)).at_least(0),

            enum_key<task_kind>("task.kind", FIELD(task.kind)).needed(),
            int_key("task.vocab", FIELD(task.vocab)).at_least(2).needed(),  // all but copy: >= 4, a rule
            // lookup: even and >= 4 P, rules; induction: the random tokens before the last trigger.
            int_key("task.seq_len", FIELD(task.seq_len)).range(3, max_len).needed().only_when(has_seq_len),
            int_key("task.pairs", FIELD(task.pairs)).at_least(1).needed().only_when(lookup_only),
            number_key("task.power_a", FIELD(task.power_a)).above(0).only_when(lookup_only),
            bool_key("task.random_filler", FIELD(task.random_filler)).only_when(lookup_only),
            int_key("task.min_len", FIELD(task.min_len)).range(1, max_len).only_when(copy_only),
            int_key("task.max_len", FIELD(task.max_len)).range(1, max_len).needed().only_when(copy_only),
            int_key("task.test_min_len", FIELD(task.test_min_len)).range(1, max_len).only_when(copy_only),
            int_key("task.test_max_len", FIELD(task.test_max_len)).range(1, max_len).only_when(copy_only),
            int_key("task.n_tokens", FIELD(task.n_tokens)).range(1, max_len).needed().only_when(selective_copy_only),
            int_key("task.noise_len", FIELD(task.noise_len)).range(0, max_len).needed().only_when(selective_copy_only),
            int_key("task.test_examples", FIELD(task.test_examples)).at_least(1),
            int_key("task.train_examples", FIELD(task.train_examples)).at_least(0),

            int_key("model.layers", FIELD(model.layers)).range(1, 64).needed(),
            int_key("model.d_model", FIELD(model.d_model)).range(1, max_d_model).needed(),
            int_key("model.heads", FIELD(model.heads)).range(1, max_d_model).needed(),
            enum_key<mlp_kind>("model.mlp", FIELD(model.mlp)),
            int_key("model.mlp_hidden", FIELD(model.mlp_hidden)).at_least(1).only_when(swiglu_only),
            enum_key<position_kind>("model.position", FIELD(model.position)),

            enum_key<numerator_kind>("attention.numerator", FIELD(attention.numerator)).needed(),
            int_key("attention.order", FIELD(attention.order)).range(1, 20).needed().only_when(taylor_only),
            number_key("attention.clamp", FIELD(attention.clamp)).only_when(score_kernels),
            enum_key<denominator_kind>("attention.denominator", FIELD(attention.denominator)).needed(),
            bool_key("attention.in_gate", FIELD(attention.in_gate)),
            bool_key("attention.out_gate", FIELD(attention.out_gate)),
            bool_key("attention.detach_denominator", FIELD(attention.detach_denominator)).only_when(softmax_only),
            number_key("attention.eps", FIELD(attention.eps)).above(0),

            int_key("train.steps", FIELD(train.steps)).at_least(1).needed(),
            int_key("train.batch", FIELD(train.batch)).at_least(1),
            number_key("train.lr", FIELD(train.lr)).above(0).needed(),
            number_key("train.min_lr", FIELD(train.min_lr)).at_least(0),
            int_key("train.warmup", FIELD(train.warmup)).at_least(0),
            enum_key<schedule_kind>("train.schedule", FIELD(train.schedule)),
            number_key("train.weight_decay", FIELD(train.weight_decay)).at_least(0),
            number_key("train.clip", FIELD(train.clip)).at_least(0),
            int_key("train.eval_every", FIELD(train.eval_every)).at_least(1),
        };
    }();
    return keys;
}

#undef FIELD

const key_def* find_key(const std::string& key) {
    for (const key_def& d : schema())
        if (d.key == key) return &d;
    return nullptr;
}

std::string section_of(const std::string& key) {
    auto dot = key.find('.');
    return dot == std::string::npos ? "" : key.substr(0, dot);
}

bool is_section(const std::string& name) {
    return !name.empty() &&
           std::any_of(schema().begin(), schema().end(), [&](const key_def& d) { return section_of(d.key) == name; });
}

// The names allowed in a map: `section` "" is the top of a run config.
std::vector<std::string> names_in(const std::string& section) {
    std::vector<std::string> out;
    for (const key_def& d : schema()) {
        std::string s = section_of(d.key);
        std::string name = section.empty() ? (s.empty() ? d.key : s) : d.key.substr(s.size() + 1);
        if (s == section || section.empty())
            if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

// ---------------------------------------------------------------- did you mean

// Optimal string alignment distance: insertions, deletions, substitutions and
// swaps of two neighbours cost 1 each ("modle" is 1 from "model").
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// A name as it may be mistyped (`match`) and what to suggest for it.
struct candidate {
    std::string match, suggest;
};

// ", did you mean 'X'?" for the candidate nearest to `word` (case ignored),
// when it is near enough to be a typo: at most a third of the word's
// letters off (1 to 3). Ties go to the candidate listed first.
std::string did_you_mean(const std::string& word, const std::vector<candidate>& candidates) {
    if (word.empty() || word.size() > 64) return "";
    const std::string w = lower(word);
    std::size_t best = std::clamp<std::size_t>(word.size() / 3, 1, 3) + 1;
    const candidate* pick = nullptr;
    for (const candidate& c : candidates)
        if (const std::size_t dist = edit_distance(w, lower(c.match)); dist < best) {
            best = dist;
            pick = &c;
        }
    return pick ? ", did you mean '" + pick->suggest + "'?" : "";
}

std::vector<candidate> as_candidates(const std::vector<std::string>& names) {
    std::vector<candidate> out;
    for (const std::string& n : names) out.push_back({n, n});
    return out;
}

// Candidates for a key of the map at `path` in a run config (`section` ""
// for its top, `prefix` "base" in a spec, "" in a config file): the keys of
// that map as written there, then every other key of a run config by its
// last name, suggested with its full path (`lr` directly under base is
// 'base.train.lr').
std::vector<candidate> config_candidates(const std::string& section, const std::string& prefix) {
    std::vector<candidate> out = as_candidates(names_in(section));
    for (const key_def& d : schema()) {
        const std::string s = section_of(d.key);
        if (s == section) continue;
        out.push_back({d.key.substr(s.empty() ? 0 : s.size() + 1), join_path(prefix, d.key)});
    }
    if (!section.empty())
        for (const std::string& n : names_in(""))
            if (is_section(n) && n != section) out.push_back({n, join_path(prefix, n)});
    return out;
}

// Candidates for a dotted key (sweep, --set): every key, by its dotted
// name, then by its last name alone (`order` is 'attention.order').
std::vector<candidate> dotted_candidates() {
    std::vector<candidate> out;
    for (const key_def& d : schema()) out.push_back({d.key, d.key});
    for (const key_def& d : schema())
        if (!section_of(d.key).empty()) out.push_back({d.key.substr(section_of(d.key).size() + 1), d.key});
    return out;
}

// For a dotted key that names nothing: the keys it was probably meant to be.
std::string dotted_key_hint(const std::string& key) {
    std::string section = section_of(key);
    if (section.empty() && is_section(key)) section = key;
    if (!is_section(section)) {
        std::vector<std::string> sections;
        for (const std::string& n : names_in(""))
            if (is_section(n)) sections.push_back(n + ".*");
        return "expected seed or one of " + join(sections, ", ");
    }
    std::vector<std::string> keys;
    for (const std::string& n : names_in(section)) keys.push_back(section + "." + n);
    return "expected one of " + join(keys, ", ");
}

std::string format_bound(double x) {
    return x == std::floor(x) ? std::to_string(static_cast<long long>(x)) : format_number(x);
}

std::string expected(const key_def& d) {
    switch (d.type) {
        case vtype::integer: {
            std::string s = "an integer";
            if (d.hi >= int_max) return s + " >= " + format_bound(d.lo);
            return s + " in [" + format_bound(d.lo) + ", " + format_bound(d.hi) + "]";
        }
        case vtype::number:
            if (std::isinf(d.lo)) return "a number";
            return std::string("a number ") + (d.lo_open ? "> " : ">= ") + format_bound(d.lo);
        case vtype::boolean: return "true or false";
        case vtype::choice: return "one of " + join(d.choices, ", ");
    }
    return "?";
}

// Numbers and bools must be plain scalars: "5" in quotes is a string.
value parse_value(const key_def& d, const YAML::Node& n, const where& at) {
    auto bad = [&](const std::string& got) { fail(at, "expected " + expected(d) + ", got " + got); };
    if (!n.IsScalar()) bad(describe(n));
    const std::string& t = n.Scalar();
    value v = value::of(d.type);
    switch (d.type) {
        case vtype::integer:
            if (!is_plain(n) || !parse_int(t, v.i)) bad(describe(n));
            if (v.i < d.lo || v.i > d.hi) bad(t);
            break;
        case vtype::number:
            if (!is_plain(n) || !parse_double(t, v.f)) bad(describe(n));
            if (v.f < d.lo || (d.lo_open && v.f == d.lo) || v.f > d.hi) bad(t);
            break;
        case vtype::boolean:
            if (!is_plain(n) || (t != "true" && t != "false"))
                bad(describe(n) + did_you_mean(t, as_candidates({"true", "false"})));
            v.b = t == "true";
            break;
        case vtype::choice:
            if (std::find(d.choices.begin(), d.choices.end(), t) == d.choices.end())
                bad(describe(n) + did_you_mean(t, as_candidates(d.choices)));
            v.name = t;
            break;
    }
    return v;
}

// ---------------------------------------------------------------- entries

// Precedence, lowest first: a --set overrides the base, a sweep value both.
enum class origin { base = 0, set = 1, sweep = 2 };

struct entry {
    value v;
    origin from = origin::base;
    where at;
};
using entries = std::map<std::string, entry>;  // dotted key -> value and where it was written

// A spec's base, or a config file: its values and the lines of its maps,
// which missing-key errors point at.
struct config_source {
    std::string file;
    std::string path;                         // "base" in a spec, "" in a config file
    int line = 0;                             // of the key naming the map (or of the map, at top level)
    std::map<std::string, int> section_line;  // section name -> line of its key
    entries values;
};

// `key_line`: line of the `base:` key (where a missing key is reported);
// `line`: line of its value.
config_source parse_config(const YAML::Node& node, const std::string& file, const std::string& path, int key_line,
                           int line) {
    config_source src{file, path, key_line, {}, {}};
    if (!node.IsMap())
        fail({file, line, path}, "expected a map of " + join(names_in(""), ", ") + ", got " + describe(node));
    auto add = [&](const key_def& d, const YAML::Node& k, const YAML::Node& v) {
        where at{file, value_line(k, v), join_path(path, d.key)};
        src.values[d.key] = entry{parse_value(d, v, at), origin::base, at};
    };
    for (const auto& [k, v] : map_items(node, file, path)) {
        const std::string name = k.Scalar();
        const std::string sub_path = join_path(path, name);
        if (const key_def* d = find_key(name); d && section_of(name).empty()) {
            add(*d, k, v);
        } else if (is_section(name)) {
            if (!v.IsMap())
                fail({file, value_line(k, v), sub_path},
                     "expected a map of " + join(names_in(name), ", ") + ", got " + describe(v));
            src.section_line[name] = line_of(k);
            for (const auto& [sk, sv] : map_items(v, file, sub_path)) {
                const key_def* sd = find_key(name + "." + sk.Scalar());
                if (!sd)
                    fail({file, line_of(sk), join_path(sub_path, sk.Scalar())},
                         "unknown key" + did_you_mean(sk.Scalar(), config_candidates(name, path)) +
                             " (expected one of " + join(names_in(name), ", ") + ")");
                add(*sd, sk, sv);
            }
        } else {
            fail({file, line_of(k), sub_path}, "unknown key" + did_you_mean(name, config_candidates("", path)) +
                                                   " (expected one of " + join(names_in(""), ", ") + ")");
        }
    }
    return src;
}

// Keys required whatever the other values are (the conditional ones are
// checked per resolved run, where their condition is known).
void check_required(const config_source& src) {
    for (const key_def& d : schema()) {
        if (!d.required || !d.when.controller.empty() || src.values.count(d.key)) continue;
        std::string section = section_of(d.key);
        auto sl = src.section_line.find(section);
        if (!section.empty() && sl == src.section_line.end()) {
            std::vector<std::string> need;
            for (const key_def& r : schema())
                if (r.required && r.when.controller.empty() && section_of(r.key) == section)
                    need.push_back(r.key.substr(section.size() + 1));
            fail({src.file, src.line, join_path(src.path, section)},
                 "missing required section (with " + join(need, ", ") + ")");
        }
        fail({src.file, section.empty() ? src.line : sl->second, join_path(src.path, d.key)},
             "missing required key, expected " + expected(d));
    }
}

std::string choice_in(const entries& e, const std::string& key) {
    if (auto it = e.find(key); it != e.end()) return it->second.v.name;
    return find_key(key)->get(run_config{})->name;  // its default
}

bool holds(const condition& c, const std::string& controller_value) {
    return std::find(c.values.begin(), c.values.end(), controller_value) != c.values.end();
}
bool applies(const key_def& d, const entries& e) {
    return d.when.controller.empty() || holds(d.when, choice_in(e, d.when.controller));
}
bool applies(const key_def& d, const run_config& c) {
    return d.when.controller.empty() || holds(d.when, find_key(d.when.controller)->get(c)->name);
}

// ---------------------------------------------------------------- combinations

// A constraint between keys. When broken, the error names the involved key
// given at the most specific level (sweep > --set > base), first listed on ties.
struct rule {
    std::vector<std::string> keys;
    std::function<std::string(const run_config&)> broken;  // "" when satisfied
};

const std::vector<rule>& combination_rules() {
    using std::to_string;
    static const std::vector<rule> rules = {
        {{"model.heads", "model.d_model"},
         [](const run_config& c) {
             if (c.model.d_model % c.model.heads == 0) return std::string();
             return "model.heads " + to_string(c.model.heads) + " does not divide model.d_model " +
                    to_string(c.model.d_model);
         }},
        {{"model.position", "model.heads", "model.d_model"},
         [](const run_config& c) {
             const int hd = c.model.d_model / c.model.heads;
             if (c.model.position != position_kind::rope || c.model.d_model % c.model.heads != 0 || hd % 2 == 0)
                 return std::string();
             return "rope needs an even head dim, got d_model/heads = " + to_string(c.model.d_model) + "/" +
                    to_string(c.model.heads) + " = " + to_string(hd);
         }},
        {{"task.vocab", "task.kind"},
         [](const run_config& c) {
             // lookup: a key id in [1, V/2); selective_copy and induction: 2
             // content ids beside their 2 special ids (else the answer is fixed).
             if (c.task.kind == task_kind::copy || c.task.vocab >= 4) return std::string();
             const char* why = c.task.kind == task_kind::selective_copy
                                   ? " (blank 0, marker vocab-1, content 1..vocab-2)"
                               : c.task.kind == task_kind::induction ? " (2 specials, content 1..vocab-2)"
                                                                     : "";
             return std::string(attnlab::to_string(c.task.kind)) + " needs task.vocab >= 4" + why + ", got " +
                    to_string(c.task.vocab);
         }},
        {{"task.seq_len", "task.kind"},
         [](const run_config& c) {
             if (c.task.kind != task_kind::lookup || c.task.seq_len % 2 == 0) return std::string();
             return "lookup needs an even task.seq_len, got " + to_string(c.task.seq_len);
         }},
        {{"task.pairs", "task.seq_len", "task.kind"},
         [](const run_config& c) {
             if (c.task.kind != task_kind::lookup || 4LL * c.task.pairs <= c.task.seq_len) return std::string();
             return "lookup needs 4 * task.pairs <= task.seq_len, got 4 * " + to_string(c.task.pairs) + " > " +
                    to_string(c.task.seq_len);
         }},
        {{"task.vocab", "task.seq_len", "task.kind"},
         [](const run_config& c) {
             if (c.task.kind != task_kind::lookup || c.task.vocab > c.task.seq_len) return std::string();
             return "lookup needs task.vocab > task.seq_len, got " + to_string(c.task.vocab) +
                    " <= " + to_string(c.task.seq_len);
         }},
        {{"task.min_len", "task.max_len"},
         [](const run_config& c) {
             if (c.task.kind != task_kind::copy || c.task.min_len <= c.task.max_len) return std::string();
             return "task.min_len " + to_string(c.task.min_len) + " exceeds task.max_len " + to_string(c.task.max_len);
         }},
        {{"task.test_min_len", "task.test_max_len", "task.min_len", "task.max_len"},
         [](const run_config& c) {
             if (c.task.kind != task_kind::copy || c.task.test_min_len <= c.task.test_max_len) return std::string();
             return "task.test_min_len " + to_string(c.task.test_min_len) + " exceeds task.test_max_len " +
                    to_string(c.task.test_max_len) + " (test lengths default to min_len, max_len)";
         }},
        {{"attention.out_gate", "attention.denominator"},
         [](const run_config& c) {
             if (!c.attention.out_gate || c.attention.denominator != denominator_kind::gate) return std::string();
             return std::string("out_gate is not allowed with denominator gate, which has an output gate already");
         }},
        {{"train.min_lr", "train.lr"},
         [](const run_config& c) {
             if (c.train.min_lr <= c.train.lr) return std::string();
             return "train.min_lr " + format_number(c.train.min_lr) + " exceeds train.lr " + format_number(c.train.lr);
         }},
        {{"train.warmup", "train.steps"},
         [](const run_config& c) {
             if (c.train.warmup <= c.train.steps) return std::string();
             return "train.warmup " + to_string(c.train.warmup) + " exceeds train.steps " + to_string(c.train.steps);
         }},
    };
    return rules;
}

// Defaults that depend on other keys.
void fill_derived_defaults(run_config& c) {
    if (c.task.kind == task_kind::copy) {
        if (c.task.min_len == 0) c.task.min_len = c.task.max_len;
        if (c.task.test_min_len == 0) c.task.test_min_len = c.task.min_len;
        if (c.task.test_max_len == 0) c.task.test_max_len = c.task.max_len;
    }
    if (c.model.mlp == mlp_kind::swiglu) c.model.mlp_hidden = resolved_mlp_hidden(c.model);
}

// ---------------------------------------------------------------- resolution

// Resolves one run. The values in force at each level: the base as written,
// the base after --set, and this run (a sweep point, or the base after --set).
// A conditional key that means nothing in this run is an error if it meant
// nothing where it was written (base, --set or this point); otherwise a later
// level made it meaningless and it is dropped, left at its default.
run_config resolve(const config_source& base, const entries& with_set, const entries& run, const std::string& point) {
    const entries* level[3] = {&base.values, &with_set, &run};
    const std::string at_point = point.empty() ? "" : " (at sweep point " + point + ")";
    run_config cfg;
    for (const key_def& d : schema()) {
        const bool meaningful = applies(d, run);
        auto it = run.find(d.key);
        if (it == run.end()) {
            if (!d.required || !meaningful) continue;
            // Required only under a condition: blame whoever set the condition.
            auto c = run.find(d.when.controller);
            if (c == run.end() || c->second.from == origin::base) {
                auto sl = base.section_line.find(section_of(d.key));
                fail({base.file, sl == base.section_line.end() ? base.line : sl->second, join_path(base.path, d.key)},
                     "missing required key (needed when " + d.when.text() + "), expected " + expected(d) + at_point);
            }
            fail(c->second.at, c->second.v.text() + " needs " + d.key + ", which is not set" + at_point);
        }
        const entry& e = it->second;
        if (!meaningful) {
            if (!e.v.is_set() || applies(d, *level[static_cast<int>(e.from)])) continue;
            fail(e.at, std::string(e.from == origin::sweep ? "swept value has no effect" : "has no effect") + ": " +
                           d.key + " applies only when " + d.when.text() + ", but " + d.when.controller + " is " +
                           choice_in(run, d.when.controller) + at_point);
        }
        d.set(cfg, e.v);
    }
    fill_derived_defaults(cfg);
    for (const rule& r : combination_rules()) {
        std::string why = r.broken(cfg);
        if (why.empty()) continue;
        const entry* blame = nullptr;
        for (const std::string& k : r.keys)
            if (auto bi = run.find(k); bi != run.end() && (!blame || bi->second.from > blame->from))
                blame = &bi->second;
        if (!blame) fail({base.file, base.line, base.path}, why + at_point);  // defaults alone: not reachable
        fail(blame->at, why + at_point);
    }
    return cfg;
}

std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t");
    auto e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

entry parse_set(const std::string& s) {
    auto eq = s.find('=');
    const std::string key = trim(s.substr(0, eq));
    if (eq == std::string::npos || key.empty())
        fail({"--set", 0, ""}, "expected dotted.key=value (e.g. attention.order=4), got '" + s + "'");
    const std::string text = trim(s.substr(eq + 1));
    where at{"--set", 0, key};
    const key_def* d = find_key(key);
    if (!d) fail(at, "unknown key" + did_you_mean(key, dotted_candidates()) + " (" + dotted_key_hint(key) + ")");
    YAML::Node n;
    try {
        n = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        fail(at, "cannot read '" + text + "' as a YAML value: " + e.msg);
    }
    return entry{parse_value(*d, n, at), origin::set, at};
}

// One grid of a sweep: its keys as written and their values.
struct axis {
    std::string key;
    std::vector<entry> values;
};
using grid = std::vector<axis>;

grid parse_grid(const YAML::Node& m, const std::string& file, const std::string& path, int line) {
    if (!m.IsMap()) fail({file, line, path}, "expected a map of dotted keys to lists of values, got " + describe(m));
    if (m.size() == 0) fail({file, line, path}, "empty grid, expected dotted keys with lists of values");
    grid g;
    for (const auto& [k, v] : map_items(m, file, path)) {
        const std::string key = k.Scalar();
        where key_at{file, line_of(k), path + "." + key};
        if (key == "seed") fail(key_at, "seeds are swept by the top-level key seeds");
        const key_def* d = find_key(key);
        if (!d)
            fail(key_at, "unknown key" + did_you_mean(key, dotted_candidates()) + " (" + dotted_key_hint(key) + ")");
        key_at.line = value_line(k, v);
        if (!v.IsSequence()) fail(key_at, "expected a list of values, got " + describe(v));
        if (v.size() == 0) fail(key_at, "empty list of values");
        axis a{key, {}};
        for (const YAML::Node& item : v) {
            where at{file, line_of(item) ? line_of(item) : key_at.line, key_at.path};
            entry e{parse_value(*d, item, at), origin::sweep, at};
            for (const entry& prev : a.values)
                if (prev.v.text() == e.v.text()) fail(at, "duplicate value " + e.v.text());
            a.values.push_back(e);
        }
        g.push_back(std::move(a));
    }
    return g;
}

std::vector<grid> parse_sweep(const YAML::Node& n, const std::string& file, int line) {
    if (n.IsMap()) return {parse_grid(n, file, "sweep", line)};
    if (!n.IsSequence())
        fail({file, line, "sweep"},
             "expected a map of dotted keys to lists of values, or a list of such maps, got " + describe(n));
    if (n.size() == 0) fail({file, line, "sweep"}, "empty list of grids");
    std::vector<grid> grids;
    for (size_t i = 0; i < n.size(); ++i)
        grids.push_back(
            parse_grid(n[i], file, "sweep[" + std::to_string(i) + "]", line_of(n[i]) ? line_of(n[i]) : line));
    return grids;
}

std::vector<entry> parse_seeds(const YAML::Node& n, const std::string& file, int line) {
    const key_def& seed = *find_key("seed");
    if (!n.IsSequence()) fail({file, line, "seeds"}, "expected a list of integers >= 0, got " + describe(n));
    if (n.size() == 0) fail({file, line, "seeds"}, "empty list of seeds");
    std::vector<entry> seeds;
    for (const YAML::Node& item : n) {
        where at{file, line_of(item) ? line_of(item) : line, "seeds"};
        entry e{parse_value(seed, item, at), origin::sweep, at};
        for (const entry& prev : seeds)
            if (prev.v.i == e.v.i) fail(at, "duplicate seed " + e.v.text());
        seeds.push_back(e);
    }
    return seeds;
}

bool name_is_safe(const std::string& s) {
    return !s.empty() && s.size() <= max_file_name && s != "." && s != ".." &&
           s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
               std::string::npos;
}

std::string run_id(const std::vector<swept_value>& swept) {
    std::string id;
    for (const swept_value& s : swept) id += (id.empty() ? "" : ",") + s.key + "=" + s.value;
    for (char& ch : id)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && !std::strchr("._=,+-", ch)) ch = '_';
    return id;
}

experiment_spec parse_spec_checked(const std::string& text, const std::string& file,
                                   const std::vector<std::string>& set_overrides) {
    experiment_spec spec;
    spec.path = file;
    spec.source_text = text;
    spec.set_overrides = set_overrides;

    const YAML::Node root = load_yaml(text, file);
    if (root.IsNull()) fail({file, 1, ""}, "empty spec, expected a map with keys name, base, sweep, seeds");
    const int root_line = line_of(root) ? line_of(root) : 1;
    if (!root.IsMap())
        fail({file, root_line, ""}, "expected a map with keys name, base, sweep, seeds, got " + describe(root));
    struct item {
        YAML::Node value;
        int key_line, line;
    };
    std::map<std::string, item> top;
    for (const auto& [k, v] : map_items(root, file, "")) {
        const std::string key = k.Scalar();
        if (key != "name" && key != "base" && key != "sweep" && key != "seeds") {
            // A typo of a top-level key, or a key of the base written outside it (`model:`).
            std::vector<candidate> near = as_candidates({"name", "base", "sweep", "seeds"});
            for (const std::string& n : names_in("")) near.push_back({n, "base." + n});
            for (const key_def& d : schema())
                if (const std::string s = section_of(d.key); !s.empty())
                    near.push_back({d.key.substr(s.size() + 1), "base." + d.key});
            fail({file, line_of(k), key},
                 "unknown key" + did_you_mean(key, near) + " (expected one of name, base, sweep, seeds)");
        }
        top[key] = {v, line_of(k), value_line(k, v)};
    }

    if (!top.count("name")) fail({file, root_line, "name"}, "missing required key, expected a name ([A-Za-z0-9._-]+)");
    const YAML::Node& name = top["name"].value;
    if (!name.IsScalar() || !name_is_safe(name.Scalar()))
        fail({file, top["name"].line, "name"}, "expected a name of letters, digits, '.', '_', '-' (at most " +
                                                   std::to_string(max_file_name) + "), got " + describe(name));
    spec.name = name.Scalar();

    if (!top.count("base"))
        fail({file, root_line, "base"}, "missing required key, expected a map with one complete run configuration");
    const config_source base = parse_config(top["base"].value, file, "base", top["base"].key_line, top["base"].line);
    check_required(base);

    std::vector<grid> grids;
    if (top.count("sweep")) grids = parse_sweep(top["sweep"].value, file, top["sweep"].line);
    std::optional<std::vector<entry>> seeds;
    if (top.count("seeds")) seeds = parse_seeds(top["seeds"].value, file, top["seeds"].line);

    for (const grid& g : grids)
        for (const axis& a : g)
            if (std::find(spec.swept_keys.begin(), spec.swept_keys.end(), a.key) == spec.swept_keys.end())
                spec.swept_keys.push_back(a.key);

    // Count the runs before making them: a few lists can multiply to more
    // runs than memory holds. Counts stop growing past the limit.
    if (!grids.empty()) {
        std::size_t points = 0;
        for (const grid& g : grids) {
            std::size_t n = 1;
            for (const axis& a : g) n = std::min(n * a.values.size(), max_runs + 1);
            points = std::min(points + n, max_runs + 1);
        }
        const std::size_t n_seeds = seeds ? seeds->size() : 1;
        if (points * n_seeds > max_runs)
            fail({file, top["sweep"].key_line, "sweep"},
                 "more than " + std::to_string(max_runs) + " runs (" +
                     (points > max_runs ? "more than " + std::to_string(max_runs) : std::to_string(points)) +
                     " points x " + std::to_string(n_seeds) + " seeds); split the experiment");
    }

    entries with_set = base.values;
    for (const std::string& s : set_overrides) {
        entry e = parse_set(s);
        const std::string& key = e.at.path;
        bool swept = std::find(spec.swept_keys.begin(), spec.swept_keys.end(), key) != spec.swept_keys.end();
        if (swept || (key == "seed" && seeds)) fail(e.at, "is swept in the spec; --set cannot override it");
        with_set[key] = e;
    }
    spec.swept_keys.push_back("seed");

    spec.base = resolve(base, with_set, with_set, "");
    if (!seeds) {
        value v = value::of(vtype::integer);
        v.i = spec.base.seed;
        seeds = std::vector<entry>{entry{v, origin::base, {}}};
    }

    // Points of each grid in row-major order of its keys as written; ids list
    // the keys in swept_keys order, so a point has one id whichever grid gives it.
    std::set<std::string> seen;
    auto emit = [&](const run_config& cfg, const std::vector<swept_value>& point) {
        for (const entry& s : *seeds) {
            run_point rp{"", cfg, point};
            rp.config.seed = static_cast<int>(s.v.i);
            rp.swept.push_back({"seed", s.v.text()});
            rp.id = run_id(rp.swept);
            if (rp.id.size() > max_file_name)  // it names the run's directory
                fail({file, top.count("sweep") ? top["sweep"].key_line : root_line, "sweep"},
                     "run id of " + std::to_string(rp.id.size()) + " characters, longer than a file name can be (" +
                         std::to_string(max_file_name) + "): " + rp.id.substr(0, 60) + "...; sweep fewer keys");
            if (seen.insert(rp.id).second) spec.runs.push_back(std::move(rp));
        }
    };
    if (grids.empty()) emit(spec.base, {});
    for (const grid& g : grids) {
        std::vector<size_t> idx(g.size(), 0);
        for (bool more = true; more;) {
            entries run = with_set;
            for (size_t a = 0; a < g.size(); ++a) run[g[a].key] = g[a].values[idx[a]];
            std::vector<swept_value> point;
            for (const std::string& key : spec.swept_keys)
                for (size_t a = 0; a < g.size(); ++a)
                    if (g[a].key == key) point.push_back({key, g[a].values[idx[a]].v.text()});
            emit(resolve(base, with_set, run, run_id(point)), point);
            more = false;
            for (size_t a = g.size(); a-- > 0;) {
                if (++idx[a] < g[a].values.size()) {
                    more = true;
                    break;
                }
                idx[a] = 0;
            }
        }
    }
    return spec;
}

}  // namespace

experiment_spec parse_spec(const std::string& yaml_text, const std::string& file_label,
                           const std::vector<std::string>& set_overrides) {
    try {
        return parse_spec_checked(yaml_text, file_label, set_overrides);
    } catch (const YAML::Exception& e) {  // defensive: yaml-cpp errors outside load_yaml
        fail({file_label, e.mark.line >= 0 ? e.mark.line + 1 : 0, ""}, "YAML error: " + e.msg);
    }
}

experiment_spec load_spec(const std::string& path, const std::vector<std::string>& set_overrides) {
    return parse_spec(read_text(path), path, set_overrides);
}

std::string run_config_to_yaml(const run_config& cfg) {
    std::string out, section;
    for (const key_def& d : schema()) {
        if (!applies(d, cfg)) continue;
        std::optional<value> v = d.get(cfg);
        if (!v) continue;
        const std::string s = section_of(d.key);
        if (s.empty()) {
            out += d.key + ": " + v->text() + "\n";
            continue;
        }
        if (s != section) out += s + ":\n";
        section = s;
        out += "  " + d.key.substr(s.size() + 1) + ": " + v->text() + "\n";
    }
    return out;
}

run_config run_config_from_yaml(const std::string& yaml_text, const std::string& file_label) {
    try {
        const YAML::Node root = load_yaml(yaml_text, file_label);
        if (root.IsNull())
            fail({file_label, 1, ""}, "empty config, expected a map of seed, task, model, attention, train");
        const config_source src = parse_config(root, file_label, "", 1, line_of(root) ? line_of(root) : 1);
        check_required(src);
        return resolve(src, src.values, src.values, "");
    } catch (const YAML::Exception& e) {
        fail({file_label, e.mark.line >= 0 ? e.mark.line + 1 : 0, ""}, "YAML error: " + e.msg);
    }
}

run_config run_config_from_yaml_file(const std::string& path) { return run_config_from_yaml(read_text(path), path); }

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
    return did_you_mean(word, as_candidates(names));
}

}  // namespace attnlab
