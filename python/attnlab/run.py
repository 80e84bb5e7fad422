"""A finished run in PyTorch: its model with the trained weights, scored on its
test set with the metrics of attnlab's metrics.csv and `attnlab eval`.

    model = load_run("results/quickstart/runs/task.kind=lookup,seed=0").model()   # load_run: checkpoint.py
    metrics = evaluate_run("results/quickstart/runs/task.kind=lookup,seed=0")
"""

from __future__ import annotations

import numpy as np
import torch

from . import data
from .checkpoint import load_run
from .model import NO_TARGET, Reference


def load_model(config: dict, params: dict[str, np.ndarray], dtype=torch.float64,
               requires_grad: bool = False, facts: dict | None = None) -> Reference:
    """The PyTorch model of a config over named parameters (numpy arrays, e.g.
    from read_checkpoint), held in `dtype`; names and shapes are checked
    against the config and `facts` (read_run_facts: vocab, max_positions)."""
    tensors = {name: torch.tensor(a, dtype=dtype).requires_grad_(requires_grad) for name, a in params.items()}
    facts = facts or {}
    return Reference(config, tensors, vocab=facts.get("vocab"), max_positions=facts.get("max_positions"))


def evaluate(model: Reference, tokens, targets, batch: int | None = None) -> dict[str, float]:
    """Metrics over answer positions, as attnlab computes them: loss is the mean
    cross-entropy over every answer; token_acc the per-example fraction of
    right answers averaged over examples; seq_acc the fraction of examples
    with every answer right (examples without answers are left out).

    tokens, targets: (B, T) integer arrays (no target -1); batch: examples per
    forward (default: all at once); the result does not depend on it beyond
    rounding."""
    tokens = torch.as_tensor(np.asarray(tokens), dtype=torch.int64)
    targets = torch.as_tensor(np.asarray(targets), dtype=torch.int64)
    B, T = tokens.shape
    chunk = B if not batch else int(batch)
    loss_sum, answers = 0.0, 0
    right = torch.zeros(B, dtype=torch.int64)  # (B) right answers per example
    total = (targets != NO_TARGET).sum(1)  # (B) answers per example
    with torch.no_grad():
        for first in range(0, B, chunk):
            out = model.forward(tokens[first:first + chunk], targets[first:first + chunk])
            rows = out["rows"]  # (A) b*T + t within the chunk
            if rows.numel() == 0:
                continue
            pred = out["logits"].argmax(-1)  # (A)
            truth = targets[first:first + chunk].reshape(-1)[rows]
            right.index_add_(0, first + rows // T, (pred == truth).to(torch.int64))
            loss_sum += float(out["losses"].sum())
            answers += rows.numel()
    has = total > 0
    examples = int(has.sum())
    token_acc = float((right[has].double() / total[has].double()).sum()) / examples if examples else 0.0
    seq_acc = float((right[has] == total[has]).sum()) / examples if examples else 0.0
    return {"loss": loss_sum / answers if answers else 0.0, "token_acc": token_acc, "seq_acc": seq_acc}


def evaluate_run(run_dir: str, dtype=torch.float32) -> dict[str, float]:
    """A run's test metrics from its checkpoint and its regenerated test set:
    what `attnlab eval RUN_DIR` prints (loss, token_acc, seq_acc). In float32
    by default, as attnlab evaluates (and about 4 times faster than float64);
    dtype=torch.float64 for checks."""
    run = load_run(run_dir)
    config, model = run.config, run.model(dtype)
    tokens, targets = data.test_set(config)
    return evaluate(model, tokens, targets, batch=int(config["train"]["batch"]))
