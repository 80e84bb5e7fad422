// table.md of a sweep: the final test metrics of each group of runs that
// differ only in their seed, every seed's value beside the mean and spread
// (outcomes are often bimodal across seeds), and, when train.lr is swept,
// each variant at the rate chosen on validation (run_groups.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/results/comparisons.hpp"
#include "attnlab/results/loss_spikes.hpp"
#include "attnlab/results/run_groups.hpp"
#include "attnlab/results/steps_to_solve.hpp"
#include "attnlab/results/summary.hpp"

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
    " runs | diverged | solved | steps to solve (median) | val_loss | token_acc | token_acc by seed | seq_acc | "
    "seq_acc by seed | loss |";
constexpr int metric_columns = 10;
// A table of text runs only: no solved or seq_acc columns (they cannot apply).
const char* const text_metric_header = " runs | diverged | val_loss | token_acc | token_acc by seed | loss |";
constexpr int text_metric_columns = 6;
// Experiments with text runs: the test loss in bits per byte as well.
const char* const bits_header = " bits_per_byte |";

bool any_text(const std::vector<summary_entry>& entries) {
    return std::any_of(entries.begin(), entries.end(),
                       [](const summary_entry& e) { return e.point->config.task.kind == task_kind::text; });
}
bool only_text(const std::vector<summary_entry>& entries) {
    return !entries.empty() && std::all_of(entries.begin(), entries.end(), [](const summary_entry& e) {
        return e.point->config.task.kind == task_kind::text;
    });
}

// "s0: 0.281, s1: 0.974, s2: diverged": each seed's value of its final test
// metrics, as `value` reads them.
template <class Value>
std::string each_seed(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members, Value value) {
    std::string out;
    for (std::size_t i : members) {
        const summary_entry& e = entries[i];
        if (!out.empty()) out += ", ";
        out += 's';
        out += std::to_string(e.point->config.seed);
        out += ": ";
        out += e.result.status == run_status::ok ? fmt(value(e.result.final_test)) : "diverged";
    }
    return out;
}

std::string by_seed(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members,
                    double eval_metrics::*metric) {
    return each_seed(entries, members, [metric](const eval_metrics& m) { return m.*metric; });
}

// "s0: 2.065, s1: 2.071": each seed's final test loss in bits per byte.
std::string bits_by_seed(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members) {
    return each_seed(entries, members, [](const eval_metrics& m) { return bits(m.loss); });
}

// The metric cells of a group of runs (see metric_header; bits_header too
// when `bits_column`), with a leading space and "|" after each. Where the
// sequence accuracy does not apply (text) its cells are empty, as is the
// bits column for tasks other than text.
std::string metric_cells(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members,
                         bool bits_column, bool text_only) {
    const task_config& task = entries[members.front()].point->config.task;  // groups share their task
    const bool seq_applies = traits_of(task.kind).sequence_accuracy;
    const bool per_byte = task.kind == task_kind::text;
    std::vector<double> val_loss, tok, seq, loss, loss_bits;
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
        loss_bits.push_back(bits(r.final_test.loss));
        solved += solves_task(task.kind, r.final_test);
    }
    std::ostringstream s;
    s << " " << members.size() << " | " << diverged << " | ";
    // "solved" means nothing for a language model.
    if (text_only) {
        // no solved column
    } else if (per_byte) {
        s << "– | – | ";
    } else {
        std::vector<std::optional<long>> steps;
        for (std::size_t i : members) steps.push_back(entries[i].steps_to_solve);
        const std::optional<double> median = median_steps_to_solve(steps);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", median.value_or(0));
        s << solved << "/" << members.size() << " | " << (median ? buf : "never (half or more)") << " | ";
    }
    std::string seq_cells = text_only ? "" : " | ";  // text: two empty cells, or no column
    if (seq_applies) {
        seq_cells = tok.empty() ? std::string("–") : fmt(stats(seq));
        seq_cells += " | ";
        seq_cells += by_seed(entries, members, &eval_metrics::seq_acc);
    }
    std::string bits_cell;
    if (bits_column) {
        bits_cell = " ";
        if (per_byte) {
            bits_cell += tok.empty() ? std::string("–") : fmt(stats(loss_bits));
            bits_cell += " (";
            bits_cell += bits_by_seed(entries, members);
            bits_cell += ")";
        }
        bits_cell += " |";
    }
    if (tok.empty())
        return s.str() + "– | – | " + by_seed(entries, members, &eval_metrics::token_acc) + " | " + seq_cells +
               (text_only ? "– |" : " | – |") + bits_cell;
    s << fmt(stats(val_loss)) << " | " << fmt(stats(tok)) << " | "
      << by_seed(entries, members, &eval_metrics::token_acc) << " | " << seq_cells << (text_only ? "" : " | ")
      << fmt(stats(loss)) << " |" << bits_cell;
    return s.str();
}

