"""The package is as strict as the binary (issue 51): the same hostile
inputs are given to `attnlab` and to the package, and both must give the
same verdict, accepted or refused: config.yaml keys (unknown, duplicated, not
applying to the run, missing, mistyped), metrics.csv rows (garbage, cut
short, ragged, not numbers), checkpoint values (NaN, infinity) and files
that are not regular files within their size limit (a FIFO, a device, a file
over its limit). The binary's key lists are read from the binary itself (its
"unknown key (expected one of ...)" errors), so a key added to one side and
not the other fails here.

Every call of either side that could hang or take unbounded memory if its
check were missing (a FIFO, /dev/urandom) runs in a subprocess bounded in
time (30 s) and address space (4 GiB)."""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys
import unittest
import warnings

import numpy as np

import attnlab
import support
from attnlab.config import SCHEMA, SECTIONS, TASK_KINDS, section_keys

TEXT_FIXTURE = os.path.join(support.SOURCE_DIR, "tests", "data", "text_fixture.txt")
PACKAGE_DIR = os.path.join(support.SOURCE_DIR, "python")
TIMEOUT = 30
ADDRESS_SPACE = 4 << 30


def _bounded():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run_bounded(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """`args` to its end within TIMEOUT seconds and ADDRESS_SPACE bytes; a hang fails the test."""
    full_env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MALLOC_ARENA_MAX="2", **(env or {}))
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=_bounded, env=full_env)


def binary(*args: str) -> subprocess.CompletedProcess:
    return _run_bounded([support.attnlab_binary(), *args])


def python_side(code: str, *args: str) -> subprocess.CompletedProcess:
    """`code` run by this interpreter with the package on its path and sys.argv[1:] = args."""
    return _run_bounded([sys.executable, "-c", "import sys, attnlab\n" + code, *args], {"PYTHONPATH": PACKAGE_DIR})


