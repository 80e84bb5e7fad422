"""attnlab's attention variants and model as torch.nn modules (docs/engines.md).

A drop-in attention layer for other models and the model the PyTorch engine
(attnlab.train) trains, with the parameter names of attnlab's checkpoints
(docs/model.md), so `model.state_dict()` is a model.safetensors and back.

    from attnlab.layers import Attention, Transformer
    att = Attention(d_model=256, heads=4, numerator="taylor", order=2, denominator="norm")
    y = att(x)                          # x (B, T, 256) -> (B, T, 256), causal
    y = att(x, form="chunked")          # the finite-state form, chunks of 64 steps
    y = att(x, form="recurrent")        # step by step with a fixed-size state

Every numerator and denominator of attnlab's variant table (variants.json) is
here in three forms that compute the same function:

  parallel   the quadratic form: all scores of a sequence at once, (B, H, T, T)
             (exp with the softmax denominator goes through
             torch's scaled_dot_product_attention where torch has it (2.0+): flash or memory-efficient
             kernels on a GPU, nothing T x T stored);
  chunked    for the numerators with a finite state (every one but exp and a
             clamped score kernel): within a chunk of C steps the quadratic
             form (the score kernels as a polynomial of s = q.k/sqrt(HS), not
             through features), across chunks the state S = sum_j phi(k_j) v_j^T,
             all chunks at once (state_blocks: degrees 0-2 as full tensor
             powers); the backward keeps T C weights per head instead of T^2,
             recomputing large states (RECOMPUTE_STATES; docs/engines.md,
             "The chunked form", measures when it pays);
  recurrent  one state update per step in a Python loop, as the model would
             run at generation time (slow: for checks and generation).

The feature map phi of the recurrent form (docs/attention.md, "Recurrent
form"): for taylor of order n the concatenation over m = 0..n of the symmetric
tensor powers, phi_m(x)_alpha = x^alpha sqrt(1/alpha!) / d^(m/4) over the
multi-indices |alpha| = m (C(d+m-1, m) entries), so that phi(q).phi(k) =
sum_m s^m/m!; power keeps m = n; linear is m = 1; elu1, relu and cosine are
their own maps.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from .variants import DENOMINATORS, FEATURE_KERNELS, NUMERATORS, SCALE_INVARIANT, SCORE_KERNELS, sign

RMSNORM_EPS = 1e-6
ROPE_BASE = 10000.0
NO_TARGET = -1
FORMS = ("parallel", "chunked", "recurrent")


# ---------------------------------------------------------------- variant maths


def variant(numerator: str = "exp", denominator: str = "softmax", order: int | None = None,
            clamp: float | None = None, eps: float = 1e-6, in_gate: bool = False, out_gate: bool = False,
            detach_denominator: bool = False) -> dict:
    """An attention section (config.yaml's `attention:`) checked against the
    variant table: the dict every function here takes."""
    if numerator not in NUMERATORS:
        raise ValueError(f"unknown numerator {numerator!r}; one of {sorted(NUMERATORS)}")
    if denominator not in DENOMINATORS:
        raise ValueError(f"unknown denominator {denominator!r}; one of {sorted(DENOMINATORS)}")
    if numerator in ("taylor", "power") and (order is None or int(order) < 1):
        raise ValueError(f"numerator {numerator} needs order >= 1")
    att = {"numerator": numerator, "denominator": denominator, "eps": float(eps), "in_gate": bool(in_gate),
           "out_gate": bool(out_gate), "detach_denominator": bool(detach_denominator)}
    if order is not None and numerator in ("taylor", "power"):
        att["order"] = int(order)
    if clamp is not None:
        att["clamp"] = float(clamp)
    return att


def has_finite_state(att: dict) -> bool:
    """Whether the variant has the chunked and recurrent forms: every numerator
    but exp, and no clamp (min(s, c) is not an inner product of features)."""
    return att["numerator"] != "exp" and att.get("clamp") is None


def _horner(s, order: int):
    # sum_{m=0..n} s^m/m! by Horner's rule: 1 + s(1 + s/2(1 + ... (1 + s/n)))
    w = torch.ones_like(s)
    for m in range(order, 0, -1):
        w = 1.0 + w * s / m
    return w


class _TaylorExp(torch.autograd.Function):
    """The series keeping s alone for the backward (its derivative is the
    series of order n - 1), where autograd through Horner's rule keeps one
    tensor of s's size per order: (B, H, T, T) each in the parallel form."""

    @staticmethod
    def forward(ctx, s, order: int):
        ctx.order = order
        ctx.save_for_backward(s)
        return _horner(s, order)

    @staticmethod
    def backward(ctx, g):  # differentiable again (double backward)
        (s,) = ctx.saved_tensors
        return g * _horner(s, ctx.order - 1), None


def taylor_exp(s, order: int):
    """sum_{m=0..n} s^m/m!."""
    return _TaylorExp.apply(s, int(order)) if s.requires_grad else _horner(s, int(order))


def feature_map(name: str, x, eps: float):
    """phi of a feature kernel, elementwise over the last dimension (HS)."""
    if name == "elu1":  # elu(x) + 1 = x + 1 (x > 0), exp(x) otherwise
        return torch.where(x > 0, x + 1.0, torch.exp(torch.clamp(x, max=0.0)))
    if name == "relu":
        return torch.relu(x)
    if name == "cosine":  # x / max(|x|, eps)
        return x / torch.clamp(torch.linalg.vector_norm(x, dim=-1, keepdim=True), min=eps)
    raise ValueError(f"unknown feature kernel {name!r}")


_power_index_cache: dict = {}


def _power_indices(d: int, m: int, device):
    """Multi-indices |alpha| = m over d coordinates, as m index columns
    (C(d+m-1, m), m), and sqrt(m!/alpha!) per row."""
    key = (d, m, str(device))
    if key not in _power_index_cache:
        rows = list(itertools.combinations_with_replacement(range(d), m))
        idx = torch.tensor(rows, dtype=torch.long, device=device).reshape(len(rows), m)
        coef = []
        for r in rows:
            alpha_fact = 1
            for c in set(r):
                alpha_fact *= math.factorial(r.count(c))
            coef.append(math.sqrt(math.factorial(m) / alpha_fact))
        _power_index_cache[key] = (idx, torch.tensor(coef, dtype=torch.float64, device=device))
    return _power_index_cache[key]


def symmetric_power(x, m: int):
    """phi_m(x) (..., C(d+m-1, m)) with phi_m(q).phi_m(k) = (q.k)^m / m!."""
    d = x.shape[-1]
    if m == 0:
        return torch.ones(*x.shape[:-1], 1, dtype=x.dtype, device=x.device)
    idx, coef = _power_indices(d, m, x.device)
    prod = x[..., idx[:, 0]]
    for c in range(1, m):
        prod = prod * x[..., idx[:, c]]
    return prod * (coef.to(x.dtype) / math.sqrt(math.factorial(m)))


def features(x, att: dict):
    """phi(x) of a finite-state variant, x (..., HS) -> (..., F)."""
    num = att["numerator"]
    if num in FEATURE_KERNELS:
        return feature_map(num, x, float(att.get("eps", 1e-6)))
    xs = x / x.shape[-1] ** 0.25  # phi(q).phi(k) of x/d^(1/4) gives powers of s = q.k/sqrt(d)
    if num == "linear":
        return xs
    if num == "power":
        return symmetric_power(xs, int(att["order"]))
    if num == "taylor":
        return torch.cat([symmetric_power(xs, m) for m in range(int(att["order"]) + 1)], dim=-1)
    raise ValueError(f"numerator {num!r} has no finite state (exp, or a clamped score kernel)")


def score_weights(q, k, att: dict):
    """w_tj of the parallel form, (B, H, T, T), zero above the diagonal."""
    T, HS = q.shape[-2], q.shape[-1]
    num, den = att["numerator"], att["denominator"]
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if num in SCORE_KERNELS:
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(HS))  # (B, H, T, T)
        if att.get("clamp") is not None:
            s = torch.clamp(s, max=float(att["clamp"]))
        s = torch.where(causal, s, torch.zeros((), dtype=s.dtype, device=s.device))
        if num == "exp":
            if den in SCALE_INVARIANT:  # the row max, a constant for softmax and the norms
                m = torch.where(causal, s, torch.full((), -math.inf, dtype=s.dtype, device=s.device))
                m = m.amax(-1, keepdim=True)
                if att.get("detach_denominator"):
                    m = m.detach()
                w = torch.exp(s - m)
            else:
                w = torch.exp(s)
        elif num == "taylor":
            w = taylor_exp(s, int(att["order"]))
        elif num == "power":
            n = int(att["order"])
            w = s**n / math.factorial(n)
        elif num == "linear":
            w = s
        else:
            raise ValueError(f"no maths for the score kernel {num!r}")
    elif num in FEATURE_KERNELS:
        eps = float(att.get("eps", 1e-6))
        w = feature_map(num, q, eps) @ feature_map(num, k, eps).transpose(-1, -2)
    else:
        raise ValueError(f"unknown numerator {num!r}")
    return torch.where(causal, w, torch.zeros((), dtype=w.dtype, device=w.device))


