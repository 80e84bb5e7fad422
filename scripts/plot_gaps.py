#!/usr/bin/python3
"""The paired gaps of a sweep's reports against one matched key (the model's
width, say): how each gap moves as the key grows, and whether the change
between the smallest and the largest value is resolved.

A report of the spec (its `match:` naming KEY) compares a variant V with a
baseline B at each value x of KEY, each at its chosen learning rate, seed
paired with seed: d_s(x) = m(V, s, x) - m(B, s, x), m the final test metric
(bits per byte by default). `attnlab summarize` writes the mean of d_s(x),
its 95 % Student-t interval, the Holm-adjusted p and the verdict to
comparisons.csv; this script reads them from there, and recomputes each
d_s(x) from summary.csv (the runs at the chosen rates, the seeds the
comparison used), checking that their mean is the one comparisons.csv holds.

The change of a gap from the smallest x to the largest, Delta = mean d(x_max)
- mean d(x_min), pairs nothing: the models at two widths are different
models, seed numbers or not. Its 95 % interval is Welch's (unequal
variances, Welch-Satterthwaite degrees of freedom), its p two-sided and
Holm-adjusted over the reports; an adjusted p of 0.05 or more does not
resolve whether the gap shrinks or grows.

Writes STEM.md (a table per report, then the changes) and STEM.png /
STEM.pdf: left, each variant's final test metric at its chosen rate against
KEY (every seed a dot, the mean a line); then one panel per report: the
gap's mean and 95 % interval against KEY, the declared margin shaded, each
point labelled with its verdict.

usage: /usr/bin/python3 scripts/plot_gaps.py RESULTS_DIR [--key KEY] [--metric METRIC] [--out STEM]
KEY: the matched key on the x axis (default model.d_model); METRIC: a metric
of comparisons.csv (default bits_per_byte; loss, token_acc); default STEM:
RESULTS_DIR/plots/gaps. Needs Debian's python3-matplotlib.
"""
import argparse
import math
import os
import sys
from collections import defaultdict

import plot_style
from plot_length import t_975, t_central_mass
from plot_style import InputError

REPORT_HINT = " (run `attnlab summarize` on a sweep whose spec has a report)"
# comparisons.csv columns that describe a comparison, not the variant's swept keys
STAT_COLUMNS_FROM = "report"


def variant_label(row):
    """A run's attention variant in words: numerator (with its order) / denominator."""
    order = row.get("attention.order", "")
    numerator = row.get("attention.numerator", "") + (f" {order}" if order not in ("", "–") else "")
    return f"{numerator}/{row.get('attention.denominator', '')}"


def same(a, b):
    """Two cells equal as numbers when both are numbers (0.001 and 1.0e-3), else as text."""
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except ValueError:
        return a == b


def matches(row, keys):
    return all(k in row and same(row[k], v) for k, v in keys.items())


def seed_values(summary, keys, seeds, column, path, what):
    """(seed -> float(column) of the finished run at each seed among summary's chosen-rate rows matching keys,
    the variant's label)."""
    out, label = {}, None
    for r in summary:
        if r.get("lr_selected") != "true" or not matches(r, keys) or int(r["seed"]) not in seeds:
            continue
        seed = int(r["seed"])
        if seed in out:
            raise InputError(f"{path}: two runs of {what} at seed {seed} match {keys}: {what} is ambiguous")
        label = variant_label(r)
        if r["status"] != "ok":
            continue
        out[seed] = plot_style.number(path, r, column)
    return out, label


