#include "attnlab/run/summary.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "attnlab/attention/recurrent.hpp"
#include "attnlab/io/csv.hpp"
#include "attnlab/util/error.hpp"

namespace attnlab {

namespace {
// state_floats in double: exact when it fits in size_t, else (only Taylor
// states) F (HS + 1) with F = sum over orders of d^m or C(d+m-1, m).
double state_floats_or_estimate(const attention_config& a, int HS, state_layout layout, int T) {
    try {
        return static_cast<double>(state_floats(a, HS, layout, T));
    } catch (const std::overflow_error&) {
        double F = 0, term = 1;  // term = size of order m
        for (int m = 0; m <= a.order; ++m) {
            F += term;
            term *= layout == state_layout::full ? HS : static_cast<double>(HS + m) / (m + 1);
        }
        return F * (HS + 1);
    }
}
}  // namespace

state_size run_state_size(const run_config& cfg) {
    const int HS = cfg.model.d_model / cfg.model.heads, T = max_seq_len(cfg.task);
    state_size s;
    s.finite = has_finite_state(cfg.attention);
    s.symmetric_floats = state_floats_or_estimate(cfg.attention, HS, state_layout::symmetric, T);
    s.full_floats = state_floats_or_estimate(cfg.attention, HS, state_layout::full, T);
    return s;
}

namespace {
// The value of swept key `key` for a run ("" if its grid does not sweep it).
std::string swept_value_of(const run_point& p, const std::string& key) {
    for (const auto& s : p.swept)
        if (s.key == key) return s.value;
    return "";
}
}  // namespace

std::string summary_csv(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::vector<std::string> header = {"run_id", "status"};
    header.insert(header.end(), spec.swept_keys.begin(), spec.swept_keys.end());
    for (const char* h :
         {"final_test_loss", "final_test_token_acc", "final_test_seq_acc", "best_test_loss", "best_test_token_acc",
          "best_test_seq_acc", "best_step", "steps", "wall_s", "params", "state_floats", "state_floats_full",
          "state_bytes", "nonpositive_denominator_steps", "reason"})
        header.emplace_back(h);
    std::string out = csv_line(header);
    for (const auto& e : entries) {
        const run_result& r = e.result;
        std::vector<std::string> row = {e.point->id, to_string(r.status)};
        for (const auto& k : spec.swept_keys) row.push_back(swept_value_of(*e.point, k));
        for (double v : {r.final_test.loss, r.final_test.token_acc, r.final_test.seq_acc, r.best_test.loss,
                         r.best_test.token_acc, r.best_test.seq_acc})
            row.push_back(format_number(v));
        row.push_back(std::to_string(r.best_step));
        row.push_back(std::to_string(r.steps));
        char wall[32];
        std::snprintf(wall, sizeof wall, "%.2f", r.wall_s);
        row.emplace_back(wall);
        row.push_back(std::to_string(r.params));
        const state_size st = run_state_size(e.point->config);
        row.push_back(format_number(st.symmetric_floats));
        row.push_back(format_number(st.full_floats));
        row.push_back(format_number(st.bytes()));
        row.push_back(std::to_string(r.nonpositive_denominator_steps));
        row.push_back(describe(r));
        out += csv_line(row);
    }
    return out;
}

namespace {
struct mean_std {
    double mean = 0, std = 0;
};
mean_std stats(const std::vector<double>& v) {
    mean_std s;
    if (v.empty()) return s;
    for (double x : v) s.mean += x;
    s.mean /= v.size();
    if (v.size() > 1) {
        for (double x : v) s.std += (x - s.mean) * (x - s.mean);
        s.std = std::sqrt(s.std / (v.size() - 1));  // sample std over seeds
    }
    return s;
}
std::string fmt(const mean_std& s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f ± %.3f", s.mean, s.std);
    return buf;
}
}  // namespace

std::string summary_table_md(const experiment_spec& spec, const std::vector<summary_entry>& entries) {
    std::vector<std::string> group_keys;
    for (const auto& k : spec.swept_keys)
        if (k != "seed") group_keys.push_back(k);

    // Groups in first-appearance order.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const summary_entry*>> groups;
    std::map<std::string, std::vector<std::string>> group_values;
    for (const auto& e : entries) {
        std::vector<std::string> values;
        std::string label;
        for (const auto& k : group_keys) {
            values.push_back(swept_value_of(*e.point, k));
            label += values.back() + "\x1f";
        }
        if (!groups.count(label)) {
            order.push_back(label);
            group_values[label] = values;
        }
        groups[label].push_back(&e);
    }

    std::ostringstream s;
    s << "# " << spec.name << "\n\n"
      << "Final test metrics, mean ± std over seeds; solved = fraction of seeds with test token accuracy >= "
      << solved_token_acc << ". Diverged runs count as unsolved and are left out of the means.\n\n|";
    for (const auto& k : group_keys) s << " " << k << " |";
    s << " runs | diverged | solved | token_acc | seq_acc | loss |\n|";
    for (std::size_t i = 0; i < group_keys.size() + 6; ++i) s << "---|";
    s << "\n";
    for (const auto& label : order) {
        std::vector<double> tok, seq, loss;
        int diverged = 0, solved = 0;
        const auto& members = groups[label];
        for (const auto* e : members) {
            if (e->result.status != run_status::ok) {
                ++diverged;
                continue;
            }
            tok.push_back(e->result.final_test.token_acc);
            seq.push_back(e->result.final_test.seq_acc);
            loss.push_back(e->result.final_test.loss);
            solved += e->result.final_test.token_acc >= solved_token_acc;
        }
        s << "|";
        for (const auto& v : group_values[label]) s << " " << v << " |";
        char frac[32];
        std::snprintf(frac, sizeof frac, "%d/%zu", solved, members.size());
        s << " " << members.size() << " | " << diverged << " | " << frac << " | ";
        if (tok.empty())
            s << "– | – | – |\n";
        else
            s << fmt(stats(tok)) << " | " << fmt(stats(seq)) << " | " << fmt(stats(loss)) << " |\n";
    }
    return s.str();
}

}  // namespace attnlab
