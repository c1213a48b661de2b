"""How a CPU kernel sums a dot product: the accumulation, as data.

A CPU BLAS, a framework's own loop or a compiler's vectorised kernel has no
matrix instruction: each output element ``D[m, n]`` is a sum of the ``K``
products ``p_k = A[m, k] · B[k, n]`` built from IEEE additions and fused
multiply-adds, in an order the kernel's loops fix.  An
:class:`Accumulation` states that order and those roundings; one engine
(:mod:`fpsim.mma._chains`) runs it at any size, and the CPU libraries are
rows of a table (:mod:`fpsim.mma.cputable`), not code paths.

For one output element, in order:

1. **K blocks.**  K is cut into consecutive blocks by ``k_block`` and
   ``k_block_rule``; without ``k_block`` it is one block.  Each block is
   summed on its own from ``+0`` (steps 2-4) and the block results are
   added in order, ``((b0 + b1) + b2) + ...``, each addition rounded in
   ``accumulator`` (a BLAS adding each K panel's result into ``C``).
   Rules, with ``Q = k_block`` and ``r`` the products left:

   * ``"uniform"``: blocks of ``Q`` (the last the rest);
   * ``"halve_up"`` (OpenBLAS ``driver/level3/level3.c``): ``Q`` while
     ``r >= 2Q``; where ``Q < r < 2Q``, ``ceil(r // 2 / u) · u`` with
     ``u = k_unroll``; then the rest;
   * ``"halve"`` (OpenBLAS ``driver/level3/level3_thread.c``): as
     ``"halve_up"`` but ``(r + 1) // 2``;
   * ``"even_halves"`` (MKL's ``sgemm``, measured): as ``"uniform"``,
     except that ``Q < K <= 2Q`` gives two equal halves of K's even part
     and, for an odd K, its last product as a block of its own.

2. **Lanes.**  Inside a block, with ``lanes = w``, product ``k`` (counted
   from the block's start) goes to accumulator ``k mod w`` (a SIMD register
   per lane or ``w`` unrolled scalars); each lane is a chain from ``+0``,
   ascending.  The products left over at the block's end past a whole
   number of ``unroll`` (default ``w``) products, the tail, go by ``tail``:

   * ``"lanes"``: on to lanes ``0, 1, ...`` as the rest (no special tail);
   * ``"lane0"``: all into lane 0, after its main products (ATen's
     ``sum`` with ``ilp_factor``);
   * ``"after"``: summed apart, each product rounded to ``accumulator``,
     ``t = (p0 + p1) + ...``, and added to the joined lanes: ``block =
     join + t`` (a vectorised loop's scalar remainder).

   With ``apart = g`` (one chain, ``lanes=1``), the block's products go
   in runs of ``2g``: the first ``g`` into the chain one by one, the next
   ``g`` summed apart, ``t = ((p_g + p_{g+1}) + ...)`` from the first of
   them rounded, and ``t`` added to the chain; the products past the last
   whole run go into the chain one by one (MKL's ``sgemm`` on the output
   elements its aligned stores do not reach, measured).

3. **One step of a chain.**  ``products="fma"``: ``acc = RN(acc + a·b)``,
   one rounding (a fused multiply-add); ``"rounded"``: ``acc = RN(acc +
   RN(a·b))``.  Where every product is exact in ``accumulator`` (FP16 and
   BF16 inputs into FP32, inside its range) the two agree.  With
   ``pair_swap`` the products of each pair ``(2i, 2i+1)`` of the block are
   taken odd first, ``2i+1, 2i`` (x86's ``VDPBF16PS``: its pseudo-code adds
   the odd element first); a last product without a partner comes last.

4. **Joining the lanes** (``join``): ``"sequential"`` ``((l0 + l1) + l2) +
   ...``; ``"pairs"`` adjacent pairs, then pairs of pairs: ``((l0 + l1) +
   (l2 + l3)) + ...``; ``"halves"`` ``l_i + l_{i + w/2}`` for ``i < w/2``,
   then again on the halves (GCC's ``_mm512_reduce_add_ps``: 8, 4, 2, 1).
   ``w`` is a power of two for ``"pairs"`` and ``"halves"``.

5. **C** (``g(A, B, C)``) by ``c_joins``: ``"start"``: lane 0 of the first
   block starts at ``C`` instead of ``+0``; ``"first"``: ``((C + b0) + b1)
   + ...`` (BLAS with ``beta = 1`` adding each block into ``C``);
   ``"last"``: ``(b0 + b1 + ...) + C``; ``"output"``: the sum is rounded
   to the output format first, then ``C`` is added in the output format.
   ``C`` enters converted exactly to ``accumulator``.

6. **Output.**  The sum is rounded to the output format, to nearest even.

``ftz`` (``VDPBF16PS`` does not read ``MXCSR``: subnormal inputs are read
as zero and subnormal results are flushed to zero, tininess after
rounding) applies to every addition of an FP32 accumulator.  A NaN result
is the row's ``nan`` code (x86's default NaN, the sign bit set, unless
stated): the payload of a NaN input is not propagated.

>>> a = Accumulation(k_block=448, k_block_rule="halve_up", k_unroll=16)
>>> a.blocks(1000)                   # OpenBLAS sgemm, SkylakeX kernels
[(0, 448), (448, 736), (736, 1000)]
>>> Accumulation(k_block=448, k_block_rule="halve").blocks(1000)
[(0, 448), (448, 724), (724, 1000)]
>>> str(Accumulation(lanes=4, tail="lane0"))
'4 FP32 lanes (k mod 4, tail into lane 0), joined sequential, FMA'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..formats import format as _lookup
from . import _args

__all__ = ["Accumulation", "K_BLOCK_RULES", "TAILS", "JOINS", "C_JOINS", "PRODUCTS"]

#: How K is cut into blocks.
K_BLOCK_RULES = ("uniform", "halve_up", "halve", "even_halves")
#: Where the K mod lanes products go.
TAILS = ("lanes", "lane0", "after")
#: How the lanes are added together.
JOINS = ("sequential", "pairs", "halves")
#: Where C joins.
C_JOINS = ("start", "first", "last", "output")
#: One step of a chain.
PRODUCTS = ("fma", "rounded")
#: The accumulators a CPU kernel keeps.
ACCUMULATORS = ("fp32", "fp64")
#: x86's default NaN (sign set), by accumulator or output format.
DEFAULT_NAN = {"fp64": 0xFFF8000000000000, "fp32": 0xFFC00000, "fp16": 0xFE00, "bf16": 0xFFC0}


@dataclass(frozen=True)
class Accumulation:
    """The accumulation of a CPU kernel (see the module's docstring for the
    steps, in order).  Every field is checked, never coerced: a wrong type
    is a ``TypeError``, a wrong value a ``ValueError``, each naming the field.

    Parameters
    ----------
    accumulator:
        ``"fp32"`` or ``"fp64"``: the format of every partial sum.
    products:
        ``"fma"`` (one rounding per step) or ``"rounded"`` (the product
        rounded, then the addition).
    lanes:
        Interleaved accumulators (product ``k`` to lane ``k mod lanes``).
    tail:
        ``"lanes"``, ``"lane0"`` or ``"after"``: the last products of a
        block past a multiple of ``unroll``.
    unroll:
        The main loop's step in products (None: ``lanes``); a multiple of
        ``lanes``.
    join:
        ``"sequential"``, ``"pairs"`` or ``"halves"``: how the lanes are added.
    pair_swap:
        Each pair of products is taken odd first (needs ``lanes=1``).
    apart:
        None, or ``g``: of each run of ``2g`` products the last ``g`` are
        summed apart and added (needs ``lanes=1``).
    k_block:
        Products per K block (None: one block).
    k_block_rule:
        ``"uniform"``, ``"halve_up"`` or ``"halve"``.
    k_unroll:
        The unroll ``"halve_up"`` rounds a halved block up to.
    ftz:
        Subnormal inputs read as zero and subnormal sums flushed (FP32 only).
    c_joins:
        ``"start"``, ``"first"``, ``"last"`` or ``"output"``.
    """

    accumulator: str = "fp32"
    products: str = "fma"
    lanes: int = 1
    tail: str = "lanes"
    unroll: int | None = None
    join: str = "sequential"
    pair_swap: bool = False
    apart: int | None = None
    k_block: int | None = None
    k_block_rule: str = "uniform"
    k_unroll: int = 1
    ftz: bool = False
    c_joins: str = "first"

    def __post_init__(self) -> None:
        own = "Accumulation"
        for name, optional in (("lanes", False), ("k_block", True), ("k_unroll", False),
                               ("unroll", True), ("apart", True)):
            object.__setattr__(self, name, _args.count(own, name, getattr(self, name),
                                                       optional=optional))
        if not isinstance(self.accumulator, str):
            raise TypeError(f"{own}: accumulator must be a format name (fp32 or fp64), got "
                            f"{type(self.accumulator).__name__} {self.accumulator!r}")
        try:
            acc = _lookup(self.accumulator).name
        except (ValueError, TypeError) as e:
            raise ValueError(f"{own}: accumulator={self.accumulator!r}: {e}") from None
        object.__setattr__(self, "accumulator", acc)
        for name, allowed in (("accumulator", ACCUMULATORS), ("products", PRODUCTS),
                              ("tail", TAILS), ("join", JOINS),
                              ("k_block_rule", K_BLOCK_RULES), ("c_joins", C_JOINS)):
            _args.choice(own, name, getattr(self, name), allowed)
        for name in ("pair_swap", "ftz"):
            object.__setattr__(self, name, _args.flag(own, name, getattr(self, name)))
        w = self.lanes
        if self.join != "sequential" and w & (w - 1):
            raise ValueError(f"{own}: join={self.join!r} needs a power-of-two number of lanes, "
                             f"got lanes={w}")
        if self.unroll is not None and self.unroll % w:
            raise ValueError(f"{own}: unroll={self.unroll} is not a multiple of lanes={w}")
        if self.pair_swap and w != 1:
            raise ValueError(f"{own}: pair_swap orders one chain; it needs lanes=1, got "
                             f"lanes={w}")
        if self.apart is not None and (w != 1 or self.pair_swap):
            raise ValueError(f"{own}: apart={self.apart} splits one chain's runs; it needs "
                             f"lanes=1 and no pair_swap, got lanes={w}, pair_swap="
                             f"{self.pair_swap}")
        if self.ftz and acc != "fp32":
            raise ValueError(f"{own}: ftz is modelled for an fp32 accumulator only "
                             f"(VDPBF16PS), got accumulator={acc}")
        if self.k_block is None and (self.k_block_rule != "uniform" or self.k_unroll != 1):
            raise ValueError(f"{own}: k_block_rule={self.k_block_rule!r} and k_unroll="
                             f"{self.k_unroll} need a k_block")

    def blocks(self, K: int) -> list[tuple[int, int]]:
        """The K blocks of ``K`` products, as ``(start, stop)``.

        >>> Accumulation(k_block=512).blocks(1100)
        [(0, 512), (512, 1024), (1024, 1100)]
        >>> Accumulation().blocks(7)
        [(0, 7)]
        """
        K = _args.count("Accumulation.blocks", "K", K, low=0)
        Q = self.k_block
        if Q is None:
            return [(0, K)] if K else []
        if self.k_block_rule == "even_halves" and Q < K <= 2 * Q:
            even = K - K % 2
            return [(0, even // 2), (even // 2, even)] + ([(even, K)] if K % 2 else [])
        out, lo = [], 0
        while lo < K:
            r = K - lo
            if r >= 2 * Q:
                size = Q
            elif r > Q and self.k_block_rule == "halve_up":
                u = self.k_unroll
                size = min(r, -(-(r // 2) // u) * u)
            elif r > Q and self.k_block_rule == "halve":
                size = (r + 1) // 2
            else:
                size = min(r, Q)
            out.append((lo, lo + size))
            lo += size
        return out

    def replace(self, **changes: Any) -> Accumulation:
        """A copy with some fields changed (checked again).

        >>> Accumulation().replace(products="rounded").products
        'rounded'
        """
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict, in declaration order."""
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        """In words.

        >>> str(Accumulation())
        'one FP32 chain, FMA'
        >>> print(Accumulation(k_block=512, pair_swap=True, ftz=True, products="rounded"))
        one FP32 chain, odd product of each pair first, rounded products, K blocks of 512 ...
        """
        acc = self.accumulator.upper()
        if self.lanes == 1:
            parts = [f"one {acc} chain"]
        else:
            tail = {"lanes": "", "lane0": ", tail into lane 0",
                    "after": ", tail summed after"}[self.tail]
            if self.unroll is not None and self.unroll != self.lanes:
                tail += f", unroll {self.unroll}"
            parts = [f"{self.lanes} {acc} lanes (k mod {self.lanes}{tail}), joined {self.join}"]
        if self.pair_swap:
            parts.append("odd product of each pair first")
        if self.apart is not None:
            g = self.apart
            parts.append(f"of each {2 * g} products the last {g} summed apart")
        parts.append("FMA" if self.products == "fma" else "rounded products")
        if self.k_block is not None:
            rule = self.k_block_rule + (f", unroll {self.k_unroll}" if self.k_unroll > 1 else "")
            parts.append(f"K blocks of {self.k_block} ({rule})")
        if self.ftz:
            parts.append("FTZ")
        if self.c_joins != "first":
            parts.append(f"C joins {self.c_joins}")
        return ", ".join(parts)
