"""How a library builds a GEMM on a matrix instruction: the schedule, as data.

A library GEMM is the instruction (an :class:`~fpsim.mma.MMAModel`) and a
:class:`Schedule`: how K is cut into slices run by different thread blocks
(split-K) and how their partial results are merged; how often a
limited-precision chain is promoted into a wider accumulator; where ``C``
joins; and the epilogue's roundings.  One description, read by one engine
(:mod:`fpsim.mma.gemm`); the libraries are rows of a table
(:mod:`fpsim.mma.library`), not code paths.

For one output element ``D[m, n]`` over ``K`` products ``p_i = A[m, i] ·
B[i, n]``:

1. **Slices.**  With ``split_k = S``, K is cut into consecutive slices of
   ``ceil(ceil(K / split_grain) / S) · split_grain`` products (the last
   slice the rest); only the ``ceil(K / size)`` slices that hold products
   run, which can be fewer than ``S`` (as cuBLAS launches them).
2. **Groups.**  Inside a slice, with ``promote_every = P``, the products are
   cut into consecutive groups of ``P`` (the last the rest); without it the
   slice is one group.
3. **Chains.**  Each group is the instruction chained along its products in
   blocks of ``block_k`` (default the instruction's ``k``), ascending, from
   ``c = +0``: ``mma(p[2k:3k], mma(p[k:2k], mma(p[:k], +0)))``.
4. **Promotion.**  With ``promote_every``, the group results are converted
   to ``compute`` and added into an accumulator of ``compute`` that starts
   at +0, one ``rounding`` addition each, in order; without it the slice's
   result is its one chain, converted to ``compute``.
5. **Merge** (cuBLASLt's reduction schemes).  ``split_merge="compute"``
   (``REDUCTION_SCHEME_COMPUTE_TYPE``): the slice results added in
   ``compute``, ``((s0 + s1) + s2) + ...``, each addition rounded by
   ``rounding``; the sum starts at ``s0`` itself (a ``-0`` partial stays
   ``-0``), or at +0 with ``merge_from_zero`` (CUTLASS's parallel
   reduction, ``((+0 + s0) + s1) + ...``).  ``"output"``
   (``OUTPUT_TYPE``): each slice result is first rounded to the output
   format, and those are added as above.  ``"inplace"`` (``INPLACE``, and
   CUTLASS's serial split-K): a running total in the output buffer:
   ``t = out(s0)``, then ``t = out(compute(t + s1))``, ...
6. **C.**  ``c_joins="epilogue"``: ``C`` enters in the epilogue (step 7).
   ``"accumulator"``: ``C`` (converted to the unit's output format) is the
   value the accumulation starts from instead of +0 (the first chain's
   ``c``, or the promotion accumulator's start, of the first slice).
7. **Epilogue.**  ``epilogue="compute"``: ``alpha·acc + beta·C`` in
   ``compute``, then converted to the output format by
   ``output_rounding``.  ``"output"``: ``acc`` is first converted to the
   output format (``output_rounding``), and ``alpha·acc + beta·C`` is
   computed in the output format.  Either way, ``epilogue_order`` says
   which product is rounded on its own and which is fused:
   ``"beta_c_first"`` (CUTLASS 2.x ``LinearCombination``): ``t =
   r(beta·C)``, ``d = r(alpha·acc + t)``, and with ``beta = 0`` (or no
   ``C``) ``d = r(alpha·acc)``; ``"alpha_acc_first"`` (CUTLASS 3.x Sm90
   ``LinearCombination``): ``z = r(alpha·acc)``, ``d = r(beta·C + z)``,
   and with ``beta = 0`` still ``d = r(0 + z)`` (a ``-0`` becomes +0).
   ``r`` rounds by ``rounding``; ``alpha = 1``, ``beta = 1`` multiply
   exactly.

Scales (FP8 with ``scale_a``, ``scale_b``, :meth:`fpsim.mma.gemm.LibraryGEMM.__call__`)
apply to ``acc`` before step 7, in ``compute``: per-tensor scales as one
factor ``compute(scale_a · scale_b)``; a row scale ``scale_a[m]`` and a
column scale ``scale_b[n]`` as two multiplications, column first:
``compute(compute(acc · scale_b[n]) · scale_a[m])``.

>>> s = Schedule(split_k=3, split_grain=64)
>>> s.slices(4096)            # cuBLAS's numSplitsK=3 at K = 4096
[(0, 1408), (1408, 2816), (2816, 4096)]
>>> Schedule(promote_every=128).groups(0, 320)
[(0, 128), (128, 256), (256, 320)]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..formats import Format
from ..formats import format as _lookup
from . import _args

__all__ = ["Schedule", "SPLIT_MERGES", "C_JOINS", "EPILOGUES", "EPILOGUE_ORDERS"]

#: How the slices of a split K are merged.
SPLIT_MERGES = ("compute", "output", "inplace")
#: Where C joins.
C_JOINS = ("epilogue", "accumulator")
#: The format the epilogue computes ``alpha·acc + beta·C`` in.
EPILOGUES = ("compute", "output")
#: Which product of the epilogue is rounded on its own.
EPILOGUE_ORDERS = ("beta_c_first", "alpha_acc_first")
_ROUNDINGS = ("rne", "rtz", "rup", "rdn")


@dataclass(frozen=True)
class Schedule:
    """The schedule of a library GEMM (see the module's docstring for the
    steps, in order).

    Every field is checked, never coerced: a count is an int (numpy's
    too; not a bool, a float or a string), a choice one of the strings
    listed (not ``''``), ``merge_from_zero`` True or False; anything else is
    a ``TypeError`` (type) or ``ValueError`` (value) naming the field.

    Parameters
    ----------
    split_k:
        Slices of K, each run separately and merged (``numSplitsK`` in
        cuBLASLt's log).  1: no split.
    split_grain:
        Slices are whole multiples of this many products (64 for cuBLAS's
        16-bit GEMMs, 128 for FP8: the kernel's K tile).
    split_merge:
        ``"compute"`` (cuBLASLt's ``REDUCTION_SCHEME_COMPUTE_TYPE``: an FP32
        workspace), ``"output"`` (``OUTPUT_TYPE``: partials rounded to the
        output format first) or ``"inplace"`` (``INPLACE``: a running total
        rounded to the output format after every slice).
    merge_from_zero:
        The ``"compute"``/``"output"`` sum starts at +0 rather than at the
        first partial.
    promote_every:
        Products per group whose chain is added into the ``compute``
        accumulator (CUTLASS's ``mma_promotion_interval`` times the
        instruction's k; 128 in cuBLAS FP8 without fast accumulation).  A
        multiple of ``block_k``.  ``None``: no promotion.
    block_k:
        Products per instruction as the kernel issues it, at most the
        instruction's ``k`` (a ``k = 4`` form of an instruction whose block
        is 8 pads it with zero products).  ``None``: the instruction's
        ``k``.
    compute:
        The format of the promotion accumulator, the split-K workspace and
        the epilogue (the library's compute type).  ``None``: the
        instruction's output format.
    rounding:
        Rounding of every addition and multiplication the schedule adds
        (promotion, merge, epilogue).
    c_joins:
        ``"epilogue"`` or ``"accumulator"`` (step 6).
    epilogue:
        ``"compute"`` or ``"output"`` (step 7).
    epilogue_order:
        ``"beta_c_first"`` or ``"alpha_acc_first"`` (step 7).
    output_rounding:
        Rounding of the conversion into the output format.
    """

    split_k: int = 1
    split_grain: int = 64
    split_merge: str = "compute"
    merge_from_zero: bool = False
    promote_every: int | None = None
    block_k: int | None = None
    compute: str | None = "fp32"
    rounding: str = "rne"
    c_joins: str = "epilogue"
    epilogue: str = "compute"
    epilogue_order: str = "beta_c_first"
    output_rounding: str = "rne"

    def __post_init__(self) -> None:
        def bad(msg: str) -> None:
            raise ValueError(f"Schedule: {msg}")

        # Types checked, never coerced (fpsim/mma/_args.py): TypeError for a
        # bool, float or string count, ValueError for one out of range.
        for name, optional in (("split_k", False), ("split_grain", False),
                               ("promote_every", True), ("block_k", True)):
            object.__setattr__(self, name, _args.count("Schedule", name, getattr(self, name),
                                                       optional=optional))
        for name, allowed in (("split_merge", SPLIT_MERGES), ("c_joins", C_JOINS),
                              ("epilogue", EPILOGUES), ("epilogue_order", EPILOGUE_ORDERS),
                              ("rounding", _ROUNDINGS), ("output_rounding", _ROUNDINGS)):
            _args.choice("Schedule", name, getattr(self, name), allowed)
        object.__setattr__(self, "merge_from_zero",
                           _args.flag("Schedule", "merge_from_zero", self.merge_from_zero))
        if self.compute is not None:
            if not isinstance(self.compute, (str, Format)):
                raise TypeError(f"Schedule: compute must be a format name (fp32, fp16, bf16) or "
                                f"None, got {type(self.compute).__name__} {self.compute!r}")
            try:
                fmt = _lookup(self.compute)
            except (ValueError, TypeError) as e:
                bad(f"compute={self.compute!r}: {e}")
            if fmt.name not in ("fp32", "fp16", "bf16"):
                bad(f"compute={fmt.name}; accepted: fp32, fp16, bf16 or None")
            object.__setattr__(self, "compute", fmt.name)
        if (self.promote_every is not None and self.block_k is not None
                and self.promote_every % self.block_k):
            bad(f"promote_every={self.promote_every} is not a multiple of block_k={self.block_k}")

    # -- the cuts -------------------------------------------------------------------------

    def slices(self, K: int) -> list[tuple[int, int]]:
        """The slices of ``K`` products, as ``(start, stop)``: as many
        slices of the size above as hold products (``ceil(K / size)``, which
        can be fewer than ``split_k``, as cuBLAS launches them).

        Raises ``ValueError`` where ``split_k`` is larger than K's grains.

        >>> Schedule(split_k=12).slices(16384)[-2:]
        [(14080, 15488), (15488, 16384)]
        >>> Schedule(split_k=3).slices(256)       # slices of 128: two hold products
        [(0, 128), (128, 256)]
        >>> Schedule(split_k=3).slices(128)
        Traceback (most recent call last):
          ...
        ValueError: split_k=3 is larger than K=128's 2 grains of 64 products; accepted: split_k <= 2
        """
        S = self.split_k
        if S == 1:
            return [(0, K)]
        grains = -(-K // self.split_grain)
        if S > grains:
            raise ValueError(f"split_k={S} is larger than K={K}'s {grains} grains of "
                             f"{self.split_grain} products; accepted: split_k <= {max(grains, 1)}")
        per = -(-grains // S) * self.split_grain
        return [(lo, min(K, lo + per)) for lo in range(0, K, per)]

    def groups(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The promotion groups of the products ``start:stop`` (one slice).

        >>> Schedule().groups(0, 100)
        [(0, 100)]
        """
        P = self.promote_every
        if P is None or stop - start <= P:
            return [(start, stop)]
        return [(i, min(stop, i + P)) for i in range(start, stop, P)]

    def replace(self, **changes: Any) -> Schedule:
        """A copy with some fields changed (validated again).

        >>> Schedule().replace(split_k=4).split_k
        4
        """
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict, in declaration order."""
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        """The fields that differ from the default, in words.

        >>> str(Schedule(split_k=3))
        'split_k=3 (grain 64, merged in compute)'
        >>> str(Schedule())
        'one chain along K'
        """
        parts = []
        if self.split_k > 1:
            parts.append(f"split_k={self.split_k} (grain {self.split_grain}, merged in "
                         f"{self.split_merge})")
        if self.promote_every is not None:
            parts.append(f"promoted every {self.promote_every} products into "
                         f"{self.compute or 'the unit format'} ({self.rounding})")
        if self.block_k is not None:
            parts.append(f"block_k={self.block_k}")
        default = Schedule()
        if self.merge_from_zero:
            parts.append("merged from +0")
        for name in ("compute", "c_joins", "epilogue", "epilogue_order", "output_rounding"):
            if getattr(self, name) != getattr(default, name):
                parts.append(f"{name}={getattr(self, name)}")
        if self.rounding != default.rounding and self.promote_every is None:
            parts.append(f"rounding={self.rounding}")
        return ", ".join(parts) if parts else "one chain along K"
