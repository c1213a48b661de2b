"""fpsim.mma.accumulation and its engine against Berkeley SoftFloat.

The oracle below follows the steps of fpsim.mma.accumulation's docstring one
output element at a time, each addition, product and fused multiply-add a
SoftFloat operation (softfloatpy: f32_add, f32_mul, f32_mul_add, their f64
forms, and SoftFloat's conversions to FP16 and BF16); FTZ flushes a result
that SoftFloat rounded to a subnormal or flagged as underflowing (tininess
after rounding, x86's rule).  The engine (fpsim.mma._chains) computes on
numpy arrays with three paths (numpy's float32 where it is proven exact,
float64 sums checked for FP32 halfway points, fpsim.array.fma for FP64); the
inputs below reach each, and the halfway cases are constructed.
"""

from __future__ import annotations

import itertools
import zlib

import gmpy2
import ml_dtypes
import numpy as np
import pytest
import softfloatpy as sf

from fpsim.mma import _chains
from fpsim.mma.accumulation import Accumulation

# -- the oracle ----------------------------------------------------------------------------


def _f32(x: float) -> sf.Float32:
    return sf.Float32.from_bytes(np.float32(x).view(np.uint32).item().to_bytes(4, "big"))


def _f64(x: float) -> sf.Float64:
    return sf.Float64.from_bytes(np.float64(x).view(np.uint64).item().to_bytes(8, "big"))


def _val32(r: sf.Float32) -> float:
    return float(np.uint32(int.from_bytes(r.to_bytes(), "big")).view(np.float32))


def _val64(r: sf.Float64) -> float:
    return float(np.uint64(int.from_bytes(r.to_bytes(), "big")).view(np.float64))


class Oracle:
    """One accumulator's operations, by SoftFloat."""

    def __init__(self, acc: Accumulation):
        self.fp32 = acc.accumulator == "fp32"
        self.ftz = acc.ftz
        # SoftFloat's modes are global: another test may have left others set
        sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
        sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)

    def _do(self, name: str, *xs: float) -> float:
        sf.set_exception_flags(0)
        if self.fp32:
            r = _val32(getattr(sf, f"f32_{name}")(*map(_f32, xs)))
            if self.ftz and r != 0 and (abs(r) < 2.0**-126
                                        or sf.get_exception_flags() & sf.ExceptionFlag.UNDERFLOW):
                r = np.copysign(0.0, r)
            return r
        return _val64(getattr(sf, f"f64_{name}")(*map(_f64, xs)))

    def add(self, x: float, y: float) -> float:
        return self._do("add", x, y)

    def fma(self, a: float, b: float, c: float) -> float:
        return self._do("mul_add", a, b, c)

    def mul(self, a: float, b: float) -> float:
        return self._do("mul", a, b)


def oracle(acc: Accumulation, a: np.ndarray, b: np.ndarray, c: float | None, out: str) -> float:
    """One output element: a, b the K inputs of its row and column."""
    o = Oracle(acc)
    if acc.ftz:
        a = np.where(np.abs(a) < 2.0**-126, np.copysign(0.0, a), a)
        b = np.where(np.abs(b) < 2.0**-126, np.copysign(0.0, b), b)
        if c is not None and abs(c) < 2.0**-126:
            c = np.copysign(0.0, c)
    K = len(a)

    def step(v: float, k: int) -> float:
        if acc.products == "fma":
            return o.fma(float(a[k]), float(b[k]), v)
        return o.add(v, o.mul(float(a[k]), float(b[k])))

    sums = []
    for i, (lo, hi) in enumerate(acc.blocks(K)):
        order = list(range(lo, hi))
        if acc.pair_swap:
            for j in range(0, len(order) - 1, 2):
                order[j], order[j + 1] = order[j + 1], order[j]
        w, n = acc.lanes, len(order)
        if acc.apart is not None:          # runs of 2g: g into the chain, g summed apart
            g, j = acc.apart, 0
            v = c if (c is not None and i == 0 and acc.c_joins == "start") else 0.0
            while j + 2 * g <= n:
                for k in order[j:j + g]:
                    v = step(v, k)
                t = o.mul(float(a[order[j + g]]), float(b[order[j + g]]))
                for k in order[j + g + 1:j + 2 * g]:
                    t = step(t, k)
                v = o.add(v, t)
                j += 2 * g
            for k in order[j:]:
                v = step(v, k)
            sums.append(v)
            continue
        main = n if acc.tail == "lanes" else n - n % (acc.unroll or w)
        lanes = []
        for j in range(w):
            v = c if (c is not None and i == 0 and j == 0 and acc.c_joins == "start") else 0.0
            for k in order[j:main:w]:
                v = step(v, k)
            lanes.append(v)
        if acc.tail == "lane0":
            for k in order[main:]:
                lanes[0] = step(lanes[0], k)
        if acc.join == "sequential":
            s = lanes[0]
            for v in lanes[1:]:
                s = o.add(s, v)
        else:
            while len(lanes) > 1:
                if len(lanes) % 2:
                    lanes.append(0.0)
                h = len(lanes) // 2
                lanes = ([o.add(lanes[2 * t], lanes[2 * t + 1]) for t in range(h)]
                         if acc.join == "pairs" else
                         [o.add(lanes[t], lanes[t + h]) for t in range(h)])
            s = lanes[0]
        if acc.tail == "after" and main < n:
            t = None
            for k in order[main:]:
                p = o.mul(float(a[k]), float(b[k]))
                t = p if t is None else o.add(t, p)
            s = o.add(s, t)
        sums.append(s)
    if c is not None and (acc.c_joins == "first" or (acc.c_joins == "start" and not sums)):
        sums.insert(0, c)
    total = sums[0] if sums else 0.0
    for s in sums[1:]:
        total = o.add(total, s)
    if c is not None and acc.c_joins == "last":
        total = o.add(total, c)
    result = _round_out(total, acc.accumulator, out)
    if c is not None and acc.c_joins == "output":
        result = _mpfr_add(result, c, out)
    return result


