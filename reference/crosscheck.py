#!/usr/bin/env python3
"""Cross-check attnlab's forward and backward passes against PyTorch.

For every numerator x denominator pair of attnlab's variant table (which
`attnlab_crosscheck_dump --variants` prints, so a new row is checked without
editing a list here) and the modifiers (orders, clamp, detach_denominator,
in/out gates, eps, positions, MLPs, task), this writes a run config, runs attnlab's
attnlab_crosscheck_dump in double and in float (one forward + backward of a
small perturbed model on one training batch), recomputes the same batch with
the same parameters in torch float64 (python/attnlab/model.py, autograd), and
compares the loss, the per-answer losses, the logits at the answer rows,
every parameter gradient (names and shapes) and attnlab's reported
smallest softmax sum |z_t|. Every config key written must read back with the
same value in attnlab's resolved config.

Error of a tensor: max |attnlab - torch| / max(max |torch|, floor), floor =
1e-6 (a relative error against the tensor's scale, as llm.c compares).

    tolerance   double dump vs torch float64   1e-9
                float dump  vs torch float64   1e-3   (float32 accumulation)

A case whose softmax sum z_t comes near 0 (signed kernels: linear, cosine,
odd Taylor orders) loses digits on both sides. The check tries seeds
0..SEED_TRIES-1 and takes the first whose smallest |z_t| (computed in torch)
is >= MIN_ABS_Z; when none is, it takes the best one and reports the case as
"ill-conditioned", comparing it at the float tolerance for the double dump
and at ILL_FLOAT_TOL for the float dump.

Usage: crosscheck.py --dump PATH/attnlab_crosscheck_dump [--only SUBSTR] [--keep DIR] [--count]
(or ATTNLAB_CROSSCHECK_DUMP=PATH). Prints one line per case and ends with
"N passed, M failed"; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# The model lives in the attnlab Python package (python/attnlab/model.py):
# installed, or on PYTHONPATH (run_crosscheck.sh puts python/ there).
from attnlab import model as ref  # noqa: E402

TOL_DOUBLE = 1e-9
TOL_FLOAT = 1e-3
ILL_FLOAT_TOL = 1e-2
FLOOR = 1e-6
MIN_ABS_Z = 0.05
SEED_TRIES = 8

# Small model: 2 layers, d_model 16, 2 heads, lookup vocab 16, seq_len 8, 2 pairs, batch 4.
BASE = {
    "seed": 0,
    "task": {"kind": "lookup", "vocab": 16, "seq_len": 8, "pairs": 2, "power_a": 0.01,
             "random_filler": False, "test_examples": 4, "train_examples": 0},
    "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp": "swiglu", "position": "rope"},
    "attention": {"numerator": "exp", "denominator": "softmax", "in_gate": False, "out_gate": False,
                  "detach_denominator": False, "eps": 1e-6},
    "train": {"steps": 1, "batch": 4, "lr": 0.001, "min_lr": 0.0, "warmup": 0, "schedule": "constant",
              "weight_decay": 0.1, "clip": 1.0, "eval_every": 1},
}

GRID_ORDER = 2  # the order of an order-taking numerator in the numerator x denominator grid

# The variant table, read from the dump program by load_variants():
# name -> row (dicts with the fields print_variants() writes).
NUMERATOR_ROWS: dict[str, dict] = {}
DENOMINATOR_ROWS: dict[str, dict] = {}


def load_variants(dump: str):
    p = subprocess.run([dump, "--variants"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{dump} --variants failed ({p.returncode}): {p.stderr.strip()}")
    table = json.loads(p.stdout)
    NUMERATOR_ROWS.update({r["name"]: r for r in table["numerators"]})
    DENOMINATOR_ROWS.update({r["name"]: r for r in table["denominators"]})


def takes_order(num: str) -> bool:
    return NUMERATOR_ROWS[num]["takes_order"]


def variant(num, den, order=None, **att):
    a = {"numerator": num, "denominator": den, **att}
    if takes_order(num):
        a["order"] = order or GRID_ORDER
    return a


def label(num, order=None) -> str:
    return f"{num}{(order or GRID_ORDER) if takes_order(num) else ''}"


def cases() -> list[tuple[str, dict]]:
    """(name, overrides) with overrides {section: {key: value}}."""
    out = []
    numerators, denominators = list(NUMERATOR_ROWS), list(DENOMINATOR_ROWS)
    score_kernels = [n for n in numerators if NUMERATOR_ROWS[n]["family"] == "score_kernel"]
    for num in numerators:
        for den in denominators:
            out.append((f"{label(num)}/{den}", {"attention": variant(num, den)}))
    for num in filter(takes_order, numerators):
        for n in (1, 3, 4, 8, 12):
            out.append((f"{label(num, n)}/softmax", {"attention": variant(num, "softmax", n)}))
        out.append((f"{label(num, 12)}/norm", {"attention": variant(num, "norm", 12)}))
    # clamp: c = 0.5 binds on a good part of the scores; every score kernel, a denominator each in turn
    for i, num in enumerate(score_kernels):
        # dict.fromkeys: the turn's denominator may itself be none or gate
        for den in dict.fromkeys((denominators[i % len(denominators)], "none", "gate")):
            out.append((f"{label(num)}/{den} clamp=0.5", {"attention": variant(num, den, clamp=0.5)}))
    out += [
        ("taylor4/length clamp=0.5", {"attention": variant("taylor", "length", 4, clamp=0.5)}),
        ("linear/norm clamp=0.5", {"attention": variant("linear", "norm", clamp=0.5)}),
    ]
    for num in numerators:
        for den in (d for d in denominators if DENOMINATOR_ROWS[d]["detachable"]):
            out.append((f"{label(num)}/{den} detach", {"attention": variant(num, den, detach_denominator=True)}))
    out.append(("exp/softmax detach clamp=0.5",
                {"attention": variant("exp", "softmax", detach_denominator=True, clamp=0.5)}))
    # both gates on every numerator, a denominator without its own output gate each in turn
    plain = [d for d in denominators if not DENOMINATOR_ROWS[d]["has_output_gate"]]
    for i, num in enumerate(numerators):
        den = plain[(i + 3) % len(plain)]
        out.append((f"{label(num)}/{den} in_gate out_gate",
                    {"attention": variant(num, den, in_gate=True, out_gate=True)}))
    out += [
        ("exp/softmax in_gate", {"attention": variant("exp", "softmax", in_gate=True)}),
        ("elu1/norm in_gate", {"attention": variant("elu1", "norm", in_gate=True)}),
        ("exp/softmax out_gate", {"attention": variant("exp", "softmax", out_gate=True)}),
        ("linear/rmsnorm out_gate", {"attention": variant("linear", "rmsnorm", out_gate=True)}),
        ("taylor2/layernorm in_gate out_gate",
         {"attention": variant("taylor", "layernorm", in_gate=True, out_gate=True)}),
        ("cosine/gate in_gate", {"attention": variant("cosine", "gate", in_gate=True)}),
        ("relu/softmax eps=1e-2", {"attention": variant("relu", "softmax", eps=1e-2)}),
        ("exp/rmsnorm eps=1e-2", {"attention": variant("exp", "rmsnorm", eps=1e-2)}),
        ("exp/softmax position=learned", {"model": {"position": "learned"}}),
        ("exp/softmax position=none", {"model": {"position": "none"}}),
        ("cosine/norm position=learned", {"model": {"position": "learned"},
                                          "attention": variant("cosine", "norm")}),
        ("exp/softmax mlp=gelu", {"model": {"mlp": "gelu"}}),
        ("exp/softmax mlp=none", {"model": {"mlp": "none"}}),
        ("relu/layernorm mlp=gelu position=learned", {"model": {"mlp": "gelu", "position": "learned"},
                                                      "attention": variant("relu", "layernorm")}),
        ("taylor3/norm heads=4 layers=3", {"model": {"heads": 4, "layers": 3},
                                          "attention": variant("taylor", "norm", 3)}),
        # eps 3 sits inside the range of |q|, |k| and |u|: both branches of max(|x|, eps)
        ("cosine/norm eps=3", {"attention": variant("cosine", "norm", eps=3.0)}),
        ("exp/softmax short_conv=3", {"model": {"short_conv": 3}}),
        ("elu1/softmax short_conv=4 position=none", {"model": {"short_conv": 4, "position": "none"},
                                                     "attention": variant("elu1", "softmax")}),
        ("taylor2/norm short_conv=2 mlp=gelu in_gate", {"model": {"short_conv": 2, "mlp": "gelu"},
                                                        "attention": variant("taylor", "norm", in_gate=True)}),
        ("exp/softmax task=copy", {"task": {"kind": "copy", "vocab": 8, "min_len": 2, "max_len": 4}}),
        # the learned table covers the longer test inputs: T_max = 10 > T = 8
        ("elu1/softmax task=copy position=learned",
         {"task": {"kind": "copy", "vocab": 8, "min_len": 2, "max_len": 4, "test_max_len": 5},
          "model": {"position": "learned"}, "attention": variant("elu1", "softmax")}),
    ]
    names = [name for name, _ in out]
    assert len(set(names)) == len(names), f"repeated case names: {sorted(n for n in names if names.count(n) > 1)}"
    return out


def make_config(overrides: dict, seed: int) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["seed"] = seed
    for section, kv in overrides.items():
        if section == "task" and kv.get("kind") == "copy":
            cfg["task"] = {"kind": "copy", "test_examples": 4, "train_examples": 0}
        if section == "attention":  # a whole variant: keep only the base's modifiers it does not set
            cfg["attention"] = {k: v for k, v in BASE["attention"].items()
                                if k not in ("numerator", "denominator", "order", "clamp")}
        cfg[section].update(kv)
    if not DENOMINATOR_ROWS[cfg["attention"]["denominator"]]["detachable"]:
        cfg["attention"].pop("detach_denominator", None)
    return cfg


def yaml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        r = repr(v)  # shortest round-trip form; YAML 1.1 (PyYAML) wants a dot in the mantissa: 1.0e-06
        mant, e, exp = r.partition("e")
        return (mant if "." in mant else mant + ".0") + e + exp
    return str(v)


def config_to_yaml(cfg: dict) -> str:
    """In the layout of attnlab's run_config_to_yaml (two-level maps)."""
    lines = [f"seed: {cfg['seed']}"]
    for section in ("task", "model", "attention", "train"):
        lines.append(f"{section}:")
        lines += [f"  {k}: {yaml_value(v)}" for k, v in cfg[section].items()]
    return "\n".join(lines) + "\n"

