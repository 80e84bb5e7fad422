// Checkpoints (docs/model.md "Checkpoints", §6): the safetensors writer and its
// checking reader, the names and shapes of docs/model.md in the file, every malformed case
// named by file, and `attnlab eval` reproducing a run's last test row.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/io/sha256.hpp"
#include "attnlab/run/runner.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/run/run_check.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/train/checkpoint.hpp"
#include "attnlab/util/error.hpp"
#include "support/model_check.hpp"
#include "support/process_support.hpp"
#include "support/tiny_spec.hpp"

using namespace attnlab;
using attnlab::test::cli_result;
using attnlab::test::count_of;
using attnlab::test::csv_fields;
using attnlab::test::run_cli;
using attnlab::test::small_model;
using attnlab::test::tiny_lookup_spec;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A fresh directory under the system temp dir, removed with its contents.
struct ckpt_temp_dir {
    fs::path path;
    explicit ckpt_temp_dir(const std::string& name)
        : path(fs::temp_directory_path() / ("attnlab_test_checkpoint_" + name + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ckpt_temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string operator/(const std::string& f) const { return (path / f).string(); }
};

std::string le_u64(std::uint64_t n) {
    std::string s;
    for (int i = 0; i < 8; ++i) s += static_cast<char>((n >> (8 * i)) & 0xFF);
    return s;
}

std::string float_bytes(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// A file from a hand-written header and data section.
std::string make_file(const std::string& header, const std::string& data) {
    return le_u64(header.size()) + header + data;
}

std::string header_of(const std::string& bytes) {
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return bytes.substr(8, n);
}

// The tiny layout of the header tests: a.weight [2, 3], b [3].
param_layout tiny_layout() {
    param_layout L;
    L.add("a.weight", {2, 3}, param_init::normal, true);
    L.add("b", {3}, param_init::zeros, false);
    return L;
}
const std::vector<float> tiny_params = {1, 2, 3, 4, 5, 6, -0.5f, 0.25f, 1e-30f};

// The io_error message of reading `bytes` as the file `path` with `layout`;
// fails the test if it does not throw io_error.
std::string read_error(const std::string& path, const std::string& bytes, const param_layout& layout) {
    write_file_atomic(path, bytes);
    try {
        safetensors_read(path, layout.named_tensors());
    } catch (const io_error& e) {
        return e.what();
    }
    FAIL("no io_error for " << path);
    return "";
}

// (name, shape) as docs/model.md lists them, for the header text: "name":{"dtype":"F32","shape":[..],
std::string entry_prefix(const std::string& name, const std::vector<int>& shape) {
    std::string s = "\"";
    s += name;
    s += "\":{\"dtype\":\"F32\",\"shape\":[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    return s + "],";
}

// Saves `a`, loads into a differently initialised `b`, checks every tensor's
// bytes and that the header holds exactly `expected` (SPEC names and shapes).
void check_round_trip(const model_config& m, const attention_config& a, int V, int T_max,
                      const std::vector<std::pair<std::string, std::vector<int>>>& expected, const std::string& file) {
    transformer<float> src(m, a, V, T_max), dst(m, a, V, T_max);
    src.init_params(7);
    dst.init_params(8);
    REQUIRE(src.params != dst.params);
    checkpoint_save(file, src);
    checkpoint_load(file, dst);
    REQUIRE(dst.params.size() == src.params.size());
    CHECK(std::memcmp(dst.params.data(), src.params.data(), src.params.size() * sizeof(float)) == 0);
    for (const auto& t : src.layout().tensors())
        CHECK(std::memcmp(dst.params.data() + t.offset, src.params.data() + t.offset, t.size * sizeof(float)) == 0);

    const std::string header = header_of(read_file(file));
    CHECK(count_of(header, "\"dtype\"") == expected.size());
    for (const auto& [name, shape] : expected) {
        INFO(name);
        CHECK(count_of(header, entry_prefix(name, shape)) == 1);
    }
}

}  // namespace

// ---------------------------------------------------------------- format

TEST_CASE(
    "safetensors: header bytes of a tiny layout match the hand-written "
    "expectation",
    "[checkpoint]") {
    const std::string bytes = safetensors_encode(tiny_layout().named_tensors(), tiny_params);
    const std::string json = std::string("{\"__metadata__\":{\"format\":\"attnlab\",\"version\":\"") + ATTNLAB_VERSION +
                             "\"},"
                             "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                             "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}";
    // Padded with spaces (JSON whitespace) so the data starts 8-byte aligned.
    const std::size_t n = (json.size() + 7) / 8 * 8;
    REQUIRE(bytes.size() == 8 + n + 36);
    CHECK(bytes.substr(0, 8) == le_u64(n));
    CHECK(bytes.substr(8, n) == json + std::string(n - json.size(), ' '));
    CHECK(bytes.substr(8 + n) == float_bytes(tiny_params));

