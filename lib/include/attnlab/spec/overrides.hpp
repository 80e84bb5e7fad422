// Typed overrides of a resolved run configuration (docs/spec-reference.md,
// `--set`): "key=value" strings applied to a run_config directly, each value
// read and checked by the schema as the spec loader reads a --set, then the
// conditional keys, derived defaults and rules between keys resolved as for a
// run of a spec. No YAML document is written or parsed on the way.
//
// What may change, and how far, depends on the purpose: the limits below are
// the one statement of attention.order's bounds (training: a spec's runs;
// evaluation: what `attnlab eval --set` and `--truncate` may score a trained
// run as) and of the keys eval may change.
#pragma once
#include <string>
#include <vector>

#include "attnlab/config/run_config.hpp"

namespace attnlab {

struct config_limits {
    // attention.order takes lowest_order (config/variant_list.hpp) .. max_order.
    int max_order = 0;
    // The keys overrides may change (empty: every key of the schema); another
    // is refused as "--set: KEY: <refused>, did you mean ...? (<why>)".
    std::vector<std::string> keys;
    std::string refused, why;
};

// Training: every key; attention.order up to 20. The recurrent state of
// order n holds C(HS+n-1, n) features per head, out of reach beyond that.
const config_limits& training_limits();

// Evaluation of a trained run: the test set's keys (task.test_examples,
// test_min_len, test_max_len) and the variant's (attention.numerator, order,
// denominator), attention.order up to 160: the parallel form costs one pass
// over the scores per order, and the series of exp(s) needs about e |s|
// terms to converge where a trained language model's scores reach |s| ~ 50
// (a 2-layer KJV model: 47.6).
const config_limits& evaluation_limits();

// `config` with `overrides` ("key=value") applied within `limits`. Throws
// config_error "--set: KEY: ..." for a key outside the limits, a value the
// schema refuses (an order beyond max_order included), a key that has no
// effect, or a broken rule between keys.
run_config apply_overrides(const run_config& config, const std::vector<std::string>& overrides,
                           const config_limits& limits);

// The key a report tunes per variant on validation, never compares across
// variants, and summaries group by: the learning rate.
inline constexpr const char* tuned_key = "train.lr";

}  // namespace attnlab
