"""The steps of a scalar operation, for operations built outside
:mod:`fpsim.arith` (the correctly rounded elementary functions of
:mod:`fpsim.ops`).

Internal contract: an operation on one :class:`~fpsim.Float` ``a`` starts
with ``fmt, env, (cls, negative, sig, exp) = unary_prologue(name, a, ctx,
overrides)`` (the context resolved, overrides and DAZ applied, ``a``
decoded: its class, sign and ``|a| = sig × 2**exp``) and ends with one of

* ``finish(env, fmt, negative, num, den, exp, extra_flags=0)``: the exact
  result ``±num/den × 2**exp`` rounded once by the rounding kernel, with
  its flags;
* ``infinity(env, fmt, negative, computed=0)``: an exact infinite result,
  not an overflow (NaN of that sign or ±max where the format has no
  infinity, as the context says); ``computed`` is the flag of an infinity
  computed from finite operands (divide-by-zero), 0 for one that comes from
  an infinite operand;
* ``invalid(env, fmt)``: the invalid operation, its default NaN and flag;
* ``nan_result(env, fmt, *operands)``: the result of NaN operands (quieted;
  a signaling one raises invalid), by the NaN policy.

``env`` is opaque.  The steps are :mod:`fpsim.arith`'s own, so an operation
built from them rounds, raises flags and treats NaNs exactly as IEEE
arithmetic does.
"""

from .arith import _finish as finish
from .arith import _infinity as infinity
from .arith import _invalid as invalid
from .arith import _nan_result as nan_result
from .arith import _unary as unary_prologue

__all__ = ["unary_prologue", "finish", "infinity", "invalid", "nan_result"]
