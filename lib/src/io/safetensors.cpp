// safetensors writer and checking reader, with a minimal JSON parser for the
// header (objects, arrays, strings, integers: all a safetensors header holds).
#include "attnlab/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "attnlab/io/files.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

// The data section is the host's float buffer, copied as is.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
static_assert(sizeof(float) == 4, "F32 is 4 bytes");

namespace {

constexpr std::size_t length_bytes = 8;  // the u64 header length
constexpr std::size_t header_align = 8;  // header padded so the data starts 8-byte aligned
constexpr const char* metadata_key = "__metadata__";

// ---------------------------------------------------------------- JSON

struct json_value {
    enum class kind { object, array, string, integer };
    kind k = kind::integer;
    std::vector<std::string> keys;   // object: member names, in file order
    std::vector<json_value> values;  // object: member values (parallel to keys); array: items
    std::string text;                // string
    std::int64_t number = 0;         // integer
};

const char* kind_name(json_value::kind k) {
    switch (k) {
        case json_value::kind::object: return "an object";
        case json_value::kind::array: return "an array";
        case json_value::kind::string: return "a string";
        case json_value::kind::integer: return "an integer";
    }
    return "?";
}

struct json_syntax_error {
    std::size_t pos;
    std::string what;
};

// Recursive descent over RFC 8259, restricted to the value kinds above.
class json_parser {
public:
    explicit json_parser(const std::string& s) : s_(s) {}

    json_value parse_document() {
        skip_ws();
        json_value v = parse_value(0);
        skip_ws();
        if (i_ != s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "' after the JSON value");
        return v;
    }

private:
    static constexpr int max_depth = 64;

    [[noreturn]] void fail(std::string what) const { throw json_syntax_error{i_, std::move(what)}; }

    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }

    void expect(char c) {
        if (i_ >= s_.size()) fail(std::string("unexpected end, expected '") + c + "'");
        if (s_[i_] != c) fail(std::string("expected '") + c + "', got '" + s_[i_] + "'");
        ++i_;
    }

    json_value parse_value(int depth) {
        if (depth > max_depth) fail("nested deeper than " + std::to_string(max_depth) + " levels");
        if (i_ >= s_.size()) fail("unexpected end, expected a value");
        const char c = s_[i_];
        if (c == '{') return parse_object(depth);
        if (c == '[') return parse_array(depth);
        if (c == '"') {
            json_value v;
            v.k = json_value::kind::string;
            v.text = parse_string();
            return v;
        }
        if (c == '-' || (c >= '0' && c <= '9')) return parse_integer();
        fail(std::string("unexpected '") + c + "', expected an object, array, string or integer");
    }

