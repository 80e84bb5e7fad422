"""Training throughput of PyTorch on attnlab's model, written for speed in torch 1.13.

Run by `attnlab bench train` for its side-by-side table (it writes the token
batch and calls this script once per thread setting), or by hand:

    /usr/bin/python3 reference/bench_torch.py --config '{"layers": 2, ...}' \
        --batch-file BATCH.bin --threads 1 --steps 10 --repeats 5
    /usr/bin/python3 reference/bench_torch.py --config '{...}' --batch-file BATCH.bin --check

The step is what attnlab's trainer does: forward in float32, mean
cross-entropy at the answer positions, backward (autograd), global-norm
clipping at 1, AdamW (0.9, 0.95, eps 1e-8, weight decay 0.1 on matrices).
The model is python/attnlab/model.py's Reference, as a user after speed
would write it in torch 1.13 (which has no scaled_dot_product_attention):
  - q, k and v are one (3D, D) parameter and one product; SwiGLU's gate and
    up are one (2F, D) parameter and one product (the same maths: AdamW acts
    on each element alone, so the optimizer is the same too);
  - exp/softmax attention (and exp with any clamp) is masked
    matmul-softmax-matmul: scores scaled and masked with -inf in the product
    itself (baddbmm), then torch's softmax and its fused backward; other
    variants use the Reference's batched attention;
  - RoPE tables and the causal mask are made once; the final RMSNorm, the
    head and the loss run on the answer rows only;
  - gradients are set to None (no zeroing), clipping uses the foreach norm
    and scale, AdamW runs with foreach=True (torch 1.13 has no fused CPU
    AdamW);
  - torch.set_num_threads(threads); OpenBLAS (torch's BLAS on Debian) with
    the same thread count or with one, whichever runs two warm-up steps
    faster (set at run time: `bench train` starts this script with
    OPENBLAS_NUM_THREADS=1). OpenBLAS's threads help the products, but
    compete with torch's own spinning OpenMP threads on a small machine.
--check compares the loss and every gradient with the Reference in float64
(the same parameters and batch) and exits 1 on a relative error over 1e-9.
Prints one JSON line: {"threads": N, "blas_threads": M, "tokens_per_s": [one
figure per repeat], "step_s": [...]}.

BATCH.bin: int32 B, int32 T, then B*T int32 tokens, then B*T int32 targets
(-1 = no target), little-endian; every step trains on this batch (the data do
not change the cost).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# The model lives in the attnlab Python package (python/attnlab/model.py):
# installed by `cmake --install`, or on PYTHONPATH (`attnlab bench train` run
# from its build folder puts the source tree's python/ there).
from attnlab.model import NO_TARGET, RMSNORM_EPS, Reference, attention, rope_tables  # noqa: E402


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


def pick_blas_threads(step, threads: int) -> int | None:
    """OpenBLAS with torch's thread count or with one, whichever runs two steps faster (after one more)."""
    if threads == 1 or set_blas_threads(threads) is None:
        return set_blas_threads(1)
    timed = []
    for n in (threads, 1):
        set_blas_threads(n)
        step()
        t0 = time.perf_counter()
        step()
        step()
        timed.append((time.perf_counter() - t0, n))
    return set_blas_threads(min(timed)[1])


