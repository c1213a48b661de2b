"""FP64 in the array engine against three independent oracles.

* Berkeley SoftFloat (softfloatpy, built with RISC-V's NaN rules: every NaN
  result is the canonical 0x7FF8000000000000, fpsim's ``nan="riscv"``):
  codes and flags of add, sub, mul, div, sqrt and fma in its five modes and
  both tininess settings;
* MPFR (gmpy2: 53 bits, binary64's exponent range, subnormalized): the
  values in the four directed modes, nearest even and away from zero;
* the scalar model (:mod:`fpsim.arith`, itself checked against both): every
  mode (round to odd included), FTZ, DAZ, tininess and every NaN policy,
  code for code and flag for flag.

And the fast path (:mod:`fpsim.array._fp64`) against the integer path
(:mod:`fpsim.array._chunks`, 128-bit products) on its edge classes: every
pair of exponents, every tie class, the subnormal and overflow boundaries.
"""

from __future__ import annotations

import math

import gmpy2
import numpy as np
import pytest
import softfloatpy as sf

import fpsim
from fpsim import FP64, array
from fpsim.array import _chunks
from fpsim.context import resolve

U64 = np.uint64
OPS = ("add", "sub", "mul", "div", "sqrt", "fma")
ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "sqrt": 1, "fma": 3}
SF_MODES = {"rne": sf.RoundingMode.NEAR_EVEN, "rtz": sf.RoundingMode.MIN_MAG,
            "rdn": sf.RoundingMode.MIN, "rup": sf.RoundingMode.MAX,
            "rna": sf.RoundingMode.NEAR_MAX_MAG}
SF_TININESS = {"after": sf.TininessMode.AFTER_ROUNDING, "before": sf.TininessMode.BEFORE_ROUNDING}
MODES = ("rne", "rna", "rtz", "rup", "rdn", "raz", "rto")
# SoftFloat's flag bits -> fpsim's (inexact, underflow, overflow, infinite, invalid)
SF_FLAGS = ((1, fpsim.Flag.INEXACT), (2, fpsim.Flag.UNDERFLOW), (4, fpsim.Flag.OVERFLOW),
            (8, fpsim.Flag.DIVIDE_BY_ZERO), (16, fpsim.Flag.INVALID))

MAX = 0x7FEFFFFFFFFFFFFF
SPECIALS = [0x0, 0x1, 0x2, 0xFFFFFFFFFFFFF, 0x10000000000000, 0x10000000000001,
            0x3FF0000000000000, 0x3FF0000000000001, 0x3FEFFFFFFFFFFFFF, 0x4000000000000000,
            0x3CA0000000000000,            # 2**-53
            0x03F0000000000000,            # 2**-960: the fast path's floor
            0x7E30000000000000,            # 2**996: Veltkamp's split's ceiling
            0x2000000000000000, 0x5FF0000000000000, MAX - 1, MAX, 0x7FF0000000000000,
            0x7FF8000000000000, 0x7FF8000000000123,   # quiet NaNs
            0x7FF0000000000001, 0x7FF4000000000456]   # signaling NaNs
SPECIALS += [c | (1 << 63) for c in SPECIALS]


def as_codes(values) -> np.ndarray:
    return np.asarray(values, U64)


# -- operands ---------------------------------------------------------------------------

