"""Matrix instructions that are chains of IEEE fused multiply-adds: FP64
``mma``/``mfma`` and CDNA's FP32 ``mfma``.

These units do not align products to a shared exponent: each output is
``c`` followed by one correctly rounded fused multiply-add per product, in
order of ``k``::

    d = fma(a[K-1], b[K-1], ... fma(a[1], b[1], fma(a[0], b[0], c)))

in the instruction's own format (FP64 for ``mma.sync.m8n8k4.f64`` on
Ampere to Blackwell, ``m16n8k{4,8,16}.f64`` on Hopper and later,
``v_mfma_f64_*`` on CDNA2 and CDNA3; FP32 for ``v_mfma_f32_*_f32`` on
CDNA1 to CDNA3), subnormals kept, signed zeros by IEEE's rules.  That is
MMA-Sim 2.1.1's model of each (``mmasim/arithmetic/fma.py``, ``MMA_FMA``,
chosen by ``mmasim/nv_ptx/sim.py`` for FP64 and ``mmasim/amd/sim.py`` for
FP64 and FP32 inputs), which its authors validated against the GPUs with
random tests; ``tests/test_mmasim_instructions.py`` cross-checks fpsim's
rows against it.  Chained along K (``chain=True``, or a GEMM built on the
instruction), the blocks are one chain: the result does not depend on ``k``.

The NaN a unit writes is not measured for these instructions (the
cross-check compares NaN-ness only: MMA-Sim's ``MMA_FMA`` calls the host
CPU's fma, whose NaNs are the CPU's).  fpsim writes one NaN per unit, its
``nan`` code, whatever NaN came in: NVIDIA FP64 ``0xFFF8000000000000``,
the NaN CUDA's own header defines for doubles (``math_constants.h``,
``CUDART_NAN``; its float NaN ``CUDART_NAN_F``, ``0x7FFFFFFF``, is the one
measured on an H100's units), and AMD the quiet bit alone (``0x7FC00000``,
``0x7FF8000000000000``), LLVM AMDGPU's NaN, as every AMD preset
(``docs/mma.rst``, "NaN codes").  A unit may in fact pass an input NaN's
payload on; a capture would settle it.

>>> import numpy as np, fpsim.mma as mma
>>> dmma = mma.preset("h100", "fp64", "fp64")
>>> dmma
<FMAChainModel h100 fp64->fp64 k=16 fma chain>
>>> a = np.array([[1.0, 2.0**-53, 2.0**-53]])
>>> float(dmma(a, np.ones((1, 3)), 0.0)[0])   # 1 + 2**-53 is a tie, kept 1; then 1 again
1.0
>>> mi = mma.preset("mi300x", "fp32", "fp32")
>>> x = np.float32([[2.0**24, 1.0, 1.0]])
>>> float(mi(x, np.ones((1, 3), np.float32))[0])   # each +1 is a tie to the even 2**24
16777216.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array as _array
from ..formats import Format
from ..formats import format as _lookup
from ._chains import run as _run
from ._finish import unit_nans
from ._inputs import read_addend, read_inputs
from .accumulation import Accumulation

__all__ = ["FMAChainModel"]


class FMAChainModel:
    """A matrix instruction whose outputs are chains of fused multiply-adds
    (this module's docstring): ``model(a, b, c)`` with the call of
    :class:`~fpsim.mma.MMAModel` (``a``, ``b``: arrays ``(..., K)`` of the
    input format's dtype, or codes with ``fmt=``; ``c``: ``(...)`` of the
    output's, a Python number, or None for +0; ``chain=True`` for ``K``
    above :attr:`k`).  Unlike an aligned unit, a shorter ``K`` is not padded
    with zero products (an fma of a zero product would turn a ``-0`` c into
    +0): the chain has the ``K`` products given.

    ``name``: the GPU; ``fmt``: ``"fp64"`` or ``"fp32"`` (inputs, c and d);
    ``k``: products per instruction; ``nan``: the code of every NaN result.
    """

    def __init__(self, fmt: Any, k: int, nan: int, name: str | None = None) -> None:
        f = _lookup(fmt)
        if f.name not in ("fp64", "fp32"):
            raise ValueError(f"FMAChainModel: fmt={f.name}; accepted: fp64, fp32")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"FMAChainModel: k={k!r}; accepted: a positive integer")
        if not isinstance(nan, int) or isinstance(nan, bool) or not (
                (nan & f.magnitude_mask) > f.inf_code and nan <= (f.sign_bit | f.magnitude_mask)):
            raise ValueError(f"FMAChainModel: nan={nan!r} is not a NaN code of {f.name}")
        self._fmt = f
        self._k = k
        self.nan = nan
        self.name = name
        #: The sum of one output, as the CPU engine's data.
        self.accumulation = Accumulation(accumulator=f.name, c_joins="start")

    @property
    def k(self) -> int:
        """Products per instruction."""
        return self._k

    @property
    def issue_k(self) -> int:
        """Products of one instruction as issued (:attr:`k`)."""
        return self._k

    @property
    def input_format(self) -> Format:
        """Format of ``a`` and ``b``."""
        return self._fmt

    @property
    def input_b_format(self) -> Format:
        """Format of ``b``."""
        return self._fmt

    @property
    def output_format(self) -> Format:
        """Format of ``c`` and ``d``."""
        return self._fmt

    def __repr__(self) -> str:
        label = f"{self.name} " if self.name else ""
        f = self._fmt.name
        return f"<FMAChainModel {label}{f}->{f} k={self._k} fma chain>"

    def __call__(self, a: Any, b: Any, c: Any = None, *, fmt: Any = None,
                 chain: bool = False) -> np.ndarray:
        _array.engine.check_flag("chain", chain)
        f = self._fmt
        av, bv = read_inputs(a, b, f, fmt)
        rows = av.shape[:-1]
        cv = read_addend(c, f, rows)
        K = av.shape[-1]
        if K > self._k and not chain:
            label = f"{self.name} " if self.name else ""
            raise ValueError(f"K={K} products exceed this instruction's k={self._k} "
                             f"({label}{f.name} -> {f.name}); pass chain=True to chain "
                             f"blocks of {self._k} along K")
        n = int(np.prod(rows, dtype=np.int64))
        if K == 0 or n == 0:       # no product, or no row: no instruction runs, d = c
            with np.errstate(over="ignore", invalid="ignore"):
                return np.asarray(cv, np.float64).astype(_array.value_dtype(f)).reshape(rows)
        values = self.values(av.reshape(n, K), bv.reshape(n, K), cv.reshape(n))
        return self.to_dtype(values).reshape(rows)

    def values(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Float64 values of the chains over the last axis of ``a`` and
        ``b`` (broadcast) from ``c`` (NaN where the result is a NaN)."""
        return _run(self.accumulation, a, b, c, self._fmt.name)

    def to_dtype(self, values: np.ndarray) -> np.ndarray:
        """``values`` (exact in the unit's format) as its dtype, every NaN
        the unit's ``nan`` code."""
        dt = _array.value_dtype(self._fmt)
        with np.errstate(over="ignore", invalid="ignore"):
            codes = values.astype(dt).view(_array.code_dtype(self._fmt))
        return unit_nans(codes, self._fmt, self.nan).view(dt)
