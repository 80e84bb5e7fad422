#!/usr/bin/python3
"""Figure of `attnlab eval RUN --per-position FILE.csv` for a group of runs:
the mean test loss at each position of the evaluation windows, one line per
run.

usage: /usr/bin/python3 scripts/plot_per_position.py CSV [CSV ...] [--label L ...] [--out STEM]
                                                      [--title TITLE] [--log-x] [--mark POSITION[:LABEL] ...]

Each CSV has one row per position (position, loss, bits_per_byte, count,
trained, evaluated). Text runs are drawn in bits per byte, the other tasks in
nats; positions without answers (count 0, a synthetic task's non-answer
positions) are left out. --label names the lines (default: the CSV's folder
name and the evaluated variant); --log-x spreads the first positions, where
a language model's loss falls fastest; --mark draws a dotted vertical line
at a position, named in the legend (e.g. 256:trained length, for a model
scored beyond the window it was trained on). Writes STEM.png (200 dpi) and
STEM.pdf (default: the first CSV's name without .csv) in the style of
scripts/plot_style.py.

Exit codes: 0 written, 2 a missing or malformed file, a bad argument.
Needs Debian's python3-matplotlib.
"""
import argparse
import os
import sys

import plot_style
from plot_style import InputError, style

plt = plot_style.load_pyplot("plot_per_position.py")
from matplotlib import ticker  # noqa: E402  (matplotlib is importable once load_pyplot returned)

COLUMNS = ["position", "loss", "bits_per_byte", "count", "evaluated"]


def read_positions(path):
    """([positions], [values], unit, evaluated variant): bits per byte when the CSV has them, else nats."""
    rows = plot_style.read_csv_rows(path, COLUMNS, f" (run `attnlab eval RUN --per-position {path}` first)")
    rows = [r for r in rows if r["count"] not in ("", "0")]
    if not rows:
        raise InputError(f"{path}: no position with answers")
    text = rows[0]["bits_per_byte"] != ""
    key = "bits_per_byte" if text else "loss"
    try:
        return ([int(r["position"]) for r in rows], [float(r[key]) for r in rows],
                "bits per byte" if text else "nats", rows[0]["evaluated"])
    except ValueError as e:
        raise InputError(f"{path}: {e}") from None


def marks_of(texts):
    """[(position, label)] from --mark POSITION[:LABEL] (label default: 'position N')."""
    marks = []
    for text in texts:
        position, _, name = text.partition(":")
        try:
            value = float(position)
        except ValueError:
            raise InputError(f"--mark {text!r}: POSITION[:LABEL] needs a number before the colon") from None
        marks.append((value, name or f"position {position}"))
    return marks


def plot(args):
    if args.label and len(args.label) != len(args.csv):
        raise InputError(f"{len(args.csv)} CSV file(s) but {len(args.label)} --label(s): give one per CSV")
    fig, ax = plt.subplots(figsize=(6.4, 3.8), constrained_layout=True)
    units = set()
    for i, path in enumerate(args.csv):
        positions, values, unit, evaluated = read_positions(path)
        units.add(unit)
        st = style(i)
        label = args.label[i] if args.label else \
            f"{os.path.basename(os.path.dirname(os.path.abspath(path)))} ({evaluated})"
        # Markers staggered line by line, so that lines lying on each other (two solved runs at 0) stay visible.
        every = max(1, len(positions) // 12)
        ax.plot(positions, values, color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
                markevery=(i * every // len(args.csv), every), ms=3.5, lw=1.2, label=label)
    if len(units) > 1:
        raise InputError("the CSVs mix text runs (bits per byte) and synthetic tasks (nats): plot them apart")
    for position, name in marks_of(args.mark or []):
        ax.axvline(position, color="0.4", linestyle=":", lw=1.2, label=name)
    if args.log_x:
        ax.set_xscale("symlog", linthresh=1)
        ax.xaxis.set_major_formatter(ticker.ScalarFormatter())  # 1, 10, 100 rather than 10^0, 10^1, 10^2
    ax.set_xlabel("position in the evaluation window")
    ax.set_ylabel(f"mean test loss ({units.pop()})")
    ax.set_title(args.title or "test loss by position")
    ax.legend(loc="best", frameon=False)
    stem = args.out or args.csv[0].rsplit(".", 1)[0]
    return plot_style.save(fig, stem[:-4] if stem.endswith(".png") else stem)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--label", action="append", help="the name of a run's line, one per CSV")
    ap.add_argument("--out", help="the figure's stem (STEM.png, STEM.pdf)")
    ap.add_argument("--title")
    ap.add_argument("--log-x", action="store_true", help="symmetric-log position axis")
    ap.add_argument("--mark", action="append", metavar="POSITION[:LABEL]",
                    help="a dotted vertical line at POSITION, named LABEL in the legend (repeatable)")
    args = ap.parse_args()
    return plot_style.report("plot_per_position.py", lambda: plot(args))


if __name__ == "__main__":
    sys.exit(main())
