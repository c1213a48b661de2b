"""The FP32 steps of the reference operators (:mod:`fpsim.ops._nn`) by the
machine's own float32 arithmetic, where that is provably each step's result.

Under round-to-nearest-even with neither FTZ nor DAZ, on a unit whose
float32 arithmetic and float64 -> float32 cast round to nearest even and
keep subnormals (:func:`fpsim._machine.float32_adds_are_ieee` and
:func:`fpsim._machine.rounds_to_nearest`, checked once per call), a
float32 ``+``, ``-``, ``*`` or ``/`` gives IEEE's FP32 result, which is the
general path's.  What the machine does not give is the flags:

* a lane whose result is not finite, or (products and quotients) is at most
  FP32's smallest normal in magnitude, is redone by the general path
  (:mod:`fpsim.array`), which raises that lane's flags (overflow,
  underflow under either tininess rule, invalid, divide-by-zero) and applies
  the NaN policy and the saturation setting.  A zero product or quotient of
  a zero operand (and finite others) is exact, so stays.  Sums are never
  redone for size: a subnormal sum of two FP32 values is exact.
* on the other lanes the only flag is INEXACT, decided exactly: TwoSum's
  error term for sums, the float64 product (exact: 48 bits) for products,
  and for a quotient ``q = x / y`` the float64 remainder ``x - q*y`` (exact:
  ``q*y`` has 48 bits, and the remainder fits 25 bits of the same grid).

Flags are sticky, so these tests only run while the context lacks INEXACT,
and only when the operator finishes (:meth:`Fast32.finish`): by then a later
step (an exp, an rsqrt) has usually raised it, and the tests cost nothing.

Sequential FP32 running sums along the last axis are :func:`numpy.cumsum`
(``acc[i] = acc[i - 1] + x[i]``, each a float32 sum, in order), whose
partial sums differ from the declared ``+0 + x[0] + ...`` only in the sign
of a zero; the total is made +0 where it is a zero (a running sum from +0
in round to nearest is never -0).  A total that is not finite (an infinite
or NaN term, or an overflowing partial sum) is left to the general path.

Inputs of at most 16 bits whose values FP32 holds are widened by a table of
every code's FP32 value, built once by the general conversion (FP16 and
BF16 without infinities or NaNs by integer operations on their bits, as the
table would); a NaN input (whose conversion may raise INVALID) sends the
whole conversion back to it.
FP32 results into FP16 round by the machine's float32 addition of a power
of two whose last place is FP16's at the value (normal and subnormal
results alike), with overflowing results and NaNs left to the general path
(:meth:`Fast32.to_fp16`).

The tests compare every operator with this module against the same
operator with it switched off (:func:`usable`), flags included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _machine, array
from .._scratch import scratch
from ..array import _native
from ..context import Context
from ..formats import BF16, FP16, FP32, Format
from ..modes import Rounding
from ..rounding import INEXACT, UNDERFLOW
from ._reduce import Steps
from .operands import holds

F32, F64, U16, U32 = np.float32, np.float64, np.uint16, np.uint32



def usable(key: tuple[Any, ...], rng: Any) -> bool:
    """Whether an operator call with these settings may compute its FP32
    steps here: round to nearest even, no FTZ, no DAZ, no ``rng=`` (which
    the general path refuses outside stochastic rounding), on a unit whose
    float32 arithmetic is IEEE's."""
    return (key[0] is Rounding.RNE and not key[2] and not key[3] and rng is None
            and _native.float32_adds_are_ieee() and _native.rounds_to_nearest())


def _f32(codes: np.ndarray) -> np.ndarray:
    return np.asarray(codes).view(F32)