    safetensors_metadata meta;
    CHECK(safetensors_decode(bytes, "tiny", tiny_layout().named_tensors(), &meta) == tiny_params);
    CHECK(meta == safetensors_metadata{{"format", "attnlab"}, {"version", ATTNLAB_VERSION}});
}

TEST_CASE("safetensors: extra metadata is written and read back", "[checkpoint]") {
    const std::string bytes =
        safetensors_encode(tiny_layout().named_tensors(), tiny_params, {{"note", "a \"quoted\"\nline"}});
    safetensors_metadata meta;
    safetensors_decode(bytes, "tiny", tiny_layout().named_tensors(), &meta);
    CHECK(meta ==
          safetensors_metadata{{"format", "attnlab"}, {"version", ATTNLAB_VERSION}, {"note", "a \"quoted\"\nline"}});
}

TEST_CASE("safetensors: a file written by another tool (other order, whitespace, escapes) reads", "[checkpoint]") {
    // As PyTorch's writer might lay it out: keys sorted, data of b before a.weight.
    const std::string header =
        "{ \"__metadata__\" : {\"format\": \"pt\"},\n"
        "  \"a.weig\\u0068t\": {\"shape\": [2, 3], \"dtype\": \"F32\", \"data_offsets\": [12, 36]},\n"
        "  \"b\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 12]} }   ";
    const std::vector<float> data = {-0.5f, 0.25f, 1e-30f, 1, 2, 3, 4, 5, 6};  // b, then a.weight
    safetensors_metadata meta;
    CHECK(safetensors_decode(make_file(header, float_bytes(data)), "pt", tiny_layout().named_tensors(), &meta) ==
          tiny_params);
    CHECK(meta == safetensors_metadata{{"format", "pt"}});
}

// ---------------------------------------------------------------- models

namespace {

using name_shape_list = std::vector<std::pair<std::string, std::vector<int>>>;

// The tensors of a 2-block model of width D with exact softmax attention, in
// layout order: `inputs` (embedding, positions), then per block its norms,
// q, k, v, o and the `mlp` tensors, then the final norm and the head.
name_shape_list two_block_tensors(int V, int D, const name_shape_list& inputs, const name_shape_list& mlp) {
    name_shape_list all = inputs;
    for (int i = 0; i < 2; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        for (const auto& [name, shape] : name_shape_list{{"attn_norm.weight", {D}},
                                                         {"attn.q.weight", {D, D}},
                                                         {"attn.k.weight", {D, D}},
                                                         {"attn.v.weight", {D, D}},
                                                         {"attn.o.weight", {D, D}},
                                                         {"mlp_norm.weight", {D}}})
            all.emplace_back(b + name, shape);
        for (const auto& [name, shape] : mlp) all.emplace_back(b + name, shape);
    }
    all.push_back({"norm.weight", {D}});
    all.push_back({"head.weight", {V, D}});
    return all;
}

}  // namespace

TEST_CASE("checkpoint: round trip of a model with learned positions and a gelu MLP, documented names", "[checkpoint]") {
    ckpt_temp_dir dir("gelu");
    const int V = 10, T = 12, D = 16, F = 64;  // gelu hidden 4 D
    const name_shape_list expected = two_block_tensors(
        V, D, {{"embed.weight", {V, D}}, {"pos.weight", {T, D}}},
        {{"mlp.up.weight", {F, D}}, {"mlp.up.bias", {F}}, {"mlp.down.weight", {D, F}}, {"mlp.down.bias", {D}}});
    check_round_trip(small_model(2, 16, mlp_kind::gelu, position_kind::learned), attention_config{}, V, T, expected,
                     dir / "model.safetensors");
}

