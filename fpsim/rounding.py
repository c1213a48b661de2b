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
   position never depends on the data.  ``sr_b`` and ``sr_c`` are IEEE
   P3109's StochasticB and StochasticC (:func:`stochastic_up`); ``raz``
   rounds every inexact magnitude up.
4. **Overflow** when the rounded magnitude exceeds ``max``: OVERFLOW and
   INEXACT; the result is ±inf for ``rne``, ``rna``, ``raz``, the stochastic
   modes and the directed modes that round away from zero, otherwise ±max
   (``rtz``, ``rto`` and the other directed mode).  Where the format has no
   infinity the infinite result becomes NaN (OCP FP8 conversion, ml_dtypes),
   or ±max in a format without NaN.  ``saturate=True`` (P3109's SatFinite)
   and ``"satpropagate"`` replace every infinite result by ±max;
   ``"ovfinf"`` keeps ±inf and gives ±max, never NaN, where the format has
   no infinity (:func:`infinity_code` for infinite inputs).
5. **Tininess** (nonzero results only): ``before`` rounding, magnitude below
   the smallest normal; ``after`` rounding, the magnitude rounded to the
   format's precision with unbounded exponent range is below the smallest
   normal (for ``sr`` the delivered result is used, as there is no single
   unbounded-range stochastic result).  Tiny and inexact raises UNDERFLOW.
   With ``ftz`` a tiny result is replaced by a zero of its sign and raises
   UNDERFLOW and INEXACT.
6. **Inexact** whenever the result differs from the exact value.
7. **IEEE P3109's rules** for results in P3109 formats (``Format.p3109``),
   under the context's ``p3109`` text ("v4.0", "v3.2.1", "3"; not "ieee";
   :func:`p3109_applies`; spec/p3109.md): a negative value into an
   unsigned format is rounded as a magnitude first; 0 stays 0, anything
   else becomes the lower bound 0 or the NaN as the text, the saturation
   mode and the rounding direction say (:func:`clamps_negative`); round to
   odd beyond ±max in a signed extended format gives ±inf under SatNone
   (v3.2.1: an unsigned one too); -inf into an unsigned format is 0 under
   SatFinite, SatPropagate (not in release 3) and v3.2.1's third mode.
   Division by zero is the operations' (:mod:`fpsim.arith`).

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

from typing import TYPE_CHECKING, Any

from .modes import P3109, STOCHASTIC, Rounding, Saturation

if TYPE_CHECKING:  # pragma: no cover
    from .formats import Format

__all__ = ["round_exact", "round_key", "quantize", "stochastic_up", "infinity_code",
           "nan_code", "nan_or_error", "check_random_bits",
           "INVALID", "DIVIDE_BY_ZERO", "OVERFLOW", "UNDERFLOW", "INEXACT"]

# Flag bits as plain ints (the values of fpsim.Flag) so the kernel never
# builds enum objects on its hot path.
INVALID, DIVIDE_BY_ZERO, OVERFLOW, UNDERFLOW, INEXACT = 1, 2, 4, 8, 16

_RNE, _RNA, _RTZ, _RUP, _RDN, _RAZ, _RTO, _SR, _SR_B, _SR_C = (
    Rounding.RNE, Rounding.RNA, Rounding.RTZ, Rounding.RUP, Rounding.RDN, Rounding.RAZ,
    Rounding.RTO, Rounding.SR, Rounding.SR_B, Rounding.SR_C,
)
#: The stochastic modes in P3109's order (A, B, C).
STOCHASTIC_ORDER = (_SR, _SR_B, _SR_C)


