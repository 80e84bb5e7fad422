// Experiment-spec loader (docs/spec-reference.md): good specs expand to the expected runs;
// every malformed spec fails with one config_error naming file, 1-based line
// and key path.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "attnlab/io/files.hpp"
#include "attnlab/io/sha256.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/util/error.hpp"
#include "support/spec_errors.hpp"

#ifndef ATTNLAB_TEST_DATA
#define ATTNLAB_TEST_DATA "tests/data"
#endif

using namespace attnlab;
using namespace attnlab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A valid spec; the line numbers are the ones the error tests expect.
const std::string base_spec =
    "name: t\n"                   // 1
    "base:\n"                     // 2
    "  seed: 0\n"                 // 3
    "  task:\n"                   // 4
    "    kind: lookup\n"          // 5
    "    vocab: 64\n"             // 6
    "    seq_len: 32\n"           // 7
    "    pairs: 4\n"              // 8
    "  model:\n"                  // 9
    "    layers: 2\n"             // 10
    "    d_model: 32\n"           // 11
    "    heads: 2\n"              // 12
    "  attention:\n"              // 13
    "    numerator: exp\n"        // 14
    "    denominator: softmax\n"  // 15
    "  train:\n"                  // 16
    "    steps: 100\n"            // 17
    "    lr: 0.01\n"              // 18
    "    warmup: 10\n";           // 19

// The task section of base_spec, and the same four lines for the other tasks.
const std::string lookup_task = "    kind: lookup\n    vocab: 64\n    seq_len: 32\n    pairs: 4\n";
const std::string selective_copy_task = "    kind: selective_copy\n    vocab: 10\n    n_tokens: 4\n    noise_len: 12\n";
const std::string induction_task = "    kind: induction\n    vocab: 16\n    seq_len: 20\n    test_examples: 32\n";

// base_spec with one exact piece of text replaced.
std::string edit(const std::string& from, const std::string& to, std::string text = base_spec) {
    auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(text.find(from, at + 1) == std::string::npos);
    return text.replace(at, from.size(), to);
}

// The message of the config_error that parsing `yaml` must throw.
std::vector<std::string> ids(const experiment_spec& s) {
    std::vector<std::string> out;
    for (const run_point& r : s.runs) out.push_back(r.id);
    return out;
}

// run_config has no operator==; compare through every field.
void require_same(const run_config& a, const run_config& b) {
    CHECK(a.seed == b.seed);
    CHECK(a.task.kind == b.task.kind);
    CHECK(a.task.vocab == b.task.vocab);
    CHECK(a.task.seq_len == b.task.seq_len);
    CHECK(a.task.pairs == b.task.pairs);
    CHECK(a.task.power_a == b.task.power_a);
    CHECK(a.task.random_filler == b.task.random_filler);
    CHECK(a.task.min_len == b.task.min_len);
    CHECK(a.task.max_len == b.task.max_len);
    CHECK(a.task.test_min_len == b.task.test_min_len);
    CHECK(a.task.test_max_len == b.task.test_max_len);
    CHECK(a.task.n_tokens == b.task.n_tokens);
    CHECK(a.task.noise_len == b.task.noise_len);
    CHECK(a.task.test_examples == b.task.test_examples);
    CHECK(a.task.train_examples == b.task.train_examples);
    CHECK(a.model.layers == b.model.layers);
    CHECK(a.model.d_model == b.model.d_model);
    CHECK(a.model.heads == b.model.heads);
    CHECK(a.model.mlp == b.model.mlp);
    CHECK(a.model.mlp_hidden == b.model.mlp_hidden);
    CHECK(a.model.position == b.model.position);
    CHECK(a.attention.numerator == b.attention.numerator);
    CHECK(a.attention.order == b.attention.order);
    CHECK(a.attention.clamp == b.attention.clamp);
    CHECK(a.attention.denominator == b.attention.denominator);
    CHECK(a.attention.in_gate == b.attention.in_gate);
    CHECK(a.attention.out_gate == b.attention.out_gate);
    CHECK(a.attention.detach_denominator == b.attention.detach_denominator);
    CHECK(a.attention.eps == b.attention.eps);
    CHECK(a.train.steps == b.train.steps);
    CHECK(a.train.batch == b.train.batch);
    CHECK(a.train.lr == b.train.lr);
    CHECK(a.train.min_lr == b.train.min_lr);
    CHECK(a.train.warmup == b.train.warmup);
    CHECK(a.train.schedule == b.train.schedule);
    CHECK(a.train.weight_decay == b.train.weight_decay);
    CHECK(a.train.clip == b.train.clip);
    CHECK(a.train.eval_every == b.train.eval_every);
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("attnlab_test_spec_" + name)).string();
}

}  // namespace

// ---------------------------------------------------------------- good specs

