"""Exhaustive sweeps of the array engine's arithmetic (``tox -e exhaustive``):
every one of the 65,536 operand pairs of E4M3 and of E5M2, for add, sub, mul
and div, in every rounding mode (stochastic rounding with fixed random bits
per pair, sr_bits 3 and 32), saturation off and on, and every pair for the
comparisons; and every FP16 and BF16 code as each operand of every operation
(in arrays large enough for every computation path); result codes and
per-element flags against the scalar model (:mod:`fpsim.arith`), one Python
call per element.

The helpers (the scalar reference, the comparison with its failure report)
are those of ``test_array_arith.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_array_arith import (
    BINARY,
    COMPARISONS,
    LARGE,
    MODES,
    POLICIES,
    all_floats,
    check,
    ids,
    seed,
)

from fpsim import BF16, E4M3, E5M2, FP16

pytestmark = pytest.mark.exhaustive

FORMATS = [E4M3, E5M2]
SETTINGS = ([{"rounding": m} for m in MODES]
            + [{"rounding": "sr", "sr_bits": 3}, {"rounding": "sr", "sr_bits": 32}])
VARIANTS = [{"ftz": True}, {"daz": True}, {"tininess": "before"},
            {"ftz": True, "daz": True, "tininess": "before", "rounding": "rup"},
            *({"nan": p} for p in POLICIES)]


def setting_id(s):
    return "-".join(f"{k}={v}" for k, v in s.items())


def every_pair():
    """Codes a, b with a the slow index: pair i is (i >> 8, i & 0xff)."""
    codes = np.arange(256, dtype=np.int64)
    return np.repeat(codes, 256), np.tile(codes, 256)


@pytest.fixture(scope="module", autouse=True)
def floats_built_once():
    for fmt in [*FORMATS, *WIDE]:
        all_floats(fmt)  # one Float per code, shared by every test of the module


def random_bits_for(s, size, *key):
    if s.get("rounding") != "sr":
        return None
    rng = np.random.default_rng(seed("exhaustive", *key, s["sr_bits"]))
    return rng.integers(0, 1 << s["sr_bits"], size, dtype=np.uint64)


@pytest.mark.parametrize("saturate", [False, True], ids=["nosat", "sat"])
@pytest.mark.parametrize("settings", SETTINGS, ids=setting_id)
@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_every_pair_every_mode(fmt, op, settings, saturate):
    a, b = every_pair()
    s = {**settings, "saturate": saturate}
    check(op, fmt, [a, b], s, rand=random_bits_for(s, a.size, fmt, op, saturate))


@pytest.mark.parametrize("settings", VARIANTS, ids=setting_id)
@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_every_pair_ftz_daz_tininess_nan_policy(fmt, op, settings):
    a, b = every_pair()
    check(op, fmt, [a, b], settings)


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_every_pair_as_codes_with_fmt(fmt, op):
    """The same sweep through integer codes with ``fmt=`` (codes out)."""
    a, b = every_pair()
    check(op, fmt, [a, b], {"rounding": "rne"}, typed=False)


@pytest.mark.parametrize("signaling", [None, False, True], ids=["default", "quiet", "signaling"])
@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_every_pair_comparisons(fmt, op, signaling):
    a, b = every_pair()
    check(op, fmt, [a, b], signaling=signaling)


# -- every FP16 and BF16 code as each operand ----------------------------------------------

WIDE = [FP16, BF16]
ALL_SETTINGS = [{**s, "saturate": sat} for s in SETTINGS for sat in (False, True)]


def every_code_twice(fmt, k):
    """``k`` operand arrays of 2 x 65,536 codes: every code once in each
    position in the first half (the others a permutation of every code), and
    in the second half operands close to the first one or to its negation
    (cancellation, ties, exact results)."""
    rng = np.random.default_rng(seed("every code", fmt, k))
    n = 1 << fmt.width
    first = np.arange(n, dtype=np.int64)
    out = [np.concatenate([first, first])]
    for _ in range(k - 1):
        near = np.clip(first + rng.integers(-4, 5, n), 0, n - 1)
        near ^= rng.integers(0, 2, n) * fmt.sign_bit
        out.append(np.concatenate([rng.permutation(n), near]))
    assert out[0].size >= LARGE
    return out


@pytest.mark.parametrize("settings", ALL_SETTINGS, ids=setting_id)
@pytest.mark.parametrize("op", [*BINARY, "fma", "sqrt"])
@pytest.mark.parametrize("fmt", WIDE, ids=ids)
def test_every_16_bit_code_as_each_operand(fmt, op, settings):
    operands = every_code_twice(fmt, {"sqrt": 1, "fma": 3}.get(op, 2))
    check(op, fmt, operands, settings, rand=random_bits_for(settings, operands[0].size, fmt, op))


@pytest.mark.parametrize("settings", VARIANTS, ids=setting_id)
@pytest.mark.parametrize("op", [*BINARY, "fma", "sqrt"])
@pytest.mark.parametrize("fmt", WIDE, ids=ids)
def test_every_16_bit_code_ftz_daz_tininess_nan_policy(fmt, op, settings):
    operands = every_code_twice(fmt, {"sqrt": 1, "fma": 3}.get(op, 2))
    check(op, fmt, operands, settings)
