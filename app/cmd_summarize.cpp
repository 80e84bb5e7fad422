// attnlab summarize DIR: rebuild DIR/summary.csv, curves.csv and table.md from
// DIR/spec.yaml (with its --set overrides) and every finished run in
// DIR/runs/, whichever process or shard trained it. Runs that are not done
// are listed; the exit code is then 1, and the summary holds the others.
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/util/error.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_summarize(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "summarize", "Rebuild DIR/summary.csv, curves.csv and table.md from every finished run (merges --shard runs)");
    auto dir = std::make_shared<std::string>();
    auto baseline = std::make_shared<std::vector<std::string>>();
    auto match = std::make_shared<std::vector<std::string>>();
    cmd->add_option("DIR", *dir, "Results directory of a spec (results/<name>)")->required();
    cmd->add_option("--baseline", *baseline,
                    "KEY=VALUE of the baseline variant of the paired comparisons (repeat for several keys); "
                    "replaces the spec's report.baseline for this summary")
        ->type_name("KEY=VALUE");
    cmd->add_option("--match", *match, "KEY each variant's baseline shares with the variant (repeat); with --baseline")
        ->type_name("KEY");
    cmd->callback([dir, baseline, match, &chosen] {
        chosen = [dir, baseline, match] {
            std::string d = *dir;
            while (d.size() > 1 && d.back() == '/') d.pop_back();
            if (!match->empty() && baseline->empty()) throw config_error("--match: needs --baseline");
            std::optional<report_options> report;
            if (!baseline->empty())
                report = parse_report_options(load_spec_as_run(d, task_files::read_if_present), *baseline, *match);
            const summarize_outcome res = summarize_sweep_dir(d, report ? &*report : nullptr);
            for (const auto& [id, why] : res.missing) spdlog::warn("missing run {}: {}", id, why);
            for (const std::string& w : res.lr_warnings) spdlog::warn("{}", w);
            if (!res.strays.empty())
                spdlog::info("{} directories in {}/runs are no run of the spec (ignored), e.g. {}", res.strays.size(),
                             d, res.strays.front());
            if (!res.builds.empty())
                spdlog::warn(
                    "the runs of {} come from different builds ({}): they agree within float noise, "
                    "not bit for bit",
                    d, res.builds);
            spdlog::info("summarize: {}/{} runs done{}; wrote {}/summary.csv, curves.csv and table.md", res.found,
                         res.total, res.missing.empty() ? "" : fmt::format(", {} missing", res.missing.size()), d);
            return res.missing.empty() ? exit_ok : exit_failure;
        };
    });
}

}  // namespace attnlab::cli
