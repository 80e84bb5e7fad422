// Regression tests for what fuzzing the file readers found (fuzz/README.md):
// each input goes through the reader a run directory is read with.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/results/result_file.hpp"
#include "attnlab/train/resume_state.hpp"
#include "attnlab/util/error.hpp"

#include "support/process_support.hpp"

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::StartsWith;

namespace {

run_result ok_result() {
    run_result r;
    r.steps = 20;
    r.final_test = {1.5, 0.5, 0.25};
    r.best_test = {1.25, 0.75, 0.5};
    r.best_step = 15;
    r.wall_s = 0.5;
    r.params = 432;
    return r;
}

// `r` written as result.yaml and read back.
run_result written_and_read(const run_result& r) {
    temp_dir dir;
    write_text(dir / "result.yaml", run_result_to_yaml(r));
    const std::optional<run_result> back = read_run_result((dir / "result.yaml").string());
    REQUIRE(back);
    return *back;
}

// A safetensors file: the length of `header`, `header`, then `data_bytes` zero bytes.
std::string safetensors_file(const std::string& header, std::size_t data_bytes) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return bytes + header + std::string(data_bytes, '\0');
}

// The layout the safetensors cases are read against: one tensor "w" of 2 floats.
param_layout one_tensor_layout() {
    param_layout layout;
    layout.add("w", {2}, param_init::zeros, false);
    return layout;
}

// `bytes` of a resume state with the int64 at `at` replaced by `v` and the
// checksum (FNV-1a 64 of everything before it) made right again.
std::string with_int64(std::string bytes, std::size_t at, std::int64_t v) {
    std::memcpy(bytes.data() + at, &v, sizeof v);
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i + 8 < bytes.size(); ++i) {
        h ^= static_cast<unsigned char>(bytes[i]);
        h *= 0x100000001b3ULL;
    }
    std::memcpy(bytes.data() + bytes.size() - 8, &h, sizeof h);
    return bytes;
}

}  // namespace

// ---------------------------------------------------------------- model.safetensors

TEST_CASE("safetensors: a header claiming a 2^40-element tensor is refused before anything is allocated", "[readers]") {
    param_layout layout;
    layout.add("w", {2}, param_init::zeros, false);
    const std::uint64_t n = std::uint64_t{1} << 40;
    const std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(n) + "],\"data_offsets\":[0," +
                               std::to_string(4 * n) + "]}}";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    bytes += header + std::string(8, '\0');
    // A reader that trusted the shape would allocate 4 TiB (std::bad_alloc)
    // before finding the data short.
    CHECK_THROWS_WITH(safetensors_decode(bytes, "model.safetensors", layout.named_tensors()),
                      "model.safetensors: data section truncated: the tensors need "
                      "4398046511104 bytes, the file holds 8");
}

TEST_CASE("safetensors: a number beyond double's range in the header is a malformed header", "[readers]") {
    // nlohmann-json throws out_of_range for it, not parse_error: it escaped the reader.
    const std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1e972,8]}}";
    CHECK_THROWS_WITH(
        safetensors_decode(safetensors_file(header, 8), "model.safetensors", one_tensor_layout().named_tensors()),
        StartsWith("model.safetensors: malformed JSON header at header byte ") &&
            Catch::Matchers::Contains("number overflow parsing '1e972'"));
}

// ---------------------------------------------------------------- resume.state

TEST_CASE("resume.state: a count beyond the range of its field is refused, not cut to its low bits", "[readers]") {
    train_state st;
    st.step = 5;
    st.window.steps = 3;
    st.params = st.adam_m = st.adam_v = std::vector<float>(4, 0.5f);
    const std::string config = "config\n";
    const std::string bytes = train_state_encode(st, config);
    REQUIRE(train_state_decode(bytes, "resume.state", config).step == 5);
    // The step follows the magic (15 bytes), the version (4) and the config text (8 + its length).
    const std::size_t step_at = 15 + 4 + 8 + config.size();
    CHECK_THROWS_WITH(
        train_state_decode(with_int64(bytes, step_at, (std::int64_t{1} << 32) + 5), "resume.state", config),
        StartsWith("resume.state: step 4294967301 out of range"));
    // The window's step count comes before its seconds (8 bytes), the three float arrays and the checksum.
    const std::size_t window_steps_at = bytes.size() - 8 - 3 * (8 + 4 * 4) - 8 - 8;
    REQUIRE(train_state_decode(with_int64(bytes, window_steps_at, 7), "resume.state", config).window.steps == 7);
    CHECK_THROWS_WITH(
        train_state_decode(with_int64(bytes, window_steps_at, -(std::int64_t{1} << 40)), "resume.state", config),
        StartsWith("resume.state: window steps -1099511627776 out of range"));
}

