"""fpsim.ops on FP64 (float64 arrays, or uint64 codes with fmt="fp64"): the
elementary functions, the reductions (sum, mean, dot, matmul) and the
row-wise operators (softmax, log_softmax, layer_norm, rms_norm, sigmoid,
gelu, mse_loss), against MPFR (gmpy2) emulating binary64 step by step.

The oracle is MPFR at 53 bits with subnormals (``gmpy2.ieee(64)``: emin
-1073, as 2**-1074 is 0.5 × 2**-1073 in MPFR's convention, and emax 1024),
which rounds every function and every +, ×, /, fma correctly in the
context's mode, signed zeros and overflow included.  Flags follow
IEEE 754-2019 §7 from MPFR's own: INEXACT where MPFR's result is inexact,
OVERFLOW where the result rounded with an unbounded exponent exceeds the
largest finite value, UNDERFLOW where an inexact result so rounded is below
2**-1022 (tininess after rounding, fpsim's default).  Special cases are
hand-derived from IEEE 754-2019 §9.2 and the functions' limits; the
expected values never come from fpsim."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

import fpsim
from fpsim import ops

Flag = fpsim.Flag
INEXACT, UNDERFLOW, OVERFLOW = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW
INVALID, DIV0 = Flag.INVALID, Flag.DIVIDE_BY_ZERO
NONE = Flag(0)

MAX = float.fromhex("0x1.fffffffffffffp+1023")
MIN_NORMAL = 2.0 ** -1022
TINY = 2.0 ** -1074                      # the smallest subnormal, 5e-324
BELOW_ONE = float.fromhex("0x1.fffffffffffffp-1")  # 1 - 2**-53
SNAN = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0]

MODES = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero,
         "rup": gmpy2.RoundUp, "rdn": gmpy2.RoundDown}
MPFR_NAMES = {"exp": "exp", "log": "log", "tanh": "tanh", "erf": "erf", "rsqrt": "rec_sqrt"}


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def binary64(mode: str = "rne") -> gmpy2.context:
    """MPFR emulating binary64 in ``mode``."""
    ctx = gmpy2.ieee(64)
    ctx.round = MODES[mode]
    return ctx


def unbounded(mode: str) -> gmpy2.context:
    """53 bits, an exponent range far beyond binary64's (the result rounded
    with an unbounded exponent, for the overflow and tininess rules)."""
    return gmpy2.context(precision=53, round=MODES[mode], emin=-100_000, emax=100_000)


def mp(x: float) -> gmpy2.mpfr:
    return gmpy2.mpfr(float(x), 53)  # exact


def expected_function(fn: str, x: float, mode: str) -> tuple[int, Flag]:
    """The bits and flags of ``fn(x)`` (finite, nonzero x in the function's
    domain) rounded into binary64 in ``mode``."""
    b, u = binary64(mode), unbounded(mode)
    b.clear_flags()
    rb = getattr(b, MPFR_NAMES[fn])(mp(x))
    ru = getattr(u, MPFR_NAMES[fn])(mp(x))
    flags = NONE
    if b.inexact:
        flags |= INEXACT
    if gmpy2.is_infinite(ru) or abs(ru) > MAX:
        flags |= OVERFLOW | INEXACT
    elif b.inexact and abs(ru) < MIN_NORMAL:
        flags |= UNDERFLOW
    return bits(float(rb)), flags


def run(fn: str, x: np.ndarray, **kw) -> tuple[list[int], list[Flag]]:
    got, flags = getattr(ops, fn)(np.asarray(x, np.float64), return_flags=True, **kw)
    assert got.dtype == np.float64
    return got.view(np.uint64).tolist(), [Flag(int(f)) for f in flags]


# -- elementary functions: hand-derived special values ---------------------------------------

NAN = float("nan")
INF = float("inf")
# (function, argument, mode, expected value, expected flags)
SPECIALS = [
    ("exp", 0.0, "rne", 1.0, NONE), ("exp", -0.0, "rdn", 1.0, NONE),
    ("exp", INF, "rne", INF, NONE), ("exp", -INF, "rne", 0.0, NONE),
    ("exp", NAN, "rne", NAN, NONE), ("exp", SNAN, "rne", NAN, INVALID),
    # e**710 > 2**1024: overflow; toward zero it is the largest finite value
    ("exp", 710.0, "rne", INF, OVERFLOW | INEXACT),
    ("exp", 710.0, "rtz", MAX, OVERFLOW | INEXACT),
    # e**-746 < 2**-1075 (half the smallest subnormal): 0, or TINY upward
    ("exp", -746.0, "rne", 0.0, UNDERFLOW | INEXACT),
    ("exp", -746.0, "rup", TINY, UNDERFLOW | INEXACT),
    # e**(2**-1074) = 1 + 2**-1074 + ...: 1, or 1 + 2**-52 upward
    ("exp", TINY, "rne", 1.0, INEXACT), ("exp", TINY, "rup", 1.0 + 2.0 ** -52, INEXACT),
    ("exp", -TINY, "rdn", BELOW_ONE, INEXACT),
    ("log", 1.0, "rdn", 0.0, NONE), ("log", 0.0, "rne", -INF, DIV0),
    ("log", -0.0, "rne", -INF, DIV0), ("log", -1.0, "rne", NAN, INVALID),
    ("log", -INF, "rne", NAN, INVALID), ("log", INF, "rne", INF, NONE),
    ("log", -TINY, "rne", NAN, INVALID),
    # log(1 + 2**-52) = 2**-52 - 2**-105 + 2**-156/3 - ...: just above the
    # FP64 value 2**-52 - 2**-105 (the grid below 2**-52 is 2**-105 apart)
    ("log", 1.0 + 2.0 ** -52, "rne", 2.0 ** -52 - 2.0 ** -105, INEXACT),
    ("log", 1.0 + 2.0 ** -52, "rup", 2.0 ** -52, INEXACT),
    ("tanh", 0.0, "rne", 0.0, NONE), ("tanh", -0.0, "rne", -0.0, NONE),
    ("tanh", INF, "rne", 1.0, NONE), ("tanh", -INF, "rne", -1.0, NONE),
    # 1 - tanh(20) = 2 e**-40 / (1 + e**-40) < 2**-54: 1 to nearest
    ("tanh", 20.0, "rne", 1.0, INEXACT), ("tanh", 20.0, "rtz", BELOW_ONE, INEXACT),
    ("tanh", -20.0, "rup", -BELOW_ONE, INEXACT),
    # tanh(x) = x - x**3/3 + ...: just below x
    ("tanh", TINY, "rne", TINY, UNDERFLOW | INEXACT),
    ("tanh", TINY, "rtz", 0.0, UNDERFLOW | INEXACT),
    ("tanh", -TINY, "rtz", -0.0, UNDERFLOW | INEXACT),
    ("erf", 0.0, "rne", 0.0, NONE), ("erf", -0.0, "rne", -0.0, NONE),
    ("erf", INF, "rne", 1.0, NONE), ("erf", -INF, "rne", -1.0, NONE),
    # 1 - erf(6) = erfc(6) = 2.2e-17 < 2**-54
    ("erf", 6.0, "rne", 1.0, INEXACT), ("erf", 6.0, "rdn", BELOW_ONE, INEXACT),
    # erf(x) = 2x/sqrt(pi) - ... = 1.128 x for tiny x: x to nearest, 2x upward
    ("erf", TINY, "rne", TINY, UNDERFLOW | INEXACT),
    ("erf", TINY, "rup", 2 * TINY, UNDERFLOW | INEXACT),
    ("rsqrt", 4.0, "rne", 0.5, NONE), ("rsqrt", TINY, "rne", 2.0 ** 537, NONE),
    ("rsqrt", 0.0, "rne", INF, DIV0), ("rsqrt", -0.0, "rne", -INF, DIV0),
    ("rsqrt", -1.0, "rne", NAN, INVALID), ("rsqrt", INF, "rne", 0.0, NONE),
    ("rsqrt", -INF, "rne", NAN, INVALID),
    # 1/sqrt(2**-1073) = 2**536 sqrt(2): irrational, a normal number
    ("rsqrt", 2 * TINY, "rne", 2.0 ** 536 * math.sqrt(2), INEXACT),
    ("reciprocal", 0.0, "rne", INF, DIV0), ("reciprocal", -0.0, "rne", -INF, DIV0),
    ("reciprocal", 3.0, "rtz", float.fromhex("0x1.5555555555555p-2"), INEXACT),
    ("reciprocal", 3.0, "rup", float.fromhex("0x1.5555555555556p-2"), INEXACT),
    # 1 / 2**-1074 = 2**1074 > max
    ("reciprocal", TINY, "rne", INF, OVERFLOW | INEXACT),
    ("reciprocal", -TINY, "rtz", -MAX, OVERFLOW | INEXACT),
]


def test_special_values_of_the_elementary_functions():
    for fn, x, mode, want, want_flags in SPECIALS:
        ctx = fpsim.Context(rounding=mode)
        (code,), (flags,) = run(fn, [x], ctx=ctx)
        got = struct.unpack("<d", struct.pack("<Q", code))[0]
        case = (fn, x, mode, got, flags)
        if math.isnan(want):
            assert math.isnan(got), case
        else:
            assert code == bits(want), case
        assert flags == want_flags, case
        assert ctx.flags == want_flags, case


def test_the_hand_derived_special_values_agree_with_mpfr():
    """(the oracle checked against the table: the same values, finite cases)"""
    for fn, x, mode, want, want_flags in SPECIALS:
        if fn == "reciprocal" or not math.isfinite(x) or x == 0 or math.isnan(want) \
                or (fn == "log" and x == 1.0) or want_flags & (DIV0 | INVALID):
            continue
        assert expected_function(fn, x, mode) == (bits(want), want_flags), (fn, x, mode)


def _arguments(fn: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """Random FP64 arguments: codes drawn uniformly (every binade alike:
    subnormals, tiny, huge), values in the function's interesting range, and
    near its thresholds."""
    codes = rng.integers(0, 0x7FF0000000000000, n // 2, dtype=np.uint64, endpoint=False)
    wide = codes.view(np.float64)
    if fn in ("exp",):
        near = rng.uniform(-750, 712, n - wide.size)
        edges = [709.782712893384, 709.7827128933841, -708.3964185322641, -744.4400719213812,
                 -745.1332191019411, -745.1332191019412]
    elif fn in ("tanh", "erf"):
        near = rng.standard_normal(n - wide.size) * np.exp2(rng.uniform(-3, 3, n - wide.size))
        edges = [2.0 ** -27, 19.06154746539849, 5.9215871957945]
    else:  # log, rsqrt: positive
        near = np.exp2(rng.uniform(-1074, 1024, n - wide.size))
        edges = [MAX, MIN_NORMAL, TINY, 1.0 - 2.0 ** -53, 1.0 + 2.0 ** -52]
    x = np.concatenate([wide, near, edges])
    if fn in ("exp", "tanh", "erf"):
        x = np.where(rng.random(x.size) < 0.5, -x, x)
    return x


def test_random_arguments_in_every_mode_against_mpfr():
    for fn in MPFR_NAMES:
        rng = np.random.default_rng(sum(map(ord, fn)))
        x = _arguments(fn, rng, 120)
        for mode in MODES:
            got, flags = run(fn, x, rounding=mode)
            for xi, code, f in zip(x.tolist(), got, flags):
                assert (code, f) == expected_function(fn, xi, mode), (fn, xi, mode, hex(code),
                                                                      f)


@pytest.mark.exhaustive
@pytest.mark.parametrize("fn", ["exp", "log", "tanh", "erf", "rsqrt"])
def test_many_random_arguments_against_mpfr(fn):
    rng = np.random.default_rng(7 + sum(map(ord, fn)))
    x = _arguments(fn, rng, 20000)
    for mode in MODES:
        got, flags = run(fn, x, rounding=mode)
        for xi, code, f in zip(x.tolist(), got, flags):
            assert (code, f) == expected_function(fn, xi, mode), (fn, xi, mode, hex(code), f)


def test_codes_in_codes_out_and_each_element_its_own_flags():
    # uint64 codes with fmt="fp64" give codes; repeated codes (computed once)
    # each get their own result and flags, and the context the OR of them.
    x = np.array([0.5, TINY, 0.5, 0.0, TINY, 0.5, -1.0, 0.0])
    ctx = fpsim.Context()
    got, flags = ops.exp(x.view(np.uint64), ctx, fmt="fp64", return_flags=True)
    assert got.dtype == np.uint64
    want = [expected_function("exp", v, "rne") if v else (bits(1.0), NONE) for v in x.tolist()]
    assert got.tolist() == [w[0] for w in want]
    assert [Flag(int(f)) for f in flags] == [w[1] for w in want]
    assert ctx.flags == INEXACT
    # in chunks of 3 elements: the same
    again = ops.exp(x.view(np.uint64), fmt="fp64", return_flags=True, chunk_size=3)
    assert again[0].tolist() == got.tolist() and again[1].tolist() == flags.tolist()
    ctx = fpsim.Context()
    assert ops.log(x, ctx).view(np.uint64)[3] == bits(-INF)
    assert ctx.flags == INEXACT | INVALID | DIV0


def test_stochastic_rounding_gives_one_of_the_two_neighbours():
    x = np.repeat(np.array([0.1, 1.5, -3.25, 700.0]), 50)
    b_lo = [expected_function("exp", v, "rdn")[0] for v in x.tolist()]
    b_hi = [expected_function("exp", v, "rup")[0] for v in x.tolist()]
    got = ops.exp(x, rounding="sr", rng=np.random.default_rng(5)).view(np.uint64).tolist()
    assert all(g in (lo, hi) for g, lo, hi in zip(got, b_lo, b_hi))
    assert len(set(got)) == 8  # both neighbours of each argument drawn
    # random_bits= of every element: the same draws give the same results
    r = np.random.default_rng(3).integers(0, 2**32, x.size, dtype=np.uint64)
    a = ops.exp(x, rounding="sr", random_bits=r)
    assert np.array_equal(a, ops.exp(x, rounding="sr", random_bits=r))


def test_daz_and_ftz():
    # DAZ reads a subnormal operand as a zero of its sign: exp(0) = 1 exactly
    (code,), (flags,) = run("exp", [TINY], daz=True)
    assert (code, flags) == (bits(1.0), NONE)
    (code,), (flags,) = run("rsqrt", [-TINY], daz=True)
    assert (code, flags) == (bits(-INF), DIV0)
    # FTZ flushes a subnormal result to zero of its sign
    (code,), (flags,) = run("exp", [-740.0], ftz=True)
    assert code == bits(0.0) and flags & UNDERFLOW and flags & INEXACT
    (code,), (flags,) = run("tanh", [-3 * TINY], ftz=True)
    assert code == bits(-0.0) and flags & UNDERFLOW


def test_golden_scalar_and_array_agree_on_fp64():
    # (the array function is the golden definition element by element)
    x = np.array([0.75, -2.5, 1e-300])
    for fn in ("exp", "tanh", "erf"):
        want = [ops.golden(fn, fpsim.FP64.from_bits(bits(v))).bits for v in x.tolist()]
        assert getattr(ops, fn)(x).view(np.uint64).tolist() == want
        assert want == [expected_function(fn, v, "rne")[0] for v in x.tolist()]


# -- reductions --------------------------------------------------------------------------------

def _data(shape, seed, spread=40.0):
    """FP64 values over many binades, both signs, exact zeros of both signs,
    subnormals and repeats (so that sums cancel and round)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.uniform(-spread, spread, shape))
    x[rng.random(shape) < 0.05] = 0.0
    x[rng.random(shape) < 0.03] = -0.0
    x[rng.random(shape) < 0.03] = TINY * rng.integers(1, 1000)
    flat = x.reshape(-1)
    flat[1::7] = -flat[0::7][:flat[1::7].size]  # exact cancellations
    return x


