// attnlab bench products (products_bench.hpp).
#include "attnlab/bench/products_bench.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "attnlab/model/params.hpp"
#include "attnlab/ops/packed_gemm.hpp"
#include "attnlab/util/median.hpp"
#include "attnlab/util/rng.hpp"

#ifdef ATTNLAB_OPENBLAS
#include <cblas.h>
#endif

namespace attnlab {

namespace {

// Seconds per call of f, over enough calls for about `seconds`.
template <class F>
double seconds_per_call(F&& f, double seconds) {
    using clock = std::chrono::steady_clock;
    f();  // warm: packing buffers, caches
    long calls = 1;
    for (;;) {
        const auto t0 = clock::now();
        for (long i = 0; i < calls; ++i) f();
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        if (s >= seconds || calls > (1L << 24)) return s / static_cast<double>(calls);
        calls = s <= 0 ? calls * 16 : std::max(calls * 2, static_cast<long>(calls * seconds / s * 1.1));
    }
}

void blas_product(const product_shape& s, const float* a, const float* b, float* c) {
#ifdef ATTNLAB_OPENBLAS
    cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans, s.trans_b ? CblasTrans : CblasNoTrans, s.M, s.N,
                s.K, 1.0f, a, s.trans_a ? s.M : s.K, b, s.trans_b ? s.K : s.N, 0.0f, c, s.N);
#else
    (void)s, (void)a, (void)b, (void)c;
#endif
}

}  // namespace

std::string blas_core_name() {
#ifdef ATTNLAB_OPENBLAS
    return openblas_get_corename();
#else
    return "";
#endif
}

std::vector<product_shape> model_product_shapes(const model_config& m, int vocab, int rows) {
    model_offsets off;
    build_param_layout(m, attention_config{}, vocab, 16, off);
    std::vector<linear_weight> weights = forward_product_weights(m, off, vocab);
    // One block's layers (every block has the same) and the head.
    const std::size_t per_block = (weights.size() - 1) / std::max<std::size_t>(1, off.blocks.size());
    std::vector<linear_weight> distinct(weights.begin(), weights.begin() + static_cast<long>(per_block));
    distinct.push_back(weights.back());
    const char* const swiglu_names[] = {"q/k/v", "o", "mlp gate+up", "mlp down"};
    const char* const gelu_names[] = {"q/k/v", "o", "mlp up", "mlp down"};
    std::vector<product_shape> shapes;
    for (std::size_t i = 0; i < distinct.size(); ++i) {
        const int out = static_cast<int>(distinct[i].out), in = static_cast<int>(distinct[i].in);
        const std::string name = i + 1 == distinct.size()  ? "head"
                                 : m.mlp == mlp_kind::gelu ? gelu_names[i]
                                                           : swiglu_names[i];
        shapes.push_back({name + " forward", rows, out, in, false, true});  // x (rows, in) W^T
        shapes.push_back({name + " dx", rows, in, out, false, false});      // dy (rows, out) W (out, in)
        shapes.push_back({name + " dW", out, in, rows, true, false});       // dy^T (out, rows) x (rows, in)
    }
    return shapes;
}

std::vector<product_timing> run_products_bench(const std::vector<product_shape>& shapes, int rounds, double seconds) {
    std::vector<product_timing> out;
    rng r(1);
    for (const product_shape& s : shapes) {
        std::vector<float> a(static_cast<std::size_t>(s.M) * s.K), b(static_cast<std::size_t>(s.K) * s.N),
            c(static_cast<std::size_t>(s.M) * s.N);
        for (float& x : a) x = static_cast<float>(r.normal());
        for (float& x : b) x = static_cast<float>(r.normal());
        std::vector<double> packed, blas;
        for (int round = 0; round < std::max(1, rounds); ++round) {
            packed.push_back(
                s.flops() / 1e9 /
                seconds_per_call(
                    [&] { packed_gemm(s.trans_a, s.trans_b, s.M, s.N, s.K, a.data(), b.data(), false, c.data()); },
                    seconds));
#ifdef ATTNLAB_OPENBLAS
            blas.push_back(s.flops() / 1e9 /
                           seconds_per_call([&] { blas_product(s, a.data(), b.data(), c.data()); }, seconds));
#endif
        }
        out.push_back({s, median_of(packed), median_of(blas)});
    }
    return out;
}

std::string products_bench_report(const std::vector<product_timing>& t, const peak_fma_rate& peak,
                                  const std::string& blas_core, const std::string& label) {
    std::string s = fmt::format(
        "bench products: {}, one thread; peak FMA bound {:.1f} GFLOP/s ({}); BLAS kernels: {}\n"
        "GFLOP/s, medians of rounds (% of the peak FMA bound); packed / BLAS > 1: attnlab's kernel is faster\n\n",
        label, peak.gflops, peak.isa, blas_core.empty() ? "none (built without OpenBLAS)" : blas_core);
    s += fmt::format("{:<22} {:>5} {:>5} {:>5} {:>18} {:>18} {:>13}\n", "product", "M", "N", "K", "attnlab packed",
                     "BLAS", "packed / BLAS");
    double flops = 0, packed_s = 0, blas_s = 0;
    auto pct = [&](double g) { return peak.gflops > 0 ? 100 * g / peak.gflops : 0.0; };
    for (const product_timing& p : t) {
        const product_shape& sh = p.shape;
        s += fmt::format("{:<22} {:>5} {:>5} {:>5} {:>9.1f} ({:>4.0f} %) {:>9.1f} ({:>4.0f} %) {:>13.2f}\n", sh.name,
                         sh.M, sh.N, sh.K, p.packed_gflops, pct(p.packed_gflops), p.blas_gflops, pct(p.blas_gflops),
                         p.blas_gflops > 0 ? p.packed_gflops / p.blas_gflops : 0.0);
        flops += sh.flops();
        packed_s += sh.flops() / (p.packed_gflops * 1e9);
        if (p.blas_gflops > 0) blas_s += sh.flops() / (p.blas_gflops * 1e9);
    }
    const double packed_all = flops / packed_s / 1e9, blas_all = blas_s > 0 ? flops / blas_s / 1e9 : 0;
    s += fmt::format("{:<22} {:>17} {:>9.1f} ({:>4.0f} %) {:>9.1f} ({:>4.0f} %) {:>13.2f}\n", "all (by time)", "",
                     packed_all, pct(packed_all), blas_all, pct(blas_all), blas_all > 0 ? packed_all / blas_all : 0.0);
    return s;
}

}  // namespace attnlab
