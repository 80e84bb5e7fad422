// estimate_training_memory (train/memory_estimate.hpp): the parameter count
// equals the model's for every variant and model shape, each term equals a
// hand count for a small config, and the total is checked against the peak
// memory of the real binary training a model whose buffers dominate it.
#include <catch2/catch.hpp>
#include <malloc.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "attnlab/model/make_model.hpp"
#include "attnlab/run/resources.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/train/memory_estimate.hpp"
#include "attnlab/util/error.hpp"
#include "support/process_support.hpp"
#include "support/tiny_config.hpp"
#include "support/variant_cases.hpp"

using namespace attnlab;
using namespace attnlab::test;
namespace fs = std::filesystem;

namespace {

run_config small_config() { return tiny_config({.batch = 4}); }  // swiglu, rope

std::size_t model_params(const run_config& c) { return make_model<float>(c).params.size(); }

}  // namespace

TEST_CASE("memory estimate: the parameter count is the model's, for every variant and model shape",
          "[memory_estimate]") {
    run_config c = small_config();
    for (const auto num : all_numerators)
        for (const auto den : all_denominators) {
            c.attention = attention_config{};
            c.attention.numerator = num;
            c.attention.denominator = den;
            if (takes_order(num)) c.attention.order = 2;
            for (const bool in_gate : {false, true}) {
                c.attention.in_gate = in_gate;
                INFO(describe(c.attention));
                const memory_estimate e = estimate_training_memory(c, 1);
                CHECK(e.params == model_params(c) * sizeof(float));
                CHECK(e.grads == e.params);
                CHECK(e.optimizer == 2 * e.params);
            }
        }
    for (const auto mlp : {mlp_kind::swiglu, mlp_kind::gelu, mlp_kind::none})
        for (const auto pos : {position_kind::rope, position_kind::learned, position_kind::none}) {
            c = small_config();
            c.model.mlp = mlp;
            c.model.position = pos;
            c.model.layers = 3;
            c.task.kind = task_kind::copy;  // test inputs longer than training ones: the learned table covers both
            c.task.max_len = c.task.min_len = 6;
            c.task.test_max_len = c.task.test_min_len = 10;
            INFO(to_string(mlp) << " " << to_string(pos));
            CHECK(estimate_training_memory(c, 1).params == model_params(c) * sizeof(float));
        }
}

