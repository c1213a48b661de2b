"""Round-to-nearest-even from float32 and float64 agrees bit for bit with
numpy / ml_dtypes ``astype``.

The oracle is ml_dtypes' (and numpy's, for float16) array cast, compared on
bit patterns; NaN results are compared by NaN-ness only.  Exact midpoints are
built from the field decoder of tests/oracle.py, written from the format
definitions.

ml_dtypes 0.6 double-rounds float64 -> bfloat16 and float64 -> every float8
type (it casts through float32 first); this is detected empirically below
(``ML_DTYPES_DOUBLE_ROUNDS``).  For a format where it does, the float64
comparison is restricted to the inputs where double rounding cannot change
the result: those whose float32 rounding is exact, or does not land exactly
on a midpoint of the target format (every target value and midpoint is a
float32 value, and float32 rounding is monotone, so only a float64 input
that float32-rounds *onto* a target midpoint can be rounded differently).
numpy's float64 -> float16 is direct and is compared on every input.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim

from oracle import DTYPES, FormatSpec, floor_log2, pow2, spec_of

# name -> (fpsim format, dtype, the oracle's spec of the format: written from
# the definitions, not read from fpsim)
SPECS = {name: (fpsim.format(name), dtype, spec_of(name)) for name, dtype in DTYPES.items()}
NAMES = list(SPECS)


class Grid:
    """The non-negative finite values of a format, sorted, and derived limits."""

    def __init__(self, spec: FormatSpec):
        self.spec = spec
        self.m = spec.m
        self.emin = spec.emin
        self.values = list(spec.finite_values())
        assert self.values[0] == 0
        self.max = self.values[-1]
        self.min_sub = self.values[1]
        self.min_normal = pow2(self.emin)
        # the next value above max with an unbounded exponent range
        self.beyond_max = self.max + pow2(floor_log2(self.max) - self.m)

    def is_midpoint(self, x: float) -> bool:
        """Whether |x| lies exactly halfway between two adjacent values of the
        format (with unbounded exponent range above max)."""
        if x == 0 or not math.isfinite(x):
            return False
        v = abs(Fraction(x))
        t = v / pow2(self.spec.quantum(v) - 1)
        return t.denominator == 1 and t.numerator % 2 == 1


GRIDS = {name: Grid(spec) for name, (_, _, spec) in SPECS.items()}


def ml_dtypes_double_rounds(dtype) -> bool:
    """Whether the float64 -> ``dtype`` cast rounds twice (through float32):
    a value just above a tie of the target, which float32 rounds onto the
    tie, then rounds to even instead of up."""
    eps = float(ml_dtypes.finfo(dtype).eps)
    x = np.array([1.0 + eps / 2 + 2.0**-40, -(1.0 + eps / 2 + 2.0**-40)], dtype=np.float64)
    got = x.astype(dtype).astype(np.float64)
    return not (got[0] == 1.0 + eps and got[1] == -(1.0 + eps))


ML_DTYPES_DOUBLE_ROUNDS = {name: ml_dtypes_double_rounds(SPECS[name][1]) for name in NAMES}


def test_numpy_float64_to_float16_is_a_single_rounding():
    # The float64 comparison for fp16 relies on this.
    assert not ML_DTYPES_DOUBLE_ROUNDS["fp16"]


# -- input sets ------------------------------------------------------------------

FLOAT_INFO = {
    np.float32: (np.uint32, 8, 23, 127),
    np.float64: (np.uint64, 11, 52, 1023),
}


def random_bit_patterns(rng, src, grid: Grid, n: int) -> np.ndarray:
    """Random sign and fraction bits, exponent field uniform over the range
    where the target rounds (a few binades below min_subnormal to a few above
    max)."""
    utype, e_bits, m_bits, bias = FLOAT_INFO[src]
    lo = max(1, grid.emin - grid.m - 3 + bias)
    hi = min((1 << e_bits) - 2, floor_log2(grid.max) + 2 + bias)
    sign = rng.integers(0, 2, n, dtype=np.uint64)
    expo = rng.integers(lo, hi + 1, n, dtype=np.uint64)
    frac = rng.integers(0, 1 << m_bits, n, dtype=np.uint64)
    bits = (sign << np.uint64(e_bits + m_bits)) | (expo << np.uint64(m_bits)) | frac
    out = bits.astype(utype).view(src)
    if src is np.float32 and lo == 1:
        # the target reaches float32's subnormal range (bf16): add some
        sub = rng.integers(1, 1 << m_bits, n // 8, dtype=np.uint64)
        sub |= rng.integers(0, 2, n // 8, dtype=np.uint64) << np.uint64(31)
        out = np.concatenate([out, sub.astype(utype).view(src)])
    return out


def uniform_values(rng, src, grid: Grid, n: int) -> np.ndarray:
    mx = min(1.25 * float(grid.max), float(np.finfo(src).max))
    lin = rng.uniform(-mx, mx, n)
    lo = grid.emin - grid.m - 3
    hi = min(floor_log2(grid.max) + 2, 127)
    logu = np.exp2(rng.uniform(lo, hi, n)) * rng.choice([-1.0, 1.0], n)
    small = rng.uniform(-2 * float(grid.min_normal), 2 * float(grid.min_normal), n)
    return np.concatenate([lin, logu, small]).astype(src)


def exact_in(src, v: Fraction) -> float:
    f = float(v)
    with np.errstate(over="ignore"):
        assert Fraction(float(src(f))) == v, (src, v)
    return f


def representable_in(src, v: Fraction) -> bool:
    with np.errstate(over="ignore"):
        f = float(src(float(v)))
    return math.isfinite(f) and Fraction(f) == v


def midpoints(src, grid: Grid, limit: int | None = None, rng=None) -> np.ndarray:
    """Exact midpoints of adjacent values, including max+ulp/2, each
    also one ``src`` ulp above and below, both signs."""
    vals = grid.values + [grid.beyond_max]
    pairs = list(zip(vals[:-1], vals[1:]))
    if limit is not None and len(pairs) > limit:
        idx = rng.choice(len(pairs), limit, replace=False)
        keep = set(idx.tolist()) | {0, 1, len(pairs) - 1, len(pairs) - 2}
        pairs = [pairs[i] for i in sorted(keep)]
    mids = np.array([exact_in(src, (a + b) / 2) for a, b in pairs], dtype=src)
    up = np.nextafter(mids, src(np.inf))
    down = np.nextafter(mids, src(0))
    out = np.concatenate([mids, up, down])
    return np.concatenate([out, -out])


def near_overflow(src, grid: Grid) -> np.ndarray:
    mx = exact_in(src, grid.max)
    thr = exact_in(src, (grid.max + grid.beyond_max) / 2)
    base = [mx, thr, float(np.finfo(src).max)]
    for v in (grid.beyond_max, 2 * grid.max, 3 * grid.beyond_max / 2):
        if representable_in(src, v):
            base.append(float(v))
    base = np.array(base, dtype=src)
    out = [base]
    step_up, step_down = base.copy(), base.copy()
    with np.errstate(over="ignore"):
        for _ in range(3):
            step_up = np.nextafter(step_up, src(np.inf))
            step_down = np.nextafter(step_down, src(0))
            out += [step_up, step_down]
    out = np.concatenate(out)
    out = out[np.isfinite(out)]
    return np.concatenate([out, -out])


def subnormal_range(rng, src, grid: Grid, n: int) -> np.ndarray:
    mn = float(grid.min_normal)
    ms = float(grid.min_sub)
    fixed = np.array([ms, ms / 2, ms / 4, 1.5 * ms, 2.5 * ms, mn, mn - ms / 2, mn - ms,
                      mn / 2, float(np.finfo(src).smallest_subnormal)], dtype=src)
    steps = [fixed, np.nextafter(fixed, src(np.inf)), np.nextafter(fixed, src(0))]
    rand_sub = rng.uniform(0, mn, n).astype(src)
    below = (rng.uniform(0, 0.5, n) * ms).astype(src)
    out = np.concatenate(steps + [rand_sub, below])
    return np.concatenate([out, -out])


SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan]


def inputs(src, name: str, seed: int, n: int = 30000) -> np.ndarray:
    grid = GRIDS[name]
    rng = np.random.default_rng(seed)
    parts = [
        random_bit_patterns(rng, src, grid, n),
        uniform_values(rng, src, grid, n // 3),
        midpoints(src, grid, limit=4000, rng=rng),
        near_overflow(src, grid),
        subnormal_range(rng, src, grid, n // 6),
        np.array(SPECIALS, dtype=src),
    ]
    return np.concatenate(parts)


# -- the comparison -------------------------------------------------------------------

def compare(name: str, xs: np.ndarray, check_flags: bool = True) -> int:
    fmt, dtype, _ = SPECS[name]
    utype = np.uint8 if fmt.width == 8 else np.uint16
    with np.errstate(over="ignore", invalid="ignore"):
        ref = xs.astype(dtype)
        ref_bits = ref.view(utype).tolist()
        ref_back = ref.astype(np.float64).tolist()
    ctx = fpsim.Context()
    mismatches = []
    for x, rb, back in zip(xs.tolist(), ref_bits, ref_back):
        ctx.clear_flags()
        r = fmt.round(x, ctx)
        if math.isnan(back):
            ok = r.is_nan
        else:
            ok = r.bits == rb
        if ok and check_flags and math.isfinite(x):
            flags = ctx.flags
            inexact = not (back == x)
            ok = (fpsim.Flag.INEXACT in flags) == inexact and fpsim.Flag.INVALID not in flags
        if not ok:
            mismatches.append((x.hex(), hex(rb), back, hex(r.bits), str(ctx.flags)))
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
    return len(xs)


@pytest.mark.parametrize("name", NAMES)
def test_rne_from_float32_matches_ml_dtypes(name):
    xs = inputs(np.float32, name, seed=1000 + NAMES.index(name))
    assert compare(name, xs) > 10000


@pytest.mark.parametrize("name", NAMES)
def test_rne_from_float64_matches_ml_dtypes(name):
    xs = inputs(np.float64, name, seed=2000 + NAMES.index(name))
    if ML_DTYPES_DOUBLE_ROUNDS[name]:
        grid = GRIDS[name]
        with np.errstate(over="ignore"):
            via32 = xs.astype(np.float32).astype(np.float64)
        keep = np.ones(len(xs), dtype=bool)
        for i in np.nonzero(via32 != xs)[0].tolist():
            y = float(via32[i])
            if math.isfinite(y) and grid.is_midpoint(y):
                keep[i] = False
        assert keep.sum() > len(xs) // 2  # the restriction leaves most inputs
        xs = xs[keep]
    assert compare(name, xs) > 10000


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", NAMES)
def test_rne_from_float32_matches_ml_dtypes_large_sample(name):
    xs = inputs(np.float32, name, seed=3000 + NAMES.index(name), n=600000)
    assert compare(name, xs) > 600000


@pytest.mark.parametrize("name", NAMES)
def test_rne_exact_midpoints_tie_to_even_like_ml_dtypes(name):
    # All midpoints (no sampling), from float32, and as numpy float32 scalars.
    grid = GRIDS[name]
    xs = midpoints(np.float32, grid)
    compare(name, xs)
    fmt, dtype, _ = SPECS[name]
    utype = np.uint8 if fmt.width == 8 else np.uint16
    with np.errstate(over="ignore"):
        ref = xs.astype(dtype).view(utype)
    for x, rb in zip(xs[:: max(1, len(xs) // 2000)], ref[:: max(1, len(xs) // 2000)]):
        r = fmt.round(x)  # numpy float32 scalar input
        assert r.is_nan if math.isnan(float(x.astype(dtype))) else r.bits == rb, (x, rb, r)


def test_rne_fp16_midpoints_plus_minus_one_float64_ulp_match_numpy():
    # The inputs that a double rounding through float32 would get wrong.
    grid = GRIDS["fp16"]
    mids = midpoints(np.float64, grid)[: len(grid.values)]  # the exact midpoints, positive
    xs = np.concatenate([np.nextafter(mids, np.inf), np.nextafter(mids, 0.0)])
    xs = np.concatenate([xs, -xs])
    compare("fp16", xs)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_signed_zeros_infinities_and_nans_match_ml_dtypes(name, src):
    fmt, dtype, spec = SPECS[name]
    xs = np.array(SPECIALS, dtype=src)
    compare(name, xs)
    utype = np.uint8 if fmt.width == 8 else np.uint16
    with np.errstate(invalid="ignore"):
        ref = xs.astype(dtype)
    for x, rb in zip(xs.tolist(), ref.view(utype).tolist()):
        r = fmt.round(x)
        if math.isnan(x):
            assert r.is_nan
        elif math.isinf(x) and not spec.has_inf:
            assert r.is_nan  # no infinity, not saturating: NaN
        else:
            assert r.bits == rb
            if x == 0:
                assert r.is_zero
                neg_zero_exists = spec.has_neg_zero
                assert (r.bits != 0) == (neg_zero_exists and math.copysign(1, x) < 0)


def test_e8m0_rne_from_positive_float32_normals_matches_ml_dtypes():
    # Unsigned E8M0 (OCP MX scale): every code 2**(c - 127), 0xFF is NaN, no
    # zero.  Only float32 *normal* inputs are compared: ml_dtypes 0.6 rounds
    # float32 subnormals in (2**-127, 1.5 * 2**-127) up to 2**-126 although
    # 2**-127 (code 0x00) is nearer, e.g. 1.2 * 2**-127 -> 0x01.
    e8m0 = fpsim.Format("e8m0", 8, 0, 127, specials="fn", subnormals=False, signed=False)
    rng = np.random.default_rng(88)
    bits = rng.integers(1 << 23, 255 << 23, 40000, dtype=np.uint64).astype(np.uint32)
    ties = np.ldexp(np.float32(1.5), np.arange(-126, 128)).astype(np.float32)
    xs = np.concatenate([bits.view(np.float32), ties, np.nextafter(ties, np.float32(0)),
                         np.nextafter(ties, np.float32(np.inf))])
    with np.errstate(over="ignore", invalid="ignore"):
        ref = xs.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tolist()
    bad = []
    for x, rb in zip(xs.tolist(), ref):
        r = e8m0.round(x)
        if not (r.is_nan if rb == 0xFF else r.bits == rb):
            bad.append((x.hex(), hex(rb), hex(r.bits)))
    assert not bad, bad[:5]
