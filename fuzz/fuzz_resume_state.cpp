// libFuzzer target for the resume-state reader: train_state_decode
// (lib/include/attnlab/train/resume_state.hpp), which `attnlab run` calls on
// runs/<id>/resume.state before it resumes a stopped run. Built and run by
// scripts/fuzz.
//
// The input is the bytes of a resume.state. A resume state ends with a
// checksum of everything before it, which random mutations almost never
// match; so the input is read twice: as it is, and with its last 8 bytes
// replaced by the right checksum (FNV-1a 64, as resume_state.cpp writes
// it), which lets the fuzzer reach the fields. The config.yaml the state
// must belong to is the one written in it. Expected: io_error naming the
// file. A finding is a crash, a sanitizer report, a leak, any other
// exception, a hang, an allocation beyond scripts/fuzz's -malloc_limit_mb,
// or a state that reads but is not written back to the same bytes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "attnlab/train/resume_state.hpp"
#include "attnlab/util/error.hpp"
#include "fuzz_support.hpp"

namespace {

// The config.yaml text written in a state: after the 15-byte magic and the
// u32 version, a u64 length and the bytes ("" when the input is too short).
std::string config_in(const std::string& bytes) {
    constexpr std::size_t at = 15 + 4;
    if (bytes.size() < at + 8) return "";
    std::uint64_t n;
    std::memcpy(&n, bytes.data() + at, sizeof n);
    return bytes.substr(at + 8, static_cast<std::size_t>(std::min<std::uint64_t>(n, bytes.size())));
}

void read(const std::string& bytes) {
    using namespace attnlab;
    const std::string config_yaml = config_in(bytes);
    train_state st;
    if (!attnlab_fuzz::read_or_refuse<io_error>("train_state_decode", "resume.state",
                                                [&] { st = train_state_decode(bytes, "resume.state", config_yaml); }))
        return;
    if (train_state_encode(st, config_yaml) != bytes)
        attnlab_fuzz::finding("a resume state that reads is written back differently", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string bytes(reinterpret_cast<const char*>(data), size);
    read(bytes);
    if (bytes.size() >= 8) {
        const std::uint64_t sum = attnlab::resume_checksum(bytes.data(), bytes.size() - 8);
        std::memcpy(bytes.data() + bytes.size() - 8, &sum, sizeof sum);
        read(bytes);
    }
    return 0;
}
