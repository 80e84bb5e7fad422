#!/usr/bin/python3
"""Recall against recurrent state size, in the style of Based (Arora et al.
2024, Fig. 2): final test token accuracy of multi-query recall against the
floats of one head's recurrent state, every variant at its chosen learning
rate, from a sweep over model.d_model (e.g. experiments/lookup_state_ladder.yaml).

Two panels, one per denominator (norm, the softmax sum). In each, one curve
per width joins the Taylor orders 1-4, its points labelled by order; power 2
(p2) and elu1 are single points of that width's colour; exp is a star at the
size of its key-value cache (2 x T x head dimension floats), the ceiling.
Dots are seeds, the curve joins their means. The seeds drawn are those no
learning rate was chosen on (every seed but those listed with --select-on,
default 0); a point with none of them draws the selection seed as a hollow
marker, and the title says so.

Also writes STEM.csv: one row per point (denominator, numerator, order,
width, state floats, seeds, mean accuracy, each seed's accuracy).

usage: /usr/bin/python3 scripts/plot_state_ladder.py RESULTS_DIR [--select-on SEED ...] [--out STEM]
reads RESULTS_DIR/summary.csv (its state_floats column: `attnlab state`'s per layer and head count);
default STEM RESULTS_DIR/plots/state_ladder. Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import io
import os
import sys
import textwrap
from collections import defaultdict

import plot_style
from plot_style import BLACK, COLOURS, InputError

COLUMNS = ("status", "seed", "model.d_model", "attention.numerator", "attention.order", "attention.denominator",
           "final_test_token_acc", "state_floats", "lr_selected")
DENOMINATORS = [("norm", "the norm"), ("softmax", "the softmax sum")]


def point_key(row):
    """(denominator, numerator, order, width) of a run; order 0 where the numerator has none."""
    order = int(row["attention.order"]) if row["attention.order"] not in ("", None) else 0
    return (row["attention.denominator"], row["attention.numerator"], order, int(row["model.d_model"]))


def read_points(results_dir, select_on):
    """{(denominator, numerator, order, width): {"state": floats, "acc": {seed: acc}, "selection_only": bool}}
    over the runs at each variant's chosen rate; a diverged run counts as accuracy 0 (it recalls nothing)."""
    path = os.path.join(results_dir, "summary.csv")
    rows = plot_style.read_csv_rows(path, COLUMNS, hint=" (run `attnlab summarize` on the sweep first)")
    by_point = defaultdict(dict)
    state = {}
    for r in rows:
        if r["lr_selected"] != "true":
            continue
        key = point_key(r)
        seed = int(r["seed"])
        acc = 0.0 if r["status"] == "diverged" else plot_style.number(path, r, "final_test_token_acc")
        by_point[key][seed] = acc
        state[key] = plot_style.number(path, r, "state_floats", int)
    if not by_point:
        raise InputError(f"{path}: no run at a chosen learning rate (lr_selected)")
    points = {}
    for key, seeds in by_point.items():
        compared = {s: a for s, a in seeds.items() if s not in select_on}
        points[key] = {"state": state[key], "acc": compared or seeds, "selection_only": not compared}
    return points


def points_csv(points):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["denominator", "numerator", "order", "d_model", "state_floats", "seeds", "mean_token_acc",
                "token_acc_by_seed", "selection_seed_only"])
    for key in sorted(points):
        p = points[key]
        accs = [p["acc"][s] for s in sorted(p["acc"])]
        w.writerow([*key, p["state"], len(accs), f"{sum(accs) / len(accs):.6f}",
                    " ".join(f"s{s}:{p['acc'][s]:.6f}" for s in sorted(p["acc"])), str(p["selection_only"]).lower()])
    return out.getvalue()


def point_marker(ax, p, x, mean, shape, colour, size):
    """The mean of a point: filled, or hollow where only the selection seed stands behind it."""
    ax.plot([x], [mean], shape, color=colour, markersize=size, linestyle="none",
            markerfacecolor="none" if p["selection_only"] else colour,
            markeredgecolor=colour if p["selection_only"] or shape != "*" else BLACK,
            markeredgewidth=1.0 if p["selection_only"] else 0.5)


