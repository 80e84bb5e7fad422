"""Steps to solve as a time-to-event outcome: a run "solves" at the first
validation row whose accuracy reaches the threshold (the event) or is
censored at its last step when it never does. Two arms are compared with the
log-rank test, its p from the chi-square approximation and, exactly, from the
permutation distribution of the arm labels (every split of the pooled runs
into two arms of the same sizes, when there are few enough; otherwise a
seeded random sample of splits).

Standard library and numpy only.

    time, event = first_solved_step(steps, accuracies, 0.99)   # one run
    test = logrank([t1...], [e1...], [t2...], [e2...])          # two arms
    test.chi2, test.p_asymptotic, test.p_permutation
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

# Above this many splits the permutation p is estimated from a seeded random sample of them.
EXACT_SPLITS_LIMIT = 3_000_000
SAMPLED_SPLITS = 200_000


def first_solved_step(steps, accuracies, threshold: float) -> tuple[int, bool]:
    """(step, True) at the first row with accuracy >= threshold, else (last step, False): censored
    at the end of training. steps and accuracies: a run's validation rows in step order."""
    if len(steps) == 0 or len(steps) != len(accuracies):
        raise ValueError("first_solved_step: a run needs as many validation accuracies as steps, at least one")
    for step, acc in zip(steps, accuracies):
        if acc is not None and acc >= threshold:
            return int(step), True
    return int(steps[-1]), False


def solved_fraction(times, events, at_steps) -> list[float]:
    """The fraction of an arm's runs solved by each step of at_steps (no run is censored before the
    common end of training here, so this is 1 - Kaplan-Meier's survival)."""
    times, events = np.asarray(times), np.asarray(events, dtype=bool)
    return [float(np.mean(events & (times <= s))) for s in at_steps]


@dataclass
class LogRank:
    n1: int
    n2: int
    events1: int
    events2: int
    observed_minus_expected: float  # arm 1's events less those expected under no difference (< 0: arm 1 later)
    chi2: float
    p_asymptotic: float
    p_permutation: float | None  # None when no run of either arm solves (nothing to compare)
    splits: int  # splits the permutation p counts over
    exact: bool  # every split (True) or a random sample of them


def _score_and_variance(groups, at_risk, deaths, totals, died):
    """Log-rank U = sum_t (d1_t - d_t n1_t / n_t) and its variance under the null, for each row of
    `groups` (splits x runs, 1 for arm 1). at_risk, deaths: runs x event times (0/1)."""
    n1 = groups @ at_risk  # (splits, K) arm 1's runs at risk at each event time
    d1 = groups @ deaths  # (splits, K) arm 1's events there
    share = n1 / totals
    u = (d1 - died * share).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tie = np.where(totals > 1, (totals - died) / np.maximum(totals - 1, 1), 0.0)
    v = (died * share * (1 - share) * tie).sum(axis=1)
    return u, v


def logrank(times1, events1, times2, events2, seed: int = 0) -> LogRank:
    """The two-sided log-rank test of arm 1 against arm 2 (each: times and event flags, one per run)."""
    times = np.concatenate([np.asarray(times1, float), np.asarray(times2, float)])
    events = np.concatenate([np.asarray(events1, bool), np.asarray(events2, bool)])
    n1, n2 = len(times1), len(times2)
    if n1 == 0 or n2 == 0 or len(events1) != n1 or len(events2) != n2:
        raise ValueError("logrank: each arm needs at least one run, with one event flag per time")
    event_times = np.unique(times[events])  # (K)
    at_risk = (times[:, None] >= event_times[None, :]).astype(float)  # (n, K)
    deaths = (events[:, None] & (times[:, None] == event_times[None, :])).astype(float)  # (n, K)
    totals, died = at_risk.sum(axis=0), deaths.sum(axis=0)  # (K), (K)
    observed = np.concatenate([np.ones(n1), np.zeros(n2)])[None, :]
    u, v = _score_and_variance(observed, at_risk, deaths, totals, died)
    u, v = float(u[0]), float(v[0])
    e1, e2 = int(events[:n1].sum()), int(events[n1:].sum())
    if v <= 0:  # no events, or none while both arms were at risk: nothing to compare
        return LogRank(n1, n2, e1, e2, u, 0.0, 1.0, None if e1 + e2 == 0 else 1.0, 0, True)
    chi2 = u * u / v
    p_asymptotic = math.erfc(math.sqrt(chi2 / 2))  # chi-square with 1 degree of freedom
    n = n1 + n2
    count = math.comb(n, n1)
    exact = count <= EXACT_SPLITS_LIMIT
    split_rows = _all_splits(n, n1) if exact else _sampled_splits(n, n1, seed)
    as_extreme, splits = 0, 0
    for groups in split_rows:
        us, vs = _score_and_variance(groups, at_risk, deaths, totals, died)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats = np.where(vs > 0, us * us / np.where(vs > 0, vs, 1), 0.0)
        as_extreme += int((stats >= chi2 * (1 - 1e-12)).sum())
        splits += len(groups)
    if not exact:  # the observed split counts as one of the sample (Phipson & Smyth 2010)
        as_extreme, splits = as_extreme + 1, splits + 1
    return LogRank(n1, n2, e1, e2, u, chi2, p_asymptotic, as_extreme / splits, splits, exact)


def _all_splits(n: int, n1: int, block: int = 100_000):
    """Every choice of n1 of n runs as arm 1, in blocks of rows of 0/1."""
    combos = itertools.combinations(range(n), n1)
    while True:
        chosen = list(itertools.islice(combos, block))
        if not chosen:
            return
        rows = np.zeros((len(chosen), n))
        rows[np.repeat(np.arange(len(chosen)), n1), np.asarray(chosen).ravel()] = 1.0
        yield rows


def _sampled_splits(n: int, n1: int, seed: int, block: int = 50_000):
    rng = np.random.default_rng(seed)
    left = SAMPLED_SPLITS
    while left > 0:
        k = min(block, left)
        order = np.argsort(rng.random((k, n)), axis=1)
        rows = np.zeros((k, n))
        np.put_along_axis(rows, order[:, :n1], 1.0, axis=1)
        left -= k
        yield rows
