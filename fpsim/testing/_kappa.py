"""IEEE P3109's accuracy measure κ: how many of the format's values lie
between a result and the defined one.

Source: the IEEE P3109 draft D1, §4.4 "Approximate implementations" (the
definition, its NaN and infinity rules) and Annex D.1 (a worked example), as
transcribed in the public repository JeffreySarnoff/SmallFloats.jl, file
``docs/other/IEEE_D1.md``.  For a defined result ``e`` (fpsim's
``expected``) and an implementation's result ``a`` (``actual``), with ``V``
the format's finite values as a set of reals (so +0 and -0 are one value):

* ``IsNaN(a) != IsNaN(e)``: the pair does not "match on NaNs", κ = NaN;
* otherwise, unless both are NaN, both finite, or both infinite with one
  sign (P3109's ``MatchOnInfinity``): κ = ∞;
* both finite: κ = #(((e, a] ∪ [a, e)) ∩ V), the values from ``e`` (not
  counted) to ``a`` (counted).

Over many pairs κ is NaN if any pair's is NaN, else ∞ if any pair's is ∞,
else the largest count (P3109's rule for operations with several results).
Two NaNs, or two infinities of one sign, match: P3109 leaves them out of the
set ``I`` over which κ is a maximum, and here they count 0.

On pairs of finite values κ is the ULP distance of :mod:`fpsim.testing._ulp`:
in every format fpsim knows, consecutive magnitudes encode consecutive
values, +0 and -0 are one point, and no other value has two codes, so the
ULP distance counts exactly the values of ``V`` that κ counts (this is
checked against a count of decoded values for every pair of codes of the
8-bit formats in ``tests/test_testing_kappa.py``).  The two differ only on
the non-finite codes:

=========================  ================  ==========
pair                       ULP distance      κ
=========================  ================  ==========
largest finite, infinity   1                 ∞
+inf, -inf                 twice inf's mag.  ∞
NaN, a number              none              NaN
two NaNs (any codes)       none              0 (match)
=========================  ================  ==========

Counts are exact (uint64: every format is at most 64 bits wide); the
per-element array of :func:`fpsim.testing.kappa` holds them as float64, so
that NaN and ∞ fit, exact up to 2**53 (above that, in FP64 only, the nearest
float64, which still orders correctly against any limit below 2**53).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import array as _array
from ..formats import Format
from . import _ulp

# Precedence of a pair's κ in a maximum: NaN above ∞ above every count.
FINITE, INF, NAN = 0, 1, 2


def classify(a: np.ndarray, b: np.ndarray, fmt: Format
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(count, nan_bad, inf_bad)`` of the code pairs ``a``, ``b``:
    ``nan_bad`` where the pair does not match on NaNs (κ = NaN),
    ``inf_bad`` where it matches on NaNs but not on infinities (κ = ∞), and
    ``count`` (uint64) the number of values between them where both are
    finite, 0 elsewhere."""
    nan_a, inf_a, _ = _ulp.kinds(a, fmt)
    nan_b, inf_b, _ = _ulp.kinds(b, fmt)
    nan_bad = nan_a != nan_b
    finite = ~(nan_a | inf_a) & ~(nan_b | inf_b)
    if fmt.signed:
        top = a.dtype.type(fmt.width - 1)
        same_sign = (a >> top) == (b.astype(a.dtype, copy=False) >> top)
    else:
        same_sign = np.ones(a.shape, bool)
    # MatchOnInfinity: both NaN, both finite, or both infinite of one sign
    matched = (nan_a & nan_b) | finite | (inf_a & inf_b & same_sign)
    inf_bad = ~nan_bad & ~matched
    count = np.where(finite, _ulp.distance(a, b, fmt), np.uint64(0))
    return count, nan_bad, inf_bad


def as_floats(count: np.ndarray, nan_bad: np.ndarray, inf_bad: np.ndarray) -> np.ndarray:
    """κ of each pair as float64: the count, NaN or ∞."""
    out = count.astype(np.float64)
    out[inf_bad] = np.inf
    out[nan_bad] = np.nan
    return out


def scalar(level: int, count: int) -> int | float:
    """κ as a Python number: an exact int, ``math.inf`` or ``math.nan``."""
    return float("nan") if level == NAN else float("inf") if level == INF else int(count)


def to_json(k: int | float | None) -> int | str | None:
    """κ as JSON-ready data: the count, ``"inf"`` or ``"nan"`` (strict
    JSON has no NaN or infinity), None where not measured."""
    if k is None or isinstance(k, int):
        return k
    return "nan" if k != k else "inf"