TEST_CASE("checkpoint: round trip of a model with rope and a swiglu MLP, documented names", "[checkpoint]") {
    ckpt_temp_dir dir("swiglu");
    const int V = 10, T = 12, D = 16, F = 48;  // swiglu hidden: 8/3 D rounded up to a multiple of 8
    const name_shape_list expected =
        two_block_tensors(V, D, {{"embed.weight", {V, D}}},
                          {{"mlp.gate.weight", {F, D}}, {"mlp.up.weight", {F, D}}, {"mlp.down.weight", {D, F}}});
    check_round_trip(small_model(2, 16, mlp_kind::swiglu, position_kind::rope), attention_config{}, V, T, expected,
                     dir / "model.safetensors");
}

TEST_CASE("checkpoint: gate and out_norm tensors of docs/model.md round-trip through a layout", "[checkpoint]") {
    attention_config a;
    a.denominator = denominator_kind::layernorm;
    a.in_gate = true;
    a.out_gate = true;
    model_offsets off;
    const param_layout L = build_param_layout(small_model(2, 16, mlp_kind::none, position_kind::rope), a, 10, 12, off);
    std::vector<float> params(L.total());
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(i) * 0.5f - 3.0f;
    const std::string bytes = safetensors_encode(L.named_tensors(), params);
    CHECK(safetensors_decode(bytes, "gates", L.named_tensors()) == params);
    const std::string header = header_of(bytes);
    for (const auto& [name, shape] :
         std::vector<std::pair<std::string, std::vector<int>>>{{"blocks.0.attn.in_gate.weight", {2, 16}},
                                                               {"blocks.0.attn.in_gate.bias", {2}},
                                                               {"blocks.0.attn.out_gate.weight", {2, 16}},
                                                               {"blocks.0.attn.out_gate.bias", {2}},
                                                               {"blocks.1.attn.out_norm.weight", {8}},
                                                               {"blocks.1.attn.out_norm.bias", {8}}}) {
        INFO(name);
        CHECK(count_of(header, entry_prefix(name, shape)) == 1);
    }
}

// ---------------------------------------------------------------- malformed files

TEST_CASE("safetensors: a truncated file is an io_error naming the file, at every length", "[checkpoint]") {
    ckpt_temp_dir dir("truncated");
    const std::string path = dir / "model.safetensors";
    const std::string good = safetensors_encode(tiny_layout().named_tensors(), tiny_params);
    const std::size_t n = header_of(good).size();
    const std::vector<std::pair<std::size_t, std::string>> cases = {{0, "too short"},
                                                                    {5, "too short"},
                                                                    {7, "too short"},
                                                                    {8, "header length"},
                                                                    {8 + n / 2, "header length"},
                                                                    {8 + n - 1, "header length"},
                                                                    {8 + n, "data section truncated"},
                                                                    {8 + n + 5, "data section truncated"},
                                                                    {good.size() - 1, "data section truncated"}};
    for (const auto& [len, what] : cases) {
        INFO("truncated to " << len << " bytes");
        const std::string msg = read_error(path, good.substr(0, len), tiny_layout());
        CHECK_THAT(msg, StartsWith(path + ": "));
        CHECK_THAT(msg, Contains(what));
    }
    // Every other length fails too.
    for (std::size_t len = 0; len < good.size(); ++len) {
        INFO("truncated to " << len << " bytes");
        CHECK_THAT(read_error(path, good.substr(0, len), tiny_layout()), StartsWith(path + ": "));
    }
}

