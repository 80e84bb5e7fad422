// The schema of a run configuration (see schema.hpp): the key builders, the
// table of keys, and reading a key's value.
#include "schema.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>

#include "attnlab/attention/variant_table.hpp"
#include "attnlab/tasks/task_table.hpp"
#include "hints.hpp"

namespace attnlab::spec_internal {

namespace {

// `ref` is a generic lambda giving the field of a (const or not) run_config.
template <class Ref>
key_def int_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::integer;
    d.hi = int_max;
    d.set = [ref](run_config& c, const value& v) { ref(c) = static_cast<int>(v.i); };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        value v = value::of(vtype::integer);
        v.i = ref(c);
        return v;
    };
    return d;
}

template <class Ref>
key_def number_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::number;
    d.set = [ref](run_config& c, const value& v) { ref(c) = v.f; };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        if constexpr (std::is_same_v<std::decay_t<decltype(ref(c))>, std::optional<double>>) {
            if (!ref(c)) return std::nullopt;
            value v = value::of(vtype::number);
            v.f = *ref(c);
            return v;
        } else {
            value v = value::of(vtype::number);
            v.f = ref(c);
            return v;
        }
    };
    return d;
}

template <class Ref>
key_def bool_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::boolean;
    d.set = [ref](run_config& c, const value& v) { ref(c) = v.b; };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        value v = value::of(vtype::boolean);
        v.b = ref(c);
        return v;
    };
    return d;
}

// A string; `ref` gives a std::string field. Unset (left out of config.yaml) while empty.
template <class Ref>
key_def text_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::text;
    d.set = [ref](run_config& c, const value& v) { ref(c) = v.name; };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        if (ref(c).empty()) return std::nullopt;
        value v = value::of(vtype::text);
        v.name = ref(c);
        return v;
    };
    return d;
}

// An integer key whose 0 means "not recorded" (task.size): left out of config.yaml then.
key_def unset_when_zero(key_def d) {
    d.get = [get = d.get](const run_config& c) -> std::optional<value> {
        std::optional<value> v = get(c);
        if (v && v->i == 0) return std::nullopt;
        return v;
    };
    return d;
}

// 64 hex digits (sha256sum's output); upper case is taken and written in lower case.
bool is_sha256_hex(const std::string& s) {
    return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The allowed names are the enum's to_string values (for numerators,
// denominators and tasks: their tables' rows), so a new enum value is
// accepted here without another list to keep in step.
template <class E, class Ref>
key_def enum_key(std::string key, Ref ref) {
    key_def d;
    d.key = std::move(key);
    d.type = vtype::choice;
    for (int i = 0; std::string(to_string(static_cast<E>(i))) != "?"; ++i)
        d.choices.emplace_back(to_string(static_cast<E>(i)));
    d.set = [ref, choices = d.choices](run_config& c, const value& v) {
        auto it = std::find(choices.begin(), choices.end(), v.name);
        ref(c) = static_cast<E>(it - choices.begin());
    };
    d.get = [ref](const run_config& c) -> std::optional<value> {
        value v = value::of(vtype::choice);
        v.name = to_string(ref(c));
        return v;
    };
    return d;
}

// A key left out of config.yaml (and summary.csv) while it has its default,
// so that run folders written before the key existed still compare equal.
key_def written_unless_default(key_def d) {
    d.get = [get = d.get](const run_config& c) -> std::optional<value> {
        std::optional<value> v = get(c), dv = get(run_config{});
        if (v && dv && v->text() == dv->text()) return std::nullopt;
        return v;
    };
    return d;
}

// The conditions of the attention keys are the variant table's traits and
// those of the task keys the task table's rows, so a new row is taken in
// without a list of names to keep in step here.
condition numerators_where(bool (*trait)(const numerator_traits&)) {
    condition c{"attention.numerator", {}};
    for (int i = 0; i < numerator_count; ++i)
        if (trait(numerator_rows()[i])) c.values.emplace_back(numerator_rows()[i].name);
    return c;
}
condition denominators_where(bool (*trait)(const denominator_traits&)) {
    condition c{"attention.denominator", {}};
    for (int i = 0; i < denominator_count; ++i)
        if (trait(denominator_rows()[i])) c.values.emplace_back(denominator_rows()[i].name);
    return c;
}
// The tasks whose row lists the task.* key `key`.
condition tasks_reading(const std::string& key) {
    condition c{"task.kind", {}};
    for (const task_traits& t : task_rows())
        if (std::find(t.keys.begin(), t.keys.end(), key) != t.keys.end()) c.values.emplace_back(t.name);
    return c;
}

key_def sha256_key(key_def d) {
    d.text_form = "64 hexadecimal digits (the output of sha256sum)";
    d.text_ok = is_sha256_hex;
    return d;
}

#define FIELD(member) \
    [](auto& c) -> auto& { return c.member; }

}  // namespace

