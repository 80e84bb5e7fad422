"""The runs of a results folder for scripts/plot_sweep.py: read through the
attnlab Python package (installed, or python/ on PYTHONPATH), and their names in the figures. Standard library and the package
only (no matplotlib).
"""
import math
import os
from collections import OrderedDict

from plot_style import InputError

# The attnlab package (installed by `cmake --install` or pip, or python/ on
# PYTHONPATH); its variants module is standard library only.
from attnlab import variants  # noqa: E402

READABLE = {
    "attention.numerator": "numerator",
    "attention.order": "Taylor order",
    "attention.denominator": "denominator",
    "attention.clamp": "score clamp",
    "attention.in_gate": "input gate",
    "attention.out_gate": "output gate",
    "attention.detach_denominator": "detached denominator",
    "model.heads": "heads",
    "model.d_model": "model width",
    "model.layers": "layers",
    "model.mlp": "MLP",
    "model.position": "positions",
    "train.lr": "learning rate",
    "train.steps": "steps",
    "train.batch": "batch",
    "task.kind": "task",
}
# ---------------------------------------------------------------- reading
# Through the attnlab package (python/attnlab: summary.csv, curves.csv or the
# runs' metrics.csv, config.yaml, spec.yaml), with every cell as attnlab wrote it.


def attnlab_package():
    """The attnlab package, with its pandas and yaml readers."""
    try:
        import attnlab.checkpoint
        import attnlab.files
        import attnlab.results
    except ImportError as e:
        raise InputError(f"cannot import the attnlab package ({e}); it needs Debian's python3-pandas and "
                         "python3-yaml: apt-get install python3-pandas python3-yaml")
    return attnlab


