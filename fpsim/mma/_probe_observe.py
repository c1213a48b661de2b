"""Which parameters some input can tell apart: :func:`observable` (what the
probes compare a finding with the presets by)."""

from __future__ import annotations

from typing import Any

from ..formats import Format
from .params import MMAParams

__all__ = ["observable", "zero_sign_observable"]

def _c_min_exponent(fout: Format) -> int:
    """Exponent of the smallest nonzero ``c`` as the unit reads it (FP32's
    floor of -126 applies)."""
    return max(fout.emin - fout.mantissa_bits, -126)


def _align_floor(p: MMAParams) -> int:
    """The largest ``min_align_exponent`` that no input can tell from None:
    a bound has an effect only on a row whose terms are all below it and
    one of which has a bit below the grid it sets (products: exponents from
    twice the input's ``emin``, bits from twice its smallest subnormal's;
    ``c``: exponent from -126, or FP16's smallest subnormal, bits from the
    output's smallest subnormal), and only where the result's bits reach the
    output (its smallest subnormal, or smallest normal without subnormals)."""
    fin, fout = p.input_format, p.output_format
    F = p.fraction_bits
    products = max(2 * fin.emin, 2 * (fin.emin - fin.mantissa_bits) + F)
    c = max(_c_min_exponent(fout), fout.emin - fout.mantissa_bits + F)
    vis = fout.emin - fout.mantissa_bits + 1 if p.output_subnormals else fout.emin
    return max(vis, min(products, c))


def zero_sign_observable(p: MMAParams) -> bool:
    """Whether a row can show ``zero_sign``: one negative product (alone,
    ``c = 0``, in the last block of a chain) that the unit keeps through its
    alignment and then rounds to zero.  Looked for only where ``c`` joins
    first in an aligned sum (the probe's zero-sign rows are of this kind)."""
    if p.accumulation != "aligned" or p.c_joins != "first":
        return False

    def lowest(f: Format) -> int:
        return f.emin - (f.mantissa_bits if p.input_subnormals else 0)

    j = lowest(p.input_format) + lowest(p.input_b_format)   # the smallest product's exponent
    if p.min_align_exponent is not None:
        j = max(j, p.min_align_exponent - p.fraction_bits)   # kept by the grid
    # rounds to zero by every rounding: below half the smallest output value
    fout = p.output_format
    return j <= fout.emin - (fout.mantissa_bits if p.output_subnormals else 0) - 2


def observable(params: MMAParams) -> dict[str, Any]:
    """The parameters that some input can tell apart, in canonical form.

    Two parameter sets with equal ``observable`` dicts give the same output
    on every input the formats can express (as far as the probes know).
    Left out, and why:

    * ``extra_bits``, ``sticky_bit``, ``normalize_products``,
      ``min_align_exponent``: only for ``aligned`` and ``odd_even``.
    * ``c_joins``: not for ``exact`` (the sum is exact either way); fixed for
      ``odd_even`` and ``pairwise``.
    * ``late_extra_bits``, ``align_rounding``, ``c_dropped_below``,
      ``normalized_bits``: only when ``c`` joins late (``c_joins="last"``
      with ``aligned``, or ``odd_even``).
    * ``min_align_exponent``: ``None`` when no row can have all its terms
      below it with a visible effect: all terms below it, one with a bit
      below the grid it sets, and bits that reach the output (the rule is
      ``_align_floor``).  FP16 and FP8 inputs with FP32 output never see
      Hopper's -133; BF16 and TF32 inputs do, and so do FP16 inputs with
      FP16 output Blackwell's -15.
    * ``zero_c_at_emin``: only with a late join and inputs whose products
      can be below ``2**-126`` (BF16, TF32), and not where the normalized
      cut subsumes it (``_zero_c_subsumed``: MI300X after MMA-Sim).
    * ``products_limited``: only when a product can reach
      ``2**(emax + 1)`` of the output, and not for ``pairwise`` (whose
      products are rounded to the output first, which overflows the same
      way).
    * ``result_bits``: ``None`` when it is the output's own width.
    * ``zero_sign``: only where a nonzero sum can round to zero
      (``zero_sign_observable`` in this module).

    ``nan`` is always observable (``inf × 0``, or a NaN operand, gives it).

    >>> import fpsim.mma as mma
    >>> o = observable(mma.preset("h100", "fp16").params)
    >>> o["min_align_exponent"], o["extra_bits"]
    (None, 2)
    >>> observable(mma.preset("h100", "bf16").params)["min_align_exponent"]
    -133
    """
    p = params
    fin, fout = p.input_format, p.output_format
    out: dict[str, Any] = {
        "input": p.input, "input_b": p.input_b, "output": p.output, "k": p.k,
        "issue_k": p.issue_k, "accumulation": p.accumulation,
        "rounding": p.rounding, "input_subnormals": p.input_subnormals,
        "output_subnormals": p.output_subnormals, "nan": p.nan,
    }
    aligns = p.accumulation in ("aligned", "odd_even")
    late = (p.accumulation == "aligned" and p.c_joins == "last") or p.accumulation == "odd_even"
    if aligns:
        out["extra_bits"] = p.extra_bits
        out["sticky_bit"] = p.sticky_bit
        out["normalize_products"] = p.normalize_products
        m = p.min_align_exponent
        out["min_align_exponent"] = m if m is not None and m > _align_floor(p) else None
    if p.accumulation == "aligned":
        out["c_joins"] = p.c_joins
    if late:
        out["late_extra_bits"] = p.late_extra_bits
        out["align_rounding"] = p.align_rounding
        out["c_dropped_below"] = p.c_dropped_below
        out["normalized_bits"] = p.normalized_bits
        if 2 * fin.emin < -126 and not _zero_c_subsumed(p):
            out["zero_c_at_emin"] = p.zero_c_at_emin
    if p.accumulation != "pairwise" and 2 * fin.emax + 2 > fout.emax + 1:
        out["products_limited"] = p.products_limited
    if p.accumulation != "pairwise":
        r = p.result_bits
        out["result_bits"] = None if r is None or r >= fout.mantissa_bits else r
    if zero_sign_observable(p):
        out["zero_sign"] = p.zero_sign
    return out


def _zero_c_subsumed(p: MMAParams) -> bool:
    """Whether a zero ``c`` joined at ``2**-126`` changes nothing: a sum
    below ``2**-126`` aligned to that grid (``fraction_bits +
    late_extra_bits`` bits below it, by ``align_rounding``) is then cut
    again to ``normalized_bits`` below ``2**-126`` (the normalized
    register's exponent is at least -126) by the same directed rounding, and
    two floors (truncations, ceilings) to nested grids are the coarser one
    alone; a sum at or above ``2**-126`` is aligned to its own grid either
    way."""
    nb = p.normalized_bits
    return (nb is not None and p.align_rounding in ("rtz", "rdn", "rup")
            and nb <= p.fraction_bits + (p.late_extra_bits or 0))
