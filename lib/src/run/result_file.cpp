// result.yaml of a finished run, written and read with yaml-cpp.
#include "attnlab/run/result_file.hpp"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "attnlab/io/csv.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

std::string run_result_to_yaml(const run_result& r) {
    std::ostringstream s;
    auto metrics = [&](const char* name, const eval_metrics& m) {
        s << name << ": {loss: " << format_number(m.loss) << ", token_acc: " << format_number(m.token_acc)
          << ", seq_acc: " << format_number(m.seq_acc) << "}\n";
    };
    s << "status: " << to_string(r.status) << "\n";
    s << "reason: \"" << r.reason << "\"\n";
    s << "steps: " << r.steps << "\n";
    metrics("final_test", r.final_test);
    metrics("best_test", r.best_test);
    s << "best_step: " << r.best_step << "\n";
    s << "wall_s: " << format_number(r.wall_s) << "\n";
    s << "params: " << r.params << "\n";
    s << "nonpositive_denominator_steps: " << r.nonpositive_denominator_steps << "\n";
    s << "first_nonpositive_step: " << r.first_nonpositive_step << "\n";
    return s.str();
}

namespace {
run_status parse_status(const std::string& s, const std::string& path) {
    if (s == "ok") return run_status::ok;
    if (s == "diverged") return run_status::diverged;
    if (s == "interrupted") return run_status::interrupted;
    throw io_error(path + ": unknown status '" + s + "'");
}
eval_metrics parse_metrics(const YAML::Node& n) {
    return {n["loss"].as<double>(), n["token_acc"].as<double>(), n["seq_acc"].as<double>()};
}
}  // namespace

std::optional<run_result> read_run_result(const std::string& path) {
    std::ifstream probe(path);
    if (!probe) return std::nullopt;
    try {
        const YAML::Node n = YAML::LoadFile(path);
        run_result r;
        r.status = parse_status(n["status"].as<std::string>(), path);
        r.reason = n["reason"].as<std::string>();
        r.steps = n["steps"].as<int>();
        r.final_test = parse_metrics(n["final_test"]);
        r.best_test = parse_metrics(n["best_test"]);
        r.best_step = n["best_step"].as<int>();
        r.wall_s = n["wall_s"].as<double>();
        r.params = n["params"].as<std::size_t>();
        r.nonpositive_denominator_steps = n["nonpositive_denominator_steps"].as<long>();
        r.first_nonpositive_step = n["first_nonpositive_step"].as<int>();
        return r;
    } catch (const YAML::Exception& e) {
        throw io_error(path + ": malformed run result (" + e.what() + ")");
    }
}

}  // namespace attnlab
