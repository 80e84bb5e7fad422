#!/usr/bin/python3
"""Trained lookup models scored beyond the window they were trained on
(experiments/lookup_extrapolation.yaml): each run's model.safetensors is
scored by `attnlab eval` at its trained length, then at each --at setting
(a longer window, and the pairs it holds), with the loss by position. One row
per (run, setting): the test loss and accuracies `eval` prints, and the mean
loss of the answers inside the trained length (positions < trained seq_len)
and beyond it, from the per-position file (their count-weighted mean is the
test loss; checked).

usage: /usr/bin/python3 scripts/extrapolation_eval.py RUN [RUN ...] --attnlab BIN --out CSV
           [--at 1024:64,1024:256] [--threads 1] [--positions-to DIR]

RUN: a finished run folder (config.yaml, result.yaml, model.safetensors) of a
lookup task. --at: SEQ_LEN:PAIRS settings, comma-separated. The per-position
losses go to RUN/per_position_T<seq_len>_P<pairs>.csv (or, with
--positions-to DIR, to DIR/<run_id>/, for models trained elsewhere than
their results folder); the table to --out, written atomically. Needs
python3-yaml.

Exit codes: 0 written, 2 a missing or malformed input, a bad argument, or an
evaluation that failed (its error is printed).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import re
import subprocess
import sys

import yaml

from plot_style import InputError, write_csv

COLUMNS = ["run_id", "seed", "arm", "trained_seq_len", "trained_pairs", "seq_len", "pairs", "test_loss",
           "token_acc", "seq_acc", "answers_within", "loss_within", "answers_beyond", "loss_beyond"]
METRICS = re.compile(r"^test loss (\S+) token_acc (\S+) seq_acc (\S+)", re.M)


def read_config(run: str) -> dict:
    path = os.path.join(run, "config.yaml")
    for needed in ("config.yaml", "result.yaml", "model.safetensors"):
        if not os.path.exists(os.path.join(run, needed)):
            raise InputError(f"{run}: no {needed} (a finished run with its checkpoint is needed)")
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    if config.get("task", {}).get("kind") != "lookup":
        raise InputError(f"{path}: task.kind is {config.get('task', {}).get('kind')!r}, not lookup")
    return config


def arm_of(config: dict) -> str:
    """softmax, norm, ... or 'gate' for the paper's gate (no denominator, an output gate)."""
    att = config.get("attention", {})
    if att.get("out_gate") or att.get("in_gate"):
        return "gate"
    return att.get("denominator", "softmax")


def parse_settings(text: str) -> list[tuple[int, int]]:
    settings = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+):(\d+)\s*", item)
        if not m:
            raise InputError(f"--at {text!r}: {item!r} is not SEQ_LEN:PAIRS")
        settings.append((int(m.group(1)), int(m.group(2))))
    return settings


def split_by_position(path: str, trained_len: int) -> tuple[int, float, int, float]:
    """(answers within, their mean loss, answers beyond, their mean loss) from an eval --per-position CSV."""
    sums = [0.0, 0.0]
    counts = [0, 0]
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            n = int(row["count"])
            if n == 0:
                continue
            side = 0 if int(row["position"]) < trained_len else 1
            sums[side] += float(row["loss"]) * n
            counts[side] += n
    mean = [s / n if n else math.nan for s, n in zip(sums, counts)]
    return counts[0], mean[0], counts[1], mean[1]


def evaluate(attnlab: str, run: str, seq_len: int, pairs: int, positions: str, threads: int) -> dict:
    args = [attnlab, "eval", run, "--threads", str(threads), "--set", f"task.seq_len={seq_len}",
            "--set", f"task.pairs={pairs}", "--per-position", positions]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise InputError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    m = METRICS.search(p.stdout)
    if not m:
        raise InputError(f"{' '.join(args)}: no 'test loss ... token_acc ... seq_acc' line in {p.stdout!r}")
    return {"test_loss": float(m.group(1)), "token_acc": float(m.group(2)), "seq_acc": float(m.group(3))}


def rows_of_run(attnlab: str, run: str, settings, threads: int, positions_dir: str | None) -> list[dict]:
    config = read_config(run)
    run_id = os.path.basename(os.path.normpath(run))
    task = config["task"]
    trained_len, trained_pairs = int(task["seq_len"]), int(task["pairs"])
    out_dir = os.path.join(positions_dir, run_id) if positions_dir else run
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for seq_len, pairs in [(trained_len, trained_pairs)] + settings:
        positions = os.path.join(out_dir, f"per_position_T{seq_len}_P{pairs}.csv")
        metrics = evaluate(attnlab, run, seq_len, pairs, positions, threads)
        n_in, loss_in, n_out, loss_out = split_by_position(positions, trained_len)
        weighted = ((n_in * loss_in if n_in else 0.0) + (n_out * loss_out if n_out else 0.0)) / (n_in + n_out)
        if not math.isclose(weighted, metrics["test_loss"], rel_tol=1e-4, abs_tol=1e-6):
            raise InputError(f"{positions}: answers' mean loss {weighted} is not eval's test loss "
                             f"{metrics['test_loss']}")
        rows.append({"run_id": run_id, "seed": config.get("seed", ""), "arm": arm_of(config),
                     "trained_seq_len": trained_len, "trained_pairs": trained_pairs, "seq_len": seq_len,
                     "pairs": pairs, **metrics, "answers_within": n_in, "loss_within": loss_in,
                     "answers_beyond": n_out, "loss_beyond": loss_out})
        print(f"extrapolation_eval: {run_id} at T {seq_len}, {pairs} pairs: token_acc {metrics['token_acc']:.4f}, "
              f"loss within {loss_in:.4f}, beyond {loss_out:.4f}", file=sys.stderr)
    return rows


def cell(value):
    """A CSV cell: empty for NaN (no answer on that side), 10 significant digits for other floats."""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.10g}"
    return value


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--attnlab", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--at", default="1024:64,1024:256")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--positions-to")
    args = p.parse_args()
    try:
        settings = parse_settings(args.at)
        rows = []
        for run in args.runs:
            rows += rows_of_run(args.attnlab, run, settings, args.threads, args.positions_to)
    except (InputError, OSError, yaml.YAMLError) as e:
        print(f"extrapolation_eval: {e}", file=sys.stderr)
        return 2
    write_csv(args.out, COLUMNS, [[cell(r[c]) for c in COLUMNS] for r in rows])
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