def quantize(num: int, den: int, exp: int, q: int, negative: bool,
             mode: Rounding, rand: int = 0, sr_bits: int = 32,
             parity: int = 0) -> tuple[int, bool]:
    """Round the magnitude ``num/den × 2**exp`` of a value of the given sign
    to an integer multiple of ``2**q`` by ``mode``.

    Returns ``(multiple, inexact)``.  This is step 3 of the kernel, exposed
    for operations whose quantum is not the format's (round to integral).
    Ties to even and round to odd read the parity of ``multiple + parity``
    (``parity`` 1 makes even multiples "odd": the kernel's code parity).

    >>> quantize(5, 2, 0, 0, False, Rounding.RNE)    # 2.5 -> 2 (ties to even)
    (2, True)
    >>> quantize(5, 2, 0, 0, True, Rounding.RDN)     # -2.5 toward -inf: magnitude 3
    (3, True)
    """
    if mode in STOCHASTIC:
        rand = _random(rand, sr_bits)
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
        if mode in STOCHASTIC:
            # the discarded fraction to sr_bits + 1 bits, and whether more follow
            r1 = sr_bits + 1
            if shift >= r1:
                frac_bits, below = rem >> (shift - r1), bool(rem & ((1 << (shift - r1)) - 1))
            else:
                frac_bits, below = rem << (r1 - shift), False
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
        if mode in STOCHASTIC:
            frac_bits, below = divmod(rem << (sr_bits + 1), d)
    if mode is _RNE:
        up = cmp > 0 or (cmp == 0 and (kept + parity) & 1)
    elif mode is _RTZ:
        up = False
    elif mode is _RNA:
        up = cmp >= 0
    elif mode is _RUP:
        up = not negative
    elif mode is _RDN:
        up = negative
    elif mode is _RTO:
        return (kept if (kept + parity) & 1 else kept + 1), True
    elif mode is _RAZ:
        up = True
    else:
        up = _stochastic_up(mode, frac_bits, bool(below), rand, sr_bits)  # (rand checked)
    return kept + 1 if up else kept, True


def stochastic_up(mode: Rounding, frac_bits: int, below: bool, rand: int, sr_bits: int) -> bool:
    """Whether a stochastic mode rounds away from zero (P3109's three rules).

    ``frac_bits`` is ``floor(frac × 2**(R+1))`` for the discarded fraction
    ``frac`` (in (0, 1)) and ``R = sr_bits``; ``below`` says whether bits of
    ``frac`` follow; ``rand`` is uniform in ``[0, 2**R)``.

    * ``sr`` (StochasticA): up iff ``floor(frac × 2**R) + rand >= 2**R``;
    * ``sr_b`` (StochasticB): up iff ``floor(frac × 2**(R+1)) + 2·rand + 1 >= 2**(R+1)``;
    * ``sr_c`` (StochasticC): up iff ``RNE(frac × 2**R) + rand >= 2**R``.

    >>> [stochastic_up(m, 3, False, 2, 2) for m in STOCHASTIC_ORDER]   # frac = 3/8, R = 2
    [False, True, True]
    """
    return _stochastic_up(mode, frac_bits, below, _random(rand, sr_bits), sr_bits)


def _stochastic_up(mode: Rounding, frac_bits: int, below: bool, rand: int, sr_bits: int
                   ) -> bool:
    """:func:`stochastic_up` with ``rand`` and ``sr_bits`` already checked."""
    if mode is _SR:
        return (frac_bits >> 1) + rand >= (1 << sr_bits)
    if mode is _SR_B:
        return frac_bits + 2 * rand + 1 >= (2 << sr_bits)
    t = frac_bits >> 1  # StochasticC: frac × 2**R to nearest, ties to even
    if frac_bits & 1 and (below or t & 1):
        t += 1
    return t + rand >= (1 << sr_bits)


def check_random_bits(value: Any, sr_bits: int, name: str = "random_bits") -> int:
    """``value`` checked as the random integer of one stochastic rounding
    with ``sr_bits`` random bits: an int (a numpy integer too, not a bool)
    in ``[0, 2**sr_bits)``, returned as an int; a TypeError or ValueError
    naming ``name`` otherwise.  The one check of every function that takes
    random bits (whole arrays of them:
    :func:`fpsim.array.engine.check_random_array`, with the same message).

    >>> check_random_bits(255, 8), check_random_bits(256, 8, "rand")
    Traceback (most recent call last):
    ...
    ValueError: rand=256 out of range: accepted 0 <= rand < 2**sr_bits = 256
    """
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = value.__index__()
    if not 0 <= value < (1 << sr_bits):
        raise ValueError(f"{name}={value} out of range: accepted 0 <= {name} < "
                         f"2**sr_bits = {1 << sr_bits}")
    return value


