"""Counting element pairs chunk by chunk, in any order, on any machine.

:func:`summarize` counts one chunk of pairs into a :class:`Partial`;
partials :meth:`merge <Partial.merge>` in any order and grouping into the
same result, because every choice the report makes (the largest ULP
distance's place, the first offenders) is by *rank*: each pair's place in
the order the report follows (flat C order for :func:`fpsim.testing.compare`,
the enumeration order for a sweep).  So a comparison split over threads,
processes or a Dask cluster, or interrupted and resumed, reports exactly what
one pass over the data reports.  A partial is plain integers: it pickles and
goes to JSON and back (:meth:`Partial.to_dict`, :meth:`Partial.from_dict`).

Internal contract (for :mod:`fpsim.sweep`, which counts its chunks with it):
``summarize(actual, expected, fmt, tol, rank0, index)`` counts a chunk of
code arrays; ``Partial`` (``merge``, ``to_dict``/``from_dict``, ``report``)
and ``Tolerance`` keep their fields and meaning; ``COUNTS`` and ``BINS``
name the counts and the histogram's length.  Anything else here is private.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formats import Format
from . import _ulp
from ._report import Offender, Report, fields_text, value_text

# Histogram bins by bit length of the distance: 0, 1, 2-3, 4-7, ..., 2**63..2**64-1.
BINS = 65
_BIN_EDGES = np.array([1 << k for k in range(64)], np.uint64)
# The report's counts, by its attribute names.
COUNTS = ("total", "exact", "within_tolerance", "beyond_tolerance", "nan_mismatch",
          "inf_mismatch", "signed_zero_mismatch", "ulp_mismatch")


@dataclass(frozen=True)
class Tolerance:
    """What counts as a match (see :func:`fpsim.testing.compare`)."""

    max_ulp: int = 0
    nan: str = "any"
    signed_zero: bool = True
    offenders: int = 10


@dataclass
class Partial:
    """Counts of some of the pairs: ``counts`` by the names of the
    :class:`Report`'s counts, ``bins`` its histogram.  ``top`` is
    ``(distance, rank, index)`` of the largest ULP distance among pairs
    without a NaN (the lowest rank at that distance), None before any such
    pair; ``offenders`` holds ``(rank, index, kind, ulp, actual_code,
    expected_code)`` of the lowest-ranked pairs beyond tolerance, at most
    the tolerance's number."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    bins: list[int] = field(default_factory=lambda: [0] * BINS)
    top: tuple[int, int, int] | None = None
    offenders: list[tuple[int, int, str, int | None, int, int]] = field(default_factory=list)

    def merge(self, other: Partial, limit: int) -> None:
        """Add ``other``'s pairs (disjoint from these) to this partial."""
        for name in COUNTS:
            self.counts[name] += other.counts[name]
        self.bins = [x + y for x, y in zip(self.bins, other.bins)]
        if other.top is not None and (self.top is None or (other.top[0], -other.top[1])
                                      > (self.top[0], -self.top[1])):
            self.top = other.top
        if other.offenders:
            self.offenders = sorted(self.offenders + other.offenders)[:limit]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (:meth:`from_dict` reads it back)."""
        d: dict[str, Any] = dict(self.counts)
        d["bins"] = list(self.bins)
        d["top"] = None if self.top is None else list(self.top)
        d["offenders"] = [list(o) for o in self.offenders]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Partial:
        p = cls({name: int(d[name]) for name in COUNTS})
        p.bins = [int(x) for x in d["bins"]]
        if len(p.bins) != BINS:
            raise ValueError(f"a partial tally has {BINS} histogram bins, not {len(p.bins)}")
        p.top = None if d["top"] is None else tuple(int(x) for x in d["top"])  # type: ignore
        p.offenders = [(int(r), int(i), str(k), None if u is None else int(u), int(a), int(b))
                       for r, i, k, u, a, b in d["offenders"]]
        return p

    def report(self, fmt: Format, shape: tuple[int, ...], tol: Tolerance) -> Report:
        """The :class:`Report` of these pairs, elements indexed in ``shape``."""
        r = Report(fmt, tuple(shape), tol.max_ulp, tol.nan, tol.signed_zero,
                   offender_limit=tol.offenders)
        for name, count in self.counts.items():
            setattr(r, name, count)
        r.bins = list(self.bins)
        if self.top is not None:
            r.max_ulp, r.max_ulp_index = self.top[0], unravel(self.top[2], shape)
        digits = -(-fmt.width // 4)
        r.offenders = [Offender(unravel(index, shape), kind, ulp, a, b, value_text(a, fmt),
                                value_text(b, fmt), fields_text(a, fmt), fields_text(b, fmt),
                                digits)
                       for _, index, kind, ulp, a, b in self.offenders]
        return r


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The multi-index of flat (C order) position ``flat`` in ``shape``."""
    out = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        out.append(i)
    return tuple(reversed(out))


