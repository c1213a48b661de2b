"""Conversions on arrays: :func:`decode`, :func:`encode`, :func:`round` and
:func:`convert`, the scalar :func:`fpsim.convert` applied to every element.

Chunks are converted by a table of every source code (sources of at most 16
bits), by integer operations on the bits (float32 into BF16, deterministic
modes: :func:`round_fp32_bits`), by the round-to-odd proxy of
:mod:`fpsim.array._proxy` (other wider IEEE-style sources, deterministic
modes), or by the vectorized kernel of :mod:`fpsim.array._kernel`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _threads
from .._errstate import quiet
from .._scratch import scratch
from ..context import Context, resolve
from ..formats import BF16, FP32, FP64, Format, Specials
from ..formats import format as _lookup
from ..modes import Rounding
from ..nans import convert_nan
from ..rounding import INEXACT, OVERFLOW, UNDERFLOW, _overflow, infinity_code
from . import _native as native
from ._kernel import U8, U64, fields, round_values, specials
from ._proxy import proxy_for, proxy_index
from ._tables import Table, cached
from .engine import (
    DEFAULT_CHUNK,
    VALUE_DTYPE_NAMES,
    as_array,
    check_size,
    code_dtype,
    codes_of,
    raw_codes,
    run_chunks,
    stochastic_bits,
    value_dtype,
)

__all__ = ["decode", "encode", "round", "convert"]


def _source_format(a: np.ndarray, fmt: Format | str | None) -> Format:
    if fmt is not None:
        fmt = _lookup(fmt)
        if a.dtype.kind not in "iu":
            own = _lookup(a.dtype.name) if a.dtype.name in VALUE_DTYPE_NAMES else None
            if own != fmt:
                raise TypeError(f"src={fmt.name} names the format of integer codes; an array "
                                f"of dtype {a.dtype} is read as its own values (drop src=, or "
                                "pass the codes as an unsigned integer array)")
        return fmt
    try:
        src = _lookup(a.dtype.name)
    except ValueError:
        raise TypeError(f"cannot read an array of dtype {a.dtype} as values: accepted "
                        f"{', '.join(VALUE_DTYPE_NAMES)}, or integer codes with src=") from None
    if a.dtype.itemsize * 8 < src.width:
        raise TypeError(f"dtype {a.dtype} is narrower than format {src.name}")
    return src


# -- decoding -------------------------------------------------------------------------

@quiet
def decode(codes: Any, fmt: Format | str) -> np.ndarray:
    """The values of ``codes`` as float64 (exact for every format up to
    FP64; NaN codes give NaN of the same sign).

    >>> decode(np.array([0x7e, 0xff], np.uint8), "e4m3")
    array([448.,  nan])
    """
    fmt = _lookup(fmt)
    a = as_array(codes)
    if a.dtype.kind not in "iu":
        raise TypeError(f"decode() takes integer codes, got dtype {a.dtype}")
    check_size("decode", a.shape, 8)  # float64 values, before reading any code
    dt = value_dtype(fmt)
    if dt is not None:
        # numpy's and ml_dtypes' casts to float64 are exact, NaN signs kept
        # (signaling NaNs raise numpy's invalid warning: not an error here).
        with np.errstate(invalid="ignore"):
            return raw_codes(a, fmt).view(dt).astype(np.float64)
    c = codes_of(a, fmt)
    is_nan, is_inf, negative, sig, exp = fields(fmt, c)
    with np.errstate(over="ignore"):
        out = np.ldexp(sig.astype(np.float64), exp)
    out = np.where(is_inf, np.inf, out)
    out = np.where(is_nan, np.nan, out)
    return np.where(negative, -out, out)


def _specials_codes(fmt: Format, src: Format, codes: np.ndarray, is_nan: np.ndarray,
                    is_inf: np.ndarray, negative: np.ndarray, saturate: bool,
                    nan: Any, rules: Any) -> tuple[np.ndarray, np.ndarray]:
    """Codes and flags for NaN and infinite inputs (:mod:`fpsim.value` rules)."""
    out = np.zeros(codes.shape, U64)
    flags = np.zeros(codes.shape, np.uint8)
    if is_inf.any():
        (pos, pos_flags), (neg, neg_flags) = (infinity_code(fmt, s, saturate, 0, rules)
                                              for s in (False, True))
        out = np.where(is_inf, np.where(negative, U64(neg), U64(pos)), out)
        flags = np.where(is_inf, np.where(negative, neg_flags, pos_flags), flags).astype(np.uint8)
    if is_nan.any():
        if not fmt.has_nan:
            raise ValueError(f"NaN is not representable in {fmt.name}, which has no NaN")
        # NaN codes are few and their conversion is table-free: go through the
        # scalar rule for each distinct NaN code (the rule is data, not math).
        for c in np.unique(codes[is_nan]):
            code, fl = convert_nan(src, int(c), fmt, nan)
            hit = is_nan & (codes == c)
            out = np.where(hit, U64(code), out)
            flags = np.where(hit, fl, flags).astype(np.uint8)
    return out, flags


# -- encode / round / convert -------------------------------------------------------------

@quiet
def encode(values: Any, fmt: Format | str, ctx: Context | None = None, *,
           src: Format | str | None = None, random_bits: Any = None, rng: Any = None,
           return_flags: bool = False, chunk_size: int = DEFAULT_CHUNK,
           workers: int | None = None, **overrides: Any) -> Any:
    """Round an array into ``fmt`` and return the codes (uint8/16/32/64).

    ``values`` is any array numpy can view (``np.asarray``): float16,
    float32, float64, bfloat16 or float8 values, or integer codes with
    ``src=`` naming their format.  Settings as in the scalar model: ``ctx=``
    and keyword overrides (``rounding=``, ``saturate=``, ``ftz=``, ``daz=``,
    ``tininess=``, ``sr_bits=``, ``nan=``).  Stochastic rounding takes
    ``random_bits=`` (an unsigned integer array broadcastable to ``values``,
    each in ``[0, 2**sr_bits)``) or draws one number per element, in order,
    from ``rng=`` (a :class:`numpy.random.Generator` or a seed) or else from
    the context's generator (a numpy Generator is used directly; a
    :class:`random.Random` seeds one with 64 bits drawn from it).  The flags
    of all elements go into the context; ``return_flags=True`` also returns a
    uint8 array of per-element flags.  ``workers=`` is the number of threads
    a large call may use (None: every CPU from about a million elements;
    1: this thread alone; stochastic rounding always runs in one thread, to
    draw its numbers in element order); the bits and flags never depend on
    it.

    >>> codes, flags = encode(np.array([1.0, 1e-5, 1e6], np.float32), "fp16",
    ...                       return_flags=True)
    >>> [hex(c) for c in codes]
    ['0x3c00', '0xa8', '0x7c00']
    >>> [fpsim.Flag(int(f)).names() for f in flags]
    [[], ['underflow', 'inexact'], ['overflow', 'inexact']]
    """
    _threads.check_workers("encode", workers)
    fmt = _lookup(fmt)
    if fmt.width > 64 or fmt.precision > 53:
        raise ValueError(f"array encode supports formats up to 64 bits of precision up to 53 "
                         f"(FP64); {fmt.name} is {fmt.width} bits of precision "
                         f"{fmt.precision} (use the scalar model)")
    ctx, key = resolve(ctx, overrides)
    a = as_array(values)
    source = _source_format(a, src)
    if source.width > 64 or source.precision > 53:
        raise ValueError(f"source format {source.name} is wider than the array engine reads")
    check_size("encode", a.shape, code_dtype(fmt).itemsize)  # before any work
    flat = a.reshape(-1)
    bits = stochastic_bits(key, random_bits, rng, ctx, a.shape)
    convert_chunk = _chunk_converter(fmt, source, key, flat.size, bits is not None)

    def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        return convert_chunk(flat[start:stop], bits(start, stop) if bits is not None else None)

    return run_chunks(flat.size, a.shape, code_dtype(fmt), chunk_size, chunk, ctx, return_flags,
                      workers if bits is None else 1)


Converter = Callable[[np.ndarray, Any], tuple[np.ndarray, np.ndarray]]


def _chunk_converter(fmt: Format, source: Format, key: tuple[Any, ...], size: int,
                     stochastic: bool) -> Converter:
    """How to convert the chunks: by a table of every source code (sources of
    at most 16 bits), by a table of every code of the round-to-odd proxy
    (:mod:`fpsim.array._proxy`; wider IEEE-style sources), or by the
    vectorized kernel (stochastic rounding, small arrays, the rest).  Tables
    serve deterministic modes only, and are built when the array is large
    enough to pay for them."""
    general: Converter = lambda chunk, rand: _encode_chunk(fmt, source, chunk, key, rand)  # noqa: E731
    if stochastic:
        return general
    if fmt == FP64 and _exact_in_fp64(source):
        return _into_fp64(source, key, general)
    if fmt == FP32 and source == FP64:
        machine = native.usable(key)
        return lambda chunk, rand: round_fp64_to_fp32(
            raw_codes(chunk, source).view(np.float64), None, key, machine)
    if source.width <= 16:
        table = _lookup_table(fmt, source, key) if size > (1 << source.width) // 8 else None
        if table is None:
            return general
        if fmt.has_nan:
            return lambda chunk, rand: table.lookup(raw_codes(chunk, source))

        def nan_aside(chunk: np.ndarray, rand: Any) -> tuple[np.ndarray, np.ndarray]:
            bits = raw_codes(chunk, source)
            codes, flags = table.lookup(bits)
            return _kernel_for_nans(codes, flags, bits, source, chunk, general)

        return nan_aside
    if fmt == BF16 and source == FP32 and key[0] in BIT_MODES:
        # (FP16 is served by the proxy, faster than this for FP16.)  Exact
        # subnormal inputs are BF16's own subnormals unless flushed.
        keep_subnormal = not (key[2] or key[3])  # ftz, daz

        def via_bits(chunk: np.ndarray, rand: Any) -> tuple[np.ndarray, np.ndarray]:
            codes, flags, redo = round_fp32_bits(raw_codes(chunk, source), fmt, key[0], key[1],
                                                 True, keep_subnormal)
            if redo.size:
                codes[redo], flags[redo] = general(chunk[redo], None)
            return codes, flags

        return via_bits
    proxy = proxy_for(fmt)
    if (proxy is None or source.specials is not Specials.IEEE
            or source.mantissa_bits < proxy.mantissa_bits or size <= (1 << proxy.width) // 8):
        return general
    # The table is DAZ-free: proxy_index applies DAZ to the source's subnormals.
    table = _lookup_table(fmt, proxy, (*key[:3], False, *key[4:]))
    if table is None:
        return general

    def via_proxy(chunk: np.ndarray, rand: Any) -> tuple[np.ndarray, np.ndarray]:
        bits = raw_codes(chunk, source)
        index, unsure = proxy_index(bits, source, proxy, key[3])
        codes, flags = table.lookup(index)
        if unsure.any():
            codes[unsure], flags[unsure] = general(chunk[unsure], None)
        if not fmt.has_nan:
            return _kernel_for_nans(codes, flags, bits, source, chunk, general)
        return codes, flags

    return via_proxy


def _exact_in_fp64(source: Format) -> bool:
    """Whether every finite value of ``source`` is an FP64 value (its
    conversion into FP64 is then exact)."""
    return (source.precision <= FP64.precision and source.emax <= FP64.emax
            and source.emin - source.mantissa_bits >= FP64.emin - FP64.mantissa_bits)


def _into_fp64(source: Format, key: tuple[Any, ...], general: Converter) -> Converter:
    """Conversions into FP64 from a format whose values are all FP64's: the
    float64 value (numpy's and ml_dtypes' casts, or :func:`decode`, are
    exact) is the result, with no flag.  NaN inputs (whose codes the NaN
    policy decides), infinities (which saturation may change), under DAZ
    subnormal inputs (read as zeros) and under FTZ values below FP64's
    smallest normal (flushed) go to the kernel."""
    daz, ftz = key[3], key[2]
    tiny = float(FP64.min_normal)

    def convert(chunk: np.ndarray, rand: Any) -> tuple[np.ndarray, np.ndarray]:
        codes = raw_codes(chunk, source)
        values = decode(codes, source)
        out = values.view(U64)
        flags = np.zeros(out.shape, U8)
        redo = ~np.isfinite(values)
        if daz and source.subnormals:
            magnitude = codes & codes.dtype.type(source.magnitude_mask)
            redo |= (magnitude != 0) & (magnitude < codes.dtype.type(1 << source.mantissa_bits))
        if ftz and source.emin - source.mantissa_bits < FP64.emin:
            a = np.abs(values)
            redo |= (a < tiny) & (a != 0)
        if redo.any():
            i = np.flatnonzero(redo)
            out[i], flags[i] = general(chunk[i], None)
        return out, flags

    return convert


def _kernel_for_nans(codes: np.ndarray, flags: np.ndarray, bits: np.ndarray, source: Format,
                     chunk: np.ndarray, general: Converter) -> tuple[np.ndarray, np.ndarray]:
    """A table's results, the NaN inputs among ``bits`` (codes of
    ``source``) given to the kernel (``general``), which refuses them."""
    nan, _ = specials(source, bits, bits & bits.dtype.type(source.magnitude_mask))
    if nan.any():
        codes[nan], flags[nan] = general(chunk[nan], None)
    return codes, flags


def _lookup_table(fmt: Format, source: Format, key: tuple[Any, ...]) -> Table | None:
    """The results of every code of ``source`` (at most 2**22 codes) in
    ``fmt``: a conversion from such a source is then one lookup
    (deterministic modes only).  For a ``fmt`` without NaN, the entries of
    the source's NaN codes hold +0's result, and the callers give NaN
    inputs to the kernel (:func:`_kernel_for_nans`)."""
    if fmt.has_nan:
        fill = lambda codes: _encode_chunk(fmt, source, codes, key, None)  # noqa: E731
    else:
        def fill(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            nan, _ = specials(source, codes, codes & codes.dtype.type(source.magnitude_mask))
            return _encode_chunk(fmt, source, np.where(nan, codes.dtype.type(0), codes), key,
                                 None)
    return cached(("convert", fmt, source, key), fmt, 1 << source.width, fill)


def _encode_chunk(fmt: Format, source: Format, chunk: np.ndarray, key: tuple[Any, ...],
                  rand: np.ndarray | None, sticky: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Round the values of ``chunk`` (values, or codes of ``source``) into
    ``fmt`` by the kernel; where ``sticky`` is true, the value to round lies
    strictly between the code's magnitude and the next code's (bits below
    the source's last place, only known to be nonzero)."""
    codes = codes_of(chunk, source)
    is_nan, is_inf, negative, sig, exp = fields(source, codes)
    finite = ~(is_nan | is_inf)
    if key[3] and source.subnormals:  # daz
        sig = np.where(finite & (sig < U64(1 << source.mantissa_bits)), U64(0), sig)
    out, flags = _specials_codes(fmt, source, codes, is_nan, is_inf, negative, key[1], key[6],
                                 key[7])
    round_values(fmt, negative, sig, exp, sticky, key, rand, out, flags, finite)
    return out, flags


