// rebuild_runs (runner.hpp): which finished runs `attnlab run --rerun-other-builds` retrains.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attnlab/results/comparisons.hpp"
#include "attnlab/run/runner.hpp"

namespace attnlab {

std::vector<std::size_t> rebuild_runs(const experiment_spec& spec,
                                      const std::vector<std::pair<std::size_t, run_result>>& done,
                                      const build_info& current) {
    std::vector<summary_entry> entries;
    std::map<std::string, std::size_t> index_of;  // run id -> spec index
    for (const auto& [i, r] : done) {
        entries.push_back({&spec.runs[i], r});
        index_of[spec.runs[i].id] = i;
    }
    const std::string now = describe(current);
    auto is_current = [&](std::size_t i) {
        for (const auto& [j, r] : done)
            if (j == i) return r.build && describe(*r.build) == now;
        return false;
    };
    // Each comparison's runs (both sides), as spec indices.
    std::vector<std::pair<bool, std::vector<std::size_t>>> comparisons;  // (flagged, runs)
    const std::vector<comparisons_result> all = compare_all(spec, entries);
    for (const comparisons_result& r : all)
        for (const comparison& c : r.rows) {
            std::vector<std::size_t> runs;
            for (const std::string& id : c.run_ids) runs.push_back(index_of.at(id));
            comparisons.emplace_back(c.builds != "one", runs);
        }
    // Closure: a flagged comparison retrains its runs of other builds; a comparison with a run to
    // retrain retrains the rest of its runs of other builds, until nothing changes.
    std::set<std::size_t> again;
    bool changed = true;
    while (changed) {
        changed = false;
        for (const auto& [flagged, runs] : comparisons) {
            const bool touched =
                flagged || std::any_of(runs.begin(), runs.end(), [&](std::size_t i) { return again.count(i) > 0; });
            if (!touched) continue;
            for (std::size_t i : runs)
                if (!is_current(i) && again.insert(i).second) changed = true;
        }
    }
    return {again.begin(), again.end()};
}

}  // namespace attnlab