# (precision, emin, emax) of MPFR contexts that round as the formats do
_MPFR = {"fp64": (53, -1073, 1024), "fp32": (24, -148, 128), "fp16": (11, -23, 16),
         "bf16": (8, -132, 128)}


def _mpfr_add(x: float, y: float, out: str) -> float:
    """x + y rounded once to ``out`` (nearest even), by MPFR."""
    prec, emin, emax = _MPFR[out]
    ctx = gmpy2.context(precision=prec, emin=emin, emax=emax, subnormalize=True,
                        round=gmpy2.RoundToNearest)
    r = ctx.add(gmpy2.mpfr(x, 53), gmpy2.mpfr(y, 53))
    r = ctx.check_range(r)
    return float(r)


def _round_out(x: float, acc: str, out: str) -> float:
    if out == "fp64" or (out == "fp32" and acc == "fp32"):
        return x
    v = _f64(x) if acc == "fp64" or out == "fp64" else _f32(x)
    if isinstance(v, sf.Float64):
        r = {"fp32": sf.f64_to_f32, "fp16": sf.f64_to_f16, "bf16": None}[out]
        if r is None:                      # no f64 -> bf16 in SoftFloat: x is an FP32 value here
            v = sf.f64_to_f32(v)
            r = sf.f32_to_bf16
    else:
        r = {"fp16": sf.f32_to_f16, "bf16": sf.f32_to_bf16}[out]
    got = r(v)
    code = int.from_bytes(got.to_bytes(), "big")
    dt = {"fp32": np.uint32, "fp16": np.uint16, "bf16": np.uint16}[out]
    vdt = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}[out]
    return float(np.array(code, dt).view(vdt).astype(np.float64))


# -- cases ---------------------------------------------------------------------------------

VARIANTS = [
    Accumulation(),
    Accumulation(products="rounded"),
    Accumulation(lanes=4, tail="lane0"),
    Accumulation(lanes=4, join="pairs", tail="after"),
    Accumulation(lanes=16, join="pairs"),
    Accumulation(lanes=16, join="halves"),
    Accumulation(lanes=8, join="halves", tail="after", products="rounded"),
    Accumulation(lanes=3, tail="lane0", products="rounded"),
    Accumulation(pair_swap=True, k_block=8),
    Accumulation(pair_swap=True, k_block=8, ftz=True),
    Accumulation(k_block=7, k_block_rule="halve_up", k_unroll=4),
    Accumulation(k_block=7, k_block_rule="halve"),
    Accumulation(lanes=2, k_block=10),
    Accumulation(lanes=2, tail="lane0", unroll=8),
    Accumulation(lanes=4, tail="after", unroll=8, join="pairs", products="rounded"),
    Accumulation(accumulator="fp64"),
    Accumulation(accumulator="fp64", lanes=8, join="pairs", k_block=12),
    Accumulation(accumulator="fp64", products="rounded", lanes=4, tail="after"),
]
C_JOIN = ("first", "start", "last", "output")