TEST_CASE("safetensors: header length larger than the file", "[checkpoint]") {
    ckpt_temp_dir dir("header_len");
    const std::string path = dir / "model.safetensors";
    const std::string good = safetensors_encode(tiny_layout().named_tensors(), tiny_params);
    for (std::uint64_t n : {static_cast<std::uint64_t>(good.size() - 7), std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
        INFO("header length " << n);
        const std::string msg = read_error(path, le_u64(n) + good.substr(8), tiny_layout());
        CHECK_THAT(msg, StartsWith(path + ": header length " + std::to_string(n) + " is larger than the file"));
    }
}

TEST_CASE("safetensors: malformed JSON headers", "[checkpoint]") {
    ckpt_temp_dir dir("bad_json");
    const std::string path = dir / "model.safetensors";
    const std::string data = float_bytes(tiny_params);
    for (const std::string& header : {
             std::string(""),
             std::string("{\"a.weight\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}"),
             std::string("{\"a.weight\": {\"dtype\": \"F32\", \"shape\": [2, 3,], \"data_offsets\": [0, 24]}}"),
             std::string("{\"a.weight\": {\"dtype\": \"F32\", \"shape\": [2.0, 3], \"data_offsets\": [0, 24]}}"),
             std::string("{\"a.weight\": {'dtype': \"F32\"}}"),
             std::string("{\"a\": 1} trailing"),
             std::string("{\"a\": \"unterminated}"),
             std::string("{\"a\": 1, \"a\": 2}"),
             std::string("{\"a\": true}"),
             std::string("{\"a\": [01]}"),
         }) {
        INFO(header);
        const std::string msg = read_error(path, make_file(header, data), tiny_layout());
        CHECK_THAT(msg, StartsWith(path + ": malformed JSON header at header byte "));
    }
    CHECK_THAT(read_error(path, make_file("[1, 2]", data), tiny_layout()),
               StartsWith(path + ": header is an array, expected a JSON object"));
}

TEST_CASE("safetensors: wrong dtype, bad entries and inconsistent offsets", "[checkpoint]") {
    ckpt_temp_dir dir("entries");
    const std::string path = dir / "model.safetensors";
    const std::string data = float_bytes(tiny_params);
    const std::string b_entry = ",\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{\"a.weight\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,24]}" + b_entry,
         "tensor a.weight: dtype F16, expected F32"},
        {"{\"a.weight\":{\"dtype\":32,\"shape\":[2,3],\"data_offsets\":[0,24]}" + b_entry,
         "tensor a.weight: dtype is an integer, expected a string"},
        {"{\"a.weight\":{\"shape\":[2,3],\"data_offsets\":[0,24]}" + b_entry, "tensor a.weight: missing \"dtype\""},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"data_offsets\":[0,24]}" + b_entry, "tensor a.weight: missing \"shape\""},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3]}" + b_entry, "tensor a.weight: missing \"data_offsets\""},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24],\"x\":1}" + b_entry,
         "tensor a.weight: unknown field \"x\""},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,24]}" + b_entry,
         "tensor a.weight: shape must be an array of non-negative integers"},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0]}" + b_entry,
         "tensor a.weight: data_offsets must be [begin, end]"},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,0]}" + b_entry,
         "tensor a.weight: data_offsets [24, 0] end before they begin"},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}" + b_entry,
         "tensor a.weight: shape [2, 3] holds 24 bytes of F32, but data_offsets [0, 20] span 20"},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[20,32]}}",
         "tensor b: data_offsets [20, 32] overlap the previous tensor"},
        {"{\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[4,28]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[28,36]}}",
         "tensor a.weight: data_offsets [4, 28] leave a gap"},
        {"{\"__metadata__\":{\"format\":1},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}" +
             b_entry,
         "__metadata__.format is an integer, expected a string"},
        {"{\"a.weight\":[]" + b_entry, "tensor a.weight: expected an object, got an array"},
    };
    for (const auto& [header, what] : cases) {
        INFO(header);
        CHECK_THAT(read_error(path, make_file(header, data), tiny_layout()), StartsWith(path + ": " + what));
    }
    // Bytes after the last tensor.
    CHECK_THAT(read_error(path, safetensors_encode(tiny_layout().named_tensors(), tiny_params) + "xxxx", tiny_layout()),
               StartsWith(path + ": 4 bytes after the last tensor's data"));
}