    json_value parse_object(int depth) {
        json_value v;
        v.k = json_value::kind::object;
        expect('{');
        skip_ws();
        if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            return v;
        }
        for (;;) {
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != '"') fail("expected a member name (a string)");
            const std::size_t key_pos = i_;
            std::string key = parse_string();
            if (std::find(v.keys.begin(), v.keys.end(), key) != v.keys.end())
                throw json_syntax_error{key_pos, "duplicate member \"" + key + "\""};
            skip_ws();
            expect(':');
            skip_ws();
            v.keys.push_back(std::move(key));
            v.values.push_back(parse_value(depth + 1));
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            expect('}');
            return v;
        }
    }

    json_value parse_array(int depth) {
        json_value v;
        v.k = json_value::kind::array;
        expect('[');
        skip_ws();
        if (i_ < s_.size() && s_[i_] == ']') {
            ++i_;
            return v;
        }
        for (;;) {
            skip_ws();
            v.values.push_back(parse_value(depth + 1));
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            expect(']');
            return v;
        }
    }

    json_value parse_integer() {
        const std::size_t start = i_;
        const bool negative = s_[i_] == '-';
        if (negative) ++i_;
        if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') fail("expected a digit");
        if (s_[i_] == '0' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9')
            fail("leading zero in a number");
        std::uint64_t mag = 0;
        constexpr std::uint64_t limit = static_cast<std::uint64_t>(INT64_MAX);
        for (; i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; ++i_) {
            const auto d = static_cast<std::uint64_t>(s_[i_] - '0');
            if (mag > (limit - d) / 10) throw json_syntax_error{start, "integer out of range"};
            mag = mag * 10 + d;
        }
        if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E'))
            throw json_syntax_error{start, "expected an integer, got a fractional or exponent number"};
        json_value v;
        v.k = json_value::kind::integer;
        v.number = negative ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
        return v;
    }

    unsigned parse_hex4() {
        if (i_ + 4 > s_.size()) fail("unexpected end in a \\u escape");
        unsigned u = 0;
        for (int n = 0; n < 4; ++n, ++i_) {
            const char c = s_[i_];
            u <<= 4;
            if (c >= '0' && c <= '9')
                u |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f')
                u |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                u |= static_cast<unsigned>(c - 'A' + 10);
            else
                fail("bad hex digit in a \\u escape");
        }
        return u;
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string parse_string() {
        expect('"');
        std::string out;
        for (;;) {
            if (i_ >= s_.size()) fail("unterminated string");
            const char c = s_[i_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) {
                --i_;
                fail("control character in a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) fail("unterminated string");
            const char e = s_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = parse_hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF) {  // high surrogate: a low one must follow
                        if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') fail("unpaired surrogate");
                        i_ += 2;
                        const unsigned lo = parse_hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        fail("unpaired surrogate");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: --i_; fail(std::string("bad escape '\\") + e + "'");
            }
        }
    }

    const std::string& s_;
    std::size_t i_ = 0;
};

// ---------------------------------------------------------------- writing

void append_json_string(std::string& out, const std::string& s) {
    out += '"';
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::vector<std::int64_t> to_int64(const std::vector<int>& shape) { return {shape.begin(), shape.end()}; }

// ---------------------------------------------------------------- reading

// One tensor entry of a header, checked for internal consistency.
struct header_tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0, end = 0;
};

// Names at most `max_names` of `names`, then "and N more".
std::string name_list(const std::vector<std::string>& names) {
    constexpr std::size_t max_names = 4;
    std::string s;
    for (std::size_t i = 0; i < names.size() && i < max_names; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > max_names) s += " and " + std::to_string(names.size() - max_names) + " more";
    return s;
}

header_tensor check_tensor_entry(const std::string& label, const std::string& name, const json_value& v) {
    auto bad = [&](const std::string& what) { return io_error(label + ": tensor " + name + ": " + what); };
    if (v.k != json_value::kind::object) throw bad(std::string("expected an object, got ") + kind_name(v.k));
    const json_value *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (std::size_t i = 0; i < v.keys.size(); ++i) {
        if (v.keys[i] == "dtype")
            dtype = &v.values[i];
        else if (v.keys[i] == "shape")
            shape = &v.values[i];
        else if (v.keys[i] == "data_offsets")
            offsets = &v.values[i];
        else
            throw bad("unknown field \"" + v.keys[i] + "\" (expected dtype, shape, data_offsets)");
    }
    if (!dtype) throw bad("missing \"dtype\"");
    if (!shape) throw bad("missing \"shape\"");
    if (!offsets) throw bad("missing \"data_offsets\"");
    if (dtype->k != json_value::kind::string)
        throw bad(std::string("dtype is ") + kind_name(dtype->k) + ", expected a string");
    if (dtype->text != "F32") throw bad("dtype " + dtype->text + ", expected F32 (attnlab checkpoints are float32)");

    header_tensor t;
    t.name = name;
    if (shape->k != json_value::kind::array)
        throw bad(std::string("shape is ") + kind_name(shape->k) + ", expected an array");
    std::uint64_t numel = 1;
    for (const auto& d : shape->values) {
        if (d.k != json_value::kind::integer || d.number < 0)
            throw bad("shape must be an array of non-negative integers");
        t.shape.push_back(d.number);
        // Overflow guard: anything beyond 2^62 bytes cannot be in a file anyway.
        if (d.number != 0 && numel > (std::uint64_t{1} << 60) / static_cast<std::uint64_t>(d.number))
            throw bad("shape " + shape_text(t.shape) + " is too large");
        numel *= static_cast<std::uint64_t>(d.number);
    }
    if (offsets->k != json_value::kind::array || offsets->values.size() != 2 ||
        offsets->values[0].k != json_value::kind::integer || offsets->values[1].k != json_value::kind::integer ||
        offsets->values[0].number < 0 || offsets->values[1].number < 0)
        throw bad("data_offsets must be [begin, end], two non-negative integers");
    t.begin = static_cast<std::uint64_t>(offsets->values[0].number);
    t.end = static_cast<std::uint64_t>(offsets->values[1].number);
    if (t.end < t.begin)
        throw bad("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] end before they begin");
    if (t.end - t.begin != numel * sizeof(float))
        throw bad("shape " + shape_text(t.shape) + " holds " + std::to_string(numel * sizeof(float)) +
                  " bytes of F32, but data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] span " + std::to_string(t.end - t.begin));
    return t;
}

void read_metadata(const std::string& label, const json_value& v, safetensors_metadata* out) {
    if (v.k != json_value::kind::object)
        throw io_error(label + ": " + metadata_key + " is " + kind_name(v.k) + ", expected an object of strings");
    for (std::size_t i = 0; i < v.keys.size(); ++i) {
        if (v.values[i].k != json_value::kind::string)
            throw io_error(label + ": " + metadata_key + "." + v.keys[i] + " is " + kind_name(v.values[i].k) +
                           ", expected a string");
        if (out) out->emplace_back(v.keys[i], v.values[i].text);
    }
}

}  // namespace

std::string safetensors_encode(const param_layout& layout, const std::vector<float>& params,
                               const safetensors_metadata& extra) {
    if (params.size() != layout.total())
        throw std::logic_error("safetensors_encode: " + std::to_string(params.size()) + " parameters for a layout of " +
                               std::to_string(layout.total()));
    std::string header = "{\"";
    header += metadata_key;
    header += "\":{\"format\":\"attnlab\",\"version\":";
    append_json_string(header, ATTNLAB_VERSION);
    for (const auto& [k, v] : extra) {
        header += ',';
        append_json_string(header, k);
        header += ':';
        append_json_string(header, v);
    }
    header += '}';
    std::size_t expected_offset = 0;
    for (const auto& t : layout.tensors()) {
        // The data section is the flat buffer itself: layouts are contiguous by construction.
        if (t.offset != expected_offset)
            throw std::logic_error("safetensors_encode: layout is not contiguous at " + t.name);
        expected_offset += t.size;
        header += ',';
        append_json_string(header, t.name);
        header += ":{\"dtype\":\"F32\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) {
            if (i) header += ',';
            header += std::to_string(t.shape[i]);
        }
        header += "],\"data_offsets\":[";
        header += std::to_string(t.offset * sizeof(float));
        header += ',';
        header += std::to_string((t.offset + t.size) * sizeof(float));
        header += "]}";
    }
    header += '}';
    header.append((header_align - header.size() % header_align) % header_align, ' ');

    const std::size_t data_bytes = params.size() * sizeof(float);
    std::string out;
    out.reserve(length_bytes + header.size() + data_bytes);
    const std::uint64_t n = header.size();
    for (std::size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
    out += header;
    out.append(reinterpret_cast<const char*>(params.data()), data_bytes);
    return out;
}

std::vector<float> safetensors_decode(const std::string& bytes, const std::string& label, const param_layout& layout,
                                      safetensors_metadata* metadata) {
    if (metadata) metadata->clear();
    if (bytes.size() < length_bytes)
        throw io_error(label + ": not a safetensors file: " + std::to_string(bytes.size()) +
                       " bytes, too short for the 8-byte header length");
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < length_bytes; ++i)
        n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    const std::uint64_t after_length = bytes.size() - length_bytes;
    if (n > after_length)
        throw io_error(label + ": header length " + std::to_string(n) + " is larger than the file (" +
                       std::to_string(after_length) + " bytes follow the length): truncated or not a safetensors file");

    const std::string header = bytes.substr(length_bytes, n);
    json_value root;
    try {
        root = json_parser(header).parse_document();
    } catch (const json_syntax_error& e) {
        throw io_error(label + ": malformed JSON header at header byte " + std::to_string(e.pos) + ": " + e.what);
    }
    if (root.k != json_value::kind::object)
        throw io_error(label + ": header is " + kind_name(root.k) + ", expected a JSON object");

    std::vector<header_tensor> tensors;
    for (std::size_t i = 0; i < root.keys.size(); ++i) {
        if (root.keys[i] == metadata_key)
            read_metadata(label, root.values[i], metadata);
        else
            tensors.push_back(check_tensor_entry(label, root.keys[i], root.values[i]));
    }

    // The tensors must tile the data section exactly: no overlap, no gap, no tail.
    const std::uint64_t data_size = after_length - n;
    std::vector<const header_tensor*> by_begin;
    std::uint64_t needed = 0;
    for (const auto& t : tensors) {
        by_begin.push_back(&t);
        needed = std::max(needed, t.end);
    }
    if (needed > data_size)
        throw io_error(label + ": data section truncated: the tensors need " + std::to_string(needed) +
                       " bytes, the file holds " + std::to_string(data_size));
    std::sort(by_begin.begin(), by_begin.end(), [](const header_tensor* a, const header_tensor* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t at = 0;
    for (const header_tensor* t : by_begin) {
        if (t->begin != at)
            throw io_error(label + ": tensor " + t->name + ": data_offsets [" + std::to_string(t->begin) + ", " +
                           std::to_string(t->end) + "] " +
                           (t->begin < at ? "overlap the previous tensor" : "leave a gap") +
                           " (expected it to begin at " + std::to_string(at) + ")");
        at = t->end;
    }
    if (at != data_size)
        throw io_error(label + ": " + std::to_string(data_size - at) + " bytes after the last tensor's data");

    // Against the model: the same names, the same shapes.
    std::vector<std::string> missing, extra;
    for (const auto& p : layout.tensors())
        if (std::none_of(tensors.begin(), tensors.end(), [&](const header_tensor& t) { return t.name == p.name; }))
            missing.push_back(p.name);
    for (const auto& t : tensors)
        if (std::none_of(layout.tensors().begin(), layout.tensors().end(),
                         [&](const param_tensor& p) { return p.name == t.name; }))
            extra.push_back(t.name);
    if (!missing.empty() || !extra.empty()) {
        std::string what;
        if (!missing.empty())
            what += "missing tensor" + std::string(missing.size() > 1 ? "s " : " ") + name_list(missing);
        if (!extra.empty())
            what += (what.empty() ? "" : "; ") + std::string("unexpected tensor") + (extra.size() > 1 ? "s " : " ") +
                    name_list(extra);
        throw io_error(label + ": does not match the model of this config: " + what);
    }

    std::vector<float> params(layout.total());
    const char* data = bytes.data() + length_bytes + n;
    for (const auto& p : layout.tensors()) {
        const auto it =
            std::find_if(tensors.begin(), tensors.end(), [&](const header_tensor& t) { return t.name == p.name; });
        if (it->shape != to_int64(p.shape))
            throw io_error(label + ": " + p.name + ": shape " + shape_text(it->shape) + " in file, model expects " +
                           shape_text(to_int64(p.shape)));
        std::memcpy(params.data() + p.offset, data + it->begin, p.size * sizeof(float));
    }
    return params;
}

void safetensors_write(const std::string& path, const param_layout& layout, const std::vector<float>& params,
                       const safetensors_metadata& extra) {
    write_file_atomic(path, safetensors_encode(layout, params, extra));
}

std::vector<float> safetensors_read(const std::string& path, const param_layout& layout,
                                    safetensors_metadata* metadata) {
    return safetensors_decode(read_file(path), path, layout, metadata);
}

}  // namespace attnlab