TEST_CASE("spec: a base alone is one run per seed with defaults filled", "[spec]") {
    const experiment_spec s = parse_spec(base_spec, "spec.yaml");
    CHECK(s.name == "t");
    CHECK(s.path == "spec.yaml");
    CHECK(s.source_text == base_spec);
    CHECK(s.swept_keys == std::vector<std::string>{"seed"});
    REQUIRE(ids(s) == std::vector<std::string>{"seed=0"});
    const run_config& c = s.runs[0].config;
    CHECK(s.runs[0].swept.size() == 1);
    CHECK(c.task.kind == task_kind::lookup);
    CHECK(c.task.vocab == 64);
    CHECK(c.task.power_a == 0.01);
    CHECK(c.task.test_examples == 256);
    CHECK(c.model.mlp == mlp_kind::swiglu);
    CHECK(c.model.mlp_hidden == 88);  // ceil(8/3 * 32) = 86, rounded up to a multiple of 8
    CHECK(c.model.position == position_kind::rope);
    CHECK(c.attention.eps == 1e-6);
    CHECK_FALSE(c.attention.clamp.has_value());
    CHECK(c.train.batch == 32);
    CHECK(c.train.lr == 0.01);
    CHECK(c.train.min_lr == 0.0);
    CHECK(c.train.warmup == 10);
    CHECK(c.train.schedule == schedule_kind::cosine);
    CHECK(c.train.weight_decay == 0.1);
    CHECK(c.train.clip == 1.0);
    CHECK(c.train.eval_every == 100);
}

TEST_CASE("spec: copy lengths default to each other", "[spec]") {
    const std::string copy = edit("    kind: lookup\n    vocab: 64\n    seq_len: 32\n    pairs: 4\n",
                                  "    kind: copy\n    vocab: 10\n    max_len: 12\n    test_max_len: 20\n");
    const run_config c = parse_spec(copy, "spec.yaml").runs.at(0).config;
    CHECK(c.task.kind == task_kind::copy);
    CHECK(c.task.max_len == 12);
    CHECK(c.task.min_len == 12);
    CHECK(c.task.test_min_len == 12);
    CHECK(c.task.test_max_len == 20);
}

TEST_CASE("spec: selective_copy and induction specs", "[spec]") {
    SECTION("selective_copy") {
        const experiment_spec s = parse_spec(edit(lookup_task, selective_copy_task), "spec.yaml");
        REQUIRE(s.runs.size() == 1);
        const task_config& t = s.runs[0].config.task;
        CHECK(t.kind == task_kind::selective_copy);
        CHECK(t.vocab == 10);
        CHECK(t.n_tokens == 4);
        CHECK(t.noise_len == 12);
        CHECK(model_vocab_size(t) == 10);
        CHECK(train_seq_len(t) == 12 + 2 * 4);
        CHECK(test_seq_len(t) == 20);
        const std::string text = run_config_to_yaml(s.runs[0].config);
        CHECK_THAT(text, Contains("task:\n  kind: selective_copy\n  vocab: 10\n  n_tokens: 4\n  noise_len: 12\n"));
        CHECK_THAT(text, !Contains("seq_len") && !Contains("pairs") && !Contains("max_len"));
        // noise_len 0 is plain copying of M tokens: allowed.
        CHECK(parse_spec(edit("noise_len: 12", "noise_len: 0", edit(lookup_task, selective_copy_task)), "spec.yaml")
                  .runs.at(0)
                  .config.task.noise_len == 0);
    }
    SECTION("induction") {
        const experiment_spec s = parse_spec(edit(lookup_task, induction_task), "spec.yaml");
        REQUIRE(s.runs.size() == 1);
        const task_config& t = s.runs[0].config.task;
        CHECK(t.kind == task_kind::induction);
        CHECK(t.vocab == 16);
        CHECK(t.seq_len == 20);
        CHECK(t.test_examples == 32);
        CHECK(model_vocab_size(t) == 16);
        CHECK(train_seq_len(t) == 21);
        CHECK(test_seq_len(t) == 21);
        const std::string text = run_config_to_yaml(s.runs[0].config);
        CHECK_THAT(text, Contains("task:\n  kind: induction\n  vocab: 16\n  seq_len: 20\n  test_examples: 32\n"));
        // Odd lengths and seq_len 3 are fine for induction (not for lookup).
        CHECK(parse_spec(edit("seq_len: 20", "seq_len: 3", edit(lookup_task, induction_task)), "spec.yaml")
                  .runs.at(0)
                  .config.task.seq_len == 3);
    }
    SECTION("a sweep over task.kind keeps seq_len for induction and drops pairs") {
        const experiment_spec s = parse_spec(base_spec + "sweep: {task.kind: [lookup, induction]}\n", "spec.yaml");
        REQUIRE(ids(s) == std::vector<std::string>{"task.kind=lookup,seed=0", "task.kind=induction,seed=0"});
        const run_config& c = s.runs[1].config;
        CHECK(c.task.kind == task_kind::induction);
        CHECK(c.task.seq_len == 32);
        CHECK(c.task.vocab == 64);
        CHECK_THAT(run_config_to_yaml(c), !Contains("pairs"));
    }
    SECTION("a union of grids gives selective_copy its keys") {
        const experiment_spec s = parse_spec(
            base_spec +
                "sweep:\n  - {task.kind: [lookup]}\n"
                "  - {task.kind: [selective_copy], task.vocab: [6], task.n_tokens: [2, 3], task.noise_len: [5]}\n",
            "spec.yaml");
        REQUIRE(s.runs.size() == 3);
        CHECK(s.runs[2].id == "task.kind=selective_copy,task.vocab=6,task.n_tokens=3,task.noise_len=5,seed=0");
        CHECK(s.runs[2].config.task.n_tokens == 3);
        CHECK(train_seq_len(s.runs[2].config.task) == 11);
    }
}