def denominator(u, z, att: dict, out_norm_w=None, out_norm_b=None):
    """o_t from u_t (B, H, T, HS) and, for softmax, z_t = sum_j w_tj (B, H, T)."""
    den = att["denominator"]
    eps = float(att.get("eps", 1e-6))
    if den == "softmax":
        if att.get("detach_denominator"):
            z = z.detach()
        # weights >= 0 that can all be 0 get eps, as fast-transformers does
        added = eps if sign(att["numerator"], att.get("order")) == "non_negative" else 0.0
        return u / (z + added)[..., None]
    if den == "norm":
        return u / torch.clamp(torch.linalg.vector_norm(u, dim=-1, keepdim=True), min=eps)
    if den == "rmsnorm":
        return out_norm_w * u * torch.rsqrt((u * u).mean(-1, keepdim=True) + eps)
    if den == "layernorm":
        mean = u.mean(-1, keepdim=True)
        var = ((u - mean) ** 2).mean(-1, keepdim=True)  # biased
        return out_norm_w * (u - mean) * torch.rsqrt(var + eps) + out_norm_b
    if den in ("gate", "length"):  # u_t / t; `gate` multiplies by its output gate afterwards
        t = torch.arange(1, u.shape[-2] + 1, dtype=u.dtype, device=u.device)
        return u / t[:, None]
    if den == "none":
        return u
    raise ValueError(f"unknown denominator {den!r}")


