"""PyTorch reference of the attnlab model (docs/attention.md attention variants, §3 model).

An independent, batched implementation used to cross-check attnlab's C++
forward and backward passes (reference/crosscheck.py): the same parameters
(read by parameter name from an attnlab safetensors checkpoint) and the same token
batch must give the same loss, logits and gradients. Gradients come from
torch autograd, not from hand-written derivatives, so they check attnlab's
backward passes independently.

Everything is batched over (batch, head, time): the only Python loops run over
layers and Taylor orders, so the model can be timed as it is.

    x = embed[tokens] (+ pos[t] for position: learned)
    per block:  n = RMSNorm(x);  x += o(Attn(n));  x += MLP(RMSNorm(x))
    (with model.short_conv K: q, k, v = a causal depthwise convolution of their
    projections over time, before RoPE; see short_conv)
    logits = head(RMSNorm(x)) at answer positions;  loss = mean CE there

Attention, per head, j <= t (docs/attention.md):
    score kernels   w_tj = f(min(s_tj, clamp)),  s_tj = q_t . k_j / sqrt(d)
    feature kernels w_tj = phi(q_t) . phi(k_j)
    u_t = sum_j w_tj g_in_j v_j,  z_t = sum_j w_tj,  o_t = g_out_t * D(u_t, z_t, t)
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
import torch.nn.functional as F

RMSNORM_EPS = 1e-6  # docs/model.md: every RMSNorm of the model
ROPE_BASE = 10000.0
NO_TARGET = -1

# The variants' names, families and signs: attnlab's variant table (variants.py).
from .variants import (DENOMINATORS, FEATURE_KERNELS, NUMERATORS, SCALE_INVARIANT,  # noqa: E402,F401
                       SCORE_KERNELS, sign)

# ---------------------------------------------------------------- safetensors

from .checkpoint import read_config, read_safetensors  # noqa: E402,F401 (crosscheck.py reads its dumps with it)


def load_params(path: str, dtype=torch.float64, requires_grad=True) -> dict[str, torch.Tensor]:
    """Parameters of an attnlab checkpoint as leaf tensors (docs/model.md names)."""
    return {name: torch.tensor(a, dtype=dtype).requires_grad_(requires_grad)
            for name, a in read_safetensors(path).items()}


def load_run_config(path: str) -> dict:
    """A run's config.yaml (written by attnlab's run_config_to_yaml) as nested dicts."""
    return read_config(path)

# ---------------------------------------------------------------- layers


def rmsnorm(x, weight, eps=RMSNORM_EPS):
    # (..., C): x / sqrt(mean(x^2) + eps) * weight
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def rope_tables(T: int, HS: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (T, HS/2): angle t * base^(-2i/HS), positions from 0."""
    i = torch.arange(HS // 2, dtype=torch.float64)
    theta = ROPE_BASE ** (-2.0 * i / HS)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def rope(x, cos, sin):
    # x (B, H, T, HS), rotate-half: pairs (x_i, x_{i+HS/2})
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


def short_conv(x, w):
    """Causal depthwise convolution over time: x (B, T, C), w (K, C);
    y[t] = sum_i w[i] * x[t - i], zero before each sequence's start."""
    T = x.shape[1]
    y = x * w[0]
    for i in range(1, w.shape[0]):
        y = y + F.pad(x, (0, 0, i, 0))[:, :T] * w[i]  # x shifted i steps later
    return y


def taylor_exp(s, order: int):
    # sum_{m=0..n} s^m/m! by Horner's rule: 1 + s(1 + s/2(1 + ... (1 + s/n)))
    w = torch.ones_like(s)
    for m in range(order, 0, -1):
        w = 1.0 + w * s / m
    return w


def feature_map(name: str, x, eps: float):
    if name == "elu1":  # elu(x) + 1 = x + 1 (x > 0), exp(x) otherwise
        return torch.where(x > 0, x + 1.0, torch.exp(torch.clamp(x, max=0.0)))
    if name == "relu":
        return torch.relu(x)
    if name == "cosine":  # x / max(|x|, eps)
        return x / torch.clamp(torch.linalg.vector_norm(x, dim=-1, keepdim=True), min=eps)
    raise ValueError(f"unknown feature kernel {name!r}")


def attention(q, k, v, att: dict, g_in=None, g_out=None, out_norm_w=None, out_norm_b=None, diag=None):
    """Causal attention of one layer for any docs/attention.md variant.

    q, k, v (B, H, T, HS); g_in, g_out (B, H, T) gates in (0, 1) or None;
    out_norm_w, out_norm_b (HS) for the rmsnorm/layernorm denominators.
    Returns o (B, H, T, HS). `diag` (a dict) receives the smallest |z_t| and the
    largest sum_j |w_tj| / |z_t| of a softmax denominator (its conditioning).
    """
    T, HS = q.shape[-2], q.shape[-1]
    num, den = att["numerator"], att["denominator"]
    eps = float(att.get("eps", 1e-6))
    detach = bool(att.get("detach_denominator", False))
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()

    if num in SCORE_KERNELS:
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(HS))  # (B, H, T, T)
        if att.get("clamp") is not None:
            s = torch.clamp(s, max=float(att["clamp"]))
        s = torch.where(causal, s, torch.zeros((), dtype=s.dtype))  # finite above the diagonal
        if att.get("score_weights") is not None:  # a callable (s, causal) -> w: another function of the
            w = att["score_weights"](s, causal)    # scores in exp's place (polynomials.py's truncations)
        elif num == "exp":
            if den in SCALE_INVARIANT:
                m = torch.where(causal, s, torch.full((), -math.inf, dtype=s.dtype)).amax(-1, keepdim=True)
                if detach:  # the shift is part of the constant denominator then
                    m = m.detach()
                w = torch.exp(s - m)
            else:
                w = torch.exp(s)
        elif num == "taylor":
            w = taylor_exp(s, int(att["order"]))
        elif num == "power":  # the order-n term alone
            n = int(att["order"])
            w = s**n / math.factorial(n)
        elif num == "linear":
            w = s
        else:
            raise ValueError(f"no PyTorch maths for the score kernel {num!r} (add it here)")
    elif num in FEATURE_KERNELS:
        w = feature_map(num, q, eps) @ feature_map(num, k, eps).transpose(-1, -2)
    else:
        raise ValueError(f"unknown numerator {num!r}")
    w = torch.where(causal, w, torch.zeros((), dtype=w.dtype))  # (B, H, T, T)

    vg = v if g_in is None else v * g_in[..., None]
    u = w @ vg  # (B, H, T, HS)
    if den == "softmax":
        z = w.sum(-1)  # (B, H, T)
        # kernels whose weights are >= 0 but can all be 0 get eps, as fast-transformers does
        added = eps if sign(num, att.get("order")) == "non_negative" else 0.0
        if diag is not None:
            with torch.no_grad():
                az = (z + added).abs()  # the divisor, as attnlab reports it
                diag["min_abs_z"] = min(diag.get("min_abs_z", math.inf), float(az.min()))
                cond = float((w.abs().sum(-1) / az).max())
                diag["max_cond_z"] = max(diag.get("max_cond_z", 0.0), cond)
        if detach:
            z = z.detach()
        o = u / (z + added)[..., None]
    elif den == "norm":
        o = u / torch.clamp(torch.linalg.vector_norm(u, dim=-1, keepdim=True), min=eps)
    elif den == "rmsnorm":
        o = out_norm_w * u * torch.rsqrt((u * u).mean(-1, keepdim=True) + eps)
    elif den == "layernorm":
        mean = u.mean(-1, keepdim=True)
        var = ((u - mean) ** 2).mean(-1, keepdim=True)  # biased
        o = out_norm_w * (u - mean) * torch.rsqrt(var + eps) + out_norm_b
    elif den in ("gate", "length"):  # u_t / t; `gate` adds its output gate below
        t = torch.arange(1, T + 1, dtype=u.dtype, device=u.device)
        o = u / t[:, None]
    elif den == "none":
        o = u
    else:
        raise ValueError(f"unknown denominator {den!r}")
    if g_out is not None:
        o = o * g_out[..., None]
    return o