def summarize(a: np.ndarray, b: np.ndarray, fmt: Format, tol: Tolerance,
              rank0: int | np.ndarray, index: np.ndarray | None = None,
              differing: np.ndarray | None = None) -> Partial:
    """Count the pairs ``a[i], b[i]`` (code arrays of the format's code
    type) of ranks ``rank0 + i`` (or ``rank0[i]``, increasing, when an
    array), at flat positions ``index[i]`` (default: their ranks).
    Identical pairs only need counting (distance 0 unless NaN); the rest,
    usually few, are classified.  ``differing``: the indices ``i`` where
    ``a[i] != b[i]``, where the caller has them already."""
    p = Partial()
    counts = p.counts
    n = a.size
    counts["total"] = n
    if differing is None:
        differing = np.flatnonzero(a != b)
    n_same = n - differing.size
    counts["exact"] = n_same
    # The masks over the whole chunk are the costly part of a comparison
    # that mostly agrees: one NaN mask of a, counted; the differing pairs
    # (usually few) are classified on their own.
    nan = _ulp.nans(a, fmt)
    n_nan = int(np.count_nonzero(nan))
    at = any_nan = None
    if n_same < n:
        at = differing
        a, b = a[at], b[at]
        nan_a, inf_a, zero_a = _ulp.kinds(a, fmt)
        nan_b, inf_b, zero_b = _ulp.kinds(b, fmt)
        any_nan = nan_a | nan_b
        p.bins[0] = n_same - (n_nan - int(np.count_nonzero(nan_a)))  # identical non-NaN pairs
    else:
        p.bins[0] = n - n_nan

    def place(i: int) -> tuple[int, int]:
        rank = rank0 + i if isinstance(rank0, int) else int(rank0[i])
        return rank, rank if index is None else int(index[i])

    def first_numeric() -> None:
        """The first pair without a NaN, at distance 0."""
        if n_nan == 0 and (any_nan is None or not any_nan.any()):
            first = 0 if n else None
        else:
            numeric = np.logical_not(nan, out=nan)  # nan is not needed after this
            if at is not None:
                numeric[at] = ~any_nan
            first = int(np.argmax(numeric)) if numeric.any() else None
        if first is not None:
            p.top = (0, *place(first))

    if at is None:
        first_numeric()
        return p

    d = _ulp.distance(a, b, fmt)
    per_bin = np.bincount(np.searchsorted(_BIN_EDGES, d[~any_nan], side="right"),
                          minlength=BINS)
    for k in np.flatnonzero(per_bin):
        p.bins[k] += int(per_bin[k])
    top = int(d[~any_nan].max()) if (~any_nan).any() else 0
    if top:  # the first differing pair at the largest distance
        p.top = (top, *place(int(at[np.argmax(np.where(any_nan, 0, d) == top)])))
    else:
        first_numeric()

    nan_bad = nan_a != nan_b
    if tol.nan == "exact":
        nan_bad |= nan_a & nan_b
    inf_bad = ~any_nan & (inf_a | inf_b)
    zero_bad = zero_a & zero_b if tol.signed_zero else np.zeros(a.shape, bool)
    # Distances are below 2**64: a larger tolerance accepts them all.
    limit = np.uint64(min(tol.max_ulp, (1 << 64) - 1))
    ulp_bad = ~any_nan & ~(inf_a | inf_b) & (d > limit)
    bad = nan_bad | inf_bad | zero_bad | ulp_bad
    n_bad = int(np.count_nonzero(bad))
    counts.update(nan_mismatch=int(np.count_nonzero(nan_bad)),
                  inf_mismatch=int(np.count_nonzero(inf_bad)),
                  signed_zero_mismatch=int(np.count_nonzero(zero_bad)),
                  ulp_mismatch=int(np.count_nonzero(ulp_bad)),
                  beyond_tolerance=n_bad, within_tolerance=n - n_same - n_bad)
    for i in np.flatnonzero(bad)[:tol.offenders]:
        kind = ("nan" if nan_bad[i] else "inf" if inf_bad[i]
                else "signed_zero" if zero_bad[i] else "ulp")
        p.offenders.append((*place(int(at[i])), kind, None if any_nan[i] else int(d[i]),
                            int(a[i]), int(b[i])))
    return p
