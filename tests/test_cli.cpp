// The attnlab command line, end to end (docs/spec-reference.md, docs/outputs.md, docs/spec-reference.md):
// the built binary is run as a child process with stdout and stderr captured
// separately, and its exit code (0 ok, 2 bad input, 1 other failure, 130
// interrupted), its one-line errors and the files it writes are checked.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attnlab/io/safetensors.hpp"
#include "attnlab/model/make_model.hpp"
#include "attnlab/spec/spec.hpp"
#include "support/process_support.hpp"
#include "support/run_results.hpp"
#include "support/tiny_spec.hpp"

namespace fs = std::filesystem;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// Asserts that stderr is exactly one line "attnlab: error: <rest>" and returns <rest>.
std::string single_error(const cli_result& r) {
    INFO("stderr: " << r.err);
    REQUIRE(count_of(r.err, "\n") == 1);
    REQUIRE_THAT(r.err, EndsWith("\n"));
    REQUIRE_THAT(r.err, StartsWith("attnlab: error: "));
    return r.err.substr(16, r.err.size() - 17);
}

// A tiny training spec: 2 seeds, 25 steps, train+test rows at steps 10, 20, 25;
// a comment first (the model is on line 6).
const std::string tiny_spec =
    "# two seeds of a tiny lookup model\n" + tiny_lookup_spec("tiny", 25, 10, "seeds: [0, 1]\n");

// The folder of a test that runs tiny_spec (spec, out and res).
struct tiny_spec_dir : spec_in_temp_dir {
    tiny_spec_dir() : spec_in_temp_dir("tiny", tiny_spec) {}
};

// A 2 x 2 grid crossed with 2 seeds; the line numbers are the ones the error tests use.
const std::string grid_spec = R"(name: grid
base:
  seed: 0
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}
  model:
    layers: 1
    d_model: 16
    heads: 2
  attention: {numerator: exp, denominator: softmax}
  train:
    steps: 20
    batch: 4
    lr: 1.0e-3
    warmup: 2
    eval_every: 10
sweep:
  train.lr: [1.0e-3, 3.0e-3]
  model.mlp: [swiglu, gelu]
seeds: [0, 1]
)";

const std::vector<std::string> grid_ids = {
    "train.lr=0.001,model.mlp=swiglu,seed=0", "train.lr=0.001,model.mlp=swiglu,seed=1",
    "train.lr=0.001,model.mlp=gelu,seed=0",   "train.lr=0.001,model.mlp=gelu,seed=1",
    "train.lr=0.003,model.mlp=swiglu,seed=0", "train.lr=0.003,model.mlp=swiglu,seed=1",
    "train.lr=0.003,model.mlp=gelu,seed=0",   "train.lr=0.003,model.mlp=gelu,seed=1",
};

// `text` with one exact, unique piece replaced.
std::string replaced_once(const std::string& text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(text.find(from, at + 1) == std::string::npos);
    std::string out = text;
    return out.replace(at, from.size(), to);
}

const std::string metrics_header = "step,split,loss,token_acc,seq_acc,lr,grad_norm,tokens_per_s,elapsed_s";

// (step, split) of each data row of a metrics.csv, after checking its header and widths.
std::vector<std::pair<int, std::string>> metrics_rows(const fs::path& p) {
    const auto lines = lines_of(read_text(p));
    REQUIRE(!lines.empty());
    REQUIRE(lines[0] == metrics_header);
    std::vector<std::pair<int, std::string>> rows;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto f = csv_fields(lines[i]);
        INFO("metrics line: " << lines[i]);
        REQUIRE(f.size() == 9);
        rows.emplace_back(std::stoi(f[0]), f[1]);
    }
    return rows;
}

bool is_empty_or_absent(const fs::path& dir) { return !fs::exists(dir) || fs::is_empty(dir); }

}  // namespace