# ---------------------------------------------------------------- one dump


def run_dump(dump: str, cfg_path: str, out_dir: str, precision: str):
    os.makedirs(out_dir, exist_ok=True)
    p = subprocess.run([dump, cfg_path, out_dir, precision], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{dump} {precision} failed ({p.returncode}): {p.stderr.strip()}")
    with open(os.path.join(out_dir, "out.json")) as f:
        out = json.load(f)
    out["grads"] = ref.read_safetensors(os.path.join(out_dir, "grads.safetensors"))
    batch = ref.read_safetensors(os.path.join(out_dir, "batch.safetensors"))
    out["tokens"] = torch.tensor(batch["tokens"], dtype=torch.int64)
    out["targets"] = torch.tensor(batch["targets"], dtype=torch.int64)
    return out


def check_resolved(cfg: dict, resolved_path: str):
    """Every key we wrote reads back with the same value in attnlab's resolved config."""
    resolved = ref.load_run_config(resolved_path)
    for section, kv in cfg.items():
        if not isinstance(kv, dict):
            kv, got = {section: kv}, {section: resolved.get(section)}
        else:
            got = resolved.get(section, {})
        for k, v in kv.items():
            if got.get(k) != v:
                raise RuntimeError(f"config key {section}.{k}: wrote {v!r}, attnlab resolved {got.get(k)!r}")


def torch_run(cfg: dict, params_path: str, tokens, targets) -> dict:
    """Loss, logits, per-answer losses and gradients in torch float64."""
    params = ref.load_params(params_path, torch.float64)
    model = ref.Reference(cfg, params)
    diag = {}
    res = model.forward(tokens, targets, diag)
    res["loss"].backward()
    grads = {k: (p.grad if p.grad is not None else torch.zeros_like(p)).detach().numpy() for k, p in params.items()}
    return {"loss": float(res["loss"]), "logits": res["logits"].detach().numpy(),
            "losses": res["losses"].detach().numpy(), "rows": res["rows"].numpy(), "grads": grads,
            "min_abs_z": diag.get("min_abs_z"), "max_cond_z": diag.get("max_cond_z")}


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return math.inf
    if a.size == 0:
        return 0.0
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.inf
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), FLOOR))


