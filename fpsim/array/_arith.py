"""Elementwise IEEE arithmetic and comparisons on arrays: :mod:`fpsim.arith`
applied to every element.

Each operation decodes its operands' codes, computes every element's exact
result as ``(negative, sig, exp, sticky)`` (see :mod:`fpsim.array._kernel`)
with uint64/int64 integer arithmetic, and rounds them all at once through the
vectorized kernel; NaN, infinity and invalid cases follow the scalar rules,
case by case, in the same order as :mod:`fpsim.arith`.

The integers must hold the bits the rounding reads.  Products are exact (a
format of precision ``p <= 31`` has products below 2**62).  Sums, quotients
and roots keep ``p + 1`` bits or more and a sticky bit, and stochastic
rounding also needs the ``sr_bits`` bits below the last place: sums,
quotients and fma need ``p + sr_bits <= 60``, square roots (whose radicand
holds twice the root's bits) ``p + sr_bits <= 30``.  A setting outside these
bounds (e.g. FP32 with ``sr_bits > 36``, or ``sqrt`` under stochastic
rounding with the default 32 random bits) is computed by the scalar model,
element by element: the same results, at scalar speed.

For formats of at most 8 bits the binary operations of a deterministic mode
are served from a table of all 65,536 operand pairs, computed once per
setting by the same vectorized path.  ``add``, ``sub`` and ``mul`` of FP16
and BF16 (``div`` too, through a table, on large arrays) and of FP32 in a
deterministic mode compute in binary floating point instead (see
:func:`_float_op` and :func:`_bits_op`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _threads
from .._errstate import quiet
from .._scratch import scratch
from ..context import Context, resolve
from ..formats import FP16, FP32, FP64, Format
from ..formats import format as _lookup
from ..modes import STOCHASTIC, Rounding, Tininess
from ..nans import default_nan
from ..rounding import DIVIDE_BY_ZERO, INEXACT, INVALID, infinity_code, p3109_applies
from . import _native as native
from ._convert import (
    BIT_MODES,
    _lookup_table,
    decode,
    round_fp32_bits,
    round_fp64_to_fp32,
    rounds_by_bits,
)
from ._kernel import I64, U8, U64, bit_length, fields, nan_results, round_values
from ._proxy import nudge_toward, proxy_for, proxy_index
from ._tables import cached
from .engine import (
    DEFAULT_CHUNK,
    VALUE_DTYPE_NAMES,
    as_array,
    check_codes,
    check_flag,
    check_size,
    code_dtype,
    codes_of,
    raw_codes,
    run_chunks,
    stochastic_bits,
    value_dtype,
)

__all__ = ["add", "add_sequence", "sub", "mul", "div", "fma", "sqrt",
           "eq", "ne", "lt", "le", "gt", "ge", "unordered"]

# The width of the aligned significands of a sum: the larger operand is
# placed at bits 61..(62 - its length), so a sum of two fits an int64.
_WIDTH = 62


# -- operands ---------------------------------------------------------------------------------

class _Operands:
    """The operands of one call: their format, the result's shape, flat
    views (or broadcast copies) of each, and what the result is made of."""

    def __init__(self, op: str, xs: tuple[Any, ...], fmt: Format | str | None) -> None:
        arrays = [as_array(x) for x in xs]
        typed = [a for a in arrays if a.dtype.kind not in "iu"]
        if typed and len(typed) < len(arrays):
            raise TypeError(f"{op}() operands mix values ({typed[0].dtype}) and integer codes; "
                            "pass all as values of one dtype or all as codes with fmt=")
        given = None if fmt is None else _lookup(fmt)
        if typed:
            own = [_dtype_format(op, a.dtype) for a in typed]
            if any(f != own[0] for f in own[1:]):
                names = " and ".join(sorted({f.name for f in own}))
                raise TypeError(f"{op}() operands are in different formats ({names}); convert "
                                f"first, e.g. fpsim.array.round(x, {own[0].name!r})")
            if given is not None and given != own[0]:
                raise TypeError(f"fmt={given.name} disagrees with the operands' dtype "
                                f"{typed[0].dtype} ({own[0].name}); drop fmt= or pass codes")
            given = own[0]
        elif given is None:
            raise TypeError(f"{op}() on integer codes needs fmt= naming their format "
                            "(or pass values of a float dtype)")
        if given.width > 32:
            raise ValueError(f"array arithmetic supports formats up to 32 bits; {given.name} "
                             f"is {given.width} bits (use the scalar model, fpsim.arith)")
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise ValueError(f"{op}() operands could not be broadcast together: shapes "
                             f"{shapes}") from None
        # refused from the shape, before any work (a broadcast view costs nothing)
        check_size(op, shape, code_dtype(given).itemsize, "the operands, broadcast,")
        self.fmt: Format = given
        self.shape: tuple[int, ...] = shape
        self.size = int(np.prod(shape, dtype=np.int64))
        self.result_dtype = value_dtype(given) if typed else code_dtype(given)
        self.flats = [_flat(a, shape, given) for a in arrays]

    def chunk(self, start: int, stop: int) -> list[np.ndarray]:
        """The operands of elements ``start:stop`` (values or codes, as given)."""
        out = []
        for a in self.flats:
            if a.size == 1:
                out.append(np.broadcast_to(a, (stop - start,)))
            else:
                out.append(a[start:stop])
        return out


def _dtype_format(op: str, dtype: np.dtype) -> Format:
    if dtype.name not in VALUE_DTYPE_NAMES:
        raise TypeError(f"{op}() cannot compute on dtype {dtype}: accepted "
                        f"{', '.join(n for n in VALUE_DTYPE_NAMES if n != 'float64')}, "
                        "or integer codes with fmt=")
    return _lookup(dtype.name)


def _flat(a: np.ndarray, shape: tuple[int, ...], fmt: Format) -> np.ndarray:
    """All the codes of one operand as uint64, flat: one element where it
    broadcasts from a single value, else the broadcast array (copied only
    where broadcasting needs it)."""
    if a.size == 1:
        return codes_of(a.reshape(1), fmt)
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    flat = a.reshape(-1)
    if flat.dtype.kind in "iu":
        check_codes(flat, fmt)  # before any work, so that no flag is raised
    return flat


# -- the driver -------------------------------------------------------------------------------

def _run(op: str, xs: tuple[Any, ...], ctx: Context | None, fmt: Format | str | None,
         random_bits: Any, rng: Any, return_flags: bool, chunk_size: int,
         overrides: dict[str, Any], workers: int | None = None) -> Any:
    """Apply ``_CHUNK_OPS[op]`` chunk by chunk (on up to ``workers``
    threads, except under stochastic rounding, whose random numbers are
    drawn in element order), OR the flags into the context."""
    _threads.check_workers(op, workers)
    operands = _Operands(op, xs, fmt)
    fmt = operands.fmt
    ctx, key = resolve(ctx, overrides)
    bits = stochastic_bits(key, random_bits, rng, ctx, operands.shape)
    if _fits(op, fmt, key):
        compute = None
        if bits is None:
            compute = _table_op(op, fmt, key) or _float_op(op, fmt, key, operands.size)
        if compute is None:
            chunk_op = _CHUNK_OPS[op]
            compute = lambda cs, rand: chunk_op(fmt, _wide(cs), key, rand)  # noqa: E731
    else:
        compute = lambda cs, rand: _scalar_chunk(op, fmt, cs, key, rand)  # noqa: E731

    def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        rand = bits(start, stop) if bits is not None else None
        return compute([raw_codes(c, fmt, check=False) for c in operands.chunk(start, stop)],
                       rand)

    result = run_chunks(operands.size, operands.shape, code_dtype(fmt), chunk_size, chunk, ctx,
                        return_flags, workers if bits is None else 1)
    if return_flags:
        return result[0].view(operands.result_dtype), result[1]
    return result.view(operands.result_dtype)


def _wide(cs: list[np.ndarray]) -> list[np.ndarray]:
    """Operand codes as uint64, as the integer path computes on them."""
    return [c.astype(U64) for c in cs]


def _fits(op: str, fmt: Format, key: tuple[Any, ...]) -> bool:
    """Whether the vectorized integers hold every bit the rounding reads
    (see the module's docstring); otherwise the scalar model computes."""
    p = fmt.precision
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    if p > 31:
        return False
    if op == "sqrt":
        return p + extra <= 30
    if op == "fma":
        return 2 * p <= 60 and p + extra <= 60
    if op == "mul":
        return True
    return p + extra <= 60


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


def _float_op(op: str, fmt: Format, key: tuple[Any, ...], size: int
              ) -> Callable[..., Any] | None:
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
    (:func:`_bits_op`)."""
    if rounds_by_bits(fmt):
        compute = _bits_op(op, fmt, key, lambda: _proxy_op(op, fmt, key, size))
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


def _bits_op(op: str, fmt: Format, key: tuple[Any, ...],
             fallback: Callable[[], Callable[..., Any] | None]
             ) -> Callable[..., Any] | None:
    """add, sub and mul of a 16-bit format such as FP16 or BF16
    (:func:`fpsim.array._convert.rounds_by_bits`) in a deterministic mode,
    without a table of results: the operands are float32 values (a BF16
    code is the top half of its value's float32 code: a shift; FP16 by a
    table of its 65,536 values), a sum is known exactly as the float32 sum
    and its TwoSum error, and a product of two (at most 2 × 11 significant
    bits) is exact in float32's normal range.  The exact result, as its
    float32 round-to-odd proxy (:mod:`fpsim.array._proxy`), rounds into
    the format by :func:`fpsim.array._convert.round_fp32_bits`.

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

    def compute(cs: list[np.ndarray], rand: Any) -> tuple[np.ndarray, np.ndarray]:
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
            else:  # (with DAZ subnormals are zeros of their sign in the table)
                np.take(values, codes, out=dst.view(np.float32))
        finite = None
        with np.errstate(all="ignore"):  # infinities and NaNs are redone
            if op == "mul":
                np.multiply(x, y, out=s)
                bits = sb
            else:
                _two_sum(op, x, y, s, e, t)
                # An infinite sum's error is NaN, which the proxy does not
                # carry: every lane whose float32 sum is not finite is redone.
                finite, = scratch("16-bit op finite", n, bool)
                np.isfinite(s, out=finite)
                bits = _odd_proxy(sb, eb, tb)
        codes, flags, redo = round_fp32_bits(bits, fmt, mode, saturate, keep_zero,
                                             keep_subnormal)
        sign = np.uint16(fmt.sign_bit)
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
            flags[zero] = 0
            redo = redo[s[redo] != 0]
        if finite is not None and not finite.all():
            np.logical_not(finite, out=finite)  # (a mask, not a sort of indices)
            finite[redo] = True
            redo = np.flatnonzero(finite)
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
                flags[j] = 0
                redo = redo[~infinite]
        if redo.size:
            codes[redo], flags[redo] = chunk_op(fmt, _wide([c[redo] for c in cs]), key, None)
        return codes, flags

    return compute


def _two_sum(op: str, x: np.ndarray, y: np.ndarray, s: np.ndarray, e: np.ndarray,
             t: np.ndarray) -> None:
    """``s = x ± y`` rounded to nearest and ``e`` its exact error, so that
    ``s + e == x ± y`` (TwoSum, Knuth; ``x - y`` as TwoSum of ``x`` and
    ``-y``, with the negation folded in); ``t`` is work space."""
    if op == "add":
        np.add(x, y, out=s)
    else:
        np.subtract(x, y, out=s)
    np.subtract(s, x, out=e)        # yv: the part of s that y (or -y) gave
    np.subtract(s, e, out=t)
    np.subtract(x, t, out=t)        # x's part that s lost
    if op == "add":
        np.subtract(y, e, out=e)    # y's part that s lost
        np.add(t, e, out=e)
    else:
        np.add(y, e, out=e)         # minus (-y)'s part that s lost
        np.subtract(t, e, out=e)


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


def _scalar_chunk(op: str, fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
                  rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The scalar model, element by element (settings the integers cannot hold)."""
    from .. import arith

    mode, saturate, ftz, daz, before, sr_bits, nan, rules = key
    ctx = Context(rounding=mode, saturate=saturate, ftz=ftz, daz=daz, sr_bits=sr_bits, nan=nan,
                  tininess=Tininess.BEFORE if before else Tininess.AFTER, p3109=rules)
    fn = getattr(arith, op)
    make = fmt.from_bits
    n = cs[0].shape[0]
    out = np.empty(n, U64)
    flags = np.empty(n, U8)
    columns = [c.tolist() for c in cs]
    for i in builtins.range(n):
        ctx._flags[0] = 0
        args = [make(col[i]) for col in columns]
        if rand is None:
            r = fn(*args, ctx)
        else:
            r = fn(*args, ctx, random_bits=int(rand[i]))
        out[i] = r.bits
        flags[i] = ctx._flags[0]
    return out, flags


# -- the operations on one chunk ------------------------------------------------------------------

class _Result:
    """One chunk's results under construction: codes and flags, filled case
    by case (NaN operands, invalid operations, infinities, then the finite
    values through the kernel)."""

    def __init__(self, fmt: Format, key: tuple[Any, ...], n: int) -> None:
        self.fmt, self.key = fmt, key
        self.codes = np.zeros(n, U64)
        self.flags = np.zeros(n, U8)

    def nans(self, where: np.ndarray, operands: list[np.ndarray], nans: list[np.ndarray],
             extra: np.ndarray | None = None) -> None:
        """NaN operands propagate by the policy (:func:`fpsim.nans.propagate`)."""
        if where.any():
            code, flags = nan_results(self.fmt, operands, nans, self.key[6])
            if extra is not None:
                flags = flags | np.where(extra, INVALID, 0).astype(U8)
            self.codes[where] = code[where]
            self.flags[where] = flags[where]

    def invalid(self, where: np.ndarray) -> None:
        """Invalid operations give the policy's default NaN."""
        if where.any():
            self.codes[where] = default_nan(self.fmt, self.key[6])
            self.flags[where] = INVALID

    def infinity(self, where: np.ndarray, negative: np.ndarray, computed: int = 0) -> None:
        """Exact infinite results, as :func:`fpsim.arith._infinity`."""
        if not where.any():
            return
        (pos, pos_flags), (neg, neg_flags) = (
            infinity_code(self.fmt, s, self.key[1], computed, self.key[7]) for s in (False, True))
        code = np.where(negative, U64(neg), U64(pos))
        flags = np.where(negative, U8(neg_flags), U8(pos_flags))
        self.codes[where] = np.broadcast_to(code, where.shape)[where]
        self.flags[where] = np.broadcast_to(flags, where.shape)[where]

    def finite(self, where: np.ndarray, negative: np.ndarray, sig: np.ndarray,
               exp: np.ndarray, sticky: np.ndarray | None, rand: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Round the exact results (zeros included) and return the chunk."""
        if where.any():
            round_values(self.fmt, negative, sig, exp, sticky, self.key, rand, self.codes,
                         self.flags, where)
        return self.codes, self.flags


def _decode(fmt: Format, codes: np.ndarray, daz: bool) -> tuple[np.ndarray, ...]:
    """Fields of operand codes; with ``daz`` a subnormal reads as a zero."""
    is_nan, is_inf, negative, sig, exp = fields(fmt, codes)
    if daz and fmt.subnormals:
        sig = np.where(sig < U64(1 << fmt.mantissa_bits), U64(0), sig)
    return is_nan, is_inf, negative, sig, exp


def _binary(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...]
            ) -> tuple[_Result, np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The start of a two-operand operation: both operands' fields (DAZ
    applied), and a result with the NaN operands' results already in."""
    a, b = cs
    fa, fb = _decode(fmt, a, key[3]), _decode(fmt, b, key[3])
    res = _Result(fmt, key, a.shape[0])
    any_nan = fa[0] | fb[0]
    res.nans(any_nan, [a, b], [fa[0], fb[0]])
    return res, any_nan, fa, fb


def _add_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None, negate_b: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    res, any_nan, (_, inf_a, na, sa, ea), (_, inf_b, nb, sb, eb) = _binary(fmt, cs, key)
    if negate_b:
        nb = ~nb
    both_inf = inf_a & inf_b & ~any_nan
    res.invalid(both_inf & (na != nb))
    res.infinity(both_inf & (na == nb), na)
    res.infinity(inf_a & ~inf_b & ~any_nan, na)
    res.infinity(inf_b & ~inf_a & ~any_nan, nb)
    finite = ~(any_nan | inf_a | inf_b)
    negative, sig, exp, sticky = _exact_sum(na, sa, ea, nb, sb, eb, key[0])
    return res.finite(finite, negative, sig, exp, sticky, rand)


def _sub_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    return _add_chunk(fmt, cs, key, rand, negate_b=True)


def _exact_sum(na: np.ndarray, sa: np.ndarray, ea: np.ndarray, nb: np.ndarray,
               sb: np.ndarray, eb: np.ndarray, mode: Rounding
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``±sa×2**ea ± sb×2**eb`` as ``(negative, sig, exp, sticky)``.

    Both significands are aligned so that the larger operand fills bits
    61..(62 - its length); bits of the smaller one that fall below bit 0 are
    lost into the sticky bit.  Bits are lost only when the smaller operand
    lies entirely below the larger one's significand, so the sum then keeps
    at least 61 bits, and subtracting a lost part ``d`` is ``(s - 1) + (1 - d)``.
    An exact zero sum has the sign IEEE 754 §6.3 gives it."""
    la, lb = bit_length(sa), bit_length(sb)
    # A zero operand must not set the alignment: give it the lowest top.
    floor = np.iinfo(I64).min // 4
    ta = np.where(sa == 0, floor, ea + la)
    tb = np.where(sb == 0, floor, eb + lb)
    exp = np.maximum(ta, tb) - _WIDTH
    va, lost_a = _align(sa, ea - exp)
    vb, lost_b = _align(sb, eb - exp)
    s = np.where(na, -va, va) + np.where(nb, -vb, vb)
    negative = s < 0
    sig = np.abs(s).astype(U64)
    sticky = lost_a | lost_b
    lost_negative = np.where(lost_a, na, nb)
    sig -= (sticky & (negative != lost_negative)).astype(U64)
    # An exact zero: the common sign of the terms, else +0 (-0 toward -inf).
    zero_sign = np.where(na == nb, na, mode is Rounding.RDN)
    negative = np.where(s == 0, zero_sign, negative)
    return negative, sig, exp, sticky


def _align(sig: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sig × 2**shift`` as int64, truncated, and whether bits were lost."""
    left = np.clip(shift, 0, 62).astype(U64)
    right = np.clip(-shift, 0, 63).astype(U64)
    gone = shift <= -64
    value = np.where(shift >= 0, sig << left, np.where(gone, U64(0), sig >> right))
    low = sig & ((U64(1) << right) - U64(1))
    lost = (shift < 0) & np.where(gone, sig != 0, low != 0)
    return value.astype(I64), lost


def _mul_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    res, any_nan, (_, inf_a, na, sa, ea), (_, inf_b, nb, sb, eb) = _binary(fmt, cs, key)
    negative = na != nb
    any_inf = (inf_a | inf_b) & ~any_nan
    zero_times_inf = any_inf & (((sa == 0) & ~inf_a) | ((sb == 0) & ~inf_b))
    res.invalid(zero_times_inf)
    res.infinity(any_inf & ~zero_times_inf, negative)
    finite = ~(any_nan | inf_a | inf_b)
    return res.finite(finite, negative, sa * sb, ea + eb, None, rand)


def _div_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    res, any_nan, (_, inf_a, na, sa, ea), (_, inf_b, nb, sb, eb) = _binary(fmt, cs, key)
    negative = na != nb
    ok = ~any_nan
    res.invalid(ok & inf_a & inf_b)                              # inf / inf
    res.infinity(ok & inf_a & ~inf_b, negative)
    by_zero = ok & ~inf_a & ~inf_b & (sb == 0)
    if p3109_applies(fmt, key[7]):  # P3109: x / 0 is NaN (rule 7)
        res.invalid(ok & ~inf_b & (sb == 0))
    else:
        res.invalid(by_zero & (sa == 0))                         # 0 / 0
        res.infinity(by_zero & (sa != 0), negative, DIVIDE_BY_ZERO)
    over_inf = ok & ~inf_a & inf_b                               # finite / inf = 0
    finite = ok & ~inf_a & ~by_zero
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    sig, exp, sticky = _divide(sa, ea, np.where(sb == 0, U64(1), sb), eb,
                               fmt.precision + 1 + extra, fmt.precision)
    sig = np.where(over_inf, U64(0), sig)
    return res.finite(finite, negative, sig, exp, sticky, rand)


def _divide(sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, bits: int,
            precision: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sa×2**ea / (sb×2**eb)`` to at least ``bits`` quotient bits and a
    sticky remainder, by long division in steps: every partial remainder is
    below 2**precision, so shifting it by ``63 - precision`` stays in 63 bits."""
    la, lb = bit_length(sa), bit_length(sb)
    # sa × 2**k / sb >= 2**(bits - 1) with k = lb - la + bits.
    k = np.where(sa == 0, 0, lb - la + bits)
    step = 63 - precision
    q = np.zeros(sa.shape, U64)
    r = sa.copy()
    todo = k.copy()
    first = True
    while first or todo.any():
        s = np.clip(todo, 0, step).astype(U64)
        t = r << s
        q = (q << s) + t // sb
        r = t % sb
        todo = todo - s.astype(I64)
        first = False
    return q, ea - eb - k, r != 0


def _fma_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    a, b, c = cs
    nan_a, inf_a, na, sa, ea = _decode(fmt, a, key[3])
    nan_b, inf_b, nb, sb, eb = _decode(fmt, b, key[3])
    nan_c, inf_c, nc, sc, ec = _decode(fmt, c, key[3])
    np_ = na != nb
    res = _Result(fmt, key, a.shape[0])
    zero_times_inf = (inf_a & ~nan_b & ~inf_b & (sb == 0)) | (inf_b & ~nan_a & ~inf_a & (sa == 0))
    any_nan = nan_a | nan_b | nan_c
    res.nans(any_nan, [a, b, c], [nan_a, nan_b, nan_c], extra=zero_times_inf)
    ok = ~any_nan
    res.invalid(ok & zero_times_inf)
    product_inf = ok & ~zero_times_inf & (inf_a | inf_b)
    res.invalid(product_inf & inf_c & (nc != np_))              # inf - inf
    res.infinity(product_inf & ~(inf_c & (nc != np_)), np_)
    res.infinity(ok & ~inf_a & ~inf_b & inf_c, nc)
    finite = ok & ~(inf_a | inf_b | inf_c)
    negative, sig, exp, sticky = _exact_sum(np_, sa * sb, ea + eb, nc, sc, ec, key[0])
    return res.finite(finite, negative, sig, exp, sticky, rand)


def _sqrt_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
                rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    (a,) = cs
    nan_a, inf_a, na, sa, ea = _decode(fmt, a, key[3])
    res = _Result(fmt, key, a.shape[0])
    res.nans(nan_a, [a], [nan_a])
    ok = ~nan_a
    res.invalid(ok & na & (inf_a | (sa != 0)))                  # sqrt(x < 0)
    res.infinity(ok & ~na & inf_a, na)
    finite = ok & ~inf_a & (~na | (sa == 0))
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    sig, exp, sticky = _root(sa, ea, fmt.precision + 1 + extra)
    return res.finite(finite, na, sig, exp, sticky, rand)


def _root(sa: np.ndarray, ea: np.ndarray, bits: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sqrt(sa×2**ea)`` to at least ``bits`` root bits and a sticky bit
    (``2 × bits <= 62``)."""
    odd = (ea & 1) == 1
    sa = np.where(odd, sa << U64(1), sa)
    ea = ea - odd
    # A radicand of 2*bits - 1 or 2*bits bits has a root of `bits` bits.
    k = np.maximum(0, (2 * bits - bit_length(sa)) // 2)
    x = sa << (2 * k).astype(U64)
    r = np.sqrt(x.astype(np.float64)).astype(U64)
    # float64 rounds x above 2**53: correct the root by at most a step or two.
    for _ in range(2):
        r = np.where(r * r > x, r - U64(1), r)
        r = np.where((r + U64(1)) * (r + U64(1)) <= x, r + U64(1), r)
    return r, ea // 2 - k, r * r != x


_CHUNK_OPS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "add": _add_chunk, "sub": _sub_chunk, "mul": _mul_chunk, "div": _div_chunk,
    "fma": _fma_chunk, "sqrt": _sqrt_chunk,
}
_BINARY = ("add", "sub", "mul", "div")


# -- the public operations ---------------------------------------------------------------------

_SETTINGS_DOC = """
    Operands are arrays of one format: values of its numpy/ml_dtypes dtype
    (float16, float32, bfloat16, float8_*), giving a result of that dtype, or
    integer codes with ``fmt=``, giving codes.  Shapes broadcast as in numpy.
    Settings as in the scalar model (``ctx=`` and keyword overrides
    ``rounding=``, ``saturate=``, ``ftz=``, ``daz=``, ``tininess=``,
    ``sr_bits=``, ``nan=``); stochastic rounding takes ``random_bits=`` or
    ``rng=`` as :func:`fpsim.array.encode` does, one number per result
    element in C order.  Flags are ORed into the context;
    ``return_flags=True`` also returns per-element flags (uint8).
"""


@quiet
def add(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x + y`` elementwise, each rounded once (:func:`fpsim.arith.add`).

    >>> import numpy as np
    >>> add(np.array([1.0, 65504.0], np.float16), np.float16(2.0**-11)).tolist()  # ties to even
    [1.0, 65504.0]
    >>> codes, flags = add(np.array([0x7e], np.uint8), np.array([0x08], np.uint8),
    ...                    fmt="e4m3", return_flags=True)   # 448 + 2**-6: inexact
    >>> hex(codes[0]), fpsim.Flag(int(flags[0])).names()
    ('0x7e', ['inexact'])
    """
    return _run("add", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def add_sequence(terms: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
                 initial: Any = None, rng: Any = None, **overrides: Any) -> Any:
    """The sum of ``terms`` along their first axis, one term at a time in
    order, each sum rounded: ``((initial + terms[0]) + terms[1]) + ...``
    (``initial`` of the same format, broadcasting to one term; +0 by
    default); the same codes and flags as the loop
    ``acc = add(acc, terms[i])`` from ``acc = initial``, which is how it is
    computed, except that in round-to-nearest-even (no ftz, no daz) FP32
    sums use the machine's float32 addition where it is IEEE's, with TwoSum
    deciding INEXACT, and FP16 sums the exact float64 sum rounded by numpy's
    float16 cast where that is IEEE's (both checked on each call; results
    that are not finite are redone step by step).

    >>> import numpy as np
    >>> t = np.float32([[1.0, 2.0**24], [2.0**-24, 1.0], [2.0**-24, 1.0]])
    >>> add_sequence(t).tolist()       # 1 + 2**-24 ties to even, twice; 2**24 + 1 too
    [1.0, 16777216.0]
    >>> add_sequence(np.float16([[-0.0]])).tolist()   # +0 + -0 is +0
    [0.0]
    """
    ops = _Operands("add_sequence", (terms,), fmt)
    if len(ops.shape) == 0:
        raise ValueError("add_sequence() needs terms with at least one axis (the axis summed)")
    fmt = ops.fmt
    ctx, key = resolve(ctx, overrides)
    stochastic_bits(key, None, rng, ctx, ops.shape)  # rng= outside SR is an error, as in add()
    codes = raw_codes(ops.flats[0], fmt, check=False).reshape(ops.shape)
    acc = np.zeros(ops.shape[1:], code_dtype(fmt))
    if initial is not None:
        start = _Operands("add_sequence", (initial,), fmt)
        if start.result_dtype != ops.result_dtype:  # one typed, the other codes
            raise TypeError("add_sequence(): give terms and initial both as values of one "
                            "dtype or both as codes")
        try:
            acc[...] = raw_codes(start.flats[0], fmt, check=False).reshape(start.shape)
        except ValueError:
            raise ValueError(f"add_sequence(): initial of shape {start.shape} does not "
                             f"broadcast to a term's shape {ops.shape[1:]}") from None
    done = None
    if key[0] is Rounding.RNE and not key[2] and not key[3]:
        if fmt == FP32 and native.float32_adds_are_ieee():
            done = native.running_sum_fp32(codes.view(np.float32), acc.view(np.float32))
        elif fmt == FP16 and native.float16_casts_are_ieee():
            done = native.running_sum_fp16(codes.view(np.float16), acc.view(np.float16))
        if done is not None:
            total, inexact = done
            if inexact:
                ctx._flags[0] |= INEXACT
            return total.view(code_dtype(fmt)).view(ops.result_dtype)
    for term in codes:
        acc = add(acc, term, ctx, fmt=fmt, rng=rng, **overrides)
    return acc.view(ops.result_dtype)


@quiet
def sub(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x - y`` elementwise (:func:`fpsim.arith.sub`).

    >>> import numpy as np
    >>> sub(np.float16([1.0]), np.float16([1.0]), rounding="rdn").tolist()  # toward -inf: -0
    [-0.0]
    """
    return _run("sub", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def mul(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x × y`` elementwise (:func:`fpsim.arith.mul`).

    >>> import ml_dtypes, numpy as np                # 16 × 30 = 480: no inf in E4M3
    >>> x = np.array([16, 16], ml_dtypes.float8_e4m3fn)
    >>> mul(x, np.array([30, 28], ml_dtypes.float8_e4m3fn)).astype(float).tolist()
    [nan, 448.0]
    """
    return _run("mul", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def div(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x / y`` elementwise (:func:`fpsim.arith.div`).

    >>> import numpy as np
    >>> div(np.float16([1.0, 1.0, 0.0]), np.float16([3.0, 0.0, 0.0])).tolist()
    [0.333251953125, inf, nan]
    """
    return _run("div", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def fma(x: Any, y: Any, z: Any, ctx: Context | None = None, *,
        fmt: Format | str | None = None, random_bits: Any = None, rng: Any = None,
        return_flags: bool = False, chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x × y + z`` elementwise with one rounding (:func:`fpsim.arith.fma`).

    >>> import numpy as np
    >>> x = np.float16([1 + 2**-10]); y = np.float16([1 - 2**-11])
    >>> fma(x, y, np.float16([-1.0])).tolist()     # exact 2**-11 - 2**-21, one rounding
    [0.0004878044128417969]
    """
    return _run("fma", (x, y, z), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def sqrt(x: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
         random_bits: Any = None, rng: Any = None, return_flags: bool = False,
         chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
         **overrides: Any) -> Any:
    """Square root elementwise (:func:`fpsim.arith.sqrt`).

    >>> import numpy as np
    >>> sqrt(np.float16([2.0, -0.0, -1.0])).tolist()
    [1.4140625, -0.0, nan]
    """
    return _run("sqrt", (x,), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


# The shared paragraph on operands and settings goes before each example.
# (Under ``python -OO`` there are no docstrings to edit.)
for _f in (add, sub, mul, div, fma, sqrt):
    if _f.__doc__ is not None:
        _f.__doc__ = _f.__doc__.replace("\n\n    >>>", "\n" + _SETTINGS_DOC + "\n    >>>", 1)


# -- comparisons -----------------------------------------------------------------------------

def _compare(op: str, x: Any, y: Any, ctx: Context | None, fmt: Format | str | None,
             signaling: bool, return_flags: bool, chunk_size: int,
             accept: tuple[int, ...]) -> Any:
    """The comparison ``op`` elementwise: true where the order (-1, 0, 1, or
    2 for unordered) is in ``accept``; INVALID as :func:`fpsim.arith._compare`."""
    signaling = check_flag("signaling", signaling)
    operands = _Operands(op, (x, y), fmt)
    fmt = operands.fmt
    if ctx is None:
        from ..context import getcontext

        ctx = getcontext()
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an fpsim.Context, got {type(ctx).__name__}")

    daz = ctx.daz

    def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = (codes_of(c, fmt, check=False) for c in operands.chunk(start, stop))
        order, flags = _order(fmt, a, b, signaling, daz)
        return np.isin(order, accept), flags

    return run_chunks(operands.size, operands.shape, bool, chunk_size, chunk, ctx, return_flags)


def _order(fmt: Format, a: np.ndarray, b: np.ndarray, signaling: bool, daz: bool = False
           ) -> tuple[np.ndarray, np.ndarray]:
    """-1, 0, 1 by value (2 where unordered) and the INVALID flags; with
    ``daz`` subnormal operands order as zeros."""
    nan_a = fields(fmt, a)[0]
    nan_b = fields(fmt, b)[0]
    unordered = nan_a | nan_b
    if signaling:
        invalid = unordered
    else:
        from ._kernel import is_signaling

        invalid = is_signaling(fmt, a, nan_a) | is_signaling(fmt, b, nan_b)
    # Sign and magnitude order the codes of every format (±0 are equal).
    mask, sign = U64(fmt.magnitude_mask), U64(fmt.sign_bit)
    va = (a & mask).astype(I64)
    vb = (b & mask).astype(I64)
    if daz and fmt.subnormals:
        # (codes below the smallest normal are the zeros and subnormals)
        smallest = 1 << fmt.mantissa_bits
        va = np.where(va < smallest, 0, va)
        vb = np.where(vb < smallest, 0, vb)
    va = np.where((a & sign) != 0, -va, va)
    vb = np.where((b & sign) != 0, -vb, vb)
    order = np.sign(va - vb)
    return np.where(unordered, 2, order), np.where(invalid, INVALID, 0).astype(U8)


def _comparison(name: str, accept: tuple[int, ...], signaling_default: bool, what: str,
                example: list[bool]) -> Callable[..., Any]:
    def compare(x: Any, y: Any, ctx: Context | None = None, *,
                fmt: Format | str | None = None, signaling: bool = signaling_default,
                return_flags: bool = False, chunk_size: int = DEFAULT_CHUNK) -> Any:
        return _compare(name, x, y, ctx, fmt, signaling, return_flags, chunk_size, accept)

    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = (
        f"{what} elementwise, as :func:`fpsim.arith.{name}`: a bool array "
        f"(``signaling={signaling_default}`` by default).  Operands as for :func:`add`.\n\n"
        f"    >>> import numpy as np\n"
        f"    >>> {name}(np.float16([1.0, 2.0, np.nan]), np.float16(2.0)).tolist()\n"
        f"    {example}\n")
    return quiet(compare)


eq = _comparison("eq", (0,), False, "compareQuietEqual", [False, True, False])
ne = _comparison("ne", (-1, 1, 2), False, "compareQuietNotEqual (true when unordered)",
                 [True, False, True])
lt = _comparison("lt", (-1,), True, "compareSignalingLess", [True, False, False])
le = _comparison("le", (-1, 0), True, "compareSignalingLessEqual", [True, True, False])
gt = _comparison("gt", (1,), True, "compareSignalingGreater", [False, False, False])
ge = _comparison("ge", (0, 1), True, "compareSignalingGreaterEqual", [False, True, False])
unordered = _comparison("unordered", (2,), False,
                        "compareQuietUnordered (true where either is NaN)", [False, False, True])


import fpsim  # noqa: E402,F401  (doctests)
