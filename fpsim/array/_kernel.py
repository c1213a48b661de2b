"""The rounding kernel on arrays: :func:`fpsim.rounding.round_exact` written
with numpy integer operations, step by step, for many values at once.

An exact value reaches it as ``(negative, sig, exp, sticky)``: the magnitude
is ``(sig + d) × 2**exp`` with ``d = 0`` where ``sticky`` is false and some
``0 < d < 1`` where it is true (the bits below ``sig`` that an operation
could not keep, only known to be nonzero).  ``sig`` is a uint64 below 2**62.
A sticky value rounds exactly as the scalar kernel rounds the exact value
provided ``sig`` holds at least ``precision + 1`` bits (the rounding position
then lies above ``sig``'s last bit, and the discarded part is a guard bit
plus a sticky bit), and, for stochastic rounding, ``precision + sr_bits``
bits (so that the ``sr_bits`` bits below the last place are all known).  The
operations in :mod:`fpsim.array._arith` guarantee that or fall back to the
scalar model.

The test suite proves every function here equal to the scalar kernel code for
code and flag for flag (exhaustively where the space is small).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..formats import Format, Specials
from ..modes import STOCHASTIC, Rounding
from ..nans import NanPolicy
from ..rounding import (
    INEXACT,
    INVALID,
    OVERFLOW,
    UNDERFLOW,
    _overflow,
    clamps_negative,
    mirrored,
    nan_code,
    nan_or_error,
    p3109_applies,
    stochastic_up,
)

I64 = np.int64
U64 = np.uint64
U8 = np.uint8


def specials(fmt: Format, codes: np.ndarray, mag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(is_nan, is_inf)`` of unsigned codes whose magnitudes (sign bit
    cleared) are ``mag``: the format's special-code rule, vectorized."""
    dt = codes.dtype.type
    if fmt.specials is Specials.IEEE:
        return mag > dt(fmt.inf_code), mag == dt(fmt.inf_code)
    # (P3109's extended formats: the largest magnitude below the NaN is inf)
    no_inf = mag == dt(fmt.inf_code) if fmt.has_inf else np.zeros(codes.shape, bool)
    if fmt.specials is Specials.FN:
        return mag == dt(fmt.magnitude_mask), no_inf
    if fmt.specials is Specials.FNUZ:
        return codes == dt(fmt.sign_bit), no_inf
    return np.zeros(codes.shape, bool), no_inf


