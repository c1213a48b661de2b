"""The array engine: the golden model on whole numpy arrays.

Every function here is the scalar model (:mod:`fpsim.rounding`,
:mod:`fpsim.arith`, :mod:`fpsim.nans`) applied elementwise, written with
numpy integer operations that follow the scalar code step by step; the test
suite proves the two equal code for code and flag for flag.

* conversions: :func:`decode`, :func:`encode`, :func:`round`, :func:`convert`
  for formats up to FP64 (64 bits, precision 53), from any binary input array (numpy
  float16/32/64, ml_dtypes types, or codes of a known format);
* arithmetic: :func:`add`, :func:`sub`, :func:`mul`, :func:`div`,
  :func:`fma`, :func:`sqrt`, the running sum :func:`add_sequence`, and the
  comparisons :func:`eq`, :func:`ne`, :func:`lt`, :func:`le`, :func:`gt`,
  :func:`ge`, :func:`unordered` on arrays of one format up to FP64 (float64
  arrays or uint64 codes; fast paths through the machine's own float64,
  every lane proven by its exact error: ``fpsim.array._fp64``);
* framework arrays: PyTorch tensors, JAX and CuPy arrays are read as they
  are by every function (:func:`as_numpy` shows how), and :func:`like`
  gives results back as the caller's framework's arrays.

Memory: inputs are processed in chunks of ``chunk_size`` elements (default
65,536); each step allocates a bounded number of chunk-sized temporaries (at
most ~40 arrays of 8 bytes per element, i.e. ~20 MiB per chunk by default),
beyond the output (and the optional per-element flags).  An operand that
broadcasts along an axis (other than a single value) is first expanded to the
result's shape.  A call whose operands or result would be larger than this
machine's memory (a broadcast view of 2**40 elements costs nothing to pass)
is refused from the shapes alone, before any work, with a MemoryError that
names the shape (``fpsim.array.engine.check_size``).

Threads: the conversions and :func:`add`, :func:`sub`, :func:`mul`,
:func:`div`, :func:`fma`, :func:`sqrt` take ``workers=``, the number of
threads a call may run its chunks on (numpy releases the interpreter lock in
its loops).  The default, None, uses every CPU this process may run on for
calls of about a million elements or more, one thread below; ``workers=1``
runs in the calling thread alone.  The other threads belong to one pool per
process (named ``fpsim_N``), started on first use and kept for later calls;
a call made from one of them runs in that thread.  Stochastic rounding runs
in one thread (its random numbers are drawn in element order).  The bits and
flags never depend on ``workers``.

>>> import numpy as np, fpsim
>>> from fpsim import array
>>> codes = array.encode(np.array([1e-5, 1.0, 70000.0, -0.0]), fpsim.FP16)
>>> [hex(c) for c in codes]
['0xa8', '0x3c00', '0x7c00', '0x8000']
>>> array.decode(codes, fpsim.FP16).tolist()
[1.0013580322265625e-05, 1.0, inf, -0.0]
>>> array.mul(np.float16([300.0]), np.float16([300.0]))     # 90000 overflows FP16
array([inf], dtype=float16)
"""

from ._arith import add, add_sequence, div, eq, fma, ge, gt, le, lt, mul, ne, sqrt, sub, unordered
from ._convert import convert, decode, encode, round
from .engine import DEFAULT_CHUNK, as_numpy, code_dtype, like, value_dtype

__all__ = ["decode", "encode", "round", "convert", "code_dtype", "value_dtype", "DEFAULT_CHUNK",
           "as_numpy", "like",
           "add", "add_sequence", "sub", "mul", "div", "fma", "sqrt",
           "eq", "ne", "lt", "le", "gt", "ge", "unordered"]