def _inputs(kind: str, rng: np.random.Generator, m: int, k: int, n: int
            ) -> tuple[np.ndarray, np.ndarray]:
    if kind == "fp32":
        x = rng.standard_normal((m, k)) * np.exp2(rng.integers(-30, 31, (m, k)))
        y = rng.standard_normal((k, n)) * np.exp2(rng.integers(-30, 31, (k, n)))
        return x.astype(np.float32).astype(float), y.astype(np.float32).astype(float)
    if kind == "bf16":
        x = rng.standard_normal((m, k)) * np.exp2(rng.integers(-60, 61, (m, k)))
        y = rng.standard_normal((k, n)) * np.exp2(rng.integers(-70, 71, (k, n)))
        cast = lambda v: v.astype(ml_dtypes.bfloat16).astype(float)  # noqa: E731
        return cast(x), cast(y)
    if kind == "fp16":
        x = rng.standard_normal((m, k)) * np.exp2(rng.integers(-8, 9, (m, k)))
        return (x.astype(np.float16).astype(float),
                rng.standard_normal((k, n)).astype(np.float16).astype(float))
    if kind == "tiny":          # subnormal products and sums in FP32 (FTZ acts)
        x = rng.standard_normal((m, k)) * 2.0**-64
        y = rng.standard_normal((k, n)) * 2.0**-63
        return (x.astype(ml_dtypes.bfloat16).astype(float),
                y.astype(ml_dtypes.bfloat16).astype(float))
    x = rng.standard_normal((m, k)) * np.exp2(rng.integers(-300, 301, (m, k)))
    y = rng.standard_normal((k, n)) * np.exp2(rng.integers(-300, 301, (k, n)))
    return x, y


def _outs(acc: Accumulation) -> tuple[str, ...]:
    return ("fp64",) if acc.accumulator == "fp64" else ("fp32", "bf16", "fp16")