// The reference test losses of the text runs (result.yaml's baselines), one
// line per distinct pair (the test set, and so they, follow task.* keys).
std::string baselines_text(const std::vector<summary_entry>& entries) {
    std::vector<std::pair<baseline_losses, std::string>> seen;  // values, first run with them
    for (const summary_entry& e : entries) {
        if (!e.result.baselines) continue;
        const baseline_losses& b = *e.result.baselines;
        const bool known = std::any_of(seen.begin(), seen.end(), [&](const auto& p) {
            return p.first.unigram == b.unigram && p.first.bigram == b.bigram;
        });
        if (!known) seen.emplace_back(b, e.point->id);
    }
    if (seen.empty()) return "";
    auto line = [](const baseline_losses& b) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "unigram %.4f nats/byte (%.4f bits/byte), bigram %.4f nats/byte (%.4f bits/byte)", b.unigram,
                      bits(b.unigram), b.bigram, bits(b.bigram));
        return std::string(buf);
    };
    std::string out =
        "Baselines, for scale: the test loss of byte models fitted on the train part with add-one smoothing";
    if (seen.size() == 1) return out + ": " + line(seen[0].first) + ".\n\n";
    out += " (they differ with the test set):\n\n";
    for (const auto& [b, id] : seen) out += "- " + line(b) + " (as in " + id + ")\n";
    return out + "\n";
}

// Sweeps with per-step losses (train.log_every: 1): each seed's loss spike
// count; "–" for a run without a count (never 0).
bool any_spike_count(const std::vector<summary_entry>& entries) {
    return std::any_of(entries.begin(), entries.end(), [](const summary_entry& e) { return e.loss_spikes; });
}
std::string spike_cell(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members,
                       bool spike_column) {
    if (!spike_column) return "";
    std::string out;
    for (std::size_t i : members) {
        const summary_entry& e = entries[i];
        out += (out.empty() ? " s" : ", s") + std::to_string(e.point->config.seed) + ": " +
               (e.loss_spikes ? std::to_string(*e.loss_spikes) : "–");
    }
    return out + " |";
}

void table_header(std::ostringstream& s, const std::vector<std::string>& keys, bool bits_column, bool spike_column,
                  bool text_only, bool best_column) {
    s << "|";
    for (const auto& k : keys) s << " " << k << " |";
    s << (text_only ? text_metric_header : metric_header) << (bits_column ? bits_header : "")
      << (spike_column ? " loss_spikes by seed |" : "") << (best_column ? " best run (lowest val loss) |" : "")
      << "\n|";
    const int columns = text_only ? text_metric_columns : metric_columns;
    for (std::size_t i = 0;
         i < keys.size() + columns + (bits_column ? 1 : 0) + (spike_column ? 1 : 0) + (best_column ? 1 : 0); ++i)
        s << "---|";
    s << "\n";
}

// The folder of the group's run with the lowest final validation loss (a diverged run never).
std::string best_run_cell(const std::vector<summary_entry>& entries, const std::vector<std::size_t>& members) {
    const summary_entry* best = nullptr;
    for (std::size_t i : members) {
        const summary_entry& e = entries[i];
        if (e.result.status != run_status::ok) continue;
        if (!best || e.result.final_val.loss < best->result.final_val.loss) best = &e;
    }
    return best ? " `runs/" + best->point->id + "` |" : " – |";
}

void table_row(std::ostringstream& s, const std::vector<std::string>& values, const std::string& cells) {
    s << "|";
    for (const auto& v : values) s << " " << (v.empty() ? "–" : v) << " |";
    s << cells << "\n";
}