def set_blas_threads(n: int) -> int | None:
    """Sets the thread count of the OpenBLAS torch loaded; its count, or None without OpenBLAS."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "openblas" in line.split()[-1]})
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_set_num_threads(ctypes.c_int(n))
            return int(lib.openblas_get_num_threads())
        except (OSError, AttributeError):
            continue
    return None


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
    probe.short_conv = int(m.get("short_conv", 0))
    if probe.short_conv:  # the benchmark's PyTorch model (torch_forward) has none
        raise ValueError("bench_torch: model.short_conv is not benchmarked")
    probe.out_gate = bool(a.get("out_gate", False)) or a["denominator"] == "gate"
    # bench train gives the model's vocabulary and length as a lookup task of those sizes.
    probe.vocab, probe.max_positions = int(ref_cfg["task"]["vocab"]), int(ref_cfg["task"]["seq_len"])
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




def rmsnorm(x, weight):
    # (..., C): x / sqrt(mean(x^2) + eps) * weight
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMSNORM_EPS) * weight


class FastModel:
    """The Reference model over fused parameters (fuse_params), written for speed."""

    def __init__(self, ref_cfg: dict, params: dict[str, torch.Tensor], T: int):
        self.ref = Reference(ref_cfg, unfuse_params(ref_cfg, params))  # checks names and shapes
        self.P = params
        r = self.ref
        self.att = r.att
        dtype = params["embed.weight"].dtype
        # exp with a scale-invariant denominator and no gates: plain softmax attention
        self.softmax_attention = (r.att["numerator"] == "exp" and r.att["denominator"] == "softmax"
                                  and not r.att.get("detach_denominator", False)
                                  and not r.in_gate and not r.out_gate)
        self.scale = 1.0 / math.sqrt(r.HS)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        self.mask_bias = torch.zeros(T, T, dtype=dtype).masked_fill_(~mask, -math.inf)  # (T, T)
        if r.position == "rope":
            cos, sin = rope_tables(T, r.HS, dtype)  # (T, HS/2)
            # (T, 1, 1, 2, HS/2): both halves, the sine signed for the swapped halves
            self.cos = torch.stack((cos, cos), dim=1)[:, None, None]
            self.sin = torch.stack((-sin, sin), dim=1)[:, None, None]

    def rope(self, x):
        # x (B, T, n, H, HS), rotate-half pairs (a_i, b_i) = (x_i, x_{i+HS/2}):
        # (a, b) cos + (b, a) (-sin, sin). Swapping the halves with flip keeps the
        # backward free of slices (whose backward fills zeros).
        B, T, n, H, HS = x.shape
        x = x.view(B, T, n, H, 2, HS // 2)
        return (x * self.cos + x.flip(-2) * self.sin).view(B, T, n, H, HS)

    def attend(self, q, k, v, n, b):
        """q, k, v (B, T, H, HS) views -> o (B, T, D)."""
        r, P = self.ref, self.P
        B, T, H, HS = q.shape
        if self.softmax_attention:
            q, k, v = (t.transpose(1, 2).reshape(B * H, T, HS) for t in (q, k, v))
            if self.att.get("clamp") is None:  # scale and causal mask inside the product
                s = torch.baddbmm(self.mask_bias, q, k.transpose(1, 2), alpha=self.scale)
            else:
                s = torch.bmm(q, k.transpose(1, 2)).mul_(self.scale).clamp(max=float(self.att["clamp"]))
                s = s + self.mask_bias
            o = torch.bmm(torch.softmax(s, dim=-1), v)  # (B H, T, HS)
            return o.view(B, H, T, HS).transpose(1, 2).reshape(B, T, H * HS)

        def gate(name):  # sigmoid(a_h . n + b_h): (B, H, T)
            return torch.sigmoid(F.linear(n, P[name + ".weight"], P[name + ".bias"])).transpose(1, 2)

        o = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), self.att,
                      g_in=gate(b + "attn.in_gate") if r.in_gate else None,
                      g_out=gate(b + "attn.out_gate") if r.out_gate else None,
                      out_norm_w=P.get(b + "attn.out_norm.weight"), out_norm_b=P.get(b + "attn.out_norm.bias"))
        return o.transpose(1, 2).reshape(B, T, H * HS)

    def loss(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        r, P = self.ref, self.P
        B, T = tokens.shape
        H, HS = r.H, r.HS
        x = F.embedding(tokens, P["embed.weight"])  # (B, T, D)
        if r.position == "learned":
            x = x + P["pos.weight"][:T]
        for i in range(r.layers):
            b = f"blocks.{i}."
            n = rmsnorm(x, P[b + "attn_norm.weight"])
            # split, not slices: the backward of a split concatenates, that of a slice fills zeros
            qk, v = F.linear(n, P[b + "attn.qkv.weight"]).split([2 * r.D, r.D], dim=-1)
            qk = qk.view(B, T, 2, H, HS)
            if r.position == "rope":
                qk = self.rope(qk)
            q, k = qk.unbind(2)
            o = self.attend(q, k, v.view(B, T, H, HS), n, b)
            x = x + F.linear(o, P[b + "attn.o.weight"])
            if r.mlp == "none":
                continue
            n = rmsnorm(x, P[b + "mlp_norm.weight"])
            if r.mlp == "swiglu":
                gate, up = F.linear(n, P[b + "mlp.gate_up.weight"]).chunk(2, dim=-1)
                x = x + F.linear(F.silu(gate) * up, P[b + "mlp.down.weight"])
            else:  # gelu, exact (erf)
                h = F.gelu(F.linear(n, P[b + "mlp.up.weight"], P[b + "mlp.up.bias"]))
                x = x + F.linear(h, P[b + "mlp.down.weight"], P[b + "mlp.down.bias"])
        flat = targets.reshape(-1)
        rows = torch.nonzero(flat != NO_TARGET).reshape(-1)
        if rows.numel() == 0:
            return x.sum() * 0
        ans = rmsnorm(x.reshape(B * T, -1)[rows], P["norm.weight"])  # (A, D)
        return F.cross_entropy(F.linear(ans, P["head.weight"]), flat[rows])


def fuse_params(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Reference parameters -> FastModel's: q, k, v as one qkv; SwiGLU's gate and up as one gate_up."""
    out, taken = {}, set()
    for name in params:
        if name.endswith("attn.q.weight"):
            base = name[: -len("q.weight")]
            parts = [base + p + ".weight" for p in "qkv"]
            out[base + "qkv.weight"] = torch.cat([params[p].detach() for p in parts])
            taken.update(parts)
        elif name.endswith("mlp.gate.weight"):
            base = name[: -len("gate.weight")]
            parts = [base + "gate.weight", base + "up.weight"]
            out[base + "gate_up.weight"] = torch.cat([params[p].detach() for p in parts])
            taken.update(parts)
    for name, t in params.items():
        if name not in taken:
            out[name] = t.detach().clone()
    return {n: t.requires_grad_(True) for n, t in out.items()}


