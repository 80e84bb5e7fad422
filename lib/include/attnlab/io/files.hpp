// File helpers: the one way attnlab reads an input (read_input: a regular
// file, measured against the limit of its kind before it is read, read in
// bounded pieces) and the one way it writes an output (write_file_atomic:
// only over a regular file, atomically; check_output_file for a path the
// user names), with io_error on failure. The rules are docs/outputs-policy.md,
// "What attnlab reads and writes".
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnlab {

// What an input file is, for its errors, and the most bytes a file of that
// kind may have: far above any file attnlab writes, far below what would
// exhaust memory. A larger file is refused before a byte of it is read.
struct input_kind {
    const char* what;  // "a run's config.yaml": "has N bytes, more than the 1 MiB a run's config.yaml may have"
    std::uint64_t max_bytes;
};
namespace inputs {
inline constexpr input_kind spec{"a spec", std::uint64_t{4} << 20};  // spec files, spec.yaml, overrides.yaml
inline constexpr input_kind run_config{"a run's config.yaml", std::uint64_t{1} << 20};
inline constexpr input_kind run_result{"a run's result.yaml", std::uint64_t{1} << 20};
inline constexpr input_kind folder_note{"a results folder's spec_folder.txt", std::uint64_t{64} << 10};
inline constexpr input_kind table{"a CSV table", std::uint64_t{1} << 30};  // metrics.csv, summary.csv
inline constexpr input_kind prompt{"a prompt file", std::uint64_t{16} << 20};
}  // namespace inputs

// The bytes of the input file at `path`: a regular file once symbolic links
// are followed (a directory, a device such as /dev/zero, a FIFO or a socket
// is refused, naming what it is, without waiting for a FIFO's writer); its
// size is checked against `kind.max_bytes` before it is read, and it is read
// in pieces of at most 1 MiB, never past that limit (a file that grows past
// it while it is read is refused too). input_error (an io_error) naming the
// file and the reason on any failure.
std::string read_input(const std::string& path, const input_kind& kind);
// read_input(path, inputs::table): a CSV file (metrics.csv and the like).
std::string read_file(const std::string& path);

// Writes `text` to a temporary file beside `path`, flushes it to disk,
// renames it over `path` and flushes the directory (so the new name survives
// a crash too). The temporary name, `<path>.tmp.<host>.<pid>.<thread>`, is
// unique to this host, process and thread, so writers of the same file at
// once (every shard writes spec.yaml) never share one: the file is always one
// writer's complete text. Only a regular file is replaced: io_error naming
// `path` when it is a directory, a device, a FIFO, a socket or a symbolic
// link (the rename would replace the node or the link, not write into it).
void write_file_atomic(const std::string& path, const std::string& text);
// Checks a path the user named for an output (`option`, e.g. "--per-position")
// before anything is computed: config_error naming the option when it is not
// a regular file or a new name in an existing folder (a directory, a device,
// a FIFO, a socket, a symbolic link), or when it is one of `inputs` (the same
// folder and name, or the same file under another name): an output never
// replaces the files it was computed from.
void check_output_file(const std::string& path, const std::string& option, const std::vector<std::string>& inputs);
// check_output_file, then write_file_atomic.
void write_output_file(const std::string& path, const std::string& text, const std::string& option,
                       const std::vector<std::string>& inputs);
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