def random_operands(kind: str, n: int, arity: int, seed: int) -> list[np.ndarray]:
    """``arity`` columns of ``n`` FP64 codes of one kind."""
    rng = np.random.default_rng(seed)
    if kind == "bits":
        return [rng.integers(0, 1 << 64, n, dtype=U64, endpoint=False) for _ in range(arity)]
    if kind == "near_one":
        # 1 ± a few hundred ulps, either sign: sums cancel, products and
        # quotients sit by 1 and its binade edges
        cols = []
        for _ in range(arity):
            k = rng.integers(-300, 300, n)
            base = np.where(k < 0, 0x3FF0000000000000 + k, 0x3FF0000000000000 + k)
            cols.append(base.astype(U64) | (rng.integers(0, 2, n, dtype=U64) << U64(63)))
        return cols
    if kind == "overflow":
        # exponents near the top: products, sums and quotients by the edge
        cols = []
        for i in range(arity):
            lo, hi = (0x3FC, 0x401) if i == 1 else (0x7EA, 0x7FF)
            e = rng.integers(lo, hi, n, dtype=U64)
            m = rng.integers(0, 1 << 52, n, dtype=U64)
            m = np.where(rng.random(n) < 0.3, U64((1 << 52) - 1) - (m & U64(15)), m)
            cols.append((e << U64(52)) | m | (rng.integers(0, 2, n, dtype=U64) << U64(63)))
        return cols
    if kind == "subnormal":
        # results at the smallest normal: subnormals, and normals whose
        # products, quotients and sums land there
        cols = []
        for i in range(arity):
            which = rng.integers(0, 3, n)
            m = rng.integers(0, 1 << 52, n, dtype=U64)
            e_sub = U64(0)
            e_small = rng.integers(0, 0x60, n, dtype=U64)
            e_half = rng.integers(0x1F0, 0x210, n, dtype=U64)   # about 2**-511
            e = np.where(which == 0, e_sub, np.where(which == 1, e_small, e_half))
            if i == 1:  # divisors and second factors near 1 or 2**-511
                e = np.where(which == 1, rng.integers(0x3FC, 0x402, n, dtype=U64), e)
            cols.append((e << U64(52)) | m | (rng.integers(0, 2, n, dtype=U64) << U64(63)))
        return cols
    if kind == "ties":
        # products of two 27-bit odd integers (54 bits, often a midpoint)
        # and sums of a 53-bit value and half its last place (times odd)
        a = (rng.integers(1 << 25, 1 << 26, n, dtype=U64) * U64(2) + U64(1)).astype(np.float64)
        b = (rng.integers(1 << 25, 1 << 26, n, dtype=U64) * U64(2) + U64(1)).astype(np.float64)
        scale = np.ldexp(1.0, rng.integers(-500, 450, n))
        x = a * scale
        y = np.where(rng.random(n) < 0.5, b * 2.0**-26,
                     np.ldexp(1.0, rng.integers(-80, -52, n)) * np.where(rng.random(n) < .5, 1, 3))
        ys = np.where(rng.random(n) < 0.5, y, y * x / a)
        cols = [x, ys, x * 0.75][:arity]
        return [np.where(rng.random(n) < 0.5, c, -c).view(U64) for c in cols]
    raise ValueError(kind)


KINDS = ("bits", "near_one", "overflow", "subnormal", "ties")


def fma_cancelling(n: int, seed: int) -> list[np.ndarray]:
    """fma operands whose addend cancels most of the product: c = -(a*b)
    rounded, and its neighbours, so the result is the product's low part."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n) * np.ldexp(1.0, rng.integers(-600, 600, n))
    b = rng.standard_normal(n) * np.ldexp(1.0, rng.integers(-300, 300, n))
    with np.errstate(all="ignore"):
        c = -(a * b)
    c = (c.view(U64) + rng.integers(-2, 3, n).astype(np.int64).view(U64))
    return [a.view(U64), b.view(U64), c]


def special_operands(arity: int) -> list[np.ndarray]:
    """Every combination of the special codes."""
    grid = np.meshgrid(*[as_codes(SPECIALS)] * arity, indexing="ij")
    return [g.reshape(-1) for g in grid]


# -- the oracles -----------------------------------------------------------------------

def _sf(code: int):
    return sf.Float64.from_bytes(code.to_bytes(8, "big"))


def softfloat(op: str, cols: list[np.ndarray], mode: str, tininess: str
              ) -> tuple[np.ndarray, np.ndarray]:
    sf.set_rounding_mode(SF_MODES[mode])
    sf.set_tininess_mode(SF_TININESS[tininess])
    fn = getattr(sf, "f64_mul_add" if op == "fma" else f"f64_{op}")
    codes, flags = [], []
    try:
        for args in zip(*[c.tolist() for c in cols]):
            sf.set_exception_flags(0)
            r = fn(*[_sf(a) for a in args])
            codes.append(int.from_bytes(r.to_bytes(), "big"))
            raw = sf.get_exception_flags()
            flags.append(sum(f.value for bit, f in SF_FLAGS if raw & bit))
    finally:
        sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
        sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    return as_codes(codes), np.array(flags, np.uint8)


MPFR_ROUND = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero, "rup": gmpy2.RoundUp,
              "rdn": gmpy2.RoundDown, "raz": gmpy2.RoundAwayZero}


def mpfr(op: str, cols: list[np.ndarray], mode: str) -> list[float | None]:
    """MPFR's binary64 results (None for NaN)."""
    ctx = gmpy2.context(precision=53, emin=-1073, emax=1024, subnormalize=True,
                        round=MPFR_ROUND[mode])
    values = [c.view(np.float64).tolist() for c in cols]
    out: list[float | None] = []
    with gmpy2.context(ctx):
        for args in zip(*values):
            m = [gmpy2.mpfr(a) for a in args]
            if op == "add":
                r = m[0] + m[1]
            elif op == "sub":
                r = m[0] - m[1]
            elif op == "mul":
                r = m[0] * m[1]
            elif op == "div":
                r = m[0] / m[1]
            elif op == "sqrt":
                r = gmpy2.sqrt(m[0])
            else:
                r = gmpy2.fma(m[0], m[1], m[2])
            r = gmpy2.check_range(r)
            out.append(None if gmpy2.is_nan(r) else float(r))
    return out


