// safetensors writer and checking reader. The JSON header is parsed and
// written by nlohmann-json; what a safetensors header may hold, and what it
// must say about the tensors, is checked here.
#include "attnlab/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "attnlab/io/files.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

// The data section is the host's float buffer, copied as is.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
static_assert(sizeof(float) == 4, "F32 is 4 bytes");

namespace {

using json = nlohmann::json;

constexpr std::size_t length_bytes = 8;  // the u64 header length
constexpr std::size_t header_align = 8;  // header padded so the data starts 8-byte aligned
constexpr const char* metadata_key = "__metadata__";

// ---------------------------------------------------------------- parsing the header

struct json_syntax_error {
    std::size_t pos;  // offset in the header of the last byte the parser read
    std::string what;
};

// The header's bytes as nlohmann-json's parser reads them (one at a time,
// in order), remembering how far it has read: the rules below are checked
// while it parses and name the byte where the header breaks them.
class tracking_iterator {
public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    tracking_iterator(const char* at, const char** furthest) : at_(at), furthest_(furthest) {}
    reference operator*() const { return *at_; }
    tracking_iterator& operator++() {
        ++at_;
        *furthest_ = std::max(*furthest_, at_);
        return *this;
    }
    tracking_iterator operator++(int) {
        tracking_iterator before = *this;
        ++*this;
        return before;
    }
    bool operator==(const tracking_iterator& other) const { return at_ == other.at_; }

private:
    const char* at_;
    const char** furthest_;
};

// A parsed header. json objects are sorted by name, so the file order of
// the members is kept beside them: the first bad tensor is the first in the
// file, and the metadata keeps its order.
struct parsed_header {
    json root;
    std::vector<std::string> member_order;    // the top-level names
    std::vector<std::string> metadata_order;  // the names inside __metadata__
};

// Refuses, while nlohmann-json parses, the JSON a safetensors header may not
// hold (objects, arrays, strings and integers only): true, false, null,
// fractions, integers beyond int64, a member name twice in one object
// (nlohmann-json would keep the last one) and nesting beyond max_depth.
class header_rules {
public:
    header_rules(const char* begin, parsed_header& out) : begin_(begin), furthest_(begin), out_(out) {}
    const char** furthest() { return &furthest_; }
    // The offset of the last byte the parser has read.
    std::size_t last_read() const {
        const auto read = static_cast<std::size_t>(furthest_ - begin_);
        return read > 0 ? read - 1 : 0;
    }

    bool on_event(int depth, json::parse_event_t event, json& parsed) {
        using ev = json::parse_event_t;
        switch (event) {
            case ev::object_start:
                check_depth(depth);
                names_.emplace_back();
                break;
            case ev::object_end: names_.pop_back(); break;
            case ev::array_start: check_depth(depth); break;
            case ev::array_end: break;
            case ev::key: on_name(depth, parsed.get_ref<const std::string&>()); break;
            case ev::value:
                check_depth(depth);
                check_scalar(parsed);
                break;
        }
        return true;  // keep every value
    }

private:
    static constexpr int max_depth = 64;

