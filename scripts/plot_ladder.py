#!/usr/bin/python3
"""The Taylor ladder of a text sweep: test bits per byte against the order n
of the numerator, one series per denominator, every variant at its chosen
learning rate.

Left: each seed's test bits per byte (dots) and their mean (line); `linear`
(the first-order term alone, no constant) sits left of order 1; exp, the
limit of the ladder, is a horizontal line per denominator. Right: the paired
difference against exp with the same denominator and its 95 % interval, as
`attnlab summarize` computes them (comparisons.csv: the spec's report with
baseline attention.numerator=exp and match attention.denominator); the
order at which an interval first contains 0 is where the ladder reaches exp
within the seeds' resolution. The number of paired seeds is said once, in
the right panel's title; only a point with another count is annotated.

usage: /usr/bin/python3 scripts/plot_ladder.py RESULTS_DIR [--out STEM]
reads RESULTS_DIR/summary.csv and comparisons.csv; writes STEM.png and
STEM.pdf (default RESULTS_DIR/plots/ladder). Needs Debian's python3-matplotlib.
"""
import argparse
import os
import sys
from collections import Counter, defaultdict

import plot_style
from plot_style import BLACK, COLOURS, InputError

LINEAR_X = 0.5  # where `linear` sits on the order axis
ORDER_TICKS = [1, 2, 3, 4, 6, 8]
REPORT_HINT = " (run `attnlab summarize` on a sweep whose spec has a report:)"


def ladder_x(row):
    """Position of a run's numerator on the order axis, or None when it is not on the ladder."""
    numerator = row["attention.numerator"]
    if numerator == "linear":
        return LINEAR_X
    if numerator == "taylor":
        return int(row["attention.order"])
    return None


def plain_variant(row):
    """True for variants of the ladder proper: no clamp, no gates, no detached sum."""
    return (row.get("attention.clamp", "") == "" and row.get("attention.out_gate", "false") != "true"
            and row.get("attention.in_gate", "false") != "true")


def baseline_is_exp(row, denominator):
    """Whether a comparisons.csv row is against exp with `denominator` (its baseline cell: key=value,...)."""
    baseline = plot_style.baseline_keys(row)
    return (baseline.get("attention.numerator") == "exp" and baseline.get("attention.denominator") == denominator
            and plain_variant(baseline))


def draw(results_dir, stem):
    plt = plot_style.load_pyplot("plot_ladder.py")
    summary = plot_style.read_csv_rows(os.path.join(results_dir, "summary.csv"))
    comparisons = plot_style.read_csv_rows(os.path.join(results_dir, "comparisons.csv"), hint=REPORT_HINT)
    chosen = [r for r in summary if r.get("lr_selected") == "true" and plain_variant(r)]
    if not chosen:
        raise InputError(f"{results_dir}/summary.csv: no run at a chosen learning rate (is train.lr swept?)")
    # (denominator, x) -> each seed's bits per byte; (denominator) -> exp's; diverged counts.
    seeds = defaultdict(list)
    exp_bits = defaultdict(list)
    diverged = defaultdict(int)
    for r in chosen:
        den = r["attention.denominator"]
        x = ladder_x(r)
        if r["attention.numerator"] == "exp":
            if r["status"] == "ok":
                exp_bits[den].append(float(r["final_test_bits_per_byte"]))
            continue
        if x is None:
            continue
        if r["status"] == "ok":
            seeds[(den, x)].append(float(r["final_test_bits_per_byte"]))
        else:
            diverged[(den, x)] += 1
    denominators = sorted({d for d, _ in list(seeds) + list(diverged)}, key=lambda d: (d != "softmax", d))
    if not denominators:
        raise InputError(f"{results_dir}/summary.csv: no linear or taylor run at a chosen rate")

    # Right: paired differences against exp with the same denominator, (x, comparisons row) per denominator.
    paired = {}
    for den in denominators:
        rows = [c for c in comparisons if c["metric"] == "bits_per_byte" and baseline_is_exp(c, den)
                and c["attention.denominator"] == den and plain_variant(c) and ladder_x(c) is not None]
        paired[den] = sorted(((ladder_x(c), c) for c in rows), key=lambda p: p[0])
    # The number of paired seeds is said once (the title) for the count most points share; only a point
    # with another count is annotated.
    counts = Counter(c["n"] for pts in paired.values() for _, c in pts if c["ci_low"] != "")
    common_n = counts.most_common(1)[0][0] if counts else None

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    for i, den in enumerate(denominators):
        colour = COLOURS[i % len(COLOURS)]
        offset = (i - (len(denominators) - 1) / 2) * 0.08
        xs = sorted({x for d, x in list(seeds) + list(diverged) if d == den})
        means = []
        for x in xs:
            values = seeds.get((den, x), [])
            left.scatter([x + offset] * len(values), values, s=10, color=colour, alpha=0.6, linewidths=0)
            means.append(sum(values) / len(values) if values else float("nan"))
            if diverged.get((den, x)):
                left.annotate(f"{diverged[(den, x)]} diverged", (x + offset, max(values) if values else 0),
                              textcoords="offset points", xytext=(0, 6), fontsize=7, color=colour, ha="center")
        left.plot([x + offset for x in xs], means, color=colour, marker="o", markersize=4, label=f"taylor / {den}")
        if exp_bits.get(den):
            e = sum(exp_bits[den]) / len(exp_bits[den])
            left.axhline(e, color=colour, linestyle="--", linewidth=1,
                         label=f"exp / {den} ({len(exp_bits[den])} seeds)")
        pts = paired[den]
        for x, c in pts:
            if c["ci_low"] == "":
                continue
            mean, lo, hi = float(c["mean_diff"]), float(c["ci_low"]), float(c["ci_high"])
            right.errorbar([x + offset], [mean], yerr=[[mean - lo], [hi - mean]], color=colour, marker="o",
                           markersize=4, capsize=3, linestyle="none")
            if c["n"] != common_n:
                right.annotate(f"{c['n']} seeds", (x + offset, hi), textcoords="offset points", xytext=(0, 3),
                               fontsize=6.5, color=colour, ha="center")
        right.plot([x + offset for x, c in pts if c["mean_diff"] != ""],
                   [float(c["mean_diff"]) for x, c in pts if c["mean_diff"] != ""], color=colour, linewidth=0.8,
                   label=f"vs exp / {den}")
    for ax in (left, right):
        ax.set_xticks([LINEAR_X] + ORDER_TICKS)
        ax.set_xticklabels(["linear"] + [str(n) for n in ORDER_TICKS])
        ax.set_xlabel("Taylor order n of the numerator")
    left.set_ylabel("test bits per byte (each seed, mean line)")
    left.set_title("Test loss along the ladder")
    left.legend(fontsize=7.5)
    right.axhline(0, color=BLACK, linewidth=0.8)
    right.set_ylabel("Δ bits per byte vs exp, paired (95 % CI)")
    n_note = ""
    if common_n is not None:
        n_note = f"\n{common_n} paired seeds per point" + ("" if len(counts) == 1 else " unless marked")
    right.set_title("Paired difference against exp" + n_note)
    right.legend(fontsize=7.5)
    return plot_style.save(fig, stem)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir")
    parser.add_argument("--out", help="stem of the figure files (default RESULTS_DIR/plots/ladder)")
    args = parser.parse_args()
    stem = args.out or os.path.join(args.results_dir, "plots", "ladder")
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    sys.exit(plot_style.report("plot_ladder.py", lambda: draw(args.results_dir, stem)))


if __name__ == "__main__":
    main()