def _random(rand: Any, sr_bits: Any) -> int:
    """The kernel's ``rand`` and ``sr_bits``, checked (an int in range costs
    two comparisons)."""
    if rand.__class__ is int and sr_bits.__class__ is int and 0 < sr_bits <= 64 \
            and 0 <= rand and not rand >> sr_bits:
        return rand
    from .context import _check_sr_bits  # (context imports the kernel)

    return check_random_bits(rand, _check_sr_bits(sr_bits))


def round_exact(fmt: Format, negative: bool, num: int, den: int, exp: int,
                mode: Rounding, saturate: bool = False, ftz: bool = False,
                tininess_before: bool = False, rand: int = 0,
                sr_bits: int = 32, p3109: P3109 = P3109.V4_0) -> tuple[int, int]:
    """Round ``(-1)**negative × num/den × 2**exp`` into ``fmt``.

    Returns ``(code, flags)`` with flags as an int of :class:`fpsim.Flag`
    bits.  ``rand`` is the random integer for stochastic rounding, in
    ``[0, 2**sr_bits)``; it is ignored by the other modes.  ``p3109``: the
    IEEE P3109 text whose rules apply where ``fmt`` is a P3109 format
    (:class:`fpsim.modes.P3109`, rule 7).
    """
    if mode in STOCHASTIC:
        rand = _random(rand, sr_bits)
    return round_key(fmt, negative, num, den, exp,
                     (mode, saturate, ftz, False, tininess_before, sr_bits, None, p3109), rand)


# The last places a ties-to-even rounding discards, by their count, for the
# kernel's inlined path: looking them up costs less than computing them.
_MASK = tuple((1 << s) - 1 for s in range(64))
_HALF = tuple((1 << s) >> 1 for s in range(64))


