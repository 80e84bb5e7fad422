// Options shared by the verbs that read a spec: the file and --set overrides.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attnlab/spec/spec.hpp"

namespace attnlab::cli {

struct spec_options {
    std::string path;
    std::vector<std::string> overrides;

    void add_to(CLI::App& cmd) {
        cmd.add_option("SPEC", path, "Experiment spec (YAML)")->required();
        cmd.add_option("--set", overrides, "Override a dotted key of the base, e.g. --set train.steps=200")
            ->type_name("KEY=VALUE");
    }

    experiment_spec load() const { return load_spec(path, overrides); }
};

}  // namespace attnlab::cli