TEST_CASE("memory estimate: every term equals a hand count for a small config", "[memory_estimate]") {
    // lookup V 16, T 8, batch 4: N = 32 rows; d_model C 16, 2 heads of 8,
    // SwiGLU F = 48 (8/3 * 16 rounded up to 8), RoPE, one layer, exp/softmax.
    const run_config c = small_config();
    const memory_estimate e = estimate_training_memory(c, 1);
    // embed 16x16, attn_norm 16, q k v o 4 x 16x16, mlp_norm 16, gate up down 3 x 48x16, norm 16, head 16x16
    const std::size_t P = 256 + 16 + 4 * 256 + 16 + 3 * 768 + 16 + 256;
    CHECK(P == 3888);
    CHECK(e.params == P * 4);
    // residual streams 2 x 512; layer: ln1 512 + rstd1 32, q k v 1536, att mid 1024,
    // ln2 512 + rstd2 32, gate_up (gate and up side by side) 3072, act 1536; the q, k, v product 1536 (one
    // copy, the forward's scratch); final norm 512 + 32; its answer rows 512;
    // logits probs 2 x 32x16; losses 32 (floats) + answer rows, targets, predictions 3 x 32 (int32)
    const std::size_t layer = 544 + 1536 + 1024 + 544 + 3072 + 1536;
    CHECK(e.activations == (1024 + layer + 1536 + 544 + 512 + 1024 + 32) * 4 + 3 * 32 * 4);
    // 8 (b, h) pairs: wsum 8x8, numer 8x8x8, min_abs 8 floats, the forward's weights and scores
    // (kept at this size) 2 x 8x8x8; nonpositive 8 longs
    CHECK(e.attention == (64 + 512 + 8 + 2 * 512) * 4 + 8 * sizeof(long));
    // dres dln dq dk dv datt 6 x 512, dqkv 3 x 512, dgate_up 2 x 1536 and dact 1536, dg_* 3 x 64,
    // the answer rows' dlnf 512, dlogits 512, rope cos/sin 2 x 8x4 (floats); test set 16x8, validation set 16x8
    // (val_examples defaults to test_examples), batch 4x8 (tokens and targets, int32); the gradient
    // norm's one chunk sum (a double); the transposed copies of the forward product weights, all read
    // transposed at these sizes: qkv 48x16, o 16x16, gate_up 96x16, down 16x48, head 16x16 (floats)
    const std::size_t transposed = 768 + 256 + 1536 + 768 + 256;
    CHECK(e.scratch ==
          (3072 + 1536 + 4608 + 192 + 512 + 512 + 64 + transposed) * 4 + (16 * 8 + 16 * 8 + 4 * 8) * 2 * 4 + 8);
    // attention scratch of one thread: S W dW 3 x 64x8 (a block of 64 rows), Vg dU dVg dFq dFk 5 x 8x8,
    // Kt Vgt 2 x 8x8, dz 8, row 8
    CHECK(e.per_thread == (3 * 512 + 7 * 64 + 8 + 8) * 4);
    // 3 threads: 3 shards of the batch of 4, each with its attention scratch, shards 1 and 2 with a gradient buffer
    CHECK(estimate_training_memory(c, 3).per_thread == 3 * e.per_thread + 2 * P * 4);
    // never more shards than sequences
    CHECK(estimate_training_memory(c, 8).per_thread == 4 * e.per_thread + 3 * P * 4);
    CHECK(e.total() == e.params + e.grads + e.optimizer + e.activations + e.attention + e.scratch + e.per_thread);

    // What the variant adds: feature maps keep phi(q), phi(k) (and no scores); gates a value per head and row.
    run_config f = c;
    f.attention.numerator = numerator_kind::elu1;
    CHECK(estimate_training_memory(f, 1).attention == e.attention + 2 * 8 * 8 * 8 * 4 - 8 * 8 * 8 * 4);
    run_config g = c;
    g.attention.in_gate = true;
    g.attention.out_gate = true;
    CHECK(estimate_training_memory(g, 1).activations == e.activations + 2 * 32 * 2 * 4);
    // Twice the sequence: twice the cache and the per-thread blocks, four times the kept weights and scores.
    run_config t = c;
    t.task.seq_len = 16;
    const memory_estimate e16 = estimate_training_memory(t, 1);
    CHECK(e16.attention == (128 + 1024 + 8 + 2 * 8 * 16 * 16) * 4 + 8 * sizeof(long));
    CHECK(e16.per_thread == (3 * 64 * 16 + 7 * 16 * 8 + 16 + 8) * 4);
}

TEST_CASE("buffer plan: make_model's model is reserved for the plan the estimate sums", "[memory_estimate]") {
    run_config c = small_config();
    c.task.kind = task_kind::copy;  // test inputs longer than training ones: the model holds the longer
    c.task.max_len = c.task.min_len = 6;
    c.task.test_max_len = c.task.test_min_len = 10;
    for (const auto num : all_numerators) {
        c.attention = attention_config{};
        c.attention.numerator = num;
        if (traits_of(num).takes_order) c.attention.order = 2;  // taylor, power
        c.attention.in_gate = true;
        INFO(describe(c.attention));
        const transformer<float> model = make_model<float>(c);
        const buffer_plan plan = run_buffer_plan(c, 1);
        CHECK(model.params.size() == plan.param_count);
        for (std::size_t i = 0; i < plan.entries.size(); ++i) {
            INFO("buffer " << i);
            CHECK(model.buffers().entries[i].elements == plan.entries[i].elements);
            CHECK(model.buffers().entries[i].copies == plan.entries[i].copies);
        }
        CHECK(plan.elements(model_buffer::q) == 4 * 20 * 16);  // batch 4 x copy test input 2 * 10, d_model 16
    }
}

TEST_CASE("sizes: --max-memory values and their display", "[memory_estimate]") {
    CHECK(parse_size("4G") == 4ull << 30);
    CHECK(parse_size("512M") == 512ull << 20);
    CHECK(parse_size("1.5G") == 3ull << 29);
    CHECK(parse_size("64k") == 64ull << 10);
    CHECK(parse_size("2GiB") == 2ull << 30);
    CHECK(parse_size("100MB") == 100ull << 20);
    CHECK(parse_size("1000000") == 1000000);
    for (const char* bad : {"", "G", "0", "0.1", "4X", "4GG", "-1G", "1.2.3", "4 G", "nan"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_size(bad), config_error);
    }
    CHECK(format_bytes(100) == "100 B");
    CHECK(format_bytes(10 * 1024) == "10.0 KiB");
    CHECK(format_bytes(1.5 * (1 << 30)) == "1.50 GiB");
    CHECK(format_bytes(512.0 * (1 << 20)) == "512 MiB");
    const memory_limit m = machine_memory_limit();  // on Linux, /proc/meminfo at least
    CHECK(m.bytes > 0);
    CHECK_FALSE(m.source.empty());
}

