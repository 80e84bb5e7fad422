// Command-line mistakes in attnlab's words (cli_errors.hpp).
#include "cli_errors.hpp"

#include <sstream>

#include "attnlab/spec/did_you_mean.hpp"
#include "cli_values.hpp"

namespace attnlab::cli {

namespace {

std::vector<std::string> verb_names(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        out.push_back(sub->get_name());
    return out;
}

// "attnlab", "attnlab run", "attnlab bench train".
std::string command_path(const CLI::App* app) {
    std::string path;
    for (; app != nullptr; app = app->get_parent())
        path = (app->get_parent() ? app->get_name() : "attnlab") + (path.empty() ? "" : " " + path);
    return path;
}

// The verb being parsed when the parse failed: the deepest chosen subcommand.
const CLI::App* deepest_chosen(const CLI::App& app) {
    const CLI::App* at = &app;
    for (;;) {
        const auto chosen = at->get_subcommands();
        if (chosen.empty()) return at;
        at = chosen.front();
    }
}

std::vector<std::string> long_option_names(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::Option* o : app.get_options())
        for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
    return out;
}

std::string see_help(const CLI::App* app) { return "see " + command_path(app) + " --help"; }

// "The following arguments were not expected: --foo b" -> {"--foo", "b"}.
std::vector<std::string> unexpected_args(const std::string& what) {
    std::vector<std::string> out;
    const auto colon = what.find(": ");
    if (colon == std::string::npos) return out;
    std::istringstream in(what.substr(colon + 2));
    for (std::string a; in >> a;) out.push_back(a);
    return out;
}

std::string positional_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options())
        if (!o->nonpositional()) names.push_back(o->get_name());
    return names.empty() ? "no arguments, only options" : "only " + either_of(names) + " and options";
}

}  // namespace

std::optional<std::string> verb_error(const CLI::App& app, const std::vector<std::string>& args) {
    const CLI::App* at = &app;
    for (const std::string& a : args) {
        if (a == "--help" || a == "-h" || a == "--version") return std::nullopt;  // CLI11 answers these
        const std::vector<std::string> verbs = verb_names(*at);
        if (verbs.empty()) return std::nullopt;  // the verb's own options and arguments: CLI11 parses them
        if (!a.empty() && a[0] == '-')
            return "unknown option '" + a + "' for " + command_path(at) + " (a verb comes first: " + either_of(verbs) +
                   "; " + see_help(at) + ")";
        const CLI::App* sub = nullptr;
        for (const CLI::App* s : at->get_subcommands([](const CLI::App*) { return true; }))
            if (s->get_name() == a) sub = s;
        if (sub == nullptr)
            return "unknown verb '" + a + "' for " + command_path(at) + did_you_mean(a, verbs) + " (expected " +
                   either_of(verbs) + "; " + see_help(at) + ")";
        at = sub;
    }
    const std::vector<std::string> verbs = verb_names(*at);
    if (verbs.empty()) return std::nullopt;
    return command_path(at) + " needs a verb: " + either_of(verbs) + " (" + see_help(at) + ")";
}

std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::App* verb = deepest_chosen(app);
    const std::string what = e.what(), kind = e.get_name();
    if (kind == "RequiredError") {  // "SPEC is required"
        const std::string name = what.substr(0, what.find(" is required"));
        const CLI::Option* o = verb->get_option_no_throw(name);
        return command_path(verb) + ": missing " + name + " (" +
               (o && !o->get_description().empty() ? o->get_description() + "; " : "") + see_help(verb) + ")";
    }
    if (what.rfind("The following argument", 0) == 0) {  // ExtrasError: "... was not expected: --foo"
        const std::vector<std::string> extra = unexpected_args(what);
        for (const std::string& a : extra)
            if (!a.empty() && a[0] == '-' && a.size() > 1)
                return command_path(verb) + ": unknown option '" + a + "'" +
                       did_you_mean(a.substr(0, a.find('=')), long_option_names(*verb)) + " (" + see_help(verb) + ")";
        if (!extra.empty())
            return command_path(verb) + ": unexpected argument '" + extra.front() + "' (it takes " +
                   positional_names(*verb) + "; " + see_help(verb) + ")";
    }
    if (kind == "ArgumentMismatch") {  // "--out: 1 required DIR missing"
        const std::string name = what.substr(0, what.find(':'));
        const CLI::Option* o = verb->get_option_no_throw(name);
        // "--threads: At Most 1 required but received 2": a one-value option repeated, not one without a value.
        const std::string at_most = ": At Most 1 required but received ";
        if (o && what.find(at_most) != std::string::npos) {
            const std::string times = what.substr(what.find(at_most) + at_most.size());
            return command_path(verb) + ": " + name + " given " + (times == "2" ? "twice" : times + " times") +
                   "; it takes one " + o->get_type_name() + " (" + see_help(verb) + ")";
        }
        if (o)
            return command_path(verb) + ": " + name + " needs a value, " + o->get_type_name() + " (" + see_help(verb) +
                   ")";
    }
    if (kind == "ValidationError")  // "--form: <the message of a check in cli_values.hpp>"
        return command_path(verb) + " " + what + " (" + see_help(verb) + ")";
    return command_path(verb) + ": " + what + " (" + see_help(verb) + ")";
}

}  // namespace attnlab::cli
