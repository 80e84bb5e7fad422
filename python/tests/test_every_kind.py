"""Every task kind x every position kind, and every numerator family, trained
by the attnlab binary for a few steps and opened in Python: load_run's model
scores the regenerated test set as `attnlab eval RUN_DIR` does (loss to 1e-5,
the same accuracies), the test set equals the C++ one token for token
(attnlab_task_dump), and the model's vocabulary and positions are the
checkpoint's recorded facts, which Python does not work out itself."""

import os
import unittest

import numpy as np

import attnlab
import attnlab.variants as variants
import support
from test_run import LOSS_TOL

TEXT_FIXTURE = os.path.join(support.SOURCE_DIR, "tests", "data", "text_fixture.txt")
# One entry per task kind, with learned positions among the position kinds:
# copy's test inputs are longer than its training inputs (the positions then
# cover the longer ones), induction's input is seq_len + 1 tokens.
TASKS = {
    "copy": "{task.kind: [copy], task.vocab: [9], task.min_len: [1], task.max_len: [4], task.test_max_len: [6]",
    "lookup": "{task.kind: [lookup], task.vocab: [24], task.seq_len: [16], task.pairs: [3]",
    "selective_copy": "{task.kind: [selective_copy], task.vocab: [6], task.n_tokens: [3], task.noise_len: [6]",
    "induction": "{task.kind: [induction], task.vocab: [12], task.seq_len: [10]",
    "text": f"{{task.kind: [text], task.path: [\"{TEXT_FIXTURE}\"], task.seq_len: [24]",
}
POSITIONS = ["rope", "learned", "none"]


def numerator_grids() -> list[str]:
    """Every numerator of attnlab's variant table (attnlab.variants), each with a denominator in turn so that
    every denominator is there too, and exp also with gate; order 2 where the numerator takes one."""
    nums, dens = variants.NUMERATORS, variants.DENOMINATORS
    grids = []
    for i in range(max(len(nums), len(dens))):
        num, den = nums[i % len(nums)], dens[i % len(dens)]
        order = ", attention.order: [2]" if variants.takes_order(num) else ""
        grids.append(f"attention.numerator: [{num}]{order}, attention.denominator: [{den}]")
    return grids + ["attention.numerator: [exp], attention.denominator: [gate]"]


def attnlab_eval(run_dir: str) -> dict:
    """`attnlab eval RUN_DIR`: "test loss L token_acc A seq_acc S" (text: bits_per_byte B instead of seq_acc)."""
    words = support.run([support.attnlab_binary(), "eval", run_dir, "--threads", "1"]).stdout.split()
    if words[:2] != ["test", "loss"] or len(words) != 7:
        raise ValueError(f"unexpected attnlab eval output: {' '.join(words)}")
    return {words[i]: float(words[i + 1]) for i in range(1, 7, 2)}


def spec_text() -> str:
    lines = ["name: every_kind", "base:",
             "  task: {kind: lookup, vocab: 24, seq_len: 16, pairs: 3, test_examples: 24, val_examples: 8}",
             "  model: {layers: 1, d_model: 16, heads: 2, mlp: gelu}",
             "  attention: {numerator: exp, denominator: softmax}",
             "  train: {steps: 6, batch: 4, lr: 3.0e-3, warmup: 0, eval_every: 6}",
             "sweep:"]
    for task in TASKS.values():
        lines.append(f"  - {task}, model.position: [{', '.join(POSITIONS)}]}}")
    for num in numerator_grids():
        lines.append(f"  - {{{num}}}")
    return "\n".join(lines + ["seeds: [3]", ""])


class EveryKindTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = support.temp_dir("attnlab_py_every_kind_")
        spec = os.path.join(d, "every_kind.yaml")
        with open(spec, "w") as f:
            f.write(spec_text())
        support.run([support.attnlab_binary(), "run", spec, "--out", d, "--threads", "1"])
        runs = os.path.join(d, "every_kind", "runs")
        cls.run_dirs = [os.path.join(runs, r) for r in sorted(os.listdir(runs))]
        cls.dump_dir = os.path.join(d, "dump")

    def test_every_task_and_position_kind_is_there(self):
        seen = set()
        for run_dir in self.run_dirs:
            c = attnlab.read_config(run_dir)
            seen.add((c["task"]["kind"], c["model"].get("position", "rope"), c["attention"]["numerator"]))
        for kind in TASKS:
            for position in POSITIONS:
                self.assertIn((kind, position, "exp"), seen)
        for numerator in variants.NUMERATORS:
            self.assertIn(("lookup", "rope", numerator), seen)

    def test_load_run_scores_as_attnlab_eval(self):
        worst = 0.0
        for run_dir in self.run_dirs:
            with self.subTest(run=os.path.basename(run_dir)):
                want = attnlab_eval(run_dir)
                got = attnlab.evaluate_run(run_dir)
                worst = max(worst, abs(got["loss"] - want["loss"]))
                self.assertAlmostEqual(got["loss"], want["loss"], delta=LOSS_TOL)
                self.assertAlmostEqual(got["token_acc"], want["token_acc"], delta=1e-12)
                if "seq_acc" in want:
                    self.assertAlmostEqual(got["seq_acc"], want["seq_acc"], delta=1e-12)
                else:  # text: bits per byte instead
                    self.assertAlmostEqual(got["loss"] / np.log(2), want["bits_per_byte"], delta=2 * LOSS_TOL)
        print(f"\nlargest |load_run + evaluate - attnlab eval| test loss over {len(self.run_dirs)} runs: {worst:.3g}")

    def test_the_regenerated_test_set_is_the_cpp_one(self):
        for run_dir in self.run_dirs:
            with self.subTest(run=os.path.basename(run_dir)):
                config = attnlab.read_config(run_dir)
                out = os.path.join(self.dump_dir, os.path.basename(run_dir))
                os.makedirs(out, exist_ok=True)
                support.run([support.task_dump_binary(), os.path.join(run_dir, "config.yaml"), out, "1"])
                tokens, targets = attnlab.test_set(config)
                np.testing.assert_array_equal(tokens, np.load(os.path.join(out, "test_tokens.npy")))
                np.testing.assert_array_equal(targets, np.load(os.path.join(out, "test_targets.npy")))

    def test_the_model_is_built_from_the_recorded_facts(self):
        for run_dir in self.run_dirs:
            with self.subTest(run=os.path.basename(run_dir)):
                facts = attnlab.read_run_facts(run_dir)
                run = attnlab.load_run(run_dir)
                config, model = run.config, run.model()
                self.assertEqual(model.vocab, facts["vocab"])
                self.assertEqual(model.params["embed.weight"].shape[0], facts["vocab"])
                if config["model"].get("position") == "learned":
                    self.assertEqual(model.params["pos.weight"].shape[0], facts["max_positions"])
                for key in ("commit", "build_type", "isa"):
                    self.assertTrue(facts[key], key)
                self.assertEqual(facts["threads"], 1)

    def test_a_fact_that_disagrees_with_the_weights_is_refused(self):
        config = attnlab.read_config(self.run_dirs[0])
        params = attnlab.read_checkpoint(self.run_dirs[0])
        facts = attnlab.read_run_facts(self.run_dirs[0])
        facts["vocab"] += 1
        with self.assertRaisesRegex(ValueError, "embed.weight: shape"):
            attnlab.load_model(config, params, facts=facts)


if __name__ == "__main__":
    unittest.main()
