// "Did you mean" hints (see hints.hpp).
#include "hints.hpp"

#include "attnlab/spec/did_you_mean.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

#include "diagnostics.hpp"
#include "schema.hpp"

namespace attnlab::spec_internal {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and
// swaps of two neighbours cost 1 each ("modle" is 1 from "model").
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

// when it is near enough to be a typo: at most a third of the word's
// letters off (1 to 3). Ties go to the candidate listed first.
std::string did_you_mean(const std::string& word, const std::vector<candidate>& candidates) {
    if (word.empty() || word.size() > 64) return "";
    const std::string w = lower(word);
    std::size_t best = std::clamp<std::size_t>(word.size() / 3, 1, 3) + 1;
    const candidate* pick = nullptr;
    for (const candidate& c : candidates)
        if (const std::size_t dist = edit_distance(w, lower(c.match)); dist < best) {
            best = dist;
            pick = &c;
        }
    return pick ? ", did you mean '" + pick->suggest + "'?" : "";
}

std::vector<candidate> as_candidates(const std::vector<std::string>& names) {
    std::vector<candidate> out;
    for (const std::string& n : names) out.push_back({n, n});
    return out;
}

// Candidates for a key of the map at `path` in a run config (`section` ""
// for its top, `prefix` "base" in a spec, "" in a config file): the keys of
// that map as written there, then every other key of a run config by its
// last name, suggested with its full path (`lr` directly under base is
// 'base.train.lr').
std::vector<candidate> config_candidates(const std::string& section, const std::string& prefix) {
    std::vector<candidate> out = as_candidates(names_in(section));
    for (const key_def& d : schema()) {
        const std::string s = section_of(d.key);
        if (s == section) continue;
        out.push_back({d.key.substr(s.empty() ? 0 : s.size() + 1), join_path(prefix, d.key)});
    }
    if (!section.empty())
        for (const std::string& n : names_in(""))
            if (is_section(n) && n != section) out.push_back({n, join_path(prefix, n)});
    return out;
}

// Candidates for a dotted key (sweep, --set): every key, by its dotted
// name, then by its last name alone (`order` is 'attention.order').
std::vector<candidate> dotted_candidates() {
    std::vector<candidate> out;
    for (const key_def& d : schema()) out.push_back({d.key, d.key});
    for (const key_def& d : schema())
        if (!section_of(d.key).empty()) out.push_back({d.key.substr(section_of(d.key).size() + 1), d.key});
    return out;
}

// For a dotted key that names nothing: the keys it was probably meant to be.
std::string dotted_key_hint(const std::string& key) {
    std::string section = section_of(key);
    if (section.empty() && is_section(key)) section = key;
    if (!is_section(section)) {
        std::vector<std::string> sections;
        for (const std::string& n : names_in(""))
            if (is_section(n)) sections.push_back(n + ".*");
        return "expected seed or one of " + join(sections, ", ");
    }
    std::vector<std::string> keys;
    for (const std::string& n : names_in(section)) keys.push_back(section + "." + n);
    return "expected one of " + join(keys, ", ");
}

std::string choice_hint(const std::string& key, const std::string& value, const std::vector<std::string>& choices) {
    // The papers' names (Mongaras & Larson; Katharopoulos et al.) and common
    // spellings, matched without case: what the spec writes for each.
    struct alias {
        const char* key;
        const char* name;
        const char* hint;
    };
    static const alias aliases[] = {
        {"attention.denominator", "l2", "'norm'? (the L2 norm)"},
        {"attention.denominator", "l2norm", "'norm'? (the L2 norm)"},
        {"attention.denominator", "l2_norm", "'norm'? (the L2 norm)"},
        {"attention.denominator", "rms_norm", "'rmsnorm'?"},
        {"attention.denominator", "layer_norm", "'layernorm'?"},
        {"attention.denominator", "sum", "'softmax'? (u_t / z_t)"},
        {"attention.denominator", "softmax_gate",
         "'none' with out_gate: true and clamp: 5? (the paper's gate; 'gate' divides it by t)"},
        {"attention.denominator", "softmax_divs_gate", "'gate'? (out gate times u_t / t; with clamp: 5)"},
        {"attention.denominator", "softmax_divs", "'length'? (u_t / t; with clamp: 5)"},
        {"attention.numerator", "softmax", "'exp'? (softmax is numerator: exp, denominator: softmax)"},
        {"attention.numerator", "softmax_gate",
         "'exp'? (the paper's gate is exp, denominator: none, out_gate: true, "
         "clamp: 5)"},
        {"attention.numerator", "linear_elu", "'elu1'?"},
        {"attention.numerator", "elu", "'elu1'? (elu(x) + 1)"},
        {"attention.numerator", "linear_relu", "'relu'?"},
        {"attention.numerator", "linear_cosine", "'cosine'?"},
        {"attention.numerator", "squared", "'power' with order: 2?"},
    };
    const std::string v = lower(value);
    for (const alias& a : aliases)
        if (key == a.key && v == a.name) return std::string(", did you mean ") + a.hint;
    return did_you_mean(value, as_candidates(choices));
}

}  // namespace attnlab::spec_internal

namespace attnlab {

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
    return spec_internal::did_you_mean(word, spec_internal::as_candidates(names));
}

}  // namespace attnlab
