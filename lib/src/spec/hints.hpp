// "Did you mean" hints for mistyped keys and values. Internal to lib/src/spec/.
#pragma once
#include <string>
#include <vector>

namespace attnlab::spec_internal {

// A name as it may be mistyped (`match`) and what to suggest for it.
struct candidate {
    std::string match, suggest;
};

// ", did you mean 'X'?" for the candidate nearest to `word` (case ignored),
// when it is near enough to be a typo; "" otherwise.
std::string did_you_mean(const std::string& word, const std::vector<candidate>& candidates);

std::vector<candidate> as_candidates(const std::vector<std::string>& names);

// Candidates for a key of the map at `path` in a run config (`section` ""
// for its top, `prefix` "base" in a spec, "" in a config file).
std::vector<candidate> config_candidates(const std::string& section, const std::string& prefix);

// Candidates for a dotted key (sweep, --set).
std::vector<candidate> dotted_candidates();

// The hint for a value of an enum key that is none of its choices: the
// papers' names of attention variants (l2, softmax_gate, linear_elu, ...:
// docs/attention.md "The papers' names") with their spec spelling, else
// did_you_mean over the choices.
std::string choice_hint(const std::string& key, const std::string& value, const std::vector<std::string>& choices);

// For a dotted key that names nothing: the keys it was probably meant to be.
std::string dotted_key_hint(const std::string& key);

}  // namespace attnlab::spec_internal
