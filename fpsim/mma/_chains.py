"""The engine of :class:`~fpsim.mma.accumulation.Accumulation`: a CPU
kernel's sums, run on numpy arrays of output elements at once.

Values are float64 arrays throughout.  An FP32 sum ``RN32(x + y)`` of two
float64 values (an FP32 partial sum and an exact product, or two partial
sums) is the float64 sum rounded to FP32, which is one correct rounding
unless the float64 sum was itself inexact and fell on an FP32 halfway point
or below FP32's smallest normal: those elements (found by their bits, a
few in a million on random data) are redone from the exact sum rounded to
odd in float64 (TwoSum), whose rounding to FP32 is correct (53 >= 24 + 2
bits: Boldo and Melquiond, "When double rounding is odd", 2005).  A product
of inputs of at most 26 significant bits is exact in float64.  FP64 chains
of fused multiply-adds run Boldo and Melquiond's emulation (the one
:func:`fpsim.array.fma` runs) step by step on the whole output at once
(:class:`_FMA64`), where a check of the inputs' range proves every step
exact; elsewhere each step is :func:`fpsim.array.fma`.  FP64 products and
sums rounded apart are numpy's own float64 operations, which
``fpsim._machine.float64_ops_are_ieee`` proves IEEE on this machine before
they are used.  ``tests/test_cpu_accumulation.py`` checks every step
against Berkeley SoftFloat (and MPFR where C is added in the output
format).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import array as _array
from .._machine import float32_adds_are_ieee, float64_ops_are_ieee, two_sum_error
from ..formats import format as _lookup
from ._finish import round_to_output
from .accumulation import Accumulation

__all__ = ["run", "round_to"]

_TINY32 = 2.0 ** -126
#: Below this an FP32 result rounded with an unbounded exponent is tiny (x86
#: detects tininess after rounding): 2**-126 - 2**-151.
_FTZ32 = 2.0 ** -126 - 2.0 ** -151
_HALF_SHIFT = np.uint64(35)          # the 29 bits a float64 has beyond FP32's 24
_HALF = np.uint64(1 << 63)           # ... equal to 1000...0: an FP32 halfway point
_EXP64 = np.uint64(0x7FF << 52)
_BELOW_NORMAL32 = np.uint64((1023 - 126) << 52)
_SPLIT = 134217729.0                 # 2**27 + 1: Veltkamp's split into 26 + 27 bits
_U63 = np.uint64(63)
#: Output elements per step of :class:`_FMA64` (its ~10 work arrays stay in
#: the cache; measured on a Zen 4 with a 1 MiB L2, 8K to 32K are alike).
_FMA64_ELEMENTS = 1 << 14


def _odd(s: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x + y`` rounded to odd in float64, given ``s = fl(x + y)``."""
    err = two_sum_error(s, x, y)
    fix = (err != 0) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    if fix.any():
        s = s.copy()
        s[fix] = np.nextafter(s[fix], np.where(err[fix] > 0, np.inf, -np.inf))
    return s


def _to32(s: np.ndarray, x: np.ndarray, y: np.ndarray, ftz: bool) -> np.ndarray:
    """``RN32(x + y)`` as float64 values, with ``s = fl64(x + y)`` (``s``
    may be overwritten)."""
    with np.errstate(invalid="ignore", over="ignore"):
        r = s.astype(np.float32)
        hazard = (s.view(np.uint64) << _HALF_SHIFT) == _HALF
        hazard |= (s.view(np.uint64) & _EXP64) < _BELOW_NORMAL32   # |s| < 2**-126
        if hazard.any():
            xs = np.broadcast_to(x, s.shape)[hazard]
            ys = np.broadcast_to(y, s.shape)[hazard]
            odd = _odd(s[hazard], xs, ys)
            if ftz:
                odd = np.where(np.abs(odd) < _FTZ32, np.copysign(0.0, odd), odd)
            r[hazard] = odd.astype(np.float32)
    return r.astype(np.float64)


