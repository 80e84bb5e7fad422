// Provenance of a run: which build of attnlab trained it, with which kernels
// and how many threads. Written to result.yaml (`build:`) and to the
// checkpoint's metadata; never part of a run's configuration, so a run made
// by another build still counts as the same run (docs/outputs.md).
#pragma once
#include <string>

namespace attnlab {

struct build_info {
    std::string commit;      // git commit attnlab was configured from ("unknown" outside git)
    std::string build_type;  // CMAKE_BUILD_TYPE (Release, Debug, ...)
    std::string isa;         // the kernels' instruction set on this CPU: avx512f, avx2 or baseline
    int threads = 0;         // threads one run computed with (0: not recorded)
};

// This binary's build, running with `threads` threads per run.
build_info current_build(int threads);

// "commit build_type isa N threads": one line for messages.
std::string describe(const build_info& b);

}  // namespace attnlab
