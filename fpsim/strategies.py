"""Hypothesis strategies for the codes and values of any format.

This module needs `Hypothesis <https://hypothesis.readthedocs.io>`_
installed (``pip install hypothesis``, or fpsim's ``test`` extra); ``import
fpsim`` does not import it.

:func:`codes` draws bit patterns of a format, :func:`values` the
corresponding :class:`~fpsim.Float` values and :func:`arrays` numpy arrays
of them.  They are built after :func:`hypothesis.strategies.floats`: the same
``min_value``, ``max_value``, ``allow_nan``, ``allow_infinity`` and
``allow_subnormal`` options, with the format in place of ``width``.  Each
draw is, with even odds, one of the few codes where bugs live (±0, the
smallest and largest subnormals, the smallest normal, 1, the largest finite
value, each with its neighbours, the infinities, quiet and signaling NaNs
with and without payloads, the codes at the bounds asked for) or a code
uniform over all those allowed: a test meets every notable code within its
first examples, and :func:`hypothesis.find` reaches any of them at once.

:func:`rounding_inputs` draws values of a wider format on and around the
rounding boundaries of a narrower one (the midpoints between its adjacent
values, its overflow threshold, its underflow boundaries): the inputs where
a conversion is most likely to be wrong.

``formats()`` draws formats: the registered ones (the eight-bit IEEE
P3109 formats and ml_dtypes' FP8 types among them) and, with
``p3109=True``, every P3109 format of 3 to 16 bits.  Every strategy here
takes any format, P3109 ones of every width included (unsigned, with or
without infinities, P = 1 without fraction bits).

>>> import fpsim
>>> from hypothesis import find, given
>>> @given(values("e4m3", allow_nan=False))
... def test_float_round_trip(x):
...     assert fpsim.E4M3.round(float(x)) == x
>>> test_float_round_trip()
>>> find(values("fp64"), lambda x: x == fpsim.FP64.max).hex()   # 1 code in 2**64: found at once
'0x1.fffffffffffffp+1023'
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.strategies import SearchStrategy

from . import parse as _parse
from .array import code_dtype, value_dtype
from .context import Context
from .formats import FP32, FP64, Format, Specials
from .formats import format as _lookup
from .value import Float

__all__ = ["codes", "values", "arrays", "rounding_inputs", "formats"]

# A point of the extended real line, ordered so that -0 < +0 as in
# hypothesis.strategies.floats: (-1, 0, 0) is -inf, (1, 0, 0) is +inf and
# (0, v, z) the finite v, with z = -1 for a negative zero and 0 otherwise.
_Key = tuple[int, Fraction, int]
_NEG_INF: _Key = (-1, Fraction(0), 0)
_POS_INF: _Key = (1, Fraction(0), 0)
_ZERO = Fraction(0)


def codes(
    fmt: Format | str,
    *,
    min_value: Any = None,
    max_value: Any = None,
    allow_nan: bool | None = None,
    allow_infinity: bool | None = None,
    allow_subnormal: bool = True,
    allow_negative: bool = True,
    allow_zero: bool = True,
    allow_signaling: bool = True,
) -> SearchStrategy[int]:
    """Bit patterns of ``fmt``, as Python ints in ``0 <= code < 2**fmt.width``.

    Each draw is, with even odds, a notable code (±0, the smallest
    subnormal and its successor, the largest subnormal, the smallest normal
    and its successor, 1 and its neighbours, the largest finite value and
    its predecessor, ±inf, the default NaN, quiet and signaling NaNs with
    the smallest and largest payloads, the codes at ``min_value`` and
    ``max_value``) or a code uniform over all those allowed.  Draws shrink
    towards the notable codes, +0 first.

    An option that allows what a format lacks is not an error: E2M1 has no
    NaN, so ``allow_nan=True`` draws none.  A ValueError names the problem
    when no code at all is left.

    Parameters
    ----------
    fmt:
        A :class:`~fpsim.Format` or a format name such as ``"fp16"``.
    min_value:
        The smallest value drawn (inclusive, compared exactly): an int,
        float, :class:`~fractions.Fraction`, :class:`~decimal.Decimal` or
        :class:`~fpsim.Float` of any format; ``-inf`` or None for no bound.
        As in :func:`hypothesis.strategies.floats`, ``-0.0 < 0.0`` here:
        ``min_value=0.0`` excludes ``-0``.  It need not be a value of
        ``fmt``.
    max_value:
        The largest value drawn, as ``min_value``: ``+inf`` or None for no
        bound; ``max_value=-0.0`` excludes ``+0``.
    allow_nan:
        Whether NaN codes are drawn.  Default: yes unless a bound is given
        (a NaN lies within no bounds).
    allow_infinity:
        Whether infinities are drawn (within the bounds).  Default: yes
        unless both bounds are finite.
    allow_subnormal:
        Whether subnormal codes are drawn.
    allow_negative:
        Whether negative values, ``-0`` and ``-inf`` are drawn.  NaNs of
        either sign are governed by ``allow_nan`` alone.
    allow_zero:
        Whether ``+0`` and ``-0`` are drawn.
    allow_signaling:
        Whether signaling NaNs are drawn (when NaNs are).  Only IEEE-style
        formats have them.

    Returns
    -------
    SearchStrategy[int]

    Examples
    --------
    >>> import fpsim
    >>> from hypothesis import find, given
    >>> hex(find(codes("fp64"), lambda c: c == 0x0010000000000000))   # the min normal
    '0x10000000000000'
    >>> @given(codes("bf16", min_value=1.5, max_value=2, allow_subnormal=False))
    ... def test_bounds(c):
    ...     assert 1.5 <= fpsim.BF16.from_bits(c) <= 2
    >>> test_bounds()
    """
    f, intervals = _allowed(
        fmt, min_value, max_value, allow_nan, allow_infinity, allow_subnormal,
        allow_negative, allow_zero, allow_signaling,
    )
    notable = [c for c in _notable_codes(f, intervals) if _contains(intervals, c)]
    return st.one_of(st.sampled_from(notable), _uniform(intervals))


def values(
    fmt: Format | str,
    *,
    min_value: Any = None,
    max_value: Any = None,
    allow_nan: bool | None = None,
    allow_infinity: bool | None = None,
    allow_subnormal: bool = True,
    allow_negative: bool = True,
    allow_zero: bool = True,
    allow_signaling: bool = True,
) -> SearchStrategy[Float]:
    """:class:`~fpsim.Float` values of ``fmt``: :func:`codes` with the same
    options, each decoded by ``fmt.from_bits``.

    Examples
    --------
    >>> import fpsim
    >>> from hypothesis import find
    >>> find(values("e5m2"), lambda x: x.is_inf and x.is_negative)
    Float(e5m2, 0xfc, -inf)
    >>> find(values(fpsim.FP32), lambda x: x == fpsim.FP32.min_subnormal).hex()
    '0x1p-149'
    """
    f = _format(fmt)
    return codes(
        f, min_value=min_value, max_value=max_value, allow_nan=allow_nan,
        allow_infinity=allow_infinity, allow_subnormal=allow_subnormal,
        allow_negative=allow_negative, allow_zero=allow_zero, allow_signaling=allow_signaling,
    ).map(f.from_bits)


def arrays(
    fmt: Format | str,
    shape: int | Sequence[int] | SearchStrategy[Any],
    *,
    as_codes: bool | None = None,
    unique: bool = False,
    min_value: Any = None,
    max_value: Any = None,
    allow_nan: bool | None = None,
    allow_infinity: bool | None = None,
    allow_subnormal: bool = True,
    allow_negative: bool = True,
    allow_zero: bool = True,
    allow_signaling: bool = True,
) -> SearchStrategy[np.ndarray]:
    """Numpy arrays of ``fmt``, elements drawn by :func:`codes` with the
    same options, through :func:`hypothesis.extra.numpy.arrays`.

    Parameters
    ----------
    fmt:
        A :class:`~fpsim.Format` or a format name.
    shape:
        An int, a tuple of ints, or a strategy of them (such as
        :func:`hypothesis.extra.numpy.array_shapes`).
    as_codes:
        ``True``: arrays of codes, of dtype
        :func:`fpsim.array.code_dtype` (uint8/16/32/64).  ``False``: arrays
        of values, of dtype :func:`fpsim.array.value_dtype` (float16,
        ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ...), the same bits
        viewed; ValueError for a format that has no such dtype (TF32, formats
        you registered).  ``None`` (default): values where the format has a
        value dtype, codes otherwise.
    unique:
        Whether the elements are distinct codes (as
        :func:`hypothesis.extra.numpy.arrays`: by code, so NaNs with
        different bits count as distinct).

    Examples
    --------
    >>> import fpsim
    >>> from hypothesis import find
    >>> a = find(arrays("bf16", (2, 3)), lambda a: True)
    >>> a.dtype.name, a.shape
    ('bfloat16', (2, 3))
    >>> find(arrays("tf32", 4), lambda a: True).dtype     # TF32 has no value dtype
    dtype('uint32')
    >>> find(arrays("e4m3", 3, as_codes=True), lambda a: True).dtype
    dtype('uint8')
    """
    f = _format(fmt)
    if as_codes is not None and not isinstance(as_codes, bool):
        raise TypeError(f"as_codes must be True, False or None, got {as_codes!r}")
    if not isinstance(unique, bool):
        raise TypeError(f"unique must be True or False, got {unique!r}")
    cdt = code_dtype(f)
    vdt = value_dtype(f)
    if as_codes is False and vdt is None:
        with_dtype = ", ".join(g.name for g in _registered() if value_dtype(g) is not None)
        raise ValueError(
            f"{f.name} has no numpy or ml_dtypes value dtype; ask for its codes "
            f"(as_codes=True or None). Formats with a value dtype: {with_dtype}"
        )
    elements = codes(
        f, min_value=min_value, max_value=max_value, allow_nan=allow_nan,
        allow_infinity=allow_infinity, allow_subnormal=allow_subnormal,
        allow_negative=allow_negative, allow_zero=allow_zero, allow_signaling=allow_signaling,
    )
    strategy = hnp.arrays(cdt, shape, elements=elements, unique=unique)
    if as_codes or vdt is None:
        return strategy
    return strategy.map(lambda a: a.view(vdt))


def rounding_inputs(
    fmt: Format | str,
    source: Format | str | None = None,
    *,
    max_ulps: int = 2,
    allow_negative: bool = True,
    as_codes: bool = False,
) -> SearchStrategy[Float] | SearchStrategy[int]:
    """Values of a wider ``source`` format on and near the rounding
    boundaries of ``fmt``: where a conversion to ``fmt`` is most likely to be
    wrong.

    Each draw picks a boundary ``t`` of ``fmt`` and returns the value of
    ``source`` that is ``k`` steps (codes) of ``source`` away from it, with
    ``|k| <= max_ulps`` (often ``k = 0``: ``t`` itself).  The
    boundaries, computed exactly, are

    * the midpoint of every two adjacent finite values of ``fmt`` (the ties
      of round-to-nearest), from half the smallest subnormal (the underflow
      to zero) up to the largest finite value plus half its ULP (the
      overflow threshold), notable ones more often;
    * the smallest normal value (where tininess is decided);
    * for a format without zero (E8M0), half its smallest value.

    Each boundary is a value of ``source`` exactly: ``source`` must have
    more precision than ``fmt``, at least its exponent range and a smallest
    subnormal at most half of ``fmt``'s smallest spacing; ValueError
    otherwise.

    Parameters
    ----------
    fmt:
        The format rounded to (a :class:`~fpsim.Format` or a name).
    source:
        The format of the inputs.  Default: FP32 where it is wide enough
        for ``fmt``, otherwise FP64 (for an FP32 target).  An FP64 target
        needs a wider ``source`` that you build.
    max_ulps:
        The largest number of ``source`` steps from a boundary (an int >= 0).
    allow_negative:
        Whether negative inputs are drawn too (when both formats are signed).
    as_codes:
        Draw codes of ``source`` (ints) instead of :class:`~fpsim.Float`
        values.

    Examples
    --------
    >>> import fpsim
    >>> from hypothesis import find
    >>> x = find(rounding_inputs("fp16"), lambda x: x == 65520)   # FP16's max + ULP/2
    >>> x, fpsim.FP16.round(x), fpsim.FP16.round(x.next_down())
    (Float(fp32, 0x477ff000, 65520), Float(fp16, 0x7c00, inf), Float(fp16, 0x7bff, 65504))
    >>> find(rounding_inputs("e4m3", max_ulps=0), lambda x: 1 < x < 1.125)
    Float(fp32, 0x3f880000, 1.0625)
    """
    f = _format(fmt)
    if not isinstance(as_codes, bool):
        raise TypeError(f"as_codes must be True or False, got {as_codes!r}")
    if not isinstance(allow_negative, bool):
        raise TypeError(f"allow_negative must be True or False, got {allow_negative!r}")
    if isinstance(max_ulps, bool) or not isinstance(max_ulps, int):
        raise TypeError(f"max_ulps must be an int, got {type(max_ulps).__name__}")
    if max_ulps < 0:
        raise ValueError(f"max_ulps must be >= 0, got {max_ulps}")
    src = _rounding_source(f, source)

    # Boundary number i in 0..max_code is the midpoint above the finite
    # value with magnitude code i; then the smallest normal, then (without
    # zero) half the smallest value.
    n_ties = f.max_code + 1
    extra = [f.min_normal] + ([] if f.has_zero else [f.min_subnormal / 2])
    first_normal = (1 << f.mantissa_bits) if f.subnormals else 0
    one = _code_of(f, Fraction(1))
    notable_ties = [0, 1, first_normal - 1, first_normal, f.max_code - 1, f.max_code]
    if one is not None:
        notable_ties += [one - 1, one]
    notable_ties = sorted({i for i in notable_ties if 0 <= i < n_ties})
    notable = [n_ties + j for j in range(len(extra))] + notable_ties
    index = st.one_of(st.sampled_from(notable), _uniform([(0, n_ties - 1)]))
    offset = st.one_of(st.just(0), st.integers(-max_ulps, max_ulps))
    negative = (st.booleans() if allow_negative and f.signed and src.signed
                else st.just(False))
    exact = Context()

    def build(args: tuple[int, int, bool]) -> int:
        i, k, neg = args
        if i < n_ties:
            low = f.from_bits(i)
            t = low.value + low.ulp() / 2
        else:
            t = extra[i - n_ties]
        code = src.round(t, exact, rounding="rne", saturate=False).bits
        if src.from_bits(code).value != t:  # pragma: no cover - _rounding_source rules it out
            raise AssertionError(f"{t} is not exact in {src.name}")
        code = min(max(code + k, 0), src.max_code)
        return code | (src.sign_bit if neg else 0)

    drawn = st.tuples(index, offset, negative).map(build)
    return drawn if as_codes else drawn.map(src.from_bits)


def formats(*, p3109: bool = False, max_width: int | None = None) -> SearchStrategy[Format]:
    """Formats: every registered one (:func:`fpsim.formats`: the IEEE, OCP
    and ml_dtypes formats and the 30 eight-bit IEEE P3109 formats) and, with
    ``p3109=True``, every IEEE P3109 format ``binary{K}p{P}{s|u}{e|f}`` of
    K = 3 to 16 bits as well (504 formats, :func:`fpsim.formats.p3109`).
    Draws shrink towards the registered formats, FP64 first.

    Parameters
    ----------
    p3109:
        Whether the P3109 formats of every width are drawn too.  Off by
        default: formats you do not name are made on first use, and
        :func:`rounding_inputs` needs a wider source than FP64 for some
        (binary16p1se reaches 2^16382).
    max_width:
        Draw only formats of at most this many bits (for tests that
        enumerate every code).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(formats(), lambda f: f.name.startswith("binary")).name.startswith("binary8p")
    True
    >>> f = find(formats(p3109=True, max_width=4), lambda f: not f.signed and f.infinities)
    >>> f.width <= 4, f.name.endswith("ue")
    (True, True)
    """
    _check_bool("p3109", p3109)
    if max_width is not None and (isinstance(max_width, bool) or not isinstance(max_width, int)):
        raise TypeError(f"max_width must be an int or None, got {max_width!r}")
    chosen = list(_registered())
    if p3109:
        names = {f.name for f in chosen}
        chosen += [f for f in _p3109_family() if f.name not in names]
    if max_width is not None:
        chosen = [f for f in chosen if f.width <= max_width]
    if not chosen:
        raise ValueError(f"no format has at most max_width={max_width} bits")
    return st.sampled_from(chosen)


# -- helpers -------------------------------------------------------------------


def _registered() -> list[Format]:
    from .formats import formats as registered
    return registered()


def _p3109_family() -> list[Format]:
    """Every IEEE P3109 format, by width, precision, signed before unsigned,
    extended before finite."""
    from .formats import P3109_MAX_K, P3109_MIN_K, p3109
    return [p3109(k, p, signed, extended)
            for k in range(P3109_MIN_K, P3109_MAX_K + 1) for p in range(1, k + 1)
            for signed in (True, False) for extended in (True, False)
            if p < k or not signed]


def _format(fmt: Any, name: str = "fmt") -> Format:
    if isinstance(fmt, Format):
        return fmt
    if isinstance(fmt, str):
        return _lookup(fmt)
    raise TypeError(
        f"{name} must be a fpsim.Format or a format name such as 'fp16', "
        f"got {type(fmt).__name__}"
    )


def _check_bool(name: str, value: Any, none_ok: bool = False) -> None:
    if isinstance(value, bool) or (none_ok and value is None):
        return
    accepted = "True, False or None" if none_ok else "True or False"
    raise TypeError(f"{name} must be {accepted}, got {value!r}")


def _bound_key(name: str, x: Any) -> _Key | None:
    """The order key of a bound (None for no bound)."""
    if x is None:
        return None
    if isinstance(x, Float):
        if x.is_nan:
            raise ValueError(f"{name} must not be NaN, got {x!r}")
        if x.is_inf:
            return _NEG_INF if x.is_negative else _POS_INF
        return (0, x.value, -1 if x.is_zero and x.is_negative else 0)
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction, Decimal, Rational,
                                                  np.integer, np.floating)):
        raise TypeError(
            f"{name} must be a number (int, float, Fraction, Decimal or fpsim.Float) "
            f"or None, got {type(x).__name__}"
        )
    if isinstance(x, Rational) and not isinstance(x, (int, Fraction, np.integer)):
        return (0, Fraction(x.numerator, x.denominator), 0)  # another Rational type
    # Read exactly, as every value fpsim takes is (fpsim.parse): a
    # np.longdouble by its own ratio, never through float64 (1 + 2**-60 is
    # not 1.0), a huge Decimal exponent at no cost, a numpy float through its
    # bits.
    src = _parse.exact(x)
    if src[0] == "code":  # a numpy scalar of a format: its Float
        f = src[1].from_bits(src[2])
        if f.is_nan:
            raise ValueError(f"{name} must not be NaN, got {x!r}")
        return _bound_key(name, f)
    if src[0] in ("nan", "snan"):
        raise ValueError(f"{name} must not be NaN, got {x!r}")
    if src[0] == "inf":
        return _NEG_INF if src[1] else _POS_INF
    value = _parse.fraction(src)
    return (0, value, -1 if value == 0 and src[1] else 0)


def _key(fmt: Format, code: int) -> _Key:
    """The order key of a finite or infinite code."""
    x = fmt.from_bits(code)
    if x.is_inf:
        return _NEG_INF if x.is_negative else _POS_INF
    return (0, x.value, -1 if x.is_zero and x.is_negative else 0)


def _allowed(
    fmt: Any, min_value: Any, max_value: Any, allow_nan: Any, allow_infinity: Any,
    allow_subnormal: Any, allow_negative: Any, allow_zero: Any, allow_signaling: Any,
) -> tuple[Format, list[tuple[int, int]]]:
    """The codes that the options allow, as a list of inclusive ranges
    ``(lo, hi)`` of codes, each within one sign: the positive finite values
    first (the uniform draws shrink towards the first code), then the
    negative ones, the infinities and the NaNs."""
    f = _format(fmt)
    _check_bool("allow_nan", allow_nan, none_ok=True)
    _check_bool("allow_infinity", allow_infinity, none_ok=True)
    for name, v in (("allow_subnormal", allow_subnormal), ("allow_negative", allow_negative),
                    ("allow_zero", allow_zero), ("allow_signaling", allow_signaling)):
        _check_bool(name, v)
    lo = _bound_key("min_value", min_value)
    hi = _bound_key("max_value", max_value)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"min_value={min_value!r} is greater than max_value={max_value!r}")
    bounded = lo is not None or hi is not None
    if allow_nan is None:
        allow_nan = not bounded
    elif allow_nan and bounded:
        raise ValueError("allow_nan=True cannot be combined with min_value or max_value: "
                         "a NaN lies within no bounds")
    both_finite = (lo is not None and lo[0] == 0) and (hi is not None and hi[0] == 0)
    if allow_infinity is None:
        allow_infinity = not both_finite
    elif allow_infinity and both_finite:
        raise ValueError(f"allow_infinity=True cannot be combined with the finite bounds "
                         f"min_value={min_value!r} and max_value={max_value!r}")
    lo = _NEG_INF if lo is None else lo
    hi = _POS_INF if hi is None else hi

    m = f.mantissa_bits
    finite: list[tuple[int, int]] = []
    infinite: list[tuple[int, int]] = []
    nans: list[tuple[int, int]] = []
    signs = [0, f.sign_bit] if f.signed else [0]
    for sign in signs:
        negative = sign != 0
        if negative and not allow_negative:
            continue
        pieces = []
        if f.subnormals:
            if allow_zero and not (negative and f.specials is Specials.FNUZ):
                pieces.append((0, 0))
            if allow_subnormal and m > 0:
                pieces.append((1, (1 << m) - 1))
            pieces.append((1 << m, f.max_code))
        else:
            pieces.append((0, f.max_code))
        for a, b in pieces:
            clipped = _clip(f, sign, a, b, lo, hi)
            if clipped is not None:
                finite.append(clipped)
        if f.has_inf and allow_infinity:
            inf = f.inf_code | sign  # type: ignore[operator]
            if lo <= _key(f, inf) <= hi:
                infinite.append((inf, inf))
    if allow_nan and f.has_nan:
        all_ones = f.magnitude_mask
        for sign in signs:
            if f.specials is Specials.IEEE:
                inf = f.inf_code  # type: ignore[assignment]
                quiet = 1 << (m - 1)
                nans.append((sign | inf | quiet, sign | all_ones))
                if allow_signaling and quiet > 1:
                    nans.append((sign | (inf + 1), sign | inf | (quiet - 1)))
            elif f.specials is Specials.FN:
                nans.append((sign | all_ones, sign | all_ones))
        if f.specials is Specials.FNUZ:
            nans.append((f.sign_bit, f.sign_bit))
    intervals = finite + infinite + nans
    if not intervals:
        raise ValueError(
            f"no code of {f.name} satisfies min_value={min_value!r}, max_value={max_value!r}, "
            f"allow_nan={allow_nan}, allow_infinity={allow_infinity}, "
            f"allow_subnormal={allow_subnormal}, allow_negative={allow_negative}, "
            f"allow_zero={allow_zero}; {f.name}'s finite values lie in "
            f"[{'-' if f.signed else ''}{f.max}, {f.max}]"
        )
    return f, intervals


def _clip(f: Format, sign: int, a: int, b: int, lo: _Key, hi: _Key) -> tuple[int, int] | None:
    """The codes ``sign | m`` for ``a <= m <= b`` whose values lie in
    ``[lo, hi]``, as a range of codes in ascending order of value (values
    grow with ``m`` for a positive sign and fall for a negative one)."""

    def first(pred: Callable[[int], bool]) -> int:
        """The least m in [a, b + 1] with pred(m), pred monotone false->true."""
        low, high = a, b + 1
        while low < high:
            mid = (low + high) // 2
            if pred(mid):
                high = mid
            else:
                low = mid + 1
        return low

    if lo == _NEG_INF and hi == _POS_INF:
        return (sign | a, sign | b)
    key = lambda mag: _key(f, sign | mag)
    if sign == 0:
        start = first(lambda mag: key(mag) >= lo)
        stop = first(lambda mag: key(mag) > hi) - 1
    else:
        start = first(lambda mag: key(mag) <= hi)
        stop = first(lambda mag: key(mag) < lo) - 1
    if start > stop:
        return None
    return (sign | start, sign | stop)


def _contains(intervals: list[tuple[int, int]], code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in intervals)


def _code_of(f: Format, x: Fraction) -> int | None:
    """The positive code whose value is exactly ``x``, or None."""
    y = f.round(x, Context(), rounding="rne", saturate=True)
    return y.bits if y.is_finite and y.value == x else None


def _notable_codes(f: Format, intervals: list[tuple[int, int]]) -> list[int]:
    """The codes where bugs live, simplest first (the shrinking order)."""
    m = f.mantissa_bits
    all_ones = f.magnitude_mask
    first_normal = (1 << m) if f.subnormals else 0
    one = _code_of(f, Fraction(1))
    mags = [0]
    if one is not None:
        mags += [one]
    if f.subnormals and m > 0:
        mags += [1, 2, (1 << m) - 1]
    mags += [first_normal, first_normal + 1]
    if one is not None:
        mags += [one - 1, one + 1]
    mags += [f.max_code, f.max_code - 1]
    if f.has_inf:
        mags.append(f.inf_code)  # type: ignore[arg-type]
    out: list[int] = []
    for mag in mags:
        if 0 <= mag <= f.max_code or mag == f.inf_code:
            out.append(mag)
            if f.signed:
                out.append(mag | f.sign_bit)
    nan_mags: list[int] = []
    if f.specials is Specials.IEEE:
        inf = f.inf_code
        quiet = 1 << (m - 1)
        nan_mags = [f.default_nan_code, all_ones, inf | quiet | 1,  # type: ignore[list-item]
                    inf + 1, inf | (quiet - 1)]  # type: ignore[operator]
    elif f.specials is Specials.FN:
        nan_mags = [all_ones]
    for mag in nan_mags:
        out.append(mag)
        if f.signed:
            out.append(mag | f.sign_bit)
    if f.specials is Specials.FNUZ:
        out.append(f.sign_bit)
    # The edges of the allowed ranges: the codes at the bounds.
    for lo, hi in intervals:
        out += [lo, hi, lo + 1, hi - 1]
    return list(dict.fromkeys(c for c in out if 0 <= c < (1 << f.width)))


def _uniform(intervals: list[tuple[int, int]]) -> SearchStrategy[int]:
    """Codes drawn uniformly from the union of the ranges.

    The index into the union is read from random bytes: Hypothesis draws
    the integers of a wide range mostly small (log-distributed), which would
    give mostly the smallest subnormals.  Shrinking the bytes shrinks the
    index towards the start of the first range."""
    starts = []
    total = 0
    for lo, hi in intervals:
        starts.append(total)
        total += hi - lo + 1
    # Eight extra bits keep the modulo's bias below 1/256.
    size = (total.bit_length() + 8 + 7) // 8

    def pick(raw: bytes) -> int:
        i = int.from_bytes(raw, "big") % total
        j = bisect.bisect_right(starts, i) - 1
        return intervals[j][0] + (i - starts[j])

    return st.binary(min_size=size, max_size=size).map(pick)


def _wide_enough(f: Format, src: Format) -> bool:
    """Whether every boundary of ``f`` and the codes around it are values of
    ``src``: more precision, at least the exponent range, and a quantum at
    most half of ``f``'s smallest spacing."""
    return (src.mantissa_bits > f.mantissa_bits
            and src.emax >= f.emax
            and src.min_subnormal <= f.min_normal * f.eps / 2)


def _rounding_source(f: Format, source: Any) -> Format:
    if source is None:
        for candidate in (FP32, FP64):
            if _wide_enough(f, candidate):
                return candidate
        raise ValueError(
            f"no built-in format is wider than {f.name} (fp32 and fp64 are tried); "
            "pass source= a wider Format, e.g. fpsim.register(fpsim.Format('fp128', 15, 112, "
            "16383))"
        )
    src = _format(source, "source")
    if not _wide_enough(f, src):
        raise ValueError(
            f"source {src.name} is not wider than {f.name}: the rounding boundaries of "
            f"{f.name} must be values of the source, which needs more than "
            f"{f.mantissa_bits} mantissa bits (has {src.mantissa_bits}), emax >= {f.emax} "
            f"(has {src.emax}) and a smallest subnormal <= {f.min_normal * f.eps / 2} "
            f"(has {src.min_subnormal})"
        )
    return src