TEST_CASE("attnlab --version and --help", "[cli]") {
    SECTION("--version prints the project version") {
        const auto r = run_cli({"--version"});
        CHECK(r.code == 0);
        CHECK(r.out == std::string("attnlab ") + ATTNLAB_VERSION + "\n");
        CHECK(r.err.empty());
    }
    SECTION("--help lists the verbs") {
        const auto r = run_cli({"--help"});
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Contains("run") && Contains("validate") && Contains("list") && Contains("--version"));
    }
    SECTION("run --help lists its options") {
        const auto r = run_cli({"run", "--help"});
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Contains("SPEC") && Contains("--out") && Contains("--set") && Contains("--threads"));
    }
    for (const std::string verb : {"validate", "list"}) {
        DYNAMIC_SECTION(verb << " --help lists its options") {
            const auto r = run_cli({verb, "--help"});
            CHECK(r.code == 0);
            CHECK_THAT(r.out, Contains("SPEC") && Contains("--set"));
            CHECK_THAT(r.out, !Contains("--out") && !Contains("--threads"));
        }
    }
}

TEST_CASE("attnlab rejects a bad command line with exit code 2", "[cli]") {
    temp_dir dir;
    const fs::path spec = dir / "tiny.yaml";
    write_text(spec, tiny_spec);
    const fs::path out = dir / "out";
    const std::vector<std::vector<std::string>> bad = {
        {},                                                        // no subcommand
        {"--bogus"},                                               // unknown app option
        {"frobnicate", spec.string()},                             // unknown verb
        {"validate"},                                              // no SPEC
        {"list"},                                                  // no SPEC
        {"validate", spec.string(), "--bogus"},                    // unknown verb option
        {"validate", spec.string(), spec.string()},                // two SPECs
        {"run", spec.string(), "--out", out.string(), "--bogus"},  // unknown run option
        {"run", spec.string(), "--out", out.string(), "--threads", "-1"},
        {"run", spec.string(), "--out", out.string(), "--threads", "two"},
        {"run", "--out", out.string()},  // no SPEC
    };
    for (const auto& args : bad) {
        std::string cmd = "attnlab";
        for (const auto& a : args) cmd += " " + a;
        INFO(cmd);
        const auto r = run_cli(args);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(!r.err.empty());
        CHECK(is_empty_or_absent(out));
    }
}

TEST_CASE("attnlab validate accepts a good spec and names its run count", "[cli]") {
    temp_dir dir;
    const fs::path grid = dir / "grid.yaml", tiny = dir / "tiny.yaml";
    write_text(grid, grid_spec);
    write_text(tiny, replaced_once(tiny_spec, "seeds: [0, 1]\n", ""));

    auto r = run_cli({"validate", grid.string()});
    CHECK(r.code == 0);
    CHECK(r.out == grid.string() + ": ok, 8 runs (grid)\n");
    CHECK(r.err.empty());

    r = run_cli({"validate", tiny.string()});  // no sweep, no seeds: one run
    CHECK(r.code == 0);
    CHECK(r.out == tiny.string() + ": ok, 1 run (tiny)\n");

    r = run_cli({"validate", grid.string(), "--set", "train.steps=50", "--set", "model.layers=2"});
    CHECK(r.code == 0);
    CHECK(r.out == grid.string() + ": ok, 8 runs (grid)\n");

    r = run_cli({"validate", "--set", "train.steps=50", grid.string()});  // --set before SPEC
    CHECK(r.code == 0);
    CHECK(r.out == grid.string() + ": ok, 8 runs (grid)\n");
}