    [[noreturn]] void fail(std::string what) const { throw json_syntax_error{last_read(), std::move(what)}; }
    void check_depth(int depth) const {
        if (depth > max_depth) fail("nested deeper than " + std::to_string(max_depth) + " levels");
    }
    void check_scalar(const json& v) const {
        if (v.is_boolean() || v.is_null())
            fail("unexpected " + v.dump() + ", expected an object, array, string or integer");
        if (v.is_number_float() ||
            (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
            fail("expected an integer (within int64), got " + v.dump());
    }
    void on_name(int depth, const std::string& name) {
        if (!names_.back().insert(name).second) fail("duplicate member \"" + name + "\"");
        if (depth == 1) {  // a member of the root object
            out_.member_order.push_back(name);
            in_metadata_ = name == metadata_key;
        } else if (depth == 2 && in_metadata_) {
            out_.metadata_order.push_back(name);
        }
    }

    const char* begin_;
    const char* furthest_;  // one past the last byte read
    parsed_header& out_;
    std::vector<std::set<std::string>> names_;  // of each open object
    bool in_metadata_ = false;
};

// The text of a nlohmann-json exception without its "[json.exception.<id>] "
// prefix and, for a parse error, the "parse error at line L, column C: " one.
std::string exception_text(const json::exception& e) {
    std::string text = e.what();
    if (const auto id_end = text.find("] "); id_end != std::string::npos) text.erase(0, id_end + 2);
    if (text.rfind("parse error", 0) == 0)
        if (const auto colon = text.find(": "); colon != std::string::npos) text.erase(0, colon + 2);
    constexpr std::size_t max_text = 200;  // the parser quotes the token it read, which may be long
    if (text.size() > max_text) text = text.substr(0, max_text) + "...";
    return text;
}

// Parses the header [begin, end). Throws json_syntax_error.
parsed_header parse_header(const char* begin, const char* end) {
    parsed_header out;
    header_rules rules(begin, out);
    try {
        out.root = json::parse(tracking_iterator(begin, rules.furthest()), tracking_iterator(end, rules.furthest()),
                               [&rules](int depth, json::parse_event_t event, json& parsed) {
                                   return rules.on_event(depth, event, parsed);
                               });
    } catch (const json::parse_error& e) {
        throw json_syntax_error{e.byte > 0 ? e.byte - 1 : 0, exception_text(e)};  // e.byte counts from 1
    } catch (const json::exception& e) {
        // A number beyond double's range ("number overflow parsing '1e999'") is
        // out_of_range, not a parse error: it has no byte, the rules know where the parser is.
        throw json_syntax_error{rules.last_read(), exception_text(e)};
    }
    return out;
}

// What the header rules let through: an object, an array, a string or an integer.
const char* kind_name(const json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array";
    if (v.is_string()) return "a string";
    return "an integer";
}

// ---------------------------------------------------------------- checking the header

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::vector<std::int64_t> to_int64(const std::vector<int>& shape) { return {shape.begin(), shape.end()}; }

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

// An integer of the header as int64 (header_rules refused the others), or -1 for any other value.
std::int64_t integer_or_minus_one(const json& v) { return v.is_number_integer() ? v.get<std::int64_t>() : -1; }

header_tensor check_tensor_entry(const std::string& label, const std::string& name, const json& v) {
    auto bad = [&](const std::string& what) { return io_error(label + ": tensor " + name + ": " + what); };
    if (!v.is_object()) throw bad(std::string("expected an object, got ") + kind_name(v));
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
            throw bad("unknown field \"" + it.key() + "\" (expected dtype, shape, data_offsets)");
    const auto dtype = v.find("dtype"), shape = v.find("shape"), offsets = v.find("data_offsets");
    if (dtype == v.end()) throw bad("missing \"dtype\"");
    if (shape == v.end()) throw bad("missing \"shape\"");
    if (offsets == v.end()) throw bad("missing \"data_offsets\"");
    if (!dtype->is_string()) throw bad(std::string("dtype is ") + kind_name(*dtype) + ", expected a string");
    const std::string& dtype_text = dtype->get_ref<const std::string&>();
    if (dtype_text != "F32") throw bad("dtype " + dtype_text + ", expected F32 (attnlab checkpoints are float32)");

    header_tensor t;
    t.name = name;
    if (!shape->is_array()) throw bad(std::string("shape is ") + kind_name(*shape) + ", expected an array");
    std::uint64_t numel = 1;
    for (const json& item : *shape) {
        const std::int64_t d = integer_or_minus_one(item);
        if (d < 0) throw bad("shape must be an array of non-negative integers");
        t.shape.push_back(d);
        // Overflow guard: anything beyond 2^62 bytes cannot be in a file anyway.
        if (d != 0 && numel > (std::uint64_t{1} << 60) / static_cast<std::uint64_t>(d))
            throw bad("shape " + shape_text(t.shape) + " is too large");
        numel *= static_cast<std::uint64_t>(d);
    }
    const std::int64_t begin = offsets->is_array() && offsets->size() == 2 ? integer_or_minus_one((*offsets)[0]) : -1;
    const std::int64_t end = offsets->is_array() && offsets->size() == 2 ? integer_or_minus_one((*offsets)[1]) : -1;
    if (begin < 0 || end < 0) throw bad("data_offsets must be [begin, end], two non-negative integers");
    t.begin = static_cast<std::uint64_t>(begin);
    t.end = static_cast<std::uint64_t>(end);
    if (t.end < t.begin)
        throw bad("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] end before they begin");
    if (t.end - t.begin != numel * sizeof(float))
        throw bad("shape " + shape_text(t.shape) + " holds " + std::to_string(numel * sizeof(float)) +
                  " bytes of F32, but data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] span " + std::to_string(t.end - t.begin));
    return t;
}

// __metadata__ (`v`, whose names are `order` in file order) into `out` if given.
void read_metadata(const std::string& label, const json& v, const std::vector<std::string>& order,
                   safetensors_metadata* out) {
    if (!v.is_object())
        throw io_error(label + ": " + metadata_key + " is " + kind_name(v) + ", expected an object of strings");
    for (const std::string& key : order) {
        const json& value = v.at(key);
        if (!value.is_string())
            throw io_error(label + ": " + metadata_key + "." + key + " is " + kind_name(value) + ", expected a string");
        if (out) out->emplace_back(key, value.get<std::string>());
    }
}

// Floats of the flat buffer the tensors tile: the end of the last one.
std::size_t flat_size(const tensor_list& tensors) {
    std::size_t n = 0;
    for (const auto& t : tensors) n = std::max(n, t.offset + t.size);
    return n;
}

}  // namespace

std::string safetensors_encode(const tensor_list& layout, const std::vector<float>& params,
                               const safetensors_metadata& extra) {
    if (params.size() != flat_size(layout))
        throw std::logic_error("safetensors_encode: " + std::to_string(params.size()) + " parameters for a layout of " +
                               std::to_string(flat_size(layout)));
    // Members in insertion order: the metadata, then the tensors in layout order.
    nlohmann::ordered_json header;
    nlohmann::ordered_json& metadata = header[metadata_key];
    metadata["format"] = "attnlab";
    metadata["version"] = ATTNLAB_VERSION;
    for (const auto& [k, v] : extra) metadata[k] = v;
    std::size_t expected_offset = 0;
    for (const auto& t : layout) {
        // The data section is the flat buffer itself: layouts are contiguous by
        // construction.
        if (t.offset != expected_offset)
            throw std::logic_error("safetensors_encode: layout is not contiguous at " + t.name);
        expected_offset += t.size;
        nlohmann::ordered_json& entry = header[t.name];
        entry["dtype"] = "F32";
        entry["shape"] = t.shape;
        entry["data_offsets"] = {t.offset * sizeof(float), (t.offset + t.size) * sizeof(float)};
    }
    // Compact; bytes that are not UTF-8 (only possible in `extra`) become U+FFFD.
    std::string text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    text.append((header_align - text.size() % header_align) % header_align, ' ');

    const std::size_t data_bytes = params.size() * sizeof(float);
    std::string out;
    out.reserve(length_bytes + text.size() + data_bytes);
    const std::uint64_t n = text.size();
    for (std::size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
    out += text;
    out.append(reinterpret_cast<const char*>(params.data()), data_bytes);
    return out;
}

namespace {

// A safetensors header can be this long at most (the reference reader's
// limit): a longer length is not read, whatever the file's size.
constexpr std::uint64_t max_header_bytes = std::uint64_t{100} << 20;

// The header length in the first 8 bytes, checked against the file's size.
std::uint64_t header_length(const char* first8, std::uint64_t file_size, const std::string& label) {
    if (file_size < length_bytes)
        throw io_error(label + ": not a safetensors file: " + std::to_string(file_size) +
                       " bytes, too short for the 8-byte header length");
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < length_bytes; ++i)
        n |= static_cast<std::uint64_t>(static_cast<unsigned char>(first8[i])) << (8 * i);
    const std::uint64_t after_length = file_size - length_bytes;
    if (n > after_length)
        throw io_error(label + ": header length " + std::to_string(n) + " is larger than the file (" +
                       std::to_string(after_length) + " bytes follow the length): truncated or not a safetensors file");
    if (n > max_header_bytes)
        throw io_error(label + ": header length " + std::to_string(n) + " is more than the " +
                       std::to_string(max_header_bytes) + " bytes a safetensors header may have");
    return n;
}

// Where each of the layout's tensors lies in the data section.
struct tensor_place {
    const named_tensor* param;
    std::uint64_t begin;  // in the data section
};

// Checks the header (`n` bytes) against the data section's size and the
// layout, before any data is read: a file too long, short or of another
// model is refused at the cost of its header.
std::vector<tensor_place> check_header(const char* header_bytes, std::uint64_t n, std::uint64_t data_size,
                                       const std::string& label, const tensor_list& layout,
                                       safetensors_metadata* metadata) {
    if (metadata) metadata->clear();
    parsed_header header;
    try {
        header = parse_header(header_bytes, header_bytes + n);
    } catch (const json_syntax_error& e) {
        throw io_error(label + ": malformed JSON header at header byte " + std::to_string(e.pos) + ": " + e.what);
    }
    const json& root = header.root;
    if (!root.is_object()) throw io_error(label + ": header is " + kind_name(root) + ", expected a JSON object");

    std::vector<header_tensor> tensors;
    for (const std::string& name : header.member_order) {
        if (name == metadata_key)
            read_metadata(label, root.at(name), header.metadata_order, metadata);
        else
            tensors.push_back(check_tensor_entry(label, name, root.at(name)));
    }

    // The tensors must tile the data section exactly: no overlap, no gap, no tail.
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
    for (const auto& p : layout)
        if (std::none_of(tensors.begin(), tensors.end(), [&](const header_tensor& t) { return t.name == p.name; }))
            missing.push_back(p.name);
    for (const auto& t : tensors)
        if (std::none_of(layout.begin(), layout.end(), [&](const named_tensor& p) { return p.name == t.name; }))
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

    std::vector<tensor_place> places;
    for (const auto& p : layout) {
        const auto it =
            std::find_if(tensors.begin(), tensors.end(), [&](const header_tensor& t) { return t.name == p.name; });
        if (it->shape != to_int64(p.shape))
            throw io_error(label + ": " + p.name + ": shape " + shape_text(it->shape) + " in file, model expects " +
                           shape_text(to_int64(p.shape)));
        places.push_back({&p, it->begin});
    }
    return places;
}

}  // namespace

std::vector<float> safetensors_decode(const std::string& bytes, const std::string& label, const tensor_list& layout,
                                      safetensors_metadata* metadata) {
    if (metadata) metadata->clear();
    const std::uint64_t n = header_length(bytes.data(), bytes.size(), label);
    const std::uint64_t data_size = bytes.size() - length_bytes - n;
    const auto places = check_header(bytes.data() + length_bytes, n, data_size, label, layout, metadata);
    std::vector<float> params(flat_size(layout));
    const char* data = bytes.data() + length_bytes + n;
    for (const tensor_place& t : places)
        std::memcpy(params.data() + t.param->offset, data + t.begin, t.param->size * sizeof(float));
    return params;
}

void safetensors_write(const std::string& path, const tensor_list& layout, const std::vector<float>& params,
                       const safetensors_metadata& extra) {
    write_file_atomic(path, safetensors_encode(layout, params, extra));
}

std::vector<float> safetensors_read(const std::string& path, const tensor_list& layout,
                                    safetensors_metadata* metadata) {
    // The header first: a file of another size than its header says is
    // refused before its data is read (a 20 GB file costs 8 bytes and the header).
    if (metadata) metadata->clear();
    const regular_file_reader file(path);
    char first8[length_bytes] = {};
    file.read_at(0, first8, std::min<std::uint64_t>(length_bytes, file.size()));
    const std::uint64_t n = header_length(first8, file.size(), path);
    std::string header(static_cast<std::size_t>(n), '\0');
    file.read_at(length_bytes, header.data(), header.size());
    const std::uint64_t data_size = file.size() - length_bytes - n;
    const auto places = check_header(header.data(), n, data_size, path, layout, metadata);
    // The data section is now exactly the layout's floats, which the memory guard counted.
    std::vector<float> params(flat_size(layout));
    for (const tensor_place& t : places)
        file.read_at(length_bytes + n + t.begin, reinterpret_cast<char*>(params.data() + t.param->offset),
                     t.param->size * sizeof(float));
    return params;
}

}  // namespace attnlab
