// metrics.csv of a run, read back when a stopped run resumes.
#include "attnlab/run/metrics_csv.hpp"

#include <charconv>
#include <numeric>

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