def draw(plt, points, stem):
    widths = sorted({k[3] for k in points})
    colour = {w: COLOURS[i % len(COLOURS)] for i, w in enumerate(widths)}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    for ax, (den, words) in zip(axes, DENOMINATORS):
        for w in widths:
            ladder = sorted((k for k in points if k[0] == den and k[1] == "taylor" and k[3] == w), key=lambda k: k[2])
            if ladder:
                xs = [points[k]["state"] for k in ladder]
                means = [sum(points[k]["acc"].values()) / len(points[k]["acc"]) for k in ladder]
                ax.plot(xs, means, "-", color=colour[w], label=f"taylor 1-4, d_model {w}")
                for k, x, m in zip(ladder, xs, means):
                    if points[k]["selection_only"]:
                        point_marker(ax, points[k], x, m, "o", colour[w], 5)
                    ax.annotate(str(k[2]), (x, m), textcoords="offset points", xytext=(4, 4), fontsize=8,
                                color=colour[w])
            for k in points:
                if k[0] != den or k[3] != w:
                    continue
                p = points[k]
                ax.plot([p["state"]] * len(p["acc"]), list(p["acc"].values()), "o", color=colour[w], alpha=0.35,
                        markersize=3, linestyle="none")
                mean = sum(p["acc"].values()) / len(p["acc"])
                if k[1] in ("power", "elu1"):
                    label = "p2" if k[1] == "power" else "elu1"
                    point_marker(ax, p, p["state"], mean, "s", colour[w], 5)
                    ax.annotate(label, (p["state"], mean), textcoords="offset points", xytext=(4, -10), fontsize=8,
                                color=colour[w])
                elif k[1] == "exp":  # named once, in the legend: the four stars sit side by side at 1.0
                    point_marker(ax, p, p["state"], mean, "*", colour[w], 10)
        ax.set_xscale("log")
        ax.set_xlabel("recurrent state per head (floats; exp: its key-value cache)")
        ax.set_title(f"with {words}")
        ax.set_ylim(-0.03, 1.06)
    axes[0].set_ylabel("final test token accuracy")
    axes[0].legend(loc="lower right", fontsize=8)
    if any(k[1] == "exp" for k in points):
        star = plt.Line2D([], [], marker="*", color="grey", markeredgecolor=BLACK, markeredgewidth=0.5,
                          markersize=10, linestyle="none", label="exp: its cache, 2 x T x head floats")
        square = plt.Line2D([], [], marker="s", color="grey", markersize=5, linestyle="none",
                            label="p2 = power 2, elu1 (colour: d_model)")
        axes[1].legend(handles=[star, square], loc="center right", fontsize=8)
    hollow = sorted(f"{k[1]}{f' {k[2]}' if k[2] else ''}/{k[0]} at {k[3]}"
                    for k, p in points.items() if p["selection_only"])
    note = "" if not hollow else "\n" + textwrap.fill(
        f"hollow: the seed the rate was chosen on only ({', '.join(hollow)})", 150)
    fig.suptitle("Multi-query recall against recurrent state size (dots: seeds; lines: their means; labels: "
                 f"Taylor orders){note}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.035 * (1 + note.count("\n"))))
    return plot_style.save(fig, stem)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir")
    ap.add_argument("--select-on", type=int, nargs="*", default=[0])
    ap.add_argument("--out")
    args = ap.parse_args()
    stem = args.out or os.path.join(args.results_dir, "plots", "state_ladder")

    def run():
        points = read_points(args.results_dir, set(args.select_on))
        plt = plot_style.load_pyplot(os.path.basename(sys.argv[0]))
        written = draw(plt, points, stem)
        with open(stem + ".csv", "w") as f:
            f.write(points_csv(points))
        return written + [stem + ".csv"]

    return plot_style.report(os.path.basename(sys.argv[0]), run)


if __name__ == "__main__":
    sys.exit(main())
