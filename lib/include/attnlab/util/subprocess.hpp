// Running another program and reading what it prints (the PyTorch side of
// `attnlab bench train`).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attnlab {

struct process_output {
    int exit_code = -1;    // the child's exit status; 128 + signal if killed
    std::string out, err;  // everything it wrote to stdout and stderr
};

// Runs argv[0] (a path, no PATH search) with this process's environment
// changed by `set` (name, value) and `unset` (names), waits for it and
// returns its output. Throws std::runtime_error if it cannot be started.
process_output run_process(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& set = {},
                           const std::vector<std::string>& unset = {});

}  // namespace attnlab
