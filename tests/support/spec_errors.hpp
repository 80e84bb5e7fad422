// The error a spec's text gets from the loader: its one-line message, or a
// test failure if the text loads.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "attnlab/spec/spec.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab::test {

// parse_spec(yaml, "spec.yaml", sets)'s config_error message (checked to be
// one line); FAILs when the text loads.
inline std::string spec_error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
    try {
        parse_spec(yaml, "spec.yaml", sets);
    } catch (const config_error& e) {
        std::string msg = e.what();
        CHECK(msg.find('\n') == std::string::npos);  // one line
        return msg;
    }
    FAIL("no config_error for:\n" << yaml);
    return {};
}

}  // namespace attnlab::test
