// Where the binary finds the files it runs beside it (reference/bench_torch.py,
// scripts/plot_probe.py, and the Python package they import).
#pragma once
#include <string>

namespace attnlab::cli {

// <prefix>/share/attnlab/<relative> when this binary is installed
// (<prefix>/bin/attnlab, `cmake --install`), else <source tree>/<relative>.
std::string data_file(const std::string& relative);

// Lets the Python scripts this binary runs import the attnlab package: a
// binary run from its build folder puts <source tree>/python first on
// PYTHONPATH (children inherit it); an installed one leaves PYTHONPATH
// alone, since `cmake --install` put the package where python3 looks.
void put_python_package_on_path();

}  // namespace attnlab::cli
