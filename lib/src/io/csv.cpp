#include "attnlab/io/csv.hpp"

#include <charconv>
#include <cmath>

#include "attnlab/util/error.hpp"

namespace attnlab {

std::string csv_escape(const std::string& field) {
    if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
    std::string out = "\"";
    for (char c : field) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) line += ',';
        line += csv_escape(fields[i]);
    }
    return line + '\n';
}

std::string format_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

csv_writer::csv_writer(const std::string& path, const std::vector<std::string>& header)
    : path_(path), width_(header.size()), out_(path, std::ios::trunc) {
    if (!out_) throw io_error("cannot write " + path);
    row(header);
}

void csv_writer::row(const std::vector<std::string>& fields) {
    if (fields.size() != width_) throw std::logic_error("csv row width differs from the header of " + path_);
    out_ << csv_line(fields);
    out_.flush();
    if (!out_) throw io_error("cannot write " + path_);
}

}  // namespace attnlab
