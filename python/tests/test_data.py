"""The package's task data equals attnlab's, token for token: for every task
kind (and copy with test lengths other than the training lengths, lookup with
a fixed training pool and random filler, text with and without a pool), the
test set, the validation set and the first training batches regenerated in
Python equal what attnlab_task_dump writes from the C++ generators; so do
the raw rng draws."""

import os
import unittest

import numpy as np

import attnlab
import support

# Minimal configs (the loader fills the defaults; the package must fill the
# same ones). One per case; each gets its own seed.
MODEL = {"layers": 1, "d_model": 8, "heads": 1}
ATTENTION = {"numerator": "exp", "denominator": "softmax"}
TRAIN = {"steps": 10, "batch": 5, "lr": 0.001, "warmup": 0}
TEXT_FIXTURE = os.path.join(support.SOURCE_DIR, "tests", "data", "text_fixture.txt")
TASKS = {
    "copy": {"kind": "copy", "vocab": 10, "min_len": 2, "max_len": 6, "test_examples": 40},
    # Test inputs longer than training inputs: another T and other lengths.
    "copy_test_lengths": {"kind": "copy", "vocab": 7, "min_len": 1, "max_len": 4, "test_min_len": 5,
                          "test_max_len": 9, "test_examples": 40},
    "copy_defaults": {"kind": "copy", "vocab": 5, "max_len": 3},
    "lookup": {"kind": "lookup", "vocab": 32, "seq_len": 16, "pairs": 3, "test_examples": 40},
    "lookup_pool_filler": {"kind": "lookup", "vocab": 40, "seq_len": 24, "pairs": 5, "power_a": 1.0,
                           "random_filler": True, "train_examples": 6, "test_examples": 30},
    "selective_copy": {"kind": "selective_copy", "vocab": 8, "n_tokens": 4, "noise_len": 10, "test_examples": 40},
    "selective_copy_pool": {"kind": "selective_copy", "vocab": 5, "n_tokens": 3, "noise_len": 0,
                            "train_examples": 4, "test_examples": 20},
    "induction": {"kind": "induction", "vocab": 12, "seq_len": 14, "test_examples": 40},
    # The committed fixture (tests/data/text_fixture.txt): 1630 bytes each for
    # validation and test, so 40 test windows of 33 bytes fit and 200 do not.
    "text": {"kind": "text", "path": TEXT_FIXTURE, "seq_len": 32, "test_examples": 40, "val_examples": 200},
    "text_pool": {"kind": "text", "path": TEXT_FIXTURE, "seq_len": 20, "holdout": 0.1, "train_examples": 7,
                  "test_examples": 10000},
}
TRAIN_BATCHES = 3


def config_of(case: str, seed: int) -> dict:
    return {"seed": seed, "task": dict(TASKS[case]), "model": MODEL, "attention": ATTENTION, "train": TRAIN}


def dump(config: dict, out_dir: str) -> dict:
    """Runs attnlab_task_dump on config; returns its arrays and sizes."""
    os.makedirs(out_dir, exist_ok=True)
    path = support.write_config(os.path.join(out_dir, "config.yaml"), config)
    support.run([support.task_dump_binary(), path, out_dir, str(TRAIN_BATCHES)])
    out = {name: np.load(os.path.join(out_dir, name + ".npy"))
           for name in ("test_tokens", "test_targets", "val_tokens", "val_targets", "train_tokens", "train_targets")}
    with open(os.path.join(out_dir, "sizes.txt")) as f:
        out["sizes"] = {k: int(v) for k, v in (line.split() for line in f)}
    with open(os.path.join(out_dir, "rng.txt")) as f:
        out["rng"] = [line.split() for line in f]
    return out


def python_data(config: dict) -> dict:
    tokens, targets = attnlab.test_set(config)
    val_tokens, val_targets = attnlab.val_set(config)
    batches = list(attnlab.train_batches(config, steps=TRAIN_BATCHES))
    return {"test_tokens": tokens, "test_targets": targets, "val_tokens": val_tokens, "val_targets": val_targets,
            "train_tokens": np.stack([b[0] for b in batches]), "train_targets": np.stack([b[1] for b in batches])}


class TaskDataTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = support.temp_dir("attnlab_py_data_")

    def check_case(self, case: str, seed: int):
        config = config_of(case, seed)
        cpp = dump(config, os.path.join(self.dir, case))
        py = python_data(config)
        for name in ("test_tokens", "test_targets", "val_tokens", "val_targets", "train_tokens", "train_targets"):
            self.assertEqual(py[name].dtype, np.int32, name)
            np.testing.assert_array_equal(py[name], cpp[name], err_msg=f"{case}: {name}")
        # Not vacuous: answers exist in both splits.
        self.assertGreater(int((cpp["test_targets"] != attnlab.NO_TARGET).sum()), 0)
        self.assertGreater(int((cpp["train_targets"] != attnlab.NO_TARGET).sum()), 0)
        self.assertEqual(attnlab.model_vocab_size(config), cpp["sizes"]["vocab_size"])
        self.assertEqual(attnlab.train_seq_len(config), cpp["sizes"]["train_seq_len"])
        self.assertEqual(attnlab.test_seq_len(config), cpp["sizes"]["test_seq_len"])
        return config, cpp

    def test_copy(self):
        self.check_case("copy", 3)

    def test_copy_with_other_test_lengths(self):
        _, cpp = self.check_case("copy_test_lengths", 4)
        self.assertEqual(cpp["test_tokens"].shape, (40, 18))
        self.assertEqual(cpp["train_tokens"].shape, (TRAIN_BATCHES, TRAIN["batch"], 8))
        # Test answers run n = 5..9 tokens: longer than any training example.
        self.assertGreaterEqual(int((cpp["test_targets"] != attnlab.NO_TARGET).sum(1).min()), 5)

    def test_copy_with_default_lengths(self):
        self.check_case("copy_defaults", 0)

    def test_lookup(self):
        self.check_case("lookup", 5)

    def test_lookup_with_a_training_pool_and_random_filler(self):
        self.check_case("lookup_pool_filler", 6)

    def test_selective_copy(self):
        self.check_case("selective_copy", 7)

    def test_selective_copy_with_a_training_pool(self):
        self.check_case("selective_copy_pool", 8)

    def test_text(self):
        _, cpp = self.check_case("text", 11)
        self.assertEqual(cpp["test_tokens"].shape, (40, 32))
        self.assertEqual(cpp["val_tokens"].shape, (1629 // 32, 32))  # all that fit: floor((e - 1) / T)
        # The split, by hand: e = floor(0.05 * 32615) = 1630; the test part is the last 1630 bytes.
        data = open(TEXT_FIXTURE, "rb").read()
        self.assertEqual(attnlab.text_split(len(data), 0.05), (32615 - 2 * 1630, 1630))
        self.assertEqual(bytes(cpp["test_tokens"][1].astype(np.uint8)), data[32615 - 1630 + 32:32615 - 1630 + 64])

    def test_text_with_a_training_pool(self):
        self.check_case("text_pool", 12)

    def test_induction(self):
        self.check_case("induction", 9)

    def test_a_trained_runs_config(self):
        # A real run's config.yaml, written by `attnlab run` (every key resolved).
        run_dir = os.path.join(support.tiny_results_dir(), "runs", support.TINY_RUNS[3])
        config = attnlab.read_config(run_dir)
        cpp = dump(config, os.path.join(self.dir, "run"))
        tokens, targets = attnlab.test_set(config)
        np.testing.assert_array_equal(tokens, cpp["test_tokens"])
        np.testing.assert_array_equal(targets, cpp["test_targets"])

    def test_another_seed_gives_other_data(self):
        # The comparison can fail: the next seed's data differ from the dump.
        config, cpp = self.check_case("lookup", 5)
        config["seed"] = 6
        py = python_data(config)
        self.assertFalse(np.array_equal(py["test_tokens"], cpp["test_tokens"]))
        self.assertFalse(np.array_equal(py["train_tokens"], cpp["train_tokens"]))

    def test_rng_draws(self):
        for seed in (0, 2147483647):
            cpp = dump(config_of("lookup", seed), os.path.join(self.dir, f"rng{seed}"))["rng"]
            self.assertEqual(["derive_seed", str(attnlab.derive_seed(seed, 7))], cpp[0])
            r = attnlab.Rng(seed)
            draws = {"next_u64": r.next_u64, "uniform": r.uniform, "uniform_int": lambda: r.uniform_int(-5, 5),
                     "normal": r.normal}
            for name, text in cpp[1:]:
                want = float(text) if name in ("uniform", "normal") else int(text)
                self.assertEqual(draws[name](), want, f"seed {seed}: {name}")
            self.assertEqual([n for n, _ in cpp].count("normal"), 5)


if __name__ == "__main__":
    unittest.main()
