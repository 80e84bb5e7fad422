// The runner's guards for finished runs: see sweep_guard.hpp.
#include "attnlab/run/sweep_guard.hpp"

#include <spdlog/spdlog.h>

#include "attnlab/io/files.hpp"
#include "attnlab/run/run_check.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

sweep_scan scan_sweep_runs(const experiment_spec& spec, const std::string& dir, const std::vector<std::size_t>& runs,
                           bool overwrite, const std::function<std::string(std::size_t)>& tag,
                           const std::vector<std::size_t>& others) {
    sweep_scan scan;
    std::vector<std::string> changed;  // "<run dir>: <keys>"
    // Other shards' runs: one shard with another --set would change their
    // sweep (spec.yaml, overrides.yaml) under them, so they are compared too.
    for (const std::size_t i : others) {
        const std::string run_dir = dir + "/runs/" + spec.runs[i].id;
        const run_dir_check c = check_run_dir(run_dir);
        if (c.state != run_dir_state::finished && c.state != run_dir_state::damaged) continue;
        const std::string config_yaml = run_config_to_yaml(spec.runs[i].config);
        if (!same_run_config(c.config_yaml, config_yaml))
            changed.push_back(fmt::format("{}: {} (another shard's)", run_dir,
                                          differences_text(config_differences(c.config_yaml, config_yaml))));
    }
    for (const std::size_t i : runs) {
        const std::string run_dir = dir + "/runs/" + spec.runs[i].id;
        const std::string config_yaml = run_config_to_yaml(spec.runs[i].config);
        const run_dir_check c = check_run_dir(run_dir);
        const bool same = same_run_config(c.config_yaml, config_yaml);
        if (c.state == run_dir_state::finished && same) {
            spdlog::info("{} already done ({}), skipped", tag(i), to_string(c.result->status));
            scan.done.emplace_back(i, *c.result);
            continue;
        }
        scan.to_train.push_back(i);
        if (c.state == run_dir_state::absent) continue;
        const std::string diffs = same ? "" : differences_text(config_differences(c.config_yaml, config_yaml));
        if (c.state == run_dir_state::unfinished && !same)
            scan.notes.push_back(
                fmt::format("{} unfinished, with another configuration in its config.yaml ({}); it is trained anew",
                            tag(i), diffs));
        else if (c.state == run_dir_state::damaged && same)
            scan.notes.push_back(
                fmt::format("{} {}; it is not counted as finished and is trained again", tag(i), c.problem));
        else if (!same) {
            changed.push_back(fmt::format("{}: {}", run_dir, diffs));
            if (overwrite) check_replacement_dir(replacement_dir(run_dir));  // before anything is trained
        }
    }
    const bool one = changed.size() == 1;
    if (!changed.empty() && !overwrite) {
        std::string list;
        for (const auto& c : changed) list += "\n  " + c;
        throw config_error(fmt::format(
            "{} finished run{} in {} would be replaced: the spec or --set now gives {} another configuration than "
            "the config.yaml {} trained with:{}\nNothing was trained. Use another --out to keep both, or "
            "--overwrite to retrain {}",
            changed.size(), one ? "" : "s", dir, one ? "it" : "them", one ? "it was" : "they were", list,
            one ? "it" : "them"));
    }
    if (changed.empty()) return scan;
    spdlog::warn("--overwrite: {} finished run{} with another configuration will be trained again:", changed.size(),
                 one ? "" : "s");
    for (const auto& c : changed) spdlog::warn("  {}", c);
    return scan;
}

std::unique_ptr<sweep_membership> claim_sweep_dir(const std::string& dir, const experiment_spec& spec, bool overwrite) {
    auto member = std::make_unique<sweep_membership>(dir);
    if (const int n = remove_stale_temporaries(dir); n > 0)
        spdlog::info("removed {} temporary file{} of killed processes in {}", n, n == 1 ? "" : "s", dir);
    if (member->others_present()) {
        const std::string diff = spec_as_run_difference(dir, spec);
        if (!diff.empty() && !overwrite)
            throw config_error(fmt::format(
                "{} is being written by another attnlab run with {}; nothing was trained. Wait for it to end, "
                "use another --out, or --overwrite",
                dir, diff));
        if (!diff.empty())
            spdlog::warn("{} is being written by another attnlab run with {}; going ahead (--overwrite)", dir, diff);
    }
    write_spec_as_run(dir, spec);
    member->join();
    return member;
}

}  // namespace attnlab
