#!/usr/bin/python3
"""Figure of `attnlab eval RUN --truncate ORDERS --out FILE.csv`: the test loss
of a model trained with exp, scored with its exp cut to order n, against n;
one line per model, its own exp loss as a dashed horizontal line of the same
colour, and the probe's dominant order of each layer marked on the x axis.

usage: /usr/bin/python3 scripts/plot_truncation.py CSV [CSV ...] [--probe DIR ...] [--label L ...]
                                                   [--out STEM] [--title TITLE]

Each CSV is what `eval --truncate` writes (trained, evaluated, numerator,
order, test_loss, ..., precision; its first row is the model as trained). A
CSV scored in double (`eval --precision double`) has " (double)" after its
lines' labels; one without a precision column (written before eval had
--precision) counts as float. --probe DIR
gives, in the order of the CSVs, the folder of that model's probe_heads.csv
(`attnlab probe RUN --out DIR`; by default the CSV's own folder when it holds
one, else no marks). A layer's dominant order is the highest of its heads'
(the order the layer's largest terms need); it is drawn as a dotted vertical
line labelled L<layer> (n). --label names the lines (default: the CSV's folder
name). The y axis is logarithmic: a low order can be orders of magnitude
worse than exp. Writes STEM.png (200 dpi) and STEM.pdf (default: the first
CSV's name without .csv) in the style of scripts/plot_style.py.

Exit codes: 0 written, 2 a missing or malformed file, a bad argument.
Needs Debian's python3-matplotlib.
"""
import argparse
import math
import os
import sys

import plot_style
from plot_style import InputError, number, style

plt = plot_style.load_pyplot("plot_truncation.py")
from matplotlib import ticker  # noqa: E402  (matplotlib is importable once load_pyplot returned)


def read_truncation(path):
    """(trained variant, its own loss, truncated numerator, [orders], [losses], precision)."""
    rows = plot_style.read_csv_rows(path, ["trained", "evaluated", "numerator", "order", "test_loss"])
    own = rows[0]
    if own["evaluated"] != own["trained"]:
        raise InputError(f"{path}: the first row must be the model as trained (as `eval --truncate` writes it)")
    rest = rows[1:]
    if not rest:
        raise InputError(f"{path}: no truncated rows")
    precision = own.get("precision") or "float"  # no column: written before --precision, in float
    if precision not in ("float", "double"):
        raise InputError(f"{path}: precision {precision!r} is not float or double")
    return (own["trained"], number(path, own, "test_loss"), rest[0]["numerator"],
            [number(path, r, "order", int) for r in rest], [number(path, r, "test_loss") for r in rest], precision)


def layer_dominant_orders(directory):
    """{layer: highest dominant order of its heads} from DIR/probe_heads.csv."""
    path = os.path.join(directory, "probe_heads.csv")
    out = {}
    for row in plot_style.read_csv_rows(path, ["layer", "head", "dominant_order"]):
        layer = number(path, row, "layer", int)
        out[layer] = max(out.get(layer, 0), number(path, row, "dominant_order", int))
    return out


def plot(args):
    if args.probe and len(args.probe) != len(args.csv):
        raise InputError(f"{len(args.csv)} CSV file(s) but {len(args.probe)} --probe folder(s): give one per CSV")
    if args.label and len(args.label) != len(args.csv):
        raise InputError(f"{len(args.csv)} CSV file(s) but {len(args.label)} --label(s): give one per CSV")
    fig, ax = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    numerators = set()
    marks = 0
    for i, path in enumerate(args.csv):
        trained, own, numerator, orders, losses, precision = read_truncation(path)
        numerators.add(numerator)
        st = style(i)
        label = args.label[i] if args.label else os.path.basename(os.path.dirname(os.path.abspath(path)))
        if precision == "double":
            label += " (double)"
        shown = [(n, v) for n, v in zip(orders, losses) if math.isfinite(v) and v > 0]
        ax.plot([n for n, _ in shown], [v for _, v in shown], color=st["color"], linestyle=st["linestyle"],
                marker=st["marker"], ms=3.5, lw=1.3, label=f"{label}: {numerator} n")
        ax.axhline(own, color=st["color"], linestyle="--", lw=1, label=f"{label}: {trained} (as trained)")
        probe_dir = args.probe[i] if args.probe else os.path.dirname(os.path.abspath(path))
        if args.probe or os.path.isfile(os.path.join(probe_dir, "probe_heads.csv")):
            for layer, n in sorted(layer_dominant_orders(probe_dir).items()):
                ax.axvline(n, color=st["color"], linestyle=":", lw=1)
                # At the foot of the axes, stacked: the curves and the legend sit higher up.
                ax.annotate(f"L{layer} ({n})", xy=(n, 0.0), xycoords=("data", "axes fraction"),
                            xytext=(2, 3 + 9 * marks), textcoords="offset points", color=st["color"], fontsize=7.5)
                marks += 1
    ax.set_yscale("log")
    # Plain numbers on the log axis: losses span less than a decade, "3 x 10^0" reads badly.
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%.2g"))
    ax.yaxis.set_minor_locator(ticker.LogLocator(subs=[1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8]))
    ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%.3g"))
    ax.set_xlabel("order n of the truncated numerator")
    ax.set_ylabel("test loss (nats, log scale)")
    ax.set_title(args.title or f"exp cut to {' / '.join(sorted(numerators))} order n at evaluation\n"
                 "dashed: as trained; dotted: the probe's dominant order per layer")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    stem = args.out or args.csv[0].rsplit(".", 1)[0]
    return plot_style.save(fig, stem[:-4] if stem.endswith(".png") else stem)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--probe", action="append", help="folder of a model's probe_heads.csv, one per CSV")
    ap.add_argument("--label", action="append", help="the name of a model's lines, one per CSV")
    ap.add_argument("--out", help="the figure's stem (STEM.png, STEM.pdf)")
    ap.add_argument("--title")
    args = ap.parse_args()
    return plot_style.report("plot_truncation.py", lambda: plot(args))


if __name__ == "__main__":
    sys.exit(main())
