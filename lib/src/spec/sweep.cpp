// Sweeps and their expansion into runs (see sweep.hpp).
#include "sweep.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "attnlab/util/yaml_quoted.hpp"
#include "hints.hpp"
#include "schema.hpp"

namespace attnlab::spec_internal {

namespace {

std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t");
    auto e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

grid parse_grid(const YAML::Node& m, const std::string& file, const std::string& path, int line) {
    if (!m.IsMap()) fail({file, line, path}, "expected a map of dotted keys to lists of values, got " + describe(m));
    if (m.size() == 0) fail({file, line, path}, "empty grid, expected dotted keys with lists of values");
    grid g;
    for (const auto& [k, v] : map_items(m, file, path)) {
        const std::string key = k.Scalar();
        where key_at{file, line_of(k), path + "." + key};
        if (key == "seed") fail(key_at, "seeds are swept by the top-level key seeds (or a grid's own seeds)");
        if (key == "seeds") {
            g.seeds = parse_seeds(v, file, value_line(k, v), key_at.path);
            continue;
        }
        const key_def* d = find_key(key);
        if (!d)
            fail(key_at, "unknown key" + did_you_mean(key, dotted_candidates()) + " (" + dotted_key_hint(key) + ")");
        key_at.line = value_line(k, v);
        if (!v.IsSequence()) fail(key_at, "expected a list of values, got " + describe(v));
        if (v.size() == 0) fail(key_at, "empty list of values");
        axis a{key, {}};
        std::unordered_set<std::string> texts;  // a set, not a scan: lists of 10^5 values
        for (const YAML::Node& item : v) {
            where at{file, line_of(item) ? line_of(item) : key_at.line, key_at.path};
            entry e{parse_value(*d, item, at), origin::sweep, at};
            if (!texts.insert(e.v.text()).second) fail(at, "duplicate value " + e.v.text());
            a.values.push_back(e);
        }
        g.axes.push_back(std::move(a));
    }
    if (g.axes.empty())
        fail({file, line, path}, "a grid of seeds alone, expected dotted keys with lists of values too");
    return g;
}

}  // namespace

entry parse_set(const std::string& s, const config_limits& limits, const std::string& option) {
    auto eq = s.find('=');
    const std::string key = trim(s.substr(0, eq));
    if (eq == std::string::npos || key.empty())
        fail({option, 0, ""}, "expected dotted.key=value (e.g. attention.order=4), got '" + s + "'");
    const std::string text = trim(s.substr(eq + 1));
    where at{option, 0, key};
    const key_def* d = find_key(key);
    if (!d) fail(at, "unknown key" + did_you_mean(key, dotted_candidates()) + " (" + dotted_key_hint(key) + ")");
    YAML::Node n;
    try {
        n = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        fail(at, "cannot read '" + text + "' as a YAML value: " + e.msg);
    }
    return entry{parse_value(within(*d, limits), n, at), origin::set, at};
}

std::vector<grid> parse_sweep(const YAML::Node& n, const std::string& file, int line) {
    if (n.IsMap()) return {parse_grid(n, file, "sweep", line)};
    if (!n.IsSequence())
        fail({file, line, "sweep"},
             "expected a map of dotted keys to lists of values, or a list of such maps, got " + describe(n));
    if (n.size() == 0) fail({file, line, "sweep"}, "empty list of grids");
    std::vector<grid> grids;
    for (size_t i = 0; i < n.size(); ++i)
        grids.push_back(
            parse_grid(n[i], file, "sweep[" + std::to_string(i) + "]", line_of(n[i]) ? line_of(n[i]) : line));
    return grids;
}

std::vector<entry> parse_seeds(const YAML::Node& n, const std::string& file, int line, const std::string& path) {
    const key_def& seed = *find_key("seed");
    if (!n.IsSequence()) fail({file, line, path}, "expected a list of integers >= 0, got " + describe(n));
    if (n.size() == 0) fail({file, line, path}, "empty list of seeds");
    std::vector<entry> seeds;
    std::unordered_set<long long> seen;
    for (const YAML::Node& item : n) {
        where at{file, line_of(item) ? line_of(item) : line, path};
        entry e{parse_value(seed, item, at), origin::sweep, at};
        if (!seen.insert(static_cast<long long>(e.v.i)).second) fail(at, "duplicate seed " + e.v.text());
        seeds.push_back(e);
    }
    return seeds;
}

bool name_is_safe(const std::string& s) {
    return !s.empty() && s.size() <= max_file_name && s != "." && s != ".." &&
           s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
               std::string::npos;
}

std::string run_id(const std::vector<swept_value>& swept) {
    std::string id;
    for (const swept_value& s : swept) id += (id.empty() ? "" : ",") + s.key + "=" + s.value;
    for (char& ch : id)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && !std::strchr("._=,+-", ch)) ch = '_';
    return id;
}

