// attnlab state SPEC: the recurrent state of every run of a spec, per
// attention layer and head (docs/attention.md, "The recurrent form"), in the
// columns of summary.csv: state_floats (S and z in the symmetric Taylor
// layout), state_floats_full (the full layout) and state_bytes (float32,
// symmetric); variants without a finite state (exp, clamped kernels) report
// their key/value cache at the run's longest sequence. Counts are exact
// integers, in decimal arithmetic past 64 bits (order 3 of d_model 65536 is
// 18447307032253038593, which a double would round).
// It computes sizes only: nothing it allocates grows with the configuration,
// so it needs no memory guard (docs/outputs-policy.md).
#include <algorithm>
#include <cstdio>
#include <string>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/results/summary.hpp"
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
            std::printf("# recurrent state per attention layer and head (the state columns of summary.csv)\n");
            std::printf("%-*s  %-8s %20s %20s %20s\n", width, "run_id", "state", "state_floats", "state_floats_full",
                        "state_bytes");
            for (const auto& run : spec.runs) {
                const run_config& c = run.config;
                const int HS = c.model.d_model / c.model.heads, T = max_seq_len(c.task);
                const state_size s = run_state_size(c);
                const std::string sym = state_floats_text(c.attention, HS, state_layout::symmetric, T);
                const std::string full = state_floats_text(c.attention, HS, state_layout::full, T);
                const std::string bytes = state_floats_text(c.attention, HS, state_layout::symmetric, T, sizeof(float));
                std::printf("%-*s  %-8s %20s %20s %20s\n", width, run.id.c_str(), s.finite ? "finite" : "kv_cache",
                            sym.c_str(), full.c_str(), bytes.c_str());
            }
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