def round_fp64_to_fp32(values: np.ndarray, sticky: np.ndarray | None, key: tuple[Any, ...],
                       machine: bool) -> tuple[np.ndarray, np.ndarray]:
    """Round float64 ``values`` (with ``sticky`` as in :func:`_encode_chunk`)
    into FP32: where ``machine`` (:func:`fpsim.array._native.usable`, checked
    once per call), normal results by the machine's own conversion, the rest
    by the kernel."""
    if not machine:
        return _encode_chunk(FP32, FP64, values, key, None, sticky)
    codes, flags, done = native.round_fp32(values, sticky, key[0])
    if not done.all():
        i = np.flatnonzero(~done)
        codes[i], flags[i] = _encode_chunk(FP32, FP64, values[i], key, None,
                                           None if sticky is None else sticky[i])
    return codes, flags


# -- float32 into 16-bit formats by integer operations on the bits ---------------------------
#
# A float32 value in the normal range of a 16-bit IEEE-style format T (FP16,
# BF16) rounds into T by integer operations on its bits: clear the sign,
# rebias the exponent field (BF16 shares float32's: nothing to do, and the
# sign may stay in place), add the mode's increment and drop the last
# 23 - m fraction bits.  A carry out of the kept fraction steps the
# exponent, up to infinity's code from the largest finite value (ml_dtypes
# casts float32 to BF16 this way for round-to-nearest-even).  Where the
# result is a normal number below infinity no setting but the mode plays a
# part (nothing is tiny, flushed or saturated) and the only flag is INEXACT,
# raised where the dropped bits are not all zero.  Values below T's normal
# range wrap around in the rebias and land outside it, as do infinities,
# NaNs and overflow: those lanes are looked at one by one.
#
# The same rounding serves a value known only to lie strictly between two
# float32 values when given as its round-to-odd float32 proxy (the one of the
# two whose last bit is set; see :mod:`fpsim.array._proxy`): 13 or 16
# dropped bits are more than the two that double rounding through
# round-to-odd needs.

