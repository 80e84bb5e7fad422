// What the libFuzzer targets of fuzz/ share: how a finding is reported, and
// the rule that a reader refuses a bad input only with its own typed error,
// whose message names the file it read (README "Reliability checks").
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

namespace attnlab_fuzz {

// Prints the finding and aborts: libFuzzer keeps the input as a crash-* reproducer.
[[noreturn]] inline void finding(const std::string& what, const std::string& detail) {
    std::fprintf(stderr, "\n==attnlab fuzz== FINDING: %s\n%s\n", what.c_str(), detail.c_str());
    std::fflush(stderr);
    std::abort();
}

inline bool starts_with(const std::string& s, std::string_view prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// Runs `read`: true when it returns, false when it throws `Error` whose
// message starts with `label` (the reader refusing the input, as expected).
// Anything else escaping `read` is a finding.
template <class Error, class Read>
bool read_or_refuse(const char* reader, std::string_view label, Read&& read) {
    try {
        read();
        return true;
    } catch (const Error& e) {
        if (starts_with(e.what(), label)) return false;
        finding(std::string(reader) + ": its error does not start with the file's name", e.what());
    } catch (const std::exception& e) {
        finding(std::string(reader) + ": unexpected exception " + typeid(e).name(), e.what());
    } catch (...) {
        finding(std::string(reader) + ": unexpected non-std exception", "");
    }
}

}  // namespace attnlab_fuzz
