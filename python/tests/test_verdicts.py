"""The verdicts of `attnlab summarize` recomputed independently with scipy:
a 4-variant x 4-seed sweep trained by the binary, its runs' final test metrics
then set from a seeded random draw (so that differences, spreads and solved
counts vary), summarized with two baselines, a margin and Holm's correction;
every paired interval, p-value, Holm-adjusted p, equivalence p, Welch
interval, correlation, Clopper-Pearson interval, Fisher p and verdict of
comparisons.csv must equal what scipy gives from summary.csv."""

import csv
import math
import os
import random
import re
import unittest

import numpy as np
from scipy import stats

import support

SPEC = """name: verdicts
base:
  task: {kind: lookup, vocab: 16, seq_len: 8, pairs: 2, test_examples: 16}
  model: {layers: 1, d_model: 16, heads: 2}
  attention: {numerator: exp, denominator: softmax}
  train: {steps: 4, batch: 4, lr: 1.0e-3, warmup: 0, eval_every: 2}
sweep:
  attention.numerator: [exp, linear, elu1, relu]
seeds: [0, 1, 2, 3]
"""
NUMERATORS = ["exp", "linear", "elu1", "relu"]
MARGIN = 0.05
ALPHA = 0.05


def holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment by its definition."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - j) * p[i]))
        out[i] = running
    return out


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = 0.0 if k == 0 else stats.beta.ppf(ALPHA / 2, k, n - k + 1)
    high = 1.0 if k == n else stats.beta.ppf(1 - ALPHA / 2, k + 1, n - k)
    return low, high


def smallest_fisher_p(n1: int, n2: int) -> float:
    return min(stats.fisher_exact([[a, n1 - a], [b, n2 - b]])[1] for a in range(n1 + 1) for b in range(n2 + 1))