def last_line(text: str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def _text_facts():
    with open(TEXT_FIXTURE, "rb") as f:
        raw = f.read()
    return len(raw), hashlib.sha256(raw).hexdigest()


def full_config(kind: str) -> dict:
    """A config of task `kind` with every key that applies to it (as attnlab
    writes config.yaml, and the optional keys too)."""
    tasks = {
        "copy": {"vocab": 16, "min_len": 1, "max_len": 8, "test_min_len": 1, "test_max_len": 8},
        "lookup": {"vocab": 16, "seq_len": 8, "pairs": 2, "power_a": 0.01, "random_filler": False},
        "selective_copy": {"vocab": 6, "n_tokens": 3, "noise_len": 6},
        "induction": {"vocab": 12, "seq_len": 10},
        "text": {"seq_len": 16, "path": TEXT_FIXTURE, "holdout": 0.1, "sha256": _text_facts()[1],
                 "size": _text_facts()[0]},
    }
    return {
        "seed": 0,
        "task": {"kind": kind, **tasks[kind], "test_examples": 16, "val_examples": 16, "train_examples": 0},
        "model": {"layers": 1, "d_model": 16, "heads": 2, "mlp": "swiglu", "mlp_hidden": 48, "position": "rope",
                  "short_conv": 0},
        "attention": {"numerator": "taylor", "order": 2, "clamp": 5.0, "denominator": "softmax", "in_gate": False,
                      "out_gate": False, "detach_denominator": False, "eps": 1.0e-06, "form": "auto", "chunk": 64},
        "train": {"steps": 20, "batch": 4, "lr": 0.001, "min_lr": 0.0, "warmup": 2, "schedule": "cosine",
                  "weight_decay": 0.1, "clip": 1.0, "eval_every": 10, "log_every": 0,
                  "init": "/runs/x/model.safetensors", "init_sha256": "0" * 64},
    }


def config_text(config: dict) -> str:
    """config.yaml's text for nested dicts, in attnlab's layout (block maps, plain scalars)."""
    def scalar(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v)
        return str(v)

    lines = []
    for key, value in config.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {scalar(v)}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {scalar(value)}")
    return "\n".join(lines) + "\n"


class VerdictTest(unittest.TestCase):
    """Each case: a run folder whose config.yaml (or another file) is made
    hostile, then `attnlab eval` and the package on it."""

    @classmethod
    def setUpClass(cls):
        cls.dir = support.temp_dir("attnlab_py_hostile_")
        cls.results = os.path.join(support.tiny_results_dir())
        cls.lookup_run = os.path.join(cls.results, "runs", support.TINY_RUNS[0])

    def fresh_run(self, name: str = "run") -> str:
        """A copy of the tiny lookup run (config.yaml, metrics.csv, result.yaml, model.safetensors)."""
        path = os.path.join(self.dir, name)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(self.lookup_run, path)
        return path

    # --------------------------------------------------------- config.yaml

    def binary_config_verdict(self, run: str) -> tuple[bool, str]:
        """(accepted, message): the binary refuses a config.yaml with exit code
        2 and an error naming it; past the config, eval goes on to the
        checkpoint (which may not fit a changed config: still accepted)."""
        p = binary("eval", run, "--threads", "1")
        err = last_line(p.stderr)
        refused = p.returncode == 2 and "/config.yaml" in err and "model.safetensors" not in err
        return not refused, err

    def python_config_verdict_value(self, config: dict) -> dict:
        run = self.fresh_run()
        with open(os.path.join(run, "config.yaml"), "w") as f:
            f.write(config_text(config))
        return attnlab.read_config(run)

    def python_config_verdict(self, run: str) -> tuple[bool, str]:
        try:
            attnlab.read_config(run)
            return True, ""
        except ValueError as e:
            return False, str(e)

    def check_same_config_verdict(self, text: str | bytes, accepted: bool | None = None, name: str = ""):
        run = self.fresh_run()
        path = os.path.join(run, "config.yaml")
        with open(path, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
        b, bmsg = self.binary_config_verdict(run)
        p, pmsg = self.python_config_verdict(run)
        with self.subTest(case=name or text[:80]):
            self.assertEqual(b, p, f"binary: {'accepted' if b else bmsg}; python: {'accepted' if p else pmsg}")
            if accepted is not None:
                self.assertEqual(b, accepted, bmsg)
            if not p:
                self.assertIn(path, pmsg)  # the error names the file
        return b, bmsg, pmsg

    def test_every_full_config_is_accepted_by_both(self):
        for kind in TASK_KINDS:
            config = full_config(kind)
            _, bmsg, pmsg = self.check_same_config_verdict(config_text(config), True, f"full {kind}")
            # Every key that applies to the kind is there.
            given = {f"{s}.{k}" if isinstance(v, dict) else s for s, v in config.items()
                     for k in (v if isinstance(v, dict) else [None])}
            self.assertEqual(given, set(SCHEMA) - self.not_applying(kind), kind)

    def not_applying(self, kind: str) -> set[str]:
        return {k for k, d in SCHEMA.items() if d["when"] and d["when"][0] == "task.kind" and kind not in d["when"][1]}

    def test_the_key_lists_are_the_binary_s(self):
        for section in SECTIONS[1:] + ("",):
            config = full_config("lookup")
            if section:
                config[section]["zzz_unknown"] = 1
            else:
                config["zzz_unknown"] = 1
            _, bmsg, pmsg = self.check_same_config_verdict(config_text(config), False, f"unknown in {section or 'top'}")
            listed = re.search(r"unknown key \(expected one of ([^)]*)\)", bmsg)
            self.assertIsNotNone(listed, bmsg)
            self.assertEqual(listed.group(1).split(", "), section_keys(section), section or "top")
            self.assertIn("unknown key", pmsg)

    def test_a_key_that_does_not_apply_is_refused_by_both(self):
        samples = {"vocab": 16, "seq_len": 8, "pairs": 2, "power_a": 0.01, "random_filler": "true", "min_len": 1,
                   "max_len": 8, "test_min_len": 1, "test_max_len": 8, "n_tokens": 3, "noise_len": 6,
                   "path": TEXT_FIXTURE, "holdout": 0.1, "sha256": "0" * 64, "size": 10}
        for kind in TASK_KINDS:
            for key in sorted(self.not_applying(kind)):
                config = full_config(kind)
                config["task"][key.split(".", 1)[1]] = samples[key.split(".", 1)[1]]
                _, bmsg, pmsg = self.check_same_config_verdict(config_text(config), False, f"{key} in {kind}")
                self.assertIn(f"{key}: has no effect", bmsg)
                self.assertIn(f"{key}: has no effect", pmsg)
        # A key that sets nothing (false, or empty text) is dropped where it means nothing, by both.
        config = full_config("copy")
        config["task"]["random_filler"] = False
        self.check_same_config_verdict(config_text(config), True, "random_filler false in copy")
        self.assertNotIn("random_filler", self.python_config_verdict_value(config)["task"])
        # The keys of the model and attention sections that apply under a condition.
        for change, drop in (({"attention": {"numerator": "exp"}}, None),        # order with exp
                             ({"attention": {"numerator": "elu1"}}, "order"),     # clamp with a feature map
                             ({"attention": {"denominator": "norm", "detach_denominator": True}}, None),
                             ({"model": {"mlp": "gelu"}}, None)):                 # mlp_hidden without swiglu
            config = full_config("lookup")
            for section, values in change.items():
                config[section].update(values)
            if drop:
                del config["attention"][drop]
            self.check_same_config_verdict(config_text(config), False, f"{change}")

    def test_a_missing_needed_key_is_refused_by_both(self):
        for kind in TASK_KINDS:
            for key, d in SCHEMA.items():
                if not d["needed"] or key in self.not_applying(kind):
                    continue
                config = full_config(kind)
                section, sub = key.split(".", 1)
                del config[section][sub]
                self.check_same_config_verdict(config_text(config), False, f"{key} missing in {kind}")
        config = full_config("lookup")
        config["attention"]["numerator"] = "exp"
        del config["attention"]["order"]
        self.check_same_config_verdict(config_text(config), True, "exp needs no order")

    def test_values_are_read_as_the_binary_reads_them(self):
        base = config_text(full_config("lookup"))

        def case(old, new, accepted):
            self.assertIn(old, base)
            self.check_same_config_verdict(base.replace(old, new, 1), accepted, new.strip())

        case("  warmup: 2\n", '  warmup: "2"\n', False)          # a quoted number is text
        case("  warmup: 2\n", "  warmup: +2\n", True)
        case("  warmup: 2\n", "  warmup: -1\n", False)           # below its range
        case("  steps: 20\n", "  steps: 1e3\n", False)           # floating-point notation for an integer
        case("  steps: 20\n", "  steps: 2.0\n", False)
        case("  steps: 20\n", "  steps: 0x14\n", False)
        case("  lr: 0.001\n", "  lr: 1e-3\n", True)              # a number written with an exponent
        case("  lr: 0.001\n", "  lr: .nan\n", False)
        case("  lr: 0.001\n", "  lr: 0\n", False)                # lr > 0
        case("  layers: 1\n", "  layers: 65\n", False)           # above its range
        case("  in_gate: false\n", "  in_gate: no\n", False)      # only true and false
        case("  in_gate: false\n", "  in_gate: False\n", False)
        case("  numerator: taylor\n", "  numerator: Taylor\n", False)
        case("  seed: 0\n".lstrip(), "seed: ~\n", False)
        case("  vocab: 16\n", "  vocab: 16\n  vocab: 17\n", False)   # a key twice
        case("  vocab: 16\n", "  vocab: [16]\n", False)
        case("  vocab: 16\n", "  vocab:\n", False)

    def test_malformed_files_are_refused_by_both(self):
        good = config_text(full_config("lookup"))
        for text, name in (("", "empty"), ("\n\n# nothing\n", "only a comment"), ("[1]\n", "a list"),
                           ("task: 5\n", "a section that is no map"), (good + "---\nseed: 1\n", "two documents"),
                           ("seed: 0\ntask:\n\tkind: lookup\n", "a tab"), (good.replace("task:", "task: {", 1),
                                                                          "an open bracket"),
                           (good.encode() + b"# \xff\xfe\n", "not UTF-8")):
            b, bmsg, pmsg = self.check_same_config_verdict(text, False, name)

    def test_the_size_limit_is_the_same(self):
        good = config_text(full_config("lookup"))
        limit = 1 << 20
        for size, accepted in ((limit, True), (limit + 1, False)):
            padding = "#" + "x" * (size - len(good) - 2) + "\n"
            text = good + padding
            self.assertEqual(len(text), size)
            _, bmsg, pmsg = self.check_same_config_verdict(text, accepted, f"{size} bytes")
            if not accepted:
                self.assertIn("more than the 1 MiB a run's config.yaml may have", bmsg)
                self.assertIn("more than the 1 MiB a run's config.yaml may have", pmsg)

    # ------------------------------------------------ files that are not regular

    def test_files_that_are_not_regular_are_refused_by_both_without_waiting(self):
        code = {"config.yaml": "attnlab.read_config(sys.argv[1])",
                "metrics.csv": "attnlab.read_metrics(sys.argv[1])",
                "model.safetensors": "attnlab.read_checkpoint(sys.argv[1])"}
        for name, py in code.items():
            for kind in ("fifo", "urandom", "directory"):
                run = self.fresh_run()
                path = os.path.join(run, name)
                os.remove(path)
                if kind == "fifo":
                    os.mkfifo(path)
                    what = "is a FIFO (named pipe), expected a regular file"
                elif kind == "urandom":
                    os.symlink("/dev/urandom", path)
                    what = "is a character device, expected a regular file"
                else:
                    os.mkdir(path)
                    what = "is a directory, expected a regular file"
                with self.subTest(file=name, kind=kind):
                    # The binary: eval reads config.yaml and the checkpoint, summarize metrics.csv.
                    if name == "metrics.csv":
                        folder = os.path.join(self.dir, "folder")
                        shutil.rmtree(folder, ignore_errors=True)
                        shutil.copytree(self.results, folder, ignore=shutil.ignore_patterns("runs"))
                        os.makedirs(os.path.join(folder, "runs"))
                        os.rename(run, os.path.join(folder, "runs", support.TINY_RUNS[0]))
                        run = os.path.join(folder, "runs", support.TINY_RUNS[0])
                        b = binary("summarize", folder)
                    else:
                        b = binary("eval", run, "--threads", "1")
                    p = python_side(py, run)
                    self.assertNotEqual(b.returncode, 0)
                    self.assertNotEqual(p.returncode, 0)
                    self.assertIn(what, b.stderr)
                    if kind == "urandom":
                        self.assertIn(f"{os.path.join(run, name)} (a symbolic link to /dev/urandom)", b.stderr)
                        self.assertIn(f"{os.path.join(run, name)} (a symbolic link to /dev/urandom)",
                                      last_line(p.stderr))
                    self.assertIn(f"{os.path.join(run, name)}", last_line(p.stderr))
                    self.assertIn(what, last_line(p.stderr))

    def test_a_text_corpus_that_is_a_fifo_is_refused_by_both(self):
        fifo = os.path.join(self.dir, "corpus.fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        config = {"seed": 0, "task": {"kind": "text", "path": fifo, "seq_len": 16, "test_examples": 8}}
        p = python_side("attnlab.test_set({'seed': 0, 'task': {'kind': 'text', 'path': sys.argv[1], "
                        "'seq_len': 16, 'test_examples': 8, 'holdout': 0.1}})", fifo)
        spec = os.path.join(self.dir, "fifo.yaml")
        with open(spec, "w") as f:
            f.write("name: fifo\nbase:\n  task: {kind: text, path: %s, seq_len: 16}\n"
                    "  model: {layers: 1, d_model: 16, heads: 2}\n"
                    "  attention: {numerator: exp, denominator: softmax}\n"
                    "  train: {steps: 2, lr: 1.0e-3, warmup: 0}\n" % config["task"]["path"])
        b = binary("validate", spec)
        self.assertEqual(b.returncode, 2, b.stderr)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("is a FIFO (named pipe), expected a regular file", b.stderr)
        self.assertIn("is a FIFO (named pipe), expected a regular file", last_line(p.stderr))

    # ------------------------------------------------------------- metrics.csv

    def metrics_case(self, rows: str, accepted: bool, name: str):
        folder = os.path.join(self.dir, "metrics_folder")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.results, folder)
        run = os.path.join(folder, "runs", support.TINY_RUNS[0])
        with open(os.path.join(run, "metrics.csv"), "a") as f:
            f.write(rows)
        b = binary("summarize", folder)
        b_refused = f"missing run {support.TINY_RUNS[0]}: " in b.stderr and "metrics.csv" in b.stderr
        try:
            attnlab.read_metrics(run)
            p_refused, pmsg = False, ""
        except ValueError as e:
            p_refused, pmsg = True, str(e)
        with self.subTest(case=name):
            self.assertEqual(not b_refused, accepted, b.stderr)
            self.assertEqual(p_refused, b_refused, pmsg)
            if p_refused:
                # The same words: "<path>: row N: <problem>".
                problem = pmsg.split(": ", 1)[1]
                self.assertIn(problem, b.stderr)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    curves = attnlab.curves_from_runs(folder)
                self.assertNotIn(support.TINY_RUNS[0], set(curves["run_id"]))
                self.assertTrue(any(problem in str(w.message) for w in caught))

    def test_metrics_rows_get_the_same_verdict(self):
        last = "40,test"
        self.metrics_case("garbage,,,\n", False, "garbage row")
        self.metrics_case(last + ",1.2", False, "a last line cut short")
        self.metrics_case(last + ",1.2,0.5,0.5,,,\n", False, "8 cells")
        self.metrics_case(last + ",1.2,0.5,0.5,,,,,\n", False, "10 cells")
        self.metrics_case(last + ",abc,0.5,0.5,,,,,\n", False, "a loss that is no number")
        self.metrics_case(last + ",+1.2,0.5,0.5,,,,,\n", False, "a plus sign")
        self.metrics_case(last + ",1e999,0.5,0.5,,,,,\n", False, "out of range")
        self.metrics_case("40,tset,1.2,0.5,0.5,,,,\n", False, "a split that is none")
        self.metrics_case("39,test,1.2,0.5,0.5,,,,\n", False, "a step that goes back")
        self.metrics_case("40,test,nan,0.5,-inf,,,,\n", True, "nan and inf are numbers")
        self.metrics_case("40,test,1.5e-3,.5,5.,,,,\n", True, "decimal spellings")

    # ---------------------------------------------------------- checkpoint values

    def test_a_checkpoint_holding_nan_or_inf_is_refused_by_both(self):
        for bad in (np.nan, np.inf, -np.inf):
            run = self.fresh_run()
            path = os.path.join(run, "model.safetensors")
            n, header = attnlab.read_safetensors_header(path)
            name = sorted(k for k in header if k != "__metadata__")[1]
            begin = header[name]["data_offsets"][0]
            with open(path, "r+b") as f:
                f.seek(8 + n + begin + 4)
                f.write(np.float32(bad).tobytes())
            with self.subTest(value=bad):
                b = binary("eval", run, "--threads", "1")
                p = python_side("print(attnlab.evaluate_run(sys.argv[1]))", run)
                why = f"{path}: tensor {name} holds non-finite values (NaN or infinity)"
                self.assertEqual(b.returncode, 1, b.stderr)
                self.assertIn(why, b.stderr)
                self.assertNotEqual(p.returncode, 0, p.stdout)
                self.assertEqual(last_line(p.stderr), "ValueError: " + why)


if __name__ == "__main__":
    unittest.main()
