// Files of the tests: a temporary directory removed with its contents, whole
// files as text, their lines, CSV fields, "CSV equal except the timing
// columns", and what a run folder holds (every file's bytes, left-over
// temporary files).
#pragma once
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace attnlab::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with its contents.
class temp_dir {
public:
    temp_dir() {
        std::random_device rd;
        std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid()));
        for (int attempt = 0; attempt < 100; ++attempt) {
            char suffix[32];
            std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
            fs::path p = fs::temp_directory_path() / ("attnlab_test_" + std::string(suffix));
            if (fs::create_directory(p)) {
                path_ = p;
                return;
            }
        }
        FAIL("cannot create a temporary directory");
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const fs::path& path() const { return path_; }
    fs::path operator/(const std::string& name) const { return path_ / name; }

private:
    fs::path path_;
};

inline std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    REQUIRE(out);
    out << text;
    REQUIRE(out);
}

// Whether `p` exists; false, not an exception, when it cannot be looked at.
inline bool present(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// Lines of a file, 0 when it does not exist (yet).
inline std::size_t line_count(const fs::path& p) { return present(p) ? lines_of(read_text(p)).size() : 0; }

inline std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// Fields of one CSV line (RFC 4180: run ids with commas are quoted); quotes are kept.
inline std::vector<std::string> csv_fields(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (char c : line) {
        if (c == '"') quoted = !quoted;
        if (c == ',' && !quoted)
            fields.emplace_back();
        else
            fields.back() += c;
    }
    return fields;
}

// A CSV text without the named columns, for "equal except timings".
inline std::string csv_without(const std::string& csv, const std::vector<std::string>& drop) {
    const auto lines = lines_of(csv);
    REQUIRE(!lines.empty());
    const auto header = csv_fields(lines[0]);
    std::vector<bool> keep(header.size(), true);
    for (const auto& d : drop) {
        const auto at = std::find(header.begin(), header.end(), d);
        REQUIRE(at != header.end());
        keep[static_cast<std::size_t>(at - header.begin())] = false;
    }
    std::string out;
    for (const auto& line : lines) {
        const auto f = csv_fields(line);
        REQUIRE(f.size() == header.size());
        std::string row;
        for (std::size_t i = 0; i < f.size(); ++i)
            if (keep[i]) row += (row.empty() ? "" : ",") + f[i];
        out += row + "\n";
    }
    return out;
}

// metrics.csv and summary.csv without their wall-clock columns (README.md, "Outputs").
inline std::string metrics_without_timings(const std::string& csv) {
    return csv_without(csv, {"tokens_per_s", "elapsed_s"});
}
inline std::string summary_without_timings(const std::string& csv) { return csv_without(csv, {"wall_s"}); }

// Every file under `dir` with its bytes: "byte for byte unchanged" is equal snapshots.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_text(e.path());
    return files;
}

// Files whose name holds ".tmp" (a temporary file left behind) under `dir`.
inline std::vector<std::string> temporaries(const fs::path& dir) {
    std::vector<std::string> out;
    if (!present(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.path().filename().string().find(".tmp") != std::string::npos) out.push_back(e.path().string());
    return out;
}

}  // namespace attnlab::test
