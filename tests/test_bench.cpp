// The generation benchmark's bookkeeping (never its timings: those are
// figures to report, not pass/fail conditions).
#include <catch2/catch.hpp>

#include "attnlab/bench/generate_bench.hpp"

using namespace attnlab;

TEST_CASE("generate bench: lengths, one point per variant and length, state sizes", "[bench]") {
    CHECK(generate_lengths(1000) == std::vector<int>{64, 128, 256, 512, 1000});
    generate_bench_options opt;
    opt.max_len = 128;
    opt.model.d_model = 16;
    opt.model.heads = 2;
    std::vector<generate_variant> variants;
    for (const auto& v : default_generate_variants())
        if (v.name == "exp-kv_cache" || v.name == "taylor2-symmetric") variants.push_back(v);
    REQUIRE(variants.size() == 2);
    const auto points = run_generate_bench(opt, variants, nullptr);
    REQUIRE(points.size() == 4);
    // KV cache of exp grows with the length: 2 * L * HS floats (HS = 8)
    CHECK(points[0].state_floats == 2 * 64 * 8);
    CHECK(points[1].state_floats == 2 * 128 * 8);
    // taylor 2, symmetric, d = 8: F = 1 + 8 + 36 = 45 features; S and z: 45 * 8 + 45
    CHECK(points[2].state_floats == 45 * 8 + 45);
    CHECK(points[3].state_floats == points[2].state_floats);
    for (const auto& p : points) CHECK(p.us_per_token > 0);
}

TEST_CASE("generate bench report: flatness and crossover from given times", "[bench]") {
    const std::vector<generate_point> pts = {
        {"cache", 10, 256, 10.0}, {"cache", 20, 512, 20.0}, {"cache", 40, 1024, 40.0},
        {"rnn", 5, 256, 30.0},    {"rnn", 5, 512, 30.0},    {"rnn", 5, 1024, 30.0},
        {"big", 9, 256, 90.0},    {"big", 9, 512, 90.0},    {"big", 9, 1024, 90.0},
    };
    const std::string r = generate_bench_report(pts, "cache");
    CHECK(r.find("cache                flatness  4.00  crossover -") != std::string::npos);
    CHECK(r.find("rnn                  flatness  1.00  crossover 1024") != std::string::npos);
    CHECK(r.find("big                  flatness  1.00  crossover none up to 1024") != std::string::npos);
}
