"""What the package's tests share: the attnlab programs they run and a tiny
results folder trained once per test process.

The programs come from ATTNLAB_BINARY and ATTNLAB_TASK_DUMP (set by run.sh
from ctest), else from build/ of the source tree.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile

import yaml

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
QUICKSTART_SPEC = os.path.join(SOURCE_DIR, "experiments", "quickstart.yaml")
# The quickstart experiment cut to a few dozen steps: 4 runs (lookup and copy,
# seeds 0 and 1) in about a second, with evaluations at steps 0, 20 and 40.
TINY_OVERRIDES = ["train.steps=40", "train.eval_every=20", "train.warmup=5"]
# Its run ids, in the spec's order.
TINY_RUNS = ["task.kind=lookup,seed=0", "task.kind=lookup,seed=1",
             "task.kind=copy,task.vocab=16,task.min_len=1,task.max_len=8,seed=0",
             "task.kind=copy,task.vocab=16,task.min_len=1,task.max_len=8,seed=1"]


def program(env_var: str, default: str) -> str:
    path = os.environ.get(env_var) or os.path.join(SOURCE_DIR, default)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path}: not built (set {env_var} or build it)")
    return path


def attnlab_binary() -> str:
    return program("ATTNLAB_BINARY", "build/app/attnlab")


def task_dump_binary() -> str:
    return program("ATTNLAB_TASK_DUMP", "build/tests/attnlab_task_dump")


def run(args: list[str], **kw) -> subprocess.CompletedProcess:
    """Runs a program; its output comes back as text; a failure raises with its stderr."""
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


def temp_dir(prefix: str) -> str:
    """A directory removed when the test process ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def write_config(path: str, config: dict) -> str:
    with open(path, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return path


_tiny_results: str | None = None


def tiny_results() -> str:
    """A parent folder holding results/quickstart/: the quickstart experiment
    trained by the attnlab binary with TINY_OVERRIDES (once per process, one
    thread per run so it is the same on every machine size)."""
    global _tiny_results
    if _tiny_results is None:
        parent = temp_dir("attnlab_py_results_")
        args = [attnlab_binary(), "run", QUICKSTART_SPEC, "--out", os.path.join(parent, "results"), "--threads", "1"]
        for o in TINY_OVERRIDES:
            args += ["--set", o]
        run(args)
        _tiny_results = parent
    return _tiny_results


def tiny_results_dir() -> str:
    """results/quickstart of tiny_results()."""
    return os.path.join(tiny_results(), "results", "quickstart")