class Oracle:
    """Running sums and products in MPFR emulating binary64 in one mode,
    with the IEEE flags they raise."""

    def __init__(self, mode: str = "rne") -> None:
        self.ctx = binary64(mode)
        self.ctx.clear_flags()

    @property
    def flags(self) -> Flag:
        f = NONE
        if self.ctx.inexact:
            f |= INEXACT
        if self.ctx.overflow:
            f |= OVERFLOW | INEXACT
        if self.ctx.invalid:
            f |= INVALID
        return f

    def add(self, a, b):
        return self.ctx.add(a, b)

    def seq(self, terms, start=None):
        acc = mp(0.0) if start is None else start
        for t in terms:
            acc = self.ctx.add(acc, mp(t) if isinstance(t, float) else t)
        return acc

    def pairwise(self, terms):
        level = [mp(t) if isinstance(t, float) else t for t in terms]
        if not level:
            return mp(0.0)
        while len(level) > 1:
            nxt = [self.ctx.add(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0]

    def pieces(self, terms, sizes):
        outer, start = mp(0.0), 0
        for size in sizes:
            if size:
                outer = self.ctx.add(outer, self.seq(terms[start:start + size]))
            start += size
        return outer

    def fma_chain(self, x, y):
        acc = mp(0.0)
        for a, b in zip(x, y):
            acc = self.ctx.fma(mp(a), mp(b), acc)
        return acc


def _check(got, want):
    """float64 results against MPFR values, bit for bit (NaN for NaN)."""
    got = np.asarray(got, np.float64).reshape(-1).tolist()
    want = [float(w) for w in want]
    for i, (g, w) in enumerate(zip(got, want)):
        assert (math.isnan(g) and math.isnan(w)) or bits(g) == bits(w), (i, g, w)
    assert len(got) == len(want)


def test_sequential_sum_in_every_mode():
    x = _data((4, 97), 1)
    for mode in MODES:
        ctx = fpsim.Context(rounding=mode)
        got = ops.sum(x, axis=1, ctx=ctx)
        assert got.dtype == np.float64
        oracle = Oracle(mode)
        _check(got, [oracle.seq(row) for row in x.tolist()])
        assert ctx.flags == oracle.flags == INEXACT, mode
        # along the other axis, and over everything (C order)
        _check(ops.sum(x, axis=0, rounding=mode), [oracle.seq(c) for c in x.T.tolist()])
        _check(ops.sum(x, rounding=mode), [oracle.seq(x.reshape(-1).tolist())])


def test_sum_accumulates_fp64_by_default():
    # 1e16 + 1 is a tie between 1e16 and 1e16 + 2 (FP64's spacing there is
    # 2), broken to 1e16 (even); 1 + 1 + 1e16 is exact
    assert float(ops.sum(np.array([1e16, 1.0, 1.0]))) == 1e16
    assert float(ops.sum(np.array([1.0, 1.0, 1e16]))) == 1e16 + 2
    # an FP32 accumulator, declared, rounds each term and each sum in FP32
    got = ops.sum(np.array([1.0, 2.0 ** -30]), accumulate="fp32", out="fp64")
    assert float(got) == 1.0
    # sums of integers below 2**40 are exact: math.fsum's exact total
    x = np.random.default_rng(2).integers(-2**40, 2**40, 500).astype(np.float64)
    assert float(ops.sum(x)) == math.fsum(x.tolist())


@pytest.mark.parametrize("order", ["pairwise", ("blocked", 8), ("split", 5)])
def test_orders(order):
    x = _data((3, 61), 3)
    got = ops.sum(x, axis=-1, order=order)
    oracle = Oracle()
    if order == "pairwise":
        want = [oracle.pairwise(r) for r in x.tolist()]
    elif order[0] == "blocked":
        n = order[1]
        want = [oracle.pieces(r, [min(n, len(r) - i) for i in range(0, len(r), n)])
                for r in x.tolist()]
    else:
        s, k = order[1], x.shape[1]
        sizes = [k // s + (1 if i < k % s else 0) for i in range(s)]
        want = [oracle.pieces(r, sizes) for r in x.tolist()]
    _check(got, want)


def test_sum_special_values():
    cases = [  # (terms, mode, expected value, expected flags)
        ([1.0, NAN, 2.0], "rne", NAN, NONE),
        ([INF, 1.0, -INF], "rne", NAN, INVALID),
        ([MAX, MAX], "rne", INF, OVERFLOW | INEXACT),
        ([MAX, MAX], "rtz", MAX, OVERFLOW | INEXACT),
        ([-MAX, -MAX], "rup", -MAX, OVERFLOW | INEXACT),
        ([MAX, MAX, -MAX], "rne", INF, OVERFLOW | INEXACT),   # inf once overflowed
        ([MAX, -MAX, MAX], "rne", MAX, NONE),
        ([-0.0, -0.0], "rne", 0.0, NONE),      # +0 + -0 = +0: the sum starts at +0
        ([-0.0, -0.0], "rdn", -0.0, NONE),     # ... and -0 toward -inf
        ([1.5, -1.5], "rdn", -0.0, NONE),      # an exact cancellation toward -inf
        ([TINY, TINY, TINY], "rne", 3 * TINY, NONE),  # subnormal sums are exact
        ([MIN_NORMAL, -TINY], "rne", MIN_NORMAL - TINY, NONE),
        ([], "rne", 0.0, NONE),
    ]
    for terms, mode, want, want_flags in cases:
        ctx = fpsim.Context(rounding=mode)
        got = float(ops.sum(np.array(terms, np.float64), ctx=ctx))
        case = (terms, mode, got, ctx.flags)
        assert (math.isnan(got) and math.isnan(want)) or bits(got) == bits(want), case
        assert ctx.flags == want_flags, case


def test_mean():
    x = _data((5, 33), 4)
    got = ops.mean(x, axis=1)
    oracle = Oracle()
    want = [oracle.ctx.div(oracle.seq(r), mp(33.0)) for r in x.tolist()]
    _check(got, want)
    assert math.isnan(float(ops.mean(np.zeros(0))))


@pytest.mark.parametrize("mode", ["rne", "rdn"])
def test_dot_is_a_chain_of_fmas(mode):
    rng = np.random.default_rng(5)
    x, y = _data(200, 6, 200.0), _data(200, 7, 200.0)
    for n in (0, 1, 2, 37, 200):
        ctx = fpsim.Context(rounding=mode)
        got = ops.dot(x[:n], y[:n], ctx=ctx)
        oracle = Oracle(mode)
        _check(got, [oracle.fma_chain(x[:n].tolist(), y[:n].tolist())])
        assert ctx.flags == oracle.flags, n
    # products of values near 1, where each fma keeps the low bits of its
    # product that a rounded product would lose
    a = 1.0 + rng.integers(1, 2**20, 50) * 2.0 ** -40
    b = 1.0 - rng.integers(1, 2**20, 50) * 2.0 ** -40
    _check(ops.dot(a, b, rounding=mode), [Oracle(mode).fma_chain(a.tolist(), b.tolist())])


def test_dot_pairwise_and_rounded_products():
    x, y = _data(45, 8), _data(45, 9)
    oracle = Oracle()
    leaves = [oracle.ctx.mul(mp(a), mp(b)) for a, b in zip(x.tolist(), y.tolist())]
    _check(ops.dot(x, y, order="pairwise"), [oracle.pairwise(leaves)])
    _check(ops.dot(x, y, compute="fp64"), [oracle.seq(leaves)])


def test_dot_overflow_and_specials():
    ctx = fpsim.Context()
    got = ops.dot(np.array([MAX, MAX]), np.array([2.0, -2.0]), ctx)
    assert float(got) == INF and ctx.flags == OVERFLOW | INEXACT  # inf + (-2 max) = inf
    # fma(max, 2, -max) = max exactly: the product is never rounded
    ctx = fpsim.Context()
    got = ops.dot(np.array([-MAX, MAX]), np.array([1.0, 2.0]), ctx)
    assert float(got) == MAX and ctx.flags == NONE
    assert math.isnan(float(ops.dot(np.array([INF, 1.0]), np.array([0.0, 1.0]))))


def test_an_fp32_accumulator_must_hold_fp64_inputs():
    with pytest.raises(ValueError, match="exact products need accumulate="):
        ops.dot(np.ones(3), np.ones(3), accumulate="fp32")


def test_matmul_fp64():
    a, b = _data((5, 19), 10, 100.0), _data((19, 4), 11, 100.0)
    got = ops.matmul(a, b)
    assert got.dtype == np.float64 and got.shape == (5, 4)
    oracle = Oracle()
    _check(got, [oracle.fma_chain(a[i].tolist(), b[:, j].tolist())
                 for i in range(5) for j in range(4)])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_narrow_inputs_accumulated_in_fp64(dtype):
    # Products of FP16 or FP32 values are exact in FP64: each is added with
    # one rounding in FP64 (the oracle's fma of the widened operands).
    a = _data((3, 40), 12, 6.0).astype(dtype)
    b = _data((40, 2), 13, 6.0).astype(dtype)
    got = ops.matmul(a, b, accumulate="fp64", out="fp64")
    assert got.dtype == np.float64
    oracle = Oracle()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _check(got, [oracle.fma_chain(a64[i].tolist(), b64[:, j].tolist())
                 for i in range(3) for j in range(2)])
    x = _data(300, 14, 10.0).astype(dtype)
    _check(ops.sum(x, accumulate="fp64", out="fp64"), [oracle.seq(x.astype(np.float64).tolist())])


# -- softmax, norms, activations, losses: FP64 compute and accumulation by default -------------

def test_softmax_and_log_softmax():
    x = _data((3, 9), 15, 3.0)
    x[1, 4] = 700.0   # e**(x - max) underflows for the others
    got, got_log = ops.softmax(x), ops.log_softmax(x)
    assert got.dtype == got_log.dtype == np.float64
    c = binary64()
    want, want_log = [], []
    for row in x.tolist():
        m = mp(max(row))
        d = [c.sub(mp(v), m) for v in row]
        e = [c.exp(v) for v in d]
        s = Oracle().seq(e)
        want += [c.div(v, s) for v in e]
        want_log += [c.sub(v, c.log(s)) for v in d]
    _check(got, want)
    _check(got_log, want_log)


@pytest.mark.parametrize("variance", ["two_pass", "one_pass"])
def test_layer_norm(variance):
    x, w, b = _data((4, 11), 16, 4.0), _data(11, 17, 1.0), _data(11, 18, 1.0)
    got = ops.layer_norm(x, w, b, variance=variance)
    c = binary64()
    n, eps = mp(11.0), mp(1e-5)
    want = []
    for row in x.tolist():
        xs = [mp(v) for v in row]
        mu = c.div(Oracle().seq(xs), n)
        d = [c.sub(v, mu) for v in xs]
        if variance == "two_pass":
            var = c.div(Oracle().seq([c.mul(v, v) for v in d]), n)
        else:
            q = c.div(Oracle().seq([c.mul(v, v) for v in xs]), n)
            var = c.sub(q, c.mul(mu, mu))
        r = c.rec_sqrt(c.add(var, eps))
        want += [c.add(c.mul(c.mul(v, r), mp(wi)), mp(bi))
                 for v, wi, bi in zip(d, w.tolist(), b.tolist())]
    _check(got, want)


def test_rms_norm():
    x = _data((3, 13), 19, 4.0)
    got = ops.rms_norm(x)
    c = binary64()
    want = []
    for row in x.tolist():
        xs = [mp(v) for v in row]
        ms = c.div(Oracle().seq([c.mul(v, v) for v in xs]), mp(13.0))
        r = c.rec_sqrt(c.add(ms, mp(1e-6)))
        want += [c.mul(v, r) for v in xs]
    _check(got, want)


def test_sigmoid_gelu_and_mse_loss():
    x = _data(40, 20, 3.0)
    t = _data(40, 21, 3.0)
    c = binary64()
    one = mp(1.0)
    sig = [c.div(one, c.add(one, c.exp(c.mul(mp(v), mp(-1.0))))) for v in x.tolist()]
    _check(ops.sigmoid(x), sig)
    gelu = [c.mul(c.mul(mp(v), mp(0.5)), c.add(one, c.erf(c.mul(mp(v), mp(0.7071067811865476)))))
            for v in x.tolist()]
    _check(ops.gelu(x), gelu)
    q = [c.mul(c.sub(mp(a), mp(b)), c.sub(mp(a), mp(b))) for a, b in zip(x.tolist(), t.tolist())]
    _check(ops.mse_loss(x, t), [c.div(Oracle().seq(q), mp(40.0))])


def test_declared_fp32_compute_on_fp64_input_is_still_honoured():
    # compute= and accumulate= given: the FP32 steps, the result back in FP64
    x = np.array([[0.0, 1.0, 2.0]])
    got = ops.softmax(x, compute="fp32", accumulate="fp32")
    c32 = gmpy2.ieee(32)
    e = [c32.exp(c32.sub(gmpy2.mpfr(v, 53), gmpy2.mpfr(2.0, 53))) for v in (0.0, 1.0, 2.0)]
    s = gmpy2.mpfr(0.0, 53)
    for v in e:
        s = c32.add(s, v)
    _check(got, [c32.div(v, s) for v in e])
    assert Fraction(float(got[0, 2])).denominator <= 2**25  # an FP32 value, widened


def test_a_wide_custom_format_takes_the_golden_path():
    # A 51-bit IEEE-style format: 10 exponent bits (bias 511), 40 fraction
    # bits: precision 41, normal exponents -510..511, subnormals down to
    # 2**-550 (MPFR: emin -549, emax 512).  Codes built and read by hand.
    fmt = fpsim.Format("test_fp51", exponent_bits=10, mantissa_bits=40, bias=511)
    ctx = gmpy2.context(precision=41, emin=-549, emax=512, subnormalize=True)

    def encode(v: Fraction) -> int:
        sign = 1 if v < 0 else 0
        v = abs(v)
        e = v.numerator.bit_length() - v.denominator.bit_length()
        if Fraction(2) ** e > v:
            e -= 1
        m = v / Fraction(2) ** e - 1
        assert (m * 2**40).denominator == 1 and -510 <= e <= 511
        return sign << 50 | (e + 511) << 40 | int(m * 2**40)

    def decode(c: int) -> Fraction:
        sign, e, m = c >> 50, (c >> 40) & 0x3FF, c & (2**40 - 1)
        assert e not in (0, 0x3FF)  # (normal results only, here)
        v = (1 + Fraction(m, 2**40)) * Fraction(2) ** (e - 511)
        return -v if sign else v

    args = [Fraction(k, 1024) for k in (-3000, -77, 1, 5, 1234, 100000)]
    codes = np.array([encode(a) for a in args], np.uint64)
    for fn, mpfr_fn in (("exp", ctx.exp), ("tanh", ctx.tanh), ("erf", ctx.erf)):
        got = getattr(ops, fn)(codes, fmt=fmt)
        want = [Fraction(*mpfr_fn(gmpy2.mpfr(gmpy2.mpq(a.numerator, a.denominator), 53))
                         .as_integer_ratio()) for a in args]
        assert [decode(int(c)) for c in got] == want, fn