class VerdictsTest(unittest.TestCase):
    largest_difference = 0.0

    @classmethod
    def setUpClass(cls):
        parent = support.temp_dir("attnlab_py_verdicts_")
        spec = os.path.join(parent, "verdicts.yaml")
        with open(spec, "w") as f:
            f.write(SPEC)
        support.run([support.attnlab_binary(), "run", spec, "--out", parent, "--threads", "1"])
        cls.dir = os.path.join(parent, "verdicts")
        # Final test metrics drawn per run: a shift per variant, noise per seed, and a seed effect shared by
        # every variant (so pairing matters); token accuracy around the solve threshold.
        rng = random.Random(11)
        shift = {"exp": 0.0, "linear": 0.15, "elu1": 0.01, "relu": 0.04}
        seed_effect = [rng.gauss(0, 0.05) for _ in range(4)]
        solve_rate = {"exp": 1.0, "linear": 0.0, "elu1": 0.75, "relu": 0.5}
        for numerator in NUMERATORS:
            for seed in range(4):
                loss = 1.0 + shift[numerator] + seed_effect[seed] + rng.gauss(0, 0.02)
                acc = 0.995 if seed < round(4 * solve_rate[numerator]) else 0.5
                path = os.path.join(cls.dir, "runs", f"attention.numerator={numerator},seed={seed}", "result.yaml")
                with open(path) as f:
                    text = f.read()
                text = re.sub(r"final_test: \{loss: [^,]+, token_acc: [^,]+,",
                              f"final_test: {{loss: {loss!r}, token_acc: {acc!r},", text)
                with open(path, "w") as f:
                    f.write(text)
        support.run([support.attnlab_binary(), "summarize", cls.dir,
                     "--baseline", "attention.numerator=exp", "--baseline", "attention.numerator=elu1",
                     "--margin", f"loss={MARGIN}", "--correction", "holm"])
        with open(os.path.join(cls.dir, "summary.csv"), newline="") as f:
            summary = list(csv.DictReader(f))
        cls.loss = {(r["attention.numerator"], int(r["seed"])): float(r["final_test_loss"]) for r in summary}
        cls.acc = {(r["attention.numerator"], int(r["seed"])): float(r["final_test_token_acc"]) for r in summary}
        with open(os.path.join(cls.dir, "comparisons.csv"), newline="") as f:
            cls.rows = [r for r in csv.DictReader(f) if r["report"] == "summarize options"]

    @classmethod
    def tearDownClass(cls):
        print(f"\nverdicts: largest difference from scipy {cls.largest_difference:.3g}")

    def close(self, got: str, want: float, what: str, tol: float = 1e-8):
        g = float(got)
        diff = abs(g - want) / max(1.0, abs(want))
        VerdictsTest.largest_difference = max(VerdictsTest.largest_difference, diff)
        self.assertLess(diff, tol, f"{what}: attnlab {got}, scipy {want!r}")

    def family(self, metric: str) -> list[dict]:
        return [r for r in self.rows if r["metric"] == metric]

    def test_paired_t_holm_equivalence_and_welch(self):
        rows = self.family("loss")
        # 3 variants against exp, 3 against elu1 (minus elu1 against itself): 6 comparisons in one family.
        self.assertEqual(len(rows), 6)
        p, p_level, verdicts = [], [], []
        for r in rows:
            v, b = r["attention.numerator"], r["baseline"].split("=")[1]
            d = np.array([self.loss[(v, s)] - self.loss[(b, s)] for s in range(4)])
            t = stats.ttest_1samp(d, 0.0)
            half = stats.t.ppf(0.975, 3) * d.std(ddof=1) / math.sqrt(4)
            self.close(r["mean_diff"], d.mean(), f"{v} vs {b} mean")
            self.close(r["ci_low"], d.mean() - half, f"{v} vs {b} ci_low")
            self.close(r["ci_high"], d.mean() + half, f"{v} vs {b} ci_high")
            self.close(r["p"], t.pvalue, f"{v} vs {b} p")
            lower = stats.ttest_1samp(d, -MARGIN, alternative="greater").pvalue
            upper = stats.ttest_1samp(d, MARGIN, alternative="less").pvalue
            self.close(r["p_level"], max(lower, upper), f"{v} vs {b} p_level")
            va = np.array([self.loss[(v, s)] for s in range(4)])
            ba = np.array([self.loss[(b, s)] for s in range(4)])
            w = stats.ttest_ind(va, ba, equal_var=False)
            se = math.sqrt(va.var(ddof=1) / 4 + ba.var(ddof=1) / 4)
            df = se**4 / ((va.var(ddof=1) / 4) ** 2 / 3 + (ba.var(ddof=1) / 4) ** 2 / 3)
            self.close(r["welch_p"], w.pvalue, f"{v} vs {b} welch p")
            self.close(r["welch_df"], df, f"{v} vs {b} welch df")
            self.close(r["welch_low"], d.mean() - stats.t.ppf(0.975, df) * se, f"{v} vs {b} welch low")
            self.close(r["correlation"], stats.pearsonr(va, ba)[0], f"{v} vs {b} r")
            needed = next(n for n in range(2, 1001)
                          if stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n) < MARGIN)
            self.assertEqual(int(r["seeds_needed"]), needed, f"{v} vs {b} seeds_needed")
            p.append(t.pvalue)
            p_level.append(max(lower, upper))
            verdicts.append(r["verdict"])
        adjusted, adjusted_level = holm(p), holm(p_level)
        for r, pa, pl, (v, b) in zip(rows, adjusted, adjusted_level,
                                     [(r["attention.numerator"], r["baseline"]) for r in rows]):
            self.close(r["p_adjusted"], pa, f"{v} vs {b} p_adjusted")
            self.close(r["p_level_adjusted"], pl, f"{v} vs {b} p_level_adjusted")
            self.assertEqual(r["family_size"], "6")
            self.assertEqual(r["margin"], str(MARGIN))
            mean = float(r["mean_diff"])
            want = ("behind" if mean > 0 else "ahead") if pa < ALPHA else "level" if pl < ALPHA / 2 else "not resolved"
            self.assertEqual(r["verdict"], want, f"{v} vs {b}")
        # The draw gives more than one kind of verdict, so the rule is exercised.
        self.assertGreater(len(set(verdicts)), 1, verdicts)

    def test_solved_counts_clopper_pearson_and_fisher(self):
        rows = self.family("solved")
        self.assertEqual(len(rows), 6)
        p = []
        for r in rows:
            v, b = r["attention.numerator"], r["baseline"].split("=")[1]
            kv = sum(self.acc[(v, s)] >= 0.99 for s in range(4))
            kb = sum(self.acc[(b, s)] >= 0.99 for s in range(4))
            self.assertEqual((int(r["variant_k"]), int(r["variant_n"])), (kv, 4))
            self.assertEqual((int(r["baseline_k"]), int(r["baseline_n"])), (kb, 4))
            for side, k in (("variant", kv), ("baseline", kb)):
                low, high = clopper_pearson(k, 4)
                self.close(r[f"{side}_ci_low"], low, f"{v} vs {b} {side} low", 1e-8)
                self.close(r[f"{side}_ci_high"], high, f"{v} vs {b} {side} high", 1e-8)
            fisher = stats.fisher_exact([[kv, 4 - kv], [kb, 4 - kb]])[1]
            self.close(r["p"], fisher, f"{v} vs {b} fisher", 1e-8)
            self.close(r["smallest_p"], smallest_fisher_p(4, 4), "smallest p", 1e-8)
            p.append(fisher)
        for r, pa in zip(rows, holm(p)):
            self.close(r["p_adjusted"], pa, "solved p_adjusted", 1e-8)


if __name__ == "__main__":
    unittest.main()
