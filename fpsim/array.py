"""The array engine: the golden model on whole numpy arrays.

Every function here is the scalar model (:mod:`fpsim.rounding`,
:mod:`fpsim.nans`) applied elementwise, written with numpy integer
operations that follow :func:`fpsim.rounding.round_exact` step by step; the
test suite proves the two equal code for code and flag for flag.

So far: :func:`decode`, :func:`encode`, :func:`round` and :func:`convert`
for formats up to 32 bits wide, from any binary input array (numpy
float16/32/64, ml_dtypes types, or codes of a known format).  Elementwise
arithmetic on arrays is not built yet.

Memory: inputs are processed in chunks of ``chunk_size`` elements (default
65,536); each step allocates a bounded number of chunk-sized temporaries (at
most ~20 arrays of 8 bytes per element, i.e. ~10 MiB per chunk by default),
beyond the output (and the optional per-element flags).

>>> import numpy as np, fpsim
>>> from fpsim import array
>>> codes = array.encode(np.array([1e-5, 1.0, 70000.0, -0.0]), fpsim.FP16)
>>> [hex(c) for c in codes]
['0xa8', '0x3c00', '0x7c00', '0x8000']
>>> array.decode(codes, fpsim.FP16).tolist()
[1.0013580322265625e-05, 1.0, inf, -0.0]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .context import Context, resolve
from .formats import Format, Specials
from .formats import format as _lookup
from .modes import Rounding
from .nans import convert_nan
from .rounding import INEXACT, INVALID, OVERFLOW, UNDERFLOW, _overflow, nan_code, nan_or_error

__all__ = ["decode", "encode", "round", "convert", "code_dtype", "value_dtype",
           "DEFAULT_CHUNK"]

DEFAULT_CHUNK = 1 << 16

_I64 = np.int64
_U64 = np.uint64


def code_dtype(fmt: Format) -> np.dtype:
    """The unsigned integer dtype that holds ``fmt``'s codes (uint8/16/32/64)."""
    for bits, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64)):
        if fmt.width <= bits:
            return np.dtype(dt)
    raise ValueError(f"{fmt.name} is {fmt.width} bits wide; codes up to 64 bits are supported")


def value_dtype(fmt: Format) -> np.dtype | None:
    """The numpy or ml_dtypes dtype whose values are exactly ``fmt``'s
    (float16, float32, float64, bfloat16, float8_*), or None.

    >>> value_dtype(fpsim.BF16)
    dtype(bfloat16)
    """
    import ml_dtypes

    names = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16,
             "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
             "e5m2": ml_dtypes.float8_e5m2, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
             "e5m2fnuz": ml_dtypes.float8_e5m2fnuz}
    dt = names.get(fmt.name)
    if dt is None or _lookup(fmt.name) != fmt:
        return None
    return np.dtype(dt)


def _source_format(a: np.ndarray, fmt: Format | str | None) -> Format:
    if fmt is not None:
        fmt = _lookup(fmt)
        if a.dtype.kind not in "iu":
            own = _lookup(a.dtype.name) if a.dtype.name in _NAMES else None
            if own != fmt:
                raise TypeError(f"src={fmt.name} names the format of integer codes; an array "
                                f"of dtype {a.dtype} is read as its own values (drop src=, or "
                                "pass the codes as an unsigned integer array)")
        return fmt
    try:
        src = _lookup(a.dtype.name)
    except ValueError:
        raise TypeError(f"cannot read an array of dtype {a.dtype} as values: accepted "
                        "float16, float32, float64, bfloat16, float8_e4m3fn, float8_e5m2, "
                        "float8_e4m3fnuz, float8_e5m2fnuz, or integer codes with src=") from None
    if a.dtype.itemsize * 8 < src.width:
        raise TypeError(f"dtype {a.dtype} is narrower than format {src.name}")
    return src


_NAMES = ("float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2",
          "float8_e4m3fnuz", "float8_e5m2fnuz")


def _codes_of(a: np.ndarray, src: Format) -> np.ndarray:
    """The codes of ``a`` as uint64: a float array viewed as its bits, or an
    integer array of codes checked against the format's width."""
    if not a.dtype.isnative:  # big-endian data: bits are read in native order
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.kind in "iu":
        if a.size and (a.min() < 0 or int(a.max()) >= (1 << src.width)):
            raise ValueError(f"codes out of range for {src.name}: accepted 0.."
                             f"0x{(1 << src.width) - 1:x} ({src.width} bits)")
        return a.astype(_U64)
    return a.view(f"u{a.dtype.itemsize}").astype(_U64)