TEST_CASE("memory estimate against the peak memory of the binary training one step", "[memory_estimate]") {
    // Peak RSS (wait4's ru_maxrss) of `attnlab run` with 1 step of a model
    // whose buffers are large, less that of a tiny model (the program, its
    // libraries, threads): the growth the estimate describes.
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer the peak RSS is set by its quarantine of freed
    // blocks (256 MiB by default), not by the run's buffers: measured ratios
    // of 3e-5 and 2.02 for the same build. The plain build checks this.
    WARN("skipped under AddressSanitizer: its quarantine, not the run, sets the peak RSS");
    return;
#endif
    temp_dir tmp;
    auto spec_text = [](const std::string& task, const std::string& model, int batch) {
        return std::string("name: mem\nbase:\n  seed: 0\n  task: ") + task + "\n  model: " + model +
               "\n  attention: {numerator: exp, denominator: softmax}\n  train: {steps: 1, batch: " +
               std::to_string(batch) + ", lr: 1.0e-3, warmup: 1, eval_every: 1}\n";
    };
    // wait4's peak also counts the copy of this process that fork makes
    // before exec (the launcher trims the heap first): up to this process's
    // RSS, which must stay small next to the growth measured, or a floor
    // under the tiny run's peak would shrink the difference. Measured after
    // the same trim: before it, what earlier tests freed counts (136 MiB
    // after the unit suite without its [heavy] cases, which the fork does
    // not copy).
    auto own_rss_kib = [] {
        ::malloc_trim(0);
        std::ifstream status("/proc/self/status");
        std::string key;
        long kib = 0;
        while (status >> key && key != "VmRSS:") status.ignore(1 << 12, '\n');
        status >> kib;
        return static_cast<double>(kib);
    };
    double largest_own_kib = 0;
    auto peak_kib = [&](const std::string& name, const std::string& text, int threads) {
        const fs::path spec = tmp / (name + ".yaml");
        write_text(spec, text);
        largest_own_kib = std::max(largest_own_kib, own_rss_kib());
        const cli_result r = run_cli(
            {"run", spec.string(), "--out", (tmp / name).string(), "--threads", std::to_string(threads)}, tmp.path());
        INFO(r.err);
        REQUIRE(r.code == 0);
        return static_cast<double>(r.max_rss_kib);
    };
    const std::string tiny_task = "{kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}";
    const std::string tiny_model = "{layers: 1, d_model: 16, heads: 2}";
    const std::string big_task = "{kind: lookup, vocab: 256, seq_len: 128, pairs: 8, test_examples: 32}";
    const std::string big_model = "{layers: 2, d_model: 128, heads: 4}";
    const std::string tiny_text = spec_text(tiny_task, tiny_model, 4), big_text = spec_text(big_task, big_model, 32);
    for (const int threads : {1, 2}) {
        const std::string n = std::to_string(threads);
        const double base = peak_kib("tiny" + n, tiny_text, threads), big = peak_kib("big" + n, big_text, threads);
        const auto estimate = [&](const std::string& text) {
            return static_cast<double>(
                estimate_training_memory(parse_spec(text, "mem.yaml").runs[0].config, threads).total());
        };
        const double measured = (big - base) * 1024, estimated = estimate(big_text) - estimate(tiny_text);
        INFO("this process's RSS before a fork: up to " << format_bytes(largest_own_kib * 1024));
        REQUIRE(largest_own_kib * 1024 < 0.25 * estimated);
        const double ratio = measured / estimated;
        INFO(threads << " threads: peak RSS growth " << format_bytes(measured) << ", estimate "
                     << format_bytes(estimated) << ": ratio " << ratio);
        // The guard must not promise less than a run takes, nor refuse runs that would fit by far.
        CHECK(ratio <= 1.15);
        CHECK(ratio >= 0.5);
    }
}
