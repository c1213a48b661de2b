"""Matrix units: bit-exact models of GPU tensor cores and matrix cores.

A matrix instruction computes ``d = a[0]*b[0] + ... + a[k-1]*b[k-1] + c``
not as IEEE arithmetic would, but as its hardware does: products aligned to
the largest exponent with a few extra bits, the rest truncated, all added
before one normalization, and one rounding of its own kind.  One model
(:class:`MMAModel`, reading an :class:`MMAParams`) covers them all; the GPUs
are rows of a table (``fpsim.mma.presets``), taken from the published
models of Khattak and Mikaitis and checked against GPU outputs.

>>> import ml_dtypes, numpy as np, fpsim.mma as mma
>>> h100 = mma.preset("h100", "e4m3", out="fp32")
>>> h100.k
32
>>> a = np.full((1, 32), 2.0**-7, ml_dtypes.float8_e4m3fn)
>>> a[0, 0] = 1.0
>>> h100(a, a, np.float32([0.0]))     # 1 + 31 * 2**-14: each 2**-14 is below its 13 bits
array([1.], dtype=float32)
>>> float(np.sum(a.astype(np.float64) ** 2))
1.00189208984375

Modules: ``fpsim.mma.params`` (the parameters), ``fpsim.mma.model``
(the arithmetic), ``fpsim.mma.presets`` (the GPUs), ``fpsim.mma.schedule``
(how a library runs the instruction along K), ``fpsim.mma.gemm`` (the
engine that runs a schedule), ``fpsim.mma.library`` (cuBLAS, CUTLASS and
Triton by name), ``fpsim.mma.probe`` (naming a black box),
``fpsim.mma.blockscaled`` (Blackwell's block-scaled MXFP8/6/4 and NVFP4
instructions), ``fpsim.mma.fmachain`` (FP64 and AMD's FP32 instructions:
chains of fused multiply-adds), ``fpsim.mma.accumulation`` (how a CPU kernel sums, as
data) and ``fpsim.mma.cputable`` (numpy, torch, JAX and ml_dtypes on the CPU
by name).
"""

from .accumulation import Accumulation
from .blockscaled import BlockScaledModel, BlockScaledParams, block_scaled
from .cputable import CPUGEMM, cpu, cpu_kernel, cpu_libraries
from .fmachain import FMAChainModel
from .gemm import LibraryGEMM
from .library import cublas, cutlass, triton
from .model import MMAModel
from .params import ACCUMULATIONS, MMAParams
from .presets import gpus, preset, presets
from .probe import ProbeError, ProbeResult, ProbeTimeout, probe
from .schedule import Schedule

__all__ = ["Accumulation", "CPUGEMM", "cpu", "cpu_kernel", "cpu_libraries",
           "MMAModel", "FMAChainModel", "MMAParams", "ACCUMULATIONS", "preset", "presets",
           "gpus", "probe",
           "ProbeResult", "ProbeError", "ProbeTimeout", "Schedule", "LibraryGEMM", "cublas",
           "cutlass", "triton", "BlockScaledModel", "BlockScaledParams", "block_scaled"]