TEST_CASE("attnlab validate reports a bad spec in one line with file, line and key path", "[cli]") {
    struct bad_case {
        const char* what;
        std::string text;
        int line;
        std::string key;    // the key path ("" for whole-file errors)
        std::string words;  // a piece of the message
    };
    const std::vector<bad_case> cases = {
        {"unknown key", replaced_once(grid_spec, "    heads: 2\n", "    heads: 2\n    hedas: 3\n"), 9,
         "base.model.hedas", "unknown key"},
        {"unknown top-level key", grid_spec + "extra: 1\n", 20, "extra", "unknown key"},
        {"wrong type", replaced_once(grid_spec, "batch: 4", "batch: four"), 12, "base.train.batch", "integer"},
        {"quoted number", replaced_once(grid_spec, "lr: 1.0e-3\n", "lr: \"0.001\"\n"), 13, "base.train.lr", "number"},
        {"out of range", replaced_once(grid_spec, "layers: 1", "layers: 0"), 6, "base.model.layers", ""},
        {"bad enum", replaced_once(grid_spec, "denominator: softmax", "denominator: sofmax"), 9,
         "base.attention.denominator", "softmax"},
        {"missing required key", replaced_once(grid_spec, "    steps: 20\n", ""), 10, "base.train.steps", "missing"},
        {"unknown swept key", replaced_once(grid_spec, "model.mlp: [swiglu, gelu]", "model.mpl: [swiglu, gelu]"), 18,
         "sweep.model.mpl", "unknown key"},
        {"bad swept value", replaced_once(grid_spec, "model.mlp: [swiglu, gelu]", "model.mlp: [swiglu, relu]"), 18,
         "sweep.model.mlp", "relu"},
        {"bad seeds", replaced_once(grid_spec, "seeds: [0, 1]", "seeds: [0, -1]"), 19, "seeds", ""},
        {"bad sweep point", replaced_once(grid_spec, "model.mlp: [swiglu, gelu]", "model.heads: [2, 3]"), 18,
         "sweep.model.heads", "model.heads=3"},
        {"YAML syntax error", replaced_once(grid_spec, "    steps: 20\n", "    steps: 20\n      batch: 4\n"), 12, "",
         "YAML syntax error"},
        {"unclosed flow map", replaced_once(grid_spec, "softmax}\n", "softmax\n"), 9, "",
         "YAML syntax error: end of map flow not found: the '{' on this line is still open at line 10"},
    };
    temp_dir dir;
    const fs::path spec = dir / "bad.yaml";
    for (const auto& c : cases) {
        INFO(c.what);
        write_text(spec, c.text);
        for (const std::string verb : {"validate", "list"}) {
            INFO(verb);
            const auto r = run_cli({verb, spec.string()});
            CHECK(r.code == 2);
            CHECK(r.out.empty());
            const std::string msg = single_error(r);
            const std::string where = spec.string() + ":" + std::to_string(c.line) + ": ";
            CHECK_THAT(msg, StartsWith(where));
            if (!c.key.empty()) CHECK_THAT(msg, StartsWith(where + c.key + ": "));
            CHECK_THAT(msg, Contains(c.words));
        }
    }
}

TEST_CASE("attnlab validate on a missing or unreadable file", "[cli]") {
    temp_dir dir;
    SECTION("missing file: exit 2, '<file>: cannot read: <reason>'") {
        const fs::path missing = dir / "no_such_spec.yaml";
        const auto r = run_cli({"validate", missing.string()});
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(single_error(r), StartsWith(missing.string() + ": cannot read: "));
    }
    SECTION("a directory: exit 2") {
        const auto r = run_cli({"validate", dir.path().string()});
        CHECK(r.code == 2);
        CHECK_THAT(single_error(r), StartsWith(dir.path().string() + ": cannot read: "));
    }
    SECTION("an empty file: exit 2, error at line 1") {
        const fs::path empty = dir / "empty.yaml";
        write_text(empty, "");
        const auto r = run_cli({"validate", empty.string()});
        CHECK(r.code == 2);
        CHECK_THAT(single_error(r), StartsWith(empty.string() + ":1: "));
    }
}