BIT_MODES = frozenset({Rounding.RNE, Rounding.RNA, Rounding.RTZ, Rounding.RUP, Rounding.RDN,
                       Rounding.RTO})
_U32 = np.uint32
_NOTHING = np.zeros(0, np.intp)


def rounds_by_bits(fmt: Format) -> bool:
    """Whether :func:`round_fp32_bits` serves ``fmt``: a 16-bit IEEE-style
    format with subnormals whose normal range lies in float32's, keeping at
    most 21 fraction bits (FP16, BF16)."""
    return (fmt.width == 16 and fmt.signed and fmt.specials is Specials.IEEE and fmt.subnormals
            and fmt.emin >= FP32.emin and fmt.emax <= FP32.emax and fmt.mantissa_bits <= 21)


class _BitConstants:
    """The constants :func:`round_fp32_bits` uses for one format, made once
    (numpy scalars: no conversion on each chunk)."""

    def __init__(self, fmt: Format) -> None:
        m = fmt.mantissa_bits
        shift = 23 - m
        self.shift, self.drop = _U32(shift), _U32(32 - shift)
        self.low, self.last = _U32((1 << shift) - 1), _U32(1 << shift)
        self.half, self.below_half = _U32(1 << (shift - 1)), _U32((1 << (shift - 1)) - 1)
        self.one, self.sign_shift, self.half_shift = _U32(1), _U32(31), _U32(16)
        self.rebias = _U32((FP32.bias - fmt.bias) << 23)
        self.magnitude, self.magnitude16 = _U32(0x7FFFFFFF), _U32(0x7FFF)
        self.sign16 = _U32(0x8000)
        self.min_normal, self.inf = _U32(1 << m), _U32(fmt.inf_code)
        self.above_min_normal = _U32((1 << m) + 1)


