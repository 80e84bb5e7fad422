"""A results folder in pandas (python3-pandas): summary.csv, one run's
metrics.csv, and the learning curves of every run as one long table.

    results/<name>/summary.csv             one row per finished run
    results/<name>/runs/<run_id>/metrics.csv   one row per evaluation
    results/<name>/curves.csv              (when present) every run's metrics.csv
                                           rows with run_id in front

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
_FLOAT_COLUMNS = ("loss", "token_acc", "seq_acc", "lr", "grad_norm", "tokens_per_s", "elapsed_s", "wall_s",
                  "final_test_loss", "final_test_token_acc", "final_test_seq_acc", "best_test_loss",
                  "best_test_token_acc", "best_test_seq_acc")


# Text even when every cell is empty (pandas would make that column float).
_TEXT_COLUMNS = ("run_id", "status", "split", "reason")


def _read_csv(path: str) -> pd.DataFrame:
    df = pd.read_csv(path, keep_default_na=False, na_values=_NA, dtype={"run_id": str})
    types = {c: "float64" for c in _FLOAT_COLUMNS if c in df.columns}
    types.update({c: "object" for c in _TEXT_COLUMNS if c in df.columns})
    return df.astype(types)


def read_summary(results_dir: str) -> pd.DataFrame:
    """results_dir/summary.csv: run_id, status, the swept keys, final and best
    test metrics, steps, wall_s, params, state sizes, reason."""
    return _read_csv(os.path.join(results_dir, SUMMARY_FILE))


def read_metrics(run_dir: str) -> pd.DataFrame:
    """run_dir/metrics.csv: step, split (train or test), loss, token_acc,
    seq_acc, lr, grad_norm, tokens_per_s, elapsed_s."""
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


def curves_from_runs(results_dir: str) -> pd.DataFrame:
    """Every results_dir/runs/<run_id>/metrics.csv in one DataFrame with a
    run_id column in front (run order of run_ids): the table curves.csv
    holds."""
    frames = []
    for run_id in run_ids(results_dir):
        m = read_metrics(os.path.join(results_dir, RUNS_DIR, run_id))
        m.insert(0, "run_id", run_id)
        frames.append(m)
    if not frames:
        raise FileNotFoundError(f"{results_dir}: no {RUNS_DIR}/<run_id>/{METRICS_FILE}")
    # Every frame has the same columns and dtypes, so int64 columns stay int64.
    return pd.concat(frames, ignore_index=True)


def read_curves(results_dir: str) -> pd.DataFrame:
    """The learning curves of every run: results_dir/curves.csv when it exists,
    else curves_from_runs(results_dir) (the same table)."""
    path = os.path.join(results_dir, CURVES_FILE)
    if os.path.isfile(path):
        return _read_csv(path)
    return curves_from_runs(results_dir)