def compare(dump: dict, t: dict) -> dict:
    """Worst relative errors: loss, answer losses, logits, grads (and which grad)."""
    e = {"loss": rel_err(dump["loss"], t["loss"]),
         "losses": rel_err(dump["answer_losses"], t["losses"]),
         "logits": rel_err(np.asarray(dump["logits"]).reshape(t["logits"].shape)
                           if np.asarray(dump["logits"]).size == t["logits"].size else dump["logits"], t["logits"])}
    if list(dump["answer_rows"]) != t["rows"].tolist():
        e["rows"] = math.inf
    if (dump.get("min_abs_denominator") is None) != (t["min_abs_z"] is None):
        e["min_z"] = math.inf
    elif t["min_abs_z"] is not None:  # attnlab's own report of the smallest |z_t|
        e["min_z"] = rel_err(dump["min_abs_denominator"], t["min_abs_z"])
    names_d, names_t = set(dump["grads"]), set(t["grads"])
    e["grads"], e["grad_name"] = 0.0, ""
    if names_d != names_t:
        e["grads"], e["grad_name"] = math.inf, f"names differ: {sorted(names_d ^ names_t)}"
        return e
    for name in sorted(names_t):
        err = rel_err(dump["grads"][name], t["grads"][name])
        if not err <= e["grads"]:
            e["grads"], e["grad_name"] = err, name
    return e


