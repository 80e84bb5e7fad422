#!/usr/bin/python3
"""Steps to solve as survival curves, and the log-rank test of each variant
against a baseline: for a sweep of a task with a solve threshold (lookup
and the other token tasks: validation token accuracy >= 0.99; copy: sequence
accuracy >= 0.9, as `attnlab summarize` counts solved runs), each run's first
evaluation step at the threshold (censored at its last step when it never
gets there), the fraction of each arm's seeds solved by each step, and, per
stratum, each other arm against the baseline arm: the log-rank statistic,
its chi-square p and its exact permutation p (every split of the pooled
seeds; attnlab.survival), Holm-adjusted over the table on the permutation p.

usage: /usr/bin/python3 scripts/solve_curves.py RESULTS_DIR [--baseline KEY=VALUE ...] [--match KEY ...]
           [--out STEM]

--baseline: the baseline arm (default attention.denominator=softmax).
--match: keys whose values form the strata (e.g. task.seq_len): arms are
compared only with the baseline of the same stratum. Arms: the runs that
share every other swept key but the seed. Writes STEM.csv
(one row per comparison), STEM_by_step.csv (each arm's solved fraction at
each evaluation step), STEM.png and STEM.pdf (default STEM:
RESULTS_DIR/plots/solve_curves). Needs python3-numpy, python3-pandas,
python3-yaml and, for the figure, python3-matplotlib.

Exit codes: 0 written, 2 a missing or malformed input or a bad argument.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

import plot_style
import sweep_runs
from attnlab import survival
from plot_style import InputError, write_csv

COLUMNS = ["stratum", "variant", "baseline", "variant_solved", "variant_n", "baseline_solved", "baseline_n",
           "variant_median_step", "baseline_median_step", "observed_minus_expected", "logrank_chi2",
           "p_asymptotic", "p_permutation", "splits", "exact", "p_holm"]
STEP_COLUMNS = ["stratum", "arm", "step", "solved_fraction", "runs"]
COPY_SEQ_ACC, TOKEN_ACC = 0.9, 0.99  # attnlab's solve thresholds (results/summary.hpp)


def parse_pairs(items, what):
    pairs = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"{what} {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        pairs[key] = value
    return pairs


def event_of(run, kind):
    """(step, solved) from the run's validation rows: its first step at the threshold, or its last step."""
    val = sorted((r for r in run.curves if r["split"] == "val"), key=lambda r: r["step"])
    if not val:
        raise InputError(f"run {run.id}: no validation rows in its metrics")
    metric, threshold = ("seq_acc", COPY_SEQ_ACC) if kind == "copy" else ("token_acc", TOKEN_ACC)
    return survival.first_solved_step([r["step"] for r in val], [r[metric] for r in val], threshold)


