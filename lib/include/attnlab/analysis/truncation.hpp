// The analysis module (layer 9 of lib/README.md's table): analyses of a
// trained run, read from its folder through run/run_dir.hpp. It owns the
// evaluation of a run with another attention variant (this header),
// per-position loss (per_position.hpp) and the Taylor-term probe
// (probe.hpp); the files the probe writes into a run folder are named in
// run_dir.hpp, below it, so that run/ never includes an analysis.
//
// Evaluating a trained model with another attention variant (attnlab eval
// --set attention.numerator=taylor --set attention.order=N, and the sweep
// attnlab eval --truncate ORDERS, docs/running.md). A model trained with exp
// can be scored with its exp cut to the first n terms of its series (taylor
// order n), to the order-n term alone (power) or to the first-order term
// (linear): the same parameters, every other key as trained. Any variant
// change is allowed exactly when the evaluated model has the same parameter
// names and shapes as the trained one, so the checkpoint loads unchanged;
// nothing new is computed: the variants' own kernels (attention/variants.hpp)
// score the model.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"
#include "attnlab/train/trainer.hpp"

namespace attnlab {

// Why a model trained with `trained` cannot be scored as `evaluated`: the
// first parameter tensor that is not in both or differs in shape, as
// "blocks.0.attn.out_norm.weight (16) is in the evaluated model only"; ""
// when both have the same tensors.
std::string parameter_difference(const run_config& trained, const run_config& evaluated);

// The run's config with eval's --set overrides ("key=value") applied within
// the evaluation limits (spec/overrides.hpp: the test set's keys, and the
// variant's with attention.order up to 160), checked in the spec loader's
// words ("--set: ..."). Throws config_error for a key or value outside them,
// or a variant whose parameters differ from the trained model's (with the reason).
run_config evaluated_config(const run_config& trained, const std::vector<std::string>& overrides);

// "1..16,24,32" -> 1, 2, ..., 16, 24, 32 (increasing, no repeats, each within
// the evaluation limits' orders). Throws config_error naming `option` and the bad part.
std::vector<int> parse_order_list(const std::string& text, const std::string& option);

// One row of a truncation sweep.
struct truncation_row {
    attention_config attention;                          // the variant scored
    eval_metrics m;                                      // on the test set
    eval_precision precision = eval_precision::float32;  // the scalar it was scored in
};

// Scores the finished run `run_dir` (trained with `trained`, its test set
// from `test`: the trained config with eval's test-time keys) first as
// trained, then with `numerator` at each of `orders` (parallel form), every
// row in T: float as trained, or double (the checkpoint widened; eval
// --precision double), where round-off swamps the Taylor polynomial of a
// negative score only below about -(s_max + 37) instead of -(s_max + 16),
// s_max the row's largest score. `progress` is called after each row. Throws
// config_error when the numerator takes no order or changes the parameters.
template <class T = float>
std::vector<truncation_row> truncation_sweep(const std::string& run_dir, const run_config& trained,
                                             const run_config& test, numerator_kind numerator,
                                             const std::vector<int>& orders,
                                             const std::function<void(const truncation_row&)>& progress = {});

// The sweep as CSV: trained,evaluated,numerator,order,test_loss,bits_per_byte,
// token_acc,seq_acc,precision; order empty for a numerator without one,
// bits_per_byte for text only, seq_acc empty for text, precision float or
// double (last, so that readers of the earlier columns by position still work).
std::string truncation_csv(const run_config& trained, const std::vector<truncation_row>& rows);

}  // namespace attnlab
