#!/usr/bin/python3
"""Plot of `attnlab bench train --seq-lens`: training time per token against
sequence length (tokens per step constant), log-log; a numerator is a colour,
the form its line style (quadratic dashed, chunked solid).

usage: /usr/bin/python3 scripts/plot_seq_len.py results/bench/seq_len.csv [out.png]
writes out.png (200 dpi) and out.pdf (Okabe-Ito colours, as scripts/plot_sweep.py).
Needs Debian's python3-matplotlib (scripts/setup installs it).
"""
import csv
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"plot_seq_len.py: {sys.executable} cannot import matplotlib; install Debian's python3-matplotlib "
          "(apt-get install python3-matplotlib) and run this script with /usr/bin/python3", file=sys.stderr)
    sys.exit(2)

COLOURS = {"exp": "#000000", "elu1": "#0072B2", "taylor2": "#D55E00", "power2": "#009E73"}
OTHER_COLOURS = ["#E69F00", "#CC79A7", "#56B4E9"]
STYLES = {"quadratic": "--", "chunked": "-"}
MARKERS = {"quadratic": "s", "chunked": "o"}


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    dst = sys.argv[2] if len(sys.argv) == 3 else src.rsplit(".", 1)[0] + ".png"
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            series[(row["variant"], row["form"])].append(
                (int(row["seq_len"]), float(row["ms_per_1k_tokens"]), float(row["min"]), float(row["max"])))
    if not series:
        sys.exit(f"plot_seq_len.py: {src} has no rows")
    plt.rcParams.update({"font.size": 9, "axes.labelsize": 10, "legend.fontsize": 8.5, "pdf.fonttype": 42})
    fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
    colours = dict(COLOURS)
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
    fig.savefig(dst, dpi=200)
    fig.savefig(dst.rsplit(".", 1)[0] + ".pdf")
    print(f"wrote {dst} and {dst.rsplit('.', 1)[0]}.pdf")


if __name__ == "__main__":
    main()
