"""Training throughput of the PyTorch reference (python/attnlab/model.py) on one config.

Run by `attnlab bench train` for its side-by-side table (it writes the token
batch and calls this script once per thread setting), or by hand:

    /usr/bin/python3 reference/bench_torch.py --config '{"layers": 2, ...}' \
        --batch-file BATCH.bin --threads 1 --steps 10 --repeats 5

The step is what attnlab's trainer does: forward in float32, mean
cross-entropy at the answer positions, backward (autograd), global-norm
clipping at 1, AdamW (0.9, 0.95, eps 1e-8). Prints one JSON line:
{"threads": N, "tokens_per_s": [one figure per repeat], "step_s": [...]}.

BATCH.bin: int32 B, int32 T, then B*T int32 tokens, then B*T int32 targets
(-1 = no target), little-endian; every step trains on this batch (the data do
not change the cost).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# The model lives in the attnlab Python package (python/attnlab/model.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnlab.model import Reference  # noqa: E402


def read_batch(path: str) -> tuple[torch.Tensor, torch.Tensor]:
    with open(path, "rb") as f:
        data = f.read()
    B, T = struct.unpack("<ii", data[:8])
    arr = np.frombuffer(data[8:], dtype="<i4")
    if arr.size != 2 * B * T:
        raise ValueError(f"{path}: expected {2 * B * T} int32 after the header, found {arr.size}")
    tokens = torch.from_numpy(arr[:B * T].astype(np.int64).reshape(B, T))
    targets = torch.from_numpy(arr[B * T:].astype(np.int64).reshape(B, T))
    return tokens, targets


def init_params(ref_cfg: dict, seed: int) -> dict[str, torch.Tensor]:
    """docs/model.md initialisation (normal 0.02, residual outputs 0.02/sqrt(2L), gains 1, biases 0)."""
    g = torch.Generator().manual_seed(seed)
    probe = Reference.__new__(Reference)  # only for the names and shapes
    probe.cfg = ref_cfg
    m, a = ref_cfg["model"], ref_cfg["attention"]
    probe.layers, probe.D, probe.H = int(m["layers"]), int(m["d_model"]), int(m["heads"])
    probe.HS = probe.D // probe.H
    probe.position, probe.mlp, probe.att = m.get("position", "rope"), m.get("mlp", "swiglu"), dict(a)
    probe.in_gate = bool(a.get("in_gate", False))
    probe.out_gate = bool(a.get("out_gate", False)) or a["denominator"] == "gate"
    residual_std = 0.02 / math.sqrt(2 * probe.layers)
    params = {}
    for name, shape in probe.expected_shapes().items():
        if name.endswith(".bias"):
            t = torch.zeros(shape)
        elif "norm" in name:
            t = torch.ones(shape)
        else:
            std = residual_std if name.endswith(("attn.o.weight", "mlp.down.weight")) else 0.02
            t = torch.randn(shape, generator=g) * std
        params[name] = t.float().requires_grad_(True)
    return params


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="JSON: layers, d_model, heads, vocab, seq_len, numerator, order, denominator")
    ap.add_argument("--batch-file", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10, help="steps per repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    c = json.loads(args.config)
    att = {"numerator": c["numerator"], "denominator": c["denominator"], "eps": c.get("eps", 1e-6)}
    if c["numerator"] == "taylor":
        att["order"] = int(c["order"])
    ref_cfg = {
        "model": {"layers": c["layers"], "d_model": c["d_model"], "heads": c["heads"],
                  "position": c.get("position", "rope"), "mlp": c.get("mlp", "swiglu")},
        "attention": att,
        "task": {"kind": "lookup", "vocab": c["vocab"], "seq_len": c["seq_len"]},
    }
    tokens, targets = read_batch(args.batch_file)
    params = init_params(ref_cfg, seed=0)
    model = Reference(ref_cfg, params)
    matrices = [p for n, p in params.items() if p.dim() == 2]  # decay on matrices and embeddings only
    others = [p for n, p in params.items() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1}, {"params": others, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    plist = list(params.values())

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model.forward(tokens, targets)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(plist, 1.0)
        opt.step()
        return float(loss)

    for _ in range(args.warmup):
        step()
    B, T = tokens.shape
    tps, step_s = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        dt = time.perf_counter() - t0
        if not math.isfinite(loss):
            raise RuntimeError(f"loss not finite: {loss}")
        step_s.append(dt / args.steps)
        tps.append(args.steps * B * T / dt)
    print(json.dumps({"threads": args.threads, "tokens_per_s": tps, "step_s": step_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