def _bits_equal(x: np.ndarray, y: np.ndarray) -> bool:
    """Every bit equal, signed zeros included; a NaN equals a NaN (the
    engine gives values, the NaN's code is the row's: tested below)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    nan = np.isnan(x)
    return bool(np.array_equal(nan, np.isnan(y))
                and np.array_equal(x[~nan].view(np.uint64), y[~nan].view(np.uint64)))


@pytest.mark.parametrize("acc", VARIANTS, ids=str)
def test_engine_equals_softfloat(acc: Accumulation) -> None:
    rng = np.random.default_rng(zlib.crc32(str(acc).encode()))
    kinds = ("fp64",) if acc.accumulator == "fp64" else ("fp32", "bf16", "fp16", "tiny")
    for kind, out, K in itertools.product(kinds, _outs(acc), (1, 5, 19, 33)):
        m, n = 3, 4
        a, b = _inputs(kind, rng, m, K, n)
        for cj in (None,) + C_JOIN:
            ac = acc if cj is None else acc.replace(c_joins=cj)
            c = None
            if cj is not None:
                cv = rng.standard_normal((m, n)) * np.exp2(rng.integers(-20, 21, (m, n)))
                c = _round_out_array(cv, out)
            got = _chains.run(ac, a[:, None, :], b.T[None, :, :], c, out)
            want = np.array([[oracle(ac, a[i], b[:, j], None if c is None else c[i, j], out)
                              for j in range(n)] for i in range(m)])
            assert _bits_equal(got, want), (str(ac), kind, out, K, cj, got, want)


def test_apart_runs_equal_softfloat() -> None:
    """``apart`` (MKL's sgemm on the elements its aligned stores miss): every
    run of 2g products, the last g summed apart, against SoftFloat step by
    step, with K blocks, C by every rule, FP32 and FP64."""
    rng = np.random.default_rng(46)
    for acc in (Accumulation(products="rounded", apart=4), Accumulation(apart=3, k_block=10),
                Accumulation(accumulator="fp64", apart=2, products="rounded"),
                Accumulation(accumulator="fp64", apart=4)):
        kinds = ("fp64",) if acc.accumulator == "fp64" else ("fp32", "bf16", "tiny")
        for kind, K in itertools.product(kinds, (5, 8, 19, 33)):
            out = _outs(acc)[0]
            a, b = _inputs(kind, rng, 3, K, 4)
            for cj in (None,) + C_JOIN:
                ac = acc if cj is None else acc.replace(c_joins=cj)
                c = None if cj is None else _round_out_array(
                    rng.standard_normal((3, 4)) * np.exp2(rng.integers(-20, 21, (3, 4))), out)
                got = _chains.run(ac, a[:, None, :], b.T[None, :, :], c, out)
                want = np.array([[oracle(ac, a[i], b[:, j], None if c is None else c[i, j], out)
                                  for j in range(4)] for i in range(3)])
                assert _bits_equal(got, want), (str(ac), kind, K, cj, got, want)


def _round_out_array(v: np.ndarray, out: str) -> np.ndarray:
    dt = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16,
          "bf16": ml_dtypes.bfloat16}[out]
    with np.errstate(over="ignore"):
        return v.astype(dt).astype(np.float64)


def test_fp32_halfway_points_after_an_inexact_float64_sum() -> None:
    """acc = 1 + 2**-23 (odd), p = 2**-24·(1 + i·2**-23)·(1 - i·2**-23) =
    2**-24 - i²·2**-70: the float64 sum rounds to the FP32 halfway point
    1 + 2**-23 + 2**-24, whose tie would go up; the exact sum is below it."""
    i = np.arange(1, 200, dtype=np.float64)
    a = (2.0**-24 * (1 + i * 2.0**-23))[:, None]
    b = (1 - i * 2.0**-23)[:, None]
    acc = Accumulation()
    start = np.full(i.size, 1 + 2.0**-23)
    for sign in (1.0, -1.0):
        got = _chains.run(acc.replace(c_joins="start"), sign * a, b, sign * start, "fp32")
        assert (got == sign * (1 + 2.0**-23)).all()
        want = [oracle(acc.replace(c_joins="start"), sign * a[t], b[t], sign * start[t], "fp32")
                for t in range(i.size)]
        assert _bits_equal(got, np.array(want))


def test_ftz_flushes_what_softfloat_calls_tiny_after_rounding() -> None:
    """x86's FTZ (VDPBF16PS): a sum tiny after rounding is +-0, one that
    rounds up to 2**-126 is kept; subnormal inputs read as zero."""
    acc = Accumulation(ftz=True)
    cases = [(2.0**-127, 1.0, 0.0),                     # subnormal input: zero
             (2.0**-64, 2.0**-64, 0.0),                 # 2**-128 product: flushed
             # 2**-126·(1 - 2**-26): rounds (24 bits, unbounded exponent) to 2**-126: kept
             (2.0**-63 * (1 - 2.0**-13), 2.0**-63 * (1 + 2.0**-13), 2.0**-126),
             # 2**-126·(1 - 2**-24): exact and below 2**-126: flushed
             (2.0**-63 * (1 - 2.0**-12), 2.0**-63 * (1 + 2.0**-12), 0.0),
             (2.0**-62, 2.0**-63, 2.0**-125)]
    for x, y, want in cases:
        got = _chains.run(acc, np.array([[x]]), np.array([[y]]), None, "fp32")
        assert got[0] == want and np.signbit(got[0]) == np.signbit(want)


def test_blocks_follow_openblas_rules() -> None:
    """driver/level3/level3.c and level3_thread.c, by hand: K = 1000 with
    Q = 448, unroll 16 gives 448, ceil(552 // 2 / 16)·16 = 288, 264; 897 gives
    448, 224, 225; the threaded rule (552 + 1) // 2 = 276, 276; 896 gives
    448, 448."""
    up = Accumulation(k_block=448, k_block_rule="halve_up", k_unroll=16)
    assert [b - a for a, b in up.blocks(1000)] == [448, 288, 264]
    assert [b - a for a, b in up.blocks(896)] == [448, 448]
    assert [b - a for a, b in up.blocks(897)] == [448, 224, 225]      # 224 is whole unrolls
    half = Accumulation(k_block=448, k_block_rule="halve")
    assert [b - a for a, b in half.blocks(1000)] == [448, 276, 276]
    assert [b - a for a, b in Accumulation(k_block=512).blocks(1100)] == [512, 512, 76]
    assert Accumulation(k_block=4).blocks(0) == []


@pytest.mark.parametrize("kw, err, match", [
    ({"lanes": 0}, ValueError, "lanes"),
    ({"lanes": 4.0}, TypeError, "lanes"),
    ({"lanes": True}, TypeError, "lanes"),
    ({"accumulator": "fp16"}, ValueError, "accumulator"),
    ({"accumulator": 32}, TypeError, "accumulator"),
    ({"products": "fused"}, ValueError, "products"),
    ({"tail": ""}, ValueError, "tail"),
    ({"join": "pairs", "lanes": 6}, ValueError, "power-of-two"),
    ({"pair_swap": True, "lanes": 2}, ValueError, "pair_swap"),
    ({"apart": 4, "lanes": 2}, ValueError, "apart=4 splits one chain"),
    ({"apart": 0}, ValueError, "apart must be a positive int"),
    ({"lanes": 4, "unroll": 6}, ValueError, "not a multiple of lanes"),
    ({"unroll": 0}, ValueError, "unroll"),
    ({"ftz": True, "accumulator": "fp64"}, ValueError, "ftz"),
    ({"ftz": 1}, TypeError, "ftz"),
    ({"k_block_rule": "halve"}, ValueError, "need a k_block"),
    ({"c_joins": "epilogue"}, ValueError, "c_joins"),
])
def test_bad_fields_are_refused(kw: dict, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        Accumulation(**kw)


def test_nan_results_are_x86_default_nan() -> None:
    from fpsim.mma.cputable import to_dtype
    acc = Accumulation()
    a = np.array([[np.inf, 1.0]])
    b = np.array([[0.0, 1.0]])
    got = to_dtype(_chains.run(acc, a, b, None, "fp32"), "fp32")
    assert got.view(np.uint32)[0] == 0xFFC00000


def test_ops_matmul_takes_an_accumulation_or_a_library_row() -> None:
    import fpsim.mma as mma
    from fpsim import ops

    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 70)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal((70, 6)).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((5, 6)).astype(ml_dtypes.bfloat16)
    acc = Accumulation(lanes=4, tail="after", join="pairs", c_joins="last")
    got = ops.matmul(x, y, accumulate=acc, out="bf16", c=c)
    want = np.array([[oracle(acc, x[i].astype(float), y[:, j].astype(float), float(c[i, j]),
                             "bf16") for j in range(6)] for i in range(5)])
    assert got.dtype == ml_dtypes.bfloat16 and _bits_equal(got.astype(float), want)
    row = mma.cpu("torch", "bf16")
    assert np.array_equal(ops.matmul(x, y, accumulate=row, c=c).view(np.uint16),
                          row(x, y, c).view(np.uint16))
    with pytest.raises(ValueError, match="takes none of split_k"):
        ops.matmul(x, y, accumulate=acc, split_k=2)
    with pytest.raises(ValueError, match="takes bf16 x bf16 -> bf16; got bf16 x bf16 -> fp32"):
        ops.matmul(x, y, accumulate=row, out="fp32")
    with pytest.raises(ValueError, match="takes fp32 x fp32"):
        ops.matmul(x, y, accumulate=mma.cpu("numpy", "fp32"))


def test_a_rounded_product_tiny_after_rounding_is_flushed() -> None:
    """2**-126·(1 - 2**-24) rounds (subnormal grid) to 2**-126, but is tiny
    after rounding to 24 bits: FTZ flushes it, as SoftFloat's underflow flag
    says."""
    acc = Accumulation(products="rounded", ftz=True)
    a = np.array([[2.0**-63 * (1 - 2.0**-12)]])
    b = np.array([[2.0**-63 * (1 + 2.0**-12)]])
    got = _chains.run(acc, a, b, None, "fp32")
    assert got[0] == 0.0 and _bits_equal(got, np.array([oracle(acc, a[0], b[0], None, "fp32")]))


def test_a_block_shorter_than_the_lanes_joins_every_lane() -> None:
    """K = 5 in 16 lanes joined by halves: lanes 5..15 hold +0 and still take
    their places in the tree (l0 + l8, ..., then + l4, ...)."""
    rng = np.random.default_rng(7)
    acc = Accumulation(lanes=16, join="halves")
    for _ in range(50):
        a, b = _inputs("fp32", rng, 1, 5, 1)
        p = [np.float32(a[0, k]) * np.float32(b[k, 0]) for k in range(5)] + [np.float32(0)] * 11
        while len(p) > 1:
            h = len(p) // 2
            p = [np.float32(p[i] + p[i + h]) for i in range(h)]
        got = _chains.run(acc, a, b.T, None, "fp32")
        assert got[0] == np.float64(p[0])


# -- FP64 FMA chains: the whole-output emulation (_FMA64) ----------------------------------

def _fp64_case(kind: str, rng: np.random.Generator, m: int, k: int, n: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs and C that reach _FMA64 ("wide", "cancel", "ties", "zeros") or
    send the chain to fpsim.array.fma ("tiny": products below 2**-960 and
    subnormal sums; "huge": Veltkamp's split would overflow)."""
    x = rng.standard_normal((m, k))
    y = rng.standard_normal((k, n))
    c = rng.standard_normal((m, n))
    if kind == "wide":
        x *= np.exp2(rng.integers(-300, 301, (m, k)))
        y *= np.exp2(rng.integers(-300, 301, (k, n)))
        c *= np.exp2(rng.integers(-300, 301, (m, n)))
    elif kind == "cancel":        # each product cancelled by the next (then kept ulps)
        y[1::2] = -y[:-1:2] * (1 + rng.integers(-4, 5, y[1::2].shape) * 2.0**-52)
        x[:, 1::2] = x[:, :-1:2]
        c *= 2.0**-40
    elif kind == "ties":          # C + products of 2**-53 (or ±2**-105 off it): FP64 ties
        i = rng.integers(-3, 4, (m, k))
        j = rng.integers(-3, 4, (k, n))
        x = 2.0**-26 * (1 + i * 2.0**-52)
        y = 2.0**-27 * (1 + j * 2.0**-52) * rng.choice([-1.0, 1.0], (k, n))
        c = 1 + rng.integers(0, 8, (m, n)) * 2.0**-52
    elif kind == "zeros":         # signed zeros in A, B and C
        x[rng.random(x.shape) < 0.4] = 0.0
        y[rng.random(y.shape) < 0.4] = -0.0
        x[rng.random(x.shape) < 0.2] *= -0.0
        c[rng.random(c.shape) < 0.5] = -0.0
    elif kind == "tiny":
        x *= 2.0**-530
        y *= 2.0**-500
        c *= 2.0**-1060
    elif kind == "huge":
        x *= 2.0**995
        y *= 2.0**-1000
        c *= 2.0**-3
    return x, y, c


FMA64_KINDS = {"wide": True, "cancel": True, "ties": True, "zeros": True,
               "tiny": False, "huge": False}


@pytest.mark.parametrize("kind", FMA64_KINDS)
def test_fp64_fma_chains_equal_softfloat(kind: str) -> None:
    """The whole-output FP64 emulation where its range check passes, the
    per-step fpsim.array.fma where it does not: f64_mulAdd step by step,
    every bit (signed zeros included), C at the start, first, last."""
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    for acc in (Accumulation(accumulator="fp64"),
                Accumulation(accumulator="fp64", lanes=4, tail="lane0", join="pairs",
                             k_block=9)):
        for K, cj in itertools.product((1, 2, 7, 30), ("start", "first", "last", None)):
            m, n = 5, 6
            a, b, c = _fp64_case(kind, rng, m, K, n)
            ac = acc if cj is None else acc.replace(c_joins=cj)
            cc = None if cj is None else c
            A, B = a[:, None, :], b.T[None, :, :]
            assert _chains._FMA64.applies(A, B, cc, K) == FMA64_KINDS[kind] or kind == "zeros"
            got = _chains.run(ac, A, B, cc, "fp64")
            want = np.array([[oracle(ac, a[i], b[:, j], None if cc is None else c[i, j],
                                     "fp64") for j in range(n)] for i in range(m)])
            assert _bits_equal(got, want), (str(ac), kind, K, cj, got, want)


@pytest.mark.parametrize("kind", ["wide", "cancel", "ties", "zeros"])
def test_fp64_whole_output_chain_equals_per_step_fma(kind: str, monkeypatch) -> None:
    """Fast path equals the exact path: 64×48 outputs, K = 96 (three
    row chunks of _FMA64), against fpsim.array.fma step by step."""
    rng = np.random.default_rng(zlib.crc32(b"per-step " + kind.encode()))
    a, b, c = _fp64_case(kind, rng, 64, 96, 48)
    A, B = a[:, None, :], b.T[None, :, :]
    acc = Accumulation(accumulator="fp64", k_block=40, c_joins="start")
    assert _chains._FMA64.applies(A, B, c, 96)
    monkeypatch.setattr(_chains, "_FMA64_ELEMENTS", 1024)
    fast = _chains.run(acc, A, B, c, "fp64")
    monkeypatch.setattr(_chains._FMA64, "applies", staticmethod(lambda *args: False))
    slow = _chains.run(acc, A, B, c, "fp64")
    assert np.array_equal(fast.view(np.uint64), slow.view(np.uint64))
