// File helpers: atomic writes (a reader sees the old file or the new one,
// never half of one) and reading a whole file, with io_error on failure.
#pragma once
#include <string>

namespace attnlab {

// Writes `text` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`. The temporary name is unique to this host, process
// and thread, so writers of the same file at once (every shard writes
// spec.yaml) never share one: the file is always one writer's complete text.
void write_file_atomic(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);
// Creates the directory and its parents.
void make_dirs(const std::string& path);

}  // namespace attnlab
