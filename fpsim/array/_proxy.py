"""Fast conversion of wide binary values through a round-to-odd proxy.

Rounding a value to odd at two bits more than a format's precision, and then
rounding that into the format by any deterministic mode, gives the format's
correctly rounded result (Boldo and Melquiond, "When double rounding is odd",
2005): a proxy value is odd exactly when the rounding was inexact, so it never
lands on a midpoint or a representable value of the coarser format unless the
exact value did.  The same holds for every flag: the proxy is representable
in the target exactly when the exact value is, on the same side of every
power of two (tininess), of the rounding boundaries (underflow) and of the
overflow threshold.

So a conversion of float32/float64 bits into a target format ``T`` with
``m`` fraction bits is a table lookup: each value is first rounded to odd
into a proxy format ``P`` (IEEE-style, ``m + 2`` fraction bits, an exponent
range reaching two binades past T's on both sides) with a few integer
operations, and the proxy code indexes a table of T's codes and flags for
every proxy code, built once per setting by the vectorized kernel.  Values
beyond P's range are clamped to a proxy value that T rounds the same way:
every nonzero value below ``T.min_subnormal / 2`` gives T the same result and
flags (P's smallest normal is ``T.min_subnormal / 4``), and every value above
``4 × 2**T.emax`` overflows T in every mode.

The proxy is built only when its table is small (at most 2**22 codes):
FP16, BF16, TF32 and the FP8/FP6/FP4 formats qualify, FP32 does not.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..formats import Format

__all__ = ["proxy_for", "proxy_index"]

_MAX_INDEX_BITS = 22


@cache
def proxy_for(target: Format) -> Format | None:
    """The round-to-odd proxy format of ``target``, or None where its table
    would be too large (or the target has no sign bit, as E8M0)."""
    if not target.signed or not target.has_zero:
        return None
    m = target.mantissa_bits + 2
    lo = target.emin - target.mantissa_bits - 2     # P's emin: below T.min_subnormal / 2
    hi = target.emax + 2                            # P's emax: overflows T in every mode
    e_bits = 1
    while (1 << e_bits) - 3 + lo < hi:
        e_bits += 1
    if 1 + e_bits + m > _MAX_INDEX_BITS:
        return None
    return Format(f"proxy-{target.name}", e_bits, m, 1 - lo)


def proxy_index(bits: np.ndarray, source: Format, proxy: Format, daz: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """Round the values with IEEE-style ``source`` codes ``bits`` (unsigned,
    of the source's width) to odd into ``proxy``: the proxy codes (in the
    same dtype), and a mask of the elements this cannot do exactly (source
    subnormals that land inside the proxy's range: rare; the caller converts
    them by the general path).

    The magnitude is first clamped into P's normal range: a value below it
    stands as P's smallest normal (T rounds every nonzero value below
    ``T.min_subnormal / 2`` alike), a finite value above it as P's largest
    finite value (T overflows on both).  Then, as exponent and fraction
    fields are contiguous, one shift drops the fraction bits P has not, the
    dropped bits OR into the last bit (round to odd), and one add rebiases
    the exponent.  Zeros, source subnormals, infinities and NaNs are patched."""
    ms, es = source.mantissa_bits, source.exponent_bits
    mp, ep_bits = proxy.mantissa_bits, proxy.exponent_bits
    dt = bits.dtype.type
    width = 8 * bits.dtype.itemsize
    shift = ms - mp
    delta = proxy.bias - source.bias
    top = (1 << ep_bits) - 1                       # P's infinity/NaN exponent field
    e_lo = max(1, 1 - delta)                       # source exponent fields P holds
    e_hi = min((1 << es) - 2, top - 1 - delta)
    mag = bits & dt((1 << (es + ms)) - 1)
    inf_mag = dt(((1 << es) - 1) << ms)
    special = mag >= inf_mag
    clamped = np.clip(mag, dt(e_lo << ms), dt(((e_hi + 1) << ms) - 1))
    index = (clamped >> dt(shift)) + dt((delta << mp) % (1 << width))
    index |= ((clamped & dt((1 << shift) - 1)) != 0).astype(dt)
    unsure = np.zeros(bits.shape, bool)
    small = mag < dt(1 << ms)                      # zeros and source subnormals
    if small.any():
        zero = mag == 0
        if daz:
            zero = small
        elif source.emin > proxy.emin:
            unsure = small & ~zero
        np.copyto(index, dt(0), where=zero)
    if special.any():
        # Infinities and NaNs keep P's top exponent and the fraction's top
        # bits with the sticky bit (a NaN stays a NaN, a signaling one too).
        frac = (mag & dt((1 << ms) - 1)) >> dt(shift)
        frac |= ((mag & dt((1 << shift) - 1)) != 0).astype(dt)
        np.copyto(index, dt(top << mp) | frac, where=special)
    index |= (bits >> dt(es + ms)) << dt(ep_bits + mp)
    return index, unsure


def nudge_toward(bits: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a binary ``s`` (as bits) and the exact error ``err`` of the sum it
    rounds (``s + err`` exact, ``|err| <= ulp(s)/2``, same dtype as ``s``):
    bits of the same type whose round-to-odd into any coarser format equals
    that of ``s + err``, and whether ``err`` was nonzero (to OR into the
    sticky bit).

    Truncation toward zero of ``s + err`` is that of ``s`` unless ``s`` lies
    on the coarser grid and ``err`` points toward zero; then it is that of
    the value just below ``s`` in magnitude, which is never on the grid."""
    # (err is NaN where s is infinite: no error then, the infinity is exact.)
    inexact = np.abs(err) > 0
    toward_zero = inexact & (np.signbit(err) != np.signbit(bits.view(err.dtype)))
    return bits - toward_zero.astype(bits.dtype), inexact
