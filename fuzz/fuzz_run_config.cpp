// libFuzzer target for the reader of a run's config.yaml:
// run_config_from_yaml (lib/include/attnlab/spec/spec.hpp), which `attnlab
// eval` calls on runs/<id>/config.yaml (through run_config_from_yaml_file).
// Built and run by scripts/fuzz.
//
// The input is the text of a config.yaml. Expected: config_error naming the
// file. A finding is a crash, a sanitizer report, a leak, any other
// exception, a hang, a huge allocation, or a configuration that reads but is
// not written back (run_config_to_yaml) to a text that reads to itself.
#include <cstdint>
#include <string>

#include "attnlab/spec/spec.hpp"
#include "attnlab/util/error.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnlab;
    const std::string text(reinterpret_cast<const char*>(data), size);
    run_config cfg;
    if (!attnlab_fuzz::read_or_refuse<config_error>("run_config_from_yaml", "config.yaml",
                                                    [&] { cfg = run_config_from_yaml(text, "config.yaml"); }))
        return 0;
    const std::string yaml = run_config_to_yaml(cfg);
    std::string again;
    try {
        again = run_config_to_yaml(run_config_from_yaml(yaml, "config.yaml"));
    } catch (const std::exception& e) {
        attnlab_fuzz::finding(std::string("a config.yaml written by attnlab is refused: ") + e.what(), yaml);
    }
    if (again != yaml)
        attnlab_fuzz::finding("a config.yaml written by attnlab reads back differently", yaml + "---\n" + again);
    return 0;
}
