#include "attnlab/io/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "attnlab/util/error.hpp"

namespace attnlab {

void write_file_atomic(const std::string& path, const std::string& text) {
    char host[256] = "host";
    ::gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
    const std::string tmp =
        path + ".tmp." + host + "." + std::to_string(::getpid()) + "." + std::to_string(tid % 1000000007);
    auto fail = [&](const std::string& what) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw io_error(what + ": " + why);
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw io_error("cannot write " + tmp + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            ::close(fd);
            fail("cannot write " + tmp);
        }
        done += static_cast<std::size_t>(n);
    }
    // fsync before rename: after a crash the name points at complete data.
    if (::fsync(fd) != 0 || ::close(fd) != 0) fail("cannot write " + tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename " + tmp + " to " + path);
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
