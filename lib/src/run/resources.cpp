// Sizes and the memory limit of a sweep (resources.hpp).
#include "attnlab/run/resources.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "attnlab/util/error.hpp"
#include "attnlab/util/saturating_size.hpp"

namespace attnlab {

std::size_t parse_size(const std::string& text, const std::string& option) {
    auto bad = [&] {
        return config_error(option + ": expected a size such as 4G, 512M or 1.5G (K, M, G, T: powers of 1024), got '" +
                            text + "'");
    };
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == 0) throw bad();
    double value = 0;
    try {
        std::size_t used = 0;
        value = std::stod(text.substr(0, i), &used);
        if (used != i) throw bad();
    } catch (const std::logic_error&) {
        throw bad();
    }
    std::string unit = text.substr(i);
    double scale = 1;
    if (!unit.empty()) {
        const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
        const std::string units = "KMGT";
        const auto at = units.find(u);
        if (at != std::string::npos) {
            scale = std::pow(1024.0, static_cast<double>(at + 1));
            unit = unit.substr(1);
            if (unit == "i" || unit == "iB" || unit == "ib") unit.clear();
        }
        if (unit == "B" || unit == "b") unit.clear();
        if (!unit.empty()) throw bad();
    }
    const double bytes = value * scale;
    if (!(bytes >= 1) || bytes >= static_cast<double>(std::numeric_limits<std::size_t>::max())) throw bad();
    return static_cast<std::size_t>(bytes);
}

std::string format_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%.0f B", bytes);
    else
        std::snprintf(buf, sizeof buf, bytes < 10 ? "%.2f %s" : bytes < 100 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

namespace {

// The first number of a file ("max" or a missing file: -1).
double read_number(const std::string& path) {
    std::ifstream in(path);
    std::string word;
    if (!(in >> word) || word == "max") return -1;
    try {
        return std::stod(word);
    } catch (const std::logic_error&) {
        return -1;
    }
}

// The path of this process in a cgroup hierarchy, from /proc/self/cgroup:
// "0::/a/b" (v2, controllers "") or "4:memory:/a/b" (v1); "" when absent.
std::string cgroup_path(const std::string& controllers) {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        const auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
        if (c1 == std::string::npos || c2 == std::string::npos) continue;
        const std::string names = line.substr(c1 + 1, c2 - c1 - 1);
        if (controllers.empty() ? names.empty()
                                : ("," + names + ",").find("," + controllers + ",") != std::string::npos)
            return line.substr(c2 + 1);
    }
    return "";
}

}  // namespace

memory_limit machine_memory_limit() {
    memory_limit out;
    auto consider = [&](double bytes, const std::string& source) {
        if (bytes < 0) return;
        const auto b = static_cast<std::size_t>(std::max(0.0, bytes));
        if (out.bytes == 0 || b < out.bytes) {
            out.bytes = b;
            out.source = source;
        }
    };
    {
        std::ifstream in("/proc/meminfo");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("MemAvailable:", 0) == 0) {
                std::istringstream s(line.substr(13));
                double kb = -1;
                if (s >> kb) consider(kb * 1024, "MemAvailable in /proc/meminfo");
            }
    }
    // A cgroup's limit less its use, for the process's cgroup and each parent
    // (in a container the hierarchy is often mounted at the process's own cgroup).
    auto walk = [&](const std::string& root, std::string rel, const char* limit_file, const char* usage_file) {
        for (;;) {
            const std::string dir = root + (rel == "/" ? "" : rel);
            const double limit = read_number(dir + "/" + limit_file);
            if (limit >= 0 && limit < 1e18)  // v1 writes "no limit" as a huge number
                consider(limit - std::max(0.0, read_number(dir + "/" + usage_file)),
                         "the cgroup limit " + dir + "/" + limit_file + " less its use");
            if (rel.empty() || rel == "/") break;
            const auto slash = rel.rfind('/');
            rel = slash == 0 || slash == std::string::npos ? "/" : rel.substr(0, slash);
        }
    };
    walk("/sys/fs/cgroup", cgroup_path(""), "memory.max", "memory.current");                                 // v2
    walk("/sys/fs/cgroup/memory", cgroup_path("memory"), "memory.limit_in_bytes", "memory.usage_in_bytes");  // v1
    return out;
}

memory_limit resolve_memory_limit(std::size_t max_memory) {
    return max_memory > 0 ? memory_limit{max_memory, "--max-memory"} : machine_memory_limit();
}

void require_memory(const std::string& what, std::size_t need, const std::string& terms, const memory_limit& limit,
                    const std::string& advice) {
    if (limit.bytes == 0 || need <= limit.bytes) return;  // no limit known: not checked, as run does
    const std::string about = need == size_saturated ? "more than 16 EiB (more than 64 bits count)"
                                                     : "about " + format_bytes(static_cast<double>(need));
    throw config_error("not enough memory: " + what + " needs " + about + (terms.empty() ? "" : " (" + terms + ")") +
                       "; the limit is " + format_bytes(static_cast<double>(limit.bytes)) + " (" + limit.source +
                       "). " + advice + "; nothing was run");
}

}  // namespace attnlab
