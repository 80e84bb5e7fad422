// The parallel machinery of the transformer (transformer.hpp): data-parallel
// shards of whole sequences, one OpenMP region per call, the micro-batches of
// forward_backward, the fixed-order sum of the threads' gradient buffers, the
// activation buffers (reserve), the cache of transposed product weights and
// the op timers. The maths each shard runs is in transformer.cpp.
#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include "attnlab/model/transformer.hpp"
#include "attnlab/ops/small_gemm.hpp"
#include "transformer_detail.hpp"

namespace attnlab {

using model_detail::zero;

namespace {
// Activation elements (rows x d_model) a data-parallel shard must have at
// least: a tiny model (the gradient checks' B 2, T 5, d 8) runs on one thread.
constexpr long min_shard_work = 1L << 13;
// Rows of a micro-batch of forward_backward (whole sequences, at least one).
// 64 rows of a d_model 64 model keep a layer's activations (about 0.3 MB)
// in the core's L2 until the backward reads them. Measured on quickstart
// (B 32, T 64), forward_backward against forward + backward in one process,
// medians of 20 alternating samples: +6 % on 2 threads, +6 to +10 % on 1;
// 128 and 256 rows gained less. A d_model 256 model, one sequence of 256 per
// micro-batch, runs as fast as before (within 1 %).
constexpr int micro_batch_rows = 64;

#ifdef ATTNLAB_OPENBLAS
extern "C" void openblas_set_num_threads(int);
// The model calls the products from its own data-parallel threads: OpenBLAS
// must not start threads of its own inside them.
const bool openblas_single_threaded = [] {
    openblas_set_num_threads(1);
    return true;
}();
#endif
}  // namespace

template <class T>
void transformer<T>::init_parallel() {
    // The forward product weights read transposed, each at its offset into transposed_weights_.
    std::size_t at = 0;
    for (const linear_weight& w : forward_product_weights(m_, off_, V_))
        if (reads_transposed(w)) {
            transposed_.push_back({w, at});
            at += w.out * w.in;
        }
    if (at != transposed_weight_elements(m_, off_, V_)) throw std::logic_error("transposed weights: size disagrees");
    transposed_weights_.assign(at, T(0));
    times_.names = {"embedding",         "rmsnorm", "q/k/v (+rope, gates)", "attention",
                    "output projection", "mlp",     "head + loss"};
    reset_timings();
}

template <class T>
void transformer<T>::enable_op_timing(bool on) {
    timing_ = on;
}

template <class T>
void transformer<T>::reset_timings() {
    times_.forward_s.assign(op_kinds, 0.0);
    times_.backward_s.assign(op_kinds, 0.0);
    times_.passes = 0;
}

template <class T>
const T* transformer<T>::pt(std::size_t off) const {
    for (const transposed_weight& t : transposed_)
        if (t.w.offset == off) return transposed_weights_.data() + t.at;
    return nullptr;
}

template <class T>
void transformer<T>::transpose_weights() {
    for (const transposed_weight& t : transposed_)
        transpose_into(transposed_weights_.data() + t.at, p(t.w.offset), static_cast<int>(t.w.out),
                       static_cast<int>(t.w.in), static_cast<int>(t.w.in));
}

template <class T>
void transformer<T>::reserve(int B, int T_len) {
    if (B <= cap_B_ && T_len <= cap_T_) return;
    if (T_len > max_T_) throw std::invalid_argument("sequence longer than the model's max_T");
    cap_B_ = std::max(B, cap_B_);
    cap_T_ = std::max(T_len, cap_T_);
    buffer_plan_input in;
    in.model = m_;
    in.attention = a_;
    in.vocab = V_;
    in.max_T = max_T_;
    in.B = cap_B_;
    in.T = cap_T_;  // answer rows: at most every row
    in.float_bytes = sizeof(T);
    plan_ = plan_model_buffers(in);
    using mb = model_buffer;
    auto n = [&](mb b) { return plan_.elements(b); };
    arena_.assign(plan_.arena_elements, T(0));  // every float buffer, carved by plan_
    caches_.resize(m_.layers);
    for (auto& c : caches_) attn_.init_cache(c, cap_B_, cap_T_);  // the plan's cache_* entries
    logits_.assign(n(mb::logits), T(0));
    losses_.reserve(n(mb::answer_losses));
    ans_rows_.reserve(n(mb::answer_rows));
    ans_tgt_.reserve(n(mb::answer_targets));
    ans_pred_.reserve(n(mb::answer_predictions));
}

template <class T>
void transformer<T>::plan_shards(int B) {
    // The recurrent form (evaluation only) keeps one state per (b, h) and
    // parallelises over them itself: one shard.
    // Below min_shard_work per thread the threads cost more than they save.
    const int by_work = static_cast<int>(static_cast<long>(B) * T_ * shape_.C / min_shard_work);
    const int P = recurrent_ ? 1 : std::max(1, std::min({omp_get_max_threads(), B, by_work}));
    shards_.assign(P, shard{});
    // Per-thread buffers of the plan: attention scratch (sized by the
    // attention layer on first use) and threads 1..'s gradients.
    if (static_cast<int>(scratch_.size()) < P) scratch_.resize(P);
    if (static_cast<int>(shard_grads_.size()) < P - 1) shard_grads_.resize(P - 1);
    for (auto& g : shard_grads_)
        if (g.size() != plan_.elements(model_buffer::shard_grads))
            g.assign(plan_.elements(model_buffer::shard_grads), T(0));
    for (int s = 0; s < P; ++s)
        shards_[s] = shard_of(static_cast<int>(static_cast<long>(B) * s / P),
                              static_cast<int>(static_cast<long>(B) * (s + 1) / P));
}

template <class T>
typename transformer<T>::shard transformer<T>::shard_of(int b0, int b1) const {
    // answer rows are in row order: [a0, a1) are those in rows [b0 T, b1 T)
    const auto first = std::lower_bound(ans_rows_.begin(), ans_rows_.end(), b0 * T_);
    const auto last = std::lower_bound(first, ans_rows_.end(), b1 * T_);
    shard sh;
    sh.b0 = b0;
    sh.b1 = b1;
    sh.a0 = static_cast<int>(first - ans_rows_.begin());
    sh.a1 = static_cast<int>(last - ans_rows_.begin());
    return sh;
}

template <class T>
void transformer<T>::begin_batch(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn) {
    reserve(B, Tn);
    B_ = B;
    T_ = Tn;
    tokens_ = tokens;
    const int N = B * Tn;

    // The answer rows: only they reach the head and the loss.
    ans_rows_.clear();
    ans_tgt_.clear();
    for (int n = 0; n < N; ++n)
        if (targets[n] != no_target) {
            if (targets[n] < 0 || targets[n] >= V_) throw std::out_of_range("target outside the vocabulary");
            ans_rows_.push_back(n);
            ans_tgt_.push_back(targets[n]);
        }
    const int A = static_cast<int>(ans_rows_.size());
    losses_.resize(A);
    ans_pred_.resize(A);
    plan_shards(B);
    transpose_weights();
}

template <class T>
T transformer<T>::mean_loss() const {
    const int A = static_cast<int>(losses_.size());
    double total = 0;  // in row order: the same sum for any thread count
    for (int a = 0; a < A; ++a) total += losses_[a];
    return A > 0 ? static_cast<T>(total / A) : T(0);
}

template <class T>
T transformer<T>::forward(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn) {
    begin_batch(tokens, targets, B, Tn);
    const int P = static_cast<int>(shards_.size());
    if (P == 1) {
        forward_shard(shards_[0], scratch_[0], timing_);
    } else {
#pragma omp parallel num_threads(P)
        {
            const int s = omp_get_thread_num();
            forward_shard(shards_[s], scratch_[s], timing_ && s == 0);
        }
    }
    if (timing_) ++times_.passes;
    return mean_loss();
}

template <class T>
int transformer<T>::micro_batch_sequences(int Tn) {
    return std::max(1, micro_batch_rows / std::max(1, Tn));
}

template <class T>
T transformer<T>::forward_backward(const std::int32_t* tokens, const std::int32_t* targets, int B, int Tn) {
    if (recurrent_) throw std::logic_error("forward_backward() needs the parallel attention form");
    begin_batch(tokens, targets, B, Tn);
    const int P = static_cast<int>(shards_.size()), per_micro_batch = micro_batch_sequences(Tn);
    // Thread s: its shard in micro-batches, each forward then backward; the
    // weight gradients accumulate over them (backward_shard adds).
    auto run_shard = [&](int s) {
        T* grad = grads.data();
        if (s > 0) {
            grad = shard_grads_[s - 1].data();
            zero(grad, grads.size());
        }
        const shard& sh = shards_[s];
        for (int b0 = sh.b0; b0 < sh.b1; b0 += per_micro_batch) {
            const shard mb = shard_of(b0, std::min(sh.b1, b0 + per_micro_batch));
            forward_shard(mb, scratch_[s], timing_ && s == 0);
            backward_shard(mb, grad, scratch_[s], timing_ && s == 0);
        }
    };
    if (P == 1) {
        run_shard(0);
    } else {
#pragma omp parallel num_threads(P)
        { run_shard(omp_get_thread_num()); }
        reduce_shard_grads();
    }
    if (timing_) ++times_.passes;
    return mean_loss();
}

template <class T>
void transformer<T>::backward() {
    if (recurrent_) throw std::logic_error("backward() needs the parallel attention form");
    const int P = static_cast<int>(shards_.size());
    if (P == 1) {
        backward_shard(shards_[0], grads.data(), scratch_[0], timing_);
        return;
    }
#pragma omp parallel num_threads(P)
    {
        const int s = omp_get_thread_num();
        T* grad = grads.data();
        if (s > 0) {
            grad = shard_grads_[s - 1].data();
            zero(grad, grads.size());
        }
        backward_shard(shards_[s], grad, scratch_[s], timing_ && s == 0);
    }
    reduce_shard_grads();
}

template <class T>
void transformer<T>::reduce_shard_grads() {
    const long n = static_cast<long>(grads.size());
    const int P = static_cast<int>(shards_.size());
    // Elementwise, threads 1..P-1 in order: the same sums whatever the schedule.
#pragma omp parallel for schedule(static) num_threads(P)
    for (long i = 0; i < n; ++i) {
        T sum = grads[i];
        for (int s = 1; s < P; ++s) sum += shard_grads_[s - 1][i];
        grads[i] = sum;
    }
}

template <class T>
void transformer<T>::zero_grad() {
    std::fill(grads.begin(), grads.end(), T(0));
}

// The members defined here, for both element types (the class's explicit
// instantiation, in transformer.cpp, may appear in one file only).
#define ATTNLAB_INSTANTIATE_PARALLEL(T)                                                              \
    template void transformer<T>::init_parallel();                                                   \
    template void transformer<T>::enable_op_timing(bool);                                            \
    template void transformer<T>::reset_timings();                                                   \
    template const T* transformer<T>::pt(std::size_t) const;                                         \
    template void transformer<T>::transpose_weights();                                               \
    template void transformer<T>::reserve(int, int);                                                 \
    template void transformer<T>::plan_shards(int);                                                  \
    template typename transformer<T>::shard transformer<T>::shard_of(int, int) const;                \
    template void transformer<T>::begin_batch(const std::int32_t*, const std::int32_t*, int, int);   \
    template T transformer<T>::mean_loss() const;                                                    \
    template T transformer<T>::forward(const std::int32_t*, const std::int32_t*, int, int);          \
    template int transformer<T>::micro_batch_sequences(int);                                         \
    template T transformer<T>::forward_backward(const std::int32_t*, const std::int32_t*, int, int); \
    template void transformer<T>::backward();                                                        \
    template void transformer<T>::reduce_shard_grads();                                              \
    template void transformer<T>::zero_grad();

ATTNLAB_INSTANTIATE_PARALLEL(float)
ATTNLAB_INSTANTIATE_PARALLEL(double)

}  // namespace attnlab
