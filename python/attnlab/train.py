"""The PyTorch engine: trains the runs of an attnlab spec and writes the run
folders attnlab writes (docs/engines.md).

    PYTHONPATH=python python3 -m attnlab.train SPEC --out results [--device cpu|cuda]
    PYTHONPATH=python python3 -m torch.distributed.run --nproc_per_node 2 -m attnlab.train SPEC --out results

The spec is parsed and validated by the attnlab binary only (`attnlab list
SPEC --json`): this module receives the resolved runs (each run's config.yaml
text, vocabulary, position rows), the initial weights attnlab's own trainer
would start from (`--init-dir`) and the results folder's spec.yaml
(`--sweep-dir`). Each run then trains as attnlab's trainer trains it
(lib/src/train/trainer.cpp): the same batches (the ported generators,
data.Task), loss = mean cross-entropy over the batch's answer positions,
AdamW (0.9, 0.95, eps 1e-8, decay on matrices and embeddings) with the same
update order, linear warmup then cosine or constant, clipping by the global
norm, evaluation on the validation and test sets at step 0, every
eval_every steps and at the end, the same metrics rows. The run folder
(config.yaml, metrics.csv, result.yaml, model.safetensors) is read by
`attnlab summarize`, `eval`, `generate` and `probe` unchanged; result.yaml
adds `engine:` (torch, its version, the device).

Resume: a run stopped by SIGINT/SIGTERM, or killed, restarts from its
resume.torch.pt (saved every --save-every seconds and when stopped): the same
command goes on after the saved step.

Data parallel (torchrun): every process draws the whole batch from the same
stream, computes the losses of its share of the examples (rank r takes rows
r*B/N .. (r+1)*B/N), divided by the number of answers of the whole batch, and
the gradients are summed over processes (all_reduce): the gradient of the
batch's mean loss, as one process computes it, up to the order of the sums.
Evaluation sets are split the same way and their sums reduced. Rank 0 writes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from . import data
from .checkpoint import read_safetensors, read_safetensors_header
from .layers import Transformer, has_finite_state

BETA1, BETA2, ADAM_EPS = 0.9, 0.95, 1e-8
RESUME_FILE = "resume.torch.pt"
METRICS_COLUMNS = ["step", "split", "loss", "token_acc", "seq_acc", "lr", "grad_norm", "tokens_per_s", "elapsed_s"]


# ---------------------------------------------------------------- formatting (as attnlab writes)


def fmt_number(v: float) -> str:
    """Shortest text that reads back as v (attnlab's format_number); nan, inf."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def yaml_number(v: float) -> str:
    v = float(v)
    if math.isnan(v):
        return ".nan"
    if math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    return fmt_number(v)


def yaml_quoted(s: str) -> str:
    return json.dumps(s)  # a JSON string is a YAML double-quoted scalar


def write_atomic(path: str, text: str | bytes) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_safetensors(path: str, tensors: list[tuple[str, np.ndarray]], metadata: dict[str, str]) -> None:
    """float32 tensors in the given order, header as attnlab writes it
    (__metadata__ first with format attnlab), written atomically."""
    header = {"__metadata__": {"format": "attnlab", **metadata}}
    offset, blobs = 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    write_atomic(path, struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ---------------------------------------------------------------- the spec, resolved by attnlab


def find_attnlab(given: str | None) -> str:
    """The attnlab binary: --attnlab, $ATTNLAB_BINARY, the repository's
    build/app/attnlab, or attnlab on PATH."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for cand in (given, os.environ.get("ATTNLAB_BINARY"), os.path.join(here, "build", "app", "attnlab"),
                 shutil.which("attnlab")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise SystemExit("attnlab.train: no attnlab binary (give --attnlab PATH or set ATTNLAB_BINARY)")


def resolve_spec(binary: str, spec: str, sets: list[str], init_dir: str | None, sweep_out: str | None) -> dict:
    """`attnlab list SPEC --json`: {"name", "runs": [{"id", "config_yaml",
    "vocab", "max_positions", "params", "baselines"?}]}. The spec's errors
    are attnlab's messages (exit 2)."""
    cmd = [binary, "list", spec, "--json"]
    for s in sets:
        cmd += ["--set", s]
    if init_dir:
        cmd += ["--init-dir", init_dir]
    if sweep_out:
        cmd += ["--sweep-dir", sweep_out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(p.returncode)
    return json.loads(p.stdout)


# ---------------------------------------------------------------- training pieces


def learning_rate(tc: dict, step: int) -> float:
    """lr * step / warmup for step <= warmup, then cosine (or constant) down to min_lr."""
    lr, warmup, steps = float(tc["lr"]), int(tc.get("warmup", 0)), int(tc["steps"])
    min_lr = float(tc.get("min_lr", 0.0))
    if warmup > 0 and step <= warmup:
        return lr * step / warmup
    if tc.get("schedule", "cosine") == "constant":
        return lr
    decay = steps - warmup
    if decay <= 0:
        return lr
    progress = (step - warmup) / decay
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


class AdamW:
    """attnlab's AdamW (lib/src/train/optimizer.cpp), step for step:
    m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  p -= lr wd p;
    p -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps). Decay on tensors of two
    dimensions (matrices, embeddings), none on gains and biases."""

    def __init__(self, params: list[torch.Tensor], weight_decay: float):
        self.params = params
        self.decay = [p.dim() >= 2 for p in params]
        self.wd = float(weight_decay)
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    @torch.no_grad()
    def step(self, lr: float):
        self.t += 1
        bc1 = 1.0 - BETA1**self.t
        bc2 = 1.0 - BETA2**self.t
        step_size, inv_sqrt_bc2 = lr / bc1, 1.0 / math.sqrt(bc2)
        for p, m, v, decay in zip(self.params, self.m, self.v, self.decay):
            g = p.grad
            m.mul_(BETA1).add_(g, alpha=1.0 - BETA1)
            v.mul_(BETA2).addcmul_(g, g, value=1.0 - BETA2)
            if decay and self.wd:
                p.sub_(p * (lr * self.wd))
            p.sub_(step_size * m / (v.sqrt() * inv_sqrt_bc2 + ADAM_EPS))

    def state(self) -> dict:
        return {"m": [x.cpu() for x in self.m], "v": [x.cpu() for x in self.v], "t": self.t}

    def restore(self, st: dict):
        for dst, src in zip(self.m + self.v, st["m"] + st["v"]):
            dst.copy_(src)
        self.t = int(st["t"])


class Window:
    """Sums over answers and examples (attnlab's metrics_accumulator)."""

    def __init__(self):
        self.loss_sum = self.token_acc_sum = self.seq_right = 0.0
        self.answers = self.examples = 0

    def add(self, losses, logits, rows, targets, T: int, B: int):
        """The examples of one forward: per-answer losses (A), logits (A, V),
        rows (A) = b*T + t within its B examples, targets (B, T)."""
        if rows.numel() == 0:
            return
        pred = logits.argmax(-1)
        right = (pred == targets.reshape(-1)[rows]).to(torch.float64)
        ex = rows // T
        per_right = torch.zeros(B, dtype=torch.float64, device=rows.device).index_add_(0, ex, right)
        per_total = torch.zeros(B, dtype=torch.float64, device=rows.device).index_add_(
            0, ex, torch.ones_like(right))
        has = per_total > 0
        self.loss_sum += float(losses.detach().double().sum())
        self.answers += int(rows.numel())
        self.examples += int(has.sum())
        self.token_acc_sum += float((per_right[has] / per_total[has]).sum())
        self.seq_right += float((per_right[has] == per_total[has]).sum())

    def reduce(self, dist_on: bool, device):
        if dist_on:
            t = torch.tensor([self.loss_sum, self.token_acc_sum, self.seq_right, self.answers, self.examples],
                             dtype=torch.float64, device=device)
            torch.distributed.all_reduce(t)
            self.loss_sum, self.token_acc_sum, self.seq_right = float(t[0]), float(t[1]), float(t[2])
            self.answers, self.examples = int(t[3]), int(t[4])
        return self

    def result(self, seq_acc_applies: bool) -> dict:
        m = {"loss": self.loss_sum / self.answers if self.answers else 0.0,
             "token_acc": self.token_acc_sum / self.examples if self.examples else 0.0,
             "seq_acc": self.seq_right / self.examples if self.examples else 0.0}
        if not seq_acc_applies:
            m["seq_acc"] = math.nan
        return m


def shard_rows(B: int, rank: int, world: int) -> tuple[int, int]:
    return B * rank // world, B * (rank + 1) // world


def evaluate(model, tokens: np.ndarray, targets: np.ndarray, chunk_B: int, device, seq_acc_applies: bool,
             rank: int = 0, world: int = 1) -> dict:
    """Metrics over a set in chunks of chunk_B examples (the sums in float64),
    this process's share of each chunk when distributed."""
    w = Window()
    B = tokens.shape[0]
    was = model.training
    model.eval()
    with torch.no_grad():
        for first in range(0, B, chunk_B):
            b0, b1 = shard_rows(min(chunk_B, B - first), rank, world)
            if b1 <= b0:
                continue
            x = torch.as_tensor(tokens[first + b0:first + b1], dtype=torch.int64, device=device)
            y = torch.as_tensor(targets[first + b0:first + b1], dtype=torch.int64, device=device)
            out = model(x, y)
            w.add(out["losses"], out["logits"], out["rows"], y, x.shape[1], x.shape[0])
    model.train(was)
    return w.reduce(world > 1, device).result(seq_acc_applies)


def git_commit() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        p = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                           timeout=10)
        return p.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def metrics_line(step, split, m, lr=None, grad_norm=None, tps=None, elapsed=0.0) -> str:
    def opt(v):
        return "" if v is None else fmt_number(v)

    seq = "" if math.isnan(m["seq_acc"]) else fmt_number(m["seq_acc"])
    cells = [str(step), split, fmt_number(m["loss"]), fmt_number(m["token_acc"]), seq, opt(lr), opt(grad_norm),
             "" if tps is None else str(int(round(tps))), fmt_number(round(elapsed, 3))]
    return ",".join(cells) + "\n"


def result_yaml(r: dict, engine: dict) -> str:
    def metrics(name, m):
        return (f"{name}: {{loss: {yaml_number(m['loss'])}, token_acc: {yaml_number(m['token_acc'])}, "
                f"seq_acc: {yaml_number(m['seq_acc'])}}}\n")

    s = f"status: {r['status']}\nreason: {yaml_quoted(r['reason'])}\nsteps: {r['steps']}\n"
    s += metrics("final_val", r["final_val"]) + metrics("final_test", r["final_test"])
    s += f"best_step: {r['best_step']}\n" + metrics("best_val", r["best_val"]) + metrics("best_test", r["best_test"])
    s += f"wall_s: {yaml_number(r['wall_s'])}\nparams: {r['params']}\n"
    s += f"nonpositive_denominator_steps: {r['nonpositive_steps']}\nfirst_nonpositive_step: {r['first_nonpositive']}\n"
    if r.get("baselines"):
        b = r["baselines"]
        s += (f"baselines: {{unigram_test_loss: {yaml_number(b['unigram_test_loss'])}, "
              f"bigram_test_loss: {yaml_number(b['bigram_test_loss'])}}}\n")
    s += f"attention_form: {r['attention_form']}\n"
    s += (f"build: {{commit: {yaml_quoted(engine['commit'])}, build_type: {yaml_quoted('torch ' + engine['torch'])}, "
          f"isa: {yaml_quoted(engine['device'])}, threads: {engine['threads']}}}\n")
    s += (f"engine: {{name: torch, torch: {yaml_quoted(engine['torch'])}, python: {yaml_quoted(engine['python'])}, "
          f"device: {yaml_quoted(engine['device'])}, processes: {engine['processes']}, "
          f"dtype: {yaml_quoted(engine['dtype'])}}}\n")
    return s


# ---------------------------------------------------------------- one run


class Stop:
    """Set by SIGINT/SIGTERM: the run in progress saves its state after its step."""

    def __init__(self):
        self.signal = 0

    def install(self):
        def on(sig, _frame):
            self.signal = sig
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, on)
        signal.signal(signal.SIGTERM, on)


def train_run(run: dict, run_dir: str, init_path: str | None, opts, stop: Stop, rank=0, world=1) -> dict | None:
    """Trains one run into run_dir (rank 0 writes). Returns the result dict,
    or None when the run was already done or was stopped."""
    from .config import check_config

    device = torch.device(opts.device)
    dtype = torch.float64 if opts.dtype == "float64" else torch.float32
    config_yaml = run["config_yaml"]
    cfg = check_config(config_yaml, os.path.join(run_dir, "config.yaml"))  # as attnlab's readers parse it
    tc = cfg["train"]
    writer = rank == 0
    result_path = os.path.join(run_dir, "result.yaml")
    resume_path = os.path.join(run_dir, RESUME_FILE)
    cfg_path = os.path.join(run_dir, "config.yaml")

    def same_config():
        try:
            with open(cfg_path, encoding="utf-8") as f:
                return f.read() == config_yaml
        except OSError:
            return False

    if os.path.exists(result_path) and same_config() and not opts.overwrite:
        return None  # done (by either engine)
    if os.path.exists(result_path) and not same_config() and not opts.overwrite:
        raise SystemExit(f"{run_dir}: finished with another configuration; not overwritten (use --overwrite)")

    task = data.Task(cfg)
    seq_acc_applies = task.settings["kind"] != "text"
    # --form chunked applies to the variants with a finite state; the others train in the parallel form
    form = opts.form if has_finite_state(cfg["attention"]) else "parallel"
    model = Transformer(cfg, int(run["vocab"]), int(run["max_positions"]), form=form, chunk=opts.chunk)
    names = list(dict(model.named_parameters()))
    if init_path:
        init = read_safetensors(init_path)
        order = [n for n in read_safetensors_header(init_path)[1] if n != "__metadata__"]
        if set(order) != set(names):
            raise SystemExit(f"{init_path}: tensors {sorted(set(order) ^ set(names))} differ from the model's")
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(torch.from_numpy(init[n]))
        names = order  # attnlab's layout order, kept in model.safetensors
    else:  # torch's own draws with attnlab's rules (not attnlab's random numbers)
        torch.manual_seed(int(cfg["seed"]))
        L = int(cfg["model"]["layers"])
        with torch.no_grad():
            for n, p in model.named_parameters():
                if p.dim() >= 2 and "short_conv" not in n:
                    std = 0.02 / math.sqrt(2 * L) if n.endswith(("attn.o.weight", "mlp.down.weight")) else 0.02
                    p.normal_(0.0, std)
    model.to(device=device, dtype=dtype)
    params = [p for _, p in model.named_parameters()]
    by_name = dict(model.named_parameters())
    opt = AdamW(params, float(tc.get("weight_decay", 0.0)))
    n_params = sum(p.numel() for p in params)

    res = {"status": "ok", "reason": "", "steps": 0, "best_step": 0, "wall_s": 0.0, "params": n_params,
           "nonpositive_steps": 0, "first_nonpositive": 0, "baselines": run.get("baselines"),
           "attention_form": "quadratic" if form == "parallel" else "chunked",
           "final_val": None, "final_test": None, "best_val": None, "best_test": None}
    window, gnorm_sum, window_steps, window_s0, elapsed0, first_step = Window(), 0.0, 0, 0.0, 0.0, 1
    val_x, val_y = task.val_set()
    test_x, test_y = task.test_set()
    B = int(tc["batch"])
    steps, eval_every, log_every = int(tc["steps"]), int(tc["eval_every"]), int(tc.get("log_every", 0) or 0)
    clip = float(tc.get("clip", 0.0) or 0.0)

    resume = None
    if os.path.exists(resume_path) and same_config() and not opts.overwrite:
        resume = torch.load(resume_path, map_location="cpu")
    if resume is not None:
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(resume["params"][n])
        opt.restore(resume["adam"])
        res, w = resume["result"], resume["window"]
        res["status"], res["reason"] = "ok", ""  # it was saved as it stopped
        if rank == 0:  # the saved sums are every process's: process 0 carries them on
            window.__dict__.update(w["window"])
        gnorm_sum, window_steps, window_s0 = w["grad_norm_sum"], w["steps"], w["seconds"]
        elapsed0 = res["wall_s"]
        for _ in range(resume["step"]):
            task.next_train_batch(B)
        first_step = resume["step"] + 1
        if writer:  # rows after the saved step are redone
            keep_metrics_up_to(os.path.join(run_dir, "metrics.csv"), resume["step"])
            print(f"{run['id']}: resumed after step {resume['step']} from {resume_path}", flush=True)
    elif writer:
        os.makedirs(run_dir, exist_ok=True)
        for f in ("result.yaml", "model.safetensors", RESUME_FILE, "resume.state", "probe.csv", "probe_heads.csv"):
            if os.path.exists(os.path.join(run_dir, f)):
                os.remove(os.path.join(run_dir, f))
        write_atomic(cfg_path, config_yaml)
        write_atomic(os.path.join(run_dir, "metrics.csv"), ",".join(METRICS_COLUMNS) + "\n")
    metrics = open(os.path.join(run_dir, "metrics.csv"), "a", encoding="utf-8") if writer else None

    t0 = time.perf_counter()

    def elapsed():
        return elapsed0 + time.perf_counter() - t0

    def record(step, val, test):
        better = (res["best_val"] is not None and val["loss"] < res["best_val"]["loss"]) or (
            res["best_val"] is not None and math.isnan(res["best_val"]["loss"]) and not math.isnan(val["loss"]))
        if step == 0 or res["best_val"] is None or better:
            res["best_step"], res["best_val"], res["best_test"] = step, val, test
        res["final_val"], res["final_test"] = val, test

    def evaluation_rows(step, lr):
        val = evaluate(model, val_x, val_y, B, device, seq_acc_applies, rank, world)
        if metrics:
            metrics.write(metrics_line(step, "val", val, lr=lr, elapsed=elapsed()))
        test = evaluate(model, test_x, test_y, B, device, seq_acc_applies, rank, world)
        if metrics:
            metrics.write(metrics_line(step, "test", test, lr=lr, elapsed=elapsed()))
            metrics.flush()
        record(step, val, test)
        if writer and step > 0:
            print(f"{run['id']} step {step}/{steps} | val loss {val['loss']:.4f} | test loss {test['loss']:.4f} "
                  f"acc {test['token_acc']:.3f} | {elapsed():.1f} s", flush=True)

    def save_state(step):
        # Every process calls it at the same step: the train window's sums are
        # summed over processes (a copy), and process 0 writes.
        whole = Window()
        whole.__dict__.update(window.__dict__)
        whole.reduce(world > 1, device)
        if not writer:
            return
        st = {"step": step, "params": {n: p.detach().cpu() for n, p in model.named_parameters()},
              "adam": opt.state(), "result": dict(res, wall_s=elapsed()),
              "window": {"window": dict(whole.__dict__), "grad_norm_sum": gnorm_sum, "steps": window_steps,
                         "seconds": window_s0 + time.perf_counter() - window_t0}}
        tmp = resume_path + f".tmp{os.getpid()}"
        torch.save(st, tmp)
        os.replace(tmp, resume_path)

    if resume is None:
        evaluation_rows(0, None)
    stats: dict = {}
    model.set_stats(stats)
    window_t0 = last_save = time.perf_counter()
    last_loss = last_gnorm = 0.0
    stopped = False
    for step in range(first_step, steps + 1):
        if opts.stop_after and step == opts.stop_after + 1:
            stop.signal = signal.SIGINT  # as if Ctrl-C came during step stop_after (for tests)
        save_due = opts.save_every > 0 and step > first_step and time.perf_counter() - last_save >= opts.save_every
        if world > 1:  # processes stop and save at the same step: any one's signal or clock decides
            flags = torch.tensor([float(stop.signal), float(save_due)], dtype=torch.float64, device=device)
            torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
            if flags[0] > 0 and not stop.signal:
                stop.signal = int(flags[0])
            save_due = bool(flags[1] > 0)
        if save_due and not stop.signal:
            save_state(step - 1)
            last_save = time.perf_counter()
        if stop.signal:
            res["status"], res["reason"] = "interrupted", f"interrupted at step {step}"
            save_state(step - 1)
            stopped = True
            break
        xb, yb = task.next_train_batch(B)
        answers = int((yb != data.NO_TARGET).sum())  # of the whole batch: the mean's divisor
        b0, b1 = shard_rows(B, rank, world)
        for p in params:
            p.grad = None
        stats["nonpositive_rows"] = 0
        loss_t = torch.zeros((), dtype=torch.float64, device=device)
        micro = opts.micro_batch if opts.micro_batch > 0 else max(b1 - b0, 1)
        for c0 in range(b0, b1, micro):  # gradient accumulation: the same sum in parts
            x = torch.as_tensor(xb[c0:min(b1, c0 + micro)], dtype=torch.int64, device=device)
            y = torch.as_tensor(yb[c0:min(b1, c0 + micro)], dtype=torch.int64, device=device)
            out = model(x, y)
            loss_part = out["losses"].sum() / max(answers, 1)
            loss_part.backward()
            window.add(out["losses"], out["logits"].detach(), out["rows"], y, x.shape[1], x.shape[0])
            loss_t += loss_part.detach().to(torch.float64)
        for p in params:  # a process without examples (batch < processes) adds zeros
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        flags = torch.tensor([float(stats["nonpositive_rows"] > 0)], dtype=torch.float64, device=device)
        if world > 1:
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            torch.distributed.all_reduce(flat)
            offs = 0
            for p in params:
                p.grad.copy_(flat[offs:offs + p.numel()].view_as(p))
                offs += p.numel()
            torch.distributed.all_reduce(loss_t)
            torch.distributed.all_reduce(flags)
        loss = float(loss_t)
        if float(flags) > 0:
            res["nonpositive_steps"] += 1
            if res["nonpositive_steps"] == 1:
                res["first_nonpositive"] = step
        sq = torch.zeros((), dtype=torch.float64, device=device)  # in float64, one read back per step
        for p in params:
            sq += p.grad.double().pow(2).sum()
        gnorm = math.sqrt(float(sq))
        if not math.isfinite(loss) or not math.isfinite(gnorm):
            res["status"] = "diverged"
            res["reason"] = f"{'loss' if not math.isfinite(loss) else 'gradient'} not finite at step {step}"
            if step > first_step:
                res["reason"] += (f" (step {step - 1}, the last finite: loss {last_loss:.4g}, gradient norm "
                                  f"{last_gnorm:.4g} before clipping)")
            res["steps"] = step - 1
            break
        if clip > 0 and gnorm > clip:
            scale = clip / gnorm
            with torch.no_grad():
                for p in params:
                    p.grad.mul_(scale)
        last_loss, last_gnorm = loss, gnorm
        lr = learning_rate(tc, step)
        opt.step(lr)
        res["steps"] = step
        gnorm_sum += gnorm
        window_steps += 1
        evaluates = step % eval_every == 0 or step == steps
        if evaluates or (log_every > 0 and step % log_every == 0):
            window.reduce(world > 1, device)
            seconds = window_s0 + time.perf_counter() - window_t0
            if metrics:
                metrics.write(metrics_line(step, "train", window.result(seq_acc_applies), lr=lr,
                                           grad_norm=gnorm_sum / window_steps,
                                           tps=window_steps * B * xb.shape[1] / max(seconds, 1e-9),
                                           elapsed=elapsed()))
            if evaluates:
                evaluation_rows(step, lr)
            elif metrics:
                metrics.flush()
            window, gnorm_sum, window_steps, window_s0 = Window(), 0.0, 0, 0.0
            window_t0 = time.perf_counter()
    model.set_stats(None)
    res["wall_s"] = elapsed()
    if metrics:
        metrics.close()
    if stopped:
        if writer:
            print(f"{run['id']}: stopped after step {res['steps']}; state saved in {resume_path}", flush=True)
        return None
    if writer:
        engine = {"commit": git_commit(), "torch": torch.__version__, "python": platform.python_version(),
                  "device": str(device) if device.type != "cuda" else f"cuda:{torch.cuda.get_device_name(device)}",
                  "threads": torch.get_num_threads(), "processes": world, "dtype": opts.dtype}
        if res["status"] == "ok" and all(bool(torch.isfinite(p).all()) for p in params):
            meta = {"version": "torch", "vocab": str(run["vocab"]), "max_positions": str(run["max_positions"]),
                    "commit": engine["commit"], "build_type": "torch " + engine["torch"], "isa": engine["device"],
                    "threads": str(engine["threads"]), "engine": "torch"}
            write_safetensors(os.path.join(run_dir, "model.safetensors"),
                              [(n, by_name[n].detach().float().cpu().numpy()) for n in names], meta)
        nan = {"loss": math.nan, "token_acc": math.nan, "seq_acc": math.nan}
        for k in ("final_val", "final_test", "best_val", "best_test"):
            res[k] = res[k] or nan
        write_atomic(result_path, result_yaml(res, engine))
        if os.path.exists(resume_path):
            os.remove(resume_path)
        print(f"{run['id']} done in {res['wall_s']:.1f} s: status {res['status']}, test loss "
              f"{res['final_test']['loss']:.6f}, test token acc {res['final_test']['token_acc']:.4f}", flush=True)
    return res


def keep_metrics_up_to(path: str, step: int) -> None:
    """Drops metrics.csv rows after `step` (they are redone after a resume)."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    kept = lines[:1] + [ln for ln in lines[1:] if ln.strip() and int(ln.split(",", 1)[0]) <= step]
    write_atomic(path, "".join(kept))


def bench(run: dict, init_path: str | None, opts) -> dict:
    """Times training steps (forward, backward, AdamW) of one run's model
    without writing anything: opts.bench steps after one untimed step, with
    opts.bench_batch examples a step (default: the spec's batch) in forwards
    of opts.micro_batch. Returns seconds per step, tokens per second and the
    cost of 1000 steps at the spec's batch (per-token cost times its tokens)."""
    from .config import check_config

    device = torch.device(opts.device)
    cfg = check_config(run["config_yaml"], "config.yaml")
    form = opts.form if has_finite_state(cfg["attention"]) else "parallel"  # as training does
    model = Transformer(cfg, int(run["vocab"]), int(run["max_positions"]), form=form, chunk=opts.chunk)
    if init_path:
        init = read_safetensors(init_path)
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(torch.from_numpy(init[n]))
    model.to(device=device, dtype=torch.float64 if opts.dtype == "float64" else torch.float32)
    params = list(model.parameters())
    opt = AdamW(params, float(cfg["train"].get("weight_decay", 0.0)))
    task = data.Task(cfg)
    B = opts.bench_batch or int(cfg["train"]["batch"])
    micro = opts.micro_batch or B
    times = []
    for step in range(opts.bench + 1):
        xb, yb = task.next_train_batch(B)
        answers = int((yb != data.NO_TARGET).sum())
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for p in params:
            p.grad = None
        for c0 in range(0, B, micro):
            x = torch.as_tensor(xb[c0:c0 + micro], dtype=torch.int64, device=device)
            y = torch.as_tensor(yb[c0:c0 + micro], dtype=torch.int64, device=device)
            (model(x, y)["losses"].sum() / answers).backward()
        opt.step(1e-4)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step > 0:
            times.append(time.perf_counter() - t0)
    s = sum(times) / len(times)
    tokens = B * xb.shape[1]
    spec_B = int(cfg["train"]["batch"])
    out = {"run": run["id"], "form": form, "chunk": opts.chunk if form == "chunked" else None,
           "params": sum(p.numel() for p in params), "device": str(device),
           "threads": torch.get_num_threads(), "batch": B, "micro_batch": micro, "T": int(xb.shape[1]),
           "s_per_step": s, "tokens_per_s": tokens / s, "spec_batch": spec_B,
           "s_per_1000_steps_at_spec_batch": 1000 * s * spec_B / B}
    if device.type == "cuda":
        out["max_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return out


# ---------------------------------------------------------------- command line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m attnlab.train",
                                 description="Train the runs of an attnlab spec with PyTorch (docs/engines.md)")
    ap.add_argument("spec", help="experiment spec (YAML), validated by attnlab")
    ap.add_argument("--out", default="results", help="directory that receives <name>/ (default: results)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a dotted key")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"],
                    help="training precision (float64 for checks)")
    ap.add_argument("--tf32", action="store_true",
                    help="GPU matrix products in TF32 (faster, about 1e-3 relative rounding; not for equivalence checks)")
    ap.add_argument("--form", default="parallel", choices=["parallel", "chunked"],
                    help="attention form in training (chunked: finite-state variants only)")
    ap.add_argument("--chunk", type=int, default=64,
                    help="steps per chunk of the chunked form (64 suits F = HS, elu1 or linear; taylor 2 at head "
                         "size 64 runs faster with 256-512: docs/engines.md, 'The chunked form')")
    ap.add_argument("--init", default="attnlab", choices=["attnlab", "torch"],
                    help="initial weights: attnlab's (the same as `attnlab run`) or torch's own draws")
    ap.add_argument("--micro-batch", type=int, default=0,
                    help="examples per forward pass, gradients accumulated over the batch (0: the whole batch)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--shard", default="", metavar="I/N", help="train only runs i with i mod N == I")
    ap.add_argument("--save-every", type=float, default=300.0, help="seconds between resume saves (0: when stopped)")
    ap.add_argument("--stop-after", type=int, default=0, metavar="STEP",
                    help="stop as Ctrl-C would after step STEP, saving the resume state (for tests)")
    ap.add_argument("--overwrite", action="store_true", help="retrain finished runs")
    ap.add_argument("--bench", type=int, default=0, metavar="STEPS",
                    help="time STEPS training steps of one run (--bench-run; after one untimed step), write nothing")
    ap.add_argument("--bench-run", type=int, default=0, help="which run of the spec --bench times (0: the first)")
    ap.add_argument("--bench-batch", type=int, default=0, help="examples per step of --bench (default: the spec's)")
    ap.add_argument("--attnlab", help="the attnlab binary (default: $ATTNLAB_BINARY, build/app/attnlab, PATH)")
    opts = ap.parse_args(argv)

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        backend = "nccl" if opts.device.startswith("cuda") else "gloo"
        torch.distributed.init_process_group(backend)
    if opts.device == "cuda":  # this process's GPU: LOCAL_RANK under torchrun
        opts.device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    if opts.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(opts.device))
    if opts.threads > 0:
        torch.set_num_threads(opts.threads)
    if opts.tf32:  # float32 matrix products on tensor cores with 10-bit mantissas (Ampere and later)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    binary = find_attnlab(opts.attnlab)
    with tempfile.TemporaryDirectory(prefix="attnlab_init_") as tmp:
        init_dir = os.path.join(tmp, f"rank{rank}")
        if opts.bench:
            resolved = resolve_spec(binary, opts.spec, opts.set, init_dir if opts.init == "attnlab" else None, None)
            run0 = resolved["runs"][opts.bench_run]
            init = os.path.join(init_dir, run0["id"] + ".safetensors") if opts.init == "attnlab" else None
            print(json.dumps(bench(run0, init, opts), indent=1), flush=True)
            return 0
        resolved = resolve_spec(binary, opts.spec, opts.set, init_dir if opts.init == "attnlab" else None,
                                opts.out if rank == 0 else None)
        sweep = os.path.join(opts.out, resolved["name"])
        runs = resolved["runs"]
        if opts.shard:
            i, n = (int(v) for v in opts.shard.split("/"))
            runs = [r for k, r in enumerate(runs) if k % n == i]
        stop = Stop()
        stop.install()
        for run in runs:
            run_dir = os.path.join(sweep, "runs", run["id"])
            init = os.path.join(init_dir, run["id"] + ".safetensors") if opts.init == "attnlab" else None
            if rank == 0:
                os.makedirs(run_dir, exist_ok=True)
            if world > 1:
                torch.distributed.barrier()
            if train_run(run, run_dir, init, opts, stop, rank, world) is None and rank == 0 and not stop.signal:
                print(f"{run['id']} already done, skipped", flush=True)
            if stop.signal:
                break
    if world > 1:
        torch.distributed.destroy_process_group()
    if stop.signal:
        return 128 + stop.signal
    if rank == 0:
        print(f"wrote {sweep}; `attnlab summarize {sweep}` writes its summary", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