def _sdpa_applies(att: dict) -> bool:
    return (hasattr(F, "scaled_dot_product_attention") and att["numerator"] == "exp" and att["denominator"] == "softmax" and att.get("clamp") is None
            and not att.get("detach_denominator"))


def attention(q, k, v, att: dict, g_in=None, g_out=None, out_norm_w=None, out_norm_b=None,
              form: str = "parallel", chunk: int = 64, stats: dict | None = None):
    """Causal attention of any attnlab variant.

    q, k, v (B, H, T, HS); g_in, g_out (B, H, T) gates in (0, 1) or None;
    out_norm_w, out_norm_b (HS) for rmsnorm/layernorm. form: parallel,
    chunked (chunks of `chunk` steps) or recurrent. `stats` (a dict), when
    given, counts in stats["nonpositive_rows"] the rows whose softmax sum
    z_t <= 0 (signed kernels). Returns o (B, H, T, HS).
    """
    if form not in FORMS:
        raise ValueError(f"form {form!r}: one of {FORMS}")
    vg = v if g_in is None else v * g_in[..., None]
    den = att["denominator"]
    z = None
    if form == "parallel":
        if _sdpa_applies(att):
            o = F.scaled_dot_product_attention(q, k, vg, is_causal=True)
            return o if g_out is None else o * g_out[..., None]
        w = score_weights(q, k, att)  # (B, H, T, T)
        u = w @ vg
        if den == "softmax":
            z = w.sum(-1)
    else:
        if not has_finite_state(att):
            raise ValueError(f"{att['numerator']} (clamp {att.get('clamp')}) has no finite state: "
                             "use form='parallel'")
        if form == "recurrent":
            u, z = _recurrent(features(q, att), features(k, att), vg, den == "softmax")
        else:
            if int(chunk) < 1:
                raise ValueError(f"chunk {chunk}: at least 1")
            u, z = _chunked(q, k, vg, att, int(chunk), den == "softmax")
    if stats is not None and z is not None and sign(att["numerator"], att.get("order")) != "non_negative":
        stats["nonpositive_rows"] = stats.get("nonpositive_rows", 0) + int((z <= 0).sum())
    o = denominator(u, z, att, out_norm_w, out_norm_b)
    return o if g_out is None else o * g_out[..., None]


