"""The array engine against the scalar path on pairs of codes of an 8-bit
format: the shared check of tests/test_p3109_formats.py and
tests/test_ml_dtypes_formats.py.

The scalar path (:mod:`fpsim.arith`, one exact value rounded once) is the
golden model; this asserts that :mod:`fpsim.array`'s operator gives the
same code for every pair asked, and names the first pair that differs."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

import fpsim
from fpsim import arith
from fpsim import array as fa


def every_pair() -> tuple[np.ndarray, np.ndarray]:
    """All 65,536 ordered pairs of 8-bit codes, as two uint8 arrays."""
    codes = np.arange(256, dtype=np.uint8)
    return np.repeat(codes, 256), np.tile(codes, 256)


def assert_array_equals_scalar(fmt: fpsim.Format, ops: Iterable[str],
                               pairs: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """For each operator name in ``ops`` (``"add"``, ``"mul"``, ...), the
    array engine's codes (a fresh default Context) equal the scalar path's
    on ``pairs`` (every pair when None)."""
    a, b = every_pair() if pairs is None else pairs
    for op in ops:
        got = getattr(fa, op)(a, b, fmt=fmt, ctx=fpsim.Context())
        scalar = getattr(arith, op)
        for x, y, c in zip(a.tolist(), b.tolist(), got.tolist()):
            want = scalar(fmt.from_bits(x), fmt.from_bits(y))
            assert c == want.bits, (fmt.name, op, hex(x), hex(y))