def scalar(op: str, cols: list[np.ndarray], **settings) -> tuple[np.ndarray, np.ndarray]:
    ctx = fpsim.Context(**settings)
    fn = getattr(fpsim.arith, op)
    codes, flags = [], []
    for args in zip(*[c.tolist() for c in cols]):
        ctx.clear_flags()
        codes.append(fn(*[FP64.from_bits(a) for a in args], ctx).bits)
        flags.append(ctx.flags.value)
    return as_codes(codes), np.array(flags, np.uint8)


def engine(op: str, cols: list[np.ndarray], **settings) -> tuple[np.ndarray, np.ndarray]:
    ctx = fpsim.Context(**settings)
    codes, flags = getattr(array, op)(*cols, ctx, fmt=FP64, return_flags=True)
    assert int(np.bitwise_or.reduce(flags)) == ctx.flags.value, "the context's flags"
    # the same bits as values, and with per-element flags not asked for
    ctx2 = fpsim.Context(**settings)
    values = getattr(array, op)(*[c.view(np.float64) for c in cols], ctx2)
    assert np.array_equal(values.view(U64), codes)
    assert ctx2.flags.value == ctx.flags.value
    return codes, flags


def show(cols, i) -> str:
    return ", ".join(f"{c[i]:#018x} ({float(c[i:i + 1].view(np.float64)[0])!r})" for c in cols)


def check_equal(what: str, cols, got, expected) -> None:
    got_codes, got_flags = got
    exp_codes, exp_flags = expected
    bad = np.flatnonzero((got_codes != exp_codes) | (got_flags != exp_flags))
    if bad.size:
        i = bad[0]
        raise AssertionError(
            f"{what}: {bad.size} of {got_codes.size} differ; first: operands {show(cols, i)}: "
            f"got {got_codes[i]:#018x} {fpsim.Flag(int(got_flags[i])).names()}, expected "
            f"{exp_codes[i]:#018x} {fpsim.Flag(int(exp_flags[i])).names()}")


def check_mpfr(what: str, cols, got_codes, expected) -> None:
    got = got_codes.view(np.float64).tolist()
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert math.isnan(g), f"{what}: {show(cols, i)}: got {g!r}, MPFR NaN"
        else:
            assert np.float64(g).view(U64) == np.float64(e).view(U64), \
                f"{what}: {show(cols, i)}: got {g!r}, MPFR {e!r}"


# -- the default run: a sample of every kind, every mode --------------------------------

N = 300


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", list(SF_MODES))
def test_softfloat_codes_and_flags(op, mode):
    for k, kind in enumerate(KINDS):
        cols = random_operands(kind, N, ARITY[op], seed=k)
        for tininess in SF_TININESS:
            got = engine(op, cols, rounding=mode, tininess=tininess, nan="riscv")
            check_equal(f"{op} {mode} {kind} tininess {tininess}", cols, got,
                        softfloat(op, cols, mode, tininess))
    if op == "fma":
        cols = fma_cancelling(4 * N, seed=9)
        check_equal(f"fma {mode} cancelling", cols,
                    engine(op, cols, rounding=mode, nan="riscv"),
                    softfloat(op, cols, mode, "after"))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", list(MPFR_ROUND))