# -- decoding -------------------------------------------------------------------------

def _fields(fmt: Format, codes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorized :func:`fpsim.arith._decode`: (is_nan, is_inf, negative, sig, exp)."""
    m = fmt.mantissa_bits
    sign = np.uint64(fmt.sign_bit)
    mag = codes & _U64(fmt.magnitude_mask)
    negative = (codes & sign) != 0
    if fmt.specials is Specials.IEEE:
        is_inf = mag == _U64(fmt.inf_code)
        is_nan = mag > _U64(fmt.inf_code)
    elif fmt.specials is Specials.FN:
        is_inf = np.zeros(codes.shape, bool)
        is_nan = mag == _U64(fmt.magnitude_mask)
    elif fmt.specials is Specials.FNUZ:
        is_inf = np.zeros(codes.shape, bool)
        is_nan = codes == sign
    else:
        is_inf = np.zeros(codes.shape, bool)
        is_nan = np.zeros(codes.shape, bool)
    e_field = (mag >> _U64(m)).astype(_I64)
    frac = mag & _U64((1 << m) - 1)
    if fmt.subnormals:
        sub = e_field == 0
        sig = np.where(sub, frac, frac | _U64(1 << m))
        exp = np.where(sub, fmt.emin - m, e_field - fmt.bias - m)
    else:
        sig = frac | _U64(1 << m)
        exp = e_field - fmt.bias - m
    return is_nan, is_inf, negative, sig, exp.astype(_I64)


def decode(codes: Any, fmt: Format | str) -> np.ndarray:
    """The values of ``codes`` as float64 (exact for every format up to 32
    bits; NaN codes give NaN of the same sign).

    >>> decode(np.array([0x7e, 0xff], np.uint8), "e4m3")
    array([448.,  nan])
    """
    fmt = _lookup(fmt)
    a = np.asarray(codes)
    if a.dtype.kind not in "iu":
        raise TypeError(f"decode() takes integer codes, got dtype {a.dtype}")
    c = _codes_of(a, fmt)
    is_nan, is_inf, negative, sig, exp = _fields(fmt, c)
    with np.errstate(over="ignore"):
        out = np.ldexp(sig.astype(np.float64), exp)
    out = np.where(is_inf, np.inf, out)
    out = np.where(is_nan, np.nan, out)
    return np.where(negative, -out, out)


# -- the vectorized kernel ---------------------------------------------------------------

def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit lengths of uint64 values below 2**53 (exact through float64)."""
    return np.frexp(x.astype(np.float64))[1].astype(_I64)


def _quantize(sig: np.ndarray, exp: np.ndarray, q: np.ndarray, negative: np.ndarray,
              mode: Rounding, rand: np.ndarray | None, sr_bits: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`fpsim.rounding.quantize` for ``den == 1`` and
    significands below 2**53: (multiple of 2**q as int64, inexact)."""
    shift = q - exp
    left = np.clip(-shift, 0, 62)
    right = np.clip(shift, 0, 63)
    kept = np.where(shift <= 0, sig << left.astype(_U64), sig >> right.astype(_U64))
    # The remainder below the kept bits; a shift of 63 or more keeps nothing.
    mask = np.where(shift >= 64, ~_U64(0), (_U64(1) << right.astype(_U64)) - _U64(1))
    kept = np.where(shift >= 64, _U64(0), kept)
    rem = np.where(shift > 0, sig & mask, _U64(0))
    inexact = rem != 0
    half = np.where(shift >= 64, ~_U64(0), _U64(1) << np.clip(shift - 1, 0, 63).astype(_U64))
    above = np.where(shift > 64, False, rem > half)
    tie = np.where(shift > 64, False, rem == half) & inexact
    if mode is Rounding.RNE:
        up = above | (tie & ((kept & _U64(1)) == 1))
    elif mode is Rounding.RNA:
        up = above | tie
    elif mode is Rounding.RTZ:
        up = np.zeros(sig.shape, bool)
    elif mode is Rounding.RUP:
        up = ~negative
    elif mode is Rounding.RDN:
        up = negative.copy()
    elif mode is Rounding.RTO:
        kept = np.where(inexact, kept | _U64(1), kept)
        up = np.zeros(sig.shape, bool)
    else:  # stochastic: up iff floor(frac × 2**R) + r >= 2**R
        assert rand is not None
        r = sr_bits
        down_shift = shift - r  # frac_bits = rem >> (shift - R), or rem << (R - shift)
        frac_bits = np.where(
            down_shift >= 0,
            np.where(down_shift >= 64, _U64(0), rem >> np.clip(down_shift, 0, 63).astype(_U64)),
            rem << np.clip(-down_shift, 0, 63).astype(_U64))
        full = _U64((1 << r) - 1)
        up = (frac_bits != 0) & (rand >= (full - frac_bits + _U64(1)))
    up &= inexact
    return kept.astype(_I64) + up.astype(_I64), inexact


def _round_finite(fmt: Format, negative: np.ndarray, sig: np.ndarray, exp: np.ndarray,
                  mode: Rounding, saturate: bool, ftz: bool, before: bool,
                  rand: np.ndarray | None, sr_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`fpsim.rounding.round_exact` for nonzero ``sig``."""
    m, emin, qmin, offset, max_code, subnormals, sign_bit, negative_zero = fmt._kernel
    e = exp + _bit_length(sig) - 1
    q = np.where(e < emin, qmin, e - m) if subnormals else e - m
    kept, inexact = _quantize(sig, exp, q, negative, mode, rand, sr_bits)
    code = ((q - qmin) << m) + kept - offset
    flags = np.where(inexact, INEXACT, 0).astype(np.uint8)

    low = e < emin
    if before:
        tiny = low
    elif not subnormals:
        tiny = low & (code < 0)
    else:
        tiny = low & (code < (1 << m))
        if mode is not Rounding.SR:
            tiny |= low & (e < emin - 1)
            edge = low & (e == emin - 1) & (code >= (1 << m))
            if edge.any():
                full, _ = _quantize(sig, exp, e - m, negative, mode, rand, sr_bits)
                tiny |= edge & (full < (1 << (m + 1)))
    if not subnormals:
        clamp = tiny & (code < 0)
        code = np.where(clamp, 0, code)
        flags = np.where(clamp, INEXACT, flags)
    flags = np.where(tiny & (flags != 0), flags | UNDERFLOW, flags).astype(np.uint8)
    if ftz and subnormals:
        code = np.where(tiny, 0, code)
        flags = np.where(tiny, UNDERFLOW | INEXACT, flags).astype(np.uint8)

    over = code > max_code
    if over.any():
        code = np.where(over, _overflow_codes(fmt, negative, mode, saturate), code)
        flags = np.where(over, OVERFLOW | INEXACT, flags).astype(np.uint8)
    signed = np.where(code == 0, negative_zero, sign_bit)
    # Overflow codes already carry their sign (NaN codes may have no sign bit).
    code = np.where(negative & ~over, code | signed, code)
    return code.astype(_U64), flags


def _overflow_codes(fmt: Format, negative: np.ndarray, mode: Rounding,
                    saturate: bool) -> np.ndarray:
    pos = _overflow(fmt, False, mode, saturate)
    neg = _overflow(fmt, True, mode, saturate)
    return np.where(negative, neg, pos).astype(_I64)


def _specials_codes(fmt: Format, src: Format, codes: np.ndarray, is_nan: np.ndarray,
                    is_inf: np.ndarray, negative: np.ndarray, saturate: bool,
                    nan: Any) -> tuple[np.ndarray, np.ndarray]:
    """Codes and flags for NaN and infinite inputs (:mod:`fpsim.value` rules)."""
    out = np.zeros(codes.shape, _U64)
    flags = np.zeros(codes.shape, np.uint8)
    if is_inf.any():
        sign = np.where(negative, _U64(fmt.sign_bit), _U64(0))
        if fmt.has_inf and not saturate:
            val, fl = sign | _U64(fmt.inf_code), 0
        elif saturate or not fmt.has_nan:
            val, fl = sign | _U64(fmt.max_code), INVALID
        else:
            val = np.where(negative, _U64(nan_code(fmt, True)), _U64(nan_code(fmt, False)))
            fl = INVALID
        out = np.where(is_inf, val, out)
        flags = np.where(is_inf, fl, flags).astype(np.uint8)
        if not fmt.signed:  # -inf into an unsigned format: NaN, INVALID
            bad = is_inf & negative
            if bad.any():
                out = np.where(bad, _U64(nan_or_error(fmt, False, "-inf")), out)
                flags = np.where(bad, INVALID, flags).astype(np.uint8)
    if is_nan.any():
        if not fmt.has_nan:
            raise ValueError(f"NaN is not representable in {fmt.name}, which has no NaN")
        # NaN codes are few and their conversion is table-free: go through the
        # scalar rule for each distinct NaN code (the rule is data, not math).
        for c in np.unique(codes[is_nan]):
            code, fl = convert_nan(src, int(c), fmt, nan)
            hit = is_nan & (codes == c)
            out = np.where(hit, _U64(code), out)
            flags = np.where(hit, fl, flags).astype(np.uint8)
    return out, flags


# -- encode / round / convert -------------------------------------------------------------

def encode(values: Any, fmt: Format | str, ctx: Context | None = None, *,
           src: Format | str | None = None, random_bits: Any = None, rng: Any = None,
           return_flags: bool = False, chunk_size: int = DEFAULT_CHUNK,
           **overrides: Any) -> Any:
    """Round an array into ``fmt`` and return the codes (uint8/16/32).

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
    uint8 array of per-element flags.

    >>> codes, flags = encode(np.array([1.0, 1e-5, 1e6], np.float32), "fp16",
    ...                       return_flags=True)
    >>> [hex(c) for c in codes]
    ['0x3c00', '0xa8', '0x7c00']
    >>> [fpsim.Flag(int(f)).names() for f in flags]
    [[], ['underflow', 'inexact'], ['overflow', 'inexact']]
    """
    fmt = _lookup(fmt)
    if fmt.width > 32:
        raise ValueError(f"array encode supports formats up to 32 bits; {fmt.name} is "
                         f"{fmt.width} (use the scalar model)")
    ctx, key = resolve(ctx, overrides)
    mode, saturate, ftz, daz, before, sr_bits, nan = key
    a = np.asarray(values)
    source = _source_format(a, src)
    if source.width > 64 or source.precision > 53:
        raise ValueError(f"source format {source.name} is wider than the array engine reads")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    flat = a.reshape(-1)
    bits = None
    if mode is Rounding.SR:
        bits = _random_source(random_bits, rng, ctx, a.shape, sr_bits)
    elif random_bits is not None or rng is not None:
        raise ValueError("random_bits= and rng= are only used by stochastic rounding "
                         "(rounding='sr')")
    out = np.empty(flat.shape, code_dtype(fmt))
    all_flags = np.empty(flat.shape, np.uint8) if return_flags else None
    lut = None
    if bits is None and source.width <= 16 and flat.size > (1 << source.width) // 8:
        lut = _lookup_table(fmt, source, key)
    seen = 0
    for start in builtins.range(0, flat.size, chunk_size):
        stop = min(start + chunk_size, flat.size)
        rand = None
        if bits is not None:
            rand = bits(start, stop)
        if lut is not None:
            index = _codes_of(flat[start:stop], source).astype(np.intp)
            codes, flags = lut[0][index], lut[1][index]
        else:
            codes, flags = _encode_chunk(fmt, source, flat[start:stop], mode, saturate, ftz,
                                         daz, before, sr_bits, nan, rand)
        out[start:stop] = codes
        if all_flags is not None:
            all_flags[start:stop] = flags
        seen |= int(np.bitwise_or.reduce(flags)) if flags.size else 0
    if seen:
        ctx._flags[0] |= seen
    out = out.reshape(a.shape)
    if return_flags:
        return out, all_flags.reshape(a.shape)  # type: ignore[union-attr]
    return out


_TABLES: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}


def _lookup_table(fmt: Format, source: Format, key: tuple[Any, ...]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Codes and flags of every code of a source format of at most 16 bits,
    computed once by the same vectorized kernel: a conversion from such a
    source is then one indexing (deterministic modes only)."""
    k = (fmt, source, key)
    table = _TABLES.get(k)
    if table is None:
        mode, saturate, ftz, daz, before, sr_bits, nan = key
        every = np.arange(1 << source.width, dtype=code_dtype(source))
        try:
            table = _encode_chunk(fmt, source, every, mode, saturate, ftz, daz, before,
                                  sr_bits, nan, None)
        except ValueError:
            # Some code of the source cannot be converted (a NaN into a format
            # without NaN): let the chunks raise for the codes actually present.
            table = None
        if table is not None:
            if len(_TABLES) >= 64:
                _TABLES.pop(next(iter(_TABLES)))
            _TABLES[k] = table
    return table  # type: ignore[return-value]


def _random_source(random_bits: Any, rng: Any, ctx: Context, shape: tuple[int, ...],
                   sr_bits: int) -> Any:
    if random_bits is not None:
        if rng is not None:
            raise ValueError("give random_bits= or rng=, not both")
        r = np.asarray(random_bits)
        if r.dtype.kind not in "iu":
            raise TypeError(f"random_bits must be an integer array, got dtype {r.dtype}")
        if r.size and (r.min() < 0 or (sr_bits < 64 and int(r.max()) >= (1 << sr_bits))):
            raise ValueError(f"random_bits out of range: each must be in [0, 2**sr_bits) = "
                             f"[0, {1 << sr_bits})")
        flat = np.broadcast_to(r, shape).reshape(-1).astype(_U64)
        return lambda start, stop: flat[start:stop]
    gen = rng
    if gen is None:
        # The context's generator: a numpy Generator is used (and advanced)
        # directly; a random.Random seeds one with 64 bits drawn from it, so
        # that successive calls continue the context's stream.
        gen = ctx.rng
        if not hasattr(gen, "integers"):
            gen = np.random.default_rng(gen.getrandbits(64))
    elif isinstance(gen, int) and not isinstance(gen, bool):
        gen = np.random.default_rng(gen)
    if not hasattr(gen, "integers"):
        raise TypeError(f"rng must be a numpy.random.Generator or an int seed, got "
                        f"{type(rng).__name__}")
    return lambda start, stop: gen.integers(0, 1 << sr_bits, size=stop - start, dtype=_U64,
                                            endpoint=False)


def _encode_chunk(fmt: Format, source: Format, chunk: np.ndarray, mode: Rounding,
                  saturate: bool, ftz: bool, daz: bool, before: bool, sr_bits: int,
                  nan: Any, rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    codes = _codes_of(chunk, source)
    is_nan, is_inf, negative, sig, exp = _fields(source, codes)
    finite = ~(is_nan | is_inf)
    if daz and source.subnormals:
        sig = np.where(finite & (sig < _U64(1 << source.mantissa_bits)), _U64(0), sig)
    zero = finite & (sig == 0)
    nonzero = finite & ~zero
    out, flags = _specials_codes(fmt, source, codes, is_nan, is_inf, negative, saturate, nan)
    if zero.any():
        if fmt.has_zero:
            zcode = np.where(negative & fmt.has_negative_zero, _U64(fmt.sign_bit), _U64(0))
        else:  # (E8M0) as the scalar kernel: NaN and INVALID
            zcode = _U64(nan_or_error(fmt, False, "zero"))
            flags = np.where(zero, INVALID, flags).astype(np.uint8)
        out = np.where(zero, zcode, out)
    if not fmt.signed:
        bad = nonzero & negative
        if bad.any():
            out = np.where(bad, _U64(nan_or_error(fmt, False, "a negative value")), out)
            flags = np.where(bad, INVALID, flags).astype(np.uint8)
            nonzero = nonzero & ~bad
    if nonzero.any():
        idx = np.nonzero(nonzero)[0]
        c, f = _round_finite(fmt, negative[idx], sig[idx], exp[idx], mode, saturate, ftz,
                             before, None if rand is None else rand[idx], sr_bits)
        out[idx] = c
        flags[idx] = f
    return out, flags


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


def convert(codes: Any, src: Format | str, dst: Format | str, ctx: Context | None = None,
            **kwargs: Any) -> Any:
    """Convert codes of ``src`` to codes of ``dst`` (one rounding each, NaN
    rules of the context's policy), as :func:`fpsim.convert` does per element.

    >>> [hex(c) for c in convert(np.array([0x3555, 0x7c00], np.uint16), "fp16", "e4m3")]
    ['0x2b', '0x7f']
    """
    return encode(np.asarray(codes), dst, ctx, src=src, **kwargs)


import fpsim  # noqa: E402,F401  (doctests)