class _Arith:
    """The additions and products of one accumulator format."""

    def __init__(self, acc: Accumulation, native32: bool = False):
        self.fp32 = acc.accumulator == "fp32"
        self.ftz = acc.ftz
        # native32: values are float32 arrays and numpy's float32 arithmetic
        # (proven IEEE here) computes every step: products exact in FP32 or
        # rounded apart, sums rounded once each.
        self.native32 = native32
        self.dtype = np.float32 if native32 else np.float64
        if not native32 and not float64_ops_are_ieee():
            # (every path but numpy's float32 one sums in float64)
            raise RuntimeError("this machine's float64 arithmetic is not IEEE (flush to zero or "
                               "another rounding is set): fpsim cannot run this accumulation "
                               "here")

    def add(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            s = x + y
        if self.native32 or not self.fp32:
            return s
        return _to32(s, x, y, self.ftz)

    def rounded(self, p: np.ndarray) -> np.ndarray:
        """RN(p) of an exact product (FP32: the rounding of a sum ``p + 0``,
        FTZ's tininess included), or the float64 product itself."""
        if not self.fp32 or self.native32:
            return p
        return _to32(p.copy(), p, 0.0, self.ftz)

    def fma(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        if self.fp32:
            with np.errstate(invalid="ignore", over="ignore"):
                p = a * b
            return self.add(c, p)
        shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
        return _array.fma(*(np.ascontiguousarray(np.broadcast_to(v, shape))
                            for v in (a, b, c)), fmt="fp64")

    def product(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            return a * b


class _FMA64:
    """FP64 chains of fused multiply-adds ``s = RN(s + a·b)`` over many
    output elements at once, in numpy's float64 arithmetic (proven IEEE on
    this machine before use): Boldo and Melquiond's emulation (IEEE Trans.
    Computers 57(4), 2008), as in :mod:`fpsim.array._fp64`:

    * ``a·b = p + e`` exactly (Dekker's product, from Veltkamp splits of
      ``a`` and ``b`` made once for the whole chain);
    * ``s + p = h + l`` exactly (TwoSum);
    * ``v`` = ``l + e`` rounded to odd: TwoSum gives ``v`` (nearest) and its
      error ``f``; the odd result is ``v`` truncated toward zero (one code
      down where ``f`` points toward zero) with the last bit set where
      ``f`` is nonzero;
    * the fused result is ``h + v`` rounded to nearest.

    Used only where :meth:`applies` proves every step exact: every input
    finite and below ``2**990`` (Veltkamp's split cannot overflow), every
    nonzero product at least ``2**-960`` (Dekker's terms cannot underflow),
    and every partial sum's bound ``|C| + K·max|a|·max|b|`` below ``2**1020``
    (no TwoSum step overflows).  A zero result keeps IEEE's sign: where
    ``v`` is zero, ``h`` (the sum of ``s`` and the product, zeros signed
    by IEEE's rule) is the result; that fix runs only where an input or C
    has a zero.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, zeros: bool):
        self.a, self.b, self.zeros = a, b, zeros
        self.ah, self.al = self._split(a)
        self.bh, self.bl = self._split(b)

    @staticmethod
    def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hi = x * _SPLIT
        lo = hi - x
        hi -= lo                       # x's top 26 bits
        return hi, x - hi

    @staticmethod
    def applies(a: np.ndarray, b: np.ndarray, c: Any, K: int) -> bool:
        """Whether every step of every chain over ``a`` and ``b`` (from C or
        zero) is exact in the emulation."""
        big = []
        small = []
        for x in (a, b):
            if not np.isfinite(x).all():
                return False
            ax = np.abs(x)
            big.append(float(ax.max()) if ax.size else 0.0)
            nz = ax[ax != 0]
            small.append(float(nz.min()) if nz.size else np.inf)
        cmax = 0.0
        if c is not None:
            cv = np.asarray(c, np.float64)
            if not np.isfinite(cv).all():
                return False
            cmax = float(np.abs(cv).max()) if cv.size else 0.0
        if max(big) >= 2.0 ** 990 or small[0] * small[1] < 2.0 ** -960:
            return False
        return cmax + K * big[0] * big[1] < 2.0 ** 1020

    def chain(self, ks: list[int], value: np.ndarray) -> np.ndarray:
        """The chain over products ``ks`` from ``value`` (not modified)."""
        out = np.array(value, np.float64, copy=True)
        if not ks or not out.size:
            return out
        n0 = out.shape[0] if out.ndim else 1
        per_row = max(out.size // max(n0, 1), 1)
        rows = max(_FMA64_ELEMENTS // per_row, 1)
        idx = np.asarray(ks, np.intp)
        # product j's operands contiguous (axis 0: the product, then the
        # operand's own axes)
        parts = [np.ascontiguousarray(np.moveaxis(np.take(x, idx, axis=-1), -1, 0))
                 for x in (self.a, self.b, self.ah, self.al, self.bh, self.bl)]
        if out.ndim == 0 or n0 <= rows or any(x.ndim != out.ndim + 1 for x in parts):
            self._run(parts, out)
            return out
        for r0 in range(0, n0, rows):
            sl = slice(r0, r0 + rows)
            self._run([x[:, sl] if x.shape[1] > 1 else x for x in parts], out[sl])
        return out

    def _run(self, parts: list[np.ndarray], s: np.ndarray) -> None:
        a, b, ah, al, bh, bl = parts
        shape = s.shape
        p, e, w, h, low, v, f = (np.empty(shape) for _ in range(7))
        t, nz = np.empty(shape, np.uint64), np.empty(shape, np.uint64)
        bits = v.view(np.uint64)
        fbits = f.view(np.uint64)
        vzero = np.empty(shape, bool) if self.zeros else None
        with np.errstate(all="ignore"):
            for j in range(a.shape[0]):
                np.multiply(a[j], b[j], out=p)
                np.multiply(ah[j], bh[j], out=e)                # Dekker: e = a·b - p
                e -= p
                np.multiply(ah[j], bl[j], out=w)
                e += w
                np.multiply(al[j], bh[j], out=w)
                e += w
                np.multiply(al[j], bl[j], out=w)
                e += w
                np.add(s, p, out=h)                              # s + p = h + low
                two_sum_error(h, s, p, (low, w))
                np.add(low, e, out=v)                            # low + e = v + f
                two_sum_error(v, low, e, (f, w))
                np.bitwise_xor(fbits, bits, out=t)               # v to odd:
                t >>= _U63                                       # f's sign is not v's
                np.not_equal(f, 0, out=nz, casting="unsafe")     # 1 where inexact
                t &= nz
                bits -= t                                        # toward zero: one down
                bits |= nz                                       # the odd code
                np.add(h, v, out=s)
                if vzero is not None:
                    np.equal(v, 0, out=vzero)
                    np.copyto(s, h, where=vzero)


def _bits(x: np.ndarray) -> int:
    """The most significant bits any value of ``x`` has (53 where some
    value is not finite)."""
    if not np.isfinite(x).all():
        return 53
    v = x[x != 0]
    if not v.size:
        return 0
    m = np.frexp(v)[0]
    for p in (8, 11, 12, 16, 24):
        t = np.ldexp(m, p)
        if (t == np.trunc(t)).all():
            return p
    return 53


def _in32(x: np.ndarray) -> bool:
    """Whether every value of ``x`` is an FP32 value."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(x).all() and (x.astype(np.float32) == x).all())


def _finest(x: np.ndarray) -> int:
    """log2 of the finest ulp among the values of ``x`` (a large number for
    an array of zeros)."""
    v = x[(x != 0) & np.isfinite(x)]
    if not v.size:
        return 1 << 20
    return int(np.frexp(v)[1].min()) - max(_bits(v), 1)


def _no_subnormal_sums(a: np.ndarray, b: np.ndarray, c: Any) -> bool:
    """Whether every partial sum of the products (and C) is zero or at least
    FP32's smallest normal: all are multiples of the finest ulp."""
    q = _finest(a) + _finest(b)
    if c is not None:
        q = min(q, _finest(np.asarray(c, np.float64)))
    return q >= -126


def _products_exact32(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether every product ``a[..., k]·b[..., k]`` is an FP32 normal
    number or zero (so an FMA and a rounded product agree): the significands
    fit 24 bits together and the exponents stay in FP32's normal range."""
    if _bits(a) + _bits(b) > 24:
        return False
    na, nb = np.abs(a[a != 0]), np.abs(b[b != 0])
    if not na.size or not nb.size:
        return True
    return bool(na.min() * nb.min() >= _TINY32 and na.max() * nb.max() < 2.0 ** 127)


def _daz(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < _TINY32, np.copysign(0.0, x), x)


def run(acc: Accumulation, a: np.ndarray, b: np.ndarray, c: np.ndarray | None,
        out: str) -> np.ndarray:
    """The sums of ``acc`` for the products ``a[..., k] * b[..., k]``
    (broadcast over the leading axes), with ``c`` (or None), rounded to
    ``out``: float64 values (NaN where the result is a NaN)."""
    K = a.shape[-1]
    if b.shape[-1] != K:
        raise ValueError(f"run: a has {K} products, b {b.shape[-1]}")
    if acc.ftz:
        a, b = _daz(a), _daz(b)
    # numpy's float32 arithmetic computes the sum where every step is one
    # IEEE float32 operation: products exact (or rounded apart), and no FTZ,
    # or FTZ that cannot act (every partial sum is a multiple of the
    # products' finest ulp, so a nonzero one is never below it).
    native = (acc.accumulator == "fp32" and float32_adds_are_ieee()
              and (acc.products == "rounded" and _in32(a) and _in32(b)
                   or _products_exact32(a, b))
              and (not acc.ftz or _no_subnormal_sums(a, b, c)))
    ar = _Arith(acc, native)
    if native:                       # FP32 values: exact in float32
        a, b = a.astype(np.float32), b.astype(np.float32)
    shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    zero = np.zeros(shape, ar.dtype)
    cv = None if c is None else np.broadcast_to(np.asarray(c, np.float64), shape)
    if cv is not None and acc.ftz:
        cv = _daz(cv)
    if cv is not None and native:
        cv = cv.astype(np.float32)   # C enters an FP32 accumulator exactly: it is FP32 or narrower

    def p_of(k: int) -> tuple[np.ndarray, np.ndarray]:
        return a[..., k], b[..., k]

    fast = None
    if not ar.fp32 and acc.products == "fma" and not acc.ftz and _FMA64.applies(a, b, cv, K):
        zeros = not (a.all() and b.all() and (cv is None or cv.all()))
        fast = _FMA64(a, b, zeros)
    joins = acc.c_joins if cv is not None else None
    sums = [_block(acc, ar, p_of, lo, hi, cv if (i == 0 and joins == "start") else zero, fast)
            for i, (lo, hi) in enumerate(acc.blocks(K))]
    if joins == "first" or (joins == "start" and not sums):
        sums.insert(0, cv)                          # ((C + b0) + b1) + ...
    total = sums[0] if sums else zero
    for r in sums[1:]:
        total = ar.add(total, r)
    if joins == "last":
        total = ar.add(total, cv)
    result = round_to(total.astype(np.float64), out)
    if joins == "output":
        with np.errstate(invalid="ignore", over="ignore"):
            result = round_to(_exact_sum(result, cv, out), out)
    return result


def _exact_sum(x: np.ndarray, y: np.ndarray, out: str) -> np.ndarray:
    """``x + y`` rounded to odd in float64 (correct before one rounding to a
    format of at most 24 bits); numpy's sum for FP64."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = x + y
    return s if out == "fp64" else _odd(s, x, y)


def _block(acc: Accumulation, ar: _Arith, p_of: Callable[[int], Any], lo: int, hi: int,
           start: np.ndarray, fast: _FMA64 | None = None) -> np.ndarray:
    order = list(range(lo, hi))
    if acc.pair_swap:
        for j in range(0, len(order) - 1, 2):
            order[j], order[j + 1] = order[j + 1], order[j]
    w = acc.lanes
    n = len(order)
    main = n if acc.tail == "lanes" else n - n % (acc.unroll or w)
    zero = np.zeros_like(start)

    def chain(ks: list[int], value: np.ndarray) -> np.ndarray:
        if fast is not None:
            return fast.chain(ks, value)
        for k in ks:
            x, y = p_of(k)
            if acc.products == "fma":
                value = ar.fma(x, y, value)
            else:
                value = ar.add(value, ar.rounded(ar.product(x, y)))
        return value

    if acc.apart is not None:
        g, value, j = acc.apart, start, 0
        while j + 2 * g <= n:
            value = chain(order[j:j + g], value)
            x, y = p_of(order[j + g])
            t = chain(order[j + g + 1:j + 2 * g], ar.rounded(ar.product(x, y)))
            value = ar.add(value, t)
            j += 2 * g
        return chain(order[j:], value)
    # every lane exists, a lane no product reaches holding its +0 (a block
    # shorter than the lanes still joins w values)
    lanes = [chain(order[j:main:w], start if j == 0 else zero) for j in range(w)]
    if acc.tail == "lane0" and main < n:
        lanes[0] = chain(order[main:], lanes[0])
    joined = _join(acc.join, lanes, ar)
    if acc.tail == "after" and main < n:
        t = None
        for k in order[main:]:
            x, y = p_of(k)
            p = ar.rounded(ar.product(x, y))
            t = p if t is None else ar.add(t, p)
        joined = ar.add(joined, t)
    return joined


def _join(how: str, lanes: list[np.ndarray], ar: _Arith) -> np.ndarray:
    if len(lanes) == 1:
        return lanes[0]
    if how == "sequential":
        s = lanes[0]
        for v in lanes[1:]:
            s = ar.add(s, v)
        return s
    while len(lanes) > 1:
        if len(lanes) % 2:
            lanes = lanes + [np.zeros_like(lanes[0])]
        h = len(lanes) // 2
        if how == "pairs":
            lanes = [ar.add(lanes[2 * i], lanes[2 * i + 1]) for i in range(h)]
        else:
            lanes = [ar.add(lanes[i], lanes[i + h]) for i in range(h)]
    return lanes[0]


def round_to(x: np.ndarray, out: str) -> np.ndarray:
    """Values of an FP32 or FP64 accumulator rounded to ``out`` (RNE), as
    float64 values.  Each value is exact in float64, so one rounding from
    it is correct; into FP16 and BF16 by the matrix units' output rounding
    (:func:`fpsim.mma._finish.round_to_output`: its machine fast paths are
    proven equal to the kernel)."""
    if out == "fp64":
        return x
    if out == "fp32":
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(np.float32).astype(np.float64)
    fmt = _lookup(out)
    flat = np.ascontiguousarray(x, np.float64).ravel()
    codes = round_to_output(flat, fmt, "rne", None, True)
    res = _array.decode(codes, fmt).reshape(x.shape)
    zero = x == 0
    res[zero] = x[zero]        # a signed zero stays itself (the units' rule writes +0)
    return res