std::string edge_mark(lr_edge edge) {
    switch (edge) {
        case lr_edge::interior: return "";
        case lr_edge::lowest: return " (lowest tried)";
        case lr_edge::highest: return " (highest tried)";
        case lr_edge::only_rate: return " (only rate tried)";
    }
    return "";
}

std::string comparisons_section(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::string out;
    for (const comparisons_result& r : compare_all(spec, entries)) out += comparisons_md(spec, r);
    return out;
}

}  // namespace

std::string summary_table_md(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::ostringstream s;
    s << "# " << spec.name << "\n\n"
      << "Final test metrics over the seeds of each group: mean ± std, then each seed's value (s<seed>: value). "
      << "solved = seeds with test token accuracy >= " << solved_token_acc
      << " (copy: test sequence accuracy >= " << solved_copy_seq_acc << ", every token of a copy right)"
      << (only_text(entries) ? ""
                             : "; steps to solve = the median over seeds of the first evaluation step at which a run "
                               "reaches that accuracy on validation (a run that never does counts as later than "
                               "every other)")
      << "; val_loss = final validation loss (mean ± std), on which choices are made. Diverged runs count as "
         "unsolved and are left out of the means. best run = the folder of the seed with the lowest final "
         "validation loss.\n\n";
    if (any_spike_count(entries))
        s << "loss_spikes = training steps whose loss exceeds " << spike_factor << " times the median of the "
          << spike_window << " steps before (runs with train.log_every: 1; – where a run has no per-step losses).\n\n";
    const bool bits_column = any_text(entries), text_only = only_text(entries);
    const bool spike_column = any_spike_count(entries);
    if (bits_column)
        s << "Text runs: loss and val_loss in nats per byte, bits_per_byte = test loss / ln 2 (mean ± std, then each "
             "seed's value); seq_acc and solved do not apply ("
          << (text_only ? "no columns" : "empty, –") << ").\n\n"
          << baselines_text(entries);

    const lr_selection lr = select_learning_rates(spec, entries);
    if (lr.swept) {
        s << "## Each variant at its chosen learning rate\n\n"
          << "Each variant is reported at the " << lr_key
          << " whose mean final validation loss is lowest, over the seeds present at every rate of the variant (a "
             "rate at which a seed diverged ranks after every rate at which none did); its test metrics are those of "
             "every seed at that rate. A rate marked (lowest tried) or (highest tried) sits on the edge of the "
             "variant's grid: a better rate may lie beyond it.";
        if (std::any_of(lr.variants.begin(), lr.variants.end(), [](const lr_choice& c) { return !c.some_run_solves; }))
            s << " A rate marked (none solved) is the best of a grid in which no run solved the task on validation: it "
                 "ranks runs that all failed, and may mean little.";
        s << "\n\n";
        std::vector<std::string> keys = grouping_keys(spec, true);
        keys.push_back(std::string(lr_key) + " (chosen)");
        table_header(s, keys, bits_column, spike_column, text_only, true);
        for (const lr_choice& c : lr.variants) {
            std::vector<std::string> values = c.variant;
            const lr_candidate& chosen = c.rates[c.chosen];
            values.push_back(chosen.lr + edge_mark(c.edge) + (c.some_run_solves ? "" : " (none solved)"));
            table_row(s, values,
                      metric_cells(entries, chosen.members, bits_column, text_only) +
                          spike_cell(entries, chosen.members, spike_column) + best_run_cell(entries, chosen.members));
        }
        s << "\n" << comparisons_section(spec, entries) << "## Every learning rate\n\n";
    } else {
        s << comparisons_section(spec, entries);
    }
    // The run folder of each group's best seed where this is the only table (train.lr not swept).
    const std::vector<std::string> keys = grouping_keys(spec, false);
    table_header(s, keys, bits_column, spike_column, text_only, !lr.swept);
    for (const run_group& g : group_runs(entries, keys))
        table_row(s, g.values,
                  metric_cells(entries, g.members, bits_column, text_only) +
                      spike_cell(entries, g.members, spike_column) +
                      (lr.swept ? "" : best_run_cell(entries, g.members)));
    return s.str();
}

}  // namespace attnlab
