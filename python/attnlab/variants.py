"""The attention variants attnlab implements, as its variant table lists them.

variants.json beside this file is `attnlab variants --json` (the one list of
variants, lib/include/attnlab/config/variant_list.hpp), kept current by the
docs check (tests/tools/check_doc_facts.py): regenerate it with

    build/app/attnlab variants --json > python/attnlab/variants.json

Standard library only, so that the figure scripts can name variants without
torch or pandas.
"""

from __future__ import annotations

import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "variants.json"), encoding="utf-8") as _f:
    TABLE = json.load(_f)

NUMERATOR_ROWS = {r["name"]: r for r in TABLE["numerators"]}
DENOMINATOR_ROWS = {r["name"]: r for r in TABLE["denominators"]}

NUMERATORS = tuple(NUMERATOR_ROWS)
DENOMINATORS = tuple(DENOMINATOR_ROWS)
SCORE_KERNELS = tuple(n for n, r in NUMERATOR_ROWS.items() if r["family"] == "score_kernel")
FEATURE_KERNELS = tuple(n for n, r in NUMERATOR_ROWS.items() if r["family"] == "feature_map")
# Denominators whose output does not change when u_t and z_t are scaled: exp
# subtracts the row max of s before exponentiating with these (docs/attention.md).
SCALE_INVARIANT = tuple(d for d, r in DENOMINATOR_ROWS.items() if r["scale_invariant"])


def takes_order(numerator: str) -> bool:
    """Whether `attention.order` applies to the numerator (False for a name attnlab does not know)."""
    row = NUMERATOR_ROWS.get(numerator)
    return bool(row and row["takes_order"])


def finite_state(numerator: str) -> bool:
    """Whether the numerator (unclamped) has a fixed-size recurrent state."""
    return bool(NUMERATOR_ROWS[numerator]["finite_state"])


def sign(numerator: str, order=None) -> str:
    """The sign of the weights: positive, non_negative (>= 0, may be exactly 0: softmax adds eps) or any.
    It depends on the order's parity alone (checked by attnlab's tests)."""
    row = NUMERATOR_ROWS[numerator]
    odd = takes_order(numerator) and int(order) % 2 == 1
    return row["sign_at_odd_order" if odd else "sign_at_even_order"]


def numerator_label(numerator: str, order=None, clamp=None) -> str:
    """"exp", "taylor 4", "exp clamp 5": the numerator as attnlab's outputs name it
    (variant_table.hpp, numerator_label); `order` and `clamp` as config.yaml writes them."""
    s = numerator or "?"
    if takes_order(numerator) and order not in (None, ""):
        s += f" {order}"
    if clamp not in (None, ""):
        s += f" clamp {clamp}"
    return s


def variant_label(numerator: str, denominator: str, order=None, clamp=None) -> str:
    """"taylor 4/softmax": a variant as attnlab's outputs name it (variant_label)."""
    return f"{numerator_label(numerator, order, clamp)}/{denominator}"
