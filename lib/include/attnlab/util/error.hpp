// Typed errors of the library. main maps them to exit codes:
// config_error -> 2 (bad input), everything else -> 1.
#pragma once
#include <stdexcept>
#include <string>

namespace attnlab {

// Bad user input: a spec file, a --set override, a command-line value.
// The message already names the file, the line and the dotted key path
// ("spec.yaml:12: base.train.lr: expected a number > 0, got 'fast'").
struct config_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A file could not be read or written, or is malformed (checkpoints, CSV).
struct io_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An input file refused by read_input (io/files.hpp): its path and why, a
// reason such as "cannot read: No such file or directory", "is a character
// device, expected a regular file" or "has N bytes, more than the 1 MiB a
// run's config.yaml may have". what() is "<path>: <reason>".
struct input_error : io_error {
    input_error(const std::string& path, const std::string& reason)
        : io_error(path + ": " + reason), path(path), reason(reason) {}
    std::string path, reason;
};

// A long read given up because a stop was asked for (Ctrl-C, SIGTERM).
struct read_interrupted : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace attnlab
