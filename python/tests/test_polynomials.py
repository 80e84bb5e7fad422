"""attnlab.polynomials: the three degree-N polynomials that replace exp in a
trained softmax model (scripts/truncation_polynomials.py), checked against
independent arithmetic, and the model's hook that scores with them."""

import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

from attnlab import model, polynomials


def causal_scores(seed, B=2, H=2, T=7, scale=6.0):
    g = torch.Generator().manual_seed(seed)
    s = (torch.rand(B, H, T, T, generator=g, dtype=torch.float64) * 2 - 1) * scale
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return torch.where(causal, s, torch.zeros((), dtype=s.dtype)), causal


class PolynomialsTest(unittest.TestCase):
    def test_series_is_the_sum_of_its_terms(self):
        s = torch.tensor([-3.0, -0.5, 0.0, 1.5, 4.0], dtype=torch.float64)
        for n in (0, 1, 2, 5, 9):
            want = [sum(x**m / math.factorial(m) for m in range(n + 1)) for x in s.tolist()]
            self.assertTrue(np.allclose(polynomials.series(s, n).numpy(), want, rtol=1e-14, atol=0), n)

    def test_chebyshev_interpolates_exp_and_converges(self):
        lo, hi = -12.0, 5.0
        x = torch.linspace(lo, hi, 401, dtype=torch.float64)
        errors = []
        for n in (4, 8, 16, 32):
            c = polynomials.chebyshev_coefficients(n, lo, hi)
            self.assertEqual(len(c), n + 1)
            p = polynomials.clenshaw(x, c, lo, hi)
            # numpy's own evaluation of the same Chebyshev series
            ref = np.polynomial.chebyshev.chebval((2 * x.numpy() - lo - hi) / (hi - lo), c)
            self.assertTrue(np.allclose(p.numpy(), ref, rtol=1e-12, atol=1e-12 * math.exp(hi)), n)
            errors.append(float((p - torch.exp(x)).abs().max()) / math.exp(hi))
        self.assertTrue(all(b < a for a, b in zip(errors, errors[1:])), errors)
        self.assertLess(errors[-1], 1e-12)  # double's rounding, not the interpolant's error
        # it interpolates: exact at the Chebyshev points of the first kind
        n = 6
        pts = np.cos((2 * np.arange(n + 1) + 1) * np.pi / (2 * (n + 1)))
        s = torch.tensor(0.5 * (hi + lo) + 0.5 * (hi - lo) * pts, dtype=torch.float64)
        got = polynomials.clenshaw(s, polynomials.chebyshev_coefficients(n, lo, hi), lo, hi)
        self.assertTrue(np.allclose(got.numpy(), np.exp(s.numpy()), rtol=1e-12))
        with self.assertRaises(ValueError):
            polynomials.chebyshev_coefficients(3, 1.0, 1.0)

    def test_centred_series_is_exp_shifted_per_row(self):
        s, causal = causal_scores(1)
        exact = polynomials.exact_weights(s, causal)
        w = polynomials.numerator(s, causal, "centred", 60)
        # the alternating series of exp(-12) cancels terms up to 12^12/12! ~ 2e4: ~1e-16 * 2e4 absolute
        self.assertTrue(torch.allclose(w / w.sum(-1, keepdim=True), exact, rtol=0, atol=1e-11))
        # low order: each row's largest score weighs p(0) = 1 before normalising
        w2 = polynomials.numerator(s, causal, "centred", 2)
        top = torch.where(causal, s, torch.full((), -math.inf, dtype=s.dtype)).argmax(-1, keepdim=True)
        self.assertTrue(bool((w2.gather(-1, top) == 1).all()))
        self.assertTrue(bool((w2.triu(1) == 0).all()))

    def test_maclaurin_and_centred_differ_at_low_order(self):
        s, causal = causal_scores(2)
        exact = polynomials.exact_weights(s, causal)
        tv = {k: float(polynomials.row_distance(
            (w := polynomials.numerator(s, causal, k, 3)) / w.sum(-1, keepdim=True), exact).mean())
            for k in ("maclaurin", "centred")}
        self.assertLess(tv["centred"], tv["maclaurin"], tv)

    def test_row_distance(self):
        a = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)
        self.assertEqual(float(polynomials.row_distance(a, a)), 0.0)
        self.assertEqual(float(polynomials.row_distance(a, torch.tensor([[0.0, 0.0, 1.0]],
                                                                        dtype=torch.float64))), 1.0)

    def test_unknown_kind_and_missing_range_are_errors(self):
        s, causal = causal_scores(3)
        with self.assertRaises(ValueError):
            polynomials.numerator(s, causal, "pade", 2)
        with self.assertRaises(ValueError):
            polynomials.numerator(s, causal, "chebyshev", 2)

    def test_the_model_scores_with_the_hook(self):
        # exp/softmax attention with the hook: the centred series at a high
        # order gives exp's output; Maclaurin at order 2 gives taylor 2's.
        g = torch.Generator().manual_seed(4)
        q, k, v = (torch.randn(2, 2, 9, 8, generator=g, dtype=torch.float64) for _ in range(3))
        att = {"numerator": "exp", "denominator": "softmax"}
        exact = model.attention(q, k, v, att)
        hooked = model.attention(q, k, v, dict(att, score_weights=lambda s, c: polynomials.numerator(
            s, c, "centred", 60)))
        self.assertTrue(torch.allclose(hooked, exact, rtol=0, atol=1e-11))
        taylor2 = model.attention(q, k, v, {"numerator": "taylor", "order": 2, "denominator": "softmax"})
        hooked2 = model.attention(q, k, v, dict(att, score_weights=lambda s, c: polynomials.numerator(
            s, c, "maclaurin", 2)))
        self.assertTrue(torch.allclose(hooked2, taylor2, rtol=1e-13, atol=1e-13))
        self.assertFalse(torch.allclose(hooked2, exact, atol=1e-3))