TEST_CASE("safetensors: a missing, extra or misshapen tensor against the model's layout", "[checkpoint]") {
    ckpt_temp_dir dir("layout");
    const std::string path = dir / "model.safetensors";

    param_layout only_a;
    only_a.add("a.weight", {2, 3}, param_init::normal, true);
    const std::vector<float> a_params(tiny_params.begin(), tiny_params.begin() + 6);
    CHECK(read_error(path, safetensors_encode(only_a.named_tensors(), a_params), tiny_layout()) ==
          path + ": does not match the model of this config: missing tensor b");

    param_layout with_c = tiny_layout();
    with_c.add("c", {1}, param_init::zeros, false);
    std::vector<float> c_params = tiny_params;
    c_params.push_back(9);
    CHECK(read_error(path, safetensors_encode(with_c.named_tensors(), c_params), tiny_layout()) ==
          path + ": does not match the model of this config: unexpected tensor c");

    param_layout renamed;
    renamed.add("a.weight", {2, 3}, param_init::normal, true);
    renamed.add("b2", {3}, param_init::zeros, false);
    CHECK(read_error(path, safetensors_encode(renamed.named_tensors(), tiny_params), tiny_layout()) ==
          path +
              ": does not match the model of this config: missing tensor b; "
              "unexpected tensor b2");

    param_layout transposed;
    transposed.add("a.weight", {3, 2}, param_init::normal, true);
    transposed.add("b", {3}, param_init::zeros, false);
    CHECK(read_error(path, safetensors_encode(transposed.named_tensors(), tiny_params), tiny_layout()) ==
          path + ": a.weight: shape [3, 2] in file, model expects [2, 3]");

    param_layout big, small;
    big.add("blocks.0.attn.q.weight", {64, 64}, param_init::normal, true);
    small.add("blocks.0.attn.q.weight", {32, 32}, param_init::normal, true);
    CHECK(read_error(path, safetensors_encode(big.named_tensors(), std::vector<float>(big.total())), small) ==
          path + ": blocks.0.attn.q.weight: shape [64, 64] in file, model expects [32, 32]");
}

TEST_CASE("checkpoint: loading a checkpoint of another model leaves the model unchanged", "[checkpoint]") {
    ckpt_temp_dir dir("mismatch");
    transformer<float> gelu(small_model(2, 16, mlp_kind::gelu, position_kind::learned), attention_config{}, 10, 12);
    transformer<float> swiglu(small_model(2, 16, mlp_kind::swiglu, position_kind::learned), attention_config{}, 10, 12);
    gelu.init_params(1);
    swiglu.init_params(2);
    const std::vector<float> before = swiglu.params;
    checkpoint_save(dir / "gelu.safetensors", gelu);
    try {
        checkpoint_load(dir / "gelu.safetensors", swiglu);
        FAIL("no io_error");
    } catch (const io_error& e) {
        CHECK_THAT(std::string(e.what()), StartsWith(dir / "gelu.safetensors" + ": does not match the model"));
        CHECK_THAT(std::string(e.what()), Contains("missing tensors blocks.0.mlp.gate.weight"));
        CHECK_THAT(std::string(e.what()), Contains("unexpected tensors blocks.0.mlp.up.bias"));
    }
    CHECK(swiglu.params == before);
    CHECK_THROWS_AS(checkpoint_load(dir / "absent.safetensors", swiglu), io_error);
}

// ---------------------------------------------------------------- end to end

