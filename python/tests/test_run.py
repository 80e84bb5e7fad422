"""A run trained by the attnlab binary, opened in Python: load_run gives its
config and a PyTorch model with its weights, and that model scores its
regenerated test set as `attnlab eval RUN_DIR` does (loss to 1e-5, the same
accuracies)."""

import os
import unittest

import numpy as np
import torch

import attnlab
import support

LOSS_TOL = 1e-5


def attnlab_eval(run_dir: str) -> dict:
    """`attnlab eval RUN_DIR`: "test loss L token_acc A seq_acc S"."""
    words = support.run([support.attnlab_binary(), "eval", run_dir, "--threads", "1"]).stdout.split()
    if words[:2] != ["test", "loss"] or len(words) != 7:
        raise ValueError(f"unexpected attnlab eval output: {' '.join(words)}")
    return {"loss": float(words[2]), "token_acc": float(words[4]), "seq_acc": float(words[6])}


class LoadRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = support.tiny_results_dir()
        runs = os.path.join(cls.results, "runs")
        cls.run_dirs = [os.path.join(runs, r) for r in sorted(os.listdir(runs))]  # copy, then lookup

    def test_the_tiny_sweep_has_runs_of_both_tasks(self):
        names = [os.path.basename(d) for d in self.run_dirs]
        self.assertEqual(names, sorted(support.TINY_RUNS))

    def test_load_run_gives_the_config_and_the_checkpoints_weights(self):
        run_dir = self.run_dirs[0]
        run = attnlab.load_run(run_dir)
        config, model = run.config, run.model()
        self.assertEqual(config, attnlab.read_config(os.path.join(run_dir, "config.yaml")))
        self.assertEqual(config["task"]["kind"], "copy")
        params = attnlab.read_checkpoint(os.path.join(run_dir, "model.safetensors"))
        self.assertEqual(set(params), set(model.params))
        for name, a in params.items():
            self.assertEqual(a.dtype, np.float32, name)
            self.assertEqual(model.params[name].dtype, torch.float64)
            np.testing.assert_array_equal(model.params[name].numpy(), a.astype(np.float64), err_msg=name)
        self.assertEqual(params["embed.weight"].shape, (config["task"]["vocab"] + 2, config["model"]["d_model"]))

    def test_the_model_scores_the_test_set_as_attnlab_eval(self):
        for run_dir in self.run_dirs:
            with self.subTest(run=os.path.basename(run_dir)):
                want = attnlab_eval(run_dir)
                got = attnlab.evaluate_run(run_dir)
                self.assertAlmostEqual(got["loss"], want["loss"], delta=LOSS_TOL)
                self.assertAlmostEqual(got["token_acc"], want["token_acc"], delta=1e-12)
                self.assertAlmostEqual(got["seq_acc"], want["seq_acc"], delta=1e-12)
                # and as the last `test` row of metrics.csv
                m = attnlab.read_metrics(run_dir)
                last = m[m["split"] == "test"].iloc[-1]
                self.assertEqual(last["step"], 40)
                self.assertAlmostEqual(got["loss"], last["loss"], delta=LOSS_TOL)

    def test_another_test_set_scores_otherwise(self):
        # The comparison can fail: the test set of the next seed gives another loss.
        run_dir = self.run_dirs[2]
        run = attnlab.load_run(run_dir)
        config, model = run.config, run.model()
        config["seed"] += 7
        tokens, targets = attnlab.test_set(config)
        other = attnlab.evaluate(model, tokens, targets)
        self.assertGreater(abs(other["loss"] - attnlab_eval(run_dir)["loss"]), 100 * LOSS_TOL)

    def test_evaluate_does_not_depend_on_the_chunk_size(self):
        run = attnlab.load_run(self.run_dirs[1])
        config, model = run.config, run.model()
        tokens, targets = attnlab.test_set(config)
        whole = attnlab.evaluate(model, tokens, targets)
        chunked = attnlab.evaluate(model, tokens, targets, batch=7)
        self.assertAlmostEqual(whole["loss"], chunked["loss"], delta=1e-12)
        self.assertEqual(whole["token_acc"], chunked["token_acc"])
        self.assertEqual(whole["seq_acc"], chunked["seq_acc"])

    def test_metrics_on_a_hand_made_batch(self):
        # Two examples: one with 2 answers (1 right), one with 1 answer (right),
        # one without answers (left out of the accuracies).
        run = attnlab.load_run(self.run_dirs[2])
        config, model = run.config, run.model()
        tokens, targets = attnlab.test_set(config)
        tokens = torch.as_tensor(tokens[:3], dtype=torch.int64)
        t = np.full((3, tokens.shape[1]), attnlab.NO_TARGET, dtype=np.int64)
        with torch.no_grad():
            out = model.forward(tokens, torch.zeros_like(tokens))  # every position an answer
        pred = out["logits"].argmax(-1).reshape(3, -1).numpy()  # (3, T)
        t[0, 3], t[0, 5], t[1, 2] = pred[0, 3], (pred[0, 5] + 1) % config["task"]["vocab"], pred[1, 2]
        m = attnlab.evaluate(model, tokens.numpy(), t)
        self.assertAlmostEqual(m["token_acc"], (0.5 + 1.0) / 2, delta=1e-15)
        self.assertAlmostEqual(m["seq_acc"], 0.5, delta=1e-15)
        losses = torch.nn.functional.cross_entropy(out["logits"], torch.as_tensor(t.reshape(-1)), reduction="none",
                                                   ignore_index=attnlab.NO_TARGET)
        self.assertAlmostEqual(m["loss"], float(losses.sum()) / 3, delta=1e-12)


if __name__ == "__main__":
    unittest.main()
