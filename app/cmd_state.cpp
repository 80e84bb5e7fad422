// attnlab state SPEC: the recurrent state of every run of a spec, per
// attention layer and head (SPEC §2 "Recurrent form"): floats of S and z in
// the symmetric and the full Taylor layout, and bytes in float32; variants
// without a finite state (exp, clamped kernels) report their key/value cache
// at the run's longest sequence.
#include <algorithm>
#include <cstdio>

#include "attnlab/run/summary.hpp"
#include "commands.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

void add_state(CLI::App& app, action& chosen) {
    auto* cmd =
        app.add_subcommand("state", "Print the recurrent state size of every run of a spec, per layer and head");
    auto opts = std::make_shared<spec_options>();
    opts->add_to(*cmd);
    cmd->callback([opts, &chosen] {
        chosen = [opts] {
            const experiment_spec spec = opts->load();
            int width = 6;
            for (const auto& run : spec.runs) width = std::max(width, static_cast<int>(run.id.size()));
            std::printf("%-*s  %-8s %14s %14s %14s\n", width, "run_id", "state", "floats_sym", "floats_full",
                        "bytes_sym");
            for (const auto& run : spec.runs) {
                const state_size s = run_state_size(run.config);
                std::printf("%-*s  %-8s %14.6g %14.6g %14.6g\n", width, run.id.c_str(),
                            s.finite ? "finite" : "kv_cache", s.symmetric_floats, s.full_floats, s.bytes());
            }
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