# ---------------------------------------------------------------- model


class Reference:
    """The docs/model.md model over a dict of named parameter tensors.

    cfg: a run configuration as nested dicts (the layout of config.yaml);
    params: parameter name (docs/model.md) -> tensor (e.g. from load_params);
    vocab, max_positions: the run's facts (read_run_facts), checked against
    the parameters; by default the embedding's and pos.weight's rows. Every computation
    runs in the parameters' dtype.
    """

    def __init__(self, cfg: dict, params: dict[str, torch.Tensor], vocab: int | None = None,
                 max_positions: int | None = None):
        self.cfg = cfg
        self.params = params
        if "embed.weight" not in params:
            raise ValueError("checkpoint does not match the config: missing ['embed.weight']")
        self.vocab = int(vocab) if vocab is not None else int(params["embed.weight"].shape[0])
        pos = params.get("pos.weight")
        self.max_positions = (int(max_positions) if max_positions is not None
                              else int(pos.shape[0]) if pos is not None else None)
        m, a = cfg["model"], cfg["attention"]
        self.layers = int(m["layers"])
        self.D = int(m["d_model"])
        self.H = int(m["heads"])
        self.HS = self.D // self.H
        self.position = m.get("position", "rope")
        self.mlp = m.get("mlp", "swiglu")
        self.short_conv = int(m.get("short_conv", 0))
        self.att = dict(a)
        if a["numerator"] not in NUMERATORS or a["denominator"] not in DENOMINATORS:
            raise ValueError(f"unknown variant {a['numerator']}/{a['denominator']}")
        self.in_gate = bool(a.get("in_gate", False))
        self.out_gate = bool(a.get("out_gate", False)) or a["denominator"] == "gate"
        self._check_names()

    def expected_names(self) -> list[str]:
        names = ["embed.weight"] + (["pos.weight"] if self.position == "learned" else [])
        den = self.att["denominator"]
        for i in range(self.layers):
            b = f"blocks.{i}."
            names += [b + "attn_norm.weight"] + [b + f"attn.{p}.weight" for p in "qkvo"]
            if self.short_conv:
                names += [b + "attn.short_conv.weight"]
            if self.in_gate:
                names += [b + "attn.in_gate.weight", b + "attn.in_gate.bias"]
            if self.out_gate:
                names += [b + "attn.out_gate.weight", b + "attn.out_gate.bias"]
            if den in ("rmsnorm", "layernorm"):
                names += [b + "attn.out_norm.weight"] + ([b + "attn.out_norm.bias"] if den == "layernorm" else [])
            if self.mlp != "none":
                names += [b + "mlp_norm.weight"]
            if self.mlp == "swiglu":
                names += [b + "mlp.gate.weight", b + "mlp.up.weight", b + "mlp.down.weight"]
            elif self.mlp == "gelu":
                names += [b + "mlp.up.weight", b + "mlp.up.bias", b + "mlp.down.weight", b + "mlp.down.bias"]
        return names + ["norm.weight", "head.weight"]

    def expected_shapes(self) -> dict[str, tuple]:
        """docs/model.md shapes. The vocabulary and the learned positions' rows
        are the run's facts (the checkpoint's metadata, read_run_facts), else
        those of the parameters themselves: never worked out from the task."""
        V, T_max = self.vocab, self.max_positions
        D, H, HS = self.D, self.H, self.HS
        if self.mlp == "swiglu":
            F_ = int(self.cfg["model"].get("mlp_hidden", 0)) or -(-D // 3) * 8  # ceil(8D/3) up to a multiple of 8
        else:
            F_ = 4 * D
        shapes = {}
        for name in self.expected_names():
            leaf = name.split(".")[-2] + "." + name.split(".")[-1]
            if name == "embed.weight" or name == "head.weight":
                shapes[name] = (V, D)
            elif name == "pos.weight":
                shapes[name] = (T_max, D)
            elif leaf in ("q.weight", "k.weight", "v.weight", "o.weight"):
                shapes[name] = (D, D)
            elif leaf == "short_conv.weight":
                shapes[name] = (self.short_conv, 3 * D)
            elif leaf in ("in_gate.weight", "out_gate.weight"):
                shapes[name] = (H, D)
            elif leaf in ("in_gate.bias", "out_gate.bias"):
                shapes[name] = (H,)
            elif leaf.startswith("out_norm."):
                shapes[name] = (HS,)
            elif leaf in ("gate.weight", "up.weight"):
                shapes[name] = (F_, D)
            elif leaf == "up.bias":
                shapes[name] = (F_,)
            elif leaf == "down.weight":
                shapes[name] = (D, F_)
            else:  # norm gains, mlp.down.bias
                shapes[name] = (D,)
        return shapes

    def _check_names(self):
        want, have = set(self.expected_names()), set(self.params)
        if want != have:
            raise ValueError(f"checkpoint does not match the config: missing {sorted(want - have)}, "
                             f"extra {sorted(have - want)}")
        for name, shape in self.expected_shapes().items():
            if tuple(self.params[name].shape) != shape:
                raise ValueError(f"{name}: shape {tuple(self.params[name].shape)}, docs/model.md says {shape}")

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor, diag: dict | None = None) -> dict:
        """tokens, targets (B, T) int64 (no target = -1). Returns a dict with
        loss (mean CE over answer positions), logits (A, V) at the answer rows,
        rows (A) = b*T + t, losses (A)."""
        P = self.params
        B, T = tokens.shape
        D, H, HS = self.D, self.H, self.HS
        dtype = P["embed.weight"].dtype
        x = P["embed.weight"][tokens]  # (B, T, D)
        if self.position == "learned":
            x = x + P["pos.weight"][:T][None]
        if self.position == "rope":
            cos, sin = rope_tables(T, HS, dtype)

        def heads(y):  # (B, T, D) -> (B, H, T, HS)
            return y.view(B, T, H, HS).transpose(1, 2)

        def gate(n, name):  # sigmoid(a_h . n + b_h): (B, T, D) -> (B, H, T)
            return torch.sigmoid(F.linear(n, P[name + ".weight"], P[name + ".bias"])).transpose(1, 2)

        for i in range(self.layers):
            b = f"blocks.{i}."
            n = rmsnorm(x, P[b + "attn_norm.weight"])
            q, k, v = (F.linear(n, P[b + f"attn.{p}.weight"]) for p in "qkv")  # (B, T, D) each
            if self.short_conv:  # one (K, 3D) weight over [q | k | v]
                q, k, v = short_conv(torch.cat((q, k, v), -1), P[b + "attn.short_conv.weight"]).split(D, -1)
            q, k, v = heads(q), heads(k), heads(v)
            if self.position == "rope":
                q, k = rope(q, cos, sin), rope(k, cos, sin)
            o = attention(
                q, k, v, self.att,
                g_in=gate(n, b + "attn.in_gate") if self.in_gate else None,
                g_out=gate(n, b + "attn.out_gate") if self.out_gate else None,
                out_norm_w=P.get(b + "attn.out_norm.weight"),
                out_norm_b=P.get(b + "attn.out_norm.bias"),
                diag=diag,
            )
            x = x + F.linear(o.transpose(1, 2).reshape(B, T, D), P[b + "attn.o.weight"])
            if self.mlp == "none":
                continue
            n = rmsnorm(x, P[b + "mlp_norm.weight"])
            if self.mlp == "swiglu":
                h = F.silu(F.linear(n, P[b + "mlp.gate.weight"])) * F.linear(n, P[b + "mlp.up.weight"])
                x = x + F.linear(h, P[b + "mlp.down.weight"])
            else:  # gelu, exact (erf)
                h = F.gelu(F.linear(n, P[b + "mlp.up.weight"], P[b + "mlp.up.bias"]))
                x = x + F.linear(h, P[b + "mlp.down.weight"], P[b + "mlp.down.bias"])
        lnf = rmsnorm(x, P["norm.weight"]).reshape(B * T, D)
        flat = targets.reshape(-1)
        rows = torch.nonzero(flat != NO_TARGET).reshape(-1)
        logits = F.linear(lnf[rows], P["head.weight"])  # (A, V)
        losses = F.cross_entropy(logits, flat[rows], reduction="none")
        loss = losses.mean() if rows.numel() else logits.sum() * 0
        return {"loss": loss, "logits": logits, "rows": rows, "losses": losses}
