// metrics.csv of a run, read back when a stopped run resumes.
#include "attnlab/results/metrics_csv.hpp"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <vector>

#include "attnlab/io/csv.hpp"
#include "attnlab/io/files.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

// The val and test rows of step 0, then a train, a val and a test row at each
// evaluation step, and a train row at each other multiple of log_every.
std::size_t metrics_rows_after(const train_config& tc, int step) {
    const std::size_t evaluations = static_cast<std::size_t>(step / tc.eval_every);  // step < tc.steps
    std::size_t logged = 0;  // train rows at multiples of log_every that are not evaluation steps
    if (tc.log_every > 0) {
        const long both = std::lcm(static_cast<long>(tc.eval_every), static_cast<long>(tc.log_every));
        logged = static_cast<std::size_t>(step / tc.log_every - step / both);
    }
    return 2 + 3 * evaluations + logged;
}

std::optional<std::size_t> metrics_prefix_up_to(const std::string& text, const std::string& path,
                                                const train_config& tc, int step, std::string& why) {
    const std::string header = csv_line(metrics_header);
    if (text.compare(0, header.size(), header) != 0) {
        why = path + " has another header";
        return std::nullopt;
    }
    std::size_t end = header.size(), rows = 0;
    for (std::size_t at = end; at < text.size();) {
        const auto nl = text.find('\n', at);
        if (nl == std::string::npos) break;  // a row cut short by a kill or a full disk
        int row_step = -1;
        const auto [p, ec] = std::from_chars(text.data() + at, text.data() + nl, row_step);
        if (ec != std::errc() || p == text.data() + nl || *p != ',') {
            why = path + ": malformed row " + std::to_string(rows + 1);
            return std::nullopt;
        }
        if (row_step > step) break;
        ++rows;
        end = at = nl + 1;
    }
    const std::size_t want = metrics_rows_after(tc, step);
    if (rows != want) {
        why = path + " has " + std::to_string(rows) + " rows up to step " + std::to_string(step) + ", expected " +
              std::to_string(want);
        return std::nullopt;
    }
    return end;
}

std::string metrics_problem(const std::string& text, const std::string& path, int& last_step) {
    last_step = -1;
    const std::string header = csv_line(metrics_header);
    if (text.compare(0, header.size(), header) != 0)
        return path + ": its header is not " + header.substr(0, header.size() - 1);
    std::size_t row = 0;
    for (std::size_t at = header.size(); at < text.size();) {
        const auto nl = text.find('\n', at);
        ++row;
        const std::string where = path + ": row " + std::to_string(row) + ": ";
        if (nl == std::string::npos) return where + "cut short (no line end)";
        std::vector<std::string> cells;
        for (std::size_t c = at;;) {
            const auto comma = std::min(text.find(',', c), nl);
            cells.push_back(text.substr(c, comma - c));
            if (comma == nl) break;
            c = comma + 1;
        }
        at = nl + 1;
        if (cells.size() != metrics_header.size())
            return where + std::to_string(cells.size()) + " cells, expected " + std::to_string(metrics_header.size());
        int step = -1;
        const auto [p, ec] = std::from_chars(cells[0].data(), cells[0].data() + cells[0].size(), step);
        if (ec != std::errc() || p != cells[0].data() + cells[0].size() || step < last_step)
            return where + "step '" + cells[0] + "' is not a step at or after " +
                   std::to_string(std::max(last_step, 0));
        last_step = step;
        if (cells[1] != "train" && cells[1] != "val" && cells[1] != "test")
            return where + "split '" + cells[1] + "' is not train, val or test";
        for (std::size_t k = 2; k < cells.size(); ++k) {
            double v = 0;
            const std::string& c = cells[k];
            const auto [q, e] = std::from_chars(c.data(), c.data() + c.size(), v);
            if (!c.empty() && (e != std::errc() || q != c.data() + c.size()))
                return where + metrics_header[k] + " '" + c.substr(0, 40) + "' is not a number";
        }
    }
    return "";
}

bool keep_metrics_up_to(const std::string& path, const train_config& tc, int step, std::string& why) {
    std::string text;
    try {
        text = read_file(path);
    } catch (const io_error& e) {
        why = e.what();
        return false;
    }
    const std::optional<std::size_t> end = metrics_prefix_up_to(text, path, tc, step, why);
    if (!end) return false;
    if (*end != text.size()) write_file_atomic(path, text.substr(0, *end));
    return true;
}

}  // namespace attnlab