TEST_CASE("spec: a grid is the cross product, row-major, seeds innermost", "[spec]") {
    const std::string yaml = edit("    numerator: exp\n", "    numerator: taylor\n    order: 2\n") +
                             "sweep:\n"
                             "  attention.order: [1, 4]\n"
                             "  train.lr: [0.01, 3.0e-3]\n"
                             "seeds: [5, 6]\n";
    const experiment_spec s = parse_spec(yaml, "spec.yaml");
    CHECK(s.swept_keys == std::vector<std::string>{"attention.order", "train.lr", "seed"});
    REQUIRE(ids(s) == std::vector<std::string>{
                          "attention.order=1,train.lr=0.01,seed=5", "attention.order=1,train.lr=0.01,seed=6",
                          "attention.order=1,train.lr=0.003,seed=5", "attention.order=1,train.lr=0.003,seed=6",
                          "attention.order=4,train.lr=0.01,seed=5", "attention.order=4,train.lr=0.01,seed=6",
                          "attention.order=4,train.lr=0.003,seed=5", "attention.order=4,train.lr=0.003,seed=6"});
    const run_point& r = s.runs[7];
    CHECK(r.config.attention.order == 4);
    CHECK(r.config.train.lr == 3.0e-3);
    CHECK(r.config.seed == 6);
    REQUIRE(r.swept.size() == 3);
    CHECK(r.swept[0].key == "attention.order");
    CHECK(r.swept[0].value == "4");
    CHECK(r.swept[2].key == "seed");
    CHECK(r.swept[2].value == "6");
    CHECK(s.base.attention.order == 2);
    CHECK(s.base.seed == 0);
}

TEST_CASE("spec: a union of grids drops the base order at exp points", "[spec]") {
    const experiment_spec s = load_spec(ATTNLAB_TEST_DATA "/specs/union_of_grids.yaml");
    CHECK(s.name == "taylor_order");
    CHECK(s.swept_keys == std::vector<std::string>{"attention.numerator", "attention.order", "seed"});
    REQUIRE(s.runs.size() == 7 * 3);
    CHECK(s.runs[0].id == "attention.numerator=taylor,attention.order=1,seed=0");
    CHECK(s.runs[17].id == "attention.numerator=taylor,attention.order=10,seed=2");
    CHECK(s.runs[18].id == "attention.numerator=exp,seed=0");
    CHECK(s.runs[17].config.attention.order == 10);
    CHECK(s.runs[17].config.task.test_examples == 512);
    const run_config& e = s.runs[20].config;
    CHECK(e.attention.numerator == numerator_kind::exp);
    CHECK(e.attention.order == 0);  // the base's order 2 is dropped, not an error
    CHECK(e.seed == 2);
    CHECK_THAT(run_config_to_yaml(e), !Contains("order"));
    CHECK(s.source_text.rfind("# The spec example", 0) == 0);
}

TEST_CASE("spec: grids that overlap give each run once", "[spec]") {
    const std::string yaml = base_spec +
                             "sweep:\n"
                             "  - {attention.numerator: [taylor], attention.order: [1, 2]}\n"
                             "  - {attention.order: [2, 3], attention.numerator: [taylor]}\n"
                             "  - {attention.numerator: [exp, relu]}\n";
    const experiment_spec s = parse_spec(yaml, "spec.yaml");
    CHECK(ids(s) == std::vector<std::string>{"attention.numerator=taylor,attention.order=1,seed=0",
                                             "attention.numerator=taylor,attention.order=2,seed=0",
                                             "attention.numerator=taylor,attention.order=3,seed=0",
                                             "attention.numerator=exp,seed=0", "attention.numerator=relu,seed=0"});
}

TEST_CASE("spec: --set overrides the base", "[spec]") {
    const std::string taylor = edit("    numerator: exp\n", "    numerator: taylor\n    order: 2\n");
    SECTION("a value everywhere") {
        const experiment_spec s = parse_spec(base_spec + "sweep: {model.layers: [1, 2]}\n", "spec.yaml",
                                             {"train.lr=0.5", "attention.clamp=5"});
        CHECK(s.set_overrides == std::vector<std::string>{"train.lr=0.5", "attention.clamp=5"});
        CHECK(s.base.train.lr == 0.5);
        REQUIRE(s.runs.size() == 2);
        for (const run_point& r : s.runs) {
            CHECK(r.config.train.lr == 0.5);
            CHECK(r.config.attention.clamp == 5.0);
        }
    }
    SECTION("a controlling key drops the base key it makes meaningless") {
        const experiment_spec s = parse_spec(taylor, "spec.yaml", {"attention.numerator=exp"});
        CHECK(s.runs.at(0).config.attention.numerator == numerator_kind::exp);
        CHECK(s.runs.at(0).config.attention.order == 0);
    }
    SECTION("a --set key that a sweep point makes meaningless is dropped there") {
        const experiment_spec s =
            parse_spec(taylor + "sweep: {attention.numerator: [taylor, exp]}\n", "spec.yaml", {"attention.order=3"});
        REQUIRE(s.runs.size() == 2);
        CHECK(s.runs[0].config.attention.order == 3);
        CHECK(s.runs[1].config.attention.order == 0);
    }
    SECTION("the seed, when seeds are not listed") {
        const experiment_spec s = parse_spec(base_spec, "spec.yaml", {"seed=7"});
        CHECK(ids(s) == std::vector<std::string>{"seed=7"});
        CHECK(s.runs[0].config.seed == 7);
    }
}

