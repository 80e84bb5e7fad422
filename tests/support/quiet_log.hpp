// Silences attnlab's log below errors for a scope (in-process runs and sweeps
// log every evaluation).
#pragma once
#include <spdlog/spdlog.h>

namespace attnlab::test {

struct quiet_log {
    spdlog::level::level_enum was = spdlog::get_level();
    quiet_log() { spdlog::set_level(spdlog::level::err); }
    ~quiet_log() { spdlog::set_level(was); }
};

}  // namespace attnlab::test
