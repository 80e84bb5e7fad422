// File helpers: atomic writes (a reader sees the old file or the new one,
// never half of one) and reading a whole file, with io_error on failure.
#pragma once
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
// Creates the directory and its parents; the error names a dangling or
// looping symbolic link on the way.
void make_dirs(const std::string& path);
// Removes the temporaries of write_file_atomic in `dir` and two levels below
// it whose writer was a process of this host that is no longer alive (killed
// mid-write); another live process's are kept. Returns how many were removed.
int remove_stale_temporaries(const std::string& dir);

}  // namespace attnlab