TEST_CASE("spec: false booleans count as not set", "[spec]") {
    const std::string yaml =
        edit("    denominator: softmax\n", "    denominator: norm\n    detach_denominator: false\n");
    CHECK(parse_spec(yaml, "spec.yaml").runs.size() == 1);
}

TEST_CASE("spec: run_config YAML round-trips exactly", "[spec]") {
    std::vector<std::string> specs = {
        base_spec,
        edit(lookup_task, selective_copy_task),
        edit(lookup_task, induction_task),
        edit("    numerator: exp\n",
             "    numerator: taylor\n    order: 7\n    clamp: -2.5\n    eps: 1.0e-300\n    in_gate: true\n"),
        edit("    kind: lookup\n    vocab: 64\n    seq_len: 32\n    pairs: 4\n",
             "    kind: copy\n    vocab: 3\n    min_len: 2\n    max_len: 9\n    test_max_len: 30\n"
             "    train_examples: 1000\n"),
        edit("  model:\n", "  model:\n    mlp: gelu\n    position: learned\n",
             edit("    numerator: exp\n    denominator: softmax\n",
                  "    numerator: elu1\n    denominator: norm\n    out_gate: true\n")),
        edit("    lr: 0.01\n",
             "    lr: 0.30000000000000004\n    min_lr: 1.0e-5\n    schedule: constant\n"
             "    clip: 0\n    weight_decay: 0.0\n    power_a: 0.5\n",
             edit("    pairs: 4\n", "    pairs: 4\n    power_a: 0.5\n    random_filler: true\n")),
    };
    // The last edit puts power_a under train: drop it there again.
    specs.back() = edit("    weight_decay: 0.0\n    power_a: 0.5\n", "    weight_decay: 0.0\n", specs.back());
    for (const std::string& yaml : specs) {
        const run_config c = parse_spec(yaml, "spec.yaml").runs.at(0).config;
        const std::string text = run_config_to_yaml(c);
        const std::string path = temp_path("config.yaml");
        {
            std::ofstream out(path);
            out << text;
        }
        const run_config back = run_config_from_yaml_file(path);
        std::remove(path.c_str());
        INFO(text);
        require_same(c, back);
        CHECK(run_config_to_yaml(back) == text);
    }
}

TEST_CASE("spec: run_config YAML lists every meaningful key in run_config order", "[spec]") {
    const std::string text = run_config_to_yaml(parse_spec(base_spec, "spec.yaml").base);
    CHECK(text.rfind("seed: 0\ntask:\n  kind: lookup\n  vocab: 64\n", 0) == 0);
    CHECK_THAT(text, Contains("  eps: 1.0e-06\n"));
    CHECK_THAT(text, Contains("  detach_denominator: false\n"));
    CHECK_THAT(text, !Contains("max_len"));
    CHECK_THAT(text, !Contains("clamp"));
    CHECK(text.find("model:") < text.find("attention:"));
    CHECK(text.find("attention:") < text.find("train:"));
}

// ---------------------------------------------------------------- malformed specs

TEST_CASE("spec errors: unknown keys", "[spec]") {
    CHECK_THAT(spec_error_of(base_spec + "sedes: [1]\n"), StartsWith("spec.yaml:20: sedes: unknown key"));
    CHECK_THAT(spec_error_of(edit("  seed: 0\n", "  sed: 0\n")), StartsWith("spec.yaml:3: base.sed: unknown key"));
    CHECK_THAT(spec_error_of(edit("    vocab: 64\n", "    vocb: 64\n")),
               StartsWith("spec.yaml:6: base.task.vocb: unknown key") && Contains("vocab"));
    CHECK_THAT(spec_error_of(base_spec + "sweep: {attention.ordr: [1, 2]}\n"),
               StartsWith("spec.yaml:20: sweep.attention.ordr: unknown key") && Contains("attention.order"));
    CHECK_THAT(spec_error_of(base_spec + "sweep:\n  - {model.layers: [1]}\n  - {optim.lr: [1]}\n"),
               StartsWith("spec.yaml:22: sweep[1].optim.lr: unknown key"));
    CHECK_THAT(spec_error_of(edit("    vocab: 64\n", "    vocab: 64\n    vocab: 65\n")),
               StartsWith("spec.yaml:7: base.task.vocab: duplicate key"));
}

