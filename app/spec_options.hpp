// Options shared by the verbs that read a spec: the file and --set overrides.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attnlab/attention/variants.hpp"
#include "attnlab/spec/spec.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab::cli {

struct spec_options {
    std::string path;
    std::vector<std::string> overrides;

    void add_to(CLI::App& cmd) {
        cmd.add_option("SPEC", path, "Experiment spec (YAML)")->required();
        cmd.add_option("--set", overrides, "Override a dotted key of the base, e.g. --set train.steps=200")
            ->type_name("KEY=VALUE");
    }

    // Loads the spec and checks that this build implements every run's variant.
    experiment_spec load() const {
        experiment_spec spec = load_spec(path, overrides);
        for (const auto& run : spec.runs) {
            try {
                check_attention_supported(run.config.attention);
            } catch (const config_error& e) {
                throw config_error(path + ": run " + run.id + ": " + e.what());
            }
        }
        return spec;
    }
};

}  // namespace attnlab::cli