// Every key, in run_config order (the order of config.yaml). Upper bounds
// on d_model and task lengths keep derived sizes (8/3 d, 2 max_len,
// seq_len + 1, noise_len + 2 n_tokens) in int.
const std::vector<key_def>& schema() {
    static const std::vector<key_def> keys = [] {
        const auto reads = [](const char* key) { return tasks_reading(key); };
        const condition takes_order = numerators_where([](const numerator_traits& n) { return n.takes_order; });
        const condition score_kernels =
            numerators_where([](const numerator_traits& n) { return n.family == numerator_family::score_kernel; });
        const condition detachable = denominators_where([](const denominator_traits& d) { return d.detachable; });
        const condition swiglu_only{"model.mlp", {"swiglu"}};
        const double max_len = 1 << 28, max_d_model = 1 << 24;
        return std::vector<key_def>{
            int_key("seed", FIELD(seed)).at_least(0),

            enum_key<task_kind>("task.kind", FIELD(task.kind)).needed(),
            // All but copy: >= 4, a rule; text has no vocab key (bytes: 256).
            int_key("task.vocab", FIELD(task.vocab)).at_least(2).needed().only_when(reads("vocab")),
            // lookup: even and >= 4 P, rules; induction: the random tokens before the last trigger.
            int_key("task.seq_len", FIELD(task.seq_len)).range(3, max_len).needed().only_when(reads("seq_len")),
            int_key("task.pairs", FIELD(task.pairs)).at_least(1).needed().only_when(reads("pairs")),
            number_key("task.power_a", FIELD(task.power_a)).above(0).only_when(reads("power_a")),
            bool_key("task.random_filler", FIELD(task.random_filler)).only_when(reads("random_filler")),
            int_key("task.min_len", FIELD(task.min_len)).range(1, max_len).only_when(reads("min_len")),
            int_key("task.max_len", FIELD(task.max_len)).range(1, max_len).needed().only_when(reads("max_len")),
            int_key("task.test_min_len", FIELD(task.test_min_len)).range(1, max_len).only_when(reads("test_min_len")),
            int_key("task.test_max_len", FIELD(task.test_max_len)).range(1, max_len).only_when(reads("test_max_len")),
            int_key("task.n_tokens", FIELD(task.n_tokens)).range(1, max_len).needed().only_when(reads("n_tokens")),
            int_key("task.noise_len", FIELD(task.noise_len)).range(0, max_len).needed().only_when(reads("noise_len")),
            // text: the file (checked by the loader, spec/task_file.cpp), holdout < 0.5 (a rule).
            text_key("task.path", FIELD(task.path)).needed().only_when(reads("path")),
            number_key("task.holdout", FIELD(task.holdout)).above(0).only_when(reads("holdout")),
            sha256_key(text_key("task.sha256", FIELD(task.sha256)).only_when(reads("sha256"))),
            unset_when_zero(int_key("task.size", FIELD(task.size)).at_least(1).only_when(reads("size"))),
            int_key("task.test_examples", FIELD(task.test_examples)).at_least(1),
            int_key("task.val_examples", FIELD(task.val_examples)).at_least(1),  // default: test_examples
            int_key("task.train_examples", FIELD(task.train_examples)).at_least(0),

            int_key("model.layers", FIELD(model.layers)).range(1, 64).needed(),
            int_key("model.d_model", FIELD(model.d_model)).range(1, max_d_model).needed(),
            int_key("model.heads", FIELD(model.heads)).range(1, max_d_model).needed(),
            enum_key<mlp_kind>("model.mlp", FIELD(model.mlp)),
            int_key("model.mlp_hidden", FIELD(model.mlp_hidden)).at_least(1).only_when(swiglu_only),
            enum_key<position_kind>("model.position", FIELD(model.position)),
            // 1 (a per-channel scale, not a convolution) is refused by a rule (rules.cpp).
            written_unless_default(int_key("model.short_conv", FIELD(model.short_conv)).range(0, max_short_conv)),

            enum_key<numerator_kind>("attention.numerator", FIELD(attention.numerator)).needed(),
            int_key("attention.order", FIELD(attention.order))
                .range(lowest_order, int_max)
                .up_to_limit(&config_limits::max_order)
                .needed()
                .only_when(takes_order),
            number_key("attention.clamp", FIELD(attention.clamp)).only_when(score_kernels),
            enum_key<denominator_kind>("attention.denominator", FIELD(attention.denominator)).needed(),
            bool_key("attention.in_gate", FIELD(attention.in_gate)),
            bool_key("attention.out_gate", FIELD(attention.out_gate)),
            bool_key("attention.detach_denominator", FIELD(attention.detach_denominator)).only_when(detachable),
            number_key("attention.eps", FIELD(attention.eps)).above(0),
            // chunked needs a finite state of Taylor order <= 4: a rule (rules.cpp).
            written_unless_default(enum_key<parallel_form>("attention.form", FIELD(attention.form))),
            written_unless_default(int_key("attention.chunk", FIELD(attention.chunk)).range(1, 1 << 20)),

            int_key("train.steps", FIELD(train.steps)).at_least(1).needed(),
            int_key("train.batch", FIELD(train.batch)).at_least(1),
            number_key("train.lr", FIELD(train.lr)).above(0).needed(),
            number_key("train.min_lr", FIELD(train.min_lr)).at_least(0),
            int_key("train.warmup", FIELD(train.warmup)).at_least(0),
            enum_key<schedule_kind>("train.schedule", FIELD(train.schedule)),
            number_key("train.weight_decay", FIELD(train.weight_decay)).at_least(0),
            number_key("train.clip", FIELD(train.clip)).at_least(0),
            int_key("train.eval_every", FIELD(train.eval_every)).at_least(1),
            // Left out of config.yaml at 0, so runs from before the key keep their config.
            written_unless_default(int_key("train.log_every", FIELD(train.log_every)).at_least(0)),
            // A run folder or a checkpoint file (spec/task_file.cpp resolves and hashes it); unset: random.
            text_key("train.init", FIELD(train.init)),
            sha256_key(text_key("train.init_sha256", FIELD(train.init_sha256))),
        };
    }();
    return keys;
}

