// The test loss by position of the evaluation windows (analysis/per_position.hpp).
#include "attnlab/analysis/per_position.hpp"

#include <algorithm>
#include <cmath>

#include "attnlab/analysis/truncation.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/run/run_dir.hpp"
#include "attnlab/util/subnormals.hpp"

namespace attnlab {

template <class T>
std::vector<position_loss> per_position_losses(transformer<T>& model, const batch& data, int chunk_B) {
    std::vector<position_loss> out(static_cast<std::size_t>(data.T));
    for (int first = 0; first < data.B; first += chunk_B) {
        const int B = std::min(chunk_B, data.B - first);
        const std::size_t off = static_cast<std::size_t>(first) * data.T;
        model.forward(data.tokens.data() + off, data.targets.data() + off, B, data.T);
        const auto& rows = model.answer_rows();    // (A) b * T + t within the chunk
        const auto& loss = model.answer_losses();  // (A)
        for (std::size_t a = 0; a < rows.size(); ++a) {
            position_loss& p = out[static_cast<std::size_t>(rows[a] % data.T)];
            ++p.count;
            p.loss_sum += loss[a];
        }
    }
    return out;
}

template <class T>
std::vector<position_loss> per_position_run_dir(const std::string& run_dir, const run_config& trained,
                                                const run_config& evaluated, attention_form form, state_layout layout) {
    const subnormals_flushed as_in_training;  // as evaluate_run_dir scores
    transformer<T> model = load_run_model<T>(run_dir, trained, evaluated);
    auto data = make_task(evaluated.task, static_cast<std::uint64_t>(evaluated.seed));
    model.set_attention_form(form, layout);
    return per_position_losses(model, data->test_set(), evaluated.train.batch);
}

template std::vector<position_loss> per_position_losses<float>(transformer<float>&, const batch&, int);
template std::vector<position_loss> per_position_losses<double>(transformer<double>&, const batch&, int);
template std::vector<position_loss> per_position_run_dir<float>(const std::string&, const run_config&,
                                                                const run_config&, attention_form, state_layout);
template std::vector<position_loss> per_position_run_dir<double>(const std::string&, const run_config&,
                                                                 const run_config&, attention_form, state_layout);

std::string per_position_csv(const run_config& trained, const run_config& evaluated,
                             const std::vector<position_loss>& rows, eval_precision precision) {
    const bool text = trained.task.kind == task_kind::text;
    const std::string from = variant_label(trained.attention), as = variant_label(evaluated.attention);
    std::string out = csv_line({"position", "loss", "bits_per_byte", "count", "trained", "evaluated", "precision"});
    for (std::size_t t = 0; t < rows.size(); ++t) {
        const position_loss& p = rows[t];
        const double mean = p.count > 0 ? p.loss_sum / static_cast<double>(p.count) : 0;
        out += csv_line({std::to_string(t), p.count > 0 ? format_number(mean) : "",
                         text && p.count > 0 ? format_number(mean / std::log(2.0)) : "", std::to_string(p.count), from,
                         as, to_string(precision)});
    }
    return out;
}

}  // namespace attnlab
