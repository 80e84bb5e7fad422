// libFuzzer target for the spec loader (lib/include/attnlab/spec/spec.hpp).
// Built by scripts/fuzz (CMake option ATTNLAB_FUZZ, clang,
// -fsanitize=fuzzer,address,undefined); README "Reliability checks".
//
// The input is the text of a spec file, given to parse_spec with the label
// "fuzz.yaml". Lines of the form "#set key=value" (YAML comments, so the
// spec text is unchanged) are also passed as --set overrides, so the
// override parser is reached too. The same text is then read as a run's
// config.yaml (run_config_from_yaml).
//
// Expected: config_error, whose message starts with the label of the input
// it blames ("fuzz.yaml" or "--set"; docs/spec-reference.md). A finding is
// a crash, a sanitizer report, a leak, any other exception, a hang or a huge
// allocation, and also a broken contract checked below:
//   - a spec that loads has at least one run, a safe name and unique run ids;
//   - every resolved run, written as config.yaml (run_config_to_yaml), reads
//     back (run_config_from_yaml) to the same text: `attnlab eval` relies on it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "attnlab/spec/spec.hpp"
#include "attnlab/util/error.hpp"

namespace {

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
    std::fprintf(stderr, "\n==fuzz_spec_loader== FINDING: %s\n%s\n", what.c_str(), detail.c_str());
    std::fflush(stderr);
    std::abort();
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::vector<std::string> set_lines(const std::string& text) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < text.size() && out.size() < 8) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + pos, end - pos);
        if (line.substr(0, 5) == "#set ") out.emplace_back(line.substr(5));
        pos = end + 1;
    }
    return out;
}

// Runs `body`; config_error is expected (its message must name one of
// `labels`), anything else escaping is a finding.
template <class F>
bool expect_ok_or_config_error(const char* what, std::initializer_list<std::string_view> labels, F&& body) {
    try {
        body();
        return true;
    } catch (const attnlab::config_error& e) {
        const std::string msg = e.what();
        for (std::string_view l : labels)
            if (starts_with(msg, l)) return false;
        finding(std::string(what) + ": config_error does not start with the input's label", msg);
    } catch (const std::exception& e) {
        finding(std::string(what) + ": unexpected exception " + typeid(e).name(), e.what());
    } catch (...) {
        finding(std::string(what) + ": unexpected non-std exception", "");
    }
}

void check_round_trip(const attnlab::run_point& run) {
    const std::string yaml = attnlab::run_config_to_yaml(run.config);
    std::string again;
    try {
        again = attnlab::run_config_to_yaml(attnlab::run_config_from_yaml(yaml, "config.yaml"));
    } catch (const std::exception& e) {
        finding("config.yaml of run " + run.id + " is rejected when read back: " + e.what(), yaml);
    }
    if (again != yaml) finding("config.yaml of run " + run.id + " reads back differently", yaml + "---\n" + again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::vector<std::string> sets = set_lines(text);

    attnlab::experiment_spec spec;
    if (expect_ok_or_config_error("parse_spec", {"fuzz.yaml", "--set"},
                                  [&] { spec = attnlab::parse_spec(text, "fuzz.yaml", sets); })) {
        if (spec.runs.empty()) finding("spec loaded with no runs", text);
        if (spec.name.empty() || spec.name.find('/') != std::string::npos) finding("unsafe name", spec.name);
        std::set<std::string> ids;
        for (const attnlab::run_point& run : spec.runs)
            if (run.id.empty() || run.id.find('/') != std::string::npos || !ids.insert(run.id).second)
                finding("empty, unsafe or duplicate run id", run.id);
        // Every distinct configuration would be slow for big sweeps: the first ones.
        for (size_t i = 0; i < spec.runs.size() && i < 16; ++i) check_round_trip(spec.runs[i]);
    }

    expect_ok_or_config_error("run_config_from_yaml", {"fuzz.yaml"},
                              [&] { (void)attnlab::run_config_from_yaml(text, "fuzz.yaml"); });
    return 0;
}
