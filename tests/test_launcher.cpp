// The tests' process launcher (support/process_support.hpp) on /bin/sh, whose
// answers are known: arguments, environment changes, working directory,
// stdin at end of file, stdout and stderr apart, exit codes and signals, the
// file-size limit, pausing and resuming; and on attnlab, the default program.
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>

#include <string>

#include "support/process_support.hpp"

using namespace attnlab::test;

namespace {

launch_options shell() { return launch_options().with_program("/bin/sh"); }

}  // namespace

TEST_CASE("launcher: arguments, environment, working directory, stdin, stdout and stderr, exit code", "[launcher]") {
    temp_dir dir;
    ::setenv("ATTNLAB_TEST_UNSET_ME", "still here", 1);
    ::setenv("ATTNLAB_TEST_REPLACE_ME", "old", 1);
    const launch_options o = shell()
                                 .in(dir.path())
                                 .with_env("ATTNLAB_TEST_SET", "a value")
                                 .with_env("ATTNLAB_TEST_REPLACE_ME", "new")
                                 .without_env("ATTNLAB_TEST_UNSET_ME");
    const cli_result r = run_cli({"-c",
                                  "echo \"$1|$2\"; pwd; echo \"$ATTNLAB_TEST_SET|${ATTNLAB_TEST_UNSET_ME-unset}|"
                                  "$ATTNLAB_TEST_REPLACE_ME\"; read line || echo eof; echo to stderr >&2; exit 3",
                                  "sh", "one arg", "two"},
                                 o);
    ::unsetenv("ATTNLAB_TEST_UNSET_ME");
    ::unsetenv("ATTNLAB_TEST_REPLACE_ME");
    CHECK(r.code == 3);
    CHECK(r.signal == 0);
    CHECK(r.out == "one arg|two\n" + fs::canonical(dir.path()).string() + "\na value|unset|new\neof\n");
    CHECK(r.err == "to stderr\n");
}

TEST_CASE("launcher: a signal ends the process; pause and resume; output so far", "[launcher]") {
    child_process c({"-c", "echo started; echo also >&2; while :; do sleep 0.01; done"}, shell());
    c.wait_until([&] { return c.out() == "started\n" && c.err() == "also\n"; });
    CHECK(c.running());
    REQUIRE(c.pause());
    CHECK(c.running());  // stopped is not ended
    c.resume();
    c.send(SIGTERM);
    const cli_result& r = c.wait();
    CHECK(r.signal == SIGTERM);
    CHECK(r.code == 128 + SIGTERM);
    CHECK_FALSE(c.running());
    CHECK(r.out == "started\n");
}

TEST_CASE("launcher: the file-size limit applies to files, not to the captured output", "[launcher]") {
    temp_dir dir;
    const launch_options o = shell().in(dir.path()).with_file_size_limit(1000);
    // 2000 bytes to a file fail with EFBIG (the shell's SIGXFSZ is at its
    // default action, which would end it: the writer is a subshell); 2000
    // bytes to stdout pass.
    const cli_result r = run_cli({"-c",
                                  "(trap '' XFSZ; head -c 2000 /dev/zero > big) 2>/dev/null; echo $?; "
                                  "head -c 2000 /dev/zero | tr '\\0' x"},
                                 o);
    INFO(r.err);
    CHECK(r.code == 0);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] != "0");  // the write failed
    CHECK(lines[1] == std::string(2000, 'x'));
    CHECK(fs::file_size(dir / "big") == 1000);
}

TEST_CASE("launcher: runs attnlab unless told otherwise, and records its peak memory", "[launcher]") {
    const cli_result r = run_cli({"--version"});
    CHECK(r.code == 0);
    CHECK(r.out.rfind("attnlab ", 0) == 0);
    CHECK(r.err.empty());
    CHECK(r.max_rss_kib > 0);
}
