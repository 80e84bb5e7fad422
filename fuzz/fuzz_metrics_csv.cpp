// libFuzzer target for the reader of a run's metrics.csv:
// metrics_prefix_up_to (lib/include/attnlab/results/metrics_csv.hpp), which
// `attnlab run` calls (through keep_metrics_up_to) to cut runs/<id>/metrics.csv
// back to the step of a resume state. Built and run by scripts/fuzz.
//
// The input is the text of a metrics.csv, cut back to step 10 of a run that
// evaluates every 5 steps (the seed run, fuzz/seed_run.yaml). Expected: no
// exception; nullopt with a reason naming the file, or the length of the
// header and rows kept. A finding is a crash, a sanitizer report, a leak, any
// exception, a hang, a huge allocation, or a kept part that does not end
// after a whole line.
#include <cstdint>
#include <optional>
#include <string>

#include "attnlab/results/metrics_csv.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnlab;
    const std::string text(reinterpret_cast<const char*>(data), size);
    train_config tc;
    tc.steps = 20;
    tc.eval_every = 5;
    std::string why;
    std::optional<std::size_t> end;
    try {
        end = metrics_prefix_up_to(text, "metrics.csv", tc, 10, why);
    } catch (const std::exception& e) {
        attnlab_fuzz::finding("metrics_prefix_up_to threw", e.what());
    }
    if (!end) {
        if (!attnlab_fuzz::starts_with(why, "metrics.csv")) attnlab_fuzz::finding("reason does not name the file", why);
        return 0;
    }
    if (*end > text.size() || *end == 0 || text[*end - 1] != '\n')
        attnlab_fuzz::finding("the kept part does not end after a line", std::to_string(*end));
    return 0;
}
