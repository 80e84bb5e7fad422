#include "attnlab/io/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "attnlab/util/error.hpp"

namespace attnlab {

void write_file_atomic(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw io_error("cannot write " + tmp + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const std::string why = std::strerror(errno);
            ::close(fd);
            throw io_error("cannot write " + tmp + ": " + why);
        }
        done += static_cast<std::size_t>(n);
    }
    // fsync before rename: after a crash the name points at complete data.
    if (::fsync(fd) != 0 || ::close(fd) != 0)
        throw io_error("cannot write " + tmp + ": " + std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw io_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error("cannot read " + path + ": " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void make_dirs(const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) throw io_error("cannot create directory " + path + ": " + ec.message());
}

}  // namespace attnlab
