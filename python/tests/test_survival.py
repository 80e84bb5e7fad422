"""attnlab.survival: steps to solve as time to event, and the log-rank test.
The statistic, its chi-square p and its permutation p on a case worked by
hand; the permutation p against a brute-force recomputation (every split, the
statistic written out from its definition) on a larger case with ties and
censoring; the sampled permutation p near the exact one."""

import itertools
import math
import unittest

from scipy import stats

from attnlab import survival


def logrank_by_definition(t1, e1, t2, e2):
    """U^2 / V from the textbook sums, one event time at a time (no numpy)."""
    runs = [(t, e, 1) for t, e in zip(t1, e1)] + [(t, e, 2) for t, e in zip(t2, e2)]
    u = v = 0.0
    for t in sorted({t for t, e, _ in runs if e}):
        n = sum(1 for r in runs if r[0] >= t)
        n1 = sum(1 for r in runs if r[0] >= t and r[2] == 1)
        d = sum(1 for r in runs if r[0] == t and r[1])
        d1 = sum(1 for r in runs if r[0] == t and r[1] and r[2] == 1)
        u += d1 - d * n1 / n
        if n > 1:
            v += d * (n1 / n) * (1 - n1 / n) * (n - d) / (n - 1)
    return u * u / v if v > 0 else 0.0


class FirstSolvedStepTest(unittest.TestCase):
    def test_event_at_the_first_row_reaching_the_threshold(self):
        self.assertEqual(survival.first_solved_step([0, 500, 1000, 1500], [0.0, 0.5, 0.99, 0.98], 0.99),
                         (1000, True))

    def test_censored_at_the_last_step(self):
        self.assertEqual(survival.first_solved_step([0, 500, 1000], [0.0, 0.9, 0.98], 0.99), (1000, False))

    def test_mismatched_rows_refused(self):
        with self.assertRaises(ValueError):
            survival.first_solved_step([0, 500], [0.1], 0.99)

    def test_solved_fraction_by_step(self):
        self.assertEqual(survival.solved_fraction([500, 1000, 2000], [True, True, False], [0, 500, 1000, 2000]),
                         [0.0, 1 / 3, 2 / 3, 2 / 3])


class LogRankTest(unittest.TestCase):
    def test_hand_worked_case(self):
        # Arm 1 solves at 1 and 3; arm 2 at 2 and never by 4 (censored). Event times 1, 2, 3:
        # U = (1 - 1/2) + (0 - 1/3) + (1 - 1/2) = 2/3, V = 1/4 + 2/9 + 1/4 = 13/18, chi2 = 8/13.
        r = survival.logrank([1, 3], [True, True], [2, 4], [True, False])
        self.assertAlmostEqual(r.observed_minus_expected, 2 / 3, places=12)
        self.assertAlmostEqual(r.chi2, 8 / 13, places=12)
        self.assertAlmostEqual(r.p_asymptotic, stats.chi2.sf(8 / 13, 1), places=12)
        # The 6 splits give chi2 8/13 (twice), 49/17 (twice) and 2/13 (twice): 4 of 6 as extreme.
        self.assertTrue(r.exact)
        self.assertEqual(r.splits, 6)
        self.assertAlmostEqual(r.p_permutation, 4 / 6, places=12)
        self.assertEqual((r.events1, r.events2), (2, 1))

    def test_permutation_p_equals_brute_force_with_ties_and_censoring(self):
        t1 = [500, 500, 1000, 2500, 4000, 4000, 4000]
        e1 = [True, True, True, True, False, False, False]
        t2 = [1000, 1500, 1500, 2000, 2500, 3000]
        e2 = [True, True, True, True, True, True]
        r = survival.logrank(t1, e1, t2, e2)
        observed = logrank_by_definition(t1, e1, t2, e2)
        self.assertAlmostEqual(r.chi2, observed, places=10)
        pooled = list(zip(t1 + t2, e1 + e2))
        extreme = total = 0
        for chosen in itertools.combinations(range(len(pooled)), len(t1)):
            a = [pooled[i] for i in chosen]
            b = [pooled[i] for i in range(len(pooled)) if i not in chosen]
            s = logrank_by_definition([x[0] for x in a], [x[1] for x in a], [x[0] for x in b], [x[1] for x in b])
            extreme += s >= observed * (1 - 1e-12)
            total += 1
        self.assertEqual(r.splits, total)
        self.assertAlmostEqual(r.p_permutation, extreme / total, places=12)
        self.assertLess(r.observed_minus_expected, 0)  # arm 1 solves later than expected

    def test_sampled_splits_near_the_exact_p(self):
        t1, e1 = [500, 1000, 1500, 8000, 8000], [True, True, True, False, False]
        t2, e2 = [500, 500, 1000, 1000, 1500], [True] * 5
        exact = survival.logrank(t1, e1, t2, e2)
        limit = survival.EXACT_SPLITS_LIMIT
        survival.EXACT_SPLITS_LIMIT = 1
        try:
            sampled = survival.logrank(t1, e1, t2, e2, seed=3)
        finally:
            survival.EXACT_SPLITS_LIMIT = limit
        self.assertFalse(sampled.exact)
        self.assertEqual(sampled.splits, survival.SAMPLED_SPLITS + 1)
        self.assertAlmostEqual(sampled.chi2, exact.chi2, places=12)
        # 200,000 draws: standard error below 0.0012 for any p.
        self.assertLess(abs(sampled.p_permutation - exact.p_permutation), 0.006)

    def test_identical_arms_give_p_one(self):
        r = survival.logrank([500, 1000], [True, True], [500, 1000], [True, True])
        self.assertAlmostEqual(r.chi2, 0.0, places=12)
        self.assertAlmostEqual(r.p_asymptotic, 1.0, places=12)
        self.assertEqual(r.p_permutation, 1.0)

    def test_no_events_compare_nothing(self):
        r = survival.logrank([8000, 8000], [False, False], [8000], [False])
        self.assertIsNone(r.p_permutation)
        self.assertEqual(r.p_asymptotic, 1.0)

    def test_empty_arm_refused(self):
        with self.assertRaises(ValueError):
            survival.logrank([], [], [1], [True])


if __name__ == "__main__":
    unittest.main()
