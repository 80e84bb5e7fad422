#!/usr/bin/env python3
"""Checks of the PyTorch engine (python/attnlab/train.py, docs/engines.md)
against attnlab's own trainer.

  equivalence  one variant of each family (exp/softmax, exp/norm, taylor 2/norm,
               power 2/softmax, elu1/softmax, exp/gate clamped at 5) trained
               by `attnlab run` and by the engine from the same initial
               weights (attnlab's, `attnlab list --init-dir`) on the same
               batches, in float32 on CPU, with a train row every step
               (train.log_every 1): the largest difference of the training
               losses over the steps against the tolerance below. The engine
               also trains each variant in float64, which gives the tolerance.
  folder       `attnlab run --engine torch` (the handover to the engine); its
               run folder read by `attnlab summarize`, `eval` and `generate`;
               eval's loss equals the engine's final test loss.
  distributed  `torchrun --nproc_per_node 2` (gloo) against one process: final
               loss and the largest parameter difference.
  resume       a run stopped after step 17 and resumed equals one never stopped.
  docs         the python blocks of docs/engines.md run as written.

The tolerance. Both trainers compute the same float32 arithmetic in another
order (sums of products, reductions), so each one's trajectory differs from
the exact one by rounding: per operation at most u = 2^-24 relative, and
these differences grow with the steps as the optimizer feeds them back (Adam
divides by sqrt(v) + 1e-8, so at first a gradient entry near 1e-8 moves its
weight by up to lr whatever its sign: a gain of lr/eps on its rounding). How
much float32 rounding moves the losses by step k is measured with the engine
itself, from the same weights and batches: e_k = max over j <= k of
|L32(j) - L64(j)| (float32 against float64, the exact trajectory to 1e-16)
and s_k = max over j <= k of |L32(j) - L32'(j)| (float32 against float32 with
another summation order: the gradient summed over two half batches,
--micro-batch). attnlab's float32 trajectory is one more trajectory with
other rounding of the same size, so it may differ from the engine's by about
e_k + s_k; a factor 2 for the spread between samples of rounding gives
    tol_k = 4 max(e_k, s_k) + 16 u |L(k)|
(the second term: the loss's own rounding at step 1, where e_1 can be 0).
The check passes when |L_attnlab(k) - L_torch(k)| <= tol_k at every step k.

    /usr/bin/python3 python/tests/engine_check.py --attnlab build/app/attnlab [--tiny] [--only equivalence,folder,distributed]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
U = 2.0**-24

VARIANTS = [  # (label, attention keys of the sweep point)
    ("exp/softmax", "{attention.numerator: [exp], attention.denominator: [softmax]}"),
    ("exp/norm", "{attention.numerator: [exp], attention.denominator: [norm]}"),
    ("taylor2/norm", "{attention.numerator: [taylor], attention.order: [2], attention.denominator: [norm]}"),
    ("power2/softmax", "{attention.numerator: [power], attention.order: [2], attention.denominator: [softmax]}"),
    ("elu1/softmax", "{attention.numerator: [elu1], attention.denominator: [softmax]}"),
    ("exp/gate c5", "{attention.numerator: [exp], attention.denominator: [gate], attention.clamp: [5]}"),
]


def spec_text(name: str, tiny: bool, steps: int, lr: str = "3.0e-3") -> str:
    if tiny:  # seconds in CI: copy over 8 symbols, 1 layer of width 16
        task = "{kind: copy, vocab: 8, min_len: 2, max_len: 6, test_examples: 16, val_examples: 16}"
        model = "{layers: 1, d_model: 16, heads: 2, mlp: swiglu, position: rope}"
        batch = 8
    else:  # the quickstart's lookup model
        task = "{kind: lookup, vocab: 64, seq_len: 32, pairs: 4, test_examples: 64, val_examples: 64}"
        model = "{layers: 2, d_model: 64, heads: 2, mlp: swiglu, position: rope}"
        batch = 32
    sweep = "\n".join(f"  - {v}" for _, v in VARIANTS)
    return textwrap.dedent(f"""\
        name: {name}
        base:
          seed: 0
          task: {task}
          model: {model}
          attention: {{numerator: exp, denominator: softmax}}
          train: {{steps: {steps}, batch: {batch}, lr: {lr}, warmup: 10, schedule: cosine,
                  weight_decay: 0.1, clip: 1.0, eval_every: {steps}, log_every: 1}}
        sweep:
        """) + sweep + "\n"


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(f"FAILED: {' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}\n")
        raise SystemExit(1)
    return p.stdout


def engine_in_process(args, argv: list[str]) -> tuple[int, str]:
    """python -m attnlab.train ARGV in this interpreter (torch is imported
    once for every single-process run of the checks): (exit code, stdout)."""
    import contextlib
    import io

    if PYTHON_DIR not in sys.path:
        sys.path.insert(0, PYTHON_DIR)
    from attnlab import train

    os.environ["ATTNLAB_BINARY"] = args.attnlab
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = train.main(argv)
    return rc, out.getvalue()


def engine(args, spec, out, *extra, nproc: int = 1):
    if nproc == 1:
        rc, text = engine_in_process(args, [spec, "--out", out, *extra])
        if rc != 0:
            sys.stderr.write(f"FAILED: attnlab.train {spec} --out {out} {' '.join(extra)}: exit {rc}\n{text[-3000:]}\n")
            raise SystemExit(1)
        return text
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""),
               ATTNLAB_BINARY=args.attnlab)
    # --redirects 1 --tee 1 (stdout to a log and the console): torch 1.13's
    # launcher fails on Python 3.11 with its default "0" (Std.from_str gives None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "--redirects", "1", "--tee", "1", "-m", "attnlab.train", spec, "--out", out, *extra]
    return run(cmd, env=env)


def train_losses(run_dir: str) -> dict[int, float]:
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f) if r["split"] == "train"}


def last_test_loss(run_dir: str) -> float:
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        return [float(r["loss"]) for r in csv.DictReader(f) if r["split"] == "test"][-1]


def run_ids(args, spec) -> list[str]:
    return run([args.attnlab, "list", spec]).split()


def check_equivalence(args, work: str) -> bool:
    name = "engine_equivalence"
    spec = os.path.join(work, "equivalence.yaml")
    with open(spec, "w") as f:
        f.write(spec_text(name, args.tiny, args.steps, args.lr))
    run([args.attnlab, "run", spec, "--out", os.path.join(work, "cpp"), "--threads", "1"])
    engine(args, spec, os.path.join(work, "torch"), "--threads", "1")
    engine(args, spec, os.path.join(work, "f64"), "--threads", "1", "--dtype", "float64")
    half = str(8 // 2 if args.tiny else 32 // 2)
    engine(args, spec, os.path.join(work, "half"), "--threads", "1", "--micro-batch", half)
    ok = True
    print(f"{'variant':16} {'steps':>5} {'max |L_attnlab - L_torch|':>26} {'at step':>7} {'tol there':>10} "
          f"{'max(e,s)':>10} {'worst ratio':>11}")
    for (label, _), rid in zip(VARIANTS, run_ids(args, spec)):
        a = train_losses(os.path.join(work, "cpp", name, "runs", rid))
        t = train_losses(os.path.join(work, "torch", name, "runs", rid))
        x = train_losses(os.path.join(work, "f64", name, "runs", rid))
        h = train_losses(os.path.join(work, "half", name, "runs", rid))
        steps = sorted(a)
        if sorted(t) != steps or len(steps) != args.steps:
            print(f"{label}: steps differ: attnlab {len(a)}, torch {len(t)}")
            ok = False
            continue
        e, worst, at, tol_at, ratio = 0.0, 0.0, 0, 0.0, 0.0
        for k in steps:
            e = max(e, abs(t[k] - x[k]), abs(t[k] - h[k]))
            tol = 4 * e + 16 * U * abs(t[k])
            d = abs(a[k] - t[k])
            if d > worst:
                worst, at, tol_at = d, k, tol
            ratio = max(ratio, d / tol)
        good = ratio <= 1.0
        ok &= good
        print(f"{label:16} {len(steps):5d} {worst:26.3e} {at:7d} {tol_at:10.3e} {e:10.3e} {ratio:11.3f}"
              f"{'' if good else '  FAIL'}")
    return ok


def check_folder(args, work: str) -> bool:
    name = "engine_folder"
    spec = os.path.join(work, "folder.yaml")
    with open(spec, "w") as f:
        f.write(spec_text(name, True, 30).split("sweep:")[0].replace("log_every: 1", "log_every: 0"))
    # through `attnlab run --engine torch`, which hands the spec over to python -m attnlab.train
    run([args.attnlab, "run", spec, "--engine", "torch", "--python", sys.executable, "--out",
         os.path.join(work, "folder"), "--threads", "1"])
    sweep = os.path.join(work, "folder", name)
    rid = run_ids(args, spec)[0]
    run_dir = os.path.join(sweep, "runs", rid)
    run([args.attnlab, "summarize", sweep])
    ev = run([args.attnlab, "eval", run_dir])
    loss = float(ev.split("loss")[1].split()[0])
    mine = last_test_loss(run_dir)
    gen = run([args.attnlab, "generate", run_dir, "--prompt", "1 2 3 8", "--tokens", "4"])
    # float32 in both, other summation orders: a few units of float32 rounding of the loss
    ok = abs(loss - mine) <= 64 * U * abs(mine) and os.path.exists(os.path.join(sweep, "summary.csv"))
    print(f"folder: attnlab eval loss {loss!r}, engine's final test loss {mine!r}, difference {abs(loss - mine):.3e}"
          f" (bound {64 * U * abs(mine):.3e}); summarize wrote summary.csv; generate: {gen.strip()[:60]!r}"
          f"{'' if ok else '  FAIL'}")
    return ok


def check_distributed(args, work: str) -> bool:
    import numpy as np

    sys.path.insert(0, PYTHON_DIR)
    from attnlab.checkpoint import read_safetensors

    name = "engine_ddp"
    spec = os.path.join(work, "ddp.yaml")
    with open(spec, "w") as f:
        f.write(spec_text(name, True, 20).split("sweep:")[0].replace("log_every: 1", "log_every: 5"))
    engine(args, spec, os.path.join(work, "one"), "--threads", "1")
    engine(args, spec, os.path.join(work, "two"), "--threads", "1", nproc=2)
    rid = run_ids(args, spec)[0]
    one, two = (os.path.join(work, d, name, "runs", rid) for d in ("one", "two"))
    l1, l2 = last_test_loss(one), last_test_loss(two)
    p1, p2 = read_safetensors(os.path.join(one, "model.safetensors")), read_safetensors(os.path.join(two, "model.safetensors"))
    dp = max(float(np.abs(p1[k] - p2[k]).max()) for k in p1)
    t1, t2 = train_losses(one), train_losses(two)
    dt = max(abs(t1[k] - t2[k]) for k in t1)
    dr = 0.0
    was_stopped = True
    if not args.tiny:  # two more launches of two processes (15 s): not in the test suite
        # Two processes stopped after step 7 (as by Ctrl-C) and resumed by the same
        # command: the parameters of the two-process run never stopped.
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, ATTNLAB_BINARY=args.attnlab)
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--redirects", "1",
                  "--tee", "1", "-m", "attnlab.train", spec, "--out", os.path.join(work, "two_parts"), "--threads", "1"]
        subprocess.run(launch + ["--stop-after", "7"], capture_output=True, text=True, env=env)
        parts = os.path.join(work, "two_parts", name, "runs", rid)
        was_stopped = os.path.exists(os.path.join(parts, "resume.torch.pt"))
        run(launch, env=env)
        p3 = read_safetensors(os.path.join(parts, "model.safetensors"))
        dr = max(float(np.abs(p2[k] - p3[k]).max()) for k in p2)

        def cells(d):  # without tokens_per_s and elapsed_s
            with open(os.path.join(d, "metrics.csv")) as f:
                return [line.split(",")[:7] for line in f][1:]

        def close(a, b):  # the train rows' sums meet in another order after the resume: the last bits
            return a == b or (a and b and abs(float(a) - float(b)) <= 1e-12 * abs(float(a)))

        ca, cb = cells(two), cells(parts)
        same = len(ca) == len(cb) and all(close(x, y) for ra, rb in zip(ca, cb) for x, y in zip(ra, rb))
        dr = dr if same else math.inf
    # Same batches, gradients summed over two halves instead of one sum: the
    # reduction order only; 20 steps of lr 3e-3 move weights by ~1e-2, so a
    # difference of 1e-4 would be a real one.
    ok = dp <= 1e-4 and abs(l1 - l2) <= 1e-4 and sorted(t1) == sorted(t2) and was_stopped and dr == 0.0
    print(f"distributed: 2 processes (gloo) vs 1: final test loss {l2!r} vs {l1!r} (difference {abs(l1 - l2):.3e}); "
          f"largest train-loss difference {dt:.3e}; largest parameter difference {dp:.3e}"
          + ("" if args.tiny else f"; 2 processes stopped after step 7 and resumed: parameter difference {dr:.3e} "
             "from the run never stopped, metrics rows equal") + f"{'' if ok else '  FAIL'}")
    return ok


def check_resume(args, work: str) -> bool:
    """A run stopped after step 17 (as by Ctrl-C) and resumed by the same
    command ends with the parameters and metrics of a run never stopped."""
    import numpy as np

    sys.path.insert(0, PYTHON_DIR)
    from attnlab.checkpoint import read_safetensors

    name = "engine_resume"
    spec = os.path.join(work, "resume.yaml")
    with open(spec, "w") as f:
        f.write(spec_text(name, True, 40).split("sweep:")[0].replace("log_every: 1", "log_every: 5")
                .replace("eval_every: 40", "eval_every: 10"))
    engine(args, spec, os.path.join(work, "whole"), "--threads", "1")
    code, _ = engine_in_process(args, [spec, "--out", os.path.join(work, "parts"), "--threads", "1",
                                       "--stop-after", "17"])
    rid = run_ids(args, spec)[0]
    parts = os.path.join(work, "parts", name, "runs", rid)
    stopped = code == 130 and os.path.exists(os.path.join(parts, "resume.torch.pt"))
    engine(args, spec, os.path.join(work, "parts"), "--threads", "1")
    whole = os.path.join(work, "whole", name, "runs", rid)
    a, b = (read_safetensors(os.path.join(d, "model.safetensors")) for d in (whole, parts))
    dp = max(float(np.abs(a[k] - b[k]).max()) for k in a)

    def rows(d):  # without tokens_per_s and elapsed_s
        with open(os.path.join(d, "metrics.csv")) as f:
            return [",".join(line.split(",")[:7]) for line in f]

    same = rows(whole) == rows(parts)
    ok = stopped and dp == 0.0 and same
    print(f"resume: stopped after step 17 (exit {code}), resumed: largest parameter difference {dp:.3e}, "
          f"metrics.csv rows {'equal' if same else 'DIFFER'}{'' if ok else '  FAIL'}")
    return ok


def check_docs(args, work: str) -> bool:
    """The python blocks of docs/engines.md run as written."""
    import re

    with open(os.path.join(os.path.dirname(PYTHON_DIR), "docs", "engines.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    for code in blocks:
        run([sys.executable, "-c", code], env=env, cwd=work)
    print(f"docs: {len(blocks)} python block(s) of docs/engines.md ran")
    return len(blocks) > 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnlab", required=True)
    ap.add_argument("--tiny", action="store_true", help="the CI size (seconds)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--lr", default="3.0e-3", help="learning rate of the equivalence runs")
    ap.add_argument("--only", default="equivalence,folder,distributed,resume,docs")
    ap.add_argument("--keep", help="work in this folder and keep it")
    args = ap.parse_args()
    args.attnlab = os.path.abspath(args.attnlab)
    checks = {"equivalence": check_equivalence, "folder": check_folder, "distributed": check_distributed,
              "resume": check_resume, "docs": check_docs}
    ok = True
    with tempfile.TemporaryDirectory(prefix="attnlab_engine_") as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        for c in args.only.split(","):
            ok &= checks[c](args, work)
    print("engine checks:", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