class Fast32:
    """One operator call's FP32 steps on codes (uint32 arrays, viewed as
    float32), the general path's ``steps`` redoing the lanes it must."""

    def __init__(self, steps: Steps, ctx: Context) -> None:
        self.steps = steps
        self.ctx = ctx  # the context receiving the flags (resolved)
        self.before = steps.key[4]  # tininess detected before rounding
        self.checks: list[tuple[int, Callable[[], bool]]] = []

    # -- flags -------------------------------------------------------------------------------

    def _defer(self, flag: int, check: Callable[[], bool]) -> None:
        """Raise ``flag`` at :meth:`finish` if ``check()`` (unless already raised).

        Checks of a flag that a step has raised since are dropped here, so
        that the arrays they hold are freed as the operator goes on (every
        step's inputs kept to the end would double its memory)."""
        raised = self.ctx._flags[0]
        if self.checks and any(f & raised for f, _ in self.checks):
            self.checks = [(f, c) for f, c in self.checks if not f & raised]
        if not raised & flag:
            self.checks.append((flag, check))

    def finish(self) -> None:
        """Run the deferred flag tests: call once every step has run."""
        for flag, check in self.checks:
            if not self.ctx._flags[0] & flag and check():
                self.ctx._flags[0] |= flag
        self.checks.clear()

    def _redo(self, op: str, out: np.ndarray, lanes: np.ndarray, x: np.ndarray,
              y: np.ndarray) -> np.ndarray | None:
        """Redo the ``lanes`` (flat indices of ``out``) of ``x op y`` by the
        general path, which raises their flags; their indices, or None if
        there are none."""
        if not lanes.size:
            return None
        xs = np.broadcast_to(x, out.shape).reshape(-1)[lanes]  # (0-d arrays too)
        ys = np.broadcast_to(y, out.shape).reshape(-1)[lanes]
        out.reshape(-1)[lanes] = _f32(getattr(self.steps, op)(xs, ys, FP32))
        return lanes

    # -- arithmetic ----------------------------------------------------------------------------

    def add(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self._sum("add", x, y)

    def sub(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self._sum("sub", x, y)

    def _sum(self, op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        a, b = _f32(x), _f32(y)
        with np.errstate(all="ignore"):
            s = np.add(a, b) if op == "add" else np.subtract(a, b)
        if s.size and np.isfinite(np.min(s)) and np.isfinite(np.max(s)):  # (NaN: not finite)
            redone = None
        else:
            redone = self._redo(op, s, np.flatnonzero(~np.isfinite(s)), x, y)

        def inexact() -> bool:
            with np.errstate(all="ignore"):
                # TwoSum (Knuth): s + err == a ± b exactly (finite lanes).
                err = _machine.two_sum_error(s, a, b, negate_y=op != "add")
            if redone is not None:
                err.reshape(-1)[redone] = 0
            return bool(err.any())

        self._defer(INEXACT, inexact)
        return s.view(U32)

    def mul(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self._product("mul", x, y)

    def div(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self._product("div", x, y)

    def _product(self, op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``x * y`` or ``x / y``: inexact where the float64 product differs
        from the exact one, or where the quotient's remainder is not zero."""
        a, b = _f32(x), _f32(y)
        with np.errstate(all="ignore"):
            r = np.multiply(a, b) if op == "mul" else np.divide(a, b)
        redone = self._redo_small(op, r, a, b, x, y)

        def inexact() -> bool:
            with np.errstate(all="ignore"):
                if op == "mul":
                    differ = r.astype(F64) != np.multiply(a, b, dtype=F64)  # exact product
                else:
                    rem = a.astype(F64) - r.astype(F64) * b.astype(F64)  # exact (module doc)
                    differ = rem != 0
            if redone is not None:
                differ.reshape(-1)[redone] = False
            return bool(differ.any())

        self._defer(INEXACT, inexact)
        return r.view(U32)

    def _redo_small(self, op: str, r: np.ndarray, a: np.ndarray, b: np.ndarray,
                    x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
        """Redo the lanes of a product or quotient ``r`` that are not finite
        or at most FP32's smallest normal in magnitude (the lanes that may
        overflow, underflow, or meet a NaN or an infinity), except exact zeros
        of a zero ``a`` (or, for products, ``b``) and finite other operand."""
        lanes = _outside_normal(r)
        if lanes is None:
            return None
        av = np.broadcast_to(a, r.shape).reshape(-1)[lanes]
        bv = np.broadcast_to(b, r.shape).reshape(-1)[lanes]
        if op == "mul":
            exact_zero = (r.reshape(-1)[lanes] == 0) & (((av == 0) & np.isfinite(bv))
                                          | ((bv == 0) & np.isfinite(av)))
        else:
            exact_zero = (r.reshape(-1)[lanes] == 0) & (av == 0) & (bv != 0) & np.isfinite(bv)
        return self._redo(op, r, lanes[~exact_zero], x, y)

    # -- running sums --------------------------------------------------------------------------

    def row_sum(self, x: np.ndarray) -> np.ndarray | None:
        """The sequential FP32 running sum from +0 along the last axis (codes
        of the totals), or None where the general path must compute it (see
        the module's docstring)."""
        v = _f32(x)
        if v.ndim == 0 or v.shape[-1] == 0:
            return None
        with np.errstate(all="ignore"):
            total = _running_totals(v)
        if not np.isfinite(total).all():
            return None

        def inexact() -> bool:
            # TwoSum on each step acc[i-1] + x[i]; the first, +0 + x[0], is exact.
            with np.errstate(all="ignore"):
                partial = np.cumsum(v, axis=-1, dtype=F32)
                err = _machine.two_sum_error(partial[..., 1:], partial[..., :-1], v[..., 1:])
            return bool(err.any())

        self._defer(INEXACT, inexact)
        return total.view(U32)

    # -- conversions ---------------------------------------------------------------------------

    def widen(self, codes: np.ndarray, fmt: Format) -> np.ndarray | None:
        """Codes of ``fmt`` (at most 16 bits, every value of it held by FP32)
        as FP32 codes, exactly and with no flag; None where the general
        conversion must run (other formats, or a NaN among the inputs)."""
        if fmt.width > 16 or not holds(FP32, fmt):
            return None
        wide = _widen_by_bits(codes, fmt) if fmt in (FP16, BF16) else None
        if wide is not None:
            return wide
        values = np.take(_widening_table(fmt), codes)
        if np.isnan(values).any():
            return None
        return values.view(U32)

    def to_fp16(self, codes: np.ndarray) -> np.ndarray:
        """FP32 codes rounded to nearest even into FP16 codes, with flags.

        On ``v = |x|`` in float32, with ``M`` the power of two ``2**13``
        times ``v``'s binade (at least ``2**-1``), ``(v + M) - M`` is ``v``
        rounded to nearest even on FP16's grid: the sum's last place is
        FP16's at ``v`` (``2**-24`` for FP16's subnormals, the last place of
        0.5), and the difference is exact.  Times ``2**-112`` (exact), that
        value's float32 bits shifted right by 13 are its FP16 code, subnormals
        included (FP32's own subnormals then line up with FP16's).  A lane is
        inexact where the rounded value differs from ``v``, and tiny below
        ``2**-14`` (tininess before rounding) or below ``2**-14 - 2**-26``
        (after: those between round to ``2**-14`` with an unbounded
        exponent).  Lanes from 65520 up (overflow, infinities, NaNs) go to
        the general path."""
        u = np.ascontiguousarray(codes, U32).reshape(-1)
        out = np.empty(u.shape, U16)
        redo, raised = [], 0
        tiny_below = _TINY_BEFORE if self.before else _TINY_AFTER
        for start in range(0, u.size, _CHUNK):  # (temporaries stay in cache)
            piece = u[start:start + _CHUNK]
            want = (INEXACT | UNDERFLOW) & ~(self.ctx._flags[0] | raised)
            lanes, found = _fp16_chunk(piece, out[start:start + _CHUNK], want, tiny_below)
            raised |= found
            if lanes is not None:
                redo.append(lanes + start)
        if redo:
            lanes = np.concatenate(redo)
            out[lanes] = self.steps.convert(u[lanes], FP32, FP16)
        self.ctx._flags[0] |= raised
        return out.reshape(np.shape(codes))


_CHUNK = 1 << 16

# Magnitudes of FP32 codes: (|code| - smallest normal above it) wraps past
# this span exactly where |value| is at most FP32's smallest normal, or is
# not finite.
_MIN_NORMAL, _MAX = F32(FP32.min_normal), F32(FP32.max)
_NORMAL_LO = U32(0x00800001)
_NORMAL_SPAN = U32(0x7F7FFFFF - 0x00800001)


def _outside_normal(r: np.ndarray) -> np.ndarray | None:
    """Flat indices of the float32 ``r`` whose magnitude is not finite or
    is at most FP32's smallest normal (None: there are none), computed a
    cache-sized piece at a time (no temporary as large as ``r``)."""
    # Every lane a normal number of one sign (the extremes say so: NaN if
    # any lane is one), as in softmax: no lane, with two reductions.
    if r.size:
        lo, hi = np.min(r), np.max(r)
        if _MIN_NORMAL < lo and hi <= _MAX or -_MAX <= lo and hi < -_MIN_NORMAL:
            return None
    u = np.ascontiguousarray(r).reshape(-1).view(U32)
    found = []
    for start in range(0, u.size, _CHUNK):
        piece = u[start:start + _CHUNK]
        t = piece << U32(1)  # (the sign bit dropped)
        t >>= U32(1)
        t -= _NORMAL_LO
        hit = t > _NORMAL_SPAN
        if hit.any():
            found.append(np.flatnonzero(hit) + start)
    return np.concatenate(found) if found else None


# FP32 codes of magnitudes: FP16's smallest normal 2**-14, below which a
# lane is tiny before rounding, and 2**-14 - 2**-26, below which it is tiny
# after rounding; 65520, from which a lane rounds to FP16's infinity (or is
# one, or a NaN) and is redone by the general path.
_TINY_BEFORE, _TINY_AFTER, _FP16_REDO_FROM = U32(0x38800000), U32(0x387FF000), U32(0x477FF000)
_FP16_REDO_LIMIT = _FP16_REDO_FROM.view(F32)
_EXPONENT = U32(0x7F800000)
_M_SHIFT = U32(13 << 23)          # 2**13 times a power of two, on its bits
_TO_FP16_GRID = F32(2.0 ** -112)  # FP32's bits >> 13 are then FP16's


def _fp16_chunk(u: np.ndarray, out: np.ndarray, want: int, tiny_below: np.uint32
                ) -> tuple[np.ndarray | None, int]:
    """:meth:`Fast32.to_fp16` on one chunk of FP32 codes ``u``: FP16 codes
    into ``out``, the lanes the general path must redo (None: none), and
    which of the flags in ``want`` the other lanes raise.  Every
    intermediate is a scratch array (:mod:`fpsim._scratch`): no allocation
    per chunk."""
    a, m, r = scratch("fp16 chunk", u.size, U32, U32, U32)
    # The chunk's extremes (NaN if a lane is one) spare the steps no lane
    # needs: the sign's where all lanes have one sign (every lane positive,
    # as softmax's outputs, or every lane negative, as log_softmax's), the
    # overflow test where all are below it.
    lo, hi = np.min(u.view(F32)), np.max(u.view(F32))
    negative = bool(hi < 0)
    signed = not lo > 0 and not negative  # (a zero may be -0)
    lanes = None
    if signed:
        np.bitwise_and(u, U32(0x7FFFFFFF), out=a)
    else:
        a = u  # (negative: the rounding below keeps the sign, the code gets it last)
    if not (hi < _FP16_REDO_LIMIT and lo > -_FP16_REDO_LIMIT):
        big = (a & U32(0x7FFFFFFF)) >= _FP16_REDO_FROM
        if big.any():
            lanes = np.flatnonzero(big)  # their flags are the general path's:
            if a is u:                   # here they are made 0, exact
                a = np.copy(u)
            a[lanes] = 0
    fa, fm, fr = a.view(F32), m.view(F32), r.view(F32)
    np.bitwise_and(a, _EXPONENT, out=m)
    np.maximum(m, _TINY_BEFORE, out=m)
    m += _M_SHIFT
    with np.errstate(all="ignore"):  # (whatever the caller's numpy settings)
        if negative:  # -(|v| + M) rounds as |v| + M does; + M then leaves its sign
            np.subtract(fa, fm, out=fr)
            fr += fm
        else:
            np.add(fa, fm, out=fr)
            fr -= fm
    found = 0
    if want:
        inexact = np.not_equal(fr, fa)
        if want & INEXACT and inexact.any():
            found |= INEXACT
        # (the smallest magnitude, read off the extremes where one sign)
        smallest = -hi if negative else 0 if signed else lo
        if want & UNDERFLOW and not smallest >= tiny_below.view(F32):
            inexact &= (a & U32(0x7FFFFFFF)) < tiny_below
            if inexact.any():
                found |= UNDERFLOW | INEXACT
    fr *= _TO_FP16_GRID  # (exact: no error to report, whatever the settings)
    r >>= U32(13)  # (a sign at bit 31 lands at bit 18, which the copy drops)
    if signed:
        np.right_shift(u, U32(16), out=m)
        m &= U32(0x8000)
        r |= m
    np.copyto(out, r, casting="unsafe")
    if negative:
        out |= U16(0x8000)
    return lanes, found & want


def _widen_by_bits(codes: np.ndarray, fmt: Format) -> np.ndarray | None:
    """FP16 or BF16 codes as FP32 codes by integer operations on their bits
    (half the time of the table's gather); None where a code is an infinity
    or a NaN (FP16) or a NaN (BF16), left to the table or the general path.

    BF16 is FP32's upper half.  An FP16 code ``s|m`` (15-bit magnitude m),
    sign-extended to 32 bits and shifted left by 13, holds ``m << 13``
    under copies of the sign, cleared but for bit 31: a float32 whose
    exponent and fraction fields are FP16's, so its value is FP16's times
    ``2**-112`` (FP16's subnormals are FP32 subnormals there), and the exact
    product by ``2**112`` is the FP16 value.  Infinities and NaNs become
    65536 or more in magnitude."""
    if fmt == BF16:
        wide = codes.astype(U32)
        wide <<= U32(16)
        return None if wide.size and np.isnan(np.max(wide.view(F32))) else wide
    wide = codes.view(np.int16).astype(np.int32)
    wide <<= np.int32(13)
    wide &= np.int32(-0x70000001)  # 0x8FFFFFFF
    values = wide.view(F32)
    values *= F32(2.0 ** 112)
    if values.size and not (np.min(values) > -65536.0 and np.max(values) < 65536.0):
        return None
    return wide.view(U32)


_WIDENING: dict[Format, np.ndarray] = {}


def _widening_table(fmt: Format) -> np.ndarray:
    """Every code of ``fmt`` as a float32 value, by the general conversion
    (any mode: FP32 holds them all); NaN where it gives a NaN or a flag."""
    if fmt not in _WIDENING:
        codes = np.arange(1 << fmt.width, dtype=array.code_dtype(fmt))
        wide, flags = array.convert(codes, fmt, FP32, Context(), return_flags=True)
        values = wide.view(F32).copy()
        values[flags != 0] = np.nan
        _WIDENING[fmt] = values
    return _WIDENING[fmt]


# Rows from which a running sum is cheaper as one vector sum down the
# columns of a transposed copy (made in blocks of rows, which stay in the
# cache) than as numpy.cumsum along each row (one dependent sum after
# another); rows transposed per block; elements of the transposed work array.
_MANY_ROWS, _BLOCK, _GROUP = 64, 8, 1 << 18


def _running_totals(v: np.ndarray) -> np.ndarray:
    """``((+0 + v[..., 0]) + v[..., 1]) + ...``, each sum a float32 sum.

    numpy.cumsum's partial sums are these, and so is numpy's reduction down
    the slow axis of an array (which adds each row to the result in turn,
    where ``_machine.reduces_in_order`` says so), but for the sign of a zero:
    they start from ``v[..., 0]``, not ``+0 + v[..., 0]``; adding +0 to the
    total clears it, as a running sum from +0 in round to nearest is never
    -0."""
    k = v.shape[-1]
    rows = v.reshape(-1, k)
    if rows.shape[0] < _MANY_ROWS or not _machine.reduces_in_order():
        return np.cumsum(v, axis=-1, dtype=F32)[..., -1] + F32(0.0)
    acc = np.empty(rows.shape[0], F32)
    group = max(_BLOCK, (_GROUP // max(k, 1)) // _BLOCK * _BLOCK)
    columns = np.empty((k, min(group, rows.shape[0])), F32)
    for g in range(0, rows.shape[0], group):
        part = rows[g:g + group]
        cols = columns[:, :part.shape[0]]
        for i in range(0, part.shape[0], _BLOCK):
            cols[:, i:i + _BLOCK] = part[i:i + _BLOCK].T
        np.add.reduce(cols, axis=0, out=acc[g:g + group])
    acc += F32(0.0)
    return acc.reshape(v.shape[:-1])
