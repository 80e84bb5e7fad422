// Grouping of finished runs over seeds and the learning-rate choice per
// variant; the rules are in run_groups.hpp.
#include "attnlab/results/run_groups.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace attnlab {

std::vector<std::string> grouping_keys(const experiment_spec& spec, bool without_lr) {
    std::vector<std::string> keys;
    for (const auto& k : spec.swept_keys)
        if (k != "seed" && !(without_lr && k == lr_key)) keys.push_back(k);
    return keys;
}

namespace {

std::string value_in(const std::map<std::string, std::string>& config, const std::string& key) {
    const auto it = config.find(key);
    return it == config.end() ? "" : it->second;
}

// Sort key of a rate: any diverged seed ranks it last, then the mean (NaN: worst).
std::tuple<bool, double> rank_of(const lr_candidate& c) {
    const double loss =
        std::isnan(c.mean_final_val_loss) ? std::numeric_limits<double>::infinity() : c.mean_final_val_loss;
    return {c.diverged > 0, loss};
}

// `seeds`: the seeds whose validation losses enter the mean.
lr_candidate candidate_of(const std::string& lr, const std::vector<std::size_t>& members,
                          const std::vector<summary_entry>& entries, const std::set<int>& seeds) {
    lr_candidate c;
    c.lr = lr;
    c.rate = entries[members.front()].point->config.train.lr;
    c.members = members;
    double sum = 0;
    int ok = 0;
    for (std::size_t i : members) {
        const run_result& r = entries[i].result;
        if (r.status != run_status::ok) {
            ++c.diverged;
            continue;
        }
        if (!seeds.count(entries[i].point->config.seed)) continue;
        sum += r.final_val.loss;
        ++ok;
    }
    c.mean_final_val_loss = ok > 0 ? sum / ok : std::numeric_limits<double>::quiet_NaN();
    return c;
}

// Rates compare as the numbers the runs trained with.
lr_edge edge_of(const lr_choice& c) {
    if (c.rates.size() < 2) return lr_edge::only_rate;
    const double chosen = c.rates[c.chosen].rate;
    bool lower = false, higher = false;
    for (const lr_candidate& r : c.rates) {
        lower |= r.rate < chosen;
        higher |= r.rate > chosen;
    }
    return !lower ? lr_edge::lowest : !higher ? lr_edge::highest : lr_edge::interior;
}

// "0.0024": an accuracy near chance keeps its digits.
std::string four_decimals(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
}

// Fills c.some_run_solves and the best final validation accuracy over every
// finished run of every rate (all seeds: a seed beyond the grid's that
// solves still shows the task can be learnt at that rate).
void mark_whether_some_run_solves(lr_choice& c, const std::vector<summary_entry>& entries) {
    const task_kind kind = entries[c.rates.front().members.front()].point->config.task.kind;
    if (kind == task_kind::text) return;
    c.some_run_solves = false;
    c.best_val_accuracy_name = solving_accuracy_name(kind);
    for (const lr_candidate& rate : c.rates)
        for (std::size_t i : rate.members) {
            const run_result& r = entries[i].result;
            if (r.status != run_status::ok) continue;
            c.some_run_solves = c.some_run_solves || solves_task(kind, r.final_val);
            const double acc = solving_accuracy(kind, r.final_val);
            if (c.best_val_accuracy_lr.empty() || acc > c.best_val_accuracy) {
                c.best_val_accuracy = acc;
                c.best_val_accuracy_lr = rate.lr;
            }
        }
}

}  // namespace

std::string variant_label(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
    std::string out;
    for (std::size_t k = 0; k < keys.size() && k < values.size(); ++k) {
        if (values[k].empty()) continue;
        if (!out.empty()) out += ',';
        out += keys[k] + "=" + values[k];
    }
    return out.empty() ? "the only variant" : out;
}

