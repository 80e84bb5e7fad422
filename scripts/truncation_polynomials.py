#!/usr/bin/python3
"""A trained softmax model scored with polynomials of degree N in exp's place,
in double precision: the Maclaurin series, the series centred at each row's
largest score, and the Chebyshev interpolant of exp on the model's score
range (python/attnlab/polynomials.py). Separates the mathematics of a
truncated series from float32's rounding: every number here is computed in
float64. Needs the attnlab package (installed, or python/ on PYTHONPATH).

usage: /usr/bin/python3 scripts/truncation_polynomials.py RUN [RUN ...] --out CSV
           [--orders 1..12,16,24,32,48,64,96,128] [--windows 256] [--threads 1]
       /usr/bin/python3 scripts/truncation_polynomials.py --figure CSV [--within 0.02] [--out STEM]

RUN: a finished run folder of an exp/softmax model (config.yaml and
model.safetensors). For each run: the score range [lo, hi] over the causal
entries of every layer and head on its validation set (chebyshev's interval:
chosen on validation, never on test), then on the first WINDOWS windows of
its test set the exact model and each polynomial at each order: the test
loss in bits per byte, and the total-variation distance between each
polynomial's attention rows and exp's rows on the same scores (mean over
every row of every layer and head, and the largest). rows_nonpositive is the
fraction of rows whose polynomial weights sum to 0 or less (the row's
normalisation then has no meaning). The CSV has one row per (run,
polynomial, order) and is written atomically.

--figure reads such a CSV and draws, per polynomial, the lowest order from
which every larger order tried comes within --within bits per byte of exp's
loss against the model's largest |score| on the test windows (no point: never
within at the orders tried; they are listed on stderr). Writes STEM.png and
STEM.pdf (default: the CSV's name without .csv).

Exit codes: 0 written, 2 a missing or malformed input or a bad argument.
"""
import argparse
import math
import os
import sys
import time

import plot_style
from plot_style import InputError

COLUMNS = ["run", "lr", "seed", "largest_abs_score", "score_lo", "score_hi", "polynomial", "order",
           "bits_per_byte", "exact_bits_per_byte", "excess_bits", "mean_row_tv", "max_row_tv",
           "rows_nonpositive", "windows"]