#undef FIELD

key_def within(const key_def& d, const config_limits& limits) {
    key_def bounded = d;
    if (d.upper_limit) bounded.hi = limits.*d.upper_limit;
    return bounded;
}

const key_def* find_key(const std::string& key) {
    for (const key_def& d : schema())
        if (d.key == key) return &d;
    return nullptr;
}

std::string section_of(const std::string& key) {
    auto dot = key.find('.');
    return dot == std::string::npos ? "" : key.substr(0, dot);
}

bool is_section(const std::string& name) {
    return !name.empty() &&
           std::any_of(schema().begin(), schema().end(), [&](const key_def& d) { return section_of(d.key) == name; });
}

// The names allowed in a map: `section` "" is the top of a run config.
std::vector<std::string> names_in(const std::string& section) {
    std::vector<std::string> out;
    for (const key_def& d : schema()) {
        std::string s = section_of(d.key);
        std::string name = section.empty() ? (s.empty() ? d.key : s) : d.key.substr(s.size() + 1);
        if (s == section || section.empty())
            if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

namespace {
std::string format_bound(double x) {
    return x == std::floor(x) ? std::to_string(static_cast<long long>(x)) : format_number(x);
}
}  // namespace

std::string expected(const key_def& d) {
    switch (d.type) {
        case vtype::integer: {
            std::string s = "an integer";
            if (d.hi >= int_max) return s + " >= " + format_bound(d.lo);
            return s + " in [" + format_bound(d.lo) + ", " + format_bound(d.hi) + "]";
        }
        case vtype::number:
            if (std::isinf(d.lo)) return "a number";
            return std::string("a number ") + (d.lo_open ? "> " : ">= ") + format_bound(d.lo);
        case vtype::boolean: return "true or false";
        case vtype::choice: return "one of " + join(d.choices, ", ");
        case vtype::text: return d.text_form.empty() ? "a string" : d.text_form;
    }
    return "?";
}

// Numbers and bools must be plain scalars: "5" in quotes is a string.
value parse_value(const key_def& d, const YAML::Node& n, const where& at) {
    auto bad = [&](const std::string& got) { fail(at, "expected " + expected(d) + ", got " + got); };
    if (!n.IsScalar()) bad(describe(n));
    const std::string& t = n.Scalar();
    value v = value::of(d.type);
    switch (d.type) {
        case vtype::integer:
            if (!is_plain(n) || !parse_int(t, v.i)) {
                // Say why a whole number is not taken: too large, or written as 1e12.
                double x = 0;
                if (is_plain(n) && parse_double(t, x) && std::isfinite(x) && x == std::floor(x))
                    bad(describe(n) + (x > d.hi
                                           ? " (more than the largest allowed, " + format_bound(d.hi) + ")"
                                           : std::string(" (floating-point notation: write the integer's digits)")));
                bad(describe(n));
            }
            if (v.i > d.hi) bad(t + " (more than the largest allowed, " + format_bound(d.hi) + ")");
            if (v.i < d.lo) bad(t);
            break;
        case vtype::number:
            if (!is_plain(n) || !parse_double(t, v.f)) bad(describe(n));
            if (v.f < d.lo || (d.lo_open && v.f == d.lo) || v.f > d.hi) bad(t);
            break;
        case vtype::boolean:
            if (!is_plain(n) || (t != "true" && t != "false"))
                bad(describe(n) + did_you_mean(t, as_candidates({"true", "false"})));
            v.b = t == "true";
            break;
        case vtype::choice:
            if (std::find(d.choices.begin(), d.choices.end(), t) == d.choices.end())
                bad(describe(n) + choice_hint(d.key, t, d.choices));
            v.name = t;
            break;
        case vtype::text:
            v.name = t;
            if (d.text_ok)  // hex digests are compared in lower case
                for (char& c : v.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (v.name.empty() || (d.text_ok && !d.text_ok(v.name)))
                bad(v.name.empty() ? "an empty string" : describe(n));
            break;
    }
    return v;
}

}  // namespace attnlab::spec_internal
