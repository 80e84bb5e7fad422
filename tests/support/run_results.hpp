// The folder of an end-to-end test, and what stopped, resumed, sharded or
// parallel sweeps are compared with: the same spec run to the end by one
// process with --threads 1, and the checks "equal except timings" (README.md,
// "Outputs": metrics.csv's tokens_per_s and elapsed_s, summary.csv's wall_s).
#pragma once
#include <string>

#include "process_support.hpp"

namespace attnlab::test {

// A fixture (TEST_CASE_METHOD) of the end-to-end tests: a temporary
// directory `tmp` holding the spec file `spec` (<name>.yaml), the folder `out`
// that `attnlab run spec --out out` writes, and its results folder `res`.
struct spec_in_temp_dir {
    temp_dir tmp;
    fs::path spec, out, res;
    spec_in_temp_dir(const std::string& name, const std::string& text)
        : spec(tmp / (name + ".yaml")), out(tmp / "out"), res(out / name) {
        write_text(spec, text);
    }
};

// Runs `spec` (named `name`) with `attnlab run --threads 1` into
// dir/reference and returns its results folder, dir/reference/<name>.
inline fs::path reference_results(const temp_dir& dir, const fs::path& spec, const std::string& name) {
    const cli_result r =
        run_cli({"run", spec.string(), "--out", (dir / "reference").string(), "--threads", "1"}, dir.path());
    INFO("reference run stderr:\n" << r.err);
    REQUIRE(r.code == 0);
    return dir / "reference" / name;
}

// summary.csv (but wall_s) and table.md of two results folders are equal.
inline void check_same_summary(const fs::path& res, const fs::path& ref) {
    CHECK(summary_without_timings(read_text(res / "summary.csv")) ==
          summary_without_timings(read_text(ref / "summary.csv")));
    CHECK(read_text(res / "table.md") == read_text(ref / "table.md"));
}

// metrics.csv (but its timings) of run `id` is the same in both results folders.
inline void check_same_metrics(const fs::path& res, const fs::path& ref, const std::string& id) {
    INFO("run " << id);
    CHECK(metrics_without_timings(read_text(res / "runs" / id / "metrics.csv")) ==
          metrics_without_timings(read_text(ref / "runs" / id / "metrics.csv")));
}

}  // namespace attnlab::test
