// steps_to_solve.hpp: the first validation row at the solve threshold.
#include "attnlab/results/steps_to_solve.hpp"

#include <algorithm>
#include <cstdlib>

#include "attnlab/io/files.hpp"
#include "attnlab/results/summary.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

std::optional<long> steps_to_solve_in(const std::string& metrics_csv, task_kind kind) {
    if (kind == task_kind::text) return std::nullopt;
    const std::size_t header_end = metrics_csv.find('\n');
    if (header_end == std::string::npos) return std::nullopt;
    // step,split,loss,token_acc,seq_acc,...: plain fields (metrics.csv quotes nothing).
    for (std::size_t at = header_end + 1; at < metrics_csv.size();) {
        const std::size_t nl = metrics_csv.find('\n', at);
        if (nl == std::string::npos) break;  // a row cut short
        const std::string row = metrics_csv.substr(at, nl - at);
        at = nl + 1;
        std::vector<std::size_t> commas;
        for (std::size_t c = row.find(','); c != std::string::npos && commas.size() < 5; c = row.find(',', c + 1))
            commas.push_back(c);
        if (commas.size() < 5) return std::nullopt;
        if (row.compare(commas[0] + 1, commas[1] - commas[0] - 1, "val") != 0) continue;
        eval_metrics m;
        m.token_acc = std::strtod(row.c_str() + commas[2] + 1, nullptr);
        m.seq_acc = std::strtod(row.c_str() + commas[3] + 1, nullptr);
        if (solves_task(kind, m)) return std::strtol(row.c_str(), nullptr, 10);
    }
    return std::nullopt;
}

std::optional<long> steps_to_solve(const std::string& path, task_kind kind) {
    if (kind == task_kind::text) return std::nullopt;
    try {
        return steps_to_solve_in(read_file(path), kind);
    } catch (const io_error&) {
        return std::nullopt;
    }
}

std::optional<double> median_steps_to_solve(const std::vector<std::optional<long>>& steps) {
    std::vector<long> solved;
    for (const auto& s : steps)
        if (s) solved.push_back(*s);
    const std::size_t n = steps.size();
    if (n == 0) return std::nullopt;
    std::sort(solved.begin(), solved.end());
    // Ranks 0..n-1 with the unsolved runs last: the median is defined when its rank(s) are solved runs.
    if (n % 2 == 1) {
        const std::size_t mid = n / 2;
        if (mid >= solved.size()) return std::nullopt;
        return static_cast<double>(solved[mid]);
    }
    const std::size_t hi = n / 2;
    if (hi >= solved.size()) return std::nullopt;
    return 0.5 * static_cast<double>(solved[hi - 1] + solved[hi]);
}

}  // namespace attnlab