def round_key(fmt: Format, negative: bool, num: int, den: int, exp: int,
              key: tuple[Any, ...], rand: int = 0) -> tuple[int, int]:
    """The kernel: :func:`round_exact` with the settings given as a
    context's key ``(mode, saturate, ftz, daz, tininess_before, sr_bits,
    nan, p3109)`` (``daz`` and ``nan`` are not read), so that operations
    pass their context's settings in one argument.

    >>> from fpsim.formats import FP16
    >>> from fpsim.context import Context
    >>> round_key(FP16, False, 1, 3, 0, Context(rounding="rup")._key)   # 1/3
    (13654, 16)
    """
    p, m, qmin, base, max_code, sign_bit, general = fmt._kernel
    mode = key[0]
    if den != 1:
        # One division, with 2 or 3 quotient bits (and sr_bits more for
        # stochastic rounding) below the format's last place, and a nonzero
        # remainder jammed into the quotient's last bit: that binary value
        # has the same floor(log2) and rounds as the quotient does in every
        # mode, at the last place and at the finer one of the tininess check.
        k = m + 3 + den.bit_length() - num.bit_length()
        if mode in STOCHASTIC:
            k += key[5] + 1
        if k > 0:
            num <<= k
        else:
            den <<= -k
        quotient = num // den
        num = quotient | (quotient * den != num)
        exp -= k
    n = num.bit_length()
    shift = n - p  # the bits below the last place at full precision,
    q = exp + shift  # and that last place: e - m, with e = floor(log2(magnitude))
    if mode is _RNE and q >= qmin and shift < 64 and n and (not negative or sign_bit):
        # The hot path of every conversion and operation: a nonzero result
        # in the normal range (or overflowing), rounded to nearest even
        # (quantize() inlined).  Anything else takes the general path below.
        if shift <= 0:
            kept, flags = num << -shift, 0
        else:
            kept = num >> shift
            rem = num & _MASK[shift]
            if rem:
                if rem > _HALF[shift] or rem == _HALF[shift] and kept & 1:
                    kept += 1
                flags = INEXACT
            else:
                flags = 0
        code = (q << m) + kept - base
        if code > max_code:
            return _overflow(fmt, negative, _RNE, key[1]), OVERFLOW | INEXACT
        return (code | sign_bit if negative else code), flags

    emin, subnormals, negative_zero, qmin, parity_base = general
    if not n:
        if not subnormals:  # no zero in the format
            return nan_or_error(fmt, negative, "zero"), INVALID
        return (negative_zero if negative else 0), 0
    if negative and not sign_bit:
        if p3109_applies(fmt, key[7]):
            return _negative_unsigned(fmt, num, exp, key, rand)
        return nan_or_error(fmt, negative, "a negative value"), INVALID
    e = exp + n - 1
    if e < emin and subnormals:
        q = qmin
    # (A format whose ties go by the code's parity and has no fraction bits:
    # the code is q + kept - base, so kept's parity is offset by q - base.)
    kept, inexact = quantize(num, 1, exp, q, negative, mode, rand, key[5],
                             0 if parity_base is None else (q - parity_base) & 1)
    flags = INEXACT if inexact else 0
    code = (q << m) + kept - base

    if code > max_code:
        return _overflow(fmt, negative, mode, key[1], key[7]), OVERFLOW | INEXACT

    if e < emin:
        if key[4]:  # tininess before rounding
            tiny = True
        elif not subnormals:
            tiny = code < 0  # q was already the unbounded-range quantum
        elif code < (1 << m):
            tiny = True  # below min_normal at the coarser subnormal quantum
        elif mode in STOCHASTIC:
            tiny = False  # delivered result is min_normal (see rule 5)
        elif e < emin - 1:
            tiny = True  # full precision cannot carry from below min_normal/2
        else:
            # The result is the smallest normal, reached by rounding up from
            # [min_normal/2, min_normal).  It is tiny after rounding unless
            # rounding to full precision (finer than the subnormal quantum)
            # also reaches min_normal.
            full, _ = quantize(num, 1, exp, e - m, negative, mode, rand, key[5])
            tiny = full < (1 << (m + 1))
        if tiny:
            if key[2] and subnormals:  # ftz (formats without subnormals have no zero)
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


def _overflow(fmt: Format, negative: bool, mode: Rounding, saturate: Any,
              rules: Any = None) -> int:
    """The code of a finite result beyond ±max (rule 4; rule 7 for round to
    odd into a P3109 format under ``rules``)."""
    if mode is _RUP:
        to_inf = not negative
    elif mode is _RDN:
        to_inf = negative
    elif mode is _RTO:
        # P3109 (v4.0 §4.7.5; release 3 has no round to odd, v4.0's rule
        # serves): under SatNone, round to odd beyond the largest value of a
        # signed extended format is ±inf (±max elsewhere; v3.2.1: +inf in an
        # unsigned extended format too)
        to_inf = (saturate is _SAT_NONE and p3109_applies(fmt, rules)
                  and (fmt.signed or rules is _V3_2_1))
    else:
        to_inf = mode is not _RTZ
    sign = fmt.sign_bit if negative else 0
    if not to_inf or saturate is True or saturate is _SAT_PROPAGATE:
        return sign | fmt.max_code
    if fmt.has_inf:
        return sign | fmt.inf_code  # type: ignore[operator]
    if fmt.has_nan and saturate is False:
        return nan_code(fmt, negative)
    return sign | fmt.max_code  # OvfInf, or a format without NaN


