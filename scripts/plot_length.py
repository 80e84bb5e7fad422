#!/usr/bin/python3
"""The context-length comparison of a sweep over task.seq_len: each variant
at its chosen learning rate per length, its gap to a baseline variant paired
seed by seed, and the slope of that gap per doubling of the length.

For a variant V, a baseline B and a length T, the paired difference
d_s(T) = m(V, s, T) - m(B, s, T) over the seeds s that finished in both at
their own chosen rates, m the final test loss (nats) or token accuracy: its
mean and 95 % Student-t interval are read from comparisons.csv, which
`attnlab summarize` writes for a spec whose report names B and matches
task.seq_len. The slope per doubling, computed here from summary.csv: for
each seed s with d_s at two or more lengths, the least-squares slope b_s of
d_s(T) on log2 T; then the mean of the b_s and its 95 % Student-t interval
over those seeds. A slope whose
interval contains 0 is not resolved: the data cannot tell a gap that grows
with the length from one that does not.

Writes STEM.md (the tables) and the figure STEM.png / STEM.pdf: left, each
seed's test token accuracy (dots) and the mean (line) against T; right, the
paired loss gap against the first baseline with its interval.

usage: /usr/bin/python3 scripts/plot_length.py RESULTS_DIR [--baseline NAME ...] [--out STEM]
NAME: a variant's label as printed (softmax, norm, gate, gate (paper)); default softmax and norm.
Default STEM: RESULTS_DIR/plots/length. Needs Debian's python3-matplotlib.
"""
import argparse
import math
import os
import sys
from collections import defaultdict

import plot_style
from plot_style import COLOURS, InputError

# (summary.csv column, comparisons.csv metric, words)
METRICS = [("final_test_loss", "loss", "loss (nats)"), ("final_test_token_acc", "token_acc", "token accuracy")]
REPORT_HINT = " (run `attnlab summarize` on a sweep whose spec has a report: with match task.seq_len)"


def variant_label(row):
    """A run's attention variant in words: its denominator, and the paper's gate for none + out_gate."""
    den = row["attention.denominator"]
    if den == "none" and row.get("attention.out_gate") == "true":
        return "gate (paper)"
    return den


def t_central_mass(t, df, steps=4000):
    """P(|X| <= t) for Student's t with df degrees of freedom (Simpson's rule on the density)."""
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    h = t / steps
    total = 0.0
    for i in range(steps + 1):
        x = i * h
        weight = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += weight * math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))
    return 2 * total * h / 3