namespace {

// A run's swept values with its text file's resolved path for task.path (and
// its checkpoint's for train.init), so that cA.txt, ./cA.txt and
// ../dir/cA.txt are one run; length-prefixed, so
// that no two different runs share it.
std::string same_run_key(const run_point& rp) {
    std::string key;
    for (const swept_value& s : rp.swept) {
        const std::string& v = s.key == "task.path"    ? rp.config.task.path
                               : s.key == "train.init" ? rp.config.train.init
                                                       : s.value;
        key += s.key + "=" + std::to_string(v.size()) + ":" + v + ";";
    }
    return key;
}

// "task.path=\"c 1.txt\",seed=0": a point as written, quoted where its id would change it.
std::string point_text(const std::vector<swept_value>& swept) {
    std::string out;
    for (const swept_value& s : swept) {
        const std::string id_part = run_id({{"", s.value}}).substr(1);
        out += (out.empty() ? "" : ",") + s.key + "=" + (id_part == s.value ? s.value : yaml_quoted(s.value));
    }
    return out;
}

}  // namespace

void check_run_count(const std::vector<grid>& grids, std::size_t n_seeds, const where& at) {
    // Counts stop growing past the limit, so that no product overflows.
    std::size_t points = 0, runs = 0;
    bool own_seeds = false;
    for (const grid& g : grids) {
        std::size_t n = 1;
        for (const axis& a : g.axes) n = std::min(n * a.values.size(), max_runs + 1);
        points = std::min(points + n, max_runs + 1);
        own_seeds |= g.seeds.has_value();
        runs = std::min(runs + n * (g.seeds ? g.seeds->size() : n_seeds), max_runs + 1);
    }
    if (runs <= max_runs) return;
    const std::string count = points > max_runs ? "more than " + std::to_string(max_runs) : std::to_string(points);
    fail(at, "more than " + std::to_string(max_runs) + " runs (" + count + " points x " +
                 (own_seeds ? std::string("their grids' seeds") : std::to_string(n_seeds) + " seeds") +
                 "); split the experiment");
}

void expand_runs(experiment_spec& spec, const config_source& base, const entries& with_set,
                 const std::vector<grid>& grids, const std::vector<entry>& seeds, const where& id_at) {
    // Points of each grid in row-major order of its keys as written; ids list
    // the keys in swept_keys order, so a point has one id whichever grid gives it.
    std::unordered_map<std::string, std::size_t> by_id;  // run id -> its run in spec.runs
    std::unordered_set<std::string> seen;                // same_run_key of every run made
    auto emit = [&](const run_config& cfg, const std::vector<swept_value>& point,
                    const std::vector<entry>& point_seeds) {
        for (const entry& s : point_seeds) {
            run_point rp{"", cfg, point};
            rp.config.seed = static_cast<int>(s.v.i);
            rp.swept.push_back({"seed", s.v.text()});
            rp.id = run_id(rp.swept);
            if (rp.id.size() > max_file_name)  // it names the run's directory
                fail(id_at, "run id of " + std::to_string(rp.id.size()) +
                                " characters, longer than a file name can be (" + std::to_string(max_file_name) +
                                "): " + rp.id.substr(0, 60) + "...; sweep fewer keys");
            // The same point again, or the same file under another spelling: one run, at its first place.
            if (!seen.insert(same_run_key(rp)).second) continue;
            // Ids are made safe by a many-to-one replacement: two runs must not share one.
            if (const auto it = by_id.find(rp.id); it != by_id.end())
                fail(id_at, "two different runs would get the run id " + rp.id + ": " +
                                point_text(spec.runs[it->second].swept) + " and " + point_text(rp.swept) +
                                " (characters outside [A-Za-z0-9._=,+-] become _ in a run id); make them differ "
                                "in characters a run id keeps (rename one file)");
            by_id.emplace(rp.id, spec.runs.size());
            spec.runs.push_back(std::move(rp));
        }
    };
    if (grids.empty()) emit(spec.base, {}, seeds);
    for (const grid& grid_of_point : grids) {
        const std::vector<axis>& g = grid_of_point.axes;
        std::vector<size_t> idx(g.size(), 0);
        for (bool more = true; more;) {
            entries run = with_set;
            for (size_t a = 0; a < g.size(); ++a) run[g[a].key] = g[a].values[idx[a]];
            std::vector<swept_value> point;
            for (const std::string& key : spec.swept_keys)
                for (size_t a = 0; a < g.size(); ++a)
                    if (g[a].key == key) point.push_back({key, g[a].values[idx[a]].v.text()});
            emit(resolve(base, with_set, run, run_id(point)), point, grid_of_point.seeds.value_or(seeds));
            more = false;
            for (size_t a = g.size(); a-- > 0;) {
                if (++idx[a] < g[a].values.size()) {
                    more = true;
                    break;
                }
                idx[a] = 0;
            }
        }
    }
}

}  // namespace attnlab::spec_internal