TEST_CASE("attnlab list prints the run ids in order", "[cli]") {
    temp_dir dir;
    const fs::path grid = dir / "grid.yaml";
    write_text(grid, grid_spec);

    const auto r = run_cli({"list", grid.string()});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(lines_of(r.out) == grid_ids);
    CHECK_THAT(r.out, EndsWith("\n"));

    SECTION("--set of an unswept key changes no id") {
        const auto s = run_cli({"list", grid.string(), "--set", "train.steps=10", "--set", "model.layers=2"});
        CHECK(s.code == 0);
        CHECK(s.out == r.out);
    }
    SECTION("no sweep, no seeds: one run named by the base seed") {
        const fs::path tiny = dir / "tiny.yaml";
        write_text(tiny, replaced_once(tiny_spec, "seeds: [0, 1]\n", ""));
        auto s = run_cli({"list", tiny.string()});
        CHECK(s.code == 0);
        CHECK(s.out == "seed=0\n");
        s = run_cli({"list", tiny.string(), "--set", "seed=7"});
        CHECK(s.code == 0);
        CHECK(s.out == "seed=7\n");
    }
    SECTION("a union of grids lists a repeated point once, at its first place") {
        const fs::path u = dir / "union.yaml";
        write_text(u, replaced_once(grid_spec, "  train.lr: [1.0e-3, 3.0e-3]\n  model.mlp: [swiglu, gelu]\n",
                                    "  - {model.mlp: [gelu, none]}\n  - {model.mlp: [swiglu, gelu]}\n"));
        const auto s = run_cli({"list", u.string()});
        CHECK(s.code == 0);
        CHECK(lines_of(s.out) == std::vector<std::string>{"model.mlp=gelu,seed=0", "model.mlp=gelu,seed=1",
                                                          "model.mlp=none,seed=0", "model.mlp=none,seed=1",
                                                          "model.mlp=swiglu,seed=0", "model.mlp=swiglu,seed=1"});
    }
}

TEST_CASE("attnlab list --json, --init-dir and --sweep-dir: the resolved runs for another trainer", "[cli]") {
    temp_dir dir;
    const fs::path spec = dir / "tiny.yaml";
    write_text(spec, tiny_spec);
    const auto r = run_cli({"list", spec.string(), "--json", "--init-dir", (dir / "init").string(), "--sweep-dir",
                            (dir / "out").string()});
    REQUIRE(r.code == 0);
    const attnlab::experiment_spec loaded = attnlab::load_spec(spec.string(), {});
    REQUIRE(loaded.runs.size() == 2);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["name"] == "tiny");
    REQUIRE(j["runs"].size() == 2);
    for (std::size_t i = 0; i < loaded.runs.size(); ++i) {
        const attnlab::run_point& run = loaded.runs[i];
        INFO(run.id);
        const nlohmann::json& jr = j["runs"][i];
        CHECK(jr["id"] == run.id);
        // The config.yaml attnlab run writes, byte for byte.
        CHECK(jr["config_yaml"] == attnlab::run_config_to_yaml(run.config));
        attnlab::transformer<float> model = attnlab::make_model<float>(run.config);
        model.init_params(static_cast<std::uint64_t>(run.config.seed));
        CHECK(jr["vocab"] == model.vocab());
        CHECK(jr["max_positions"] == model.max_T());
        CHECK(jr["params"] == model.params.size());
        // The initial weights are the trainer's, from the run's seed (seeds differ, so do the files).
        const std::vector<float> init = attnlab::safetensors_read((dir / "init" / (run.id + ".safetensors")).string(),
                                                                  model.layout().named_tensors());
        CHECK(init == model.params);
    }
    // The sweep's folder as attnlab run writes it: summarize finds its spec there.
    CHECK(fs::is_regular_file(dir / "out" / "tiny" / "spec.yaml"));
    CHECK(fs::is_regular_file(dir / "out" / "tiny" / "overrides.yaml"));
    CHECK(fs::is_regular_file(dir / "out" / "tiny" / "spec_folder.txt"));
    // Without --json, the ids as before.
    CHECK(lines_of(run_cli({"list", spec.string()}).out) == std::vector<std::string>{"seed=0", "seed=1"});
}

