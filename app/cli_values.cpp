// Checks of option values (cli_values.hpp).
#include "cli_values.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "attnlab/spec/did_you_mean.hpp"

namespace attnlab::cli {

namespace {
// 1e9 as "1000000000", 0.5 as "0.5".
std::string plain(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}
}  // namespace

std::string either_of(const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
        out += names[i];
    }
    return out;
}

CLI::Validator integer_in(long lo, long hi) {
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            long v = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data() + (!text.empty() && text[0] == '+'), end, v);
            if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi)
                return "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                       text + "'";
            return "";
        },
        "", "integer_in");
}

CLI::Validator unsigned_64() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, v);
            if (text.empty() || ec != std::errc() || ptr != end)
                return "expected an integer from 0 to 18446744073709551615 (2^64 - 1), got '" + text + "'";
            return "";
        },
        "", "unsigned_64");
}

CLI::Validator not_empty(const std::string& what) {
    return CLI::Validator(
        [what](std::string& text) -> std::string { return text.empty() ? "expected " + what + ", got ''" : ""; }, "",
        "not_empty");
}

CLI::Validator number_in(double lo, double hi, const std::string& what) {
    return CLI::Validator(
        [lo, hi, what](std::string& text) -> std::string {
            char* end = nullptr;
            errno = 0;
            const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < lo || v > hi)
                return "expected " + what + " from " + plain(lo) + " to " + plain(hi) + ", got '" + text + "'";
            return "";
        },
        "", "number_in");
}

CLI::Validator one_of(const std::vector<std::string>& names) {
    return CLI::Validator(
        [names](std::string& text) -> std::string {
            for (const auto& n : names)
                if (n == text) return "";
            return "expected " + either_of(names) + ", got '" + text + "'" + did_you_mean(text, names);
        },
        "", "one_of");
}

}  // namespace attnlab::cli