def infinity_code(fmt: Format, negative: bool, saturate: Any,
                  computed: int = 0, rules: Any = P3109.V4_0) -> tuple[int, int]:
    """The code and flags that an infinity of the given sign gives in
    ``fmt``: an infinite operand converted (``computed`` 0) or an exact
    infinite result of finite operands (``computed``: the flag of the
    operation that made it, DIVIDE_BY_ZERO for x/0).

    ``saturate=True`` (SatFinite) gives ±max; ``False`` gives ±inf, or NaN
    in a format without infinity (±max in one without NaN either);
    SatPropagate and OvfInf give ±inf, or ±max in a format without infinity.
    An infinity delivered raises ``computed`` alone; one that cannot stay
    infinite raises ``computed`` or, for an operand (as a float -> int
    conversion), INVALID.  -inf in an unsigned format is the NaN with
    INVALID, as any negative result there, except in a P3109 format under
    P3109 ``rules`` (rule 7): SatFinite and SatPropagate give 0 there.

    >>> from fpsim.formats import E4M3, FP16
    >>> infinity_code(E4M3, False, False), infinity_code(E4M3, False, Saturation.OVF_INF)
    ((127, 1), (126, 1))
    >>> infinity_code(FP16, True, Saturation.SAT_PROPAGATE), infinity_code(FP16, True, True, 2)
    ((64512, 0), (64511, 2))
    """
    if negative and not fmt.signed:
        # P3109: SatFinite gives the lower bound 0; so does SatPropagate in
        # v4.0 and v3.2.1 (release 3 leaves -inf there, which no unsigned code
        # holds), and v3.2.1's third mode
        if p3109_applies(fmt, rules) and (
                saturate is True or saturate is _SAT_PROPAGATE and rules is not _RELEASE_3
                or rules is _V3_2_1):
            return 0, computed or INVALID
        return nan_or_error(fmt, negative, "-inf"), INVALID
    sign = fmt.sign_bit if negative else 0
    if fmt.has_inf and saturate is not True:
        return sign | fmt.inf_code, computed  # type: ignore[operator]
    flags = computed or INVALID
    if saturate is not False or not fmt.has_nan:
        return sign | fmt.max_code, flags
    return nan_code(fmt, negative), flags


_SAT_PROPAGATE = Saturation.SAT_PROPAGATE
_SAT_NONE = Saturation.SAT_NONE
_IEEE_RULES, _RELEASE_3, _V3_2_1 = P3109.IEEE, P3109.RELEASE_3, P3109.V3_2_1


def p3109_applies(fmt: Format, rules: Any) -> bool:
    """Whether rule 7 (IEEE P3109's rules, of the text ``rules``: a
    context's ``p3109`` setting, None for none) governs results in ``fmt``."""
    return fmt.p3109 and rules is not None and rules is not _IEEE_RULES


def mirrored(mode: Rounding) -> Rounding:
    """The mode that rounds a magnitude as ``mode`` rounds the negative value
    of that magnitude (toward +inf and toward -inf swap)."""
    return _RDN if mode is _RUP else _RUP if mode is _RDN else mode


def clamps_negative(mode: Rounding, saturate: Any, rules: Any) -> bool:
    """Under P3109 ``rules``, whether a negative value that does not round to
    0 becomes an unsigned format's lower bound 0 (else the NaN): under
    SatFinite and SatPropagate, under the third mode where ``mode`` rounds
    toward zero or +inf (v4.0 §4.7.5 l.42), and in every mode in release 3
    and v3.2.1."""
    return (saturate is True or saturate is _SAT_PROPAGATE or mode is _RTZ or mode is _RUP
            or rules is _RELEASE_3 or rules is _V3_2_1)


def _negative_unsigned(fmt: Format, num: int, exp: int, key: tuple[Any, ...],
                       rand: int) -> tuple[int, int]:
    """A negative nonzero value ``num × 2**exp`` into an unsigned P3109
    format under P3109 rules (rule 7): rounded first, as the magnitude of a
    negative value is (toward positive is toward zero there); a result of
    0 is 0, in every saturation mode; a negative result is the lower bound 0
    under SatFinite and SatPropagate, and under SatNone (and ``False``) where
    the mode rounds toward zero or toward positive, else the NaN (INVALID);
    under release 3 and v3.2.1 0 in every mode.  0 for a negative value raises INEXACT
    (the value changed)."""
    code, flags = round_key(fmt, False, num, 1, exp, (mirrored(key[0]), *key[1:]), rand)
    if code == 0:
        return 0, flags
    if clamps_negative(key[0], key[1], key[7]):
        return 0, INEXACT
    return nan_code(fmt, True), INVALID


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
