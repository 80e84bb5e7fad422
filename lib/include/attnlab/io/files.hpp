// File helpers: atomic writes (a reader sees the old file or the new one,
// never half of one) and reading a whole file, with io_error on failure.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace attnlab {

// Writes `text` to a temporary file beside `path`, flushes it to disk,
// renames it over `path` and flushes the directory (so the new name survives
// a crash too). The temporary name, `<path>.tmp.<host>.<pid>.<thread>`, is
// unique to this host, process and thread, so writers of the same file at
// once (every shard writes spec.yaml) never share one: the file is always one
// writer's complete text.
void write_file_atomic(const std::string& path, const std::string& text);
// The whole file; io_error naming it when it cannot be read (a directory included).
std::string read_file(const std::string& path);
// The same for a data file (the text task's corpus): io_error naming it when
// it is missing, a directory or unreadable.
std::string read_text_file(const std::string& path);
// The size of the regular file at `path` (a symbolic link to one is
// followed), found without reading it; io_error naming it when it is missing
// or not a regular file (a directory, a device such as /dev/zero, a FIFO, a
// socket), whose size would say nothing of what a read returns.
std::uint64_t regular_file_size(const std::string& path);
// Reads the regular file at `path`, which must have `size` bytes, in pieces
// of at most 1 MiB handed to `piece` in order, so that nothing holds the
// whole file unless `piece` keeps it. Stops with read_interrupted when
// `*stop` is set between two pieces; io_error naming the file when it is not
// a regular file of `size` bytes (changed since it was measured) or cannot be read.
void read_regular_file(const std::string& path, std::uint64_t size,
                       const std::function<void(const char* data, std::size_t n)>& piece,
                       const std::atomic<bool>* stop = nullptr);
// A regular file open for reading at any offset, checked on the descriptor
// (a directory, a device or a FIFO is refused: io_error naming it).
class regular_file_reader {
public:
    explicit regular_file_reader(const std::string& path);
    ~regular_file_reader();
    regular_file_reader(const regular_file_reader&) = delete;
    regular_file_reader& operator=(const regular_file_reader&) = delete;
    std::uint64_t size() const { return size_; }
    // `n` bytes at `offset` into `out`; io_error naming the file when it ends first.
    void read_at(std::uint64_t offset, char* out, std::size_t n) const;

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};
// Flushes a directory's entries (a rename in it) to disk; filesystems that
// cannot sync a directory are left as they are.
void sync_directory(const std::string& dir);
// Creates the directory and its parents; the error names a dangling or
// looping symbolic link on the way.
void make_dirs(const std::string& path);
// Removes the temporaries of write_file_atomic in `dir` and two levels below
// it whose writer was a process of this host that is no longer alive (killed
// mid-write); another live process's are kept. Returns how many were removed.
int remove_stale_temporaries(const std::string& dir);

}  // namespace attnlab
