#!/usr/bin/python3
"""Figures of a results folder written by `attnlab run` or `attnlab summarize`.

usage: /usr/bin/python3 scripts/plot_sweep.py RESULTS_DIR [--out DIR]

RESULTS_DIR holds summary.csv and the runs' metrics: curves.csv when present
(every run's metrics rows, run_id first), else runs/<id>/metrics.csv. Every
figure is written twice into --out (default RESULTS_DIR/plots): NAME.png
(200 dpi) and NAME.pdf. A sweep over several tasks (task.kind swept) gets one
set per task, its names prefixed with the task (lookup_loss_curves, ...).

A "sweep point" is one setting of the swept keys other than the seed (keys
that only change with the task are left out of its name). Accuracy outcomes
are often bimodal across seeds (a run solves the task or stays on a
plateau), so the final-accuracy figures show every seed as a point and the
median over seeds as a bar, never a mean with error bars.

  loss_curves       loss (cross-entropy, log scale; nats per byte for the
                    text task) against step, one panel
                    per split (train, val when present, test): one line per
                    sweep point, the median over seeds, and a band from the
                    lowest to the highest seed (min-max over seeds).
  accuracy_curves   token and sequence accuracy against step, per split, as
                    in loss_curves (band: min-max over seeds); for text,
                    next-byte accuracy only. The final-value figures below
                    show, for text, the final test loss (log scale) and
                    next-byte accuracy instead of the two accuracies.
  by_order          final test accuracy against the order (when
                    attention.order is swept), one series per remaining
                    swept setting (e.g. the denominator), and per numerator
                    when several take an order (taylor, power ...); variants
                    without an order (exp, linear kernels) as categories on
                    the right, not joined to the order's line. With a single
                    order: one category per variant and remaining setting
                    (taylor 2 / norm, exp / norm), each its own colour and
                    marker.
  by_numerator      final test accuracy per numerator (when swept and the
                    order is not), categories side by side, grouped by the
                    remaining swept setting; no lines between categories.
  by_denominator    the same per denominator (when swept, and neither the
                    numerator nor the order is).
  final_accuracy    final test accuracy per sweep point, when other keys are
                    swept; for a sweep of one setting per task (the
                    quickstart), one figure with the tasks side by side.
  by_state          final test accuracy against the recurrent state of one
                    attention layer, all heads together (floats, symmetric
                    Taylor layout; exp and clamped kernels: their key/value
                    cache at the longest input), log scale with as many
                    tick labels as fit without touching; colour: the series
                    (the head count when swept), marker: the variant.
                    Drawn when the state size differs between runs.
  chosen_loss_curves  when summary.csv's lr_selected marks runs (train.lr
                    swept): validation and test loss against step (not
                    train: noisy) of each variant at its chosen learning
                    rate only, one line per variant named by its swept keys
                    but train.lr plus "lr X" (keys set by an earlier key,
                    e.g. the batch by the sequence length, are named once
                    in the title instead); median, min-max band, log scale
                    as loss_curves; legend best first, under the panels in
                    several columns for more than MAX_CURVES variants.
  chosen_final      the same runs as a horizontal dot plot, one row per
                    variant, best on top: every seed a point, the median a
                    tick. Text: final test bits per byte (loss / ln 2), with
                    the unigram and bigram baselines as vertical lines when
                    they fit the axis (else named in the title); other
                    tasks: final test token (and sequence) accuracy.

Curves with more than MAX_CURVES sweep points are split into rows of panels
by a swept key with 2-4 values (e.g. one row per denominator). docs/plots.md
describes every figure.

With ATTNLAB_PLOT_LOG=FILE set, every figure also appends one JSON line to
FILE: its legend labels and, per panel, the title, y tick labels and labelled
lines (what tests/tools/check_plots.py checks). The shared style is
scripts/plot_style.py.

Errors (exit code 2): no summary.csv, a run whose metrics are missing, a
summary without the expected columns, no matplotlib. Needs Debian's
python3-matplotlib, python3-numpy, and for the attnlab package that reads the
folder (python/attnlab, found as ../python beside this script) python3-pandas
and python3-yaml.
"""
import argparse
import json
import math
import os
import sys
from collections import OrderedDict

import plot_style
from plot_style import MARKERS, style
from sweep_runs import (describe, group_by, heads_name, legend_title, number, read_results, readable,
                        takes_order, variant_name, variants, varying_keys)

plt = plot_style.load_pyplot("plot_sweep.py", with_numpy=True)
# After load_pyplot, which turns a missing matplotlib or numpy into one line and exit code 2.
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

SPLITS = ["train", "val", "test"]
MAX_CURVES = 7  # sweep points drawn in one panel of curves; more are split into rows
ACCURACIES = [("token_acc", "token accuracy"), ("seq_acc", "sequence accuracy")]
# text (byte-level language modelling): the loss is the metric, in bits per
# byte throughout (linear axes zoomed to where the variants differ); sequence
# accuracy does not apply.
TEXT_FINALS = [("bits_per_byte", "loss (bits/byte)"), ("token_acc", "next-byte accuracy")]
TEXT_LOSS = ("bits_per_byte", "loss (bits/byte)")
# Zoomed axes of text curves: the range of the values from this fraction of
# training on (earlier values leave the top of the panel), step 0 left out.
ZOOM_FROM = 0.25
# ---------------------------------------------------------------- grouping