std::vector<std::string> learning_rate_warnings(const experiment_spec& spec, const lr_selection& selection) {
    std::vector<std::string> out;
    const std::vector<std::string> keys = grouping_keys(spec, true);
    for (const lr_choice& c : selection.variants) {
        const std::string& lr = c.rates[c.chosen].lr;
        const std::string variant = variant_label(keys, c.variant);
        switch (c.edge) {
            case lr_edge::interior: break;
            case lr_edge::lowest:
                out.push_back(lr + " is the lowest rate tried for " + variant + ": extend the grid");
                break;
            case lr_edge::highest:
                out.push_back(lr + " is the highest rate tried for " + variant + ": extend the grid");
                break;
            case lr_edge::only_rate:
                out.push_back(lr + " is the only rate tried for " + variant + ": its choice is untested");
                break;
        }
        if (!c.some_run_solves)
            out.push_back("no rate tried for " + variant + " solves the task on validation (" +
                          (c.best_val_accuracy_lr.empty()
                               ? std::string("no run finished")
                               : "best final validation " + c.best_val_accuracy_name + " " +
                                     four_decimals(c.best_val_accuracy) + ", at " + c.best_val_accuracy_lr) +
                          "): the chosen rate is the best of runs that failed");
    }
    return out;
}

std::vector<run_group> group_runs(const std::vector<summary_entry>& entries, const std::vector<std::string>& keys) {
    std::vector<run_group> groups;
    std::map<std::vector<std::string>, std::size_t> index;  // values -> position in groups
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto config = config_map(entries[i].point->config);
        std::vector<std::string> values;
        for (const auto& k : keys) values.push_back(value_in(config, k));
        auto [it, fresh] = index.emplace(values, groups.size());
        if (fresh) groups.push_back({values, {}});
        groups[it->second].members.push_back(i);
    }
    return groups;
}

lr_selection select_learning_rates(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    lr_selection sel;
    sel.swept = std::find(spec.swept_keys.begin(), spec.swept_keys.end(), lr_key) != spec.swept_keys.end();
    if (!sel.swept) return sel;
    sel.selected.assign(entries.size(), false);
    for (const run_group& variant : group_runs(entries, grouping_keys(spec, true))) {
        // The variant's runs by rate (a sub-grouping of its members).
        std::vector<summary_entry> sub;
        for (std::size_t i : variant.members) sub.push_back(entries[i]);
        lr_choice choice;
        choice.variant = variant.values;
        const std::vector<run_group> rates = group_runs(sub, {lr_key});
        // The seeds every rate has (when none is common to all, each rate's own).
        std::set<int> common;
        for (std::size_t k = 0; k < rates.size(); ++k) {
            std::set<int> seeds;
            for (std::size_t j : rates[k].members) seeds.insert(sub[j].point->config.seed);
            if (k == 0) {
                common = seeds;
            } else {
                std::set<int> both;
                std::set_intersection(common.begin(), common.end(), seeds.begin(), seeds.end(),
                                      std::inserter(both, both.begin()));
                common = both;
            }
        }
        std::set<int> all_seeds;
        for (const summary_entry& e : sub) all_seeds.insert(e.point->config.seed);
        std::set<int> selection_seeds = common.empty() ? all_seeds : common;
        if (!spec.selection_seeds.empty()) {
            // report.select_on: only those seeds choose (every rate's first, else any rate's).
            const std::set<int> named(spec.selection_seeds.begin(), spec.selection_seeds.end());
            std::set<int> chosen;
            for (int s : common)
                if (named.count(s)) chosen.insert(s);
            if (chosen.empty())
                for (int s : all_seeds)
                    if (named.count(s)) chosen.insert(s);
            selection_seeds = chosen;
        }
        choice.selection_seeds.assign(selection_seeds.begin(), selection_seeds.end());
        for (const run_group& rate : rates) {
            std::vector<std::size_t> members;
            for (std::size_t j : rate.members) members.push_back(variant.members[j]);
            choice.rates.push_back(candidate_of(rate.values[0], members, entries, selection_seeds));
        }
        for (std::size_t k = 1; k < choice.rates.size(); ++k)
            if (rank_of(choice.rates[k]) < rank_of(choice.rates[choice.chosen])) choice.chosen = k;
        choice.edge = edge_of(choice);
        mark_whether_some_run_solves(choice, entries);
        for (std::size_t i : choice.rates[choice.chosen].members) sel.selected[i] = true;
        sel.variants.push_back(std::move(choice));
    }
    return sel;
}

}  // namespace attnlab
