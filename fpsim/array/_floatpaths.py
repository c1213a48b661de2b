"""The array arithmetic's paths through binary floating point: a table of
every operand pair (formats of at most 8 bits), float32/float64 results
with their exact errors rounded through the proxy table or FP32's bit
rounding, FP16's and BF16's float32 arithmetic rounded by integer
operations (:func:`_bits_op`), and FP64's own float64 arithmetic
(:mod:`fpsim.array._fp64`).  Each serves the lanes it can prove and gives
the rest to the integer path (:mod:`fpsim.array._chunks`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _machine
from .._scratch import scratch
from ..formats import FP32, FP64, Format
from ..modes import Rounding
from ..rounding import INEXACT
from . import _fp64
from . import _native as native
from ._chunks import _BINARY, _CHUNK_OPS, _wide
from ._convert import (
    BIT_MODES,
    _lookup_table,
    decode,
    round_fp32_bits,
    round_fp64_to_fp32,
    rounds_by_bits,
)
from ._kernel import U64, fields
from ._proxy import nudge_toward, proxy_for, proxy_index
from ._tables import cached


def _table_op(op: str, fmt: Format, key: tuple[Any, ...]) -> Callable[..., Any] | None:
    """For a binary operation on an 8-bit format in a deterministic mode,
    the result and flags of all 65,536 operand pairs, computed once by the
    vectorized path; the operation is then one lookup."""
    if fmt.width > 8 or op not in _BINARY:
        return None
    table = cached(("pairs", op, fmt, key), fmt, 1 << 16,
                   lambda pairs: _CHUNK_OPS[op](fmt, [pairs >> U64(8), pairs & U64(0xFF)],
                                                key, None))
    if table is None:
        return None  # some pair has no result (a NaN in a format without NaN)
    return lambda cs, rand: table.lookup((cs[0].astype(np.uint16) << np.uint16(8)) | cs[1])


def _float_op(op: str, fmt: Format, key: tuple[Any, ...], size: int,
              return_flags: bool = True) -> Callable[..., Any] | None:
    """add, sub, mul and div in a deterministic mode through binary floating
    point: products of the format's values are exact in float32 or float64,
    sums are exact with TwoSum's error term, and quotients with their exact
    remainder (:func:`_float_result`); the error decides the sticky bit.
    Formats of at most 16 bits then round through the proxy table of
    :mod:`fpsim.array._proxy`, flags included (arrays large enough to pay
    for it); FP32 rounds the float64 bits and sticky bit as
    :func:`fpsim.array.encode` does (:func:`round_fp64_to_fp32`).  Elements
    with a NaN result, an infinite result of finite operands, an exact zero
    sum (whose sign IEEE fixes by the mode) or an intermediate the proxy
    leaves unsure take the integer path.  FP16's and BF16's add, sub and
    mul round the float32 result by integer operations instead
    (:func:`_bits_op`).  FP64 computes in float64 itself, every lane proven
    by its exact error (:mod:`fpsim.array._fp64`; sqrt too)."""
    if fmt == FP64:
        if not _machine.float64_ops_are_ieee():
            return None
        return _fp64.fast_op(op, key, _CHUNK_OPS[op], return_flags)
    if rounds_by_bits(fmt):
        compute = _bits_op(op, fmt, key, lambda: _proxy_op(op, fmt, key, size), return_flags)
        if compute is not None:
            return compute
    return _proxy_op(op, fmt, key, size)


def _proxy_op(op: str, fmt: Format, key: tuple[Any, ...], size: int
              ) -> Callable[..., Any] | None:
    """:func:`_float_op` through the proxy table (formats of at most 16
    bits) or FP32's rounding of float64 bits."""
    if op == "fma":
        # FP32 only: a product of two FP32 values (48 bits, within 2**±298)
        # is exact in float64, so fma is the float64 sum of that product and
        # c, whose TwoSum error decides the sticky bit as for add.  (A
        # declared GEMM accumulates exact products of BF16 or FP32 inputs by
        # FP32 fmas: this is their path.)
        work = (np.float64, FP64) if fmt == FP32 else None
    elif op in ("add", "sub", "mul", "div"):
        work = _exact_float(op, fmt)
    else:
        return None
    if work is None:
        return None
    dtype, source = work
    if fmt.width <= 16:
        proxy = proxy_for(fmt)
        if proxy is None or size < (1 << 15):
            return None
        table = _lookup_table(fmt, proxy, (*key[:3], False, *key[4:]))
        if table is None:
            return None
        values = _float_values(fmt, key[3], dtype)
        operand = lambda c: np.take(values, c)  # noqa: E731

        def rounded(bits: np.ndarray, sticky: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            index, unsure = proxy_index(bits, source, proxy, False)
            if sticky is not None:
                index |= sticky
            return (*table.lookup(index), unsure)
    elif fmt == FP32 and dtype is np.float64:
        operand = lambda c: _fp32_values(c, key[3])  # noqa: E731
        machine = native.usable(key)

        def rounded(bits: np.ndarray, sticky: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # NaN lanes are redone: they take no time converting their NaN here.
            np.copyto(bits, U64(0), where=(bits & U64(FP64.magnitude_mask)) > U64(FP64.inf_code))
            codes, flags = round_fp64_to_fp32(bits.view(dtype), sticky, key, machine)
            return codes, flags, np.zeros(bits.shape, bool)
    else:
        return None
    chunk_op = _CHUNK_OPS[op]

    def compute(cs: list[np.ndarray], rand: Any) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):  # NaN and inf lanes are redone below
            xs = [operand(c) for c in cs]
            if op == "fma":  # the exact product, then the sum with c
                s, bits, sticky = _float_result("add", xs[0] * xs[1], xs[2])
            else:
                s, bits, sticky = _float_result(op, *xs)
        # An infinite operand gives an infinite s, which converts as the
        # scalar model delivers an infinite operand's result; NaN results
        # (NaN operands, inf - inf, 0 × inf) and infinities from finite
        # operands (overflow of the working type) are redone, and so are
        # exact zeros of sums (whose sign IEEE fixes by the operands and mode).
        redo = np.isnan(s)
        overflowed = np.isinf(s)
        if overflowed.any():
            redo |= overflowed & np.logical_and.reduce([np.isfinite(x) for x in xs])
        if op != "mul":
            redo |= s == 0
        codes, flags, unsure = rounded(bits, sticky)
        redo |= unsure
        if redo.any():
            i = np.flatnonzero(redo)
            codes[i], flags[i] = chunk_op(fmt, _wide([c[i] for c in cs]), key, None)
        return codes, flags

    return compute


_U32 = np.uint32
_SIGN = _U32(1 << 31)
_U8_INEXACT = np.uint8(INEXACT)
_NAN = _U32(0x7FC00000)

# Round to nearest needs no error term for the codes.  The float32 sum or
# difference ``s = RN24(z)`` of two values of a format of ``p <= 11``
# significant bits (FP16's 11, BF16's 8), rounded to nearest into that
# format (ties to even or away), is ``RN_p(z)``, the exact ``z = x ± y``
# rounded once: double rounding is innocuous where the wider precision is
# at least ``2p + 1`` (Figueroa, "When is double rounding innocuous?",
# 1995).  Here:
#
# * where ``z`` is a float32 value, ``s = z``; a midpoint of the format's
#   grid (``p + 1`` bits) is one;
# * else ``z`` needs more than 24 bits.  Say ``|x| >= |y|``, exponents
#   ``ex >= ey`` and ``z``'s ``ez``: ``z`` is a multiple of
#   ``2**(ey - p + 1)`` below ``2**(ez + 1)``, so ``ez - ey > 24 - p``,
#   ``|y| < 2**(ey + 1) <= 2**(ez + p - 24)``, and ``ex >= ez - 1``;
# * rounding is monotonic and midpoints are float32 values, so ``s`` lies
#   on ``z``'s side of every midpoint, or on one: ``RN_p(s)`` differs from
#   ``RN_p(z)`` only where ``s`` is a midpoint ``m`` and ``z`` is not, with
#   ``|z - m| <= ulp24(z) / 2 = 2**(ez - 24)``;
# * but ``x`` (a multiple of ``2**(ex - p + 1)``, so of ``2**(ez - p)``)
#   is no such ``m`` (an odd multiple of ``2**(ez - p)`` of exponent
#   ``ez``), so ``|x - m| >= 2**(ez - p)`` and ``|z - m| >= |x - m| - |y|
#   > 2**(ez - p) - 2**(ez + p - 24) >= 2**(ez - 24)`` for ``p <= 11``:
#   ``s`` is no midpoint.
#
# Overflow agrees too (the two roundings, the exponent unbounded, are
# equal), sums below the normal range are exact (multiples of the smallest
# subnormal), and a product of two such values is exact in float32's normal
# range.  Directed modes and round-to-odd have no such rule: a sum just
# above a grid point that float32 rounds onto it would be taken as exact.
_NEAREST = frozenset({Rounding.RNE, Rounding.RNA})


def _bits_op(op: str, fmt: Format, key: tuple[Any, ...],
             fallback: Callable[[], Callable[..., Any] | None], return_flags: bool = True
             ) -> Callable[..., Any] | None:
    """add, sub and mul of a 16-bit format such as FP16 or BF16
    (:func:`fpsim.array._convert.rounds_by_bits`) in a deterministic mode,
    without a table of results: the operands are float32 values (a BF16
    code is the top half of its value's float32 code: a shift; FP16 by
    shifts and a multiplication, :func:`_scaled_values`; under DAZ by a
    table of the 65,536 values), a sum is known exactly as the float32 sum
    and its TwoSum error, and a product of two (at most 2 × 11 significant
    bits) is exact in float32's normal range.  The exact result, as its
    float32 round-to-odd proxy (:mod:`fpsim.array._proxy`), rounds into
    the format by :func:`fpsim.array._convert.round_fp32_bits`.  Rounding
    to nearest (even or away) needs no proxy: the float32 sum rounds as it
    is (see the comment above), and its error only says whether a lane was
    inexact.

    That serves every lane whose result is a normal number or overflows;
    and exact zeros and subnormals, except where a setting changes them:
    FTZ flushes subnormals, toward -inf an exact zero sum takes IEEE's sign
    (the OR of the terms' signs, set here), and a BF16 product below
    2**-126 may have been rounded by float32 (zeros of a zero operand
    excepted).  A sum below the smallest normal is exact (a multiple of the
    smallest subnormal: in float32 and in the format).  The integer path
    redoes the rest: infinities, NaNs, sums beyond float32's range.  The
    machine's float32 arithmetic must be IEEE's default (checked once per
    call).

    Without per-element flags (``return_flags`` False: the context's flags
    only) each chunk's flags come back ORed into one int, and whether the
    call was inexact is looked for only until a chunk is
    (:func:`_inexact_anywhere`): in round to nearest, a sum's error term is
    then rarely computed at all.

    A chunk of products of which more than an eighth fall below the normal
    range (each then rounded lane by lane; judged on every 16th lane, before
    the chunk is decoded) goes to ``fallback()``'s path instead, the proxy
    table, which costs the same for every lane."""
    mode, saturate, ftz, daz = key[:4]
    if op not in ("add", "sub", "mul") or mode not in BIT_MODES:
        return None
    if not native.float32_adds_are_ieee():
        return None
    # BF16 is float32 cut short: its float32 code is its own shifted by 16.
    shift_only = fmt.exponent_bits == FP32.exponent_bits and fmt.bias == FP32.bias and not daz
    values = None if shift_only else _float_values(fmt, daz, np.float32)
    # FP16 by shifts and a multiplication (its infinities finite once scaled)
    scaled = not daz and fmt.exponent_bits < FP32.exponent_bits
    chunk_op = _CHUNK_OPS[op]
    exact_products = _exact_float("mul", fmt) == (np.float32, FP32)
    if op == "mul":
        keep_zero = keep_subnormal = exact_products
    else:
        keep_zero = mode is not Rounding.RDN
        keep_subnormal = True
    keep_subnormal &= not ftz
    tiny_limit = np.float32(2.0 ** fmt.emin)
    proxy: list[Any] = []  # the fallback's compute, made on first need
    inf_positive = np.uint16(fmt.inf_code)
    inf_negative = np.uint16(fmt.sign_bit | fmt.inf_code)
    sign = np.uint16(fmt.sign_bit)
    nearest = op != "mul" and mode in _NEAREST  # a sum rounds as float32 gave it
    per_lane = return_flags
    seen = threading.Event()  # (without per-lane flags) some chunk of this call was inexact
    low = _U32((1 << (FP32.mantissa_bits - fmt.mantissa_bits)) - 1)  # bits below the format's

    def mostly_tiny(a: np.ndarray, b: np.ndarray) -> bool:
        """Whether more than an eighth of the products of a sample of the
        lanes fall below the normal range (the chunk then takes the proxy
        table, which costs the same for every lane; a wrong guess costs
        time, never bits)."""
        if values is None:
            x = (a.astype(_U32) << _U32(16)).view(np.float32)
            y = (b.astype(_U32) << _U32(16)).view(np.float32)
        else:
            x, y = np.take(values, a), np.take(values, b)
        with np.errstate(all="ignore"):
            return np.count_nonzero(np.abs(x * y) < tiny_limit) * 8 > a.size

    def compute(cs: list[np.ndarray], rand: Any) -> tuple[np.ndarray, Any]:
        a, b = cs
        n = a.shape[0]
        if op == "mul" and n >= 1 << 12 and mostly_tiny(a[::16], b[::16]):
            other = proxy[0] if proxy else proxy.append(fallback()) or proxy[0]
            if other is not None:
                return other(cs, rand)
        xb, yb, sb, eb, tb = scratch("16-bit op", n, _U32, _U32, _U32, _U32, _U32)
        x, y, s, e, t = (v.view(np.float32) for v in (xb, yb, sb, eb, tb))
        for codes, dst in ((a, xb), (b, yb)):
            if values is None:
                np.copyto(dst, codes)
                dst <<= _U32(16)
            elif scaled:
                _scaled_values(fmt, codes, dst, values)
            else:  # (with DAZ subnormals are zeros of their sign in the table)
                np.take(values, codes, out=dst.view(np.float32))
        with np.errstate(all="ignore"):  # infinities and NaNs are redone
            if op == "mul":
                np.multiply(x, y, out=s)
            elif nearest:
                (np.add if op == "add" else np.subtract)(x, y, out=s)
                if per_lane:
                    _two_sum_error(op, x, y, s, e, t)
            else:
                _two_sum(op, x, y, s, e, t)
                not_finite, = scratch("16-bit op not finite", n, bool)
                np.isfinite(s, out=not_finite)
                np.logical_not(not_finite, out=not_finite)
                _odd_proxy(sb, eb, tb)
                # An infinite sum's error is NaN, which the proxy does not
                # carry: a lane whose float32 sum is not finite becomes a
                # NaN, which the rounding leaves to be redone (flags and all).
                if not_finite.any():
                    np.copyto(sb, _NAN, where=not_finite)
        codes, flags, redo = round_fp32_bits(sb, fmt, mode, saturate, keep_zero,
                                             keep_subnormal, flags=per_lane,
                                             exact_below=op != "mul")
        if nearest and per_lane:
            # float32's own rounding was inexact (NaN where s is not
            # finite: those lanes are redone)
            inexact = np.not_equal(e, 0, out=tb.view(bool)[:n])
            flags |= np.multiply(inexact.view(np.uint8), _U8_INEXACT, out=inexact.view(np.uint8))
        if op == "mul" and redo.size and not keep_zero:
            # A zero operand gives an exact zero of the right sign (0 × inf
            # is NaN, not zero).
            zero = (s[redo] == 0) & ((x[redo] == 0) | (y[redo] == 0))
            redo = redo[~zero]
        elif op != "mul" and redo.size and not keep_zero:
            # Toward -inf an exact zero sum is -0 unless both terms are +0
            # (IEEE 754 §6.3): its sign is the OR of theirs.  (The proxy
            # leaves exact lanes as they were: s == 0 is an exact zero.)
            zero = redo[s[redo] == 0]
            second = b[zero] ^ sign if op == "sub" else b[zero]
            codes[zero] = (a[zero] | second) & sign
            if per_lane:
                flags[zero] = 0
            redo = redo[s[redo] != 0]
        if not per_lane and not seen.is_set():
            with np.errstate(all="ignore"):  # (lanes whose s is not finite are in redo)
                if _inexact_anywhere(op, nearest, low, x, y, s, e, t, redo):
                    seen.set()
        if redo.size and saturate is not True:
            # An infinite operand and an infinite float32 result (not
            # inf - inf, not inf * 0, which are NaN): that infinity, exact,
            # no flag, whatever the mode.
            xr, yr = x[redo], y[redo]
            with np.errstate(all="ignore"):  # (s may hold a proxy's bits by now)
                r = xr * yr if op == "mul" else (xr + yr if op == "add" else xr - yr)
            infinite = np.isinf(r) & (np.isinf(xr) | np.isinf(yr))
            if infinite.any():
                j = redo[infinite]
                codes[j] = np.where(r[infinite] < 0, inf_negative, inf_positive)
                if per_lane:
                    flags[j] = 0
                redo = redo[~infinite]
        if redo.size:
            redo_codes, redo_flags = chunk_op(fmt, _wide([c[redo] for c in cs]), key, None)
            codes[redo] = redo_codes
            if per_lane:
                flags[redo] = redo_flags
            else:
                flags |= int(np.bitwise_or.reduce(redo_flags))
        if not per_lane and seen.is_set():
            flags |= INEXACT
        return codes, flags

    return compute


def _scaled_values(fmt: Format, codes: np.ndarray, dst: np.ndarray, values: np.ndarray
                   ) -> None:
    """The values of ``codes`` (a 16-bit format of
    :func:`fpsim.array._convert.rounds_by_bits` with fewer exponent bits
    than float32, such as FP16) as float32 values, in ``dst`` (uint32, their
    codes): a code's bits moved to float32's places (the sign to its sign,
    the rest to the top of its exponent and fraction: a shift left, an
    arithmetic shift right that copies the sign into the bits between,
    which are then cleared) are a float32 code whose value is the code's
    times ``2**(fmt.bias - 127)``, for subnormals too (both grids end at
    the same exponent, shifted), so one exact multiplication by a power of
    two gives the value.  Infinities and NaNs, which come out finite and
    beyond the format's largest value, are read from ``values`` (every
    code's float32 value)."""
    np.copyto(dst, codes)
    dst <<= _U32(FP32.width - fmt.width)
    signed = dst.view(np.int32)
    signed >>= np.int32(FP32.exponent_bits - fmt.exponent_bits)
    dst &= _U32(_SIGN | ((1 << (FP32.mantissa_bits + fmt.exponent_bits)) - 1))
    x = dst.view(np.float32)
    x *= np.float32(2.0 ** (FP32.bias - fmt.bias))
    top = np.float32(fmt.max)
    if x.size and not (np.maximum.reduce(x) <= top and np.minimum.reduce(x) >= -top):
        i = np.flatnonzero(~(np.abs(x) <= top))
        x[i] = values[codes[i]]


def _inexact_anywhere(op: str, nearest: bool, low: np.uint32, x: np.ndarray, y: np.ndarray,
                      s: np.ndarray, e: np.ndarray, t: np.ndarray, redo: np.ndarray) -> bool:
    """Whether a lane not in ``redo`` (lanes whose flags come from elsewhere)
    is inexact: its float32 result ``s`` (a product, a sum, or a sum's
    round-to-odd proxy) has a bit below the format's last place (``low``:
    those bits of its code), or, where ``nearest`` (``s`` the rounded sum
    ``x ± y`` itself), TwoSum's error says that ``s`` was inexact.  Products
    are exact in float32 outside ``redo``, and so is every finite float32
    sum's error.  ``e`` and ``t`` are work space."""
    w = e.view(_U32)
    np.bitwise_and(s.view(_U32), low, out=w)
    if redo.size:
        w[redo] = 0
    if w.any():
        return True
    if not nearest:
        return False
    _two_sum_error(op, x, y, s, e, t)
    if redo.size:
        e[redo] = 0
    return bool(e.any())


def _two_sum(op: str, x: np.ndarray, y: np.ndarray, s: np.ndarray, e: np.ndarray,
             t: np.ndarray) -> None:
    """``s = x ± y`` rounded to nearest and ``e`` its exact error, so that
    ``s + e == x ± y`` (TwoSum, Knuth; ``x - y`` as TwoSum of ``x`` and
    ``-y``, with the negation folded in); ``t`` is work space."""
    if op == "add":
        np.add(x, y, out=s)
    else:
        np.subtract(x, y, out=s)
    _two_sum_error(op, x, y, s, e, t)


def _two_sum_error(op: str, x: np.ndarray, y: np.ndarray, s: np.ndarray, e: np.ndarray,
                   t: np.ndarray) -> None:
    """``e``: the exact error of ``s``, the float32 ``x ± y`` rounded to
    nearest (:func:`_two_sum`); ``t`` is work space."""
    _machine.two_sum_error(s, x, y, (e, t), negate_y=op == "sub")


def _odd_proxy(sb: np.ndarray, eb: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """The float32 codes of the round-to-odd of ``s + e`` (uint32 codes of a
    finite float32 sum ``s`` and its exact error ``e``, ``|e| <= ulp(s)/2``),
    in ``sb``: ``s`` where ``e`` is zero, else the one of ``s`` and its
    neighbour toward ``e`` that has its last bit set.  ``tb`` is work space."""
    # sticky: 1 where e is nonzero (its magnitude bits, plus 0x7fffffff,
    # carry into the top bit).
    np.bitwise_and(eb, ~_SIGN, out=tb)
    tb += ~_SIGN
    tb >>= _U32(31)
    # toward zero: e's sign differs from s's (and e is nonzero): one code down.
    eb ^= sb
    eb >>= _U32(31)
    eb &= tb
    sb -= eb
    sb |= tb
    return sb


def _fp32_values(codes: np.ndarray, daz: bool) -> np.ndarray:
    """FP32 codes (uint32) as float64 values, exact (subnormals as zeros of
    their sign under DAZ)."""
    x = codes.view(np.float32).astype(np.float64)
    if daz:
        np.copyto(x, x * 0.0, where=np.abs(x) < float(FP32.min_normal))
    return x


def _exact_float(op: str, fmt: Format) -> tuple[type, Format] | None:
    """The binary type (float32, else float64) that holds every value of
    ``fmt`` and, for ``mul``, every product exactly (2p bits, in its normal
    range), with the matching source format; None if neither does.  Sums
    need no more: TwoSum's error term is exact (an overflowing sum is redone)."""
    p, lo, hi = fmt.precision, fmt.emin - fmt.mantissa_bits, fmt.emax + 1
    if op == "div":
        # float64 only, and divisors of at most 26 bits (the remainder's
        # products are exact); quotients and remainders of such formats stay
        # far inside float64's normal range.
        ok = p <= 26 and lo >= -600 and hi <= 600
        return (np.float64, FP64) if ok else None
    for dtype, source in ((np.float32, FP32), (np.float64, FP64)):
        if p > source.precision or lo < source.emin - source.mantissa_bits or hi > source.emax:
            continue  # the values themselves do not fit
        if op != "mul" or (2 * p <= source.precision and 2 * lo >= source.emin
                           and 2 * hi <= source.emax):
            return dtype, source
    return None


def _float_result(op: str, x: np.ndarray, y: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The binary result, bits whose round-to-odd is the exact result's, and
    the sticky bit the rounding lost (None where exact)."""
    unsigned = f"u{x.dtype.itemsize}"
    if op == "mul":
        s = x * y
        return s, s.view(unsigned), None
    if op == "div":
        # The quotient rounded to float64, and the sign of the exact
        # remainder x - q*y, computed without error: q split into halves of
        # 26 and 27 bits (Veltkamp), whose products with y (at most 26 bits,
        # see _exact_float) are exact, and the differences are exact too
        # (each is a multiple of the smaller products' last place and
        # smaller than the previous term).  x/y = q + (x - q*y)/y.
        s = x / y
        c = s * 134217729.0  # 2**27 + 1
        high = c - (c - s)
        low = s - high
        rem = (x - high * y) - low * y
        bits, sticky = nudge_toward(s.view(unsigned), rem * y)
        return s, bits, sticky
    if op == "sub":
        y = np.negative(y, out=y)
    s = x + y
    # TwoSum (Knuth): s + err == x + y exactly.
    yv = s - x
    err = (x - (s - yv)) + (y - yv)
    bits, sticky = nudge_toward(s.view(unsigned), err)
    return s, bits, sticky


_FLOAT_VALUES: dict[tuple[Format, bool, type], np.ndarray] = {}


def _float_values(fmt: Format, daz: bool, dtype: type) -> np.ndarray:
    """Every code's value as ``dtype`` (exact; subnormals as zeros of their
    sign under DAZ)."""
    k = (fmt, daz, dtype)
    if k not in _FLOAT_VALUES:
        codes = np.arange(1 << fmt.width, dtype=U64)
        values = decode(codes, fmt)
        if daz:
            subnormal = (fields(fmt, codes)[3] < U64(1 << fmt.mantissa_bits)) & (values != 0)
            values[subnormal] = np.copysign(0.0, values[subnormal])
        with np.errstate(invalid="ignore"):  # signaling NaNs (their lanes are redone)
            _FLOAT_VALUES[k] = values.astype(dtype)
    return _FLOAT_VALUES[k]