def save(fig, out_dir, name, written):
    log_drawn(fig, name)
    written.extend(plot_style.save(fig, os.path.join(out_dir, name)))


def log_drawn(fig, name):
    """For the plots test: with $ATTNLAB_PLOT_LOG set, appends one JSON line per figure to that file: its
    legend labels and, per panel, its title, y tick labels and the labels of its labelled lines."""
    path = os.environ.get("ATTNLAB_PLOT_LOG")
    if not path:
        return
    fig.canvas.draw()  # tick labels are filled in when the figure is drawn
    def first_x(ax):  # the smallest x of the labelled lines (curves: the first step drawn)
        xs = [min(ln.get_xdata()) for ln in ax.lines if not ln.get_label().startswith("_") and len(ln.get_xdata())]
        return float(min(xs)) if xs else None

    entry = {"figure": name, "legend": [t.get_text() for legend in fig.legends for t in legend.get_texts()],
             "title": fig._suptitle.get_text() if fig._suptitle else "",
             "axes": [{"title": ax.get_title(), "yticklabels": [t.get_text() for t in ax.get_yticklabels()],
                       "lines": [ln.get_label() for ln in ax.lines if not ln.get_label().startswith("_")],
                       "ylabel": ax.get_ylabel(), "xlabel": ax.get_xlabel(), "yscale": ax.get_yscale(),
                       "xscale": ax.get_xscale(), "ylim": list(ax.get_ylim()), "xlim": list(ax.get_xlim()),
                       "first_x": first_x(ax)}
                      for ax in fig.axes if ax.get_visible()]}
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def new_figure(rows, cols, width, height, **kw):
    """A grid of panels (axes[row][col]) whose constrained layout leaves room for the title."""
    return plt.subplots(rows, cols, figsize=(width, height), squeeze=False, constrained_layout=True, **kw)


def finish(fig, title):
    """The title above the panels (the figure's constrained layout leaves room for it)."""
    fig.suptitle(title)


def outside_legend(fig, handles, labels, title, ncol=1):
    fig.legend(handles, labels, title=title, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, ncol=ncol)


BELOW_FONT = 7.5  # legend font under the panels (many entries)


