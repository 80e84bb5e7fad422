// Decoder-only pre-norm transformer of docs/model.md:
//   x = embed(tokens) [+ pos]
//   per block: x += o(Attn(rope(q(n)), rope(k(n)), v(n))), n = RMSNorm(x)
//              x += MLP(RMSNorm(x))
//   logits = head(RMSNorm(x)) at answer positions only (the loss ignores the rest).
// Parameters and their gradients are flat buffers (param_layout); activations
// live in one arena, sized once by reserve(B, T) from the buffer plan
// (buffer_plan.hpp) and reused, so a training step allocates nothing in the
// layers. Each block runs through block_forward and block_backward
// (block.hpp), the functions generation calls too.
// Parallelism: data parallel. forward(), backward() and forward_backward()
// each open ONE OpenMP region in which thread s runs the whole model on its
// shard of the batch (whole sequences, rows [b0 T, b1 T)) with serial
// kernels; a backward gives threads 1.. their own gradient buffer and sums
// them into grads in a fixed order. Results are the same for the same thread
// count; another thread count sums in another order (last bits differ). Two
// files: transformer.cpp has the maths of one shard, forward then backward, top
// to bottom; transformer_parallel.cpp the machinery around it (shards,
// micro-batches, the gradient sum, buffers, weight cache, timers).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/attention.hpp"
#include "attnlab/attention/recurrent.hpp"
#include "attnlab/config/run_config.hpp"
#include "attnlab/model/block.hpp"
#include "attnlab/model/buffer_plan.hpp"
#include "attnlab/model/params.hpp"
#include "attnlab/ops/ops.hpp"

namespace attnlab {

// How forward() computes attention: the parallel (quadratic) form, or the
// recurrent form step by step with a fixed-size state (or the key/value
// cache for exp and clamped kernels), docs/attention.md "Recurrent form". Every other
// layer acts on each position alone, so the rest of the model is shared.
enum class attention_form { parallel, recurrent };

template <class T>
class transformer {
public:
    transformer(const model_config& m, const attention_config& a, int vocab, int max_T);

    const model_config& config() const { return m_; }
    const param_layout& layout() const { return layout_; }
    const model_offsets& offsets() const { return off_; }
    const attention_config& attention() const { return a_; }
    int vocab() const { return V_; }
    int max_T() const { return max_T_; }

    std::vector<T> params;  // flat, layout()
    std::vector<T> grads;   // same layout

    // Draws the docs/model.md initialisation from `seed`.
    void init_params(std::uint64_t seed);
    // Switches the attention of forward(); the recurrent form is for
    // evaluation only (backward() refuses it).
    void set_attention_form(attention_form form, state_layout layout = state_layout::symmetric);
    attention_form form() const { return recurrent_ ? attention_form::recurrent : attention_form::parallel; }
    // How the parallel form computes attention over sequences of Tn tokens
    // (quadratic or chunked: attention.form, or the cheaper for `auto`), as
    // forward() does it: what a run reports, nobody recomputes it.
    parallel_form parallel_form_at(int Tn) const;

    // Sizes the activation buffers for batches of up to B x T.
    void reserve(int B, int Tn);
    // The plan of the last reserve (per-thread copies: one shard).
    const buffer_plan& buffers() const { return plan_; }

    // tokens, targets (B, T); returns the mean cross-entropy over answer
    // positions (targets != no_target), 0 if there are none.
    T forward(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn);
    // grads += d(mean loss)/d(params) for the last forward.
    void backward();
    // forward() and backward() of one training step in one call, with the
    // same results up to the order of the gradient sums: each thread runs its
    // shard in micro-batches of whole sequences (micro_batch_sequences), the
    // forward and then the backward of each, so that the backward finds a
    // micro-batch's activations still in cache (at most a few hundred rows)
    // instead of reading the whole shard's back from memory.
    T forward_backward(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn);
    // Sequences per micro-batch of forward_backward for sequences of Tn tokens.
    static int micro_batch_sequences(int Tn);
    void zero_grad();

    // The logits (A, V) of the last forward at its answer positions, in row
    // order (attnlab generate reads the last position's).
    const std::vector<T>& answer_logits() const;

    // Threads (batch shards) the last forward ran on.
    int shard_count() const { return static_cast<int>(shards_.size()); }

    // Per-op wall time of forward and backward, measured on thread 0's shard
    // (every shard does the same work). Off by default: timing costs a clock
    // read per op.
    struct op_times {
        std::vector<std::string> names;             // op kinds in model order
        std::vector<double> forward_s, backward_s;  // accumulated seconds per kind
        long passes = 0;                            // forward passes timed
    };
    void enable_op_timing(bool on);
    const op_times& timings() const { return times_; }
    void reset_timings();