def test_mpfr_values(op, mode):
    for k, kind in enumerate(KINDS):
        cols = random_operands(kind, N, ARITY[op], seed=100 + k)
        got, _ = engine(op, cols, rounding=mode)
        check_mpfr(f"{op} {mode} {kind}", cols, got, mpfr(op, cols, mode))


@pytest.mark.parametrize("op", OPS)
def test_special_values_every_combination_every_mode(op):
    cols = special_operands(ARITY[op]) if op != "fma" else [
        c[::7] for c in special_operands(3)]
    for mode in MODES:
        got = engine(op, cols, rounding=mode)
        check_equal(f"{op} {mode} specials", cols, got, scalar(op, cols, rounding=mode))


@pytest.mark.parametrize("op", OPS)
def test_settings_equal_the_scalar_model(op):
    """FTZ, DAZ, tininess before rounding, saturation and the NaN policies,
    on the subnormal boundary and on NaN operands."""
    cols = random_operands("subnormal", 200, ARITY[op], seed=7)
    specials = special_operands(ARITY[op])
    cols = [np.concatenate([c, s[::13]]) for c, s in zip(cols, specials)]
    for settings in ({"ftz": True}, {"daz": True}, {"ftz": True, "daz": True},
                     {"tininess": "before"}, {"saturate": True, "rounding": "rup"},
                     {"nan": "x86"}, {"nan": "arm_default_nan"}, {"nan": "riscv"},
                     {"rounding": "rto", "ftz": True}, {"rounding": "rdn", "daz": True}):
        check_equal(f"{op} {settings}", cols, engine(op, cols, **settings),
                    scalar(op, cols, **settings))


def test_signaling_nan_operands_raise_invalid():
    snan, one = 0x7FF4000000000000, 0x3FF0000000000000
    for op in OPS:
        for pos in range(ARITY[op]):
            args = [as_codes([one]) for _ in range(ARITY[op])]
            args[pos] = as_codes([snan])
            codes, flags = engine(op, args)
            assert fpsim.Flag(int(flags[0])) == fpsim.Flag.INVALID, op
            assert codes[0] == 0x7FFC000000000000, f"{op}: the NaN made quiet, its payload kept"


def test_zero_times_infinity_plus_quiet_nan():
    """IEEE 754 §7.2 leaves the invalid flag of fma(0, inf, qNaN) to the
    implementation; fpsim raises it (as SoftFloat and x86's FMA do)."""
    cols = [as_codes([0]), as_codes([0x7FF0000000000000]), as_codes([0x7FF8000000000000])]
    codes, flags = engine("fma", cols)
    assert fpsim.Flag(int(flags[0])) == fpsim.Flag.INVALID
    assert (codes[0] & 0x7FF8000000000000) == 0x7FF8000000000000


def test_stochastic_rounding_equals_the_scalar_model():
    cols = random_operands("near_one", 64, 2, seed=3)
    rand = np.random.default_rng(5).integers(0, 1 << 32, 64, dtype=np.uint32)
    for op in ("add", "mul", "div"):
        got = array.__dict__[op](*cols, fmt=FP64, rounding="sr", random_bits=rand,
                                 return_flags=True)
        ctx = fpsim.Context(rounding="sr")
        fn = getattr(fpsim.arith, op)
        for i in range(64):
            ctx.clear_flags()
            r = fn(FP64.from_bits(int(cols[0][i])), FP64.from_bits(int(cols[1][i])), ctx,
                   random_bits=int(rand[i]))
            assert (int(got[0][i]), int(got[1][i])) == (r.bits, ctx.flags.value), (op, i)


def test_the_fast_path_stands_aside_when_the_unit_is_not_ieee(monkeypatch):
    """With the machine's float64 not IEEE's (say a library set flush to
    zero), every lane takes the integer path: the same bits."""
    from fpsim import _machine
    cols = random_operands("subnormal", 500, 2, seed=11)
    before = engine("mul", cols, rounding="rup")
    monkeypatch.setattr(_machine, "float64_ops_are_ieee", lambda: False)
    check_equal("mul rup, integer path only", cols, engine("mul", cols, rounding="rup"),
                before)


