"""One sweep's definition and the work of one chunk.

A :class:`Spec` is small and picklable: it travels to every worker (thread,
process or Dask worker), which rebuilds the chunk's operands from its rank
range, runs the golden model (:mod:`fpsim.array`) and the candidate on them,
and returns the chunk's :class:`~fpsim.testing.tally.Partial`.

Memory per chunk of ``C`` elements: the operands (8 bytes each per operand
while being made, then the code width), the flat indices (8 bytes), both
results (the code width each) and the candidate's own temporaries; the
golden model works in slices of :data:`fpsim.array.DEFAULT_CHUNK` elements
whatever ``C`` (at most ~20 MiB); the comparison adds a few bytes per
element.  benchmarks/bench_sweep.py measures it (about 37 bytes per
element for FP16 add: 37 MiB for the default chunk of 2**20).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import array as _array
from .. import nans
from ..context import Context
from ..formats import Format
from ..nans import NanPolicy
from ..testing.tally import Partial, Tolerance, summarize
from . import _candidate
from ._space import Space

# name: arity (the array engine's operations on one format)
OPS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1}
DEFAULT_CHUNK = 1 << 20


@dataclass(frozen=True)
class Spec:
    """What a sweep computes: ``op`` in ``space.fmt`` under the context
    ``settings``, the candidate, the chunking and the tolerance."""

    op: str
    space: Space
    settings: tuple[tuple[str, Any], ...]   # Context keyword arguments
    candidate: Any                          # a callable or its 'module:function' name
    chunk_size: int
    tol: Tolerance

    @property
    def fmt(self) -> Format:
        """The format swept."""
        return self.space.fmt

    @property
    def chunks(self) -> int:
        """How many chunks the space is cut into."""
        return -(-self.space.size // self.chunk_size)

    def bounds(self, chunk: int) -> tuple[int, int]:
        """The rank range of ``chunk``."""
        start = chunk * self.chunk_size
        return start, min(start + self.chunk_size, self.space.size)

    def context(self) -> Context:
        """A fresh context of the sweep's settings."""
        return Context(**dict(self.settings))

    def describe(self) -> dict[str, Any]:
        """Everything that decides the report, JSON-ready: a resumed sweep
        must have the same (the scheduler may differ)."""
        return {"op": self.op, "space": self.space.describe(),
                "context": {k: _described(v) for k, v in self.settings},
                "candidate": _candidate.name_of(self.candidate),
                "chunk_size": self.chunk_size,
                "tolerance": {"max_ulp": self.tol.max_ulp, "nan": self.tol.nan,
                              "signed_zero": self.tol.signed_zero,
                              "offenders": self.tol.offenders}}


def _described(value: Any) -> Any:
    """A setting as JSON: a NaN policy by its name if it is that preset,
    else by all its fields."""
    if isinstance(value, NanPolicy):
        presets = {p.name: p for p in nans.policies()}
        return value.name if presets.get(value.name) == value else dataclasses.asdict(value)
    return value


def operands(spec: Spec, r0: int, r1: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The operand codes of ranks ``r0 <= r < r1`` in the format's code
    type, and their flat indices."""
    codes, flat = spec.space.take(r0, r1)
    return [c.astype(_array.code_dtype(spec.fmt)) for c in codes], flat


def evaluate(spec: Spec, chunk: int) -> Partial:
    """The partial tally of one chunk: candidate against golden model."""
    r0, r1 = spec.bounds(chunk)
    fmt = spec.fmt
    codes, flat = operands(spec, r0, r1)
    expected = getattr(_array, spec.op)(*codes, spec.context(), fmt=fmt)
    actual = _candidate.call(spec.candidate, codes, fmt)
    return summarize(actual, expected, fmt, spec.tol, r0, flat)


def evaluate_within(spec: Spec, seconds: float, chunk: int) -> Partial:
    """:func:`evaluate`, given up after ``seconds``: a candidate that hangs
    must not hang the sweep (see :func:`within`)."""
    return within(seconds, evaluate, (spec, chunk), spec, lambda: describe_chunk(spec, chunk))


def within(seconds: float, fn: Any, args: tuple[Any, ...], spec: Spec, where: Any) -> Any:
    """``fn(*args)``, given up after ``seconds`` (see
    :func:`~fpsim._usercode.run_within`): the hung call is left in a
    daemon thread, and :class:`~fpsim.sweep._candidate.CandidateError`
    names the candidate and ``where()`` it hung."""
    def timed_out() -> BaseException:
        return _candidate.CandidateError(
            f"the candidate {_candidate.name_of(spec.candidate)!r} did not finish {where()} "
            f"within {seconds:g} s (the chunk timeout)")

    return _candidate.run_within(seconds, fn, args, timed_out)


def describe_chunk(spec: Spec, chunk: int) -> str:
    """``chunk 3 of 4096 (tuples 3145728..4194303, operands (0x0030, 0x0000)
    to (0x003f, 0xffff))``: where a failure happened, in the operands' codes."""
    r0, r1 = spec.bounds(chunk)
    digits = -(-spec.fmt.width // 4)

    def at(rank: int) -> str:
        codes, _ = operands(spec, rank, rank + 1)
        text = ", ".join(f"0x{int(c[0]):0{digits}x}" for c in codes)
        return f"({text})" if len(codes) > 1 else text

    return (f"chunk {chunk} of {spec.chunks} (tuples {r0}..{r1 - 1}, operands {at(r0)} to "
            f"{at(r1 - 1)})")