TEST_CASE("eval: a trained run's checkpoint reproduces the last test row of metrics.csv", "[checkpoint]") {
    ckpt_temp_dir dir("e2e");
    const experiment_spec spec = parse_spec(tiny_lookup_spec("tiny", 20, 10, ""), "tiny.yaml");
    REQUIRE(spec.runs.size() == 1);
    runner_options ro;
    ro.out_root = dir.path.string();
    const auto log_level = spdlog::get_level();
    spdlog::set_level(spdlog::level::warn);  // keep the test output quiet
    const sweep_outcome res = run_sweep(spec, ro);
    // A run that diverges (lr 1e30: at step 2) saves nothing.
    std::string div_text = tiny_lookup_spec("div", 20, 10, "");
    div_text.replace(div_text.find("lr: 1.0e-3"), 10, "lr: 1.0e+30");
    const experiment_spec div_spec = parse_spec(div_text, "div.yaml");
    const sweep_outcome div = run_sweep(div_spec, ro);
    spdlog::set_level(log_level);
    REQUIRE(res.ok == 1);
    REQUIRE(div.diverged == 1);
    const std::string run_dir = res.dir + "/runs/" + spec.runs[0].id;
    REQUIRE(fs::is_regular_file(run_dir + "/model.safetensors"));
    REQUIRE(fs::is_regular_file(run_dir + "/result.yaml"));
    CHECK_FALSE(fs::exists(run_dir + "/model.safetensors.tmp"));

    // The last test row: step,split,loss,token_acc,seq_acc,...
    std::istringstream csv(read_file(run_dir + "/metrics.csv"));
    std::vector<std::string> last_test;
    for (std::string line; std::getline(csv, line);) {
        auto f = csv_fields(line);
        if (f.size() > 4 && f[1] == "test") last_test = f;
    }
    REQUIRE(last_test.size() > 4);
    CHECK(last_test[0] == "20");

    const std::string expected =
        "test loss " + last_test[2] + " token_acc " + last_test[3] + " seq_acc " + last_test[4] + "\n";
    const cli_result r = run_cli({"eval", run_dir});
    INFO("stderr: " << r.err);
    CHECK(r.code == 0);
    CHECK(r.out == expected);
    CHECK(r.err.empty());

    // In process, the same numbers.
    const eval_metrics m = evaluate_run_dir(run_dir);
    CHECK("test loss " + format_number(m.loss) + " token_acc " + format_number(m.token_acc) + " seq_acc " +
              format_number(m.seq_acc) + "\n" ==
          expected);

    // A truncated copy of the checkpoint: exit 1, one error line naming the file.
    const std::string bad_dir = dir / "bad_run";
    fs::create_directories(bad_dir);
    fs::copy_file(run_dir + "/config.yaml", bad_dir + "/config.yaml");
    const std::string ckpt = read_file(run_dir + "/model.safetensors");
    write_file_atomic(bad_dir + "/model.safetensors", ckpt.substr(0, ckpt.size() / 2));
    const cli_result bad = run_cli({"eval", bad_dir});
    CHECK(bad.code == 1);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, StartsWith("attnlab: error: " + bad_dir + "/model.safetensors: data section truncated"));
    CHECK(count_of(bad.err, "\n") == 1);
    CHECK(bad.err.back() == '\n');

    // No checkpoint at all, and no run directory.
    fs::remove(bad_dir + "/model.safetensors");
    const cli_result none = run_cli({"eval", bad_dir});
    CHECK(none.code == 1);
    CHECK_THAT(none.err, StartsWith("attnlab: error: " + bad_dir + "/model.safetensors: no such checkpoint file"));
    const std::string div_dir = div.dir + "/runs/" + div_spec.runs[0].id;
    CHECK(fs::is_regular_file(div_dir + "/result.yaml"));
    CHECK_FALSE(fs::exists(div_dir + "/model.safetensors"));
    const cli_result diverged = run_cli({"eval", div_dir});
    CHECK(diverged.code == 1);
    CHECK(diverged.err == "attnlab: error: " + div_dir +
                              "/model.safetensors: no such checkpoint file (the run diverged, so nothing was saved)\n");
    const cli_result nodir = run_cli({"eval", dir / "nope"});
    CHECK(nodir.code == 2);
    CHECK(nodir.err == "attnlab: error: " + (dir / "nope") + ": no such run directory\n");
}

