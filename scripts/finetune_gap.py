#!/usr/bin/python3
"""How much of a truncated model's gap to exp a short fine-tuning closes
(experiments/lm_truncation_finetune.yaml): each trained exp/softmax model was
cut to a finite-state numerator (taylor order N, same parameters) and trained
a few hundred more steps, beside a control that continued the same model
with exp for the same steps. Per model (a run's train.init) and arm:

    gap_0     = bits(arm, step 0) - bits(exp control, step 0)   the cut as loaded
    gap_end   = bits(arm, last step) - bits(exp control, last step)
    closed    = (gap_0 - gap_end) / gap_0                       fraction of the gap closed

from the test rows of each run's metrics.csv (test loss in nats / ln 2: bits
per byte). Every arm is compared with the control of its own model, so what
fine-tuning adds to any model is not counted as recovery. Over the models:
the mean of each quantity with its 95 % Student-t interval (the models are
independent: different rates or seeds). Needs the attnlab package (installed,
or python/ on PYTHONPATH) and python3-scipy. Writes the per-model rows to --out
(atomically) and prints the means.

usage: /usr/bin/python3 scripts/finetune_gap.py RESULTS_DIR --out CSV

Exit codes: 0 written, 2 a missing or malformed input.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import yaml

from plot_style import InputError, write_csv

from attnlab.files import read_text
from attnlab.results import read_metrics

COLUMNS = ["model", "arm", "steps", "exp_bits_0", "exp_bits_end", "arm_bits_0", "arm_bits_end", "gap_0", "gap_end",
           "closed"]


def arm_of(config: dict) -> str:
    att = config.get("attention", {})
    num = att.get("numerator", "exp")
    return f"{num} {att['order']}" if "order" in att else num


def test_bits(run_dir: str) -> tuple[int, float, float]:
    """(last step, bits per byte at step 0, at the last step) from the run's test rows."""
    m = read_metrics(run_dir)
    test = m[m["split"] == "test"].sort_values("step")
    if test.empty or test["step"].iloc[0] != 0:
        raise InputError(f"{run_dir}/metrics.csv: no test row at step 0 (the model as loaded)")
    to_bits = 1.0 / math.log(2.0)
    return int(test["step"].iloc[-1]), float(test["loss"].iloc[0]) * to_bits, float(test["loss"].iloc[-1]) * to_bits


def read_runs(results_dir: str) -> dict[str, dict[str, tuple[int, float, float]]]:
    """{model (the run folder train.init names): {arm: (steps, bits_0, bits_end)}} of the finished runs."""
    runs_dir = os.path.join(results_dir, "runs")
    if not os.path.isdir(runs_dir):
        raise InputError(f"{runs_dir}: no such folder (run the spec first)")
    models: dict[str, dict[str, tuple[int, float, float]]] = {}
    for run_id in sorted(os.listdir(runs_dir)):
        run = os.path.join(runs_dir, run_id)
        if not os.path.exists(os.path.join(run, "result.yaml")):
            print(f"finetune_gap: {run_id} has not finished: left out", file=sys.stderr)
            continue
        config = yaml.safe_load(read_text(os.path.join(run, "config.yaml"), "run_config"))
        init = config.get("train", {}).get("init")
        if not init:
            raise InputError(f"{run}/config.yaml: no train.init (not a fine-tuning run)")
        folder = os.path.dirname(init) if init.endswith(".safetensors") else os.path.normpath(init)
        models.setdefault(os.path.basename(folder), {})[arm_of(config)] = test_bits(run)
    return models


def rows_of(models) -> list[dict]:
    rows = []
    for model, arms in sorted(models.items()):
        if "exp" not in arms:
            print(f"finetune_gap: {model} has no exp control: left out", file=sys.stderr)
            continue
        steps_exp, exp0, exp_end = arms["exp"]
        for arm, (steps, b0, b_end) in sorted(arms.items()):
            if arm == "exp":
                continue
            if steps != steps_exp:
                raise InputError(f"{model}: {arm} ran {steps} steps, its exp control {steps_exp}")
            gap0, gap_end = b0 - exp0, b_end - exp_end
            rows.append({"model": model, "arm": arm, "steps": steps, "exp_bits_0": exp0, "exp_bits_end": exp_end,
                         "arm_bits_0": b0, "arm_bits_end": b_end, "gap_0": gap0, "gap_end": gap_end,
                         "closed": (gap0 - gap_end) / gap0 if gap0 != 0 else math.nan})
    return rows


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 95 % Student-t interval."""
    from scipy import stats  # python3-scipy

    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    try:
        rows = rows_of(read_runs(args.results_dir))
        if not rows:
            raise InputError(f"{args.results_dir}: no model with both an exp control and a truncated arm")
    except InputError as e:
        print(f"finetune_gap: {e}", file=sys.stderr)
        return 2
    # a model's name holds commas: the csv module quotes it
    write_csv(args.out, COLUMNS, [[r[c] if isinstance(r[c], (str, int)) else f"{r[c]:.10g}" for c in COLUMNS]
                                  for r in rows])
    for arm in sorted({r["arm"] for r in rows}):
        of = [r for r in rows if r["arm"] == arm]
        print(f"{arm} ({len(of)} models, {of[0]['steps']} steps):")
        for key, what in (("gap_0", "gap to exp as cut, bits/byte"), ("gap_end", "gap after fine-tuning"),
                          ("closed", "fraction of the gap closed")):
            m, lo, hi = mean_interval([r[key] for r in of])
            print(f"  {what}: {m:+.4f} [{lo:+.4f}, {hi:+.4f}]  by model: " +
                  ", ".join(f"{r[key]:+.3f}" for r in of))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