def test_machine_probe_holds_here():
    from fpsim import _machine
    assert _machine.float64_ops_are_ieee()


def test_conversions_to_and_from_fp64():
    """encode/convert into FP64 from every narrower format are exact; FP64
    into FP32, FP16, BF16 and E4M3 equal the scalar model; codes are uint64."""
    rng = np.random.default_rng(1)
    codes = np.concatenate([rng.integers(0, 1 << 64, 2000, dtype=U64), as_codes(SPECIALS)])
    for dst in ("fp32", "fp16", "bf16", "e4m3", "e5m2"):
        for mode in ("rne", "rtz", "rto"):
            got = array.convert(codes, FP64, dst, rounding=mode, return_flags=True)
            ctx = fpsim.Context(rounding=mode)
            exp_codes, exp_flags = [], []
            for c in codes.tolist():
                ctx.clear_flags()
                exp_codes.append(fpsim.convert(FP64.from_bits(c), dst, ctx).bits)
                exp_flags.append(ctx.flags.value)
            assert got[0].tolist() == exp_codes and got[1].tolist() == exp_flags, (dst, mode)
    # into FP64: exact, except NaNs (the policy), saturated infinities,
    # DAZ's and FTZ's subnormals
    for src, width in (("fp32", 32), ("fp16", 16), ("bf16", 16), ("e4m3", 8), ("fp64", 64)):
        dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: U64}[width]
        src_codes = rng.integers(0, 1 << width, 3000, dtype=U64, endpoint=False).astype(dtype)
        for settings in ({}, {"saturate": True}, {"daz": True}, {"ftz": True}, {"nan": "x86"},
                         {"rounding": "rup", "saturate": True}):
            got = array.convert(src_codes, src, FP64, return_flags=True, **settings)
            ctx = fpsim.Context(**settings)
            make = fpsim.format(src).from_bits
            exp_codes, exp_flags = [], []
            for c in src_codes.tolist():
                ctx.clear_flags()
                exp_codes.append(fpsim.convert(make(c), FP64, ctx).bits)
                exp_flags.append(ctx.flags.value)
            assert got[0].tolist() == exp_codes and got[1].tolist() == exp_flags, \
                (src, settings)
    f32 = rng.standard_normal(1000).astype(np.float32)
    back = array.encode(f32, FP64)
    assert back.dtype == np.uint64
    assert np.array_equal(back.view(np.float64), f32.astype(np.float64))
    assert np.array_equal(array.decode(back, "fp64"), f32.astype(np.float64))


def test_add_sequence_in_fp64():
    rng = np.random.default_rng(2)
    terms = rng.standard_normal((50, 40)) * np.ldexp(1.0, rng.integers(-30, 30, (50, 40)))
    for mode in ("rne", "rdn"):
        got = array.add_sequence(terms, rounding=mode)
        with gmpy2.context(gmpy2.context(precision=53, emin=-1073, emax=1024,
                                         subnormalize=True, round=MPFR_ROUND[mode])):
            for j in range(terms.shape[1]):
                acc = gmpy2.mpfr(0)
                for t in terms[:, j].tolist():
                    acc = gmpy2.check_range(acc + gmpy2.mpfr(t))
                assert float(acc) == got[j]


def test_add_sequence_in_fp64_equals_a_loop_of_add_flags_included():
    """The machine's running sum (round to nearest even) and the
    step-by-step path (overflow, NaN, directed modes) both equal a loop of
    array.add, flags included."""
    rng = np.random.default_rng(6)
    cases = [rng.standard_normal((30, 8)), np.ones((5, 3)),
             np.array([[1e308, -1e308], [1e308, 1.0], [-1e308, np.nan]]),
             np.array([[2.0**-1074, 3.0], [2.0**-1074, -3.0]])]
    for terms in cases:
        for mode in ("rne", "rup"):
            ctx_seq, ctx_loop = fpsim.Context(rounding=mode), fpsim.Context(rounding=mode)
            got = array.add_sequence(terms, ctx_seq)
            acc = np.zeros(terms.shape[1])
            for t in terms:
                acc = array.add(acc, t, ctx_loop)
            assert np.array_equal(got.view(U64), acc.view(U64)), (terms, mode)
            assert ctx_seq.flags == ctx_loop.flags, (terms, mode)


