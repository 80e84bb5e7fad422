// CSV output (RFC 4180 quoting). csv_writer streams rows to a file and
// flushes each one, so a crash loses at most the row being written.
#pragma once
#include <fstream>
#include <string>
#include <vector>

namespace attnlab {

std::string csv_escape(const std::string& field);
std::string csv_line(const std::vector<std::string>& fields);  // with trailing '\n'
// Numbers as text: shortest decimal that round-trips for doubles.
std::string format_number(double v);

class csv_writer {
public:
    // Truncates `path` and writes the header.
    csv_writer(const std::string& path, const std::vector<std::string>& header);
    void row(const std::vector<std::string>& fields);  // must match the header's width

private:
    std::string path_;
    std::size_t width_;
    std::ofstream out_;
};

}  // namespace attnlab
