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

// What a non-regular file is, for the error.
std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

// "<path>", or "<path> (a symbolic link to <target>)" when it is one: an
// error about what the link leads to names both.
std::string named_with_link(const std::string& path) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) return path;
    const fs::path target = fs::read_symlink(path, ec);
    return ec ? path : path + " (a symbolic link to " + target.string() + ")";
}

// The file opened for reading, checked to be regular on the descriptor
// itself (O_NONBLOCK: opening a FIFO does not wait for a writer).
int open_regular(const std::string& path, std::uint64_t& size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw input_error(named_with_link(path), std::string("cannot read: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw input_error(path, std::string("cannot read: ") + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw input_error(named_with_link(path), "is " + file_kind(st.st_mode) + ", expected a regular file");
    }
    size = static_cast<std::uint64_t>(st.st_size);
    return fd;
}

// 4194304 as "4 MiB", other sizes in bytes.
std::string size_text(std::uint64_t n) {
    for (const auto& [shift, unit] : {std::pair{30, "GiB"}, {20, "MiB"}, {10, "KiB"}})
        if (n >= (std::uint64_t{1} << shift) && n % (std::uint64_t{1} << shift) == 0)
            return std::to_string(n >> shift) + " " + unit;
    return std::to_string(n) + " bytes";
}

// Closes a descriptor however the scope ends.
struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
};

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
    // The rename replaces whatever node has the name: only a regular file may
    // be replaced (a device, a FIFO or a directory is not an output, and a
    // symbolic link would be replaced, not written through).
    if (struct stat st{}; ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw io_error("cannot write " + path + ": it is " + file_kind(st.st_mode) +
                       ", and attnlab replaces only regular files");
    const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
    const std::string tmp =
        path + ".tmp." + this_host() + "." + std::to_string(::getpid()) + "." + std::to_string(tid % 1000000007);
    auto fail = [&](const std::string& what) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw io_error(what + ": " + why);
    };
    // A leftover of a killed process with this pid goes first; the new one is
    // created, never opened through a link planted under its name.
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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

std::string read_input(const std::string& path, const input_kind& kind) {
    std::uint64_t size = 0;
    const fd_closer file{open_regular(path, size)};
    const auto too_large = [&](const std::string& how) {
        return input_error(path, how + ", more than the " + size_text(kind.max_bytes) + " " + kind.what + " may have");
    };
    if (size > kind.max_bytes) throw too_large("has " + std::to_string(size) + " bytes");
    std::string text;
    text.reserve(static_cast<std::size_t>(size));
    // To the end of the file, not to its measured size (a metrics.csv being
    // written grows), but never past the limit: one byte more is refused.
    std::vector<char> buf(std::size_t{1} << 20);
    for (;;) {
        const std::uint64_t room = kind.max_bytes + 1 - text.size();
        const ssize_t got =
            ::read(file.fd, buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), room)));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw input_error(path, std::string("cannot read: ") + std::strerror(errno));
        if (got == 0) break;
        text.append(buf.data(), static_cast<std::size_t>(got));
        if (text.size() > kind.max_bytes) throw too_large("grew while it was read");
    }
    return text;
}

std::string read_file(const std::string& path) { return read_input(path, inputs::table); }

namespace {

// The folder and name of a path, with the folder's links resolved: two
// spellings of one destination compare equal ("" when the folder is missing).
std::string resolved_name(const std::string& path) {
    std::error_code ec;
    const fs::path p = fs::absolute(path, ec);
    if (ec) return "";
    const fs::path folder = fs::canonical(p.parent_path(), ec);
    return ec ? "" : (folder / p.filename()).string();
}

}  // namespace

void check_output_file(const std::string& path, const std::string& option, const std::vector<std::string>& inputs) {
    const std::string named = option + ": " + path;
    if (path.empty()) throw config_error(option + ": expected a file name, got ''");
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw config_error(named + " is " + file_kind(st.st_mode) +
                           "; attnlab writes an output only as a regular file (a new one, or one it replaces whole), "
                           "so name a file" +
                           (S_ISLNK(st.st_mode) ? " itself, not a link to one" : ""));
    const std::string here = resolved_name(path);
    for (const std::string& input : inputs) {
        struct stat in {};
        const bool same_node = ::lstat(path.c_str(), &st) == 0 && ::stat(input.c_str(), &in) == 0 &&
                               st.st_dev == in.st_dev && st.st_ino == in.st_ino;
        if (same_node || (!here.empty() && here == resolved_name(input)))
            throw config_error(named + " is " + (input == path ? "" : input + ", ") +
                               "a file this command reads: writing it would replace it; name another file");
    }
}

void write_output_file(const std::string& path, const std::string& text, const std::string& option,
                       const std::vector<std::string>& inputs) {
    check_output_file(path, option, inputs);
    write_file_atomic(path, text);
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
