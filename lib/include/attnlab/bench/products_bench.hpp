// attnlab bench products: the model's matrix products, one by one, through
// attnlab's packed kernel (packed_gemm.hpp) and through the BLAS library,
// in GFLOP/s and as a share of the peak FMA bound (peak_fma.hpp), with the
// BLAS library's kernel set named. It shows which kernel is faster at which
// shape, and what OPENBLAS_CORETYPE costs the library (run it twice, with
// and without the variable).
#pragma once
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/ops/peak_fma.hpp"

namespace attnlab {

// One product C (M, N) = op(A) op(B) of the model, named by its layer and pass.
struct product_shape {
    std::string name;  // e.g. "q/k/v forward", "mlp down dW"
    int M = 0, N = 0, K = 0;
    bool trans_a = false, trans_b = false;
    double flops() const { return 2.0 * M * N * K; }
};

// Every distinct product of a block's linear layers and the head, each in
// its three passes (forward x W^T; backward dx = dy W and dW = dy^T x), at
// `rows` rows: the rows of one micro-batch the model multiplies at once.
std::vector<product_shape> model_product_shapes(const model_config& m, int vocab, int rows);

struct product_timing {
    product_shape shape;
    double packed_gflops = 0, blas_gflops = 0;  // medians over rounds, one thread
};

// Alternates the two kernels `rounds` times per shape, each timing enough
// repeats for about `seconds`; one thread, operands in cache as in the model
// (a micro-batch's activations stay in L2).
std::vector<product_timing> run_products_bench(const std::vector<product_shape>& shapes, int rounds, double seconds);

// The table: per shape, GFLOP/s and % of the one-thread peak for each
// kernel, and packed / BLAS; then the flop-weighted totals.
std::string products_bench_report(const std::vector<product_timing>& t, const peak_fma_rate& peak,
                                  const std::string& blas_core, const std::string& label);

// OpenBLAS's kernel set for this CPU ("" without OpenBLAS).
std::string blas_core_name();

}  // namespace attnlab
