#!/usr/bin/python3
"""Forward and backward time of attnlab.layers.attention's parallel and
chunked forms at long context, one attention call (no projections), on CPU
or a GPU, with what the backward keeps (measured) and the chunked form's
states (counted). docs/engines.md ("The chunked form") has a table it made.
Needs the attnlab package (installed, or python/ on PYTHONPATH).

usage: PYTHONPATH=python /usr/bin/python3 scripts/bench_forms.py [--T 1024,2048,4096] [--heads 2] [--head-dim 64]
           [--batch 1] [--reps 5] [--threads 1] [--device cpu] [--dtype float32]
           [--variants exp/softmax,taylor2/norm] [--chunks 64,256] [--keep] [--baseline LAYERS_PY]

Each repetition times every case once, interleaved (cases x T in turn), after
one untimed warm-up of each; the table has the median and the spread (min-max)
of --reps repetitions, in milliseconds, for q, k, v (B, H, T, HS) with
requires_grad: o = attention(q, k, v); (o * g).sum().backward() for a fixed
random g. The chunked form recomputes its states in the backward where
they are large (layers.RECOMPUTE_STATES: taylor and power of order 2 and
up); --keep adds rows "chunked C keep" that keep them, for those.
exp/softmax runs in the parallel form only (it goes through
scaled_dot_product_attention where torch has it, 2.0+). --baseline times the
chunked form of another layers.py too (e.g. an earlier commit's: `git show
COMMIT:python/attnlab/layers.py > /tmp/l.py`), as a row "chunked C (baseline)".

Column "kept MiB": what the autograd graph keeps for the backward, measured
(torch.autograd.graph.saved_tensors_hooks, each saved tensor's storage
counted once, q, k and v included; the forward's transient peak is not
in it). Column F: the chunked form's features per head (layers.state_blocks; 4,161
for taylor 2 at HS 64). Column "states MiB": the features of q and k that
meet a state and the states, 2 (T/C - 1) C F + (T/C - 1) F HS numbers per
head, counted analytically: what "keep" keeps beyond the rest, and what the
default recomputes in the backward (one layer's at a time in a model).
Uses the attnlab package of this source tree (python/).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import time

import torch
from attnlab import layers, variants


def parse_variant(text: str) -> dict:
    """"taylor2/norm" -> layers.variant("taylor", "norm", 2)."""
    num, den = text.split("/")
    name = num.rstrip("0123456789")
    if not variants.takes_order(name):  # elu1
        name = num
    order = int(num[len(name):]) if num[len(name):] else None
    return layers.variant(name, den, order)


def load_baseline(path: str):
    spec = importlib.util.spec_from_file_location("attnlab._baseline_layers", path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "attnlab"  # its `from .variants import ...`
    spec.loader.exec_module(module)
    return module


def n_features(att: dict, hs: int) -> int:
    """F of the chunked form's state (layers.state_blocks): degrees 0-2 as full
    tensor powers (hs^m), 3 and up as symmetric powers (C(hs+m-1, m))."""
    def block(m):
        return hs**m if m <= 2 else math.comb(hs + m - 1, m)
    if att["numerator"] == "taylor":
        return sum(block(m) for m in range(att["order"] + 1))
    if att["numerator"] == "power":
        return block(att["order"])
    return hs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--T", default="1024,2048,4096")
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--variants", default="exp/softmax,taylor2/norm")
    ap.add_argument("--chunks", default="64,256")
    ap.add_argument("--keep", action="store_true",
                    help="also time the chunked form keeping its states for the backward "
                         "(layers.RECOMPUTE_STATES = False)")
    ap.add_argument("--baseline", help="another layers.py whose chunked form is timed too")
    opts = ap.parse_args()
    torch.set_num_threads(opts.threads)
    device, dtype = torch.device(opts.device), getattr(torch, opts.dtype)
    Ts = [int(t) for t in opts.T.split(",")]
    chunks = [int(c) for c in opts.chunks.split(",")]
    baseline = load_baseline(opts.baseline) if opts.baseline else None

    def keeping(q, k, v, att, c):  # the chunked form keeping its states for the backward
        layers.RECOMPUTE_STATES = False
        try:
            return layers.attention(q, k, v, att, form="chunked", chunk=c)
        finally:
            layers.RECOMPUTE_STATES = None

    cases = []  # (label, variant, function(q, k, v, att))
    for text in opts.variants.split(","):
        att = parse_variant(text)
        cases.append((text, "parallel", att, lambda q, k, v, att: layers.attention(q, k, v, att)))
        if layers.has_finite_state(att):
            for c in chunks:
                cases.append((text, f"chunked {c}", att,
                              lambda q, k, v, att, c=c: layers.attention(q, k, v, att, form="chunked", chunk=c)))
                if opts.keep and layers._recompute_states(att):
                    cases.append((text, f"chunked {c} keep", att,
                                  lambda q, k, v, att, c=c: keeping(q, k, v, att, c)))
                if baseline is not None:
                    cases.append((text, f"chunked {c} (baseline)", att,
                                  lambda q, k, v, att, c=c: baseline.attention(q, k, v, att, form="chunked",
                                                                                 chunk=c)))

    g = torch.Generator().manual_seed(0)
    data = {}
    for T in Ts:
        q, k, v, w = (torch.randn(opts.batch, opts.heads, T, opts.head_dim, generator=g) for _ in range(4))
        data[T] = [x.to(device=device, dtype=dtype) for x in (q, k, v, w)]

    def once(T, fn, att):
        q, k, v, w = data[T]
        xs = [x.detach().requires_grad_(True) for x in (q, k, v)]
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        o = fn(*xs, att)
        (o * w).sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    def kept(T, fn, att):
        """MiB the autograd graph keeps for the backward (every saved tensor's
        storage once, q, k and v included), from saved_tensors_hooks."""
        q, k, v, _ = data[T]
        xs = [x.detach().requires_grad_(True) for x in (q, k, v)]
        seen = {}

        def pack(t):
            st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            seen[st.data_ptr()] = st.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            o = fn(*xs, att)
        del o
        return sum(seen.values()) / 2**20

    saved = {(T, i): kept(T, case[3], case[2]) for T in Ts for i, case in enumerate(cases)}
    times = {(T, i): [] for T in Ts for i in range(len(cases))}
    for rep in range(opts.reps + 1):
        for T in Ts:
            for i, (_, _, att, fn) in enumerate(cases):
                dt = once(T, fn, att)
                if rep:  # the first round warms up
                    times[(T, i)].append(dt)

    sdpa = "sdpa" if hasattr(torch.nn.functional, "scaled_dot_product_attention") else "no sdpa"
    print(f"# torch {torch.__version__} ({sdpa}), {opts.device}, {opts.dtype}, {torch.get_num_threads()} thread(s), "
          f"B {opts.batch}, H {opts.heads}, HS {opts.head_dim}, median of {opts.reps} (min-max), ms, forward+backward")
    print("| variant | form | T | ms | min-max | kept MiB | F | states MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for T in Ts:
        for i, (text, form, att, _) in enumerate(cases):
            ts = [1000 * t for t in times[(T, i)]]
            F = n_features(att, opts.head_dim)
            size = "-"
            if form != "parallel":
                c = int(form.split()[1])
                n = -(-T // c) - 1
                numbers = (2 * n * c * F + n * F * opts.head_dim) * opts.batch * opts.heads
                size = f"{numbers * torch.finfo(dtype).bits / 8 / 2**20:.0f}"
            print(f"| {text} | {form} | {T} | {statistics.median(ts):.0f} | {min(ts):.0f}-{max(ts):.0f} | "
                  f"{saved[(T, i)]:.0f} | "
                  f"{F if layers.has_finite_state(att) else '-'} | {size} |")


if __name__ == "__main__":
    main()