class DegreeNeededFigureTest(unittest.TestCase):
    """scripts/truncation_polynomials.py --figure: the lowest order from which
    every larger order tried is within the tolerance; runs never within are
    drawn on a row of their own and named on stderr."""

    SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "truncation_polynomials.py")

    def test_degree_needed_and_the_figure(self):
        columns = ["run", "lr", "seed", "largest_abs_score", "score_lo", "score_hi", "polynomial", "order",
                   "bits_per_byte", "exact_bits_per_byte", "excess_bits", "mean_row_tv", "max_row_tv",
                   "rows_nonpositive", "windows"]
        excess = {  # (polynomial, run): excess bits at orders 8, 16, 32, 64
            ("maclaurin", "a"): [3.0, 0.5, 0.01, 0.001],   # within from 32
            ("maclaurin", "b"): [0.01, 0.5, 0.01, 0.001],  # 8 is within, 16 is not: from 32
            ("centred", "a"): [3.0, 2.0, 1.0, 0.5],        # never
            ("chebyshev", "a"): [0.015, 0.0, -0.001, 0.0],  # from 8
        }
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            with open(path, "w", encoding="utf-8") as f:
                f.write(",".join(columns) + "\n")
                for (kind, run), values in excess.items():
                    for n, e in zip((8, 16, 32, 64), values):
                        f.write(f"{run},0.01,0,40.0,-40,12,{kind},{n},{2 + e},2,{e},0,0,0,8\n")
            r = subprocess.run([sys.executable, self.SCRIPT, "--figure", path, "--within", "0.02"],
                               capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
                                   [os.path.dirname(os.path.dirname(polynomials.__file__))] +
                                   [p for p in [os.environ.get("PYTHONPATH")] if p])))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("centred: a is never within 0.02 bits", r.stderr)
            self.assertNotIn("maclaurin: a is never", r.stderr)
            for ext in (".png", ".pdf"):
                self.assertGreater(os.path.getsize(os.path.join(d, "t" + ext)), 1000)
        sys.path.insert(0, os.path.dirname(self.SCRIPT))
        try:
            import truncation_polynomials as tp
        finally:
            sys.path.pop(0)
        self.assertEqual(tp.degree_needed([(8, 3.0), (16, 0.5), (32, 0.01), (64, 0.001)], 0.02), 32)
        self.assertEqual(tp.degree_needed([(8, 0.01), (16, 0.5), (32, 0.01), (64, 0.001)], 0.02), 32)
        self.assertEqual(tp.degree_needed([(8, 0.015), (16, 0.0), (32, -0.001)], 0.02), 8)
        self.assertIsNone(tp.degree_needed([(8, 3.0), (16, 0.5)], 0.02))
        self.assertIsNone(tp.degree_needed([(8, 0.0), (16, float("nan"))], 0.02))


if __name__ == "__main__":
    unittest.main()
