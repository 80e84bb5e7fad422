// data_files.hpp: an installed binary reads its own share/attnlab, so that it
// keeps working after the build folder or the source tree is gone.
#include "data_files.hpp"

#include <stdlib.h>

#include <filesystem>

namespace attnlab::cli {

std::string data_file(const std::string& relative) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const fs::path installed = exe.parent_path().parent_path() / "share" / "attnlab" / relative;
        if (fs::is_regular_file(installed, ec)) return installed.string();
    }
    return std::string(ATTNLAB_SOURCE_DIR) + "/" + relative;
}

void put_python_package_on_path() {
    const std::string script = data_file("scripts/plot_style.py");
    if (script != std::string(ATTNLAB_SOURCE_DIR) + "/scripts/plot_style.py") return;  // installed
    const std::string package = std::string(ATTNLAB_SOURCE_DIR) + "/python";
    const char* old = std::getenv("PYTHONPATH");
    const std::string value = old && *old ? package + ":" + old : package;
    setenv("PYTHONPATH", value.c_str(), 1);
}

}  // namespace attnlab::cli
