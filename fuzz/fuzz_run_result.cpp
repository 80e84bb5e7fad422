// libFuzzer target for the reader of a run's result.yaml: read_run_result
// (lib/include/attnlab/results/result_file.hpp), which `attnlab run`,
// `summarize` and `eval` call on runs/<id>/result.yaml. Built and run by
// scripts/fuzz.
//
// The input is the text of a result.yaml; the reader takes a path, so it is
// written to a file in the temp directory first. Expected: io_error naming
// the file. A finding is a crash, a sanitizer report, a leak, any other
// exception, a hang, a huge allocation, or a result that reads but is not
// written back (run_result_to_yaml) to a text that reads to the same result.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "attnlab/results/result_file.hpp"
#include "attnlab/util/error.hpp"
#include "fuzz_support.hpp"

namespace {

const std::string& input_path() {
    static const std::string path =
        (std::filesystem::temp_directory_path() / ("attnlab_fuzz_result_" + std::to_string(::getpid()) + ".yaml"))
            .string();
    return path;
}

void write(const std::string& text) {
    std::ofstream out(input_path(), std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) attnlab_fuzz::finding("cannot write " + input_path(), "");
}

// Equal, NaN included.
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool same(const attnlab::eval_metrics& a, const attnlab::eval_metrics& b) {
    return same(a.loss, b.loss) && same(a.token_acc, b.token_acc) && same(a.seq_acc, b.seq_acc);
}

bool same(const attnlab::run_result& a, const attnlab::run_result& b) {
    return a.status == b.status && a.reason == b.reason && a.steps == b.steps && same(a.final_test, b.final_test) &&
           same(a.final_val, b.final_val) && same(a.best_val, b.best_val) && same(a.best_test, b.best_test) &&
           a.best_step == b.best_step && same(a.wall_s, b.wall_s) && a.params == b.params &&
           a.nonpositive_denominator_steps == b.nonpositive_denominator_steps &&
           a.first_nonpositive_step == b.first_nonpositive_step && a.baselines.has_value() == b.baselines.has_value() &&
           (!a.baselines ||
            (same(a.baselines->unigram, b.baselines->unigram) && same(a.baselines->bigram, b.baselines->bigram))) &&
           a.attention_form == b.attention_form;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnlab;
    write(std::string(reinterpret_cast<const char*>(data), size));
    std::optional<run_result> r;
    if (!attnlab_fuzz::read_or_refuse<io_error>("read_run_result", input_path(),
                                                [&] { r = read_run_result(input_path()); }))
        return 0;
    if (!r) attnlab_fuzz::finding("read_run_result: an existing file reads as absent", "");
    const std::string yaml = run_result_to_yaml(*r);
    write(yaml);
    std::optional<run_result> again;
    try {
        again = read_run_result(input_path());
    } catch (const std::exception& e) {
        attnlab_fuzz::finding(std::string("a result.yaml written by attnlab is refused: ") + e.what(), yaml);
    }
    if (!again || !same(*r, *again))
        attnlab_fuzz::finding("a result.yaml written by attnlab reads back differently", yaml);
    return 0;
}
