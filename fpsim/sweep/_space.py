"""Input spaces: which operand tuples a sweep evaluates, and in what order.

A space is a sequence of ``size`` operand tuples of one format; element
``r`` (its *rank*) is produced by :meth:`Space.take` from ``r`` alone, so
any chunk can be made anywhere (another process, another machine, after a
resume) and always holds the same tuples.  Each tuple is also placed in the
*full* space of all tuples, shape ``(2**width,) * arity``, C order: its flat
index there is what the report shows as the offenders' operands.

* ``all``: every tuple, rank = flat index.
* ``sample``: ``m = round(fraction * full)`` tuples, one drawn in each of
  ``m`` equal strata of the full space (stratum ``r`` is
  ``[r*full//m, (r+1)*full//m)``), at a position fixed by a hash of
  ``(seed, r)`` (SplitMix64).  Deterministic, spread over the whole space,
  without repeats, and in increasing flat order.
* ``specials``: every tuple with at least one operand among given codes,
  each once: first the tuples whose first operand is special (specials in
  increasing code order, the other operands in increasing order), then
  those whose first special operand is the second, and so on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import Format

U64 = np.uint64
# Sample sizes stay below 2**40 so that the strata's bounds are computed in
# uint64 without overflow for chunks of up to 2**24 elements.
MAX_SAMPLE = 1 << 40
MAX_CHUNK = 1 << 24


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
        return z ^ (z >> U64(31))


class Space:
    """A sweep's input space (see the module's docstring)."""

    def __init__(self, fmt: Format, arity: int, kind: str = "all", *,
                 fraction: float | None = None, seed: int = 0,
                 specials: tuple[int, ...] = ()) -> None:
        self.fmt, self.arity, self.kind = fmt, arity, kind
        self.n = 1 << fmt.width
        self.shape = (self.n,) * arity
        self.full = self.n ** arity
        # Flat indices are uint64: up to 2**64 tuples (FP32 pairs) for a
        # sample or specials; enumerating them all stops at 2**63.
        if fmt.width * arity > 64 or (kind == "all" and fmt.width * arity > 63):
            raise ValueError(f"a sweep of every tuple of {arity} {fmt.name} operand(s) "
                             f"(2**{fmt.width * arity}) is beyond reach; sweep a sample or "
                             "the tuples holding special values")
        self.fraction, self.seed, self.specials = fraction, seed, tuple(specials)
        if kind == "all":
            self.size = self.full
        elif kind == "sample":
            self.size = min(self.full, max(1, round(fraction * self.full)))  # type: ignore
            if self.size >= MAX_SAMPLE:
                raise ValueError(f"a sample of {self.size} tuples is too large (at most "
                                 f"{MAX_SAMPLE - 1}); take a smaller fraction")
        elif kind == "specials":
            s = len(self.specials)
            self._special = np.array(self.specials, U64)
            # The i-th code that is not special is i + #{j : S[j] - j <= i}
            # (S sorted): no table of the other codes, which FP32 could not hold.
            self._shifted = self._special - np.arange(s, dtype=U64)
            rest = self.n - s
            # One line per (position p, special s): tuples whose first special
            # operand is at p and equals s.
            line_sizes = [rest ** p * self.n ** (arity - 1 - p) for p in range(arity)
                          for _ in range(s)]
            self._starts = np.cumsum([0] + line_sizes[:-1]).astype(U64)
            self.size = sum(line_sizes)
        else:
            raise ValueError(f"unknown space kind {kind!r}")

    # A value: equal spaces hold the same tuples in the same order (a Spec
    # that went through pickle, to a worker and back, is still equal).
    def _parameters(self) -> tuple[Any, ...]:
        return (self.fmt, self.arity, self.kind, self.fraction, self.seed, self.specials)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Space):
            return NotImplemented
        return self._parameters() == other._parameters()

    def __hash__(self) -> int:
        return hash(self._parameters())

    def describe(self) -> dict[str, Any]:
        """The space as JSON-ready data (in the report and the progress file)."""
        d: dict[str, Any] = {"kind": self.kind, "format": self.fmt.name, "arity": self.arity,
                             "size": self.size}
        if self.kind == "sample":
            d.update(fraction=self.fraction, seed=self.seed)
        if self.kind == "specials":
            d["specials"] = [f"0x{c:x}" for c in self.specials]
        return d

    def take(self, r0: int, r1: int) -> tuple[list[np.ndarray], np.ndarray]:
        """The operand codes (one uint64 array per operand) of ranks
        ``r0 <= r < r1`` and their flat indices in the full space."""
        if self.kind == "specials":
            codes = self._specials_codes(r0, r1)
            flat = np.zeros(r1 - r0, U64)
            for c in codes:
                flat = flat * U64(self.n) + c
            return codes, flat
        if self.kind == "all":
            flat = np.arange(r0, r1, dtype=U64)
        else:
            flat = self._sample_flat(r0, r1)
        w, mask = self.fmt.width, U64(self.n - 1)
        codes = [(flat >> U64(w * (self.arity - 1 - p))) & mask for p in range(self.arity)]
        return codes, flat

    def _sample_flat(self, r0: int, r1: int) -> np.ndarray:
        # Stratum r starts at floor(r * full / m); with q, rem = divmod(full, m)
        # and A = r0 * full = a_q * m + a_r, the start of stratum r0 + i is
        # a_q + i*q + floor((a_r + i*rem) / m), all below 2**64 (MAX_SAMPLE).
        m = self.size
        q, rem = divmod(self.full, m)
        a_q, a_r = divmod(r0 * self.full, m)
        i = np.arange(r1 - r0 + 1, dtype=U64)
        starts = U64(a_q) + i * U64(q) + (U64(a_r) + i * U64(rem)) // U64(m)
        width = starts[1:] - starts[:-1]
        seed_mix = U64((self.seed * 0xD1B54A32D192ED03) & ((1 << 64) - 1))
        with np.errstate(over="ignore"):
            h = _splitmix64(np.arange(r0, r1, dtype=U64) ^ seed_mix)
        return starts[:-1] + h % width

    def _specials_codes(self, r0: int, r1: int) -> list[np.ndarray]:
        ranks = np.arange(r0, r1, dtype=U64)
        n_special = len(self.specials)
        line = np.searchsorted(self._starts, ranks, side="right") - 1
        offset = ranks - self._starts[line]
        position = line // n_special
        special = self._special[line % n_special]
        codes = [np.zeros(r1 - r0, U64) for _ in range(self.arity)]
        rest = U64(self.n - n_special)
        for p in range(self.arity):
            at = np.flatnonzero(position == p)
            if not at.size:
                continue
            off = offset[at]
            for j in range(self.arity - 1, p, -1):  # any code after the first special
                codes[j][at] = off % U64(self.n)
                off = off // U64(self.n)
            codes[p][at] = special[at]
            for j in range(p - 1, -1, -1):  # non-special codes before it
                i = off % rest
                codes[j][at] = i + np.searchsorted(self._shifted, i, side="right").astype(U64)
                off = off // rest
        return codes