_bit_constants = functools.cache(_BitConstants)
_INEXACT = U8(INEXACT)


def round_fp32_bits(bits: np.ndarray, fmt: Format, mode: Rounding, saturate: bool,
                    keep_zero: bool, keep_subnormal: bool, flags: bool = True,
                    exact_below: bool = False) -> tuple[np.ndarray, Any, np.ndarray]:
    """Codes (uint16) and flags of the float32 codes ``bits`` (uint32)
    rounded into ``fmt`` (:func:`rounds_by_bits`) by ``mode`` (one of
    :data:`BIT_MODES`), and the indices of the lanes whose code and flags
    are not known: infinities, NaNs, zeros, subnormals and the smallest
    normal reached by rounding, except exact zeros where ``keep_zero`` and,
    where ``keep_subnormal`` (the caller's word that the bits below the
    normal range are exact or a round-to-odd proxy), exact subnormals (or an
    exact smallest normal) and inexact results that round below the
    smallest normal.
    Such an exact lane gets its exact code and no flag: the caller keeps it
    only where no setting changes that (FTZ flushes subnormal results, DAZ
    subnormal inputs, and toward -inf an exact zero sum of opposite terms
    is -0).  Finite values that overflow get the mode's overflow result
    (``saturate`` as the scalar model reads it).

    ``flags=False`` (a caller that wants no flags per lane): the flags come
    back as one int, the OR of those of the lanes looked at one by one and
    settled here (overflow, tiny results); INEXACT of the other lanes is
    not looked for (the caller's: a lane is inexact where ``bits`` has a
    bit below the format's last place, or where its float32 value was).
    ``exact_below``: the caller's word that every value below the normal
    range is a multiple of the format's smallest subnormal (as a sum of two
    of its values is); where the format's exponent is float32's (BF16) and
    zeros and subnormals are kept, the bits of such a value are its code,
    so that only lanes rounding to infinity's code or beyond are looked at.

    >>> x = np.float32([1 + 2**-8, 1 + 3 * 2**-8, 2**-130, 3.4e38, 1e-45, np.inf])
    >>> codes, flags, redo = round_fp32_bits(x.view(np.uint32), fpsim.BF16, Rounding.RNE,
    ...                                      False, True, True)   # ties, tiny, huge, specials
    >>> [hex(c) for c in codes[:5]], flags[:5].tolist(), redo.tolist()
    (['0x3f80', '0x3f82', '0x8', '0x7f80', '0x0'], [16, 16, 0, 20, 24], [5])
    """
    m, c = fmt.mantissa_bits, _bit_constants(fmt)
    n = bits.size
    # At most two work arrays, so that a chunk's lanes stay in the cache.
    r, t = scratch("fp32 bits", n, _U32, _U32)
    lane_flags = None
    if flags:
        lane_flags = np.empty(n, U8)
        np.left_shift(bits, c.drop, out=r)                     # the dropped bits
        np.not_equal(r, 0, out=lane_flags.view(bool))
    src, work = bits, r
    if c.rebias:  # magnitude, rebiased (values below the normal range wrap)
        np.bitwise_and(bits, c.magnitude, out=r)
        r -= c.rebias
        src, work = r, t
    # work: src plus the increment that carries into the kept part exactly
    # where the mode rounds the magnitude up.
    if mode is Rounding.RNE:  # above the midpoint, or at it from an odd code
        np.right_shift(src, c.shift, out=work)
        work &= c.one
        work += c.below_half
        work += src
    elif mode is Rounding.RNA:
        np.add(src, c.half, out=work)
    elif mode is Rounding.RTZ:
        np.copyto(work, src)
    elif mode is Rounding.RUP or mode is Rounding.RDN:
        # Anything dropped rounds up in magnitude on the mode's side of zero:
        # the increment is all the dropped bits' ones there, else 0.
        np.right_shift(bits, c.sign_shift, out=work)           # 1 where negative
        if mode is Rounding.RUP:
            work -= c.one                                      # all ones where positive
        else:
            np.negative(work, out=work)                        # all ones where negative
        work &= c.low
        work += src
    else:  # RTO: the kept bits, the last one set where anything was dropped
        np.bitwise_and(src, c.low, out=work)
        work += c.low                                          # the kept part's last bit:
        work &= c.last                                         # anything dropped
        work |= src
    work >>= c.shift
    # Magnitudes up to the smallest normal's code or from infinity's are
    # looked at lane by lane; most chunks have none.
    if c.rebias:
        mag = t
        np.right_shift(bits, c.half_shift, out=r)
        r &= c.sign16
        r |= t                                                 # the sign back
        codes = r.astype(np.uint16)
    else:
        codes = r.astype(np.uint16)
        mag = r
        mag &= c.magnitude16
    i = _NOTHING
    if exact_below and keep_zero and keep_subnormal and not c.rebias:
        if n and np.maximum.reduce(mag) >= c.inf:
            i = np.flatnonzero(mag >= c.inf)
            beyond = np.ones(i.size, bool)                     # rounded to infinity's code or more
    elif n and (np.minimum.reduce(mag) <= c.min_normal or np.maximum.reduce(mag) >= c.inf):
        mag -= c.above_min_normal  # those wrap to above the others
        i = np.flatnonzero(mag >= c.inf - c.above_min_normal)
        beyond = mag[i] + c.above_min_normal >= c.inf
    if lane_flags is not None:
        lane_flags *= _INEXACT
    settled = 0
    if i.size:
        # Exact below the normal range: a multiple of the smallest subnormal
        # (a round-to-odd proxy there never is: its last place is finer).
        bi = bits[i]
        sign = (bi >> c.half_shift) & c.sign16
        with np.errstate(invalid="ignore"):  # (signaling NaNs, not kept)
            v = np.abs(bi.view(np.float32).astype(np.float64))
            units = v * 2.0 ** (m - fmt.emin)                  # exact, NaN stays NaN
            whole = np.floor(units)
            exact = (units <= 1 << m) & (units == whole)
            # Overflow: a finite value (at least 1: none that wrapped) whose
            # rounded magnitude, the exponent unbounded, is infinity's or more.
            over = (v >= 1) & (v < np.inf) & beyond
        kept = exact & np.where(units == 0, keep_zero, keep_subnormal)
        codes[i[kept]] = sign[kept] | units[kept].astype(_U32)
        fi = np.zeros(i.size, U8)                              # the flags of the lanes done
        if over.any():
            j = i[over]
            codes[j] = np.where(sign[over] != 0, _overflow(fmt, True, mode, saturate),
                                _overflow(fmt, False, mode, saturate))
            fi[over] = OVERFLOW | INEXACT
        done = kept | over
        if keep_subnormal:
            # Inexact below the normal range, the bits trusted there (an
            # exact value, or a round-to-odd proxy with bits to spare): the
            # multiple of the smallest subnormal the mode gives, where it
            # stays below the smallest normal.  Such a result is tiny under
            # either tininess rule (rounding to the finer grid of the
            # unbounded exponent cannot reach the smallest normal when the
            # coarser grid does not), so it raises UNDERFLOW and INEXACT.
            with np.errstate(invalid="ignore"):
                tiny = ~done & ~exact & (v < 2.0 ** fmt.emin)   # (NaN: False)
            if tiny.any():
                q = _round_units(units[tiny], whole[tiny], sign[tiny] != 0, mode)
                below = q < (1 << m)
                t = np.flatnonzero(tiny)[below]
                codes[i[t]] = sign[t] | q[below].astype(_U32)
                fi[t] = UNDERFLOW | INEXACT
                done[t] = True
        if lane_flags is not None:
            lane_flags[i[done]] = fi[done]
        elif done.any():
            settled = int(np.bitwise_or.reduce(fi[done]))
        i = i[~done]
    return codes, settled if lane_flags is None else lane_flags, i


