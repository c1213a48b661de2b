"""Sweeps: a kernel checked against the golden model on every input (or a
stated sample of them), chunk by chunk, in this process or on Dask.

:func:`run` enumerates an input space of one operation in one format (all
codes, pairs or triples; a deterministic sample; the tuples that hold given
special values), evaluates the candidate (any callable on numpy arrays, or
``"module:function"``) and the golden model (:mod:`fpsim.array`) on the same
chunks, and merges the chunks' tallies into the harness's
:class:`~fpsim.testing.Report`.  The report is the same whichever way the
chunks ran: in this process (numpy only), on Dask's local scheduler, or on a
``distributed`` cluster, in any order, and after an interruption and a
resume from a progress file.

The candidate is called with one array per operand, of the format's numpy
type (``numpy.float16``, ``ml_dtypes.bfloat16``, ``ml_dtypes.float8_e4m3fn``,
...; codes in unsigned integers where the format has no numpy type), and
returns one array of that shape: values of that type, or codes.

>>> import numpy as np
>>> from fpsim import sweep
>>> def flushing_mul(a, b):            # a unit that flushes subnormal results
...     r = a * b
...     return np.where(np.abs(r) < 2.0**-14, np.float16(0) * np.sign(r), r)
>>> rep = sweep.run("mul", "fp16", flushing_mul, specials=["0x3800"])   # 0.5 times anything
>>> rep.ok, rep.size, rep.report.ulp_mismatch, rep.report.signed_zero_mismatch
(False, 131071, 8180, 4)

8180: 0.5 times each of the 2045 codes per sign whose product is a nonzero
subnormal (0x0002 to 0x07fe; 0x07ff's half rounds up to the smallest
normal), with 0.5 first or second; and 4 signs of zero lost, since
``np.sign(-0.0)`` is 0: ``0.5 * -0`` and ``0.5 * 0x8001`` (whose product
rounds to -0), either way round.
>>> print(rep.report.offenders[0].index, rep.operands_text(rep.report.offenders[0]))
(14336, 2) 0x3800 (0.5), 0x0002 (1.1920928955078125e-07)

Formats up to FP64: every tuple up to ``2**63`` of them, a sample or the
tuples holding special values up to ``2**64`` (FP32 pairs, every FP64
code), a sample beyond (FP64 pairs, ``2**128``: ``sample=1e-32`` is 3.4
million of them).

The command line: ``python -m fpsim sweep add --fmt fp16 --against
mykernels:fp16_add [--scheduler local|ADDRESS] [--sample F] [--json]``.
"""

from .._schedulers import RunnerError
from ._candidate import CandidateError
from ._candidate import load as load_candidate
from ._result import SweepReport
from ._runner import Progress, plan, run
from ._space import Space
from ._task import DEFAULT_CHUNK, OPS, Spec

__all__ = ["run", "plan", "SweepReport", "Progress", "Space", "Spec", "OPS", "DEFAULT_CHUNK",
           "load_candidate", "CandidateError", "RunnerError"]