TEST_CASE("spec errors: wrong types", "[spec]") {
    CHECK_THAT(spec_error_of(edit("    layers: 2\n", "    layers: two\n")),
               StartsWith("spec.yaml:10: base.model.layers: expected an integer in [1, 64], got 'two'"));
    CHECK_THAT(spec_error_of(edit("    heads: 2\n", "    heads: 2.5\n")),
               StartsWith("spec.yaml:12: base.model.heads: expected an integer") && Contains("got '2.5'"));
    CHECK_THAT(spec_error_of(edit("    lr: 0.01\n", "    lr: true\n")),
               StartsWith("spec.yaml:18: base.train.lr: expected a number > 0, got 'true'"));
    CHECK_THAT(spec_error_of(edit("    lr: 0.01\n", "    lr: \"0.01\"\n")),
               StartsWith("spec.yaml:18: base.train.lr: expected a number > 0, got the string \"0.01\""));
    CHECK_THAT(spec_error_of(edit("    denominator: softmax\n", "    denominator: softmax\n    in_gate: yes\n")),
               StartsWith("spec.yaml:16: base.attention.in_gate: expected true or false, got 'yes'"));
    std::string numerator_names;  // every row of the variant table, in order
    for (int i = 0; i < numerator_count; ++i)
        numerator_names += (i ? ", " : "") + std::string(numerator_rows()[i].name);
    CHECK_THAT(spec_error_of(edit("    numerator: exp\n", "    numerator: exponential\n")),
               StartsWith("spec.yaml:14: base.attention.numerator: expected one of " + numerator_names +
                          ", got 'exponential'"));
    const std::string task_list =
        "name: t\n"
        "base:\n"
        "  task: [lookup, 64]\n"
        "  model: {layers: 2, d_model: 32, heads: 2}\n";
    CHECK_THAT(spec_error_of(task_list),
               StartsWith("spec.yaml:3: base.task: expected a map of kind, vocab") && Contains("got a list"));
    CHECK_THAT(spec_error_of(edit("    steps: 100\n", "    steps: [100]\n")),
               StartsWith("spec.yaml:17: base.train.steps: expected an integer >= 1, got a list"));
}

TEST_CASE("spec errors: out of range", "[spec]") {
    CHECK_THAT(spec_error_of(edit("    lr: 0.01\n", "    lr: -0.01\n")),
               StartsWith("spec.yaml:18: base.train.lr: expected a number > 0, got -0.01"));
    CHECK_THAT(spec_error_of(edit("    layers: 2\n", "    layers: 0\n")),
               StartsWith("spec.yaml:10: base.model.layers: expected an integer in [1, 64], got 0"));
    CHECK_THAT(spec_error_of(edit("    seq_len: 32\n", "    seq_len: 2\n")),
               StartsWith("spec.yaml:7: base.task.seq_len: expected an integer in [3, 268435456], got 2"));
    CHECK_THAT(spec_error_of(edit("  seed: 0\n", "  seed: 99999999999999999999\n")),
               StartsWith("spec.yaml:3: base.seed: expected an integer >= 0"));
}

TEST_CASE("spec errors: missing required keys", "[spec]") {
    CHECK_THAT(spec_error_of(edit("name: t\n", "\n")), StartsWith("spec.yaml:2: name: missing required key"));
    CHECK_THAT(spec_error_of(edit("    numerator: exp\n", "")),
               StartsWith("spec.yaml:13: base.attention.numerator: missing required key, expected one of exp"));
    CHECK_THAT(spec_error_of(edit("    pairs: 4\n", "")),
               StartsWith("spec.yaml:4: base.task.pairs: missing required key (needed when task.kind is lookup)"));
    CHECK_THAT(spec_error_of("name: t\nbase:\n  seed: 1\n"),
               StartsWith("spec.yaml:2: base.task: missing required section (with kind)"));
    CHECK_THAT(spec_error_of("name: t\n"), StartsWith("spec.yaml:1: base: missing required key"));
}

