// Grouping of finished runs over seeds and the learning-rate choice per
// variant; the rules are in run_groups.hpp.
#include "attnlab/run/run_groups.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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

lr_candidate candidate_of(const std::string& lr, const std::vector<std::size_t>& members,
                          const std::vector<summary_entry>& entries) {
    lr_candidate c;
    c.lr = lr;
    c.members = members;
    double sum = 0;
    int ok = 0;
    for (std::size_t i : members) {
        const run_result& r = entries[i].result;
        if (r.status != run_status::ok) {
            ++c.diverged;
            continue;
        }
        sum += r.final_val.loss;
        ++ok;
    }
    c.mean_final_val_loss = ok > 0 ? sum / ok : std::numeric_limits<double>::quiet_NaN();
    return c;
}

}  // namespace

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
        for (const run_group& rate : group_runs(sub, {lr_key})) {
            std::vector<std::size_t> members;
            for (std::size_t j : rate.members) members.push_back(variant.members[j]);
            choice.rates.push_back(candidate_of(rate.values[0], members, entries));
        }
        for (std::size_t k = 1; k < choice.rates.size(); ++k)
            if (rank_of(choice.rates[k]) < rank_of(choice.rates[choice.chosen])) choice.chosen = k;
        for (std::size_t i : choice.rates[choice.chosen].members) sel.selected[i] = true;
        sel.variants.push_back(std::move(choice));
    }
    return sel;
}

}  // namespace attnlab
