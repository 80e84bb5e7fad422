// attnlab summarize DIR: rebuild DIR/summary.csv, curves.csv and table.md from
// DIR/spec.yaml (with its --set overrides) and every finished run in
// DIR/runs/, whichever process or shard trained it. Runs that are not done
// are listed; the exit code is then 1, and the summary holds the others.
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "attnlab/run/sweep_dir.hpp"
#include "attnlab/util/error.hpp"
#include "cli_values.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_summarize(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "summarize", "Rebuild DIR/summary.csv, curves.csv and table.md from every finished run (merges --shard runs)");
    auto dir = std::make_shared<std::string>();
    auto flags = std::make_shared<report_flags>();
    cmd->add_option("DIR", *dir, "Results directory of a spec (results/<name>)")->required();
    cmd->add_option("--baseline", flags->baselines,
                    "One baseline variant of a report added to the spec's (repeat for several baselines)")
        ->type_name("KEY=VALUE[,KEY=VALUE...]");
    cmd->add_option("--match", flags->match,
                    "KEY each variant's baseline shares with the variant (repeat); with --baseline")
        ->type_name("KEY");
    cmd->add_option("--among", flags->among, "Compare only the variants with one of these values of KEY (repeat)")
        ->type_name("KEY=VALUE[,VALUE...]");
    cmd->add_option("--margin", flags->margins,
                    "Declared margin of a metric (loss, bits_per_byte, token_acc, seq_acc): within it is 'level'")
        ->type_name("METRIC=VALUE");
    cmd->add_option("--correction", flags->correction, "Adjustment of the report's p-values: holm (default) or none")
        ->type_name("holm|none");
    cmd->add_option("--select-on", flags->select_on,
                    "Seeds that only choose learning rates and are left out of every comparison (repeat)")
        ->check(integer_in(0, 2147483647))
        ->type_name("SEED");
    cmd->callback([dir, flags, &chosen] {
        chosen = [dir, flags] {
            std::string d = *dir;
            while (d.size() > 1 && d.back() == '/') d.pop_back();
            if (!flags->baselines.empty())
                spdlog::info(
                    "summarize: the report of --baseline is added to the spec's reports, as \"summarize options\"");
            const summarize_outcome res = summarize_sweep_dir(d, flags.get());
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
            for (const std::string& w : res.comparison_warnings) spdlog::warn("{}", w);
            spdlog::info("summarize: {}/{} runs done{}; wrote {}/summary.csv, curves.csv and table.md", res.found,
                         res.total, res.missing.empty() ? "" : fmt::format(", {} missing", res.missing.size()), d);
            return res.missing.empty() ? exit_ok : exit_failure;
        };
    });
}

}  // namespace attnlab::cli