def test_comparisons_on_fp64():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(100), as_codes(SPECIALS).view(np.float64)])
    y = np.concatenate([rng.standard_normal(100), as_codes(SPECIALS[::-1]).view(np.float64)])
    y[:50] = x[:50]
    with np.errstate(invalid="ignore"):
        assert np.array_equal(array.lt(x, y), x < y)
        assert np.array_equal(array.eq(x, y), x == y)
        assert np.array_equal(array.unordered(x, y), np.isnan(x) | np.isnan(y))


# -- the fast path's edge classes, against the integer path ------------------------------

def integer_path(op: str, cols: list[np.ndarray], **settings) -> tuple[np.ndarray, np.ndarray]:
    _, key = resolve(None, settings)
    return _chunks._CHUNK_OPS[op](FP64, cols, key, None)


def exponent_pairs(seed: int, sample: int) -> list[np.ndarray]:
    """Every pair of exponent fields (specials included) on ``sample``
    random significands and signs each."""
    rng = np.random.default_rng(seed)
    e = np.arange(2048, dtype=U64)
    ea, eb = (g.reshape(-1) for g in np.meshgrid(e, e, indexing="ij"))
    cols = []
    for field in (ea, eb):
        field = np.repeat(field, sample)
        m = rng.integers(0, 1 << 52, field.size, dtype=U64)
        m = np.where(rng.random(field.size) < 0.2, m & U64(0xFFFFF0000000000), m)
        s = rng.integers(0, 2, field.size, dtype=U64) << U64(63)
        cols.append(s | (field << U64(52)) | m)
    return cols


def tie_classes(n: int, seed: int) -> dict[str, list[np.ndarray]]:
    """Sums and products exactly halfway between two FP64 values, in every
    exponent gap and parity, either sign, across the exponent range."""
    rng = np.random.default_rng(seed)
    out = {}
    # x + y with y = ±2**(ex - 53 - g) × odd, g = 0 ... 2: ties at g = 0
    e = rng.integers(-1000, 1000, n)
    m = rng.integers(1 << 52, 1 << 53, n).astype(np.float64)
    x = np.ldexp(m, e - 52)
    g = rng.integers(0, 3, n)
    y = np.ldexp(rng.choice([1.0, 3.0, -1.0, -3.0], n), e - 53 - g)
    out["add"] = [np.where(rng.random(n) < .5, x, -x).view(U64), y.view(U64)]
    # products of 27-bit odd integers: 53 or 54 bits, odd (a tie) when 54
    a = (rng.integers(1 << 25, 1 << 26, n) * 2 + 1).astype(np.float64)
    b = (rng.integers(1 << 25, 1 << 26, n) * 2 + 1).astype(np.float64)
    k = rng.integers(-520, 480, n)
    out["mul"] = [np.ldexp(a, k).view(U64), np.ldexp(np.where(rng.random(n) < .5, b, -b),
                                                     rng.integers(-520, 480, n)).view(U64)]
    return out


def check_fast_equals_integer(op: str, cols: list[np.ndarray], modes=MODES) -> None:
    for mode in modes:
        for settings in ({}, {"ftz": True, "daz": True}):
            got = array.__dict__[op](*cols, fmt=FP64, rounding=mode, return_flags=True,
                                     **settings)
            check_equal(f"{op} {mode} {settings}", cols, got,
                        integer_path(op, cols, rounding=mode, **settings))


def test_fast_path_equals_integer_path_on_a_sample_of_exponent_pairs():
    cols = exponent_pairs(seed=1, sample=1)
    pick = np.random.default_rng(0).choice(cols[0].size, 40_000, replace=False)
    for op in ("add", "sub", "mul", "div"):
        check_fast_equals_integer(op, [c[pick] for c in cols])