TEST_CASE("attnlab list and validate reject a bad --set with exit code 2", "[cli]") {
    temp_dir dir;
    const fs::path grid = dir / "grid.yaml";
    write_text(grid, grid_spec);
    struct bad_set {
        std::string arg, words;
    };
    const std::vector<bad_set> cases = {
        {"train.stepz=10", "--set: train.stepz: unknown key"},
        {"nope=1", "--set: nope: unknown key"},
        {"train.steps", "--set: expected dotted.key=value"},
        {"=3", "--set: expected dotted.key=value"},
        {"train.steps=0", "--set: train.steps: "},
        {"train.steps=ten", "--set: train.steps: "},
        {"train.lr=0.1", "--set: train.lr: is swept in the spec"},
        {"seed=3", "--set: seed: is swept in the spec"},
    };
    for (const auto& c : cases) {
        for (const std::string verb : {"list", "validate"}) {
            INFO(verb << " --set " << c.arg);
            const auto r = run_cli({verb, grid.string(), "--set", c.arg});
            CHECK(r.code == 2);
            CHECK(r.out.empty());
            CHECK_THAT(single_error(r), StartsWith(c.words));
        }
    }
}

TEST_CASE("attnlab run on a bad spec writes nothing", "[cli]") {
    temp_dir dir;
    const fs::path spec = dir / "bad.yaml";
    const fs::path out = dir / "out";
    SECTION("unknown key, --out absent") {
        write_text(spec, replaced_once(tiny_spec, "heads: 2}", "heads: 2, hedas: 3}"));
        const auto r = run_cli({"run", spec.string(), "--out", out.string()});
        CHECK(r.code == 2);
        CHECK_THAT(single_error(r), StartsWith(spec.string() + ":6: base.model.hedas: "));
        CHECK(!fs::exists(out));
    }
    SECTION("YAML syntax error, --out exists and stays empty") {
        write_text(spec, replaced_once(tiny_spec, "seeds: [0, 1]", "seeds: [0, 1"));
        fs::create_directory(out);
        const auto r = run_cli({"run", spec.string(), "--out", out.string()});
        CHECK(r.code == 2);
        CHECK_THAT(single_error(r), Contains("YAML syntax error"));
        CHECK(fs::is_empty(out));
    }
    SECTION("bad --set") {
        write_text(spec, tiny_spec);
        const auto r = run_cli({"run", spec.string(), "--out", out.string(), "--set", "train.steps=-5"});
        CHECK(r.code == 2);
        CHECK_THAT(single_error(r), StartsWith("--set: train.steps: "));
        CHECK(!fs::exists(out));
    }
    SECTION("missing spec") {
        const auto r = run_cli({"run", (dir / "missing.yaml").string(), "--out", out.string()});
        CHECK(r.code == 2);
        CHECK(!fs::exists(out));
    }
    SECTION("default --out: nothing appears in the working directory") {
        write_text(spec, replaced_once(tiny_spec, "batch: 4", "batch: 0"));
        const fs::path cwd = dir / "cwd";
        fs::create_directory(cwd);
        const auto r = run_cli({"run", spec.string()}, cwd);
        CHECK(r.code == 2);
        CHECK(fs::is_empty(cwd));
    }
}

