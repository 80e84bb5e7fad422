// Where the binary finds the files it runs beside it (reference/bench_torch.py,
// scripts/plot_probe.py, and the Python package they import).
#pragma once
#include <string>

namespace attnlab::cli {

// <prefix>/share/attnlab/<relative> when this binary is installed
// (<prefix>/bin/attnlab, `cmake --install`), else <source tree>/<relative>.
std::string data_file(const std::string& relative);

}  // namespace attnlab::cli