def test_fast_path_equals_integer_path_on_ties():
    for op, cols in tie_classes(20_000, seed=2).items():
        check_fast_equals_integer(op, cols)


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", ("add", "sub", "mul", "div"))
def test_fast_path_equals_integer_path_on_every_exponent_pair(op):
    cols = exponent_pairs(seed=3, sample=1)
    for start in range(0, cols[0].size, 1 << 20):
        check_fast_equals_integer(op, [c[start:start + (1 << 20)] for c in cols])


@pytest.mark.exhaustive
def test_fast_path_equals_integer_path_on_every_radicand_exponent_and_tie_class():
    rng = np.random.default_rng(4)
    e = np.repeat(np.arange(2048, dtype=U64), 512)
    m = rng.integers(0, 1 << 52, e.size, dtype=U64)
    sign = (rng.random(e.size) < 0.05).astype(U64) << U64(63)
    check_fast_equals_integer("sqrt", [sign | (e << U64(52)) | m])
    for op, cols in tie_classes(1 << 20, seed=5).items():
        check_fast_equals_integer(op, cols)


def fma_exponent_pairs(seed: int, sample: int) -> list[np.ndarray]:
    """Every pair of exponent fields of the factors, with an addend of the
    product's magnitude give or take 60 binades (cancellation and
    alignment) on ``sample`` random significands each, a third of them the
    negated product itself rounded (the fused result is then the product's
    low part)."""
    a, b = exponent_pairs(seed, sample)
    rng = np.random.default_rng(seed + 1)
    n = a.size
    ea = ((a >> U64(52)) & U64(0x7FF)).astype(np.int64)
    eb = ((b >> U64(52)) & U64(0x7FF)).astype(np.int64)
    ec = np.clip(ea + eb - 1023 + rng.integers(-60, 61, n), 0, 2047).astype(U64)
    c = (rng.integers(0, 2, n, dtype=U64) << U64(63)) | (ec << U64(52)) \
        | rng.integers(0, 1 << 52, n, dtype=U64)
    with np.errstate(all="ignore"):
        minus_p = (-(a.view(np.float64) * b.view(np.float64))).view(U64)
    c = np.where(rng.random(n) < 1 / 3, minus_p, c)
    return [a, b, c]


@pytest.mark.exhaustive
def test_fma_fast_path_equals_integer_path_on_every_factor_exponent_pair():
    cols = fma_exponent_pairs(seed=6, sample=1)
    for start in range(0, cols[0].size, 1 << 20):
        check_fast_equals_integer("fma", [c[start:start + (1 << 20)] for c in cols])


def test_fma_fast_path_equals_integer_path_on_a_sample_of_exponent_pairs():
    cols = fma_exponent_pairs(seed=7, sample=1)
    pick = np.random.default_rng(0).choice(cols[0].size, 40_000, replace=False)
    check_fast_equals_integer("fma", [c[pick] for c in cols])
    check_fast_equals_integer("fma", fma_cancelling(20_000, seed=8))


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", list(SF_MODES))
def test_softfloat_on_a_million_random_operands(op, mode):
    """200,000 operands per operation and mode (six million in all) in
    every kind, both tininess settings on half each."""
    for k, kind in enumerate(KINDS):
        cols = random_operands(kind, 40_000, ARITY[op], seed=1000 + k)
        tininess = ("after", "before")[k % 2]
        check_equal(f"{op} {mode} {kind}", cols,
                    engine(op, cols, rounding=mode, tininess=tininess, nan="riscv"),
                    softfloat(op, cols, mode, tininess))


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", list(MPFR_ROUND))
def test_mpfr_on_random_operands(op, mode):
    for k, kind in enumerate(KINDS):
        cols = random_operands(kind, 20_000, ARITY[op], seed=2000 + k)
        got, _ = engine(op, cols, rounding=mode)
        check_mpfr(f"{op} {mode} {kind}", cols, got, mpfr(op, cols, mode))


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", OPS)
def test_scalar_model_every_mode_and_setting_on_random_operands(op):
    for k, kind in enumerate(KINDS):
        cols = random_operands(kind, 3000, ARITY[op], seed=3000 + k)
        for mode in MODES:
            for settings in ({}, {"ftz": True}, {"daz": True}, {"tininess": "before"}):
                check_equal(f"{op} {mode} {kind} {settings}", cols,
                            engine(op, cols, rounding=mode, **settings),
                            scalar(op, cols, rounding=mode, **settings))