def _round_units(u: np.ndarray, down: np.ndarray, negative: np.ndarray, mode: Rounding
                 ) -> np.ndarray:
    """Magnitudes ``u`` (float64, exact, not integers; ``down`` their
    floors) rounded to integers as ``mode`` rounds values of their signs
    (float64 operations on integers below 2**52 are exact)."""
    if mode is Rounding.RNE:
        return np.rint(u)
    if mode is Rounding.RNA:
        return np.floor(u + 0.5)
    if mode is Rounding.RTZ:
        return down
    if mode is Rounding.RUP:
        return np.where(negative, down, down + 1)
    if mode is Rounding.RDN:
        return np.where(negative, down + 1, down)
    return np.where(down % 2 == 0, down + 1, down)  # RTO: the odd neighbour


@quiet
def round(values: Any, fmt: Format | str, ctx: Context | None = None,  # noqa: A001
          **kwargs: Any) -> Any:
    """Like :func:`encode`, but returns values of ``fmt``'s numpy/ml_dtypes
    dtype where one exists (float16, float32, bfloat16, float8_*), codes
    otherwise.

    >>> y = round(np.array([0.1, 1000.0]), "e4m3")
    >>> y.dtype.name, y.astype(np.float64).tolist()
    ('float8_e4m3fn', [0.1015625, nan])
    """
    fmt = _lookup(fmt)
    result = encode(values, fmt, ctx, **kwargs)
    dt = value_dtype(fmt)
    if dt is None:
        return result
    if isinstance(result, tuple):
        return result[0].view(dt), result[1]
    return result.view(dt)


@quiet
def convert(codes: Any, src: Format | str, dst: Format | str, ctx: Context | None = None,
            **kwargs: Any) -> Any:
    """Convert codes of ``src`` to codes of ``dst`` (one rounding each, NaN
    rules of the context's policy), as :func:`fpsim.convert` does per element.

    >>> [hex(c) for c in convert(np.array([0x3555, 0x7c00], np.uint16), "fp16", "e4m3")]
    ['0x2b', '0x7f']
    """
    return encode(as_array(codes), dst, ctx, src=src, **kwargs)


import fpsim  # noqa: E402,F401  (doctests)
