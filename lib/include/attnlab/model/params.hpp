// All parameters of a model live in one flat buffer; a param_layout names
// the tensors inside it (PyTorch names and shapes of docs/model.md, so that
// checkpoints and the optimizer see the same list), llm.c style. Gradients
// and optimizer moments use the same layout over buffers of the same size.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/io/safetensors.hpp"  // tensor_list

namespace attnlab {

enum class param_init {
    normal,           // N(0, 0.02^2)
    normal_residual,  // N(0, (0.02 / sqrt(2 L))^2): output projections of attention and MLP
    ones,             // norm gains
    zeros,            // biases
    first_row_ones,   // short convolution (K, 3C): w[0] = 1, others 0, the identity
};

struct param_tensor {
    std::string name;        // e.g. "blocks.0.attn.q.weight"
    std::vector<int> shape;  // e.g. {D, D}, Linear weights are [out, in]
    std::size_t offset = 0;  // into the flat buffer
    std::size_t size = 0;    // product of shape
    param_init init = param_init::normal;
    bool decay = true;  // weight decay on matrices and embeddings only
};

class param_layout {
public:
    // Appends a tensor and returns its offset.
    std::size_t add(std::string name, std::vector<int> shape, param_init init, bool decay);
    const std::vector<param_tensor>& tensors() const { return tensors_; }
    std::size_t total() const { return total_; }
    const param_tensor& find(const std::string& name) const;  // throws std::out_of_range
    // The tensors as the checkpoint file stores them (io/safetensors.hpp).
    tensor_list named_tensors() const;

private:
    std::vector<param_tensor> tensors_;
    std::size_t total_ = 0;
};

// Offsets of one block's tensors in the flat buffer (npos when absent).
struct block_offsets {
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    std::size_t attn_norm = npos, q = npos, k = npos, v = npos, o = npos;
    std::size_t in_gate = npos, in_gate_bias = npos, out_gate = npos, out_gate_bias = npos;
    std::size_t out_norm = npos;    // gain, then bias for layernorm (contiguous)
    std::size_t short_conv = npos;  // (K, 3C) with model.short_conv K > 0
    std::size_t mlp_norm = npos, mlp_gate = npos, mlp_up = npos, mlp_up_bias = npos, mlp_down = npos,
                mlp_down_bias = npos;
};

struct model_offsets {
    std::size_t embed = 0, pos = block_offsets::npos, norm = 0, head = 0;
    std::vector<block_offsets> blocks;
};

// The layout of docs/model.md for a model config, vocabulary V and longest input T_max.
param_layout build_param_layout(const model_config& m, const attention_config& a, int V, int T_max,
                                model_offsets& offsets);

// A linear layer's weight (out, in) at `offset` of the flat buffer.
struct linear_weight {
    std::size_t offset = 0;
    std::size_t out = 0, in = 0;  // sizes as the plan sees them (absurd configs included: no int overflow)
};
// The weights the model's forward multiplies rows by, one entry per product:
// q, k and v as one (3C, C) weight and SwiGLU's gate and up as one (2F, C)
// (adjacent in the layout), then o, the MLP's down (and gelu's up), the head.
std::vector<linear_weight> forward_product_weights(const model_config& m, const model_offsets& offsets, int V);

}  // namespace attnlab
