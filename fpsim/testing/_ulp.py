"""ULP distance on a format's ordered codes.

The non-NaN codes of every format fpsim knows are sign-magnitude integers
whose magnitudes are in the order of the values they encode, with
consecutive magnitudes encoding consecutive representable values (the
infinity, where there is one, comes right after the largest finite value).
So the number of representable values from one code to another, the ULP
distance, is a difference of magnitudes on one side of zero and a sum across
it.  It is computed on integers: exact, symmetric, and defined for the
infinities (the largest finite value and infinity are 1 ULP apart).  +0 and
-0 are the same point (distance 0); a NaN has no distance.
"""

from __future__ import annotations

import numpy as np

from .._errstate import quiet
from ..array._kernel import specials
from ..formats import Format, Specials
from ..formats import format as _lookup

U64 = np.uint64


def nans(codes: np.ndarray, fmt: Format) -> np.ndarray:
    """Which of the unsigned ``codes`` are NaNs of ``fmt``."""
    mag = codes & codes.dtype.type(fmt.magnitude_mask)
    if fmt.specials is Specials.IEEE:
        # the array engine's rule without its infinity mask: this runs on
        # every element a comparison reads
        return np.greater(mag, codes.dtype.type(fmt.inf_code), out=mag.view(bool)
                          if mag.dtype.itemsize == 1 else None)
    return specials(fmt, codes, mag)[0]


def kinds(codes: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(is_nan, is_inf, is_zero)`` of unsigned ``codes`` of ``fmt``: the
    array engine's classification of special codes, and the zeros (±0,
    where the format has them) among the rest."""
    mag = codes & codes.dtype.type(fmt.magnitude_mask)
    is_nan, is_inf = specials(fmt, codes, mag)
    if not fmt.has_zero:
        return is_nan, is_inf, np.zeros(codes.shape, bool)
    return is_nan, is_inf, (mag == 0) & ~is_nan  # FNUZ: the "-0" code is the NaN


def distance(a: np.ndarray, b: np.ndarray, fmt: Format) -> np.ndarray:
    """The ULP distance between codes ``a`` and ``b`` of ``fmt`` as uint64
    (meaningless where either is a NaN: mask those with :func:`kinds`).

    Magnitudes stay below 2**63 for formats up to 64 bits, so a sum across
    zero fits uint64 and nothing wraps."""
    mask = U64(fmt.magnitude_mask)
    a = a.astype(U64, copy=False)
    b = b.astype(U64, copy=False)
    ma, mb = a & mask, b & mask
    same_side = (a >> U64(fmt.width - 1)) == (b >> U64(fmt.width - 1)) if fmt.signed else True
    within = np.where(ma >= mb, ma - mb, mb - ma)
    if fmt.signed is False:
        return within
    # Without a zero, the smallest magnitudes of either sign are neighbours.
    across = ma + mb + U64(0 if fmt.has_zero else 1)
    return np.where(same_side, within, across)


@quiet
def ulp_distance(a: int, b: int, fmt: Format | str) -> int | None:
    """The ULP distance between two codes of ``fmt``; None if either is a NaN.

    >>> import fpsim
    >>> ulp_distance(0x7BFF, 0x7C00, fpsim.FP16)      # max finite and +inf
    1
    >>> ulp_distance(0x8001, 0x0001, fpsim.FP16)      # across zero
    2
    >>> ulp_distance(0x8000, 0x0000, fpsim.FP16)      # -0 and +0
    0
    >>> ulp_distance(0x7E00, 0x3C00, fpsim.FP16) is None
    True
    >>> ulp_distance(0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, "fp64")  # FP64 max and -max: exact
    18437736874454810622
    """
    fmt = _lookup(fmt)
    a, b = fmt.check_code(a), fmt.check_code(b)
    if fmt.is_nan_code(a) or fmt.is_nan_code(b):
        return None
    return int(distance(np.array([a], U64), np.array([b], U64), fmt)[0])