def t_975(df):
    """The 0.975 quantile of Student's t (bisection on the central mass)."""
    low, high = 0.0, 1000.0
    for _ in range(60):
        mid = (low + high) / 2
        if t_central_mass(mid, df) < 0.95:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def mean_interval(values):
    """(mean, low, high) of a 95 % Student-t interval; low and high None for fewer than 2 values."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None, None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def slope(points):
    """Least-squares slope of y on x for [(x, y), ...]."""
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def num(x):
    """Signed, 4 decimals; below 0.001 (solved recall's losses differ by 1e-7) in scientific notation."""
    return f"{x:+.4f}" if x == 0 or abs(x) >= 1e-3 else f"{x:+.1e}"


def cell(mean, low, high, n):
    """mean [low, high] (n), or without the interval when there is none (n < 2)."""
    if low is None:
        return f"{num(mean)} (n={n}, no interval)"
    resolved = "" if low > 0 or high < 0 else ", not resolved"
    return f"{num(mean)} [{num(low)}, {num(high)}] (n={n}{resolved})"


def read_comparisons(results_dir):
    """(variant, baseline, T, metric) -> (mean, low, high, n) of comparisons.csv (low, high None for n < 2)."""
    out = {}
    for r in plot_style.read_csv_rows(os.path.join(results_dir, "comparisons.csv"), hint=REPORT_HINT):
        baseline = plot_style.baseline_keys(r)
        baseline.setdefault("attention.denominator", "")
        low, high = (None, None) if r["ci_low"] == "" else (float(r["ci_low"]), float(r["ci_high"]))
        key = (variant_label(r), variant_label(baseline), int(r["task.seq_len"]), r["metric"])
        out[key] = (float(r["mean_diff"]), low, high, int(r["n"]))
    return out


def read_chosen(results_dir):
    """(variant, T) -> {seed: row} of the runs at each variant's chosen rate at T."""
    rows = plot_style.read_csv_rows(os.path.join(results_dir, "summary.csv"))
    chosen = defaultdict(dict)
    for r in rows:
        if r.get("lr_selected") != "true":
            continue
        chosen[(variant_label(r), int(r["task.seq_len"]))][int(r["seed"])] = r
    if not chosen:
        raise InputError(f"{results_dir}/summary.csv: no run at a chosen learning rate (is train.lr swept?)")
    return chosen


def gaps(chosen, variant, baseline, lengths, key):
    """T -> {seed: d_s(T)} over the seeds that finished (status ok) on both sides (for the slopes)."""
    out = {}
    for T in lengths:
        v, b = chosen.get((variant, T), {}), chosen.get((baseline, T), {})
        out[T] = {s: float(v[s][key]) - float(b[s][key]) for s in v.keys() & b.keys()
                  if v[s]["status"] == "ok" and b[s]["status"] == "ok"}
    return out


def tables(chosen, comparisons, variants, lengths, baselines):
    lines = ["Each variant at its chosen learning rate per length (lowest mean final validation loss): final test "
             "token accuracy, each seed (s<seed>: value; diverged runs marked).", "",
             "| variant | " + " | ".join(f"T {T}" for T in lengths) + " |",
             "|---|" + "---|" * len(lengths)]
    for v in variants:
        cells = []
        for T in lengths:
            runs = chosen.get((v, T), {})
            if not runs:
                cells.append("–")
                continue
            lr = next(iter(runs.values()))["train.lr"]
            seeds = ", ".join(f"s{s}: {float(r['final_test_token_acc']):.3f}" if r["status"] == "ok"
                              else f"s{s}: {r['status']}" for s, r in sorted(runs.items()))
            cells.append(f"lr {lr}: {seeds}")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    for key, metric, name in METRICS:
        for base in baselines:
            lines += ["", f"Paired {name} difference against {base} (variant − {base}; 95 % interval, n paired "
                      "seeds), and its slope per doubling of T:", "",
                      "| variant | " + " | ".join(f"T {T}" for T in lengths) + " | slope per doubling |",
                      "|---|" + "---|" * (len(lengths) + 1)]
            for v in variants:
                if v == base:
                    continue
                cells = [cell(*comparisons[(v, base, T, metric)]) if (v, base, T, metric) in comparisons else "–"
                         for T in lengths]
                g = gaps(chosen, v, base, lengths, key)
                per_seed = defaultdict(list)
                for T in lengths:
                    for s, d in g[T].items():
                        per_seed[s].append((math.log2(T), d))
                slopes = [slope(p) for p in per_seed.values() if len(p) >= 2]
                cells.append(cell(*mean_interval(slopes), len(slopes)) if slopes else "–")
                lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw(results_dir, stem, baselines):
    chosen = read_chosen(results_dir)
    comparisons = read_comparisons(results_dir)
    lengths = sorted({T for _, T in chosen})
    order = ["softmax", "norm", "gate", "gate (paper)"]
    variants = sorted({v for v, _ in chosen}, key=lambda v: (order.index(v) if v in order else len(order), v))
    for base in baselines:
        if base not in variants:
            raise InputError(f"{results_dir}/summary.csv: no variant {base!r} (variants: {', '.join(variants)})")
    with open(stem + ".md.tmp", "w") as f:
        f.write(tables(chosen, comparisons, variants, lengths, baselines))
    os.replace(stem + ".md.tmp", stem + ".md")  # atomic: no half-written table

    plt = plot_style.load_pyplot("plot_length.py")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    for i, v in enumerate(variants):
        colour = COLOURS[i % len(COLOURS)]
        offset = 1 + (i - (len(variants) - 1) / 2) * 0.03  # multiplicative: the x axis is log2
        xs, means = [], []
        for T in lengths:
            values = [float(r["final_test_token_acc"]) for r in chosen.get((v, T), {}).values() if r["status"] == "ok"]
            if not values:
                continue
            left.scatter([T * offset] * len(values), values, s=12, color=colour, alpha=0.6, linewidths=0)
            xs.append(T * offset)
            means.append(sum(values) / len(values))
        left.plot(xs, means, color=colour, marker="o", markersize=4, label=v)
        if v == baselines[0]:
            continue
        rows = {T: comparisons[(v, baselines[0], T, "loss")] for T in lengths
                if (v, baselines[0], T, "loss") in comparisons}
        for T, (mean, lo, hi, _) in rows.items():
            if lo is not None:
                right.errorbar([T * offset], [mean], yerr=[[mean - lo], [hi - mean]], color=colour, marker="o",
                               markersize=4, capsize=3, linestyle="none")
        pts = [(T * offset, rows[T][0]) for T in sorted(rows)]
        right.plot([x for x, _ in pts], [y for _, y in pts], color=colour, linewidth=0.8, label=f"{v} − {baselines[0]}")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlim(min(lengths) / 1.4, max(lengths) * 1.4)  # room for the variants' offsets at the ends
        ax.set_xticks(lengths)
        ax.set_xticklabels([str(T) for T in lengths])
        ax.set_xlabel("sequence length T (pairs T/4)")
    left.set_ylabel("final test token accuracy (each seed, mean line)")
    left.set_title("Recall against context length")
    left.legend(fontsize=7.5)
    right.axhline(0, color="#000000", linewidth=0.8)
    right.set_ylabel(f"Δ test loss vs {baselines[0]}, nats, paired (95 % CI)")
    right.set_title(f"Paired gap against {baselines[0]}")
    right.legend(fontsize=7.5)
    return [stem + ".md"] + plot_style.save(fig, stem)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir")
    parser.add_argument("--baseline", action="append", help="baseline variant (repeat; default softmax and norm)")
    parser.add_argument("--out", help="stem of the output files (default RESULTS_DIR/plots/length)")
    args = parser.parse_args()
    stem = args.out or os.path.join(args.results_dir, "plots", "length")
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    baselines = args.baseline or ["softmax", "norm"]
    sys.exit(plot_style.report("plot_length.py", lambda: draw(args.results_dir, stem, baselines)))


if __name__ == "__main__":
    main()
