// Groups of finished runs that differ only in their seed, and the learning
// rate at which each variant is judged (docs/outputs.md).
//
// Learning-rate selection. When a sweep varies train.lr, each variant (one
// combination of the swept keys other than seed and train.lr) is reported at
// the rate whose mean FINAL VALIDATION loss over its seeds is lowest, so a
// variant is never judged at a rate tuned for another, and the test set
// never chooses. A rate at which some seed diverged ranks after every rate
// at which none did; ties go to the rate listed first in the sweep.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "attnlab/results/summary.hpp"
#include "attnlab/spec/overrides.hpp"  // tuned_key

namespace attnlab {

// The key whose value is chosen per variant: the spec's tuned key (train.lr).
inline constexpr const char* lr_key = tuned_key;

// The swept keys that tell groups apart: every one but seed (and, with
// `without_lr`, train.lr), in the spec's order.
std::vector<std::string> grouping_keys(const experiment_spec& spec, bool without_lr);

struct run_group {
    std::vector<std::string> values;   // resolved value of each grouping key ("" where it does not apply)
    std::vector<std::size_t> members;  // indices into the entries, in entry (spec) order
};
// `entries` grouped by their resolved values of `keys`, groups in order of first appearance.
std::vector<run_group> group_runs(const std::vector<summary_entry>& entries, const std::vector<std::string>& keys);

// One learning rate of a variant.
struct lr_candidate {
    std::string lr;                    // as config.yaml writes it
    double rate = 0;                   // the value itself (the members' train.lr)
    std::vector<std::size_t> members;  // indices into the entries
    int diverged = 0;                  // members that did not finish ok
    double mean_final_val_loss = 0;    // over the selection seeds' members that finished ok (NaN: none did)
};

// Where the chosen rate sits in the rates tried for its variant.
enum class lr_edge { interior, lowest, highest, only_rate };

struct lr_choice {
    std::vector<std::string> variant;  // values of grouping_keys(spec, true)
    std::vector<lr_candidate> rates;   // in order of first appearance
    std::size_t chosen = 0;            // index into rates
    // The seeds the choice is made on: those present at every rate, or, with
    // report.select_on, the named ones among them (any rate's when none is at every rate).
    std::vector<int> selection_seeds;
    lr_edge edge = lr_edge::interior;
    // Synthetic tasks (all but text): whether any finished run of any rate
    // solves the task on validation (solves_task on its final validation
    // metrics). When none does, the choice ranks runs that all failed. Always
    // true for text, where "solved" does not apply.
    bool some_run_solves = true;
    // The highest final validation accuracy that solves_task judges by (copy:
    // sequence accuracy, else token accuracy) over the finished runs, and its rate.
    std::string best_val_accuracy_name;  // "sequence accuracy" or "token accuracy"
    double best_val_accuracy = 0;
    std::string best_val_accuracy_lr;  // "" when no run finished
};

struct lr_selection {
    bool swept = false;               // train.lr is swept; otherwise nothing below is filled
    std::vector<lr_choice> variants;  // in order of first appearance
    std::vector<bool> selected;       // per entry: the run is at its variant's chosen rate
};

lr_selection select_learning_rates(const experiment_spec& spec, const std::vector<summary_entry>& entries);

// What a reader of the choice should know, one line per variant and cause:
// "0.003 is the lowest rate tried for attention.numerator=taylor,attention.order=2:
// extend the grid" for a variant chosen at an edge, and "no rate tried for
// attention.denominator=gate solves the task on validation (...)" for one
// whose every run failed. None for an interior choice with a solving run.
std::vector<std::string> learning_rate_warnings(const experiment_spec& spec, const lr_selection& selection);

// "key=value,key=value" of a variant's keys that apply to it (empty values left out).
std::string variant_label(const std::vector<std::string>& keys, const std::vector<std::string>& values);

}  // namespace attnlab
