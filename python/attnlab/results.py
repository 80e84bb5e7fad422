"""A results folder in pandas (python3-pandas): summary.csv, one run's
metrics.csv, and the learning curves of every run as one long table.

    results/<name>/summary.csv             one row per finished run
    results/<name>/runs/<run_id>/metrics.csv   one row per evaluation
    results/<name>/curves.csv              every run's metrics.csv rows, led by
                                           run_id, seed and the other swept keys

Types: the metric columns (loss, accuracies, lr, grad_norm, tokens_per_s,
elapsed_s, wall_s and summary's final_/best_ metrics) are always float64,
even when every cell of a run happens to read 0 or 1; the other columns
follow their cells: all integers (step, steps, best_step, params, seed, an
integer swept key) int64, other numbers float64, text object. An empty cell
(a swept key that does not apply to a run, an empty `reason`) and `nan` are
NaN, `inf` a float; words such as `none` (a denominator) stay text, and
run_id, status, split and reason are text even when all empty.
"""

from __future__ import annotations

import csv
import io
import os

import pandas as pd

SUMMARY_FILE = "summary.csv"
METRICS_FILE = "metrics.csv"
CURVES_FILE = "curves.csv"
RUNS_DIR = "runs"

# Only these cells are missing values; pandas' default list would also take
# words such as "None" or "NA" for missing.
_NA = ["", "nan", "-nan"]


# Numbers that are fractions or rates, whatever their cells look like.
_FLOAT_COLUMNS = ("loss", "token_acc", "seq_acc", "lr", "grad_norm", "tokens_per_s", "elapsed_s", "wall_s") + tuple(
    f"{when}_{split}_{metric}" for when in ("final", "best") for split in ("val", "test")
    for metric in ("loss", "token_acc", "seq_acc", "bits_per_byte")) + tuple(
    f"{model}_test_{unit}" for model in ("unigram", "bigram") for unit in ("loss", "bits_per_byte"))


# Text even when every cell is empty (pandas would make that column float).
_TEXT_COLUMNS = ("run_id", "status", "split", "reason", "task.path", "task.sha256")


def _read_csv(path, as_text: bool = False) -> pd.DataFrame:
    if as_text:  # every cell a string as attnlab wrote it, "" when empty
        return pd.read_csv(path, keep_default_na=False, na_values=[], dtype=str)
    # round_trip: every number reads back as the double attnlab wrote (the
    # default parser can be one unit in the last place off).
    df = pd.read_csv(path, keep_default_na=False, na_values=_NA, dtype={"run_id": str}, float_precision="round_trip")
    types = {c: "float64" for c in _FLOAT_COLUMNS if c in df.columns}
    types.update({c: "object" for c in _TEXT_COLUMNS if c in df.columns})
    return df.astype(types)


def read_summary(results_dir: str, as_text: bool = False) -> pd.DataFrame:
    """results_dir/summary.csv: run_id, status, every configuration key (empty
    where it does not apply to a run), final and best val and test metrics,
    steps, wall_s, params, state sizes, lr_selected, reason (docs/outputs.md).
    as_text: every cell the string attnlab wrote ("" when empty), no types."""
    return _read_csv(os.path.join(results_dir, SUMMARY_FILE), as_text)


def read_metrics(run_dir: str) -> pd.DataFrame:
    """run_dir/metrics.csv: step, split (train, val or test), loss, token_acc,
    seq_acc, lr, grad_norm, tokens_per_s, elapsed_s (empty where a value does
    not apply: NaN)."""
    return _read_csv(os.path.join(run_dir, METRICS_FILE))


def run_ids(results_dir: str) -> list[str]:
    """The runs of a results folder that have a metrics.csv: in summary.csv's
    order (the spec's) when there is one, then any others by name."""
    runs = os.path.join(results_dir, RUNS_DIR)
    found = sorted(d for d in os.listdir(runs) if os.path.isfile(os.path.join(runs, d, METRICS_FILE))) \
        if os.path.isdir(runs) else []
    ordered = []
    if os.path.isfile(os.path.join(results_dir, SUMMARY_FILE)):
        ordered = [r for r in read_summary(results_dir)["run_id"] if r in found]
    return ordered + [r for r in found if r not in ordered]


def swept_keys(ids: list[str]) -> list[str]:
    """The swept keys of a sweep (seed last), in the order its run ids list
    them: a run id is the run's swept key=value pairs joined by ','."""
    keys: list[str] = []
    for run_id in ids:
        for part in run_id.split(","):
            key = part.split("=", 1)[0]
            if key and key not in keys:
                keys.append(key)
    if "seed" in keys:
        keys.remove("seed")
        keys.append("seed")
    return keys


def curves_from_runs(results_dir: str, as_text: bool = False) -> pd.DataFrame:
    """Every results_dir/runs/<run_id>/metrics.csv in one DataFrame led by
    run_id, seed and the other swept keys (their values from summary.csv),
    in the run order of run_ids: the table curves.csv holds."""
    ids = run_ids(results_dir)
    if not ids:
        raise FileNotFoundError(f"{results_dir}: no {RUNS_DIR}/<run_id>/{METRICS_FILE}")
    summary: dict[str, dict] = {}
    if os.path.isfile(os.path.join(results_dir, SUMMARY_FILE)):
        with open(os.path.join(results_dir, SUMMARY_FILE), newline="") as f:
            summary = {r["run_id"]: r for r in csv.DictReader(f)}
    lead = ["seed"] + [k for k in swept_keys(ids) if k != "seed"]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    for n, run_id in enumerate(ids):
        with open(os.path.join(results_dir, RUNS_DIR, run_id, METRICS_FILE), newline="") as f:
            rows = list(csv.reader(f))
        if n == 0:
            w.writerow(["run_id"] + lead + rows[0])
        cells = summary.get(run_id, {})
        w.writerows([run_id] + [cells.get(k, "") for k in lead] + row for row in rows[1:])
    return _read_csv(io.StringIO(out.getvalue()), as_text)


def read_curves(results_dir: str, as_text: bool = False) -> pd.DataFrame:
    """The learning curves of every run: results_dir/curves.csv when it exists,
    else curves_from_runs(results_dir) (the same table). as_text: as in
    read_summary."""
    path = os.path.join(results_dir, CURVES_FILE)
    if os.path.isfile(path):
        return _read_csv(path, as_text)
    return curves_from_runs(results_dir, as_text)