def pair_weights(q, k, att: dict):
    """w_ij = kernel(q_i, k_j) of a finite-state variant for every pair of the
    last-but-one axes, (..., Tq, Tk), unmasked. The score kernels (taylor,
    power, linear) take the polynomial of s = q.k/sqrt(HS) directly, which
    equals phi(q).phi(k) and costs HS multiply-adds per pair instead of F
    (4,161 for taylor 2 at HS 64); the feature kernels their features' product."""
    num = att["numerator"]
    if num in FEATURE_KERNELS:
        eps = float(att.get("eps", 1e-6))
        return feature_map(num, q, eps) @ feature_map(num, k, eps).transpose(-1, -2)
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if num == "taylor":
        return taylor_exp(s, int(att["order"]))
    if num == "power":
        n = int(att["order"])
        return s**n / math.factorial(n)
    if num == "linear":
        return s
    raise ValueError(f"numerator {num!r} has no finite state (exp, or a clamped score kernel)")


def state_blocks(x, att: dict):
    """The features of the chunked form's state, as blocks whose dot products
    summed give the kernel: a feature kernel's phi(x); for taylor, power and
    linear one block per degree m of s, (s^m/m! = block_m(q).block_m(k)).
    Degrees 0-2 are the full tensor powers x^(m) scaled by (HS^(m/2) m!)^(-1/2)
    (HS^2 entries at m = 2 instead of the C(HS+1, 2) of the symmetric power:
    twice the multiply-adds, but an outer product in place of gathering
    index pairs, whose backward costs more than the products saved);
    degrees 3 and up the symmetric powers of features() (HS^m would not fit)."""
    num = att["numerator"]
    if num in FEATURE_KERNELS:
        return [feature_map(num, x, float(att.get("eps", 1e-6)))]
    d = x.shape[-1]
    if num == "linear":
        degrees = [1]
    elif num == "power":
        degrees = [int(att["order"])]
    elif num == "taylor":
        degrees = list(range(int(att["order"]) + 1))
    else:
        raise ValueError(f"numerator {num!r} has no finite state (exp, or a clamped score kernel)")
    blocks = []
    for m in degrees:
        if m == 0:
            blocks.append(torch.ones(*x.shape[:-1], 1, dtype=x.dtype, device=x.device))
        elif m == 1:
            blocks.append(x * d**-0.25)
        elif m == 2:
            xs = x * (d**-0.25 / 2**0.25)  # (x/HS^(1/4)) / 2^(1/4) on each side: (q.k)^2 / (2 HS)
            blocks.append((xs[..., :, None] @ xs[..., None, :]).flatten(-2))  # a product: its backward is too
        else:
            blocks.append(symmetric_power(x / d**0.25, m))
    return blocks


def _across_chunks(qn, kp, vp, att: dict, want_z: bool):
    """The state's part of u (and z) for chunks 1..N-1: qn the queries of
    chunks 1..N-1, kp, vp the keys and values of chunks 0..N-2, (B, H, N-1, C, HS).
    Chunk c reads S_c = sum over chunks before it of phi(k)^T v, a cumulative
    sum over chunks, per block of state_blocks."""
    u = z = None
    for fq, fk in zip(state_blocks(qn, att), state_blocks(kp, att)):
        # the states transposed, (B, H, N-1, HS, F): so the backward's gradients of fk come out row-major
        # (fk^T vp's would be transposed, and copying them back costs more than the products here)
        du = fq @ (vp.transpose(-1, -2) @ fk).cumsum(2).transpose(-1, -2)  # (B, H, N-1, C, HS)
        u = du if u is None else u + du
        if want_z:
            dz = (fq @ fk.sum(-2).cumsum(2)[..., None])[..., 0]  # (B, H, N-1, C)
            z = dz if z is None else z + dz
    return u, z