TEST_CASE_METHOD(tiny_spec_dir, "attnlab run writes the results tree and skips finished runs", "[cli]") {
    const std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "1"};

    const auto r = run_cli(cmd);
    INFO("stderr:\n" << r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.empty());  // progress goes to stderr only
    CHECK_THAT(r.err, Contains("2 runs (2 trained ok, 0 diverged, 0 skipped as done)"));

    // spec.yaml: the spec as run.
    REQUIRE(fs::is_regular_file(res / "spec.yaml"));
    const std::string spec_yaml = read_text(res / "spec.yaml");
    CHECK_THAT(spec_yaml, Contains(tiny_spec));

    // summary.csv: one row per run, in run order, status ok.
    REQUIRE(fs::is_regular_file(res / "summary.csv"));
    const std::string summary = read_text(res / "summary.csv");
    const auto sum_lines = lines_of(summary);
    REQUIRE(sum_lines.size() == 3);
    CHECK_THAT(sum_lines[0], StartsWith("run_id,status,seed,"));
    const auto header = csv_fields(sum_lines[0]);
    for (const char* col : {"final_test_loss", "final_test_token_acc", "final_test_seq_acc", "best_test_token_acc",
                            "steps", "wall_s", "params"})
        CHECK(std::find(header.begin(), header.end(), col) != header.end());
    const auto steps_col = std::find(header.begin(), header.end(), "steps") - header.begin();
    for (int seed = 0; seed < 2; ++seed) {
        const auto row = csv_fields(sum_lines[seed + 1]);
        INFO(sum_lines[seed + 1]);
        REQUIRE(row.size() == header.size());
        CHECK(row[0] == "seed=" + std::to_string(seed));
        CHECK(row[1] == "ok");
        CHECK(row[2] == std::to_string(seed));
        CHECK(row[steps_col] == "25");
    }

    // table.md: mean ± std over the two seeds.
    REQUIRE(fs::is_regular_file(res / "table.md"));
    const std::string table = read_text(res / "table.md");
    CHECK_THAT(table, Contains("# tiny") && Contains("token_acc") && Contains("±"));

    // Each run: config.yaml, metrics.csv, result.yaml.
    for (int seed = 0; seed < 2; ++seed) {
        const fs::path run = res / "runs" / ("seed=" + std::to_string(seed));
        INFO(run);
        REQUIRE(fs::is_regular_file(run / "config.yaml"));
        const std::string config = read_text(run / "config.yaml");
        CHECK_THAT(config, StartsWith("seed: " + std::to_string(seed) + "\n"));
        CHECK_THAT(config, Contains("  steps: 25\n") && Contains("  eval_every: 10\n") && Contains("  kind: lookup\n"));
        REQUIRE(fs::is_regular_file(run / "metrics.csv"));
        const auto rows = metrics_rows(run / "metrics.csv");
        const std::vector<std::pair<int, std::string>> expected = {
            {0, "val"},  {0, "test"},  {10, "train"}, {10, "val"}, {10, "test"}, {20, "train"},
            {20, "val"}, {20, "test"}, {25, "train"}, {25, "val"}, {25, "test"}};
        CHECK(rows == expected);
        REQUIRE(fs::is_regular_file(run / "result.yaml"));
        const std::string result = read_text(run / "result.yaml");
        CHECK_THAT(result, Contains("status: ok\n") && Contains("steps: 25\n"));
    }

    SECTION("running the same command again skips every run") {
        std::vector<std::string> metrics_before, results_before;
        for (int seed = 0; seed < 2; ++seed) {
            const fs::path run = res / "runs" / ("seed=" + std::to_string(seed));
            metrics_before.push_back(read_text(run / "metrics.csv"));
            results_before.push_back(read_text(run / "result.yaml"));
        }
        const auto again = run_cli(cmd);
        INFO("stderr:\n" << again.err);
        CHECK(again.code == 0);
        CHECK(again.out.empty());
        CHECK(count_of(again.err, "already done (ok), skipped") == 2);
        CHECK_THAT(again.err, Contains("0 trained ok, 0 diverged, 2 skipped as done"));
        for (int seed = 0; seed < 2; ++seed) {
            const fs::path run = res / "runs" / ("seed=" + std::to_string(seed));
            CHECK(read_text(run / "metrics.csv") == metrics_before[seed]);
            CHECK(read_text(run / "result.yaml") == results_before[seed]);
        }
        CHECK(read_text(res / "summary.csv") == summary);
        CHECK(read_text(res / "table.md") == table);
        CHECK(read_text(res / "spec.yaml") == spec_yaml);
    }
    SECTION("a run whose result.yaml is gone is redone, the other is skipped") {
        fs::remove(res / "runs" / "seed=1" / "result.yaml");
        const auto again = run_cli(cmd);
        INFO("stderr:\n" << again.err);
        CHECK(again.code == 0);
        CHECK_THAT(again.err, Contains("seed=0] already done (ok), skipped"));
        CHECK_THAT(again.err, Contains("1 trained ok, 0 diverged, 1 skipped as done"));
        CHECK(fs::is_regular_file(res / "runs" / "seed=1" / "result.yaml"));
        CHECK(lines_of(read_text(res / "summary.csv")).size() == 3);
    }
}

