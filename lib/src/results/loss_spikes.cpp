// Loss spikes from the per-step training losses of metrics.csv
// (results/loss_spikes.hpp).
#include "attnlab/results/loss_spikes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "attnlab/io/files.hpp"
#include "attnlab/results/metrics_csv.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

std::vector<std::size_t> loss_spikes(const std::vector<double>& losses, double factor, int window) {
    std::vector<std::size_t> out;
    const std::size_t w = static_cast<std::size_t>(window);
    std::vector<double> previous(w);
    for (std::size_t i = w; i < losses.size(); ++i) {
        std::copy(losses.begin() + static_cast<std::ptrdiff_t>(i - w), losses.begin() + static_cast<std::ptrdiff_t>(i),
                  previous.begin());
        // The median: the middle value, or the mean of the two middle ones.
        const std::size_t mid = w / 2;
        std::nth_element(previous.begin(), previous.begin() + static_cast<std::ptrdiff_t>(mid), previous.end());
        double median = previous[mid];
        if (w % 2 == 0)
            median =
                (median + *std::max_element(previous.begin(), previous.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
        if (losses[i] > factor * median) out.push_back(i);
    }
    return out;
}

std::optional<std::vector<double>> per_step_train_losses(const std::string& metrics_csv, const train_config& cfg) {
    if (cfg.log_every != 1) return std::nullopt;
    const std::size_t header_end = metrics_csv.find('\n');
    if (header_end == std::string::npos) return std::nullopt;
    std::vector<double> losses;
    for (std::size_t at = header_end + 1; at < metrics_csv.size();) {
        const std::size_t nl = metrics_csv.find('\n', at);
        if (nl == std::string::npos) break;  // a row cut short
        // step,split,loss,...: the three first fields are plain (no quoting in metrics.csv).
        const std::string row = metrics_csv.substr(at, nl - at);
        at = nl + 1;
        const std::size_t c1 = row.find(','), c2 = row.find(',', c1 + 1), c3 = row.find(',', c2 + 1);
        if (c1 == std::string::npos || c2 == std::string::npos || c3 == std::string::npos) return std::nullopt;
        if (row.compare(c1 + 1, c2 - c1 - 1, "train") != 0) continue;
        const long step = std::strtol(row.c_str(), nullptr, 10);
        if (step != static_cast<long>(losses.size()) + 1) return std::nullopt;  // a step missing or repeated
        losses.push_back(std::strtod(row.c_str() + c2 + 1, nullptr));
    }
    if (losses.empty()) return std::nullopt;
    return losses;
}

std::optional<long> count_loss_spikes(const std::string& metrics_csv_path, const train_config& cfg) {
    if (cfg.log_every != 1) return std::nullopt;
    std::string text;
    try {
        text = read_file(metrics_csv_path);
    } catch (const io_error&) {
        return std::nullopt;
    }
    const auto losses = per_step_train_losses(text, cfg);
    if (!losses) return std::nullopt;
    return static_cast<long>(loss_spikes(*losses).size());
}

}  // namespace attnlab
