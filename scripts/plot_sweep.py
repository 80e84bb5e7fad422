#!/usr/bin/python3
"""Plots of a finished sweep (attnlab run / summarize output).

usage: /usr/bin/python3 scripts/plot_sweep.py RESULTS_DIR [--out DIR]

RESULTS_DIR is results/<name> (summary.csv, runs/<id>/metrics.csv). Writes
PNGs into --out (default RESULTS_DIR/plots), one set per task when the sweep
covers several tasks (task.kind swept), each with token and sequence accuracy:
  curves.png       test accuracy against step, mean over seeds, one line per
                   point of the sweep (its swept keys other than seed)
  by_order.png     final accuracy against attention.order (when swept), one
                   line per denominator; exp drawn as a horizontal reference
  by_denominator.png  final accuracy per attention.denominator (when swept)
  by_state.png     final accuracy against the recurrent state size per layer
                   and head (state_floats; exp's KV cache at the longest input)
Error bars are the std over seeds. Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import math
import os
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

METRICS = [("final_test_token_acc", "token_acc", "test token accuracy"),
           ("final_test_seq_acc", "seq_acc", "test sequence accuracy")]
NON_GROUP = {"seed", "task.kind"}


def mean_std(xs):
    if not xs:
        return float("nan"), 0.0
    m = sum(xs) / len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, s


def read_summary(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    swept = [k for k in rows[0].keys() if "." in k or k == "seed"] if rows else []
    return rows, swept


def task_of(results_dir, row):
    """The run's task kind: swept, or the base's, read from its config.yaml."""
    if row.get("task.kind"):
        return row["task.kind"]
    path = os.path.join(results_dir, "runs", row["run_id"], "config.yaml")
    if os.path.exists(path):
        with open(path) as f:
            in_task = False
            for line in f:
                if line.startswith("task:"):
                    in_task = True
                elif in_task and line.strip().startswith("kind:"):
                    return line.split(":", 1)[1].strip()
    return "task"


def label_of(row, keys):
    parts = [f"{k.split('.')[-1]}={row[k]}" for k in keys if row.get(k, "") != ""]
    return ", ".join(parts) if parts else "base"


def curves(rows, keys, results_dir, out, title):
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharex=True)
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(label_of(r, keys), []).append(r)
    for label, members in groups.items():
        for ax, (_, col, name) in zip(axes, METRICS):
            by_step = defaultdict(list)
            for r in members:
                path = os.path.join(results_dir, "runs", r["run_id"], "metrics.csv")
                if not os.path.exists(path):
                    continue
                with open(path, newline="") as f:
                    for m in csv.DictReader(f):
                        if m["split"] == "test":
                            by_step[int(m["step"])].append(float(m[col]))
            steps = sorted(by_step)
            ax.plot(steps, [mean_std(by_step[s])[0] for s in steps], label=label, lw=1.2)
            ax.set_ylabel(name)
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=6, ncol=2 if len(groups) > 12 else 1, loc="best")
    fig.suptitle(title + ": learning curves (mean over seeds)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def by_key(rows, x_key, line_key, out, title, numeric_x):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    lines = OrderedDict()
    for r in rows:
        if r["status"] != "ok":
            continue
        lines.setdefault(r.get(line_key, "") if line_key else "", []).append(r)
    for ax, (col, _, name) in zip(axes, METRICS):
        for lname, members in lines.items():
            pts = defaultdict(list)
            for r in members:
                pts[r.get(x_key, "")].append(float(r[col]))
            xs = [x for x in pts if x != ""]
            if not xs:  # e.g. exp at no order: a reference line
                m, _ = mean_std(pts[""])
                ax.axhline(m, ls="--", color="gray", lw=1, label=f"{lname} (no {x_key.split('.')[-1]})")
                continue
            xs = sorted(xs, key=float) if numeric_x else xs
            ms = [mean_std(pts[x]) for x in xs]
            xv = [float(x) for x in xs] if numeric_x else list(range(len(xs)))
            bars = ax.errorbar(xv, [m for m, _ in ms], yerr=[s for _, s in ms], marker="o", capsize=3,
                               label=lname or None)
            if pts.get(""):  # runs without this key (exp in an order sweep): a reference line
                ax.axhline(mean_std(pts[""])[0], ls="--", lw=1, color=bars[0].get_color(),
                           label=f"{lname} without {x_key.split('.')[-1]}" if lname else None)
            if not numeric_x:
                ax.set_xticks(xv)
                ax.set_xticklabels(xs, rotation=30)
        ax.set_xlabel(x_key)
        ax.set_ylabel("final " + name)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        if x_key == "state_floats":
            ax.set_xscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    if labels:
        axes[1].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows, swept = read_summary(os.path.join(args.results_dir, "summary.csv"))
    if not rows:
        raise SystemExit(f"{args.results_dir}/summary.csv has no runs")
    out_dir = args.out or os.path.join(args.results_dir, "plots")
    os.makedirs(out_dir, exist_ok=True)
    name = os.path.basename(os.path.normpath(args.results_dir))
    tasks = OrderedDict()
    for r in rows:
        tasks.setdefault(task_of(args.results_dir, r), []).append(r)
    group_keys = [k for k in swept if k not in NON_GROUP]
    written = []
    for task, trows in tasks.items():
        prefix = os.path.join(out_dir, (task + "_") if len(tasks) > 1 else "")
        title = f"{name}" + (f" / {task}" if len(tasks) > 1 else "")
        curves(trows, group_keys, args.results_dir, prefix + "curves.png", title)
        written.append(prefix + "curves.png")
        other = [k for k in group_keys if k not in ("attention.order",)]
        if "attention.order" in swept:
            line = "attention.denominator" if "attention.denominator" in swept else (other[0] if other else None)
            by_key(trows, "attention.order", line, prefix + "by_order.png", title + ": final accuracy vs Taylor order", True)
            written.append(prefix + "by_order.png")
        if "attention.denominator" in swept:
            line = "attention.numerator" if "attention.numerator" in swept else None
            by_key(trows, "attention.denominator", line, prefix + "by_denominator.png",
                   title + ": final accuracy vs denominator", False)
            written.append(prefix + "by_denominator.png")
        if len({r.get("state_floats", "") for r in trows} - {""}) > 1:
            line = "attention.numerator" if "attention.numerator" in swept else None
            by_key(trows, "state_floats", line, prefix + "by_state.png",
                   title + ": final accuracy vs state size per layer and head", True)
            written.append(prefix + "by_state.png")
    for w in written:
        print("wrote", w)


if __name__ == "__main__":
    main()