def unfuse_params(ref_cfg: dict, fused: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of fuse_params (views), e.g. to compare gradients with the Reference."""
    out = {}
    for name, t in fused.items():
        if name.endswith("attn.qkv.weight"):
            base = name[: -len("qkv.weight")]
            for p, part in zip("qkv", t.chunk(3)):
                out[base + p + ".weight"] = part
        elif name.endswith("mlp.gate_up.weight"):
            base = name[: -len("gate_up.weight")]
            out[base + "gate.weight"], out[base + "up.weight"] = t.chunk(2)
        else:
            out[name] = t
    return out


def check_against_reference(ref_cfg: dict, tokens, targets) -> float:
    """Largest relative error of FastModel's loss and gradients against the Reference's, in float64."""
    params = {n: t.detach().double().requires_grad_(True) for n, t in init_params(ref_cfg, seed=0).items()}
    fused = fuse_params(params)
    loss = Reference(ref_cfg, params).forward(tokens, targets)["loss"]
    loss.backward()
    ref_loss = float(loss)
    fast_loss = FastModel(ref_cfg, fused, tokens.shape[1]).loss(tokens, targets)
    fast_loss.backward()
    worst = abs(float(fast_loss) - ref_loss) / max(abs(ref_loss), 1e-300)
    grads = unfuse_params(ref_cfg, {n: t.grad for n, t in fused.items()})
    for name, p in params.items():
        diff = float((grads[name] - p.grad).abs().max())
        worst = max(worst, diff / max(float(p.grad.abs().max()), 1e-300))
    return worst


def clip_grad_norm(grads: list[torch.Tensor], max_norm: float) -> None:
    """attnlab's rule: scale by max_norm / norm when the global L2 norm is above max_norm."""
    norm = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
    if math.isfinite(norm) and norm > max_norm:
        torch._foreach_mul_(grads, max_norm / norm)

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="JSON: layers, d_model, heads, vocab, seq_len, numerator, order, denominator")
    ap.add_argument("--batch-file", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10, help="steps per repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--check", action="store_true", help="compare with the Reference in float64 instead of timing")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    c = json.loads(args.config)
    att = {"numerator": c["numerator"], "denominator": c["denominator"], "eps": c.get("eps", 1e-6)}
    if c["numerator"] == "taylor" or c["numerator"] == "power":
        att["order"] = int(c["order"])
    ref_cfg = {
        "model": {"layers": c["layers"], "d_model": c["d_model"], "heads": c["heads"],
                  "position": c.get("position", "rope"), "mlp": c.get("mlp", "swiglu")},
        "attention": att,
        "task": {"kind": "lookup", "vocab": c["vocab"], "seq_len": c["seq_len"]},
    }
    tokens, targets = read_batch(args.batch_file)
    if args.check:
        worst = check_against_reference(ref_cfg, tokens, targets)
        print(json.dumps({"max_rel_error": worst}))
        return 0 if worst <= 1e-9 else 1

    params = fuse_params(init_params(ref_cfg, seed=0))
    model = FastModel(ref_cfg, params, tokens.shape[1])
    matrices = [p for p in params.values() if p.dim() == 2]  # decay on matrices and embeddings only
    others = [p for p in params.values() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1}, {"params": others, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    plist = list(params.values())

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model.loss(tokens, targets)
        loss.backward()
        clip_grad_norm([p.grad for p in plist], 1.0)
        opt.step()
        return float(loss)

    blas_threads = pick_blas_threads(step, args.threads)
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
    print(json.dumps({"threads": args.threads, "blas_threads": blas_threads, "tokens_per_s": tps, "step_s": step_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