TEST_CASE("spec errors: impossible combinations in the base", "[spec]") {
    CHECK_THAT(spec_error_of(edit("    heads: 2\n", "    heads: 3\n")),
               StartsWith("spec.yaml:12: base.model.heads: model.heads 3 does not divide model.d_model 32"));
    CHECK_THAT(
        spec_error_of(edit("    d_model: 32\n", "    d_model: 30\n")),
        StartsWith("spec.yaml:12: base.model.heads: rope needs an even head dim, got d_model/heads = 30/2 = 15"));
    CHECK_THAT(spec_error_of(edit("    pairs: 4\n", "    pairs: 9\n")),
               StartsWith("spec.yaml:8: base.task.pairs: lookup needs 4 * task.pairs <= task.seq_len, got 4 * 9 > 32"));
    CHECK_THAT(spec_error_of(edit("    vocab: 64\n", "    vocab: 32\n")),
               StartsWith("spec.yaml:6: base.task.vocab: lookup needs task.vocab > task.seq_len, got 32 <= 32"));
    CHECK_THAT(spec_error_of(edit("    denominator: softmax\n", "    denominator: gate\n    out_gate: true\n")),
               StartsWith("spec.yaml:16: base.attention.out_gate: out_gate is not allowed with denominator gate"));
    CHECK_THAT(
        spec_error_of(edit("    denominator: softmax\n", "    denominator: norm\n    detach_denominator: true\n")),
        StartsWith("spec.yaml:16: base.attention.detach_denominator: has no effect") &&
            Contains("applies only when attention.denominator is softmax, but attention.denominator is norm"));
    CHECK_THAT(spec_error_of(edit("    numerator: exp\n", "    numerator: elu1\n    clamp: 5\n")),
               StartsWith("spec.yaml:15: base.attention.clamp: has no effect") &&
                   Contains("attention.numerator is one of exp, taylor, linear"));
    CHECK_THAT(spec_error_of(edit("    numerator: exp\n", "    numerator: exp\n    order: 2\n")),
               StartsWith("spec.yaml:15: base.attention.order: has no effect") &&
                   Contains("attention.numerator is one of taylor, power") &&
                   Contains(", but attention.numerator is exp"));
    CHECK_THAT(spec_error_of(edit("    warmup: 10\n", "    warmup: 101\n")),
               StartsWith("spec.yaml:19: base.train.warmup: train.warmup 101 exceeds train.steps 100"));
    const std::string copy = edit("    kind: lookup\n    vocab: 64\n    seq_len: 32\n    pairs: 4\n",
                                  "    kind: copy\n    vocab: 10\n    min_len: 9\n    max_len: 8\n");
    CHECK_THAT(spec_error_of(copy),
               StartsWith("spec.yaml:7: base.task.min_len: task.min_len 9 exceeds task.max_len 8"));
}

TEST_CASE("spec errors: selective_copy and induction", "[spec]") {
    const std::string sc = edit(lookup_task, selective_copy_task);
    const std::string ind = edit(lookup_task, induction_task);
    // Impossible vocabularies: fewer than 2 content tokens.
    CHECK_THAT(spec_error_of(edit("    vocab: 10\n", "    vocab: 3\n", sc)),
               StartsWith("spec.yaml:6: base.task.vocab: selective_copy needs task.vocab >= 4 (blank 0, marker "
                          "vocab-1, content 1..vocab-2), got 3"));
    CHECK_THAT(spec_error_of(edit("    vocab: 16\n", "    vocab: 3\n", ind)),
               StartsWith("spec.yaml:6: base.task.vocab: induction needs task.vocab >= 4 (2 specials"));
    // Too short for a trigger, its target and a token before the final trigger.
    CHECK_THAT(spec_error_of(edit("    seq_len: 20\n", "    seq_len: 2\n", ind)),
               StartsWith("spec.yaml:7: base.task.seq_len: expected an integer in [3, 268435456], got 2"));
    // Ranges and types of the selective_copy keys.
    CHECK_THAT(spec_error_of(edit("    n_tokens: 4\n", "    n_tokens: 0\n", sc)),
               StartsWith("spec.yaml:7: base.task.n_tokens: expected an integer in [1, 268435456], got 0"));
    CHECK_THAT(spec_error_of(edit("    noise_len: 12\n", "    noise_len: -1\n", sc)),
               StartsWith("spec.yaml:8: base.task.noise_len: expected an integer in [0, 268435456], got -1"));
    CHECK_THAT(spec_error_of(edit("    n_tokens: 4\n", "    n_tokens: four\n", sc)),
               StartsWith("spec.yaml:7: base.task.n_tokens: expected an integer in [1, 268435456], got 'four'"));
    // Missing keys where they apply.
    CHECK_THAT(spec_error_of(edit("    noise_len: 12\n", "", sc)),
               StartsWith("spec.yaml:4: base.task.noise_len: missing required key (needed when task.kind is "
                          "selective_copy)"));
    CHECK_THAT(spec_error_of(edit("    seq_len: 20\n", "", ind)),
               StartsWith("spec.yaml:4: base.task.seq_len: missing required key (needed when task.kind is one of "
                          "lookup, induction, text)"));
    // Keys of another task.
    CHECK_THAT(spec_error_of(edit("    pairs: 4\n", "    pairs: 4\n    n_tokens: 3\n")),
               StartsWith("spec.yaml:9: base.task.n_tokens: has no effect: task.n_tokens applies only when "
                          "task.kind is selective_copy, but task.kind is lookup"));
    CHECK_THAT(spec_error_of(edit("    test_examples: 32\n", "    pairs: 4\n", ind)),
               StartsWith("spec.yaml:8: base.task.pairs: has no effect") &&
                   Contains("task.kind is lookup, but task.kind is induction"));
    CHECK_THAT(
        spec_error_of(edit("    noise_len: 12\n", "    noise_len: 12\n    seq_len: 8\n", sc)),
        StartsWith("spec.yaml:9: base.task.seq_len: has no effect") &&
            Contains("applies only when task.kind is one of lookup, induction, text, but task.kind is selective_copy"));
    // lookup keeps its own rule on seq_len.
    CHECK_THAT(spec_error_of(edit("    seq_len: 32\n", "    seq_len: 33\n")),
               StartsWith("spec.yaml:7: base.task.seq_len: lookup needs an even task.seq_len, got 33"));
    // A sweep or --set that switches the task names what is missing.
    CHECK_THAT(spec_error_of(base_spec + "sweep: {task.kind: [lookup, selective_copy]}\n"),
               StartsWith("spec.yaml:20: sweep.task.kind: selective_copy needs task.n_tokens, which is not set") &&
                   Contains("(at sweep point task.kind=selective_copy)"));
    CHECK_THAT(spec_error_of(base_spec + "sweep:\n  task.kind: [induction]\n  task.vocab: [3, 8]\n"),
               StartsWith("spec.yaml:22: sweep.task.vocab: induction needs task.vocab >= 4") &&
                   Contains("(at sweep point task.kind=induction,task.vocab=3)"));
    CHECK_THAT(spec_error_of(base_spec, {"task.noise_len=5"}), StartsWith("--set: task.noise_len: has no effect"));
}

