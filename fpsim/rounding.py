"""The rounding kernel: the one place where an exact value becomes a code.

Every conversion, every arithmetic operation and every quantizer in fpsim
computes its result exactly (Python integers) and hands it here as

    magnitude = num / den × 2**exp      (num >= 0, den >= 1)

together with the sign and the settings.  :func:`round_exact` returns the
code and the IEEE 754 flags.  Rounding, overflow, underflow, saturation,
flush-to-zero and tininess live here and nowhere else.

The rules, in the order they are applied:

1. **Zero** gives a zero of the input's sign (``+0`` where the format has no
   negative zero; NaN and INVALID where it has no zero at all).
2. **Quantum.**  With ``e = floor(log2(magnitude))``, the result's last place
   is ``q = max(e, emin) - mantissa_bits`` (``e - mantissa_bits`` in formats
   without subnormals).
3. **Rounding** of ``magnitude / 2**q`` to an integer by the mode.  Stochastic
   rounding with ``R = sr_bits`` random bits ``r`` (uniform in ``[0, 2**R)``):
   let ``t = floor(frac × 2**R)`` where ``frac`` is the fraction of the last
   place being discarded; round away from zero iff ``t + r >= 2**R``.  The
   probability of rounding up is therefore exactly ``t / 2**R`` (``frac`` when
   it has at most R bits, otherwise ``frac`` truncated to R bits).  A random
   number is consumed for every rounding, exact or not, so that the stream
   position never depends on the data.
4. **Overflow** when the rounded magnitude exceeds ``max``: OVERFLOW and
   INEXACT; the result is ±inf for ``rne``, ``rna``, ``sr`` and for the
   directed modes that round away from zero, otherwise ±max (``rtz``, ``rto``
   and the other directed mode).  Where the format has no infinity the
   infinite result becomes NaN (OCP FP8 conversion, ml_dtypes), or ±max in a
   format without NaN.  ``saturate=True`` replaces every infinite result by ±max.
5. **Tininess** (nonzero results only): ``before`` rounding, magnitude below
   the smallest normal; ``after`` rounding, the magnitude rounded to the
   format's precision with unbounded exponent range is below the smallest
   normal (for ``sr`` the delivered result is used, as there is no single
   unbounded-range stochastic result).  Tiny and inexact raises UNDERFLOW.
   With ``ftz`` a tiny result is replaced by a zero of its sign and raises
   UNDERFLOW and INEXACT.
6. **Inexact** whenever the result differs from the exact value.

>>> from fpsim.formats import FP16, E4M3
>>> from fpsim.modes import Rounding
>>> round_exact(FP16, False, 1, 100000, 0, Rounding.RNE)   # 1e-5
(168, 24)
>>> round_exact(E4M3, False, 464, 1, 0, Rounding.RNE)      # a tie: to even (448)
(126, 16)
>>> round_exact(E4M3, False, 465, 1, 0, Rounding.RNE)      # overflows: NaN
(127, 20)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .modes import Rounding

if TYPE_CHECKING:  # pragma: no cover
    from .formats import Format

__all__ = ["round_exact", "quantize", "nan_code", "nan_or_error",
           "INVALID", "DIVIDE_BY_ZERO", "OVERFLOW", "UNDERFLOW", "INEXACT"]

# Flag bits as plain ints (the values of fpsim.Flag) so the kernel never
# builds enum objects on its hot path.
INVALID, DIVIDE_BY_ZERO, OVERFLOW, UNDERFLOW, INEXACT = 1, 2, 4, 8, 16

_RNE, _RNA, _RTZ, _RUP, _RDN, _RTO, _SR = (
    Rounding.RNE, Rounding.RNA, Rounding.RTZ, Rounding.RUP, Rounding.RDN, Rounding.RTO,
    Rounding.SR,
)


def quantize(num: int, den: int, exp: int, q: int, negative: bool,
             mode: Rounding, rand: int = 0, sr_bits: int = 32) -> tuple[int, bool]:
    """Round the magnitude ``num/den × 2**exp`` of a value of the given sign
    to an integer multiple of ``2**q`` by ``mode``.

    Returns ``(multiple, inexact)``.  This is step 3 of the kernel, exposed
    for operations whose quantum is not the format's (round to integral).

    >>> quantize(5, 2, 0, 0, False, Rounding.RNE)    # 2.5 -> 2 (ties to even)
    (2, True)
    >>> quantize(5, 2, 0, 0, True, Rounding.RDN)     # -2.5 toward -inf: magnitude 3
    (3, True)
    """
    if den == 1:
        shift = q - exp
        if shift <= 0:
            return num << -shift, False
        kept = num >> shift
        rem = num & ((1 << shift) - 1)
        if not rem:
            return kept, False
        half = 1 << (shift - 1)
        cmp = (rem > half) - (rem < half)
        if mode is _SR:
            frac_bits = rem >> (shift - sr_bits) if shift >= sr_bits else rem << (sr_bits - shift)
    else:
        if exp >= q:
            t, d = num << (exp - q), den
        else:
            t, d = num, den << (q - exp)
        kept, rem = divmod(t, d)
        if not rem:
            return kept, False
        twice = rem << 1
        cmp = (twice > d) - (twice < d)
        if mode is _SR:
            frac_bits = (rem << sr_bits) // d
    if mode is _RNE:
        up = cmp > 0 or (cmp == 0 and kept & 1)
    elif mode is _RTZ:
        up = False
    elif mode is _RNA:
        up = cmp >= 0
    elif mode is _RUP:
        up = not negative
    elif mode is _RDN:
        up = negative
    elif mode is _RTO:
        return kept | 1, True
    else:  # stochastic
        up = frac_bits + rand >= (1 << sr_bits)
    return kept + 1 if up else kept, True


def round_exact(fmt: Format, negative: bool, num: int, den: int, exp: int,
                mode: Rounding, saturate: bool = False, ftz: bool = False,
                tininess_before: bool = False, rand: int = 0,
                sr_bits: int = 32) -> tuple[int, int]:
    """Round ``(-1)**negative × num/den × 2**exp`` into ``fmt``.

    Returns ``(code, flags)`` with flags as an int of :class:`fpsim.Flag`
    bits.  ``rand`` is the random integer for stochastic rounding, in
    ``[0, 2**sr_bits)``; it is ignored by the other modes.
    """
    m, emin, qmin, offset, max_code, subnormals, sign_bit, negative_zero = fmt._kernel
    if num == 0:
        if not subnormals:  # no zero in the format
            return nan_or_error(fmt, negative, "zero"), INVALID
        return (negative_zero if negative else 0), 0
    if negative and not sign_bit:
        return nan_or_error(fmt, negative, "a negative value"), INVALID

    if den == 1:
        e = exp + num.bit_length() - 1
    else:
        e0 = num.bit_length() - den.bit_length()
        if (num << -e0 if e0 < 0 else num) < (den << e0 if e0 > 0 else den):
            e0 -= 1
        e = exp + e0
    q = qmin if e < emin and subnormals else e - m
    if den == 1 and mode is _RNE and q > exp:
        # quantize() for its most common case (a binary input, ties to even),
        # inlined: this is the hot path of every conversion and operation.
        shift = q - exp
        kept = num >> shift
        rem = num & ((1 << shift) - 1)
        inexact = rem != 0
        if inexact:
            half = 1 << (shift - 1)
            if rem > half or (rem == half and kept & 1):
                kept += 1
    else:
        kept, inexact = quantize(num, den, exp, q, negative, mode, rand, sr_bits)
    code = ((q - qmin) << m) + kept - offset

    if code > max_code:
        return _overflow(fmt, negative, mode, saturate), OVERFLOW | INEXACT

    flags = INEXACT if inexact else 0
    if e < emin:
        if tininess_before:
            tiny = True
        elif not subnormals:
            tiny = code < 0  # q was already the unbounded-range quantum
        elif code < (1 << m):
            tiny = True  # below min_normal at the coarser subnormal quantum
        elif mode is _SR:
            tiny = False  # delivered result is min_normal (see rule 5)
        elif e < emin - 1:
            tiny = True  # full precision cannot carry from below min_normal/2
        else:
            # The result is the smallest normal, reached by rounding up from
            # [min_normal/2, min_normal).  It is tiny after rounding unless
            # rounding to full precision (finer than the subnormal quantum)
            # also reaches min_normal.
            full, _ = quantize(num, den, exp, e - m, negative, mode, rand, sr_bits)
            tiny = full < (1 << (m + 1))
        if tiny:
            if ftz and subnormals:  # (formats without subnormals have no zero)
                return (negative_zero if negative else 0), UNDERFLOW | INEXACT
            if code < 0:
                # A format with no zero and no subnormals (E8M0): the nearest
                # representable magnitude is the smallest one.
                code, flags = 0, INEXACT
            if flags:
                flags |= UNDERFLOW
    if negative:
        return (code | negative_zero if code == 0 else code | sign_bit), flags
    return code, flags


def _overflow(fmt: Format, negative: bool, mode: Rounding, saturate: bool) -> int:
    if mode is _RUP:
        to_inf = not negative
    elif mode is _RDN:
        to_inf = negative
    else:
        to_inf = mode is _RNE or mode is _RNA or mode is _SR
    sign = fmt.sign_bit if negative else 0
    if not to_inf or saturate:
        return sign | fmt.max_code
    if fmt.has_inf:
        return sign | fmt.inf_code  # type: ignore[operator]
    if fmt.has_nan:
        return nan_code(fmt, negative)
    return sign | fmt.max_code


def nan_code(fmt: Format, negative: bool) -> int:
    """The quiet NaN that ``fmt`` produces for a result of the given sign:
    the default NaN, with the sign where the format's NaNs are signed.

    >>> from fpsim.formats import E4M3, FP16, E4M3FNUZ
    >>> hex(nan_code(E4M3, True)), hex(nan_code(FP16, False)), hex(nan_code(E4M3FNUZ, True))
    ('0xff', '0x7e00', '0x80')
    """
    code = fmt.default_nan_code
    if code is None:
        raise ValueError(f"format {fmt.name} has no NaN encoding")
    if fmt.specials.value == "fnuz":
        return code
    return code | (fmt.sign_bit if negative else 0)


def nan_or_error(fmt: Format, negative: bool, what: str) -> int:
    """The NaN of that sign for an unrepresentable ``what``, or ValueError
    where the format has no NaN."""
    if not fmt.has_nan:
        raise ValueError(f"{what} is not representable in {fmt.name}, which has no NaN")
    return nan_code(fmt, negative)
