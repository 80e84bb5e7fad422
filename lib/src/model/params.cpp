// Parameter names, shapes and init rules of the model (params.hpp).
#include "attnlab/model/params.hpp"

#include <stdexcept>

#include "attnlab/attention/variants.hpp"

namespace attnlab {

std::size_t param_layout::add(std::string name, std::vector<int> shape, param_init init, bool decay) {
    std::size_t size = 1;
    for (int d : shape) size *= static_cast<std::size_t>(d);
    tensors_.push_back({std::move(name), std::move(shape), total_, size, init, decay});
    total_ += size;
    return tensors_.back().offset;
}

const param_tensor& param_layout::find(const std::string& name) const {
    for (const auto& t : tensors_)
        if (t.name == name) return t;
    throw std::out_of_range("no parameter named " + name);
}

tensor_list param_layout::named_tensors() const {
    tensor_list out;
    out.reserve(tensors_.size());
    for (const auto& t : tensors_) out.push_back({t.name, t.shape, t.offset, t.size});
    return out;
}

param_layout build_param_layout(const model_config& m, const attention_config& a, int V, int T_max,
                                model_offsets& off) {
    param_layout p;
    const int D = m.d_model, F = resolved_mlp_hidden(m);
    off = model_offsets{};
    off.embed = p.add("embed.weight", {V, D}, param_init::normal, true);
    if (m.position == position_kind::learned) off.pos = p.add("pos.weight", {T_max, D}, param_init::normal, true);
    for (int i = 0; i < m.layers; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        block_offsets bo;
        bo.attn_norm = p.add(b + "attn_norm.weight", {D}, param_init::ones, false);
        bo.q = p.add(b + "attn.q.weight", {D, D}, param_init::normal, true);
        bo.k = p.add(b + "attn.k.weight", {D, D}, param_init::normal, true);
        bo.v = p.add(b + "attn.v.weight", {D, D}, param_init::normal, true);
        bo.o = p.add(b + "attn.o.weight", {D, D}, param_init::normal_residual, true);
        // Per-channel taps initialised to the identity, like a norm gain: weight
        // decay would pull them to the zero function, so they have none.
        if (m.short_conv > 0)
            bo.short_conv =
                p.add(b + "attn.short_conv.weight", {m.short_conv, 3 * D}, param_init::first_row_ones, false);
        const int H = m.heads, dv = D / H;
        if (a.in_gate) {
            bo.in_gate = p.add(b + "attn.in_gate.weight", {H, D}, param_init::normal, true);
            bo.in_gate_bias = p.add(b + "attn.in_gate.bias", {H}, param_init::zeros, false);
        }
        if (uses_out_gate(a)) {
            bo.out_gate = p.add(b + "attn.out_gate.weight", {H, D}, param_init::normal, true);
            bo.out_gate_bias = p.add(b + "attn.out_gate.bias", {H}, param_init::zeros, false);
        }
        const int out_norm_params = traits_of(a.denominator).out_norm_params;  // 0, gain, or gain and bias
        if (out_norm_params >= 1) bo.out_norm = p.add(b + "attn.out_norm.weight", {dv}, param_init::ones, false);
        if (out_norm_params >= 2)  // right after the gain: the layer reads both
            p.add(b + "attn.out_norm.bias", {dv}, param_init::zeros, false);
        if (m.mlp != mlp_kind::none) bo.mlp_norm = p.add(b + "mlp_norm.weight", {D}, param_init::ones, false);
        if (m.mlp == mlp_kind::swiglu) {
            bo.mlp_gate = p.add(b + "mlp.gate.weight", {F, D}, param_init::normal, true);
            bo.mlp_up = p.add(b + "mlp.up.weight", {F, D}, param_init::normal, true);
            bo.mlp_down = p.add(b + "mlp.down.weight", {D, F}, param_init::normal_residual, true);
        } else if (m.mlp == mlp_kind::gelu) {
            bo.mlp_up = p.add(b + "mlp.up.weight", {F, D}, param_init::normal, true);
            bo.mlp_up_bias = p.add(b + "mlp.up.bias", {F}, param_init::zeros, false);
            bo.mlp_down = p.add(b + "mlp.down.weight", {D, F}, param_init::normal_residual, true);
            bo.mlp_down_bias = p.add(b + "mlp.down.bias", {D}, param_init::zeros, false);
        }
        off.blocks.push_back(bo);
    }
    off.norm = p.add("norm.weight", {D}, param_init::ones, false);
    off.head = p.add("head.weight", {V, D}, param_init::normal, true);
    return p;
}

std::vector<linear_weight> forward_product_weights(const model_config& m, const model_offsets& offsets, int V) {
    const std::size_t C = static_cast<std::size_t>(m.d_model), F = static_cast<std::size_t>(resolved_mlp_hidden(m));
    std::vector<linear_weight> w;
    for (const block_offsets& bo : offsets.blocks) {
        w.push_back({bo.q, 3 * C, C});
        w.push_back({bo.o, C, C});
        if (m.mlp == mlp_kind::swiglu) w.push_back({bo.mlp_gate, 2 * F, C});
        if (m.mlp == mlp_kind::gelu) w.push_back({bo.mlp_up, F, C});
        if (m.mlp != mlp_kind::none) w.push_back({bo.mlp_down, C, F});
    }
    w.push_back({offsets.head, static_cast<std::size_t>(V), C});
    return w;
}

}  // namespace attnlab
