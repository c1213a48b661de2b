"""Candidate kernels for the sweep tests, importable by name
(``sweep_kernels:np_add``) in this process and in Dask workers.

The correct ones compute through numpy and ml_dtypes, not through fpsim:
numpy's float16 arithmetic is IEEE's (round to nearest even), and sums and
products of two 8-bit values are exact in float32, so ml_dtypes' one
rounding of them to the 8-bit type is the correctly rounded result.

The broken one has faults planted on subsets that the tests name exactly.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

E5M2 = ml_dtypes.float8_e5m2
E4M3 = ml_dtypes.float8_e4m3fn


def np_add(a, b):
    return a + b


def np_mul(a, b):
    return a * b


def e5m2_add(a, b):
    return (a.astype(np.float32) + b.astype(np.float32)).astype(E5M2)


def e4m3_mul(a, b):
    return (a.astype(np.float32) * b.astype(np.float32)).astype(E4M3)


def wrong_shape(a, b):
    return (a + b)[:-1]


def wrong_dtype(a, b):
    return a.astype(np.float32) + b.astype(np.float32)


def raises(a, b):
    raise ZeroDivisionError("planted")


not_callable = 42


# -- a broken E5M2 adder: three planted faults -----------------------------------------------

ONE_ULP_A = 0x3C              # 1.0
ONE_ULP_B = range(0x3C, 0x40)  # 1.0, 1.25, 1.5, 1.75: the result is one code too high
WRONG_NAN_A = 0x7E            # a quiet NaN
WRONG_NAN_B = range(0x00, 0x10)  # the result is b instead of NaN
MIN_NORMAL = 2.0 ** -14       # results below it in magnitude are flushed to zero of their sign


def broken_e5m2_add(a, b):
    codes = e5m2_add(a, b).view(np.uint8).copy()
    value = codes.view(E5M2).astype(np.float32)
    flush = (np.abs(value) < MIN_NORMAL) & (value != 0)
    codes[flush] &= 0x80
    ac, bc = a.view(np.uint8), b.view(np.uint8)
    up = (ac == ONE_ULP_A) & (bc >= ONE_ULP_B.start) & (bc < ONE_ULP_B.stop)
    codes[up] += 1
    wrong = (ac == WRONG_NAN_A) & (bc < WRONG_NAN_B.stop)
    codes[wrong] = bc[wrong]
    return codes.view(E5M2)


def broken_fp16_add(a, b):
    """numpy's float16 add, flushing subnormal results to zero of their sign,
    and one code too high where a is 1.0 and b in [1, 2)."""
    r = (a + b).view(np.uint16).copy()
    value = r.view(np.float16)
    flush = (np.abs(value) < np.float16(2.0 ** -14)) & (value != 0)
    r[flush] &= 0x8000
    ac, bc = a.view(np.uint16), b.view(np.uint16)
    up = (ac == 0x3C00) & (bc >= 0x3C00) & (bc < 0x4000)
    r[up] += 1
    return r.view(np.float16)


def dies_on_chunks(a, b):
    """e5m2_add on the sweep's first call (its probe, 4 operands, in the
    caller's process); on a chunk, the end of the process running it (a
    Dask worker killed under the sweep)."""
    if a.size > 64:
        import os

        os._exit(1)
    return e5m2_add(a, b)


def raises_on_chunks(a, b):
    """e5m2_add on the sweep's first call (its probe); ZeroDivisionError on
    a chunk (where it runs: a Dask worker)."""
    if a.size > 64:
        raise ZeroDivisionError("planted on a chunk")
    return e5m2_add(a, b)


def slow_e5m2_add(a, b):
    """e5m2_add, a quarter of a second late on each chunk."""
    if a.size > 64:
        import time

        time.sleep(0.25)
    return e5m2_add(a, b)