def text(k: int | float) -> str:
    """κ as the report prints it."""
    return str(to_json(k))


@dataclass(frozen=True)
class Limits:
    """What κ changes in a comparison: ``max_kappa`` (None: no κ limit), and
    ``max_ulp``, the ULP limit the tally applied (a finite pair beyond it is
    already a ULP mismatch, not a κ one)."""

    max_kappa: int | None
    max_ulp: int


@dataclass
class KappaPartial:
    """κ over some of the pairs, merged by rank as
    :class:`fpsim.testing.tally.Partial` is: ``top`` is ``(level, count,
    rank, index)`` of the largest κ above 0 (NaN above ∞ above counts; the
    lowest rank among equals), None while every pair matches with κ = 0;
    ``mismatch`` counts the finite pairs within the ULP limit whose κ
    exceeds ``max_kappa``, and ``offenders`` holds ``(rank, index, "kappa",
    count, actual_code, expected_code)`` of the lowest-ranked of them."""

    top: tuple[int, int, int, int] | None = None
    mismatch: int = 0
    offenders: list[tuple[int, int, str, int, int, int]] = field(default_factory=list)

    def merge(self, other: KappaPartial, limit: int) -> None:
        """Add ``other``'s pairs (disjoint from these)."""
        if other.top is not None and (self.top is None or _key(other.top) > _key(self.top)):
            self.top = other.top
        self.mismatch += other.mismatch
        if other.offenders:
            self.offenders = sorted(self.offenders + other.offenders)[:limit]


def _key(top: tuple[int, int, int, int]) -> tuple[int, int, int]:
    level, count, rank, _ = top
    return level, count, -rank


def summarize(a: np.ndarray, b: np.ndarray, fmt: Format, limits: Limits, offenders: int,
              rank0: int | np.ndarray, index: np.ndarray | None = None,
              differing: np.ndarray | None = None) -> KappaPartial:
    """κ of the pairs ``a[i]``, ``b[i]`` (code arrays of the format's code
    type) of ranks ``rank0 + i`` (or ``rank0[i]`` when an array), at flat
    positions ``index[i]`` (default: their ranks), as
    :func:`fpsim.testing.tally.summarize` counts them.  Identical codes match
    (κ = 0), so only the differing pairs (``differing``, where the caller
    has their indices already) are classified."""
    p = KappaPartial()
    at = np.flatnonzero(a != b) if differing is None else differing
    if not at.size:
        return p
    count, nan_bad, inf_bad = classify(a[at], b[at], fmt)
    level = np.where(nan_bad, NAN, np.where(inf_bad, INF, FINITE))
    top_level = int(level.max())
    if top_level == FINITE:
        top_count = int(count.max())
        if top_count:
            i = int(np.argmax(count == top_count))
            p.top = (FINITE, top_count, *_place(int(at[i]), rank0, index))
    else:
        i = int(np.argmax(level == top_level))
        p.top = (top_level, 0, *_place(int(at[i]), rank0, index))
    if limits.max_kappa is not None:
        # nan_bad and inf_bad pairs are NaN or inf mismatches already
        # counts are below 2**64: larger limits accept them all
        top_u64 = (1 << 64) - 1
        bad = (level == FINITE) & (count > np.uint64(min(limits.max_kappa, top_u64))) \
            & (count <= np.uint64(min(limits.max_ulp, top_u64)))
        where = np.flatnonzero(bad)
        p.mismatch = int(where.size)
        p.offenders = [(*_place(int(at[i]), rank0, index), "kappa", int(count[i]),
                        int(a[at[i]]), int(b[at[i]])) for i in where[:offenders]]
    return p


def _place(i: int, rank0: int | np.ndarray, index: np.ndarray | None) -> tuple[int, int]:
    rank = rank0 + i if isinstance(rank0, int) else int(rank0[i])
    return rank, rank if index is None else int(index[i])


def of_codes(a: int, b: int, fmt: Format) -> int | float:
    """κ of one pair of codes."""
    dt = _array.code_dtype(fmt)
    count, nan_bad, inf_bad = classify(np.array([a], dt), np.array([b], dt), fmt)
    level = NAN if nan_bad[0] else INF if inf_bad[0] else FINITE
    return scalar(level, int(count[0]))


def describe(top: tuple[int, int, int, int] | None) -> tuple[int | float, Any]:
    """``(max_kappa, flat index or None)`` of a merged :class:`KappaPartial`'s top."""
    if top is None:
        return 0, None
    return scalar(top[0], top[1]), top[3]
