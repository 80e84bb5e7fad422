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

Every file is read as attnlab reads it (files.read_input: a regular file of
at most 1 GiB), and a run's metrics.csv is checked as attnlab checks it
before its rows are used (metrics_problem: the header's 9 columns, whole rows
of 9 cells, a step that never decreases, a split train, val or test, numbers
or empty cells): read_metrics raises a ValueError naming the file, the row
and the problem; curves_from_runs leaves such a run out with a warning, as
attnlab's curves.csv does.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import warnings

import pandas as pd

from .files import read_text

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


METRICS_COLUMNS = ("step", "split", "loss", "token_acc", "seq_acc", "lr", "grad_norm", "tokens_per_s", "elapsed_s")

# A cell attnlab's reader takes for a number (std::from_chars: decimal, inf, nan; no '+').
_NUMBER = re.compile(r"-?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?))")


def _is_number(cell: str) -> bool:
    if not _NUMBER.fullmatch(cell):
        return False
    finite_spelling = not re.search(r"[iInN]", cell)
    return not finite_spelling or math.isfinite(float(cell))  # 1e999 is out of range, as in C++


def metrics_problem(text: str, path: str) -> str:
    """Why a metrics.csv's text is not one attnlab accepts ("" when it is), in
    the binary's words (metrics_problem, lib/src/results/metrics_csv.cpp):
    "<path>: row 8: loss 'abc' is not a number", "<path>: row 3: cut short (no
    line end)", ..."""
    header = ",".join(METRICS_COLUMNS) + "\n"
    if not text.startswith(header):
        return f"{path}: its header is not {header[:-1]}"
    last_step = -1
    at, row = len(header), 0
    while at < len(text):
        nl = text.find("\n", at)
        row += 1
        where = f"{path}: row {row}: "
        if nl < 0:
            return where + "cut short (no line end)"
        cells = text[at:nl].split(",")
        at = nl + 1
        if len(cells) != len(METRICS_COLUMNS):
            return where + f"{len(cells)} cells, expected {len(METRICS_COLUMNS)}"
        step = int(cells[0]) if re.fullmatch(r"-?[0-9]+", cells[0]) and abs(int(cells[0])) < 2**31 else None
        if step is None or step < last_step:
            return where + f"step '{cells[0]}' is not a step at or after {max(last_step, 0)}"
        last_step = step
        if cells[1] not in ("train", "val", "test"):
            return where + f"split '{cells[1]}' is not train, val or test"
        for name, cell in zip(METRICS_COLUMNS[2:], cells[2:]):
            if cell and not _is_number(cell):
                return where + f"{name} '{cell[:40]}' is not a number"
    return ""


def _read_csv(path, as_text: bool = False) -> pd.DataFrame:
    if isinstance(path, (str, os.PathLike)):
        path = io.StringIO(read_text(path, "table"))
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
    not apply: NaN). A file attnlab would call damaged (metrics_problem: a
    ragged or cut row, a cell that is no number) raises a ValueError naming
    the file, the row and the problem."""
    path = os.path.join(run_dir, METRICS_FILE)
    text = read_text(path, "table")
    if problem := metrics_problem(text, path):
        raise ValueError(problem)
    return _read_csv(io.StringIO(text))


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
    in the run order of run_ids: the table curves.csv holds. A run whose
    metrics.csv attnlab would call damaged (metrics_problem) is left out with
    a warning naming the file and the problem, as attnlab's curves.csv leaves
    it out; ValueError when no run is left."""
    ids = run_ids(results_dir)
    if not ids:
        raise FileNotFoundError(f"{results_dir}: no {RUNS_DIR}/<run_id>/{METRICS_FILE}")
    summary: dict[str, dict] = {}
    if os.path.isfile(os.path.join(results_dir, SUMMARY_FILE)):
        summary_text = read_text(os.path.join(results_dir, SUMMARY_FILE), "table")
        summary = {r["run_id"]: r for r in csv.DictReader(io.StringIO(summary_text, newline=""))}
    lead = ["seed"] + [k for k in swept_keys(ids) if k != "seed"]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    problems = []
    for run_id in ids:
        path = os.path.join(results_dir, RUNS_DIR, run_id, METRICS_FILE)
        text = read_text(path, "table")
        if problem := metrics_problem(text, path):
            warnings.warn(f"curves: {run_id} left out ({problem})", stacklevel=2)
            problems.append(problem)
            continue
        rows = list(csv.reader(io.StringIO(text, newline="")))
        if out.tell() == 0:
            w.writerow(["run_id"] + lead + rows[0])
        cells = summary.get(run_id, {})
        w.writerows([run_id] + [cells.get(k, "") for k in lead] + row for row in rows[1:])
    if out.tell() == 0:
        raise ValueError(f"{results_dir}: every run's {METRICS_FILE} is damaged: " + "; ".join(problems))
    return _read_csv(io.StringIO(out.getvalue()), as_text)


def read_curves(results_dir: str, as_text: bool = False) -> pd.DataFrame:
    """The learning curves of every run: results_dir/curves.csv when it exists,
    else curves_from_runs(results_dir) (the same table). as_text: as in
    read_summary."""
    path = os.path.join(results_dir, CURVES_FILE)
    if os.path.isfile(path):
        return _read_csv(path, as_text)
    return curves_from_runs(results_dir, as_text)
