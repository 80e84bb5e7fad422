// attnlab variants [--json]: the attention variants attnlab implements, from
// the one list of variants (config/variant_list.hpp). Plain: one line per
// numerator and denominator with what it computes. --json: the variant
// table (attention/variant_table.hpp, variants_json), which
// python/attnlab/variants.json holds and which the Python package, the
// figures, the fuzz dictionary and the docs are checked against.
#include <cstdio>
#include <memory>
#include <string>

#include "attnlab/attention/variant_table.hpp"
#include "commands.hpp"

namespace attnlab::cli {

void add_variants(CLI::App& app, action& chosen) {
    auto* cmd = app.add_subcommand("variants", "List the attention variants: numerators and denominators");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print the variant table as JSON (python/attnlab/variants.json holds it)");
    cmd->callback([json, &chosen] {
        chosen = [json] {
            if (*json) {
                std::fputs(variants_json().c_str(), stdout);
                return exit_ok;
            }
            std::printf("numerators (w_tj):\n");
            for (int i = 0; i < numerator_count; ++i) {
                const numerator_traits& r = numerator_rows()[i];
                std::printf("  %-10s %s%s\n", r.name, r.summary, r.takes_order ? "  (attention.order: n)" : "");
            }
            std::printf("denominators (o_t):\n");
            for (int i = 0; i < denominator_count; ++i)
                std::printf("  %-10s %s\n", denominator_rows()[i].name, denominator_rows()[i].summary);
            return exit_ok;
        };
    });
}

}  // namespace attnlab::cli