# Whether the chunked form recomputes the features of q and k and the states
# in the backward instead of keeping them (torch.utils.checkpoint): they are
# 2 T F + (T/C) F HS numbers per head, which for taylor 2 at HS 64 (F = 4,161)
# is more than the parallel form keeps, against about a third more time.
# None (the default): recompute where the features outnumber HS (taylor and
# power of order 2 and up); True or False: always or never.
RECOMPUTE_STATES = None


def _recompute_states(att: dict) -> bool:
    if RECOMPUTE_STATES is not None:
        return bool(RECOMPUTE_STATES)
    return att["numerator"] in ("taylor", "power") and int(att["order"]) >= 2


def _chunked(q, k, v, att: dict, C: int, want_z: bool):
    """u_t = sum_{j<=t} w_tj v_j and z_t = sum_{j<=t} w_tj of a finite-state
    variant in chunks of C steps, all chunks at once (no Python loop over
    time): within a chunk the masked (C, C) weights of pair_weights, across
    chunks _across_chunks. q, k, v (B, H, T, HS). Per head, the forward costs
    about 2 T C HS + 2 T F HS multiply-adds (the backward twice that, and the
    2 T F HS again where it recomputes), against 2 T^2 HS for the parallel form
    (which computes the whole square, masked or not); the backward keeps T C weights and q, k,
    v where it recomputes the states (RECOMPUTE_STATES), against several T^2
    for the parallel form."""
    B, H, T, HS = q.shape
    C = min(C, T)  # a chunk longer than the sequence would only add padding
    N = -(-T // C)
    pad = N * C - T
    if pad:  # padded steps come after every real one: causally they reach no real output
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    qc, kc, vc = (x.reshape(B, H, N, C, HS) for x in (q, k, v))
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    w = pair_weights(qc, kc, att)
    w = torch.where(causal, w, torch.zeros((), dtype=w.dtype, device=w.device))  # (B, H, N, C, C)
    u = w @ vc  # (B, H, N, C, HS)
    z = w.sum(-1) if want_z else None  # (B, H, N, C)
    if N > 1:
        args = (qc[:, :, 1:], kc[:, :, :-1], vc[:, :, :-1])
        if _recompute_states(att) and torch.is_grad_enabled() and any(x.requires_grad for x in args):
            du, dz = torch.utils.checkpoint.checkpoint(_across_chunks, *args, att, want_z, use_reentrant=False)
        else:
            du, dz = _across_chunks(*args, att, want_z)
        u[:, :, 1:] += du
        if want_z:
            z[:, :, 1:] += dz
    u = u.reshape(B, H, N * C, HS)[:, :, :T]
    return u, (z.reshape(B, H, N * C)[..., :T] if want_z else None)


def _recurrent(fq, fk, v, want_z: bool):
    """The same sums one step at a time, as a model generating would: the
    state S += phi(k_t) v_t^T, then u_t = phi(q_t) . S (and Z, z_t for
    softmax). fq, fk (B, H, T, F); v (B, H, T, HS)."""
    B, H, T, Fd = fq.shape
    S = torch.zeros(B, H, Fd, v.shape[-1], dtype=v.dtype, device=v.device)
    Z = torch.zeros(B, H, Fd, dtype=v.dtype, device=v.device)
    us, zs = [], []
    for t in range(T):
        S = S + fk[:, :, t, :, None] * v[:, :, t, None, :]
        us.append((fq[:, :, t, None, :] @ S)[:, :, 0])
        if want_z:
            Z = Z + fk[:, :, t]
            zs.append((fq[:, :, t] * Z).sum(-1))
    return torch.stack(us, dim=-2), (torch.stack(zs, dim=-1) if want_z else None)


# ---------------------------------------------------------------- modules


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = RMSNORM_EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):  # (..., C): x / sqrt(mean(x^2) + eps) * weight
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class _OutNorm(nn.Module):
    """The rmsnorm/layernorm denominators' gain (and bias), size d_v, shared by heads."""

    def __init__(self, dv: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dv))
        self.bias = nn.Parameter(torch.zeros(dv)) if bias else None