def welch(a, b):
    """(mean(b) - mean(a), low, high, df, p): Welch's 95 % interval and two-sided p; low, high, p None when a
    side has < 2 values (df None also when there is no spread: p is then 0 for a change, 1 for none)."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    if len(a) < 2 or len(b) < 2:
        return mb - ma, None, None, None, None
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return mb - ma, mb - ma, mb - ma, None, 0.0 if mb != ma else 1.0
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = t_975(df) * se
    p = max(0.0, 1 - t_central_mass(abs(mb - ma) / se, df))
    return mb - ma, mb - ma - half, mb - ma + half, df, p


def read_gaps(results_dir, key, metric):
    """report -> list of points (x ascending): dicts with x, the comparisons.csv cells, the per-seed gaps and
    the two sides' per-seed values."""
    comparisons_path = os.path.join(results_dir, "comparisons.csv")
    summary_path = os.path.join(results_dir, "summary.csv")
    rows = plot_style.read_csv_rows(comparisons_path, ["report", "metric", "mean_diff", "seeds", key], REPORT_HINT)
    summary = plot_style.read_csv_rows(summary_path, ["seed", "status", "lr_selected", key])
    column = f"final_test_{metric}"
    if column not in summary[0]:
        raise InputError(f"{summary_path}: no column {column} (is {metric} a metric of this task?)")
    reports = defaultdict(list)
    for r in rows:
        if r["metric"] != metric or r["mean_diff"] == "":
            continue
        swept = list(r)[:list(r).index(STAT_COLUMNS_FROM)]
        variant_keys = {k: r[k] for k in swept if r[k] != ""}
        baseline_keys = plot_style.baseline_keys(r)
        baseline_keys[key] = r[key]
        baseline_keys["train.lr"] = r["baseline_train.lr"]
        seeds = {int(s) for s in r["seeds"].split()}
        v, v_label = seed_values(summary, variant_keys, seeds, column, summary_path, "the variant")
        b, b_label = seed_values(summary, baseline_keys, seeds, column, summary_path, "the baseline")
        paired = sorted(v.keys() & b.keys())
        d = [v[s] - b[s] for s in paired]
        mean = plot_style.number(comparisons_path, r, "mean_diff")
        if not d or not math.isclose(sum(d) / len(d), mean, rel_tol=1e-6, abs_tol=1e-9):
            raise InputError(f"{comparisons_path}: {r['report']} at {key}={r[key]}: mean_diff {mean} is not the "
                             f"mean of summary.csv's paired seeds {paired} (rerun `attnlab summarize`)")
        low, high = (None, None) if r["ci_low"] == "" else (float(r["ci_low"]), float(r["ci_high"]))
        reports[r["report"]].append({
            "x": plot_style.number(comparisons_path, r, key), "mean": mean, "low": low, "high": high,
            "n": len(d), "gaps": d, "p_adjusted": r.get("p_adjusted", ""), "verdict": r.get("verdict", ""),
            "margin": float(r["margin"]) if r.get("margin") else None,
            "variant": v_label, "baseline": b_label,
            "variant_values": v, "baseline_values": b})
    if not reports:
        raise InputError(f"{comparisons_path}: no {metric} comparison with a mean{REPORT_HINT}")
    for points in reports.values():
        points.sort(key=lambda p: p["x"])
    return dict(reports)


def fmt(x):
    return f"{x:+.4f}"


def p_cell(p):
    return f"{float(p):.3g}" if p not in ("", None) else "–"


def x_label(x):
    return f"{x:g}"


def tables(reports, key, metric):
    lines = [f"Paired gaps in final test {metric} (variant − baseline, each at its chosen rate, seed paired with "
             f"seed) against {key}: mean [95 % Student-t interval], the Holm-adjusted p and the verdict as "
             "`attnlab summarize` wrote them, and each seed's gap.", ""]
    changes = []
    for name, points in reports.items():
        lines += [f"## {name}", "", f"| {key} | n | gap [95 % CI] | p (Holm) | verdict | gap by seed |",
                  "|---|---|---|---|---|---|"]
        for p in points:
            interval = f"{fmt(p['mean'])} [{fmt(p['low'])}, {fmt(p['high'])}]" if p["low"] is not None \
                else f"{fmt(p['mean'])} (no interval)"
            by_seed = ", ".join(fmt(g) for g in p["gaps"])
            lines.append(f"| {x_label(p['x'])} | {p['n']} | {interval} | {p_cell(p['p_adjusted'])} | "
                         f"{p['verdict'] or '–'} | {by_seed} |")
        lines.append("")
        if len(points) >= 2:
            changes.append((name, points[0], points[-1]) + welch(points[0]["gaps"], points[-1]["gaps"]))
    if changes:
        # Holm over the changes that have a p (a side with one seed has none)
        tested = [k for k, c in enumerate(changes) if c[-1] is not None]
        adjusted = [None] * len(changes)
        for k, p_adj in zip(tested, plot_style.holm([changes[k][-1] for k in tested])):
            adjusted[k] = p_adj
        lines += ["## The change from the smallest to the largest value", "",
                  f"Gap at the largest {key} minus the gap at the smallest, unpaired (different models): Welch's "
                  "95 % interval (unadjusted) and two-sided p, Holm-adjusted over the reports of this table. "
                  "Positive: the variant does worse against the baseline at the largest value than at the "
                  "smallest (loses ground); negative: it gains ground; either only when the adjusted p is below "
                  "0.05. The reading is the change's sign, not whether the change is within the margin.", "",
                  "| report | from → to | gap | change [95 % CI] | df | p | p (Holm) | reading |",
                  "|---|---|---|---|---|---|---|---|"]
        for (name, first, last, delta, low, high, df, p), p_adj in zip(changes, adjusted):
            if p_adj is None:
                reading = "no interval"
            elif p_adj < 0.05:
                reading = "the variant loses ground" if delta > 0 else "the variant gains ground"
            else:
                reading = "not resolved"
            interval = f"[{fmt(low)}, {fmt(high)}]" if low is not None else "–"
            lines.append(f"| {name} | {x_label(first['x'])} → {x_label(last['x'])} | {fmt(first['mean'])} → "
                         f"{fmt(last['mean'])} | {fmt(delta)} {interval} | {'–' if df is None else f'{df:.1f}'} | "
                         f"{p_cell(p)} | {p_cell(p_adj)} | {reading} |")
        lines.append("")
    return "\n".join(lines)


