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

template transformer<float> make_model<float>(const run_config&);
template transformer<double> make_model<double>(const run_config&);

}  // namespace attnlab
