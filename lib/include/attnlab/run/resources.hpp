// The memory a sweep may use (attnlab run --max-memory): sizes as people
// write them, and what the machine can give.
#pragma once
#include <cstddef>
#include <string>

namespace attnlab {

// "4G", "512M", "1.5G", "64K", "2GiB", "1000000" (bytes); K, M, G, T are
// powers of 1024, a trailing B or iB is allowed. Throws config_error naming
// `option` when the text is not such a size or is 0.
std::size_t parse_size(const std::string& text, const std::string& option = "--max-memory");

// "1.50 GiB", "512 MiB", "900 KiB", "100 B" (up to EiB).
std::string format_bytes(double bytes);

struct memory_limit {
    std::size_t bytes = 0;  // 0: unknown (no /proc/meminfo, no cgroup limit)
    std::string source;     // where it comes from, for messages
};

// What this process can still allocate: MemAvailable of /proc/meminfo, and,
// when the process's cgroup (v2: memory.max of its cgroup and its parents;
// v1: memory.limit_in_bytes) has a limit, that limit minus the cgroup's
// current use, whichever is smaller.
memory_limit machine_memory_limit();

// The limit of a verb's --max-memory: `max_memory` bytes when > 0, else
// what the machine has available.
memory_limit resolve_memory_limit(std::size_t max_memory);

// The memory guard of the verbs that allocate by a configuration (eval,
// bench train, bench generate; docs/outputs-policy.md): throws config_error
// "not enough memory: <what> needs about <need> (<terms>); the limit is
// <limit> (<source>). <advice>; nothing was run" when `need` bytes exceed the
// limit. An unknown limit (0) is not checked.
void require_memory(const std::string& what, std::size_t need, const std::string& terms, const memory_limit& limit,
                    const std::string& advice);

}  // namespace attnlab