TEST_CASE_METHOD(tiny_spec_dir, "attnlab run applies --set to every run", "[cli]") {
    auto check_steps = [&](int steps) {
        for (int seed = 0; seed < 2; ++seed) {
            const fs::path run = res / "runs" / ("seed=" + std::to_string(seed));
            INFO(run);
            CHECK_THAT(read_text(run / "config.yaml"), Contains("  steps: " + std::to_string(steps) + "\n"));
            const auto rows = metrics_rows(run / "metrics.csv");
            REQUIRE(!rows.empty());
            CHECK(rows.back() == std::make_pair(steps, std::string("test")));
            CHECK_THAT(read_text(run / "result.yaml"), Contains("steps: " + std::to_string(steps) + "\n"));
        }
    };

    auto r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--set", "train.steps=10"});
    INFO("stderr:\n" << r.err);
    REQUIRE(r.code == 0);
    check_steps(10);
    CHECK_THAT(read_text(res / "spec.yaml"), Contains("--set train.steps=10"));

    // Without the --set the configuration differs: the finished runs are kept (refused, exit 2) ...
    r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("train.steps 10 -> 25"));
    check_steps(10);
    // ... unless --overwrite: then every run is trained again, none skipped.
    r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--overwrite"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("2 trained ok, 0 diverged, 0 skipped as done"));
    check_steps(25);

    // Later --set of the same key wins.
    r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--set", "train.steps=30", "--set",
                 "train.steps=12", "--overwrite"});
    REQUIRE(r.code == 0);
    check_steps(12);
}

TEST_CASE("attnlab run is deterministic with --threads 1", "[cli]") {
    temp_dir dir;
    const fs::path spec = dir / "tiny.yaml";
    write_text(spec, tiny_spec);
    const fs::path out1 = dir / "out1", out2 = dir / "out2";
    const auto a = run_cli({"run", spec.string(), "--out", out1.string(), "--threads", "1"});
    const auto b = run_cli({"run", spec.string(), "--out", out2.string(), "--threads", "1"});
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    for (int seed = 0; seed < 2; ++seed) {
        const fs::path run = fs::path("tiny") / "runs" / ("seed=" + std::to_string(seed));
        INFO(run);
        const std::string m1 = read_text(out1 / run / "metrics.csv"), m2 = read_text(out2 / run / "metrics.csv");
        CHECK(lines_of(m1).size() == 12);  // header, val and test at step 0, train, val and test at 10, 20, 25
        CHECK(metrics_without_timings(m1) == metrics_without_timings(m2));
        CHECK(read_text(out1 / run / "config.yaml") == read_text(out2 / run / "config.yaml"));
    }
    // Different seeds do train differently.
    CHECK(metrics_without_timings(read_text(out1 / "tiny/runs/seed=0/metrics.csv")) !=
          metrics_without_timings(read_text(out1 / "tiny/runs/seed=1/metrics.csv")));
}

TEST_CASE("attnlab run writes into the default results/ directory", "[cli]") {
    temp_dir dir;
    const fs::path spec = dir / "tiny.yaml";
    write_text(spec, tiny_spec);
    const auto r = run_cli({"run", spec.string(), "--threads", "1", "--set", "train.steps=5"}, dir.path());
    REQUIRE(r.code == 0);
    CHECK(fs::is_regular_file(dir / "results/tiny/summary.csv"));
    CHECK(fs::is_regular_file(dir / "results/tiny/runs/seed=1/result.yaml"));
}