class _ShortConv(nn.Module):
    def __init__(self, K: int, C: int):
        super().__init__()
        w = torch.zeros(K, C)
        w[0] = 1.0
        self.weight = nn.Parameter(w)

    def forward(self, x):  # causal depthwise over time: y[t] = sum_i w[i] x[t - i]
        T = x.shape[1]
        y = x * self.weight[0]
        for i in range(1, self.weight.shape[0]):
            y = y + F.pad(x, (0, 0, i, 0))[:, :T] * self.weight[i]
        return y


_rope_cache: dict = {}


def rope_tables(T: int, HS: int, dtype, device):
    """cos, sin (T, HS/2): angle t * base^(-2i/HS), positions from 0 (computed in float64)."""
    key = (T, HS, dtype, str(device))
    if key not in _rope_cache:
        i = torch.arange(HS // 2, dtype=torch.float64)
        theta = ROPE_BASE ** (-2.0 * i / HS)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * theta[None, :]
        _rope_cache[key] = (torch.cos(ang).to(dtype=dtype, device=device), torch.sin(ang).to(dtype=dtype, device=device))
    return _rope_cache[key]


def rope(x, cos, sin):
    # x (B, H, T, HS), rotate-half: pairs (x_i, x_{i+HS/2})
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


class Attention(nn.Module):
    """One attention layer of attnlab: bias-free q, k, v, o projections,
    optional RoPE, gates and the variant's numerator and denominator.
    Parameters as in attnlab checkpoints (q.weight ..., in_gate, out_gate,
    out_norm, short_conv). forward(x (B, T, D), gate_input=None) -> (B, T, D);
    gates read `gate_input` (default x), as attnlab's gates read the block's
    normalised input."""

    def __init__(self, d_model: int, heads: int, numerator: str = "exp", denominator: str = "softmax",
                 order: int | None = None, clamp: float | None = None, eps: float = 1e-6, in_gate: bool = False,
                 out_gate: bool = False, detach_denominator: bool = False, position: str = "rope",
                 short_conv: int = 0, form: str = "parallel", chunk: int = 64):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model {d_model} is not a multiple of heads {heads}")
        self.att = variant(numerator, denominator, order, clamp, eps, in_gate, out_gate, detach_denominator)
        self.D, self.H, self.HS = d_model, heads, d_model // heads
        self.position, self.form, self.chunk = position, form, chunk
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        self.short_conv = _ShortConv(short_conv, 3 * d_model) if short_conv else None
        self.in_gate = nn.Linear(d_model, heads) if in_gate else None
        self.out_gate = nn.Linear(d_model, heads) if (out_gate or denominator == "gate") else None
        self.out_norm = (_OutNorm(self.HS, denominator == "layernorm")
                         if denominator in ("rmsnorm", "layernorm") else None)
        self.stats: dict | None = None  # set to a dict to count nonpositive softmax rows

    @classmethod
    def from_config(cls, model: dict, att: dict, **kw) -> "Attention":
        """From config.yaml's `model:` and `attention:` sections."""
        return cls(int(model["d_model"]), int(model["heads"]), att["numerator"], att["denominator"],
                   att.get("order"), att.get("clamp"), float(att.get("eps", 1e-6)), bool(att.get("in_gate", False)),
                   bool(att.get("out_gate", False)), bool(att.get("detach_denominator", False)),
                   model.get("position", "rope"), int(model.get("short_conv", 0) or 0), **kw)

    def forward(self, x, gate_input=None, form: str | None = None):
        B, T, D = x.shape
        n = x if gate_input is None else gate_input
        q, k, v = self.q(x), self.k(x), self.v(x)  # (B, T, D)
        if self.short_conv is not None:
            q, k, v = self.short_conv(torch.cat((q, k, v), -1)).split(D, -1)

        def heads(y):  # (B, T, D) -> (B, H, T, HS)
            return y.view(B, T, self.H, self.HS).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        if self.position == "rope":
            cos, sin = rope_tables(T, self.HS, q.dtype, q.device)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        g_in = torch.sigmoid(self.in_gate(n)).transpose(1, 2) if self.in_gate is not None else None
        g_out = torch.sigmoid(self.out_gate(n)).transpose(1, 2) if self.out_gate is not None else None
        o = attention(q, k, v, self.att, g_in, g_out,
                      self.out_norm.weight if self.out_norm is not None else None,
                      self.out_norm.bias if self.out_norm is not None else None,
                      form=form or self.form, chunk=self.chunk, stats=self.stats)
        return self.o(o.transpose(1, 2).reshape(B, T, D))


class MLP(nn.Module):
    def __init__(self, kind: str, D: int, hidden: int):
        super().__init__()
        self.kind = kind
        if kind == "swiglu":
            self.gate = nn.Linear(D, hidden, bias=False)
            self.up = nn.Linear(D, hidden, bias=False)
            self.down = nn.Linear(hidden, D, bias=False)
        elif kind == "gelu":
            self.up = nn.Linear(D, hidden)
            self.down = nn.Linear(hidden, D)
        else:
            raise ValueError(f"unknown mlp {kind!r}")

    def forward(self, x):
        if self.kind == "swiglu":
            return self.down(F.silu(self.gate(x)) * self.up(x))
        return self.down(F.gelu(self.up(x)))  # exact (erf) GELU


class Block(nn.Module):
    def __init__(self, model: dict, att: dict, **kw):
        super().__init__()
        D = int(model["d_model"])
        self.attn_norm = RMSNorm(D)
        self.attn = Attention.from_config(model, att, **kw)
        kind = model.get("mlp", "swiglu")
        if kind != "none":
            self.mlp_norm = RMSNorm(D)
            self.mlp = MLP(kind, D, mlp_hidden(model))
        else:
            self.mlp = None

    def forward(self, x):
        n = self.attn_norm(x)
        x = x + self.attn(n)
        if self.mlp is not None:
            x = x + self.mlp(self.mlp_norm(x))
        return x


def mlp_hidden(model: dict) -> int:
    """The MLP's hidden size: mlp_hidden, else 8/3 D up to a multiple of 8 (swiglu) or 4 D (gelu)."""
    D = int(model["d_model"])
    if model.get("mlp", "swiglu") == "swiglu":
        return int(model.get("mlp_hidden", 0) or 0) or -(-D // 3) * 8
    return 4 * D


class Transformer(nn.Module):
    """attnlab's decoder (docs/model.md) over a run's config (config.yaml as
    nested dicts): state_dict() names and shapes are those of model.safetensors.
    vocab and max_positions are the run's facts (the checkpoint's metadata or
    `attnlab list --json`)."""

    def __init__(self, cfg: dict, vocab: int, max_positions: int, form: str = "parallel", chunk: int = 64):
        super().__init__()
        m, a = cfg["model"], cfg["attention"]
        D = int(m["d_model"])
        self.cfg = cfg
        self.position = m.get("position", "rope")
        self.embed = nn.Embedding(vocab, D)
        self.pos = nn.Embedding(max_positions, D) if self.position == "learned" else None
        self.blocks = nn.ModuleList(Block(m, a, form=form, chunk=chunk) for _ in range(int(m["layers"])))
        self.norm = RMSNorm(D)
        self.head = nn.Linear(D, vocab, bias=False)

    def set_stats(self, stats: dict | None):
        for b in self.blocks:
            b.attn.stats = stats

    def hidden(self, tokens):
        """The final RMSNorm's output (B, T, D) for tokens (B, T) int64."""
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos.weight[: tokens.shape[1]][None]
        for b in self.blocks:
            x = b(x)
        return self.norm(x)

    def forward(self, tokens, targets):
        """tokens, targets (B, T) int64 (no target -1): per-answer losses (A),
        logits (A, V) at the answer rows, rows (A) = b*T + t."""
        B, T = tokens.shape
        h = self.hidden(tokens).reshape(B * T, -1)
        flat = targets.reshape(-1)
        rows = torch.nonzero(flat != NO_TARGET).reshape(-1)
        logits = self.head(h[rows])  # (A, V)
        losses = F.cross_entropy(logits, flat[rows], reduction="none")
        return {"losses": losses, "logits": logits, "rows": rows}
