// The variant table as JSON (variant_table.hpp, variants_json): what
// `attnlab variants --json` prints and python/attnlab/variants.json holds.
#include <cstdio>
#include <string>

#include "attnlab/attention/variant_table.hpp"

namespace attnlab {

namespace {

const char* json_bool(bool b) { return b ? "true" : "false"; }

std::string json_text(const char* s) {
    std::string out = "\"";
    for (const char* p = s; *p; ++p) {
        if (*p == '"' || *p == '\\') out += '\\';
        out += *p;
    }
    return out + "\"";
}

const char* sign_name(weight_sign s) {
    switch (s) {
        case weight_sign::positive: return "positive";
        case weight_sign::non_negative: return "non_negative";
        case weight_sign::any: return "any";
    }
    return "?";
}

// [[power, coefficient], ...]
std::string terms_json(const series_terms& terms) {
    std::string out = "[";
    for (const series_term& t : terms) {
        char c[32];
        std::snprintf(c, sizeof c, "%.17g", t.coefficient);
        out += (out.size() > 1 ? ", [" : "[") + std::to_string(t.power) + ", " + c + "]";
    }
    return out + "]";
}

// A numerator's row; the sign and the terms at orders 1 and 2 (a row's sign
// depends on the order's parity alone, which test_variant_table checks).
std::string numerator_json(const numerator_traits& r) {
    attention_config at2;
    at2.numerator = r.kind;
    at2.order = 2;
    return std::string("{\"name\": ") + json_text(r.name) + ", \"family\": \"" +
           (r.family == numerator_family::score_kernel ? "score_kernel" : "feature_map") +
           "\", \"takes_order\": " + json_bool(r.takes_order) + ", \"finite_state\": " + json_bool(r.finite_state) +
           ", \"sign_at_odd_order\": \"" + sign_name(r.sign(1)) + "\", \"sign_at_even_order\": \"" +
           sign_name(r.sign(2)) + "\", \"terms_at_order_1\": " + terms_json(r.terms(1)) +
           ", \"terms_at_order_2\": " + terms_json(r.terms(2)) +
           ", \"label_at_order_2\": " + json_text(numerator_label(at2).c_str()) +
           ", \"summary\": " + json_text(r.summary) + "}";
}

std::string denominator_json(const denominator_traits& r) {
    return std::string("{\"name\": ") + json_text(r.name) + ", \"uses_weight_sum\": " + json_bool(r.uses_weight_sum) +
           ", \"scale_invariant\": " + json_bool(r.scale_invariant) +
           ", \"has_output_gate\": " + json_bool(r.has_output_gate) + ", \"detachable\": " + json_bool(r.detachable) +
           ", \"out_norm_params\": " + std::to_string(r.out_norm_params) + ", \"summary\": " + json_text(r.summary) +
           "}";
}

}  // namespace

std::string variants_json() {
    attention_config clamped;  // exp clamp 5/softmax: how a label writes a clamp
    clamped.clamp = 5.0;
    std::string out = "{\n  \"numerators\": [\n";
    for (int i = 0; i < numerator_count; ++i)
        out += "    " + numerator_json(numerator_rows()[i]) + (i + 1 < numerator_count ? ",\n" : "\n");
    out += "  ],\n  \"denominators\": [\n";
    for (int i = 0; i < denominator_count; ++i)
        out += "    " + denominator_json(denominator_rows()[i]) + (i + 1 < denominator_count ? ",\n" : "\n");
    out += "  ],\n  \"label_of_exp_clamp_5_softmax\": " + json_text(variant_label(clamped).c_str()) + "\n}\n";
    return out;
}

}  // namespace attnlab