def below_legend(fig, handles, labels, title, width):
    """The legend under the panels, in as many columns as fit the figure's width (inches); entries run down
    the columns, so a ranked list reads top to bottom, then left to right."""
    char = 0.55 * BELOW_FONT / 72  # inches per character, about
    column = max(len(label) for label in labels) * char + 0.6  # the line sample and the spacing
    ncol = max(1, min(len(labels), int(width // column)))
    fig.legend(handles, labels, title=title, loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False,
               ncol=ncol, fontsize=BELOW_FONT, columnspacing=1.2, handlelength=2.2)


def seed_and_median_handles(runs, median_handle):
    """Legend entries for a seed's point, the median and (when a run diverged) a diverged run."""
    handles = [Line2D([], [], color="0.3", marker="o", ls="none", ms=5, alpha=0.7), median_handle]
    labels = ["one seed", "median over seeds"]
    if any(r.diverged for r in runs):
        handles.append(Line2D([], [], color="0.3", marker="x", ls="none", ms=6))
        labels.append("diverged run (last evaluation)")
    return handles, labels


def median_bar():
    return Line2D([], [], color="0.3", lw=2.5)


# ---------------------------------------------------------------- curves


def series_over_steps(runs, split, metric, skip_step0=False):
    """Steps, and the median, min and max over seeds at each step."""
    by_step = OrderedDict()
    for r in runs:
        for m in r.curves:
            v = m[metric]
            if skip_step0 and m["step"] == 0:
                continue
            if m["split"] == split and v is not None and (metric not in ("loss", "bits_per_byte") or v > 0):
                by_step.setdefault(m["step"], []).append(v)
    steps = sorted(by_step)
    vals = [by_step[s] for s in steps]
    return (np.array(steps), np.array([np.median(v) for v in vals]), np.array([min(v) for v in vals]),
            np.array([max(v) for v in vals]))


def splits_present(runs):
    present = {m["split"] for r in runs for m in r.curves}
    return [s for s in SPLITS if s in present] or ["test"]


def readable_log_axis(ax):
    """Log ticks labelled as plain numbers, not 2x10^0: 1, 2, 3, 5 per decade over a short range, fewer over
    a long one."""
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    subs = (1.0, 2.0, 3.0, 5.0) if decades <= 1.5 else (1.0, 3.0) if decades <= 3 else (1.0,)
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    axis = ax.yaxis
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(plain)
    axis.set_minor_formatter(NullFormatter())


def sci_label(v, _=None):
    """3×10⁴, 10⁵ (mathtext); a mantissa that is not a whole number keeps one or two decimals (6.5×10⁴)."""
    if v <= 0:
        return ""
    e = math.floor(math.log10(v) + 1e-9)
    m = v / 10 ** e
    if abs(m - 1) < 1e-6:
        return f"$10^{{{e}}}$"
    return f"${m:.3g}\\times10^{{{e}}}$"


class SpacedLogLocator(Locator):
    """Labelled ticks of a log axis that never run into each other: the richest set of mantissas (1-9, then
    1 2 3 5, 1 2 5, 1 3, 1, then every 2nd, 3rd ... decade) whose labels (sci_label) stay LABEL_GAP apart
    at the axis's drawn length; over less than one step of mantissa, a few plain linear ticks."""
    MANTISSAS = [(1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 5), (1, 2, 5), (1, 3), (1,)]
    LABEL_GAP = 0.12  # inches between neighbouring labels
    MAX_LABELS = 9

    def __call__(self):
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def label_width(self, v):
        """The drawn width of sci_label(v) in inches, estimated from its characters (tick label size)."""
        text = sci_label(v).strip("$").replace("\\times", "x")
        base, _, exponent = text.partition("^")
        size = plt.rcParams["xtick.labelsize"]
        size = size if isinstance(size, (int, float)) else 8.5
        return (len(base) + 0.7 * len(exponent.strip("{}"))) * 0.6 * size / 72

    def fits(self, ticks, per_decade):
        pos = [math.log10(t) * per_decade for t in ticks]
        return all(p1 - p0 >= (self.label_width(t0) + self.label_width(t1)) / 2 + self.LABEL_GAP
                   for p0, p1, t0, t1 in zip(pos, pos[1:], ticks, ticks[1:]))

    def tick_values(self, vmin, vmax):
        vmin, vmax = sorted((vmin, vmax))
        if vmax <= 0:
            return []
        vmin = vmin if vmin > 0 else vmax / 1e3
        lo, hi = math.log10(vmin), math.log10(vmax)
        ax = self.axis.axes
        box = ax.get_window_extent()
        length = (box.width if self.axis is ax.xaxis else box.height) / ax.figure.dpi
        per_decade = length / max(hi - lo, 1e-9)
        decades = range(math.floor(lo), math.ceil(hi) + 1)
        for subs in self.MANTISSAS:
            ticks = [m * 10.0 ** e for e in decades for m in subs if vmin <= m * 10.0 ** e <= vmax]
            if len(ticks) < 2 and subs == self.MANTISSAS[0]:  # a narrow range: plain steps within it
                return [t for t in MaxNLocator(nbins=3).tick_values(vmin, vmax) if vmin <= t <= vmax]
            if len(ticks) <= self.MAX_LABELS and self.fits(ticks, per_decade):
                return ticks
        for step in (2, 3, 5, 10, 20):
            ticks = [10.0 ** e for e in decades if e % step == 0 and vmin <= 10.0 ** e <= vmax]
            if len(ticks) <= self.MAX_LABELS and self.fits(ticks, per_decade):
                return ticks
        return ticks


def spaced_log_axis(axis):
    """A log axis whose labels do not collide (SpacedLogLocator), unlabelled minor ticks."""
    if axis is axis.axes.xaxis:
        axis.axes.set_xscale("log")
    else:
        axis.axes.set_yscale("log")
    axis.set_major_locator(SpacedLogLocator())
    axis.set_major_formatter(FuncFormatter(sci_label))
    axis.set_minor_formatter(NullFormatter())


def zoom_axis(ax, drawn, last_step):
    """A linear y axis over the values drawn from ZOOM_FROM of training on (band included), 6 plain ticks.
    drawn: (label, steps, median, low, high) per series. A series whose last median lies far above the
    others' (beyond Q3 + 3 IQR of the last medians) would squash them: it is left off the zoom and named
    in the panel with its last value."""
    last = [(med[-1], label) for label, _, med, _, _ in drawn if len(med)]
    outliers = set()
    if len(last) >= 4:
        q1, q3 = np.percentile([v for v, _ in last], [25, 75])
        fence = q3 + 3 * max(q3 - q1, 1e-3 * abs(q3))
        outliers = {label for v, label in last if v > fence}
    lo, hi = [], []
    for label, steps, _, low, high in drawn:
        if label in outliers:
            continue
        keep = steps >= ZOOM_FROM * last_step
        lo += list(low[keep])
        hi += list(high[keep])
    if lo:
        a, b = min(lo), max(hi)
        pad = max(0.06 * (b - a), 1e-3 * abs(b), 1e-6)
        ax.set_ylim(a - pad, b + pad)
    if outliers:
        # One name per line inside the panel, kept out of the layout: a long note must not squeeze the panels.
        note = ax.text(0.98, 0.97, "\n".join(["above the axis:"] + [f"{label} ({v:.2f})" for v, label in last
                                                                    if label in outliers]),
                       transform=ax.transAxes, ha="right", va="top", fontsize=7, color="0.25",
                       bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.5}, zorder=5)
        note.set_in_layout(False)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def curve_figure(panels, series, metrics, splits, title, scale, panel_height=2.9, panel_width=4.2):
    """One row per panel group and metric, one column per split; one line per series with its min-max band.

    panels: {panel name: {series name: runs}}; a series keeps its style in every panel. scale: "log" (loss),
    "unit" (accuracy, 0 to 1) or "zoom" (text: linear, step 0 left out, zoomed by zoom_axis)."""
    zoom = scale == "zoom"
    rows = [(p, m) for p in panels for m in metrics]
    fig, axes = new_figure(len(rows), len(splits), panel_width * len(splits), panel_height * len(rows) + 0.5,
                           sharex=True)
    for ri, (panel, (metric, metric_name)) in enumerate(rows):
        for ci, split in enumerate(splits):
            ax = axes[ri][ci]
            drawn = []
            for label, runs in panels[panel].items():
                st = style(series.index(label))
                steps, med, lo, hi = series_over_steps(runs, split, metric, skip_step0=zoom)
                if len(steps) == 0:
                    continue
                drawn.append((label, steps, med, lo, hi))
                ax.fill_between(steps, lo, hi, color=st["color"], alpha=0.12, lw=0)
                # Markers staggered series by series, so that lines lying on each other (two solved
                # variants at accuracy 1) each stay visible.
                every = max(1, len(steps) // 8)
                first = series.index(label) * every // max(1, len(series))
                ax.plot(steps, med, color=st["color"], ls=st["linestyle"], marker=st["marker"], ms=3.5, lw=1.4,
                        markevery=(first, every), label=label)
            ax.set_title(f"{split}, {panel}" if panel else split)
            ax.set_ylabel(f"{split} {metric_name}")
            if scale == "log":
                readable_log_axis(ax)
            elif zoom:
                zoom_axis(ax, drawn, max((d[1][-1] for d in drawn), default=0))
            else:
                ax.set_ylim(-0.03, 1.03)
            if ri == len(rows) - 1:
                ax.set_xlabel("training step")
    finish(fig, title)
    return fig


def series_handles(series):
    return [Line2D([], [], color=style(i)["color"], ls=style(i)["linestyle"], marker=style(i)["marker"], ms=5,
                   lw=1.4) for i in range(len(series))]


def curves(panels, series_title, title, out_dir, name, written):
    """loss_curves and accuracy_curves of one task."""
    series = list(OrderedDict.fromkeys(label for p in panels.values() for label in p))
    splits = splits_present([r for p in panels.values() for runs in p.values() for r in runs])
    all_runs = [r for p in panels.values() for runs in p.values() for r in runs]
    text = is_text(all_runs)
    loss = TEXT_LOSS if text else ("loss", "loss (nats)")
    accuracies = [("token_acc", "next-byte accuracy")] if text else ACCURACIES
    zoomed = "; step 0 left out, axis zoomed" if text else ""
    for kind, metrics, scale in (("loss", [loss], "zoom" if text else "log"),
                                 ("accuracy", accuracies, "zoom" if text else "unit")):
        fig = curve_figure(panels, series, metrics, splits,
                           f"{title}: {kind} against step\nline: median, band: min-max over seeds{zoomed}", scale)
        outside_legend(fig, series_handles(series), series, series_title)
        save(fig, out_dir, f"{name}{kind}_curves", written)


# ---------------------------------------------------------------- final accuracy


def seed_offsets(n, width):
    """Horizontal offsets that spread n seeds' points over `width` (deterministic, no random jitter)."""
    return [0.0] if n == 1 else list(np.linspace(-width / 2, width / 2, n))


def draw_seeds(ax, x, runs, metric, st, width, horizontal=False):
    """Every seed's final value as a point, the median as a bar; returns the median (None if no value).

    x: the category's position; horizontal: the values run along the x axis, the categories down the y axis."""
    vals = [(r.final(metric), r.diverged) for r in runs]
    vals = [(v, d) for v, d in vals if v is not None]
    if not vals:
        return None

    def at(position, value):  # (x, y) of the plot call
        return (value, position) if horizontal else (position, value)

    for (v, d), dx in zip(vals, seed_offsets(len(vals), width * 0.6)):
        ax.plot(*at(x + dx, v), ls="none", marker="x" if d else st["marker"], ms=5, color=st["color"], alpha=0.75,
                mec="white" if not d else st["color"], mew=0.5 if not d else 1.2, zorder=4)
    med = float(np.median([v for v, _ in vals]))
    ax.plot(*at([x - width / 2, x + width / 2], [med, med]), color=st["color"], lw=2.5, solid_capstyle="butt",
            zorder=3)
    return med


def is_text(runs):
    return bool(runs) and all(r.get("task.kind") == "text" for r in runs)


def final_metrics(runs):
    """The two panels of the final-value figures: accuracies, or for text the loss and next-byte accuracy."""
    return TEXT_FINALS if is_text(runs) else ACCURACIES


def accuracy_axes(ax, metric_name, metric="token_acc", fitted=False):
    """fitted (text): a linear axis over the values drawn, with plain ticks; else accuracy on 0 to 1."""
    ax.set_ylabel(f"final test {metric_name}")
    if fitted or metric == "bits_per_byte":
        ax.margins(y=0.08)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.set_ylim(-0.03, 1.03)
    ax.grid(axis="x", visible=False)


def categorical_figure(runs, category_of, group_of, x_title, group_title, title):
    """Final test accuracy per category (x), groups side by side; no lines between categories."""
    categories = list(OrderedDict.fromkeys(category_of(r) for r in runs))
    groups = list(OrderedDict.fromkeys(group_of(r) for r in runs))
    fig, axes = new_figure(1, 2, max(3.4, 1.2 + 0.75 * len(categories)) * 2, 3.8)
    for ax, (metric, metric_name) in zip(axes[0], final_metrics(runs)):
        for ci, c in enumerate(categories):
            present = [g for g in groups if any(category_of(r) == c and group_of(r) == g for r in runs)]
            width = 0.8 / len(present)
            for pi, g in enumerate(present):
                members = [r for r in runs if category_of(r) == c and group_of(r) == g]
                x = ci - 0.4 + width * (pi + 0.5)
                draw_seeds(ax, x, members, metric, style(groups.index(g)), width * 0.8)
        long_names = max(len(line) for c in categories for line in c.split("\n")) > 8  # tilted when long
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories, rotation=30 if long_names else 0, ha="right" if long_names else "center")
        ax.set_xlim(-0.6, len(categories) - 0.4)
        ax.set_xlabel(x_title)
        accuracy_axes(ax, metric_name, metric, fitted=is_text(runs))
    handles, labels = seed_and_median_handles(runs, median_bar())
    if len(groups) > 1:
        handles = [Line2D([], [], ls="none", **{k: v for k, v in style(i).items() if k != "linestyle"}, ms=6)
                   for i in range(len(groups))] + handles
        labels = [g.replace("\n", ", ") for g in groups] + labels
    finish(fig, title)
    outside_legend(fig, handles, labels, group_title if len(groups) > 1 else None)
    return fig


def order_figure(runs, group_of, group_title, title, final):
    """Final test accuracy against the order of the numerators that take one (attnlab.variants); variants
    without an order as categories on the right. Several such numerators (taylor and power) are several
    series, each numerator named in its series.

    With a single order there is no order axis: one category per variant and remaining setting
    (taylor 2 / norm, exp / norm ...), each its own colour and marker, named under its column."""
    ordered = [r for r in runs if takes_order(r) and r.get("attention.order")]
    orders = sorted({int(r.get("attention.order")) for r in ordered})
    with_order = list(OrderedDict.fromkeys(r.get("attention.numerator") for r in ordered))
    axis = "Taylor order" if with_order == ["taylor"] else "order"
    if len(orders) <= 1:
        def name(r):
            return "\n".join(p for p in (variant_name(r), group_of(r)) if p)

        ordered_first = sorted(runs, key=lambda r: not takes_order(r))
        return categorical_figure(ordered_first, name, name, "variant" + (f" / {group_title}" if group_title else ""),
                                  "variant" + (f" / {group_title}" if group_title else ""),
                                  f"{title}: {final} per variant"
                                  + (f" (a single {axis}, {orders[0]})" if orders else ""))
    if len(with_order) > 1:  # one series per numerator (each variant without an order its own) and remaining setting
        group_of = (lambda g: lambda r: ", ".join(
            p for p in (r.get("attention.numerator") if takes_order(r) else variant_name(r), g(r)) if p))(group_of)
        group_title = ", ".join(p for p in ("numerator", group_title) if p)
    others = list(OrderedDict.fromkeys(variant_name(r) for r in runs if not takes_order(r)))
    ticks = [str(o) for o in orders] + others
    title = f"{title}: {final} against {axis}"
    groups = list(OrderedDict.fromkeys(group_of(r) for r in runs))
    width = 0.7 / len(groups)
    fig, axes = new_figure(1, 2, max(5.0, 1.2 + 0.7 * len(ticks)) * 2, 3.8)
    for ax, (metric, metric_name) in zip(axes[0], final_metrics(runs)):
        for gi, g in enumerate(groups):
            st = style(gi)
            dx = -0.35 + width * (gi + 0.5)
            xs, meds = [], []
            for oi, o in enumerate(orders):
                members = [r for r in runs if group_of(r) == g and takes_order(r)
                           and r.get("attention.order") and int(r.get("attention.order")) == o]
                med = draw_seeds(ax, oi + dx, members, metric, st, width * 0.8)
                if med is not None:
                    xs.append(oi + dx)
                    meds.append(med)
            # The order is ordinal: a thin line joins a series' medians across orders.
            ax.plot(xs, meds, color=st["color"], ls=st["linestyle"], lw=1.0, alpha=0.8, zorder=2)
            for k, name in enumerate(others):
                members = [r for r in runs if group_of(r) == g and not takes_order(r) and variant_name(r) == name]
                draw_seeds(ax, len(orders) + k + dx, members, metric, st, width * 0.8)
        if others and orders:
            ax.axvline(len(orders) - 0.5, color="0.5", ls=":", lw=1)
        ax.set_xticks(range(len(ticks)))
        ax.set_xticklabels(ticks)
        ax.set_xlim(-0.6, len(ticks) - 0.4)
        ax.set_xlabel(axis + (" (right: variants without an order)" if others else ""))
        accuracy_axes(ax, metric_name, metric, fitted=is_text(runs))
    handles, labels = seed_and_median_handles(runs, median_bar())
    if len(groups) > 1:
        handles = [Line2D([], [], color=style(i)["color"], ls=style(i)["linestyle"], marker=style(i)["marker"], ms=6)
                   for i in range(len(groups))] + handles
        labels = groups + labels
    finish(fig, title)
    outside_legend(fig, handles, labels, group_title if len(groups) > 1 else None)
    return fig


# ---------------------------------------------------------------- state size


def layer_state(run):
    """Recurrent state of one attention layer, all heads (floats); per head when the head count is unknown."""
    per_head = number(run.row.get("state_floats"))
    if per_head is None:
        return None
    h = run.heads()
    return per_head * h if h else per_head


def uses_cache(run):
    """Numerators without a finite state (exp) and clamped kernels keep a key/value cache instead."""
    return not variants.finite_state(run.get("attention.numerator")) or bool(run.get("attention.clamp"))


# by_state tells the variants apart by marker alone (colour is the series): more shapes than style() has, so
# that the twelve variants of lm_variants do not share one.
STATE_MARKERS = MARKERS + ["p", "*", "d", "H"]


def state_figure(runs, group_of, group_title, title):
    """Final test accuracy against the state of one attention layer (all heads), log scale.

    Colour: the series (e.g. the head count); marker: the variant (taylor 2, exp ...)."""
    per_layer = all(r.heads() for r in runs)
    groups = list(OrderedDict.fromkeys(group_of(r) for r in runs))
    ordered = sorted({r for r in runs if takes_order(r)}, key=lambda r: number(r.get("attention.order")) or 0)
    names = list(OrderedDict.fromkeys([variant_name(r) for r in ordered] + [variant_name(r) for r in runs]))
    fig, axes = new_figure(1, 2, 11, 4.2)
    for ax, (metric, metric_name) in zip(axes[0], final_metrics(runs)):
        for gi, g in enumerate(groups):
            colour = style(gi)["color"]
            lines = OrderedDict()  # numerator that takes an order -> (state, median) of its orders
            for name, members in group_by([r for r in runs if group_of(r) == g], variant_name).items():
                x = layer_state(members[0])
                vals = [(r.final(metric), r.diverged) for r in members]
                vals = [(v, d) for v, d in vals if v is not None]
                if x is None or not vals:
                    continue
                marker = STATE_MARKERS[names.index(name) % len(STATE_MARKERS)]
                for v, d in vals:
                    ax.plot(x, v, ls="none", marker="x" if d else marker, ms=5, color=colour, alpha=0.6,
                            mec="white" if not d else colour, mew=0.5, zorder=3)
                med = float(np.median([v for v, _ in vals]))
                ax.plot(x, med, ls="none", marker=marker, ms=11, mfc="none", mec=colour, mew=2, zorder=4)
                if takes_order(members[0]):
                    lines.setdefault(members[0].get("attention.numerator"), []).append((x, med))
            # The orders of one numerator in one series: more orders, more state; a thin line joins their medians.
            for line in lines.values():
                line.sort()
                ax.plot([p[0] for p in line], [p[1] for p in line], color=colour, ls=style(gi)["linestyle"], lw=1,
                        alpha=0.8, zorder=2)
        spaced_log_axis(ax.xaxis)
        ax.set_xlabel(("recurrent state per attention layer, all heads" if per_layer else
                       "recurrent state per attention head") + " (floats)" +
                      ("\nTaylor: symmetric layout; exp: key/value cache at the longest input"
                       if any(uses_cache(r) for r in runs) else "\nTaylor: symmetric layout"))
        accuracy_axes(ax, metric_name, metric, fitted=is_text(runs))
        ax.grid(axis="x", visible=True, which="major")
    handles, labels = [], []
    if len(groups) > 1:
        handles += [Line2D([], [], color=style(i)["color"], ls=style(i)["linestyle"], lw=2) for i in range(len(groups))]
        labels += groups
    handles += [Line2D([], [], color="0.3", ls="none", marker=STATE_MARKERS[i % len(STATE_MARKERS)], ms=7,
                       mfc="none", mew=1.5) for i in range(len(names))]
    labels += names
    more, more_labels = seed_and_median_handles(
        runs, Line2D([], [], color="0.3", marker="o", ls="none", ms=11, mfc="none", mew=2))
    finish(fig, title)
    title_line = f"colour: {group_title}; marker: variant" if len(groups) > 1 else "marker: variant"
    outside_legend(fig, handles + more, labels + more_labels, title_line)
    return fig


# ---------------------------------------------------------------- chosen learning rate

VARIANT_KEYS = ("attention.numerator", "attention.order")
CHOSEN = "at its chosen learning rate"


def follower_keys(runs, keys):
    """{key: the earlier key that sets it}: swept keys outside attention.* whose value follows from an earlier
    key's in these runs (the batch, the example counts and the step budget set with the sequence length). Left
    out of the names, they are said once; the names stay unique, as a follower adds nothing to its leader."""
    followers = OrderedDict()
    for i, k in enumerate(keys):
        if k.startswith("attention."):
            continue
        for lead in keys[:i]:
            if lead in followers or len({r.get(lead) for r in runs}) < 2:
                continue
            values = {}
            if all(values.setdefault(r.get(lead), r.get(k)) == r.get(k) for r in runs):
                followers[k] = lead
                break
    return followers


def followers_note(followers):
    """'pairs, batch set by seq len' for follower_keys' answer; "" when there is none."""
    leads = OrderedDict()
    for k, lead in followers.items():
        leads.setdefault(lead, []).append(readable(k))
    return "; ".join(f"{', '.join(ks)} set by {readable(lead)}" for lead, ks in leads.items())


def chosen_groups(runs, keys, metric, lower_is_better):
    """The runs marked lr_selected, one group per variant named "<its swept keys but train.lr>, lr X", best
    first by the median final test `metric` ({} when no run is marked); and the note naming the keys left
    out of the names because an earlier key sets them (followers_note)."""
    keys = [k for k in keys if k != "train.lr"]
    keys = [k for k in keys if k in VARIANT_KEYS] + [k for k in keys if k not in VARIANT_KEYS]  # the variant first
    selected = [r for r in runs if r.lr_selected]
    followers = follower_keys(selected, keys)
    keys = [k for k in keys if k not in followers]

    def label(r):
        return ", ".join(p for p in (describe(r, keys), f"lr {r.get('train.lr')}") if p)

    groups = group_by(selected, label)

    def rank(item):  # groups without a value last
        vals = [v for v in (r.final(metric) for r in item[1]) if v is not None]
        if not vals:
            return (1, 0.0)
        med = float(np.median(vals))
        return (0, med if lower_is_better else -med)

    return OrderedDict(sorted(groups.items(), key=rank)), followers_note(followers)


def chosen_curves(groups, note, title, out_dir, name, written):
    """Validation and test loss against step, one line per variant at its chosen rate (median, min-max band)."""
    series = list(groups)
    runs = [r for g in groups.values() for r in g]
    splits = [s for s in splits_present(runs) if s != "train"] or ["test"]  # train loss is noisy
    text = is_text(runs)
    # Over MAX_CURVES variants the legend goes under the panels in several columns (beside them it would take
    # a quarter of the width), and the panels grow so that the lines stay apart.
    many = len(series) > MAX_CURVES
    width = 5.2 if many else 4.2
    fig = curve_figure({"": groups}, series, [TEXT_LOSS if text else ("loss", "loss (nats)")], splits,
                       f"{title}: loss against step, each variant {CHOSEN}\nline: median, band: min-max over seeds"
                       + ("; step 0 left out, axis zoomed" if text else "")
                       + (f"\nnot in the names: {note}" if note else ""),
                       "zoom" if text else "log", panel_height=3.6 if many else 2.9, panel_width=width)
    legend_title_text = f"variant {CHOSEN} (best first)"
    if many:
        below_legend(fig, series_handles(series), series, legend_title_text, width * len(splits))
    else:
        outside_legend(fig, series_handles(series), series, legend_title_text)
    save(fig, out_dir, name, written)


def baselines(runs, lo, hi):
    """The unigram and bigram test bits per byte of summary.csv as (name, value, fits): fits when drawing it
    keeps the data on at least half the axis (else the title names it)."""
    span = max(hi - lo, 0.05 * abs(hi), 1e-9)
    found = []
    for name in ("unigram", "bigram"):
        vals = [v for v in (number(r.row.get(f"{name}_test_bits_per_byte")) for r in runs) if v is not None]
        if vals:
            b = vals[0]
            found.append((name, b, max(hi, b) - min(lo, b) <= 2 * span))
    return found


def chosen_final(groups, note, title, out_dir, name, written):
    """Final test values, one row per variant at its chosen rate, best on top: every seed a point, the median a
    tick. Text: bits per byte, with the unigram and bigram baselines; other tasks: token (and sequence) accuracy."""
    runs = [r for g in groups.values() for r in g]
    text = is_text(runs)
    if text:
        metrics = [("bits_per_byte", "final test loss (bits per byte = loss / ln 2)")]
    else:
        metrics = [(m, f"final test {name}") for m, name in ACCURACIES
                   if m == "token_acc" or any(r.final(m) is not None for r in runs)]
    n = len(groups)
    fig, axes = new_figure(1, len(metrics), 4.6 * len(metrics) + 2.0, max(2.8, 1.4 + 0.3 * n), sharey=True)
    notes, extra_handles, extra_labels = [], [], []
    for ax, (metric, metric_name) in zip(axes[0], metrics):
        values = []
        for i, members in enumerate(groups.values()):
            draw_seeds(ax, n - 1 - i, members, metric, style(i), 0.6, horizontal=True)
            values += [v for v in (r.final(metric) for r in members) if v is not None]
        if text and values:
            for (bname, b, fits), ls in zip(baselines(runs, min(values), max(values)), (":", "--")):
                if fits:
                    line = ax.axvline(b, color="0.35", ls=ls, lw=1.2, zorder=1, label=f"{bname} baseline")
                    extra_handles.append(line)
                    extra_labels.append(f"{bname} baseline ({b:.2f})")
                else:
                    notes.append(f"{bname} {b:.2f}")
        if not text:
            ax.set_xlim(-0.03, 1.03)
        ax.set_xlabel(metric_name)
        ax.grid(axis="y", visible=False)
    axes[0][0].set_yticks(range(n))
    axes[0][0].set_yticklabels(list(reversed(groups)))
    axes[0][0].set_ylim(-0.6, n - 0.4)
    tick = Line2D([], [], color="0.3", marker="|", ls="none", ms=12, mew=2.5)
    handles, labels = seed_and_median_handles(runs, tick)
    what = "final test loss" if text else "final test accuracy"
    finish(fig, f"{title}: {what}, each variant {CHOSEN} (best on top)" +
           (f"\nbaselines off the axis (bits per byte): {', '.join(notes)}" if notes else "") +
           (f"\nnot in the names: {note}" if note else ""))
    outside_legend(fig, handles + extra_handles, labels + extra_labels, None)
    save(fig, out_dir, name, written)


def chosen_figures(runs, keys, title, prefix, out_dir, written):
    """chosen_loss_curves and chosen_final when summary.csv marks runs lr_selected; nothing otherwise."""
    text = is_text(runs)
    groups, note = chosen_groups(runs, keys, "bits_per_byte" if text else "token_acc", lower_is_better=text)
    if not groups:
        return
    chosen_curves(groups, note, title, out_dir, prefix + "chosen_loss_curves", written)
    chosen_final(groups, note, title, out_dir, prefix + "chosen_final", written)


# ---------------------------------------------------------------- per task


def curve_facet(runs, keys):
    """The key with the fewest values (2 to 4) among keys, None if there is none."""
    counts = [(len({r.get(k) for r in runs}), k) for k in keys]
    counts = [c for c in counts if 2 <= c[0] <= 4]
    return min(counts)[1] if counts else None


def facet_name(run, key):
    if key is None:
        return ""
    if key == "model.heads":
        return heads_name(run)
    return f"{readable(key)} {run.get(key) or '(none)'}"


def base_name(run):
    return f"{variant_name(run)}, {run.get('attention.denominator') or '?'}"


def task_figures(all_runs, all_swept, title, prefix, out_dir, written):
    # With learning rates chosen (lr_selected), every figure shows each
    # variant at its chosen rate only: a variant is never judged at a rate
    # tuned for another, and one line per variant stays readable.
    runs, swept = all_runs, all_swept
    if any(r.lr_selected for r in all_runs):
        runs, swept = [r for r in all_runs if r.lr_selected], [k for k in all_swept if k != "train.lr"]
        title = f"{title} (each variant {CHOSEN})"
    keys = varying_keys(runs, swept)
    final = "final test loss and accuracy" if is_text(runs) else "final test accuracy"

    def name_of(ks):  # a sweep point's name: its swept values, else its variant
        return (lambda r: describe(r, ks) or base_name(r)) if ks else base_name

    def group_of(ks):  # a series of a final-accuracy figure: one for all when ks is empty
        return lambda r: describe(r, ks)

    variant_keys = ("attention.numerator", "attention.order")
    rest = [k for k in keys if k not in variant_keys]
    # Curves: over MAX_CURVES sweep points, one row of panels per value of a
    # key with few values (e.g. the denominator), so that bands stay legible.
    facet = curve_facet(runs, rest) if len(group_by(runs, name_of(keys))) > MAX_CURVES else None
    series_keys = [k for k in keys if k != facet]
    panels = OrderedDict((p, group_by(members, name_of(series_keys)))
                         for p, members in group_by(runs, lambda r: facet_name(r, facet)).items())
    curves(panels, legend_title(series_keys) if series_keys else "variant", title, out_dir, prefix, written)

    if "attention.order" in keys:
        fig = order_figure(runs, group_of(rest), legend_title(rest), title, final)
        save(fig, out_dir, prefix + "by_order", written)
    elif "attention.numerator" in keys:
        fig = categorical_figure(runs, variant_name, group_of(rest), "numerator", legend_title(rest),
                                 f"{title}: {final} per numerator")
        save(fig, out_dir, prefix + "by_numerator", written)
    elif "attention.denominator" in keys:
        den_keys = ["attention.denominator"] + (["attention.clamp"] if "attention.clamp" in keys else [])
        others = [k for k in keys if k not in den_keys]
        fig = categorical_figure(runs, lambda r: describe(r, den_keys), group_of(others), "denominator",
                                 legend_title(others), f"{title}: {final} per denominator")
        save(fig, out_dir, prefix + "by_denominator", written)
    elif keys:
        fig = categorical_figure(runs, name_of(keys), lambda r: "", legend_title(keys), None,
                                 f"{title}: {final} per sweep point")
        save(fig, out_dir, prefix + "final_accuracy", written)

    if len({layer_state(r) for r in runs} - {None}) > 1:
        fig = state_figure(runs, group_of(rest), legend_title(rest), f"{title}: {final} against state size")
        save(fig, out_dir, prefix + "by_state", written)

    chosen_figures(all_runs, varying_keys(all_runs, all_swept), title.split(" (each variant")[0], prefix, out_dir,
                   written)


def plot(results_dir, out_dir):
    runs, swept, base_task = read_results(results_dir)
    os.makedirs(out_dir, exist_ok=True)
    name = os.path.basename(os.path.normpath(results_dir))
    base_task = base_task or "task"
    tasks = group_by(runs, lambda r: r.get("task.kind") or base_task)
    written = []
    for task, task_runs in tasks.items():
        prefix = f"{task}_" if len(tasks) > 1 else ""
        title = f"{name} / {task}" if task != "task" else name
        task_figures(task_runs, swept, title, prefix, out_dir, written)
    # A sweep of one setting per task (the quickstart): one final-accuracy figure, the tasks side by side.
    if all(not varying_keys(task_runs, swept) for task_runs in tasks.values()):
        task_of = {id(r): task for task, task_runs in tasks.items() for r in task_runs}
        one_variant = len({base_name(r) for r in runs}) == 1
        fig = categorical_figure(runs, lambda r: task_of[id(r)] if one_variant else f"{task_of[id(r)]}\n{base_name(r)}",
                                 lambda r: "", "task", None, f"{name}: final test accuracy per task"
                                 + (f" ({base_name(runs[0])})" if one_variant else ""))
        save(fig, out_dir, "final_accuracy", written)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir")
    ap.add_argument("--out", help="folder for the figures (default RESULTS_DIR/plots)")
    args = ap.parse_args()
    return plot_style.report("plot_sweep.py", lambda: plot(args.results_dir, args.out or os.path.join(args.results_dir, "plots")))


if __name__ == "__main__":
    sys.exit(main())