def median_step(times, events):
    """The median seed's step to solve, unsolved seeds counted as later than every other; None if unsolved."""
    order = sorted((t if e else float("inf")) for t, e in zip(times, events))
    n = len(order)
    mid = order[(n - 1) // 2:n // 2 + 1]
    value = sum(mid) / len(mid)
    return None if value == float("inf") else value


def arms_by_stratum(runs, swept, baseline, match, kind):
    """{stratum name: {arm name: [(step, solved), ...]}} and the baseline arm's name per stratum."""
    by_stratum = sweep_runs.group_by(runs, lambda r: sweep_runs.describe(r, match) or "all runs")
    # An arm's name: the keys that vary within a stratum (not those that only follow it, e.g. the steps of a length).
    arm_keys = [k for k in sweep_runs.varying_keys(runs, swept) if k not in match
                and any(len({r.get(k) for r in group}) > 1 for group in by_stratum.values())]
    strata, base_names = {}, {}
    for run in runs:
        if run.diverged:
            raise InputError(f"run {run.id} diverged: its steps to solve are not defined (leave it out of RESULTS_DIR "
                             "or count it by hand)")
        stratum = sweep_runs.describe(run, match) or "all runs"
        arm = sweep_runs.describe(run, arm_keys) or run.id
        strata.setdefault(stratum, {}).setdefault(arm, []).append(event_of(run, kind))
        if all(run.get(k) == v for k, v in baseline.items()):
            if base_names.setdefault(stratum, arm) != arm:
                raise InputError(f"--baseline {baseline} matches two arms in {stratum}: {base_names[stratum]} and "
                                 f"{arm} (add keys to --baseline)")
    return strata, base_names


def compare(strata, base_names):
    rows = []
    for stratum, arms in strata.items():
        if stratum not in base_names:
            continue  # no baseline here: drawn, not compared
        base = arms[base_names[stratum]]
        for arm, runs in arms.items():
            if arm == base_names[stratum]:
                continue
            t1, e1 = zip(*runs)
            t0, e0 = zip(*base)
            r = survival.logrank(t1, e1, t0, e0)
            rows.append([stratum, arm, base_names[stratum], r.events1, r.n1, r.events2, r.n2, median_step(t1, e1),
                         median_step(t0, e0), r.observed_minus_expected, r.chi2, r.p_asymptotic, r.p_permutation,
                         r.splits, r.exact])
    ps = [row[12] if row[12] is not None else 1.0 for row in rows]
    return [row + [p] for row, p in zip(rows, plot_style.holm(ps))]


def by_step(strata):
    rows = []
    for stratum, arms in strata.items():
        for arm, runs in arms.items():
            times, events = zip(*runs)
            steps = sorted({0, *times})
            for s, f in zip(steps, survival.solved_fraction(times, events, steps)):
                rows.append([stratum, arm, s, f, len(runs)])
    return rows


def draw_figure(strata, stem):
    plt = plot_style.load_pyplot("solve_curves.py")
    fig, axes = plt.subplots(1, len(strata), figsize=(5.0 * len(strata), 3.6), squeeze=False, sharey=True,
                             layout="constrained")
    for ax, (stratum, arms) in zip(axes[0], strata.items()):
        last = max(t for runs in arms.values() for t, _ in runs)
        for i, (arm, runs) in enumerate(arms.items()):
            times, events = zip(*runs)
            steps = sorted({0, *times, last})
            look = plot_style.style(i)
            ax.step(steps, survival.solved_fraction(times, events, steps), where="post", color=look["color"],
                    linestyle=look["linestyle"], label=f"{arm} ({sum(events)}/{len(runs)} solved)")
        ax.set_title(textwrap.fill(stratum, 40), fontsize="medium")
        ax.set_ylim(-0.03, 1.03)
        ax.legend(loc="best", fontsize="small")
    axes[0][0].set_ylabel("fraction of seeds solved")
    # One label under all panels: a label per panel overlaps its neighbour's.
    fig.supxlabel("training step (the first at which validation accuracy reaches the threshold)", fontsize="medium")
    return plot_style.save(fig, stem)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir")
    parser.add_argument("--baseline", action="append", help="KEY=VALUE of the baseline arm (repeat for several keys)")
    parser.add_argument("--match", action="append", default=[], help="a key whose values form the strata (repeat)")
    parser.add_argument("--out", help="stem of the outputs (default RESULTS_DIR/plots/solve_curves)")
    args = parser.parse_args()

    def run():
        baseline = parse_pairs(args.baseline or ["attention.denominator=softmax"], "--baseline")
        runs, swept, base_kind = sweep_runs.read_results(args.results_dir)
        kinds = {r.get("task.kind") or base_kind for r in runs}
        if len(kinds) != 1 or "text" in kinds or "" in kinds:
            raise InputError(f"{args.results_dir}: steps to solve need one task with a solve threshold, not "
                             f"{sorted(kinds)}")
        strata, base_names = arms_by_stratum(runs, swept, baseline, args.match, kinds.pop())
        if not base_names:
            raise InputError(f"--baseline {baseline}: no run of {args.results_dir} matches it")
        stem = args.out or os.path.join(args.results_dir, "plots", "solve_curves")
        os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
        write_csv(stem + ".csv", COLUMNS, compare(strata, base_names))
        write_csv(stem + "_by_step.csv", STEP_COLUMNS, by_step(strata))
        return [stem + ".csv", stem + "_by_step.csv", *draw_figure(strata, stem)]

    return plot_style.report("solve_curves.py", run)


if __name__ == "__main__":
    sys.exit(main())
