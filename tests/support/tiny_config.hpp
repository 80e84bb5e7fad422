// The small run configuration the tests train, size or time: a lookup task
// and a model of a few layers, built from named sizes so that a test states
// only what it changes. Unnamed sizes: the tiny ones below for the task and
// the model, run_config's defaults for training.
#pragma once
#include "attnlab/config/run_config.hpp"

namespace attnlab::test {

struct tiny_sizes {
    int seed = 0;
    // lookup task
    int vocab = 16, seq_len = 8, pairs = 2, test_examples = 16;
    // model (swiglu MLP, RoPE: run_config's defaults)
    int layers = 1, d_model = 16, heads = 2;
    // training: run_config's defaults
    int steps = train_config{}.steps, batch = train_config{}.batch;
    double lr = train_config{}.lr;
    int warmup = train_config{}.warmup, eval_every = train_config{}.eval_every;
};

inline run_config tiny_config(const tiny_sizes& s = {}) {
    run_config c;
    c.seed = s.seed;
    c.task.kind = task_kind::lookup;
    c.task.vocab = s.vocab;
    c.task.seq_len = s.seq_len;
    c.task.pairs = s.pairs;
    c.task.test_examples = s.test_examples;
    c.model.layers = s.layers;
    c.model.d_model = s.d_model;
    c.model.heads = s.heads;
    c.train.steps = s.steps;
    c.train.batch = s.batch;
    c.train.lr = s.lr;
    c.train.warmup = s.warmup;
    c.train.eval_every = s.eval_every;
    return c;
}

}  // namespace attnlab::test
