#include "attnlab/model/make_model.hpp"

#include <algorithm>

namespace attnlab {

batch_shape run_batch_shape(const run_config& cfg) {
    return {std::max(cfg.train.batch, 1), std::max(train_seq_len(cfg.task), test_seq_len(cfg.task))};
}

template <class T>
transformer<T> make_model(const run_config& cfg) {
    transformer<T> model(cfg.model, cfg.attention, model_vocab_size(cfg.task), max_seq_len(cfg.task));
    const batch_shape shape = run_batch_shape(cfg);
    model.reserve(shape.B, shape.T);
    return model;
}

buffer_plan run_buffer_plan(const run_config& cfg, int threads, std::size_t scalar_bytes) {
    const batch_shape shape = run_batch_shape(cfg);
    buffer_plan_input in;
    in.model = cfg.model;
    in.attention = cfg.attention;
    in.vocab = model_vocab_size(cfg.task);
    in.max_T = max_seq_len(cfg.task);
    in.B = shape.B;
    in.T = shape.T;
    in.threads = threads;
    in.float_bytes = scalar_bytes;
    return plan_model_buffers(in);
}

template transformer<float> make_model<float>(const run_config&);
template transformer<double> make_model<double>(const run_config&);

}  // namespace attnlab
