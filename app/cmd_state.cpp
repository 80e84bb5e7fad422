// attnlab state SPEC: the recurrent state of every run of a spec, per
// attention layer and head (docs/attention.md, "The recurrent form"), in the
// columns of summary.csv: state_floats (S and z in the symmetric Taylor
// layout), state_floats_full (the full layout) and state_bytes (float32,
// symmetric); variants without a finite state (exp, clamped kernels) report
// their key/value cache at the run's longest sequence. Counts are exact
// integers; one too large for 64 bits is printed as a rounded number.
// It computes sizes only: nothing it allocates grows with the configuration,
// so it needs no memory guard (docs/outputs-policy.md).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/run/summary.hpp"
#include "attnlab/util/saturating_size.hpp"
#include "commands.hpp"
#include "spec_options.hpp"

namespace attnlab::cli {

namespace {

// The exact count as an integer, or `rounded` (the double of run_state_size)
// when the count does not fit in 64 bits.
std::string count_text(const std::function<std::size_t()>& exact, double rounded) {
    try {
        const std::size_t n = exact();
        if (n != size_saturated) return std::to_string(n);
    } catch (const std::overflow_error&) {
    }
    return format_number(rounded);
}

}  // namespace

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
                auto floats = [&](state_layout l) { return state_floats(c.attention, HS, l, T); };
                const state_size s = run_state_size(c);
                const std::string sym = count_text([&] { return floats(state_layout::symmetric); }, s.symmetric_floats);
                const std::string full = count_text([&] { return floats(state_layout::full); }, s.full_floats);
                const std::string bytes = count_text(
                    [&] { return mul_saturating(floats(state_layout::symmetric), sizeof(float)); }, s.bytes());
                std::printf("%-*s  %-8s %20s %20s %20s\n", width, run.id.c_str(), s.finite ? "finite" : "kv_cache",
                            sym.c_str(), full.c_str(), bytes.c_str());
            }
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
