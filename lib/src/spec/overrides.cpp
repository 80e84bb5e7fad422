// Typed overrides of a resolved configuration and the limits of each
// purpose (see attnlab/spec/overrides.hpp): the configuration's own values
// become the base entries of a run, the overrides its --set entries, and the
// run is resolved as a spec's is (resolve.hpp).
#include "attnlab/spec/overrides.hpp"

#include <algorithm>

#include "attnlab/spec/did_you_mean.hpp"
#include "resolve.hpp"
#include "schema.hpp"
#include "sweep.hpp"

namespace attnlab {

using namespace spec_internal;

const config_limits& training_limits() {
    static const config_limits limits{20, {}, "", ""};
    return limits;
}

const config_limits& evaluation_limits() {
    static const config_limits limits = [] {
        // task.seq_len and task.pairs score lookup and text models on longer (or shorter) windows than they
        // were trained on: extrapolation; a model with learned positions is refused by the parameter check.
        const std::vector<std::string> test = {"task.test_examples", "task.test_min_len", "task.test_max_len",
                                               "task.seq_len", "task.pairs"};
        const std::vector<std::string> variant = {"attention.numerator", "attention.order", "attention.denominator"};
        config_limits l{160, test, "eval cannot change it", ""};
        l.keys.insert(l.keys.end(), variant.begin(), variant.end());
        l.why = "eval changes only " + join(test, ", ") + ", and " + join(variant, ", ") +
                " when the parameters stay the same; other keys would change the trained model";
        return l;
    }();
    return limits;
}

namespace {

// The values of a resolved configuration as a base the overrides apply to
// (a key that does not apply, or is left unwritten at its default, is absent
// as in its config.yaml). Its files are recorded already: not read again.
config_source source_of(const run_config& config) {
    config_source src;
    src.file = "--set";
    for (const key_def& d : schema())
        if (applies(d, config))
            if (std::optional<value> v = d.get(config))
                src.values[d.key] = entry{*v, origin::base, {"the configuration", 0, d.key}};
    return src;
}

}  // namespace

run_config apply_overrides(const run_config& config, const std::vector<std::string>& overrides,
                           const config_limits& limits) {
    if (overrides.empty()) return config;
    const config_source base = source_of(config);
    entries with_set = base.values;
    for (const std::string& s : overrides) {
        const std::string key = s.substr(0, s.find('='));
        if (!limits.keys.empty() && std::find(limits.keys.begin(), limits.keys.end(), key) == limits.keys.end())
            fail({"--set", 0, key}, limits.refused + did_you_mean(key, limits.keys) + " (" + limits.why + ")");
        entry e = parse_set(s, limits);
        with_set[e.at.path] = e;
    }
    return resolve(base, with_set, with_set, "");
}

}  // namespace attnlab
