#!/usr/bin/python3
"""Plot of `attnlab bench train --seq-lens`: training time per token against
sequence length (tokens per step constant), log-log; a numerator is a colour,
the form its line style (quadratic dashed, chunked solid).

usage: /usr/bin/python3 scripts/plot_seq_len.py results/bench/seq_len.csv [out.png]
writes out.png (200 dpi) and out.pdf in the shared style of scripts/plot_style.py (Okabe-Ito colours).
Needs Debian's python3-matplotlib (scripts/setup installs it).
"""
import csv
import sys
from collections import defaultdict

import plot_style
from plot_style import BLACK, COLOURS

plt = plot_style.load_pyplot("plot_seq_len.py")

# One colour per numerator (exp in black), one line style per form.
VARIANT_COLOURS = {"exp": BLACK, "elu1": COLOURS[0], "taylor2": COLOURS[1], "power2": COLOURS[2]}
OTHER_COLOURS = COLOURS[3:6]
STYLES = {"quadratic": "--", "chunked": "-"}
MARKERS = {"quadratic": "s", "chunked": "o"}


def main() -> None:
    src, stem = plot_style.csv_and_stem(__doc__)
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            series[(row["variant"], row["form"])].append(
                (int(row["seq_len"]), float(row["ms_per_1k_tokens"]), float(row["min"]), float(row["max"])))
    if not series:
        sys.exit(f"plot_seq_len.py: {src} has no rows")
    fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
    colours = dict(VARIANT_COLOURS)
    for (variant, form), points in sorted(series.items()):
        if variant not in colours:
            colours[variant] = OTHER_COLOURS[len(colours) % len(OTHER_COLOURS)]
        points.sort()
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        lo = [p[1] - p[2] for p in points]
        hi = [p[3] - p[1] for p in points]
        ax.errorbar(xs, ys, yerr=[lo, hi], color=colours[variant], linestyle=STYLES.get(form, ":"),
                    marker=MARKERS.get(form, "x"), markersize=4, capsize=2, label=f"{variant} {form}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length T (tokens per step constant)")
    ax.set_ylabel("training time, ms per 1000 tokens")
    ax.set_title("Training time per token: quadratic vs chunked attention (median, bars: min-max)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(ncol=2)
    png, pdf = plot_style.save(fig, stem)
    print(f"wrote {png} and {pdf}")


if __name__ == "__main__":
    main()