TEST_CASE("spec errors: sweeps", "[spec]") {
    // The point is named, and the line is the swept value's own.
    CHECK_THAT(spec_error_of(base_spec + "sweep:\n  attention.order: [1, 2]\n"),
               StartsWith("spec.yaml:21: sweep.attention.order: swept value has no effect") &&
                   Contains("(at sweep point attention.order=1)"));
    CHECK_THAT(spec_error_of(base_spec + "sweep:\n  model.heads:\n    - 2\n    - 3\n"),
               StartsWith("spec.yaml:23: sweep.model.heads: model.heads 3 does not divide model.d_model 32") &&
                   Contains("(at sweep point model.heads=3)"));
    CHECK_THAT(spec_error_of(base_spec + "sweep: {attention.numerator: [exp, taylor]}\n"),
               StartsWith("spec.yaml:20: sweep.attention.numerator: taylor needs attention.order, which is not set") &&
                   Contains("attention.numerator=taylor"));
    CHECK_THAT(spec_error_of(base_spec + "sweep:\n  attention.order: []\n"),
               StartsWith("spec.yaml:21: sweep.attention.order: empty list of values"));
    CHECK_THAT(spec_error_of(base_spec + "sweep: []\n"), StartsWith("spec.yaml:20: sweep: empty list of grids"));
    CHECK_THAT(spec_error_of(base_spec + "sweep: {train.lr: 0.1}\n"),
               StartsWith("spec.yaml:20: sweep.train.lr: expected a list of values, got '0.1'"));
    CHECK_THAT(spec_error_of(base_spec + "sweep: {train.lr: [0.1, fast]}\n"),
               StartsWith("spec.yaml:20: sweep.train.lr: expected a number > 0, got 'fast'"));
    CHECK_THAT(spec_error_of(base_spec + "sweep: {seed: [1, 2]}\n"),
               StartsWith("spec.yaml:20: sweep.seed: seeds are swept by the top-level key seeds"));
    CHECK_THAT(spec_error_of(base_spec + "seeds: [0, 1,\n        0]\n"),
               StartsWith("spec.yaml:21: seeds: duplicate seed 0"));
    CHECK_THAT(spec_error_of(base_spec + "seeds: []\n"), StartsWith("spec.yaml:20: seeds: empty list of seeds"));
}

TEST_CASE("spec errors: a sweep list names the grid", "[spec]") {
    try {
        load_spec(ATTNLAB_TEST_DATA "/specs/bad_sweep_point.yaml");
        FAIL("no error");
    } catch (const config_error& e) {
        CHECK_THAT(e.what(), Contains("bad_sweep_point.yaml:12: sweep[1].attention.order: swept value has no effect") &&
                                 Contains("(at sweep point attention.order=3,attention.denominator=norm)"));
    }
}

TEST_CASE("spec errors: --set", "[spec]") {
    const std::string swept = base_spec + "sweep: {model.layers: [1, 2]}\nseeds: [0, 1]\n";
    CHECK_THAT(spec_error_of(base_spec, {"attention.order"}), StartsWith("--set: expected dotted.key=value"));
    CHECK_THAT(spec_error_of(base_spec, {"train.lr=fast"}),
               StartsWith("--set: train.lr: expected a number > 0, got 'fast'"));
    CHECK_THAT(spec_error_of(base_spec, {"train.lrate=1"}),
               StartsWith("--set: train.lrate: unknown key") && Contains("train.lr,"));
    CHECK_THAT(spec_error_of(base_spec, {"train.lr=[1"}),
               StartsWith("--set: train.lr: cannot read '[1' as a YAML value"));
    CHECK_THAT(spec_error_of(swept, {"model.layers=3"}),
               StartsWith("--set: model.layers: is swept in the spec; --set cannot override it"));
    CHECK_THAT(spec_error_of(swept, {"seed=3"}), StartsWith("--set: seed: is swept in the spec"));
    CHECK_THAT(spec_error_of(base_spec, {"attention.order=3"}), StartsWith("--set: attention.order: has no effect"));
    CHECK_THAT(spec_error_of(base_spec, {"attention.numerator=taylor"}),
               StartsWith("--set: attention.numerator: taylor needs attention.order, which is not set"));
}