def worst(e: dict) -> float:
    vals = [v for k, v in e.items() if k != "grad_name"]
    return max(vals) if all(v == v for v in vals) else math.inf


def fmt(x: float) -> str:
    return f"{x:.1e}" if math.isfinite(x) else "inf"


def check_case(dump_bin: str, name: str, overrides: dict, work: str) -> dict:
    """Runs one case; returns a result dict with pass/fail and the errors."""
    case_dir = os.path.join(work, name.replace("/", "_").replace(" ", "_").replace("=", "-"))
    best = None
    for seed in range(SEED_TRIES):
        cfg = make_config(overrides, seed)
        seed_dir = os.path.join(case_dir, f"seed{seed}")
        os.makedirs(seed_dir, exist_ok=True)
        cfg_path = os.path.join(seed_dir, "config.yaml")
        with open(cfg_path, "w") as f:
            f.write(config_to_yaml(cfg))
        cfg = ref.load_run_config(cfg_path)  # what the model reads is the file attnlab read
        dd = run_dump(dump_bin, cfg_path, os.path.join(seed_dir, "double"), "double")
        check_resolved(cfg, os.path.join(seed_dir, "double", "config.yaml"))
        td = torch_run(cfg, os.path.join(seed_dir, "double", "model_f64.safetensors"), dd["tokens"], dd["targets"])
        z = td["min_abs_z"]
        cand = {"seed": seed, "cfg": cfg, "cfg_path": cfg_path, "dir": seed_dir, "dd": dd,
                "td": td, "min_abs_z": z, "max_cond_z": td["max_cond_z"]}
        if best is None or (z is not None and z > best["min_abs_z"]):
            best = cand
        if z is None or z >= MIN_ABS_Z:
            best = cand
            break
    b = best
    ill = b["min_abs_z"] is not None and b["min_abs_z"] < MIN_ABS_Z
    df = run_dump(dump_bin, b["cfg_path"], os.path.join(b["dir"], "float"), "float")
    tf = torch_run(b["cfg"], os.path.join(b["dir"], "float", "model.safetensors"), df["tokens"], df["targets"])
    ed, ef = compare(b["dd"], b["td"]), compare(df, tf)
    tol_d = TOL_FLOAT if ill else TOL_DOUBLE
    tol_f = ILL_FLOAT_TOL if ill else TOL_FLOAT
    ok = worst(ed) <= tol_d and worst(ef) <= tol_f
    return {"name": name, "ok": ok, "ill": ill, "seed": b["seed"], "ed": ed, "ef": ef, "tol_d": tol_d,
            "tol_f": tol_f, "min_abs_z": b["min_abs_z"], "max_cond_z": b["max_cond_z"],
            "attnlab_min_abs_z": b["dd"].get("min_abs_denominator")}


