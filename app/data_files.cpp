// data_files.hpp: an installed binary reads its own share/attnlab, so that it
// keeps working after the build folder or the source tree is gone.
#include "data_files.hpp"

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

}  // namespace attnlab::cli
