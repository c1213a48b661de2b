"""The parameters of a block fused multiply-add: what a matrix unit does to
``a[0]*b[0] + ... + a[k-1]*b[k-1] + c``, in words a reader can check.

One :class:`MMAParams` describes one instruction of one GPU for one pair of
input and output formats.  The arithmetic that reads it is written once, in
``fpsim.mma.model``; the GPUs are rows of the table in
``fpsim.mma.presets``.

>>> p = MMAParams("fp16", "fp32", k=8, extra_bits=1)
>>> p.k, p.accumulation, p.rounding, p.c_joins
(8, 'aligned', 'rtz', 'first')
>>> p.replace(rounding="rne").rounding
'rne'
>>> hex(p.replace(nan="all_ones").nan_code())     # PTX's canonical NaN
'0x7fffffff'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..formats import Format
from ..formats import format as _lookup
from ..rounding import nan_code as _default_nan

__all__ = ["MMAParams", "ACCUMULATIONS", "ALIGN_FRACTION_BITS", "NAN_RULES", "ZERO_SIGNS",
           "nan_code"]

#: The alignment grid's baseline: a significand is held with this many bits
#: after the binary point of the largest exponent (FP32's 23), before
#: ``extra_bits`` are added.  Every published model uses FP32's width,
#: whatever the output format.
ALIGN_FRACTION_BITS = 23

#: The accumulation architectures.
ACCUMULATIONS = ("aligned", "odd_even", "pairwise", "exact")

#: The NaN rules: which code every NaN a unit writes has, in any format
#: (:func:`nan_code`).
NAN_RULES = ("all_ones", "quiet")
#: The values of ``MMAParams.zero_sign``.
ZERO_SIGNS = ("ieee", "positive")

_FINAL_ROUNDINGS = ("rtz", "rne", "rup", "rdn")
_ALIGN_ROUNDINGS = ("rtz", "rne", "rup", "rdn")

# Bounds that keep the unit's integers exact in int64 and in float64 (the
# unrounded result travels to the rounding kernel as a float64): a term is
# below 2**(25 + extra_bits + sticky) <= 2**34, a group of at most 257 terms
# below 2**43, a late join adds at most 8 bits: below 2**53.
_MAX_EXTRA_BITS = 8
_MAX_LATE_BITS = 8
_MAX_GROUP = 256


@dataclass(frozen=True)
class MMAParams:
    """The behaviour of one matrix instruction, ``d = a·b + c`` over ``k``
    products.

    Parameters
    ----------
    input:
        Format of ``a`` and ``b`` (a name fpsim knows: ``"fp16"``, ``"bf16"``,
        ``"tf32"``, ``"e4m3"``, ``"e5m2"``, ``"e4m3fnuz"``, ``"e5m2fnuz"``).
        With ``input_b``, the format of ``a`` alone.
    output:
        Format of ``c`` and ``d`` (``"fp32"`` or ``"fp16"``).
    k:
        Products of one block FMA: all of them are aligned together and
        normalized once.  A call with fewer products is padded with zeros at
        the end; more is an error unless the call asks for chaining (or
        ``issue_k`` allows them).
    input_b:
        Format of ``b`` where it differs from ``a``'s (mixed FP8:
        ``input="e4m3", input_b="e5m2"``, the GEMM of a backward pass).
        ``None``: ``b`` is of ``input``.
    issue_k:
        Products of the instruction as it is issued, where one instruction
        is several block FMAs chained inside the unit (Ada's FP8
        ``mma.m16n8k32`` is two blocks of 16): a multiple of ``k``.  A call
        with at most ``issue_k`` products chains its blocks of ``k`` without
        asking.  ``None``: the instruction is one block, ``issue_k = k``.
    accumulation:
        How the products are summed.

        ``"aligned"`` (NVIDIA, AMD CDNA3 FP16/BF16/TF32): every product (and
        ``c`` when it joins first) is aligned to the largest exponent and cut
        to ``23 + extra_bits`` bits below it; the integers are added exactly
        (no carry is ever lost) and the sum is normalized and rounded once.

        ``"odd_even"`` (AMD CDNA3 FP8): the products at even positions
        (0, 2, 4, ...) and at odd positions are each aligned and summed as
        above, to their own largest exponent; the smaller of the two sums is
        then shifted to the larger one's exponent (``align_rounding``) and
        added, and ``c`` joins last.

        ``"pairwise"`` (AMD CDNA2): every product is rounded to the output
        format (nearest even), the products are summed as a balanced binary
        tree of additions, ``(p0+p1)+(p2+p3)``, each rounded to the output
        format by ``rounding``, and ``c`` is added to the tree's sum last.

        ``"exact"`` (AMD CDNA1): the exact sum of the products and ``c``,
        rounded once by ``rounding``.
    extra_bits:
        Alignment bits kept beyond the baseline 23 below the largest exponent
        (``"aligned"``, ``"odd_even"``); bits below them are dropped
        (truncated toward zero, term by term).  Negative values keep fewer
        bits: ``-10`` leaves 13 (Hopper and Ada FP8).  ``None`` for
        ``"pairwise"`` and ``"exact"``, which do not align.
    sticky_bit:
        Keep one more bit per aligned term, set when any bit was dropped
        below the grid (so that the final rounding sees it).  No published
        preset uses it.
    c_joins:
        Where ``c`` enters an ``"aligned"`` sum.  ``"first"``: aligned with
        the products, as one more term.  ``"last"``: the products are summed
        first (unnormalized), then that sum and ``c`` are aligned to the
        larger of their two exponents and added, the smaller shifted by
        ``align_rounding``; when ``c`` is the larger, both gain
        ``late_extra_bits`` bits first.  ``"odd_even"`` always adds ``c``
        last; ``"pairwise"`` adds it after the tree.
    late_extra_bits:
        Bits both operands gain when ``c`` (or, in ``"odd_even"``, the second
        partial sum) has the larger exponent in a two-operand late
        alignment (7 in CDNA3, where the sum of products is aligned into a
        wider register).
    align_rounding:
        How the two-operand late alignment drops bits of the smaller operand:
        ``"rtz"`` (truncate the magnitude), ``"rdn"`` (toward -inf), ``"rup"``
        (toward +inf) or ``"rne"``.  The multi-term alignment always
        truncates.
    c_dropped_below:
        In a late join (``c_joins="last"``, ``"odd_even"``): a ``c`` whose
        exponent lies more than this many binades below the sum of
        products' takes no part: it adds zero where ``align_rounding``
        would have cut it (toward -inf, a negative ``c`` far below would
        still take one unit of the grid off the sum).  25 in CDNA3 FP8
        (MMA-Sim's ``gtr_fdpa``: ``e_c < e_max - F - 1`` with ``F = 24``;
        the MATLAB-tensor-core model's ``exp_check``: ``max_exp_2 <
        max_exp - 25``).  ``None``: ``c`` is always cut by
        ``align_rounding``.
    normalized_bits:
        In a late join: the sum of ``c`` and the products, normalized (its
        leading bit's exponent, at least FP32's -126), keeps this many
        fraction bits, the rest cut by ``align_rounding``, before the final
        ``rounding`` (MMA-Sim's CDNA3 models: ``F2 = 31``, toward -inf, the
        late register then holding ``late_extra_bits=8``, 32 bits below
        ``c``'s exponent).  ``None``: the exact sum is rounded.
    normalize_products:
        ``False`` (every published preset): a product of two significands in
        [1, 2) stays in [1, 4) with exponent ``ea + eb``, so the largest
        exponent is that of the operands and a product at or above 2 keeps
        one bit more.  ``True``: products at or above 2 are renormalized to
        [1, 2) (exponent + 1) before the largest exponent is taken.
    min_align_exponent:
        Lower bound on the alignment exponent: when every term is below
        ``2**min_align_exponent`` the grid is still cut ``23 + extra_bits``
        bits below it (Hopper and Blackwell: -133; Blackwell FP16 output:
        -15).  ``None``: no bound.
    zero_c_at_emin:
        In a late join (``c_joins="last"`` or ``"odd_even"``), a zero ``c``
        takes part in the alignment with FP32's smallest exponent, -126, so a
        tiny sum of products is shifted to 2**-126 (CDNA3).  ``False``: a zero
        ``c`` is ignored.  A nonzero ``c`` below 2**-126 always has exponent
        -126.
    products_limited:
        A product at or beyond the output format's overflow threshold
        (``2**(emax + 1)``: 2**128 for FP32) makes the result infinite, or
        NaN when such products have both signs (CDNA2 and CDNA3).
    rounding:
        The one rounding of the normalized result to the output format:
        ``"rtz"`` (NVIDIA FP32 output), ``"rne"`` (FP16 output, AMD),
        ``"rup"``, ``"rdn"``.  Overflow always gives an infinity, in every
        mode, as the hardware does.
    result_bits:
        Fraction bits the result keeps before it is stored in the output
        format (Hopper and Ada FP8 keep 13, so the low 10 bits of an FP32
        result are zero).  ``None``: the output format's own.
    input_subnormals:
        ``False`` flushes subnormal inputs ``a``, ``b`` to zero first.
    output_subnormals:
        ``False`` flushes a subnormal ``c`` to zero before the sum and a
        subnormal result (and, in ``"pairwise"``, every subnormal product and
        partial sum) to zero after rounding.
    nan:
        The code of every NaN the unit writes (a NaN ``a``, ``b`` or ``c``,
        ``inf × 0``, infinities of both signs, products limited with both
        signs), as a rule that gives one code per format (``nan_code(fmt)``);
        no NaN's sign or payload carries through.  ``"all_ones"``: positive,
        every exponent and fraction bit set, FP32 ``0x7FFFFFFF``, FP16 and
        BF16 ``0x7FFF`` (PTX's canonical NaN: every NVIDIA preset, and the
        FP32 steps and conversions of their library schedules).
        ``"quiet"``: positive, the quiet bit alone, FP32 ``0x7FC00000``,
        FP16 ``0x7E00``, BF16 ``0x7FC0`` (IEEE 754's usual default NaN: the
        AMD presets, not measured on an AMD GPU).  Formats with a single NaN
        (E4M3 ``S.1111.111``, the FNUZ ``0x80``) have it under both rules.
    zero_sign:
        The sign of a zero result.  ``"ieee"``: an exact zero sum is +0 (a
        sum of zeros that are all -0 is -0), and a nonzero result cut or
        rounded to zero keeps its sign, -0 for a negative one.
        ``"positive"``: every zero the unit writes is +0, a block's result
        passed on as the next block's ``c`` included (MMA-Sim 2.1.1's NVIDIA
        models: ``t_fdpa`` ends in ``+ 0.0``, "-0.0 to +0.0"; every NVIDIA
        preset; no recorded GPU row has a zero output).
    """

    input: str
    output: str
    k: int
    accumulation: str = "aligned"
    input_b: str | None = None
    issue_k: int | None = None
    extra_bits: int | None = 0
    sticky_bit: bool = False
    c_joins: str = "first"
    late_extra_bits: int = 0
    align_rounding: str = "rtz"
    c_dropped_below: int | None = None
    normalized_bits: int | None = None
    normalize_products: bool = False
    min_align_exponent: int | None = None
    zero_c_at_emin: bool = False
    products_limited: bool = False
    rounding: str = "rtz"
    result_bits: int | None = None
    input_subnormals: bool = True
    output_subnormals: bool = True
    nan: str = "quiet"
    zero_sign: str = "ieee"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "input", _format_name(self.input, "input"))
        if self.input_b is not None:
            b = _format_name(self.input_b, "input_b")
            set_(self, "input_b", None if b == self.input else b)
        set_(self, "output", _format_name(self.output, "output"))
        _check(self)

    @property
    def input_format(self) -> Format:
        """The :class:`~fpsim.Format` of ``a`` and ``b``."""
        return _lookup(self.input)

    @property
    def input_b_format(self) -> Format:
        """The :class:`~fpsim.Format` of ``b`` (``input_b``, else ``input``)."""
        return _lookup(self.input_b or self.input)

    @property
    def inputs(self) -> str:
        """The input formats in words: ``"fp16"``, or ``"e4m3 x e5m2"``
        where ``b``'s differs."""
        return self.input if self.input_b is None else f"{self.input} x {self.input_b}"

    @property
    def output_format(self) -> Format:
        """The :class:`~fpsim.Format` of ``c`` and ``d``."""
        return _lookup(self.output)

    @property
    def fraction_bits(self) -> int:
        """Bits below the largest exponent that an aligned term keeps:
        ``23 + extra_bits`` (``+ 1`` with the sticky bit)."""
        if self.extra_bits is None:
            raise ValueError(f"accumulation {self.accumulation!r} does not align")
        return ALIGN_FRACTION_BITS + self.extra_bits + int(self.sticky_bit)

    def nan_code(self, fmt: Any = None) -> int:
        """The code of the NaN the unit writes in ``fmt`` (a format or its
        name; default the output format), by the rule ``nan``.

        >>> MMAParams("fp16", "fp16", k=8, rounding="rne", nan="all_ones").nan_code()
        32767
        >>> hex(MMAParams("fp16", "fp32", k=4).nan_code("bf16"))
        '0x7fc0'
        """
        return nan_code(self.nan, self.output_format if fmt is None else _lookup(fmt))

    def replace(self, **changes: Any) -> MMAParams:
        """A copy with some parameters changed (validated again).

        >>> MMAParams("fp16", "fp32", k=4).replace(k=8).k
        8
        """
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict, in declaration order.

        >>> list(MMAParams("fp16", "fp32", k=4).as_dict())[:4]
        ['input', 'output', 'k', 'accumulation']
        """
        return dataclasses.asdict(self)


def nan_code(rule: str, fmt: Format) -> int:
    """The NaN code of ``fmt`` under the NaN rule ``rule`` (one of
    :data:`NAN_RULES`): ``"all_ones"``, the positive code with every
    exponent and fraction bit set; ``"quiet"``, the positive code with the
    quiet bit alone (the format's default NaN).  A format with a single NaN
    per sign, or a single NaN, has it under both rules.

    >>> from fpsim.formats import FP32, FP16, BF16, E4M3FNUZ
    >>> [hex(nan_code("all_ones", f)) for f in (FP32, FP16, BF16, E4M3FNUZ)]
    ['0x7fffffff', '0x7fff', '0x7fff', '0x80']
    >>> [hex(nan_code("quiet", f)) for f in (FP32, FP16, BF16, E4M3FNUZ)]
    ['0x7fc00000', '0x7e00', '0x7fc0', '0x80']
    """
    if rule not in NAN_RULES:
        raise ValueError(f"NaN rule must be one of {', '.join(NAN_RULES)}; got {rule!r}")
    if rule == "all_ones" and fmt.specials == "ieee":
        return fmt.magnitude_mask
    return _default_nan(fmt, False)


def _format_name(name: Any, what: str) -> str:
    fmt = _lookup(name)
    from ..array import value_dtype

    if fmt.width > 32:
        raise ValueError(f"{what} format {fmt.name} is wider than 32 bits")
    if what == "output" and value_dtype(fmt) is None:
        raise ValueError(f"output format {fmt.name} has no numpy dtype; accepted: fp32, fp16, "
                         "bf16")
    return fmt.name


def _check(p: MMAParams) -> None:
    def bad(msg: str) -> None:
        raise ValueError(f"MMAParams: {msg}")

    if not isinstance(p.k, int) or isinstance(p.k, bool) or not 1 <= p.k <= _MAX_GROUP:
        bad(f"k must be an int in [1, {_MAX_GROUP}], got {p.k!r}")
    if p.accumulation not in ACCUMULATIONS:
        bad(f"accumulation must be one of {', '.join(ACCUMULATIONS)}; got {p.accumulation!r}")
    if p.rounding not in _FINAL_ROUNDINGS:
        bad(f"rounding must be one of {', '.join(_FINAL_ROUNDINGS)}; got {p.rounding!r}")
    if p.align_rounding not in _ALIGN_ROUNDINGS:
        bad(f"align_rounding must be one of {', '.join(_ALIGN_ROUNDINGS)}; "
            f"got {p.align_rounding!r}")
    if p.nan not in NAN_RULES:
        bad(f"nan must be one of {', '.join(NAN_RULES)}; got {p.nan!r}")
    if p.zero_sign not in ZERO_SIGNS:
        bad(f"zero_sign must be one of {', '.join(ZERO_SIGNS)}; got {p.zero_sign!r}")
    if p.c_joins not in ("first", "last"):
        bad(f"c_joins must be 'first' or 'last'; got {p.c_joins!r}")
    aligns = p.accumulation in ("aligned", "odd_even")
    if aligns:
        if not isinstance(p.extra_bits, int) or isinstance(p.extra_bits, bool):
            bad(f"accumulation {p.accumulation!r} needs an int extra_bits")
        if not -ALIGN_FRACTION_BITS < p.extra_bits <= _MAX_EXTRA_BITS:  # type: ignore[operator]
            bad(f"extra_bits must be in [{1 - ALIGN_FRACTION_BITS}, {_MAX_EXTRA_BITS}], "
                f"got {p.extra_bits}")
        fa, fb = _lookup(p.input), p.input_b_format
        if fa.mantissa_bits + fb.mantissa_bits > ALIGN_FRACTION_BITS:
            big = fa if fa.mantissa_bits >= fb.mantissa_bits else fb
            bad(f"input {big.name} has {big.mantissa_bits} fraction bits: its products do not "
                f"fit the {ALIGN_FRACTION_BITS}-bit alignment grid (at most 11 bits)")
        late = p.c_joins == "last" or p.accumulation == "odd_even"
        if late and p.extra_bits < 0:  # type: ignore[operator]
            bad("a late join of c needs extra_bits >= 0 (c keeps all its 23 bits)")
    elif p.extra_bits is not None:
        bad(f"accumulation {p.accumulation!r} does not align: extra_bits must be None")
    if p.accumulation == "odd_even" and p.c_joins != "last":
        bad("accumulation 'odd_even' adds c last: set c_joins='last'")
    if p.accumulation == "pairwise" and p.c_joins != "last":
        bad("accumulation 'pairwise' adds c after the tree: set c_joins='last'")
    if not aligns and _lookup(p.input).precision + p.input_b_format.precision > 52:
        bad(f"input {p.input}: products must be exact in float64 (at most 26 bits of precision)")
    if p.issue_k is not None and (not isinstance(p.issue_k, int) or isinstance(p.issue_k, bool)
                                  or p.issue_k < p.k or p.issue_k % p.k
                                  or p.issue_k > _MAX_GROUP):
        bad(f"issue_k must be None or a multiple of k={p.k} of at most {_MAX_GROUP}, "
            f"got {p.issue_k!r}")
    if p.accumulation == "pairwise" and p.k & (p.k - 1):
        bad(f"a pairwise tree needs k a power of two, got {p.k}")
    if p.sticky_bit and not aligns:
        bad("sticky_bit applies to aligned accumulation only")
    if not isinstance(p.late_extra_bits, int) or not 0 <= p.late_extra_bits <= _MAX_LATE_BITS:
        bad(f"late_extra_bits must be an int in [0, {_MAX_LATE_BITS}], "
            f"got {p.late_extra_bits!r}")
    if p.min_align_exponent is not None and not isinstance(p.min_align_exponent, int):
        bad("min_align_exponent must be an int or None")
    out = _lookup(p.output)
    _check_late_join(p, out, bad)
    if p.result_bits is not None and p.accumulation == "pairwise":
        bad("result_bits applies to 'aligned', 'odd_even' and 'exact' accumulation; a "
            "pairwise tree rounds every addition to the output format itself")
    if p.result_bits is not None and not 1 <= p.result_bits <= out.mantissa_bits:
        bad(f"result_bits must be in [1, {out.mantissa_bits}] for output {out.name}, "
            f"got {p.result_bits}")


def _check_late_join(p: MMAParams, out: Format, bad: Callable[[str], None]) -> None:
    """``c_dropped_below`` and ``normalized_bits``: ints, where ``c`` joins
    late."""
    late = (p.accumulation == "aligned" and p.c_joins == "last") or p.accumulation == "odd_even"
    for name, low, high in (("c_dropped_below", 0, 1 << 10),
                            ("normalized_bits", out.mantissa_bits, 52)):
        v = getattr(p, name)
        if v is None:
            continue
        if not late:
            bad(f"{name} applies where c joins late (c_joins='last' with 'aligned', or "
                f"'odd_even'); got accumulation={p.accumulation!r}, c_joins={p.c_joins!r}")
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            bad(f"{name} must be None or an int in [{low}, {high}], got {v!r}")
