// attnlab summarize DIR: rebuild DIR/summary.csv, curves.csv and table.md from
// DIR/spec.yaml (with its --set overrides) and every finished run in
// DIR/runs/, whichever process or shard trained it. Runs that are not done
// are listed; the exit code is then 1, and the summary holds the others.
#include <spdlog/spdlog.h>

#include "attnlab/run/sweep_dir.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_summarize(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand(
        "summarize", "Rebuild DIR/summary.csv, curves.csv and table.md from every finished run (merges --shard runs)");
    auto dir = std::make_shared<std::string>();
    cmd->add_option("DIR", *dir, "Results directory of a spec (results/<name>)")->required();
    cmd->callback([dir, &chosen] {
        chosen = [dir] {
            std::string d = *dir;
            while (d.size() > 1 && d.back() == '/') d.pop_back();
            const summarize_outcome res = summarize_sweep_dir(d);
            for (const auto& [id, why] : res.missing) spdlog::warn("missing run {}: {}", id, why);
            if (!res.strays.empty())
                spdlog::info("{} directories in {}/runs are no run of the spec (ignored), e.g. {}", res.strays.size(),
                             d, res.strays.front());
            spdlog::info("summarize: {}/{} runs done{}; wrote {}/summary.csv, curves.csv and table.md", res.found,
                         res.total, res.missing.empty() ? "" : fmt::format(", {} missing", res.missing.size()), d);
            return res.missing.empty() ? exit_ok : exit_failure;
        };
    });
}

}  // namespace attnlab::cli
