// build_info.hpp: the commit and build type come from a header CMake
// generates (so that a new commit recompiles this file only).
#include "attnlab/util/build_info.hpp"

#include "attnlab_build_values.hpp"  // ATTNLAB_GIT_COMMIT, ATTNLAB_BUILD_TYPE (generated)

namespace attnlab {

namespace {
// The clone ops/target_clones.hpp's ATTNLAB_CLONES picks on this CPU (GCC
// resolves the clones by the same test).
std::string kernel_isa() {
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("x86-64-v3")) return "avx2+fma";  // before: "avx2", without FMA
#endif
    return "baseline";
}
}  // namespace

build_info current_build(int threads) { return {ATTNLAB_GIT_COMMIT, ATTNLAB_BUILD_TYPE, kernel_isa(), threads}; }

std::string describe(const build_info& b) {
    return b.commit + " " + b.build_type + " " + b.isa + " " + std::to_string(b.threads) + " threads";
}

}  // namespace attnlab