def describe(e: dict) -> str:
    return (f"loss {fmt(e['loss'])} logits {fmt(max(e['logits'], e['losses']))} "
            f"grads {fmt(e['grads'])} ({e['grad_name']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", default=os.environ.get("ATTNLAB_CROSSCHECK_DUMP"),
                    help="path of attnlab_crosscheck_dump (default: $ATTNLAB_CROSSCHECK_DUMP)")
    ap.add_argument("--only", default=None, help="run only the cases whose name contains this")
    ap.add_argument("--keep", default=None, help="write the dumps under this directory and keep them")
    ap.add_argument("--count", action="store_true",
                    help="print the number of cases and exit (the docs check compares the docs' count with it)")
    args = ap.parse_args()
    if not args.dump or not os.access(args.dump, os.X_OK):
        print(f"crosscheck: FAILED: dump program not found or not executable: {args.dump!r} "
              "(pass --dump build/tests/attnlab_crosscheck_dump)", file=sys.stderr)
        return 1
    torch.set_num_threads(1)  # tiny tensors: threads cost more than they save
    load_variants(args.dump)
    if args.count:
        print(len(cases()))
        return 0
    todo = [c for c in cases() if args.only is None or args.only in c[0]]
    print(f"attnlab vs PyTorch {torch.__version__} float64: {len(todo)} cases; "
          f"tolerances: double dump {TOL_DOUBLE:.0e}, float dump {TOL_FLOAT:.0e} "
          f"(max |diff| / max(max |torch|, {FLOOR:.0e}) per tensor); "
          f"ill-conditioned (softmax min |z_t| < {MIN_ABS_Z} at every seed 0..{SEED_TRIES - 1}): "
          f"double {TOL_FLOAT:.0e}, float {ILL_FLOAT_TOL:.0e}")
    start = time.time()
    tmp = None
    if args.keep:
        work = args.keep
        os.makedirs(work, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="attnlab_crosscheck_")
        work = tmp.name
    passed = failed = 0
    worst_d = worst_f = ill_d = ill_f = (0.0, "")
    for name, overrides in todo:
        try:
            r = check_case(args.dump, name, overrides, work)
        except Exception as ex:  # a crash of either side is a failure of this case, not of the run
            failed += 1
            print(f"FAIL  {name:40s} error: {ex}")
            continue
        passed += r["ok"]
        failed += not r["ok"]
        status = "ok  " if r["ok"] else "FAIL"
        z = "" if r["min_abs_z"] is None else f"  min|z| {r['min_abs_z']:.3g}"
        note = "  ill-conditioned, compared at float tolerance" if r["ill"] else ""
        print(f"{status}  {name:40s} seed {r['seed']}  double: {describe(r['ed'])}  "
              f"float: {describe(r['ef'])}{z}{note}", flush=True)
        if r["ill"]:
            ill_d = max(ill_d, (worst(r["ed"]), name))
            ill_f = max(ill_f, (worst(r["ef"]), name))
        else:
            worst_d = max(worst_d, (worst(r["ed"]), name))
            worst_f = max(worst_f, (worst(r["ef"]), name))
    print(f"worst errors: conditioned cases: double {fmt(worst_d[0])} ({worst_d[1]}), "
          f"float {fmt(worst_f[0])} ({worst_f[1]}); ill-conditioned cases: double {fmt(ill_d[0])} ({ill_d[1]}), "
          f"float {fmt(ill_f[0])} ({ill_f[1]}); {time.time() - start:.1f}s")
    print(f"{passed} passed, {failed} failed")
    if tmp:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