TEST_CASE("resume.state: a state without parameters reads", "[readers]") {
    // Its empty float arrays were copied with memcpy to a null pointer:
    // undefined behaviour, reported by UBSan in build-asan (scripts/test).
    train_state st;
    st.step = 2;
    const train_state back = train_state_decode(train_state_encode(st, "c\n"), "resume.state", "c\n");
    CHECK(back.step == 2);
    CHECK(back.params.empty());
    CHECK(back.adam_v.empty());
}

// ---------------------------------------------------------------- result.yaml

TEST_CASE("result.yaml: a reason with quotes, backslashes and control characters reads back", "[readers]") {
    run_result r = ok_result();
    r.status = run_status::diverged;
    r.reason = "loss \"not finite\" at C:\\step 3\nsecond line\ttab\x01";
    CHECK(written_and_read(r).reason == r.reason);
}

TEST_CASE("result.yaml: non-finite test metrics of a diverged run read back", "[readers]") {
    run_result r = ok_result();
    r.status = run_status::diverged;
    r.final_test = {std::numeric_limits<double>::infinity(), 0.0, 0.0};
    r.best_test = {std::numeric_limits<double>::quiet_NaN(), 0.0, 0.0};
    r.wall_s = -std::numeric_limits<double>::infinity();
    const run_result back = written_and_read(r);
    CHECK(back.final_test.loss == std::numeric_limits<double>::infinity());
    CHECK(std::isnan(back.best_test.loss));
    CHECK(back.wall_s == -std::numeric_limits<double>::infinity());
}

TEST_CASE("result.yaml: what attnlab never writes is refused, naming the file and the key", "[readers]") {
    temp_dir dir;
    const std::string path = (dir / "result.yaml").string();
    const auto refused = [&](const run_result& r, const std::string& why) {
        write_text(dir / "result.yaml", run_result_to_yaml(r));
        CHECK_THROWS_WITH(read_run_result(path), Catch::Matchers::StartsWith(path + ": " + why));
    };
    for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
        run_result r = ok_result();  // status ok: a finished run's losses are numbers
        r.best_test.loss = bad;
        refused(r, "best_test.loss " + format_number(bad) + " is not a finite number, in a run of status ok");
        r = ok_result();
        r.final_val.loss = bad;
        refused(r, "final_val.loss");
    }
    run_result r = ok_result();
    r.best_step = 999;
    refused(r, "best_step 999 is outside 0..20 (steps)");
    r.best_step = -1;
    refused(r, "best_step -1 is outside 0..20");
    r = ok_result();
    r.status = run_status::diverged;
    r.best_step = 21;
    refused(r, "best_step 21 is outside 0..20");
    r.best_step = 20;  // the last step is a step
    write_text(dir / "result.yaml", run_result_to_yaml(r));
    CHECK(read_run_result(path)->best_step == 20);
}

TEST_CASE("result.yaml: nan and inf as earlier versions wrote them read", "[readers]") {
    temp_dir dir;
    write_text(dir / "result.yaml",
               "status: diverged\nreason: \"\"\nsteps: 3\n"
               "final_test: {loss: inf, token_acc: 0, seq_acc: 0}\nbest_test: {loss: nan, token_acc: 0, seq_acc: 0}\n"
               "best_step: 0\nwall_s: 0.5\nparams: 10\nnonpositive_denominator_steps: 0\nfirst_nonpositive_step: 0\n");
    const std::optional<run_result> r = read_run_result((dir / "result.yaml").string());
    REQUIRE(r);
    CHECK(r->final_test.loss == std::numeric_limits<double>::infinity());
    CHECK(std::isnan(r->best_test.loss));
}