TEST_CASE_METHOD(tiny_spec_dir, "attnlab run records a diverging run and goes on", "[cli]") {
    const auto r = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--set", "train.lr=1e30",
                            "--set", "train.clip=0"});
    INFO("stderr:\n" << r.err);
    CHECK(r.code == 0);
    CHECK_THAT(r.err, Contains("0 trained ok, 2 diverged"));
    const auto lines = lines_of(read_text(out / "tiny/summary.csv"));
    REQUIRE(lines.size() == 3);
    CHECK_THAT(lines[1], StartsWith("seed=0,diverged,"));
    CHECK_THAT(lines[2], StartsWith("seed=1,diverged,"));
    CHECK_THAT(read_text(out / "tiny/runs/seed=0/result.yaml"), Contains("status: diverged\n"));

    // A diverged run is finished too: it is skipped when the spec is run again.
    const auto again = run_cli({"run", spec.string(), "--out", out.string(), "--threads", "1", "--set", "train.lr=1e30",
                                "--set", "train.clip=0"});
    CHECK(again.code == 0);
    CHECK(count_of(again.err, "already done (diverged), skipped") == 2);
}

// [sanitized]: one of the slow tests the sanitized build runs too (signal handling and shutdown).
TEST_CASE("attnlab run stops on SIGINT with exit code 130 and keeps finished runs", "[cli][slow][sanitized]") {
    temp_dir dir;
    const fs::path spec = dir / "long.yaml";
    // The first run finishes at once; the second would take hours.
    write_text(spec, replaced_once(tiny_spec, "seeds: [0, 1]\n", "sweep:\n  train.steps: [20, 10000000]\n"));
    const fs::path out = dir / "out";
    const fs::path res = out / "tiny";
    const fs::path done_run = res / "runs" / "train.steps=20,seed=0";
    const fs::path long_run = res / "runs" / "train.steps=10000000,seed=0";
    const std::vector<std::string> cmd = {"run", spec.string(), "--out", out.string(), "--threads", "1"};

    // Starts the sweep, waits until `until` holds, sends SIGINT and returns the exit code and stderr.
    auto interrupt = [&](const std::function<bool(const std::string& err)>& until) {
        child_process c(cmd, launch_options().in(dir.path()).with_timeout(std::chrono::seconds(10)));
        c.wait_until([&] { return until(c.err()); });
        c.send(SIGINT);
        const cli_result r = c.wait();
        return std::make_pair(r.code, r.err);
    };
    auto long_run_has_rows = [&](std::size_t n) {
        std::error_code ec;
        if (!fs::is_regular_file(long_run / "metrics.csv", ec)) return false;
        return lines_of(read_text(long_run / "metrics.csv")).size() >= n + 1;
    };

    auto [code, err] = interrupt([&](const std::string&) { return long_run_has_rows(5); });
    INFO("stderr:\n" << err);
    CHECK(code == 130);
    CHECK_THAT(err, Contains("interrupted"));
    CHECK(fs::is_regular_file(done_run / "result.yaml"));
    CHECK(!fs::exists(long_run / "result.yaml"));
    CHECK(fs::is_regular_file(long_run / "config.yaml"));
    REQUIRE(fs::is_regular_file(res / "summary.csv"));
    REQUIRE(fs::is_regular_file(res / "table.md"));
    const auto sum = lines_of(read_text(res / "summary.csv"));
    REQUIRE(sum.size() == 2);                                         // header + the finished run
    CHECK_THAT(sum[1], StartsWith("\"train.steps=20,seed=0\",ok,"));  // the id has a comma: quoted
    const std::string done_metrics = read_text(done_run / "metrics.csv");

    // Run again: the finished run is skipped, the interrupted one starts over.
    auto [code2, err2] = interrupt([&](const std::string& e) {
        return e.find("[2/2 train.steps=10000000,seed=0] training") != std::string::npos && long_run_has_rows(3);
    });
    INFO("second stderr:\n" << err2);
    CHECK(code2 == 130);
    CHECK_THAT(err2, Contains("[1/2 train.steps=20,seed=0] already done (ok), skipped"));
    CHECK(read_text(done_run / "metrics.csv") == done_metrics);
    CHECK(!fs::exists(long_run / "result.yaml"));
    const auto rows = metrics_rows(long_run / "metrics.csv");
    REQUIRE(!rows.empty());
    CHECK(rows.front() == std::make_pair(0, std::string("val")));
    CHECK(lines_of(read_text(res / "summary.csv")).size() == 2);
}
