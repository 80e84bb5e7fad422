#include "attnlab/io/files.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <vector>

#include "attnlab/util/error.hpp"

namespace attnlab {

namespace fs = std::filesystem;

namespace {

std::string this_host() {
    char host[256] = "host";
    ::gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    return host;
}

// "<name>.tmp.<host>.<pid>.<n>": the pid of the writer of a temporary of this
// host, or 0 when `name` is no such temporary.
pid_t temporary_writer(const std::string& name, const std::string& host) {
    const std::string mark = ".tmp." + host + ".";
    const auto at = name.rfind(mark);
    if (at == std::string::npos) return 0;
    const std::string rest = name.substr(at + mark.size());  // "<pid>.<n>"
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || rest.find_first_not_of("0123456789") != dot) return 0;
    if (rest.find_first_not_of("0123456789", dot + 1) != std::string::npos || dot + 1 == rest.size()) return 0;
    try {
        return static_cast<pid_t>(std::stol(rest.substr(0, dot)));
    } catch (const std::exception&) {
        return 0;
    }
}

// Why `path` cannot be a directory, for a path whose creation failed with
// `ec`: a dangling or looping symbolic link on the way is named.
std::string why_no_directory(const std::string& path, const std::error_code& ec) {
    fs::path prefix;
    for (const auto& part : fs::path(path)) {
        prefix /= part;
        std::error_code e;
        if (!fs::is_symlink(fs::symlink_status(prefix, e))) continue;
        std::error_code target_ec;
        (void)fs::status(prefix, target_ec);
        if (target_ec.value() == ELOOP) return prefix.string() + " is a symbolic link that loops";
        if (target_ec) {
            const fs::path target = fs::read_symlink(prefix, e);
            return prefix.string() + " is a symbolic link to " + target.string() + ", which does not exist";
        }
    }
    if (ec.value() == ENAMETOOLONG) return "the path or one of its names is too long";
    return ec.message();
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

void sync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw io_error("cannot open directory " + dir + ": " + std::strerror(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0 && err != EINVAL && err != EROFS)
        throw io_error("cannot sync directory " + dir + ": " + std::strerror(err));
}

void write_file_atomic(const std::string& path, const std::string& text) {
    const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
    const std::string tmp =
        path + ".tmp." + this_host() + "." + std::to_string(::getpid()) + "." + std::to_string(tid % 1000000007);
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
    // and the directory after it: after a crash the name is there at all.
    const std::string parent = fs::path(path).parent_path().string();
    sync_directory(parent.empty() ? "." : parent);
}

std::string read_text_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw io_error(path + ": is a directory, expected a file");
    return read_file(path);
}

namespace {

// What a non-regular file is, for the error.
std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// The file opened for reading, checked to be regular on the descriptor
// itself (O_NONBLOCK: opening a FIFO does not wait for a writer).
int open_regular(const std::string& path, std::uint64_t& size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw io_error("cannot read " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw io_error("cannot read " + path + ": " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw io_error(path + ": is " + file_kind(st.st_mode) + ", expected a regular file");
    }
    size = static_cast<std::uint64_t>(st.st_size);
    return fd;
}

}  // namespace

std::uint64_t regular_file_size(const std::string& path) {
    std::uint64_t size = 0;
    ::close(open_regular(path, size));
    return size;
}

void read_regular_file(const std::string& path, std::uint64_t size,
                       const std::function<void(const char* data, std::size_t n)>& piece,
                       const std::atomic<bool>* stop) {
    const regular_file_reader file(path);  // closed however this ends
    if (file.size() != size)
        throw io_error(path + ": has " + std::to_string(file.size()) + " bytes, " + std::to_string(size) +
                       " when it was measured (it changed)");
    std::vector<char> buf(std::size_t{1} << 20);
    for (std::uint64_t done = 0; done < size;) {
        if (stop && stop->load()) throw read_interrupted("stopped while reading " + path);
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - done));
        file.read_at(done, buf.data(), n);
        piece(buf.data(), n);
        done += n;
    }
}

regular_file_reader::regular_file_reader(const std::string& path) : path_(path) { fd_ = open_regular(path, size_); }

regular_file_reader::~regular_file_reader() { ::close(fd_); }

void regular_file_reader::read_at(std::uint64_t offset, char* out, std::size_t n) const {
    for (std::size_t done = 0; done < n;) {
        const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw io_error("cannot read " + path_ + ": " + std::strerror(errno));
        if (got == 0)
            throw io_error(path_ + ": ended at byte " + std::to_string(offset + done) + ", before the " +
                           std::to_string(n) + " bytes at " + std::to_string(offset) + " (it changed)");
        done += static_cast<std::size_t>(got);
    }
}

std::string read_file(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw io_error("cannot read " + path + ": it is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error("cannot read " + path + ": " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw io_error("cannot read " + path + ": " + std::strerror(errno));
    return ss.str();
}

void make_dirs(const std::string& path) {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) throw io_error("cannot create directory " + path + ": " + why_no_directory(path, ec));
}

int remove_stale_temporaries(const std::string& dir) {
    const std::string host = this_host();
    std::vector<fs::path> stale;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() >= 2) it.disable_recursion_pending();  // <dir>, <dir>/runs/<id>, <dir>/shards/<I-of-N>
        const pid_t pid = temporary_writer(it->path().filename().string(), host);
        if (pid > 0 && pid != ::getpid() && !process_alive(pid)) stale.push_back(it->path());
    }
    int removed = 0;
    for (const auto& p : stale) removed += fs::remove(p, ec) ? 1 : 0;
    return removed;
}

}  // namespace attnlab
