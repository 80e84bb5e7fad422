"""Polynomials of degree N in place of exp in softmax attention: scoring a
trained softmax model as a finite-state RNN (the states are sums of k^n v
for n <= N, so any degree-N polynomial of the score s = q.k/sqrt(d) has one).

Three polynomials of the same degree, each a function of a row's scores:

    maclaurin(N)       sum_{n<=N} s^n / n!                 (the paper's numerator)
    centred(N)         sum_{n<=N} (s - m)^n / n!,  m = the row's largest score
                       (softmax ignores a per-row shift, so this is exp's series
                       where the row's weights live; still degree N in s)
    chebyshev(N, a, b) the degree-N Chebyshev interpolant of exp on [a, b]
                       (a model's score range), evaluated by Clenshaw's rule

weights(s, causal, poly) gives a row's weights p(s_j) / sum_j p(s_j) over the
causal entries; row_distance the total-variation distance between two such
row sets. Every function works in the dtype of its input (double for checks).
"""

from __future__ import annotations

import math

import numpy as np
import torch

KINDS = ("maclaurin", "centred", "chebyshev")


def series(s: torch.Tensor, order: int) -> torch.Tensor:
    """sum_{n=0..order} s^n / n! by Horner's rule: 1 + s(1 + s/2(1 + ... (1 + s/order)))."""
    w = torch.ones_like(s)
    for n in range(order, 0, -1):
        w = 1.0 + w * s / n
    return w


def chebyshev_coefficients(order: int, lo: float, hi: float) -> np.ndarray:
    """c_0..c_order of the degree-`order` interpolant of exp on [lo, hi] at the
    Chebyshev points of the first kind: exp(s) ~ sum_n c_n T_n(x),
    x = (2 s - lo - hi) / (hi - lo)."""
    if not hi > lo:
        raise ValueError(f"score range [{lo}, {hi}] is empty")
    half, mid = 0.5 * (hi - lo), 0.5 * (hi + lo)
    return np.polynomial.chebyshev.chebinterpolate(lambda x: np.exp(mid + half * x), order)


def clenshaw(s: torch.Tensor, coefficients: np.ndarray, lo: float, hi: float) -> torch.Tensor:
    """sum_n c_n T_n(x) at x = (2 s - lo - hi) / (hi - lo), by Clenshaw's recurrence
    (stable where the power basis is not: T_n stays in [-1, 1] on the range)."""
    x = (2.0 * s - (lo + hi)) / (hi - lo)
    b1 = torch.zeros_like(s)
    b2 = torch.zeros_like(s)
    for c in coefficients[:0:-1]:  # c_N .. c_1
        b1, b2 = 2.0 * x * b1 - b2 + float(c), b1
    return x * b1 - b2 + float(coefficients[0])


def row_max(s: torch.Tensor, causal: torch.Tensor) -> torch.Tensor:
    """(..., T, 1): each row's largest causal score."""
    return torch.where(causal, s, torch.full((), -math.inf, dtype=s.dtype)).amax(-1, keepdim=True)


def numerator(s: torch.Tensor, causal: torch.Tensor, kind: str, order: int,
              score_range: tuple[float, float] | None = None) -> torch.Tensor:
    """p(s) of one of KINDS at degree `order` (entries above the diagonal: 0).
    score_range (lo, hi) is chebyshev's interval."""
    if kind == "maclaurin":
        w = series(s, order)
    elif kind == "centred":
        w = series(s - row_max(s, causal), order)
    elif kind == "chebyshev":
        if score_range is None:
            raise ValueError("chebyshev needs the model's score range")
        lo, hi = score_range
        w = clenshaw(s, chebyshev_coefficients(order, lo, hi), lo, hi)
    else:
        raise ValueError(f"unknown polynomial {kind!r} (one of {', '.join(KINDS)})")
    return torch.where(causal, w, torch.zeros((), dtype=w.dtype))


def exact_weights(s: torch.Tensor, causal: torch.Tensor) -> torch.Tensor:
    """softmax over each row's causal entries (B, H, T, T)."""
    w = torch.where(causal, torch.exp(s - row_max(s, causal)), torch.zeros((), dtype=s.dtype))
    return w / w.sum(-1, keepdim=True)


def row_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Total-variation distance of each row, (1/2) sum_j |a_j - b_j|: (..., T).
    Rows of a polynomial can hold negative weights; the distance is still the
    half L1 norm of the difference (above 1 when they do)."""
    return 0.5 * (a - b).abs().sum(-1)