    // Of the last forward, in row order of the (B, T) batch:
    const std::vector<int>& answer_rows() const { return ans_rows_; }           // (A) row index b*T + t
    const std::vector<std::int32_t>& predictions() const { return ans_pred_; }  // (A) argmax token
    const std::vector<T>& answer_losses() const { return losses_; }             // (A) cross-entropy
    // Attention rows of the last forward whose softmax sum z_t was <= 0
    // (possible with signed kernels: linear, cosine, odd Taylor orders).
    long nonpositive_denominator_rows() const;
    T min_abs_denominator() const;  // smallest |z_t| of the last forward (inf without softmax)
    // q and k of block `layer` in the last forward, after RoPE: (B, T, C), heads
    // in column blocks of HS. The scores of the attention numerator are made
    // from exactly these (attnlab probe reads them).
    const T* queries(int layer) const { return plan_.carve(arena_.data(), model_buffer::q, checked_layer(layer)); }
    const T* keys(int layer) const { return plan_.carve(arena_.data(), model_buffer::k, checked_layer(layer)); }

private:
    // ---- the parallel machinery (transformer_parallel.cpp)
    // The transposed-weight cache and the op timers, from the constructor.
    void init_parallel();
    // One thread's part of the batch: sequences [b0, b1), answer rows [a0, a1).
    struct shard {
        int b0 = 0, b1 = 0, a0 = 0, a1 = 0;
    };
    // Answer rows, buffers and shards of a batch: the first half of forward().
    void begin_batch(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn);
    void plan_shards(int B);
    // Sequences [b0, b1) with their answer rows.
    shard shard_of(int b0, int b1) const;
    T mean_loss() const;
    // Adds the other threads' gradient buffers into grads (fixed order).
    void reduce_shard_grads();

    // ---- the maths of one shard (transformer.cpp)
    void forward_shard(const shard& sh, attention_scratch<T>& scratch, bool timed);
    const T* answer_norm_rows(const shard& sh);  // (a1 - a0, C): the shard's answer rows of lnf_
    void backward_shard(const shard& sh, T* grad, attention_scratch<T>& scratch, bool timed);

    enum op_kind { op_embed, op_norm, op_qkv, op_attention, op_out_proj, op_mlp, op_head, op_kinds };
    op_times times_;
    bool timing_ = false;

    // The position-mixing parts of a block on one shard (transformer.cpp).
    class shard_mixer;

    const T* p(std::size_t off) const { return params.data() + off; }
    // W^T of the forward product weight at param offset off, or null when its
    // product reads W as it is (transposed_weights_).
    const T* pt(std::size_t off) const;
    // Refreshes transposed_weights_ from params (once per forward).
    void transpose_weights();
    // Block l's weights, with the transposed copies its products read.
    block_params<T> block_params_of(int l) const;
    // Element `first` of copy `copy` of arena buffer b.
    T* buf(model_buffer b, std::size_t copy, long first) { return plan_.carve(arena_.data(), b, copy, first); }
    std::size_t checked_layer(int layer) const;
    // Every row is an answer (language modelling): answer a is row a, and the
    // head reads the final norm's rows and writes their gradient in place of their answer-row copies.
    bool every_row_answers() const { return static_cast<long>(ans_rows_.size()) == static_cast<long>(B_) * T_; }

    model_config m_;
    int V_, max_T_;
    model_offsets off_;  // filled by build_param_layout: declared before layout_
    param_layout layout_;
    attention_config a_;
    attention_layer<T> attn_;
    std::unique_ptr<recurrent_attention<T>> recurrent_;  // set: forward() runs the recurrent form
    std::unique_ptr<rope_tables<T>> rope_;
    block_shape<T> shape_;  // every block's sizes: C, NH heads of HS, F (rope_: its tables)
    // The forward product weights linear_forward reads transposed (small
    // products), each as W^T (in, out) at its offset into transposed_weights_.
    struct transposed_weight {
        linear_weight w;
        std::size_t at = 0;
    };
    std::vector<transposed_weight> transposed_;
    std::vector<T> transposed_weights_;

    // activations of the last forward (B_, T_), allocated by reserve from plan_
    int B_ = 0, T_ = 0, cap_B_ = 0, cap_T_ = 0;
    buffer_plan plan_;
    std::vector<T> arena_;                    // the plan's float buffers
    std::vector<attention_cache<T>> caches_;  // per layer
    const std::int32_t* tokens_ = nullptr;
    std::vector<int> ans_rows_;                     // (A)
    std::vector<std::int32_t> ans_tgt_, ans_pred_;  // (A)
    std::vector<T> logits_, losses_;                // (A, V), (A)

    std::vector<shard> shards_;                  // of the last forward
    std::vector<attention_scratch<T>> scratch_;  // per thread
    std::vector<std::vector<T>> shard_grads_;    // threads 1..: own gradient buffers (params)
};

}  // namespace attnlab