TEST_CASE("spec errors: files and YAML", "[spec]") {
    CHECK_THAT(spec_error_of(""), StartsWith("spec.yaml:1: empty spec"));
    CHECK_THAT(spec_error_of("# only a comment\n"), StartsWith("spec.yaml:1: empty spec"));
    CHECK_THAT(spec_error_of("- name: t\n"), StartsWith("spec.yaml:1: expected a map with keys name, base"));
    CHECK_THAT(spec_error_of(edit("    vocab: 64\n", "   vocab: 64\n")), StartsWith("spec.yaml:6: YAML syntax error"));
    CHECK_THAT(spec_error_of(edit("name: t\n", "name: my spec/1\n")), StartsWith("spec.yaml:1: name: expected a name"));
    try {
        load_spec(ATTNLAB_TEST_DATA "/specs/bad_syntax.yaml");
        FAIL("no error");
    } catch (const config_error& e) {
        CHECK_THAT(e.what(), Contains("bad_syntax.yaml:6: YAML syntax error"));
    }
    try {
        load_spec(ATTNLAB_TEST_DATA "/specs/bad_unknown_key.yaml");
        FAIL("no error");
    } catch (const config_error& e) {
        CHECK_THAT(e.what(), Contains("bad_unknown_key.yaml:7: base.model.dmodel: unknown key"));
    }
    CHECK_THROWS_MATCHES(
        load_spec(ATTNLAB_TEST_DATA "/specs/no_such_spec.yaml"), config_error,
        Catch::Matchers::Message(ATTNLAB_TEST_DATA "/specs/no_such_spec.yaml: cannot read: No such file or directory"));
    CHECK_THROWS_AS(run_config_from_yaml_file(temp_path("missing_config.yaml")), config_error);
}

TEST_CASE("spec errors: config files use the same checks without the base. prefix", "[spec]") {
    const std::string text = run_config_to_yaml(parse_spec(base_spec, "spec.yaml").base);
    CHECK_THAT(([&] {
                   try {
                       run_config_from_yaml(edit("  vocab: 64\n", "  vocb: 64\n", text), "config.yaml");
                   } catch (const config_error& e) {
                       return std::string(e.what());
                   }
                   return std::string();
               }()),
               StartsWith("config.yaml:4: task.vocb: unknown key"));
    CHECK_THROWS_AS(run_config_from_yaml(text + "sweep: {model.layers: [1]}\n", "config.yaml"), config_error);
}

TEST_CASE("every experiment spec of the repository loads", "[spec]") {
    // A spec added or edited under experiments/ is checked here, not first by
    // a long run: it loads and expands to at least one run with distinct ids.
    // Where a spec's corpus (data/, put in place by scripts/get_corpus and
    // scripts/make_echo_corpus) is absent, as on a fresh clone, the spec reads
    // a stand-in of kjv.txt's size instead: every other key is still checked.
    // A spec that fine-tunes another spec's runs (train.init) loads with its
    // checkpoints resolved only when they are not there (git keeps none).
    namespace fs = std::filesystem;
    std::vector<std::string> stand_in;
    {
        std::ifstream in(ATTNLAB_TEST_DATA "/text_fixture.txt", std::ios::binary);
        const std::string piece((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        REQUIRE(!piece.empty());
        std::string text;
        while (text.size() < 4137850) text += piece;  // the size of data/kjv.txt (scripts/get_corpus)
        const std::string path = temp_path("stand_in_corpus.txt");
        std::ofstream(path, std::ios::binary) << text;
        stand_in = {"task.path=" + path, "task.sha256=" + sha256_hex(text)};
    }
    int specs = 0;
    for (const auto& entry : fs::recursive_directory_iterator(ATTNLAB_SOURCE_DIR "/experiments")) {
        if (entry.path().extension() != ".yaml") continue;
        INFO(entry.path().string());
        ++specs;
        const std::string path = entry.path().string();
        const auto load_with = [&](const std::vector<std::string>& set) -> experiment_spec {
            try {
                return load_spec(path, set);
            } catch (const config_error& e) {
                if (std::string(e.what()).find("cannot start from this checkpoint") == std::string::npos) throw;
                return parse_spec(read_file(path), path, set, "", task_files::read_if_present);
            }
        };
        // The corpus first, then the checkpoints: a fresh clone lacks both.
        const auto load = [&]() -> experiment_spec {
            try {
                return load_with({});
            } catch (const config_error& e) {
                if (std::string(e.what()).find("cannot read the text file") == std::string::npos) throw;
                return load_with(stand_in);
            }
        };
        experiment_spec spec;
        CHECK_NOTHROW(spec = load());
        CHECK(!spec.runs.empty());
        std::set<std::string> ids;
        for (const auto& r : spec.runs) ids.insert(r.id);
        CHECK(ids.size() == spec.runs.size());
    }
    CHECK(specs >= 10);
}