TEST_CASE("train.init: a run starts from another run's checkpoint, checked by name, shape and sha256 at load",
          "[checkpoint][spec]") {
    ckpt_temp_dir dir("init");
    runner_options ro;
    ro.out_root = (dir.path / "results").string();
    const auto log_level = spdlog::get_level();
    spdlog::set_level(spdlog::level::warn);
    const experiment_spec first = parse_spec(tiny_lookup_spec("first", 20, 10, ""), "first.yaml");
    const sweep_outcome trained = run_sweep(first, ro);
    REQUIRE(trained.ok == 1);
    const std::string from = trained.dir + "/runs/" + first.runs[0].id;
    const std::string ckpt = from + "/model.safetensors";

    // Fine-tuning spec: the same model, train.init naming the run folder.
    auto tuning = [&](const std::string& name, const std::string& train_extra, const std::string& attention) {
        std::string text = tiny_lookup_spec(name, 10, 5, "");
        text.replace(text.find("eval_every: 5}"), 14, "eval_every: 5" + train_extra + "}");
        if (!attention.empty()) text.replace(text.find("{numerator: exp, denominator: softmax}"), 38, attention);
        return text;
    };
    const std::string init = ", init: \"" + from + "\"";
    const experiment_spec tuned = parse_spec(tuning("tuned", init, ""), "tuned.yaml");
    REQUIRE(tuned.runs.size() == 1);
    CHECK(tuned.runs[0].config.train.init == ckpt);
    CHECK(tuned.runs[0].config.train.init_sha256 == sha256_hex(read_file(ckpt)));
    const sweep_outcome fine = run_sweep(tuned, ro);
    REQUIRE(fine.ok == 1);
    // Its step-0 validation row scores the checkpoint as loaded: the first run's last validation row.
    auto val_loss_at = [](const std::string& run_dir, const std::string& step) {
        std::istringstream csv(read_file(run_dir + "/metrics.csv"));
        for (std::string line; std::getline(csv, line);) {
            const auto f = csv_fields(line);
            if (f.size() > 2 && f[0] == step && f[1] == "val") return f[2];
        }
        return std::string("(no row)");
    };
    const std::string tuned_dir = fine.dir + "/runs/" + tuned.runs[0].id;
    CHECK(val_loss_at(tuned_dir, "0") == val_loss_at(from, "20"));
    CHECK(val_loss_at(tuned_dir, "0") != val_loss_at(from, "0"));  // not the random start
    CHECK_THAT(read_file(tuned_dir + "/config.yaml"), Contains("init_sha256: \"" + sha256_hex(read_file(ckpt))));
    // Another variant with the same parameters (exp to taylor) may start from it.
    CHECK_NOTHROW(parse_spec(tuning("taylor", init, "{numerator: taylor, order: 2, denominator: softmax}"), "t.yaml"));

    // Summarized where the checkpoint is not (git keeps none): the finished run's record of it
    // (path and sha256) stands when it names the same run folder, and the summary is unchanged.
    CHECK(checkpoint_run_folder(ckpt) == checkpoint_run_folder(from + "/"));
    CHECK(checkpoint_run_folder("/a/results/first/runs/seed=0/model.safetensors") == "first/runs/seed=0");
    CHECK(checkpoint_run_folder("/b/results/first/runs/seed=1") != checkpoint_run_folder("/a/first/runs/seed=0"));
    {
        const std::string summary_before = read_file(fine.dir + "/summary.csv");
        CHECK_THAT(summary_before, Contains(sha256_hex(read_file(ckpt))));
        fs::rename(ckpt, ckpt + ".kept");
        const summarize_outcome s = summarize_sweep_dir(fine.dir);
        fs::rename(ckpt + ".kept", ckpt);
        CHECK(s.found == 1);
        CHECK(read_file(fine.dir + "/summary.csv") == summary_before);
    }

    struct bad_case {
        std::string what, train_extra, model, key, words;
    };
    const std::vector<bad_case> cases = {
        {"other shapes", init, "{layers: 1, d_model: 32, heads: 2}", "base.train.init",
         "cannot start from this checkpoint: " + ckpt},
        {"no such file", ", init: \"" + from + "/nope.safetensors\"", "", "base.train.init", "nope.safetensors"},
        {"other bytes", init + ", init_sha256: " + std::string(64, 'e'), "", "base.train.init_sha256", "not the eeee"},
        {"a hash without a file", ", init_sha256: " + std::string(64, 'e'), "", "base.train",
         "of train.init, which is not set"},
    };
    for (const bad_case& c : cases) {
        INFO(c.what);
        std::string text = tuning("bad", c.train_extra, "");
        if (!c.model.empty()) text.replace(text.find("{layers: 1, d_model: 16, heads: 2}"), 34, c.model);
        try {
            parse_spec(text, "bad.yaml");
            FAIL("accepted");
        } catch (const config_error& e) {
            CHECK_THAT(e.what(), StartsWith("bad.yaml:"));
            CHECK_THAT(e.what(), Contains(c.key));
            CHECK_THAT(e.what(), Contains(c.words));
        }
    }

    // The checkpoint replaced after the spec was loaded: training refuses it, naming both hashes.
    const experiment_spec again = parse_spec(tuning("again", init, ""), "again.yaml");
    const std::string bytes = read_file(ckpt);
    std::string changed = bytes;
    changed[changed.size() - 1] ^= 0x01;  // the last parameter's lowest bit
    write_file_atomic(ckpt, changed);
    try {
        run_sweep(again, ro);
        FAIL("trained from a changed checkpoint");
    } catch (const std::exception& e) {
        CHECK_THAT(e.what(), StartsWith("train.init: " + ckpt + " has changed since the spec was loaded"));
    }
    spdlog::set_level(log_level);
}
