"""Reference operators with declared numerics.

A kernel is more than single additions: a GEMM with FP16 inputs and FP32
accumulation, a sum in a given order.  Each operator here is a sequence of
correctly rounded steps of :mod:`fpsim.array` whose formats and order are
keywords, so that a kernel's output can be compared bit for bit with what
its documented numerics imply:

* ``accumulate=``: the format of running sums (default FP32, or the input's
  format where FP32 does not hold its values: FP64 inputs accumulate in FP64);
* ``compute=``: the format products are rounded to (default: exact products,
  each rounded once together with its addition; the row-wise operators'
  elementwise math, default FP32, or FP64 for FP64 inputs);
* ``out=``: the result's format (default: the input's);
* ``order=``: which additions a reduction makes, and in what order:
  ``"sequential"``, ``"pairwise"``, ``("blocked", n)``, ``("split", s)``;
* the usual settings (``ctx=``, ``rounding=``, ``ftz=``, ``daz=``,
  ``saturate=``, ``rng=`` for stochastic rounding).

Every format up to 64 bits is an input: values of a float dtype (FP64 as
float64 arrays) or codes with ``fmt=``.  FP64 steps are the array engine's,
each correctly rounded; the elementary functions on FP64 are the golden
definition element by element (see :func:`exp`).

The running sum.  Terms are added to an accumulator in the ``accumulate``
format that starts at +0 (as a kernel's ``acc = 0`` does), each addition
rounded once in that format.  ``order`` says which additions:

* ``"sequential"``: ``acc = +0; acc = acc + t[k]`` for k = 0, 1, ..., K-1.
* ``"pairwise"``: a tree: adjacent terms are added in pairs, ``t[0] + t[1]``,
  ``t[2] + t[3]``, ..., an odd last term passing up unchanged, then the pair
  sums likewise, level by level, until one is left (no +0 start; zero terms
  give +0).
* ``("blocked", n)``: the terms in consecutive blocks of ``n``; each block
  summed sequentially from +0, then the block sums added sequentially into an
  accumulator starting at +0.
* ``("split", s)``: split-K: the terms cut into ``s`` contiguous pieces whose
  sizes differ by at most one, the longer ones first (as
  :func:`numpy.array_split`; empty pieces are skipped), each piece summed
  sequentially from +0, then the piece sums added sequentially from +0.
"""

from ._elementary import erf, exp, golden, log, reciprocal, rsqrt, tanh
from ._nn import (
    cross_entropy,
    gelu,
    layer_norm,
    log_softmax,
    mse_loss,
    relu,
    rms_norm,
    sigmoid,
    silu,
    softmax,
)
from ._reduce import dot, matmul, mean, sum  # noqa: A004

__all__ = ["sum", "mean", "dot", "matmul", "exp", "log", "tanh", "erf", "rsqrt", "reciprocal",
           "golden", "softmax", "log_softmax", "layer_norm", "rms_norm", "relu", "sigmoid", "silu",
           "gelu", "mse_loss", "cross_entropy"]
