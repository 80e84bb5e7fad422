// What the hostile-input and hostile-output tests share: launches bounded in
// time and memory (a regression that reads /dev/zero or waits on a FIFO fails
// its test in seconds instead of taking the machine's memory or hanging the
// suite), a tiny finished run to aim them at, and device nodes made for the
// test where the process may make them.
#pragma once
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "process_support.hpp"
#include "tiny_spec.hpp"

namespace attnlab::test {

// The binary itself peaks near 20 MiB on these runs (about 320 MiB under
// AddressSanitizer, whose shadow memory and allocator count in RSS); reading
// a hostile file whole would take gigabytes.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr long hostile_max_rss_kib = 640 * 1024;
#else
inline constexpr long hostile_max_rss_kib = 300 * 1024;
#endif

// 30 s, 4 GiB of address space (an allocation past it fails), one OpenMP
// thread and two malloc arenas (so that the address space a thread reserves
// stays far below the limit on any machine).
inline launch_options bounded() {
    return launch_options()
        .with_timeout(std::chrono::seconds(30))
        .with_address_space_limit(std::uint64_t{4} << 30)
        .with_env("OMP_NUM_THREADS", "1")
        .with_env("OPENBLAS_NUM_THREADS", "1")
        .with_env("MALLOC_ARENA_MAX", "2");
}

// Trains the tiny lookup spec (4 steps) into `dir`/out and returns its run
// folder, out/tiny/runs/seed=0 (config.yaml, metrics.csv, result.yaml,
// model.safetensors).
inline fs::path tiny_finished_run(const fs::path& dir) {
    write_text(dir / "tiny.yaml", tiny_lookup_spec("tiny", 4, 2, ""));
    const cli_result r =
        run_cli({"run", (dir / "tiny.yaml").string(), "--out", (dir / "out").string(), "--threads", "1"}, bounded());
    INFO(r.err);
    REQUIRE(r.code == 0);
    return dir / "out" / "tiny" / "runs" / "seed=0";
}

// A character device node at `path` (major 1, minor `minor`: 3 is /dev/null,
// 7 is /dev/full) when this process may make one (root); else false.
inline bool make_char_device(const fs::path& path, unsigned minor) {
    return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

// A character device to aim a test at: one made in `dir` when possible, else
// `fallback` (an existing device such as /dev/null) when it exists; "" when neither.
inline fs::path char_device(const fs::path& dir, unsigned minor, const fs::path& fallback) {
    if (make_char_device(dir / "device", minor)) return dir / "device";
    std::error_code ec;
    return fs::is_character_file(fallback, ec) ? fallback : fs::path();
}

}  // namespace attnlab::test