def draw(results_dir, stem, key, metric):
    reports = read_gaps(results_dir, key, metric)
    plt = plot_style.load_pyplot("plot_gaps.py")
    fig, axes = plt.subplots(1, 1 + len(reports), figsize=(4.2 * (1 + len(reports)), 3.6), squeeze=False)
    axes = axes[0]
    # left: every variant's metric at its chosen rate (values of the compared seeds)
    sides = {}
    for points in reports.values():
        for p in points:
            sides.setdefault(p["variant"], {}).setdefault(p["x"], {}).update(p["variant_values"])
            sides.setdefault(p["baseline"], {}).setdefault(p["x"], {}).update(p["baseline_values"])
    ax = axes[0]
    for i, (label, by_x) in enumerate(sorted(sides.items())):
        st = plot_style.style(i)
        xs = sorted(by_x)
        for x in xs:
            ax.scatter([x] * len(by_x[x]), list(by_x[x].values()), s=12, color=st["color"], marker=st["marker"],
                       alpha=0.6)
        ax.plot(xs, [sum(by_x[x].values()) / len(by_x[x]) for x in xs], color=st["color"],
                linestyle=st["linestyle"], label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(key)
    ax.set_ylabel(f"final test {metric.replace('_', ' ')}")
    ax.set_title("each variant at its chosen rate\n(dots: seeds; line: mean)")
    ax.legend()
    # one panel per report: the gap and its interval, the margin band
    for ax, (name, points) in zip(axes[1:], reports.items()):
        xs = [p["x"] for p in points]
        margin = next((p["margin"] for p in points if p["margin"]), None)
        if margin:
            ax.axhspan(-margin, margin, color="0.85", label=f"margin ±{margin:g}")
        ax.axhline(0, color=plot_style.BLACK, linewidth=0.8)
        for p in points:
            if p["low"] is not None:
                ax.errorbar([p["x"]], [p["mean"]], yerr=[[p["mean"] - p["low"]], [p["high"] - p["mean"]]],
                            color=plot_style.COLOURS[0], capsize=3, marker="o")
            ax.scatter([p["x"]] * len(p["gaps"]), p["gaps"], s=10, color=plot_style.COLOURS[1], alpha=0.6, zorder=3)
            ax.annotate(p["verdict"] or "", (p["x"], p["high"] if p["high"] is not None else p["mean"]),
                        textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7.5)
        ax.plot(xs, [p["mean"] for p in points], color=plot_style.COLOURS[0], linewidth=1)
        ax.margins(y=0.12)  # room for the verdicts above the intervals
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([x_label(x) for x in xs])
        ax.set_xlabel(key)
        ax.set_ylabel(f"gap in {metric.replace('_', ' ')} (variant − baseline)")
        ax.set_title(f"{points[0]['variant']} − {points[0]['baseline']}\n(mean, 95 % CI; dots: seeds)")
        if margin:
            ax.legend(loc="lower left")
    axes[0].set_xticks(sorted({p["x"] for pts in reports.values() for p in pts}))
    axes[0].set_xticklabels([x_label(x) for x in axes[0].get_xticks()])
    fig.tight_layout()
    written = plot_style.save(fig, stem)
    with open(f"{stem}.md.tmp", "w", encoding="utf-8") as f:
        f.write(tables(reports, key, metric))
    os.replace(f"{stem}.md.tmp", f"{stem}.md")
    return written + [f"{stem}.md"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir")
    parser.add_argument("--key", default="model.d_model", help="the matched key on the x axis")
    parser.add_argument("--metric", default="bits_per_byte", help="a metric of comparisons.csv")
    parser.add_argument("--out", help="stem of the output files (default RESULTS_DIR/plots/gaps)")
    args = parser.parse_args()
    stem = args.out or os.path.join(args.results_dir, "plots", "gaps")
    return plot_style.report("plot_gaps.py", lambda: draw(args.results_dir, stem, args.key, args.metric))


if __name__ == "__main__":
    sys.exit(main())
