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
  without repeats, and in increasing flat order.  A space of more than
  ``2**64`` tuples (FP64 pairs and triples, FP32 triples) is stratified by
  the top 64 bits of the flat index: stratum ``r`` holds the tuples whose
  top 64 bits lie in ``[r*2**64//m, (r+1)*2**64//m)``, and the lower bits
  are drawn from further hashes of ``(seed, r)``.
* ``specials``: every tuple with at least one operand among given codes,
  each once: first the tuples whose first operand is special (specials in
  increasing code order, the other operands in increasing order), then
  those whose first special operand is the second, and so on.

Spaces of at most ``2**63`` tuples can be swept whole; a sample or the
specials of a space of up to ``2**64`` (FP32 pairs, every FP64 code); a
sample alone beyond that: with FP64 pairs, each special value meets every
one of the other operand's ``2**64`` codes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..formats import Format

U64 = np.uint64
_ALL64 = (1 << 64) - 1
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
        self.bits = fmt.width * arity
        # Flat indices are uint64 up to 2**64 tuples (FP32 pairs, FP64
        # codes); enumerating them all stops at 2**63.  Beyond 2**64 (FP64
        # pairs), a sample alone, its flat indices Python integers.
        tuples = {1: "codes", 2: "pairs", 3: "triples"}.get(arity, f"{arity}-tuples")
        if kind == "all" and self.bits > 63:
            raise ValueError(f"a sweep of every {fmt.name} {tuples[:-1]} (2**{self.bits}) is "
                             f"beyond reach; sweep a sample ({self._sample_hint()})"
                             + ("" if self.bits > 64 else " or given special values (specials=)"
                                if arity == 1 else
                                " or the tuples holding special values (specials=)"))
        if kind == "specials" and self.bits > 64:
            rest = fmt.width * (arity - 1)
            raise ValueError(f"a sweep of the {fmt.name} {tuples} holding a special value is "
                             f"beyond reach: each special value meets all 2**{rest} codes of "
                             f"the other operand{'s' if arity > 2 else ''}; sweep a sample "
                             f"({self._sample_hint()})")
        self.fraction, self.seed, self.specials = fraction, seed, tuple(specials)
        if kind == "all":
            self.size = self.full
        elif kind == "sample":
            self.size = min(self.full, max(1, round(fraction * self.full)))  # type: ignore
            if self.size >= MAX_SAMPLE:
                raise ValueError(f"a sample of {self.size} tuples is too large (at most "
                                 f"{MAX_SAMPLE - 1}); take a smaller fraction "
                                 f"({self._sample_hint()})")
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

    def _sample_hint(self) -> str:
        """The largest fraction a sample of this space may take, in words."""
        top = (MAX_SAMPLE - 1) / self.full
        digits = 10.0 ** (math.floor(math.log10(top)) - 2)
        return (f"sample=F with F at most {math.floor(top / digits) * digits:.3g}: "
                f"{MAX_SAMPLE - 1:,} of the 2**{self.bits} tuples")

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

    def take(self, r0: int, r1: int) -> tuple[list[np.ndarray], Any]:
        """The operand codes (one uint64 array per operand) of ranks
        ``r0 <= r < r1`` and their flat indices in the full space: a uint64
        array, or beyond ``2**64`` tuples a :class:`WideIndex`."""
        if self.kind == "specials":
            codes = self._specials_codes(r0, r1)
            if self.arity == 1:
                return codes, codes[0].copy()
            flat = np.zeros(r1 - r0, U64)
            for c in codes:
                flat = flat * U64(self.n) + c
            return codes, flat
        if self.kind == "all":
            flat = np.arange(r0, r1, dtype=U64)
        elif self.bits > 64:
            codes = self._wide_sample_codes(r0, r1)
            return codes, WideIndex(codes, self.fmt.width)
        else:
            flat = self._strata(r0, r1, self.full)
        w, mask = self.fmt.width, U64(self.n - 1)
        codes = [(flat >> U64(w * (self.arity - 1 - p))) & mask for p in range(self.arity)]
        return codes, flat

    def _hashes(self, r0: int, r1: int) -> np.ndarray:
        """SplitMix64 of each rank ``r0 <= r < r1`` mixed with the seed."""
        seed_mix = U64((self.seed * 0xD1B54A32D192ED03) & ((1 << 64) - 1))
        with np.errstate(over="ignore"):
            return _splitmix64(np.arange(r0, r1, dtype=U64) ^ seed_mix)

    def _strata(self, r0: int, r1: int, full: int) -> np.ndarray:
        """The sample's positions of ranks ``r0 <= r < r1`` in ``[0, full)``
        (``full`` at most ``2**64``): one in each of ``m`` strata."""
        # Stratum r starts at floor(r * full / m); with q, rem = divmod(full, m)
        # and A = r0 * full = a_q * m + a_r, the start of stratum r0 + i is
        # a_q + i*q + floor((a_r + i*rem) / m).  i*rem < 2**64 (i <= 2**24,
        # rem < m < 2**40), split as i*rem = x_q*m + x_r so that no sum
        # exceeds 2**64.  The starts are taken mod 2**64: only the end of
        # the last stratum can reach 2**64 (then 0), and the widths mod
        # 2**64 are the widths, but for one stratum of all 2**64 (0).
        m = self.size
        q, rem = divmod(full, m)
        a_q, a_r = divmod(r0 * full, m)
        i = np.arange(r1 - r0 + 1, dtype=U64)
        x = i * U64(rem)
        x_q, x_r = x // U64(m), x % U64(m)
        with np.errstate(over="ignore"):
            starts = (U64(a_q & _ALL64) + i * U64(q & _ALL64) + x_q
                      + (U64(a_r) + x_r) // U64(m))
            width = starts[1:] - starts[:-1]
        h = self._hashes(r0, r1)
        offset = np.where(width == 0, h, h % np.where(width == 0, U64(1), width))
        return starts[:-1] + offset

    def _wide_sample_codes(self, r0: int, r1: int) -> list[np.ndarray]:
        """The operand codes of a sample of more than 2**64 tuples: the top
        64 bits of each flat index stratified over ``[0, 2**64)``, the
        ``bits - 64`` below them from further hashes of the rank."""
        top = self._strata(r0, r1, 1 << 64)
        low_bits = self.bits - 64
        h = self._hashes(r0, r1)
        words = []  # the flat index, 64-bit words from the least significant
        with np.errstate(over="ignore"):
            for j in range(-(-low_bits // 64)):
                h = _splitmix64(h + U64(j + 1))
                words.append(h.copy())
        if low_bits % 64:
            words[-1] &= U64((1 << (low_bits % 64)) - 1)
        # top << low_bits, or'ed in: low_bits = 64 j + t
        j, t = divmod(low_bits, 64)
        if t == 0:
            words.append(top)
        else:
            words[j] |= top << U64(t)
            words.append(top >> U64(64 - t))
        w = self.fmt.width
        return [_field(words, w * (self.arity - 1 - p), w) for p in range(self.arity)]

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


def _field(words: list[np.ndarray], start: int, width: int) -> np.ndarray:
    """Bits ``start .. start + width - 1`` (``width`` at most 64) of the
    numbers held as 64-bit ``words``, least significant first."""
    j, t = divmod(start, 64)
    out = words[j] >> U64(t)
    if t and t + width > 64:
        out = out | (words[j + 1] << U64(64 - t))
    return out & U64((1 << width) - 1) if width < 64 else out


class WideIndex:
    """The flat indices of tuples of a space of more than ``2**64`` tuples
    (FP64 pairs), beyond uint64: ``index[i]`` is tuple ``i``'s flat index,
    a Python int, made from its operand codes when asked for (the report
    asks for a few, its offenders')."""

    def __init__(self, codes: list[np.ndarray], width: int) -> None:
        self.codes, self.width = codes, width

    def __len__(self) -> int:
        return len(self.codes[0])

    def __getitem__(self, i: int) -> int:
        flat = 0
        for c in self.codes:
            flat = (flat << self.width) | int(c[i])
        return flat

    def tolist(self) -> list[int]:
        """Every flat index, as Python ints."""
        return [self[i] for i in range(len(self))]