def parse_orders(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("..")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise InputError(f"--orders: {part!r} is not N or A..B")
        if a < 1 or b < a:
            raise InputError(f"--orders: {part!r} is not an increasing range of orders >= 1")
        out += list(range(a, b + 1))
    if sorted(set(out)) != out:
        raise InputError("--orders: orders must increase without repeats")
    return out


class Scorer:
    """One run's model in float64 with a replaceable score function, and what
    its attention rows did on the last evaluation."""

    def __init__(self, run_dir, windows):
        import torch
        from attnlab import data, load_run, polynomials
        from attnlab.run import evaluate

        self.torch, self.poly, self.evaluate = torch, polynomials, evaluate
        run = load_run(run_dir)
        self.config, self.model = run.config, run.model(torch.float64)
        a = self.config["attention"]
        if a["numerator"] != "exp" or a["denominator"] != "softmax" or a.get("clamp") is not None:
            raise InputError(f"{run_dir}: trained as {a['numerator']}/{a['denominator']}; "
                             "polynomials replace exp in an unclamped exp/softmax model only")
        self.val = data.val_set(self.config)
        tokens, targets = data.test_set(self.config)
        if windows > tokens.shape[0]:
            raise InputError(f"--windows {windows}: the test set of {run_dir} has {tokens.shape[0]}")
        self.test = (tokens[:windows], targets[:windows])
        self.batch = 32

    def _score(self, tokens_targets, weights_of):
        self.model.att["score_weights"] = weights_of
        try:
            m = self.evaluate(self.model, *tokens_targets, batch=self.batch)
        finally:
            self.model.att.pop("score_weights", None)
        return m["loss"] / math.log(2.0)

    def score_range(self):
        """(lo, hi, largest |s|) of the causal scores on the validation set."""
        seen = {"lo": math.inf, "hi": -math.inf}
        torch, poly = self.torch, self.poly

        def exact(s, causal):
            inside = s[causal.expand_as(s)]
            seen["lo"] = min(seen["lo"], float(inside.min()))
            seen["hi"] = max(seen["hi"], float(inside.max()))
            return torch.where(causal, torch.exp(s - poly.row_max(s, causal)), torch.zeros((), dtype=s.dtype))

        self._score(self.val, exact)
        return seen["lo"], seen["hi"]

    def exact(self):
        """(bits per byte, largest |s|) of the exact model on the test windows."""
        largest = [0.0]
        torch, poly = self.torch, self.poly

        def exact(s, causal):
            largest[0] = max(largest[0], float(s[causal.expand_as(s)].abs().max()))
            return torch.where(causal, torch.exp(s - poly.row_max(s, causal)), torch.zeros((), dtype=s.dtype))

        return self._score(self.test, exact), largest[0]

    def polynomial(self, kind, order, score_range):
        """(bits per byte, mean row TV, max row TV, fraction of rows with sum <= 0)."""
        torch, poly = self.torch, self.poly
        acc = {"tv_sum": 0.0, "tv_max": 0.0, "rows": 0, "bad": 0}

        def truncated(s, causal):
            w = poly.numerator(s, causal, kind, order, score_range)
            z = w.sum(-1, keepdim=True)  # (B, H, T, 1)
            with torch.no_grad():
                tv = poly.row_distance(w / z, poly.exact_weights(s, causal))  # (B, H, T)
                tv = torch.nan_to_num(tv, nan=math.inf)
                acc["tv_sum"] += float(tv.clamp(max=1e300).sum())
                acc["tv_max"] = max(acc["tv_max"], float(tv.max()))
                acc["rows"] += tv.numel()
                acc["bad"] += int((z <= 0).sum())
            return w

        bits = self._score(self.test, truncated)
        return bits, acc["tv_sum"] / acc["rows"], acc["tv_max"], acc["bad"] / acc["rows"]


def fmt(x):
    return repr(float(x)) if math.isfinite(x) else ("inf" if x > 0 else "-inf" if x < 0 else "nan")


def sweep(args):
    import torch
    torch.set_num_threads(args.threads)
    orders = parse_orders(args.orders)
    rows = []
    for run in args.runs:
        if not os.path.isfile(os.path.join(run, "model.safetensors")):
            raise InputError(f"{run}: no model.safetensors (train the run first)")
        t0 = time.time()
        scorer = Scorer(run, args.windows)
        lo, hi = scorer.score_range()
        exact_bits, largest = scorer.exact()
        lr, seed = scorer.config["train"]["lr"], scorer.config["seed"]
        print(f"{os.path.basename(os.path.normpath(run))}: exp {exact_bits:.4f} bits/byte, "
              f"largest |s| {largest:.1f}, validation range [{lo:.1f}, {hi:.1f}]", file=sys.stderr)
        for kind in ("maclaurin", "centred", "chebyshev"):
            for n in orders:
                bits, tv_mean, tv_max, bad = scorer.polynomial(kind, n, (lo, hi))
                rows.append([run, lr, seed, fmt(largest), fmt(lo), fmt(hi), kind, n, fmt(bits), fmt(exact_bits),
                             fmt(bits - exact_bits), fmt(tv_mean), fmt(tv_max), fmt(bad), args.windows])
            done = [r for r in rows if r[0] == run and r[6] == kind]
            print(f"  {kind}: " + ", ".join(f"{r[7]}: {float(r[10]):+.3g}" for r in done), file=sys.stderr)
        print(f"  ({time.time() - t0:.0f} s)", file=sys.stderr)
    plot_style.write_csv(args.out, COLUMNS, rows)
    return [args.out]


def degree_needed(orders_excess, within):
    """The lowest order from which every larger order tried is within `within` bits, or None."""
    needed = None
    for n, excess in sorted(orders_excess, reverse=True):
        if not (math.isfinite(excess) and excess <= within):
            break
        needed = n
    return needed


def figure(args):
    plt = plot_style.load_pyplot("truncation_polynomials.py")
    rows = plot_style.read_csv_rows(args.figure, ["run", "largest_abs_score", "polynomial", "order", "excess_bits"])
    by = {}
    for r in rows:
        key = (r["polynomial"], r["run"])
        by.setdefault(key, {"largest": plot_style.number(args.figure, r, "largest_abs_score"), "points": []})
        by[key]["points"].append((plot_style.number(args.figure, r, "order", int),
                                  plot_style.number(args.figure, r, "excess_bits")))
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    highest = max(n for v in by.values() for n, _ in v["points"])
    never_at = 2 * highest  # a row above the orders tried: "never within"
    for i, kind in enumerate(("maclaurin", "centred", "chebyshev")):
        xs, ys, never = [], [], []
        for (k, run), v in sorted(by.items()):
            if k != kind:
                continue
            n = degree_needed(v["points"], args.within)
            if n is None:
                never.append((run, v["largest"]))
            else:
                xs.append(v["largest"])
                ys.append(n)
        st = plot_style.style(i)
        shift = 0.3 * (i - 1)  # side by side where two polynomials need the same degree
        ax.plot([x + shift for x in xs], ys, linestyle="none", marker=st["marker"], color=st["color"], label=kind)
        ax.plot([x + shift for _, x in never], [never_at] * len(never), linestyle="none", marker=st["marker"],
                markerfacecolor="none", color=st["color"])
        for run, _ in never:
            print(f"{kind}: {run} is never within {args.within} bits at the orders tried", file=sys.stderr)
    ax.axhline(1.41 * highest, color="0.6", linewidth=0.8, linestyle="--")
    ax.set_yscale("log", base=2)
    lowest = min([n for v in by.values() for n, _ in v["points"] if n >= 1] + [highest])
    ticks = [2 ** e for e in range(max(0, int(math.log2(lowest))), int(math.log2(highest)) + 1)]
    ax.set_yticks(ticks + [never_at])
    ax.set_yticklabels([str(t) for t in ticks] + [f"never\n(<= {highest})"])
    ax.minorticks_off()
    ax.set_xlabel("largest |score| on the test windows")
    ax.set_ylabel(f"degree within {args.within} bits/byte of exp")
    ax.legend(title="polynomial")
    stem = args.out or os.path.splitext(args.figure)[0]
    return plot_style.save(fig, stem)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*")
    p.add_argument("--out")
    p.add_argument("--orders", default="1..12,16,24,32,48,64,96,128")
    p.add_argument("--windows", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--figure", metavar="CSV")
    p.add_argument("--within", type=float, default=0.02)
    args = p.parse_args()

    def draw():
        if args.figure:
            if args.runs:
                raise InputError("--figure reads a CSV; give no runs with it")
            return figure(args)
        if not args.runs or not args.out:
            raise InputError("give RUN folders and --out CSV (or --figure CSV)")
        if args.windows < 1:
            raise InputError("--windows must be at least 1")
        return sweep(args)

    sys.exit(plot_style.report("truncation_polynomials.py", draw))


if __name__ == "__main__":
    main()