def fields(fmt: Format, codes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorized :func:`fpsim.value._decode` of uint64 codes:
    ``(is_nan, is_inf, negative, sig, exp)`` with ``|value| = sig × 2**exp``."""
    m = fmt.mantissa_bits
    sign = U64(fmt.sign_bit)
    mag = codes & U64(fmt.magnitude_mask)
    negative = (codes & sign) != 0
    is_nan, is_inf = specials(fmt, codes, mag)
    e_field = (mag >> U64(m)).astype(I64)
    frac = mag & U64((1 << m) - 1)
    if fmt.subnormals:
        sub = e_field == 0
        sig = np.where(sub, frac, frac | U64(1 << m))
        exp = np.where(sub, fmt.emin - m, e_field - fmt.bias - m)
    else:
        sig = frac | U64(1 << m)
        exp = e_field - fmt.bias - m
    return is_nan, is_inf, negative, sig, exp.astype(I64)


def is_signaling(fmt: Format, codes: np.ndarray, is_nan: np.ndarray) -> np.ndarray:
    """Which NaN codes are signaling (IEEE-style formats: quiet bit clear)."""
    if fmt.specials is not Specials.IEEE:
        return np.zeros(codes.shape, bool)
    return is_nan & ((codes >> U64(fmt.mantissa_bits - 1)) & U64(1) == 0)


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bit lengths of uint64 values below 2**63, as int64."""
    # float64 may round a value above 2**53 up to the next power of two;
    # one comparison corrects that.
    n = np.frexp(x.astype(np.float64))[1].astype(I64)
    over = (n > 0) & (x < (U64(1) << np.clip(n - 1, 0, 63).astype(U64)))
    return n - over


def _quantize(sig: np.ndarray, exp: np.ndarray, q: np.ndarray, negative: np.ndarray,
              sticky: np.ndarray | None, mode: Rounding, rand: np.ndarray | None,
              sr_bits: int, parity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`fpsim.rounding.quantize`: the multiple of ``2**q``
    (as int64) and whether it is inexact.  ``parity`` (0 or 1 per lane, or
    None for 0) offsets the parity that ties to even and round to odd read."""
    shift = q - exp
    if shift.size and shift.min() > 0 and shift.max() < 64:
        # The common case (every shift drops bits and keeps some): no clamps.
        right = shift.astype(U64)
        kept = sig >> right
        rem = sig & ((U64(1) << right) - U64(1))
        half = U64(1) << (right - U64(1))
    else:
        left = np.clip(-shift, 0, 62)
        right = np.clip(shift, 0, 63)
        kept = np.where(shift <= 0, sig << left.astype(U64), sig >> right.astype(U64))
        # The remainder below the kept bits; a shift of 64 or more keeps nothing.
        mask = np.where(shift >= 64, ~U64(0), (U64(1) << right.astype(U64)) - U64(1))
        kept = np.where(shift >= 64, U64(0), kept)
        rem = np.where(shift > 0, sig & mask, U64(0))
        half = np.where(shift >= 64, ~U64(0), U64(1) << np.clip(shift - 1, 0, 63).astype(U64))
    inexact = rem != 0
    # (A shift of 64 or more leaves rem = sig < 2**62, below half = 2**64 - 1:
    # neither at half nor above.)
    at_half = rem == half
    above = rem > half
    if sticky is not None:
        inexact |= sticky
        above |= at_half & sticky
        at_half &= ~sticky
    tie = at_half & inexact
    odd = kept & U64(1) if parity is None else (kept + parity.astype(U64)) & U64(1)
    if mode is Rounding.RNE:
        up = above | (tie & (odd == 1))
    elif mode is Rounding.RNA:
        up = above | tie
    elif mode is Rounding.RTZ:
        up = np.zeros(sig.shape, bool)
    elif mode is Rounding.RUP:
        up = ~negative
    elif mode is Rounding.RDN:
        up = negative.copy()
    elif mode is Rounding.RTO:
        up = odd == 0
    elif mode is Rounding.RAZ:
        up = np.ones(sig.shape, bool)
    else:  # stochastic (fpsim.rounding.stochastic_up)
        assert rand is not None
        up = _stochastic_up(mode, rem, shift, sticky, rand, sr_bits)
    up &= inexact
    return kept.astype(I64) + up.astype(I64), inexact


def _stochastic_up(mode: Rounding, rem: np.ndarray, shift: np.ndarray,
                   sticky: np.ndarray | None, rand: np.ndarray, sr_bits: int) -> np.ndarray:
    """Vectorized :func:`fpsim.rounding.stochastic_up` of the discarded bits
    ``rem`` (below a last place ``shift`` bits up; ``sticky`` marks more
    nonzero bits below them).  The callers carry ``sr_bits + 1`` bits below
    the format's precision wherever ``sticky`` may be set, so the floors
    below are exact."""
    r = sr_bits
    rand = rand.astype(U64, copy=False)
    if mode is Rounding.SR:  # floor(frac × 2**R) + rand >= 2**R
        down_shift = shift - r  # frac_bits = rem >> (shift - R), or rem << (R - shift)
        frac_bits = np.where(
            down_shift >= 0,
            np.where(down_shift >= 64, U64(0), rem >> np.clip(down_shift, 0, 63).astype(U64)),
            rem << np.clip(-down_shift, 0, 63).astype(U64))
        full = U64((1 << r) - 1)
        return (frac_bits != 0) & (rand >= (full - frac_bits + U64(1)))
    if r > 61:  # floor(frac × 2**(R+1)) would not fit: Python integers, lane by lane
        return _stochastic_up_exact(mode, rem, shift, sticky, rand, r)
    # floor(frac × 2**(R+1)) (below 2**62) and whether bits follow
    down_shift = shift - (r + 1)
    right = np.clip(down_shift, 0, 63).astype(U64)
    frac1 = np.where(down_shift >= 0,
                     np.where(down_shift >= 64, U64(0), rem >> right),
                     rem << np.clip(-down_shift, 0, 63).astype(U64))
    if mode is Rounding.SR_B:
        # floor(frac × 2**(R+1)) + 2·rand + 1 >= 2**(R+1), halved:
        # frac1 // 2 + rand + (frac1 & 1) >= 2**R  (2·rand + 1 + frac1 odd/even)
        half, odd = frac1 >> U64(1), frac1 & U64(1)
        return half + odd >= U64(1 << r) - rand
    # StochasticC: RNE(frac × 2**R) + rand >= 2**R, which reads the bits below
    low_bits = np.where(down_shift >= 64, rem, rem & ((U64(1) << right) - U64(1)))
    below = (down_shift > 0) & (low_bits != 0)
    if sticky is not None:
        below = below | sticky
    t = frac1 >> U64(1)
    up_t = ((frac1 & U64(1)) == 1) & (below | ((t & U64(1)) == 1))
    return t + up_t.astype(U64) >= U64(1 << r) - rand


def _stochastic_up_exact(mode: Rounding, rem: np.ndarray, shift: np.ndarray,
                         sticky: np.ndarray | None, rand: np.ndarray, r: int) -> np.ndarray:
    """:func:`_stochastic_up` for ``sr_bits`` above 61, with Python integers."""
    out = np.zeros(rem.shape, bool)
    for i in range(rem.size):
        rm, sh = int(rem.flat[i]), int(shift.flat[i])
        if sh <= 0 or not rm:
            continue  # nothing discarded (up is masked by inexact anyway)
        if sh >= r + 1:
            frac1, below = rm >> (sh - r - 1), bool(rm & ((1 << (sh - r - 1)) - 1))
        else:
            frac1, below = rm << (r + 1 - sh), False
        below |= bool(sticky is not None and sticky.flat[i])
        out.flat[i] = stochastic_up(mode, frac1, below, int(rand.flat[i]), r)
    return out


def round_finite(fmt: Format, negative: np.ndarray, sig: np.ndarray, exp: np.ndarray,
                 sticky: np.ndarray | None, mode: Rounding, saturate: bool, ftz: bool,
                 before: bool, rand: np.ndarray | None, sr_bits: int, rules: Any = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`fpsim.rounding.round_exact` for nonzero ``sig``:
    ``(codes as uint64, flags as uint8)``."""
    _, m, _, base, max_code, sign_bit, general = fmt._kernel
    emin, subnormals, negative_zero, qmin, parity_base = general
    offset = base - (qmin << m)  # codes as (q - qmin) << m + kept - offset: no negative lanes
    e = exp + bit_length(sig) - 1
    high = e > fmt.emax
    if high.any():
        # Every value of 2**(emax + 1) or more overflows alike in every mode;
        # as that power of two its code below stays within int64 (FP64's
        # products reach 2**2047, and a value just below 2**1025 rounds up to
        # a code of 2**63: neither would).
        sig = np.where(high, U64(1 << 61), sig)
        exp = np.where(high, fmt.emax + 1 - 61, exp)
        e = np.where(high, fmt.emax + 1, e)
        if sticky is not None:
            sticky = sticky & ~high
    low = e < emin
    any_low = bool(low.any())  # otherwise nothing is tiny: the steps below are skipped
    q = np.where(low, qmin, e - m) if subnormals and any_low else e - m
    parity = None if parity_base is None else (q - parity_base) & 1
    kept, inexact = _quantize(sig, exp, q, negative, sticky, mode, rand, sr_bits, parity)
    code = ((q - qmin) << m) + kept - offset
    flags = np.where(inexact, INEXACT, 0).astype(U8)

    if any_low:
        if before:
            tiny = low
        elif not subnormals:
            tiny = low & (code < 0)
        else:
            tiny = low & (code < (1 << m))
            if mode not in STOCHASTIC:
                tiny |= low & (e < emin - 1)
                edge = low & (e == emin - 1) & (code >= (1 << m))
                if edge.any():
                    full, _ = _quantize(sig, exp, e - m, negative, sticky, mode, rand, sr_bits)
                    tiny |= edge & (full < (1 << (m + 1)))
        if not subnormals:
            clamp = tiny & (code < 0)
            code = np.where(clamp, 0, code)
            flags = np.where(clamp, INEXACT, flags)
        flags = np.where(tiny & (flags != 0), flags | UNDERFLOW, flags).astype(U8)
        if ftz and subnormals:
            code = np.where(tiny, 0, code)
            flags = np.where(tiny, UNDERFLOW | INEXACT, flags).astype(U8)

    over = code > max_code
    if over.any():
        code = np.where(over, _overflow_codes(fmt, negative, mode, saturate, rules), code)
        flags = np.where(over, OVERFLOW | INEXACT, flags).astype(U8)
    signed = np.where(code == 0, negative_zero, sign_bit)
    # Overflow codes already carry their sign (NaN codes may have no sign bit).
    code = np.where(negative & ~over, code | signed, code)
    return code.astype(U64), flags


def _overflow_codes(fmt: Format, negative: np.ndarray, mode: Rounding,
                    saturate: bool, rules: Any = None) -> np.ndarray:
    pos = _overflow(fmt, False, mode, saturate, rules)
    neg = _overflow(fmt, True, mode, saturate, rules)
    return np.where(negative, neg, pos).astype(I64)


def round_values(fmt: Format, negative: np.ndarray, sig: np.ndarray, exp: np.ndarray,
                 sticky: np.ndarray | None, key: tuple[Any, ...], rand: np.ndarray | None,
                 out: np.ndarray, flags: np.ndarray, where: np.ndarray) -> None:
    """Round the exact values selected by ``where`` (zeros included) into
    ``out`` and ``flags``, as :func:`fpsim.rounding.round_exact` would."""
    mode, saturate, ftz, _daz, before, sr_bits, _nan, rules = key
    zero = where & (sig == 0)
    if zero.any():
        if fmt.has_zero:
            zcode = np.where(negative & fmt.has_negative_zero, U64(fmt.sign_bit), U64(0))
            out[zero] = np.broadcast_to(zcode, zero.shape)[zero]
            flags[zero] = 0
        else:  # a format without zero (E8M0): NaN and INVALID
            zcode = np.where(negative, U64(nan_or_error(fmt, True, "zero")),
                             U64(nan_or_error(fmt, False, "zero")))
            out[zero] = np.broadcast_to(zcode, zero.shape)[zero]
            flags[zero] = INVALID
    nonzero = where & (sig != 0)
    if not fmt.signed:
        bad = nonzero & negative
        if bad.any():
            if p3109_applies(fmt, rules):
                _negative_unsigned(fmt, sig, exp, sticky, key, rand, out, flags, bad)
            else:
                out[bad] = nan_or_error(fmt, False, "a negative value")
                flags[bad] = INVALID
            nonzero &= ~bad
    if nonzero.all():
        c, f = round_finite(fmt, negative, sig, exp, sticky, mode, saturate, ftz, before,
                            rand, sr_bits, rules)
        out[...] = c
        flags[...] = f
    elif nonzero.any():
        idx = np.nonzero(nonzero)[0]
        c, f = round_finite(fmt, negative[idx], sig[idx], exp[idx],
                            None if sticky is None else sticky[idx], mode, saturate, ftz,
                            before, None if rand is None else rand[idx], sr_bits, rules)
        out[idx] = c
        flags[idx] = f


def _negative_unsigned(fmt: Format, sig: np.ndarray, exp: np.ndarray,
                       sticky: np.ndarray | None, key: tuple[Any, ...],
                       rand: np.ndarray | None, out: np.ndarray, flags: np.ndarray,
                       bad: np.ndarray) -> None:
    """Vectorized :func:`fpsim.rounding._negative_unsigned`: the negative
    nonzero values selected by ``bad`` into an unsigned P3109 format."""
    mode, saturate, ftz, _daz, before, sr_bits = key[:6]
    idx = np.nonzero(bad)[0]
    c, f = round_finite(fmt, np.zeros(idx.size, bool), sig[idx], exp[idx],
                        None if sticky is None else sticky[idx], mirrored(mode), saturate, ftz,
                        before, None if rand is None else rand[idx], sr_bits, key[7])
    clamp = clamps_negative(mode, saturate, key[7])
    zero = c == 0
    out[idx] = np.where(zero | clamp, U64(0), U64(nan_code(fmt, True)))
    flags[idx] = np.where(zero, f, INEXACT if clamp else INVALID)


def nan_results(fmt: Format, operands: list[np.ndarray], nans: list[np.ndarray],
                pol: NanPolicy) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`fpsim.nans.propagate`: the NaN result of elements
    with at least one NaN operand (``operands`` are uint64 codes in operand
    order, ``nans`` their NaN masks), and INVALID where one is signaling."""
    signaling = [is_signaling(fmt, c, n) for c, n in zip(operands, nans)]
    any_signaling = np.logical_or.reduce(signaling)
    flags = np.where(any_signaling, INVALID, 0).astype(U8)
    if not pol.propagate:
        return np.full(operands[0].shape, nan_code(fmt, pol.default_negative), U64), flags
    # The chosen operand: the first NaN, or under prefer_signaling the first
    # signaling NaN where there is one.  Walk the operands last to first so
    # that earlier ones win.
    chosen = np.zeros(operands[0].shape, U64)
    for c, n in zip(reversed(operands), reversed(nans)):
        chosen = np.where(n, c, chosen)
    if pol.prefer_signaling:
        for c, s in zip(reversed(operands), reversed(signaling)):
            chosen = np.where(s & any_signaling, c, chosen)
    negative = (chosen & U64(fmt.sign_bit)) != 0
    code = np.where(negative, U64(nan_code(fmt, True)), U64(nan_code(fmt, False)))
    if fmt.specials is Specials.IEEE:  # the payload below the quiet bit carries
        code |= chosen & U64((1 << (fmt.mantissa_bits - 1)) - 1)
    return code, flags
