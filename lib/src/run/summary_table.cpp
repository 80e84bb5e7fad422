// table.md of a sweep: the final test metrics of each group of runs that
// differ only in their seed, every seed's value beside the mean and spread
// (outcomes are often bimodal across seeds), and, when train.lr is swept,
// each variant at the rate chosen on validation (run_groups.hpp).
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "attnlab/run/run_groups.hpp"
#include "attnlab/run/summary.hpp"

namespace attnlab {

namespace {

struct mean_std {
    double mean = 0, std = 0;
};
mean_std stats(const std::vector<double>& v) {
    mean_std s;
    if (v.empty()) return s;
    for (double x : v) s.mean += x;
    s.mean /= static_cast<double>(v.size());
    if (v.size() > 1) {
        for (double x : v) s.std += (x - s.mean) * (x - s.mean);
        s.std = std::sqrt(s.std / static_cast<double>(v.size() - 1));  // sample std over seeds
    }
    return s;
}
std::string fmt(const mean_std& s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f ± %.3f", s.mean, s.std);
    return buf;
}
std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

const char* const metric_header =
    " runs | diverged | solved | val_loss | token_acc | token_acc by seed | seq_acc | "
    "seq_acc by seed | loss |";
constexpr int metric_columns = 9;

// "s0: 0.281, s1: 0.974, s2: diverged": each seed's value of one metric.
std::string by_seed(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members,
                    double eval_metrics::*metric) {
    std::string out;
    for (std::size_t i : members) {
        const summary_entry& e = entries[i];
        if (!out.empty()) out += ", ";
        out += 's';
        out += std::to_string(e.point->config.seed);
        out += ": ";
        out += e.result.status == run_status::ok ? fmt(e.result.final_test.*metric) : "diverged";
    }
    return out;
}

// The metric cells of a group of runs (see metric_header), with a leading space and "|" after each.
std::string metric_cells(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members) {
    std::vector<double> val_loss, tok, seq, loss;
    int diverged = 0, solved = 0;
    for (std::size_t i : members) {
        const run_result& r = entries[i].result;
        if (r.status != run_status::ok) {
            ++diverged;
            continue;
        }
        val_loss.push_back(r.final_val.loss);
        tok.push_back(r.final_test.token_acc);
        seq.push_back(r.final_test.seq_acc);
        loss.push_back(r.final_test.loss);
        solved += r.final_test.token_acc >= solved_token_acc;
    }
    std::ostringstream s;
    s << " " << members.size() << " | " << diverged << " | " << solved << "/" << members.size() << " | ";
    if (tok.empty())
        return s.str() + "– | – | " + by_seed(entries, members, &eval_metrics::token_acc) + " | – | " +
               by_seed(entries, members, &eval_metrics::seq_acc) + " | – |";
    s << fmt(stats(val_loss)) << " | " << fmt(stats(tok)) << " | "
      << by_seed(entries, members, &eval_metrics::token_acc) << " | " << fmt(stats(seq)) << " | "
      << by_seed(entries, members, &eval_metrics::seq_acc) << " | " << fmt(stats(loss)) << " |";
    return s.str();
}

void table_header(std::ostringstream& s, const std::vector<std::string>& keys) {
    s << "|";
    for (const auto& k : keys) s << " " << k << " |";
    s << metric_header << "\n|";
    for (std::size_t i = 0; i < keys.size() + metric_columns; ++i) s << "---|";
    s << "\n";
}

void table_row(std::ostringstream& s, const std::vector<std::string>& values, const std::string& cells) {
    s << "|";
    for (const auto& v : values) s << " " << (v.empty() ? "–" : v) << " |";
    s << cells << "\n";
}

}  // namespace

std::string summary_table_md(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::ostringstream s;
    s << "# " << spec.name << "\n\n"
      << "Final test metrics over the seeds of each group: mean ± std, then each seed's value (s<seed>: value). "
      << "solved = seeds with test token accuracy >= " << solved_token_acc
      << "; val_loss = final validation loss (mean ± std), on which choices are made. Diverged runs count as "
         "unsolved and are left out of the means.\n\n";

    const lr_selection lr = select_learning_rates(spec, entries);
    if (lr.swept) {
        s << "## Each variant at its chosen learning rate\n\n"
          << "Each variant is reported at the " << lr_key
          << " whose mean final validation loss over its seeds is lowest (a rate at which a seed diverged ranks "
             "after every rate at which none did); its test metrics are those at that rate.\n\n";
        std::vector<std::string> keys = grouping_keys(spec, true);
        keys.push_back(std::string(lr_key) + " (chosen)");
        table_header(s, keys);
        for (const lr_choice& c : lr.variants) {
            std::vector<std::string> values = c.variant;
            const lr_candidate& chosen = c.rates[c.chosen];
            values.push_back(chosen.lr);
            table_row(s, values, metric_cells(entries, chosen.members));
        }
        s << "\n## Every learning rate\n\n";
    }
    const std::vector<std::string> keys = grouping_keys(spec, false);
    table_header(s, keys);
    for (const run_group& g : group_runs(entries, keys)) table_row(s, g.values, metric_cells(entries, g.members));
    return s.str();
}

}  // namespace attnlab
