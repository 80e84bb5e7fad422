#!/usr/bin/python3
"""Figure of `attnlab probe`: the mean Taylor term |s|^m / m! of a run's
attention scores against the order m, one panel per layer, one line per head.

usage: /usr/bin/python3 scripts/plot_probe.py DIR [--title TITLE]

DIR holds probe.csv (layer, head, order, mean_abs_term) and probe_heads.csv
(one row per layer and head: dominant_order, mean_abs_score, ...), as
`attnlab probe` writes them. Writes DIR/probe.png (200 dpi) and DIR/probe.pdf
in the shared style of scripts/plot_style.py: Okabe-Ito colours, a marker and line
style per head, log-scale y. The dominant order of each head (the largest
mean term) is marked with a large filled marker and a dotted vertical line.
Terms that underflowed to 0 are not drawn (a log axis has no 0).

Exit codes: 0 written, 2 a missing or malformed CSV file, 3 no matplotlib
(`attnlab probe` then says "figures skipped"). Needs Debian's
python3-matplotlib, nothing else.
"""
import argparse
import math
import os
import sys
import textwrap

import plot_style
from plot_style import InputError, number, style

# exit code 3, not 2: `attnlab probe` then says "figures skipped" instead of failing.
plt = plot_style.load_pyplot("plot_probe.py", exit_code=3)

MAX_COLUMNS = 4  # panels per row; more layers wrap
PROBE_HINT = " (run `attnlab probe RUN_DIR` first)"


def read_probe(directory):
    """{(layer, head): ([orders], [mean terms])} and {(layer, head): summary row}."""
    terms_path = os.path.join(directory, "probe.csv")
    heads_path = os.path.join(directory, "probe_heads.csv")
    terms = {}
    for row in plot_style.read_csv_rows(terms_path, ["layer", "head", "order", "mean_abs_term"], PROBE_HINT):
        key = (number(terms_path, row, "layer", int), number(terms_path, row, "head", int))
        orders, values = terms.setdefault(key, ([], []))
        orders.append(number(terms_path, row, "order", int))
        values.append(number(terms_path, row, "mean_abs_term", float))
    heads = {}
    for row in plot_style.read_csv_rows(heads_path, ["layer", "head", "split", "examples", "dominant_order", "mean_abs_score"],
                                   PROBE_HINT):
        key = (number(heads_path, row, "layer", int), number(heads_path, row, "head", int))
        heads[key] = row
    if set(heads) != set(terms):
        raise InputError(f"{terms_path} and {heads_path} name different layers and heads")
    return terms, heads


def plot(directory, title):
    terms, heads = read_probe(directory)
    layers = sorted({layer for layer, _ in terms})
    head_ids = sorted({head for _, head in terms})
    cols = min(len(layers), MAX_COLUMNS)
    rows = math.ceil(len(layers) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols + 1.2, 3.0 * rows + 0.4), squeeze=False,
                             constrained_layout=True)
    for i, layer in enumerate(layers):
        ax = axes[i // cols][i % cols]
        for j, head in enumerate(head_ids):
            if (layer, head) not in terms:
                continue
            orders, values = terms[(layer, head)]
            st = style(j)
            shown = [(m, v) for m, v in zip(orders, values) if v > 0 and math.isfinite(v)]
            if not shown:
                continue
            dominant = int(heads[(layer, head)]["dominant_order"])
            ax.plot([m for m, _ in shown], [v for _, v in shown], color=st["color"], linestyle=st["linestyle"],
                    marker=st["marker"], ms=3, lw=1.3, label=f"head {head} (dominant {dominant})")
            if dominant in orders:
                ax.plot([dominant], [values[orders.index(dominant)]], marker=st["marker"], ms=9,
                        color=st["color"], markeredgecolor="black", ls="none", zorder=5)
                ax.axvline(dominant, color=st["color"], linestyle=":", lw=1)
        ax.set_yscale("log")
        ax.set_title(f"layer {layer}")
        ax.set_xlabel("Taylor order m")
        if i % cols == 0:
            ax.set_ylabel("mean |s|$^m$ / m!")
        ax.legend(loc="best", frameon=False)
    for i in range(len(layers), rows * cols):
        axes[i // cols][i % cols].set_visible(False)
    first = next(iter(heads.values()))
    # Wrapped to the panels' width (a run id alone can be wider than one panel).
    size = plt.rcParams["figure.titlesize"]
    points = size if isinstance(size, (int, float)) else 12.0
    per_line = max(20, int(fig.get_figwidth() * 72 / (0.6 * points)))
    fig.suptitle(textwrap.fill(f"{title}: Taylor terms of the attention scores ({first['split']} set, "
                               f"{first['examples']} examples; large markers: dominant order)", per_line,
                               break_on_hyphens=False))
    return plot_style.save(fig, os.path.join(directory, "probe"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--title", help="the figure's title (default: the folder's name)")
    args = ap.parse_args()
    return plot_style.report("plot_probe.py", lambda: plot(args.dir, args.title or os.path.basename(os.path.normpath(args.dir))))


if __name__ == "__main__":
    sys.exit(main())