def number(cell):
    """A cell as a float, None when empty or not finite (a value that does not apply)."""
    if cell is None or (isinstance(cell, str) and cell.strip() == ""):
        return None
    try:
        v = float(cell)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def flat_config(tree, prefix=""):
    """A config.yaml or spec section as {dotted key: text}; booleans spelt as attnlab writes them."""
    flat = {}
    for key, value in (tree or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_config(value, name + "."))
        else:
            flat[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return flat


def base_task_kind(results_dir, attnlab):
    """task.kind of the spec's base (spec.yaml of the folder), for runs that do not sweep it; "" if unknown."""
    path = os.path.join(results_dir, "spec.yaml")
    if not os.path.exists(path):
        return ""
    import yaml  # python3-yaml

    # A spec, not a run's config.yaml: read as attnlab reads a spec (a regular file of at most 4 MiB).
    spec = yaml.safe_load(attnlab.files.read_text(path, "spec")) or {}
    return flat_config(spec.get("base") if isinstance(spec, dict) else None).get("task.kind", "")


class Run:
    """One row of summary.csv, with its config.yaml (when present) for keys that are not swept."""

    def __init__(self, row, config):
        self.row = row
        self.config = config
        self.id = row["run_id"]
        self.curves = []  # metrics rows: dicts of step, split, loss, bits_per_byte, token_acc, seq_acc

    def get(self, key):
        v = self.row.get(key, "")
        return v if v not in ("", None) else self.config.get(key, "")

    def final(self, metric):
        if metric == "bits_per_byte":  # the loss in nats / ln 2 (also for summaries without that column)
            loss = self.final("loss")
            return loss / math.log(2) if loss is not None else None
        return number(self.row.get(f"final_test_{metric}"))

    @property
    def lr_selected(self):
        return self.row.get("lr_selected", "").strip().lower() == "true"

    @property
    def diverged(self):
        return self.row.get("status", "ok") == "diverged"

    def heads(self):
        h = number(self.get("model.heads"))
        return int(h) if h else None

    def head_size(self):
        d, h = number(self.get("model.d_model")), self.heads()
        return int(d) // h if d and h else None


def read_results(results_dir):
    """The runs of summary.csv, each with its metrics rows, and the swept keys (seed included)."""
    if not os.path.isdir(results_dir):
        raise InputError(f"{results_dir} is not a directory")
    summary = os.path.join(results_dir, "summary.csv")
    if not os.path.exists(summary):
        raise InputError(f"{summary} not found: RESULTS_DIR must be a folder written by `attnlab run` "
                         "or `attnlab summarize`")
    attnlab = attnlab_package()
    table = attnlab.results.read_summary(results_dir, as_text=True)
    needed = ["run_id", "status", "final_test_token_acc", "final_test_seq_acc"]
    absent = [c for c in needed if c not in table.columns]
    if absent:
        raise InputError(f"{summary}: no column {', '.join(absent)} (not a summary written by attnlab)")
    if table.empty:
        raise InputError(f"{summary} lists no runs")
    runs = []
    for row in table.to_dict("records"):
        config = os.path.join(results_dir, "runs", row["run_id"], "config.yaml")
        runs.append(Run(row, flat_config(attnlab.checkpoint.read_config(config)) if os.path.exists(config) else {}))
    attach_curves(results_dir, runs, attnlab)
    return runs, attnlab.results.swept_keys([r.id for r in runs]), base_task_kind(results_dir, attnlab)


def metrics_row(m, source):
    try:
        step = int(m["step"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{source}: a row without a step ({m})")
    row = {"step": step, "split": (m.get("split") or "").strip()}
    for k in ("loss", "token_acc", "seq_acc"):
        row[k] = number(m.get(k))
    row["bits_per_byte"] = row["loss"] / math.log(2) if row["loss"] is not None else None
    return row


def attach_curves(results_dir, runs, attnlab):
    """Metrics rows of every run: from curves.csv when present, else from runs/<id>/metrics.csv."""
    combined = os.path.join(results_dir, "curves.csv")
    if not os.path.exists(combined):
        absent = [p for p in (os.path.join(results_dir, "runs", r.id, "metrics.csv") for r in runs)
                  if not os.path.exists(p)]
        if absent:
            raise InputError(f"metrics of {len(absent)} run(s) of summary.csv are missing (no curves.csv, no "
                             f"{absent[0]}{' ...' if len(absent) > 1 else ''})")
    table = attnlab.results.read_curves(results_dir, as_text=True)
    source = combined if os.path.exists(combined) else os.path.join(results_dir, "runs")
    if "run_id" not in table.columns or "step" not in table.columns:
        raise InputError(f"{source}: no run_id or step column")
    by_id = {r.id: r for r in runs}
    for m in table.to_dict("records"):
        if m["run_id"] in by_id:
            by_id[m["run_id"]].curves.append(metrics_row(m, source))
    absent = [r.id for r in runs if not r.curves]
    if absent:
        raise InputError(f"{source} has no rows for {len(absent)} run(s) of summary.csv, e.g. {absent[0]}")


# ---------------------------------------------------------------- naming


def readable(key):
    return READABLE.get(key, key.split(".")[-1].replace("_", " "))


def variant_name(run):
    """exp, elu1, taylor 2, power 4 ...: the numerator with its order where it takes one, as attnlab's
    outputs label it (attnlab.variants.numerator_label; a clamp is named by describe)."""
    return variants.numerator_label(run.get("attention.numerator"), run.get("attention.order"))


def takes_order(run):
    return variants.takes_order(run.get("attention.numerator"))


def heads_name(run):
    h, hs = run.heads(), run.head_size()
    if h is None:
        return "heads ?"
    return f"{h} head{'s' if h != 1 else ''}" + (f" of {hs}" if hs else "")


def piece(run, key):
    v = run.get(key)
    if key == "attention.denominator":
        # The labels of docs/attention.md "The papers' names": `gate` divides by t, the paper's gate is
        # `none` with an output gate.
        if v == "gate":
            return "gate / t"
        if v == "none" and run.get("attention.out_gate") == "true":
            return "paper's gate"
        return v
    if key == "attention.out_gate" and run.get("attention.denominator") == "none":
        return ""  # named with the denominator
    if key == "attention.clamp":
        return f"clamp {v}" if v else ""
    if key == "model.heads":
        return heads_name(run)
    if v in ("true", "false"):  # a switch: named when on ("output gate"), left out when off
        return readable(key) if v == "true" else ""
    return f"{readable(key)} {v}" if v else ""


def describe(run, keys):
    """Name of a run's setting of `keys` ("taylor 2, softmax", "8 heads of 8")."""
    parts, named_variant = [], False
    for k in keys:
        if k in ("attention.numerator", "attention.order"):
            if not named_variant:
                parts.append(variant_name(run))
                named_variant = True
        else:
            parts.append(piece(run, k))
    return ", ".join(p for p in parts if p)


def legend_title(keys):
    names = []
    for k in keys:
        name = "numerator" if k in ("attention.numerator", "attention.order") else readable(k)
        if name not in names:
            names.append(name)
    return ", ".join(names)


# ---------------------------------------------------------------- grouping


def varying_keys(runs, swept):
    """Swept keys (not the seed) whose value differs between these runs."""
    return [k for k in swept if k != "seed" and len({r.get(k) for r in runs}) > 1]


def group_by(runs, name_of):
    groups = OrderedDict()
    for r in runs:
        groups.setdefault(name_of(r), []).append(r)
    return groups
