"""Elementwise arithmetic of the array engine (``fpsim.array.add``, ``sub``,
``mul``, ``div``, ``fma``, ``sqrt`` and the comparisons) equals the scalar
model :mod:`fpsim.arith` element by element: result code for result code (NaN
payloads, signs and policies included), per-element flag for flag, and the
context's sticky flags are the OR of the elements' flags.

The reference for every element is the scalar model, one Python call per
element under a :class:`fpsim.Context` with the same settings whose flags are
cleared before each element (the same thing as a fresh context per element).
The array side runs under its own fresh context.  Nothing here computes an
expected value with :mod:`fpsim.array` itself.

Operands travel as codes: typed arrays (float16, float32, bfloat16, float8_*)
are built with ``codes.view(dtype)``, so NaN payloads and signaling NaNs reach
both sides unchanged; TF32 and the custom E3M2 travel as integer codes with
``fmt=``.

The exhaustive sweeps (every pair of E4M3 / E5M2 codes in every mode) are in
``test_array_arith_exhaustive.py`` (``tox -e exhaustive``).
"""

from __future__ import annotations

import functools
import zlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpsim
from fpsim import (
    BF16,
    E4M3,
    E4M3FNUZ,
    E5M2,
    E5M2FNUZ,
    FP16,
    FP32,
    FP64,
    TF32,
    Flag,
    Specials,
    arith,
    array,
)

E3M2 = fpsim.Format("e3m2", 3, 2, 3, specials="none")

FORMATS = [FP16, BF16, E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, E3M2, TF32, FP32]
VALUE_DTYPES = {
    FP16: np.dtype(np.float16),
    FP32: np.dtype(np.float32),
    BF16: np.dtype(ml_dtypes.bfloat16),
    E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
    E5M2: np.dtype(ml_dtypes.float8_e5m2),
    E4M3FNUZ: np.dtype(ml_dtypes.float8_e4m3fnuz),
    E5M2FNUZ: np.dtype(ml_dtypes.float8_e5m2fnuz),
}
TYPED = list(VALUE_DTYPES)
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]
POLICIES = ["ieee", "x86", "arm_default_nan", "riscv"]
BINARY = ["add", "sub", "mul", "div"]
OPS = [*BINARY, "fma", "sqrt"]
ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1}
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge", "unordered"]
QUIET_BY_DEFAULT = {"eq", "ne", "unordered"}

# The scalar model raises ValueError for an element whose result is a NaN in
# a format without NaN (0/0 or sqrt(-1) in E3M2); such elements are marked so.
ERROR = -1


def ids(f):
    return f.name


def seed(*parts):
    return zlib.crc32("/".join(str(getattr(p, "name", p)) for p in parts).encode())


def cdtype(fmt):
    """The unsigned dtype of ``fmt``'s codes (what ``array.code_dtype`` must give)."""
    return np.dtype(np.uint8 if fmt.width <= 8 else np.uint16 if fmt.width <= 16 else np.uint32)


# -- the scalar reference ----------------------------------------------------------------

@functools.cache
def all_floats(fmt):
    """One Float per code of a format of at most 16 bits (built once, reused)."""
    return [fmt.from_bits(c) for c in range(1 << fmt.width)]


def floats(fmt, codes):
    codes = np.asarray(codes).reshape(-1).tolist()
    if fmt.width <= 16:
        table = all_floats(fmt)
        return [table[c] for c in codes]
    make = fmt.from_bits
    return [make(c) for c in codes]


def scalar(op, fmt, operands, settings=None, rand=None, signaling=None):
    """``(results, flags)`` of the scalar model for each element of the
    equal-length 1-D code arrays ``operands``: result codes (comparisons: 0/1)
    as int64, ERROR where the scalar model raises ValueError, flags as uint8."""
    f = getattr(arith, op)
    ctx = fpsim.Context(**(settings or {}))
    cols = [floats(fmt, c) for c in operands]
    comparison = op in COMPARISONS
    kw = {} if signaling is None else {"signaling": signaling}
    rs = [None] * len(cols[0]) if rand is None else np.asarray(rand).reshape(-1).tolist()
    out, flags = [], []
    for xs, r in zip(zip(*cols), rs):
        ctx.clear_flags()
        try:
            if r is None:
                res = f(*xs, ctx, **kw)
            else:
                res = f(*xs, ctx, random_bits=r)
        except ValueError:
            out.append(ERROR)
            flags.append(0)
            continue
        out.append(int(res) if comparison else res.bits)
        flags.append(ctx.flags.value)
    return np.array(out, dtype=np.int64), np.array(flags, dtype=np.uint8)


# -- the array side and the comparison -----------------------------------------------------

def as_input(fmt, codes, typed):
    """Codes as a typed array of ``fmt``'s values, or as integer codes."""
    c = np.asarray(codes).astype(cdtype(fmt))
    return c.view(VALUE_DTYPES[fmt]) if typed else c


def call(op, fmt, operands, ctx, typed, **kw):
    args = [as_input(fmt, c, typed) for c in operands]
    if not typed:
        kw["fmt"] = fmt
    return getattr(array, op)(*args, ctx, **kw)


def result_codes(op, fmt, got, typed):
    """The array result as int64 codes (comparisons: 0/1), its dtype checked."""
    got = np.asarray(got)
    if op in COMPARISONS:
        assert got.dtype == np.bool_, f"{op} returned dtype {got.dtype}, not bool"
        return got.reshape(-1).astype(np.int64)
    if typed:
        assert got.dtype == VALUE_DTYPES[fmt], (
            f"{op} on {VALUE_DTYPES[fmt]} arrays returned dtype {got.dtype}")
        return got.view(cdtype(fmt)).reshape(-1).astype(np.int64)
    assert got.dtype == cdtype(fmt), f"{op} on {fmt.name} codes returned dtype {got.dtype}"
    return got.reshape(-1).astype(np.int64)


def codes_out(fmt, got):
    """The codes of an array result (typed or codes) as a flat list of ints."""
    got = np.asarray(got)
    if got.dtype.kind != "u":
        got = got.view(cdtype(fmt))
    return [int(c) for c in got.reshape(-1)]


def describe(settings, kw):
    items = {**(settings or {}), **{k: v for k, v in kw.items()
                                    if k not in ("random_bits", "fmt", "return_flags")}}
    return ", ".join(f"{k}={getattr(v, 'name', v)}" for k, v in items.items()) or "defaults"


def show(fmt, code, comparison=False):
    if comparison:
        return str(bool(code))
    if code == ERROR:
        return "ValueError"
    width = (fmt.width + 3) // 4
    return f"0x{code:0{width}x} ({fmt.from_bits(code)})"


def assert_elements_equal(op, fmt, flat, rflat, settings, kw, got, got_flags, want,
                          want_flags, reference="scalar"):
    bad = np.flatnonzero((got != want) | (got_flags != want_flags))
    if not bad.size:
        return
    comparison = op in COMPARISONS
    lines = [f"{op} in {fmt.name} ({describe(settings, kw)}): {bad.size} of {want.size} "
             f"elements differ from the {reference} result; first ones:"]
    for i in bad[:6]:
        args = ", ".join(show(fmt, int(c[i])) for c in flat)
        extra = "" if rflat is None else f", random_bits={int(rflat[i])}"
        lines.append(
            f"  [{i}] {op}({args}{extra}): {reference} {show(fmt, int(want[i]), comparison)} "
            f"{Flag(int(want_flags[i]))!r}, array {show(fmt, int(got[i]), comparison)} "
            f"{Flag(int(got_flags[i]))!r}")
    pytest.fail("\n".join(lines))


def check(op, fmt, operands, settings=None, *, rand=None, typed=None, signaling=None,
          via_overrides=False, expected=None, **kw):
    """Run ``op`` on arrays of the codes ``operands`` (any shapes that
    broadcast) and compare every element with the scalar model.  ``settings``
    go into the context (or, with ``via_overrides``, are passed as keyword
    overrides to a default context); ``rand`` is passed as ``random_bits=``;
    ``kw`` go to the array function.  Returns the array's (result, flags)."""
    settings = dict(settings or {})
    typed = fmt in VALUE_DTYPES if typed is None else typed
    shape = np.broadcast_shapes(*(np.shape(c) for c in operands))
    flat = [np.broadcast_to(np.asarray(c), shape).reshape(-1) for c in operands]
    rflat = None if rand is None else np.broadcast_to(np.asarray(rand), shape).reshape(-1)
    if expected is None:
        expected = scalar(op, fmt, flat, settings, rflat, signaling)
    want, want_flags = expected
    if signaling is not None:
        kw["signaling"] = signaling
    if rand is not None:
        kw["random_bits"] = rand
    errors = want == ERROR
    if errors.any():
        # The scalar model raises ValueError for these elements (a NaN result
        # in a format without NaN): so must the array engine, for the array.
        with pytest.raises(ValueError, match="NaN"):
            call(op, fmt, operands, fpsim.Context(), typed, **kw, **settings)
        keep = ~errors
        operands = flat = [c[keep] for c in flat]
        shape = (int(keep.sum()),)
        if rflat is not None:
            rflat = rflat[keep]
            kw["random_bits"] = rflat
        want, want_flags = want[keep], want_flags[keep]
    if via_overrides:
        ctx = fpsim.Context()
        kw.update(settings)
    else:
        ctx = fpsim.Context(**settings)
    got, got_flags = call(op, fmt, operands, ctx, typed, return_flags=True, **kw)
    assert np.shape(got) == shape, f"{op}: result shape {np.shape(got)}, expected {shape}"
    assert np.shape(got_flags) == shape, f"{op}: flags shape {np.shape(got_flags)} != {shape}"
    got_flags = np.asarray(got_flags)
    assert got_flags.dtype == np.uint8, f"{op}: flags dtype {got_flags.dtype}, not uint8"
    codes = result_codes(op, fmt, got, typed)
    assert_elements_equal(op, fmt, flat, rflat, settings, kw, codes, got_flags.reshape(-1),
                          want, want_flags)
    sticky = Flag(int(np.bitwise_or.reduce(want_flags))) if want_flags.size else Flag(0)
    assert ctx.flags == sticky, (
        f"{op} in {fmt.name} ({describe(settings, kw)}): context flags {ctx.flags!r} != OR "
        f"of the elements' flags {sticky!r}")
    return got, got_flags


def assert_same_result(op, fmt, operands, got, want, settings=None, **kw):
    """Two array results ``(result, flags)`` for the same operands agree
    element for element (the failure names the first differing elements)."""
    shape = np.broadcast_shapes(*(np.shape(c) for c in operands))
    flat = [np.broadcast_to(np.asarray(c), shape).reshape(-1) for c in operands]
    assert np.shape(got[0]) == np.shape(want[0]) == shape
    assert_elements_equal(op, fmt, flat, None, settings, kw,
                          np.array(codes_out(fmt, got[0]), dtype=np.int64),
                          np.asarray(got[1]).reshape(-1),
                          np.array(codes_out(fmt, want[0]), dtype=np.int64),
                          np.asarray(want[1]).reshape(-1),
                          reference="checked-reference")


# -- operands biased to the special cases ---------------------------------------------------

def special_codes(fmt):
    """Codes of both signs: zeros, the smallest and largest subnormals, the
    smallest normals, one and its neighbours, two, max and its neighbours,
    infinity, and NaNs (quiet and signaling, several payloads)."""
    m = fmt.mantissa_bits
    one = fmt.bias << m
    mags = [0, 1, 2, 3, (1 << m) - 1, 1 << m, (1 << m) + 1, one - 1, one, one + 1,
            one + (1 << (m - 1)), one + (1 << m), fmt.max_code - 2, fmt.max_code - 1,
            fmt.max_code]
    if fmt.has_inf:
        mags.append(fmt.inf_code)
    if fmt.specials is Specials.IEEE:
        q, inf = 1 << (m - 1), fmt.inf_code
        mags += [inf | q, inf | q | 1, inf | (2 * q - 1), inf | 1, inf | (q - 1),
                 inf | (q >> 1) | 1]
    elif fmt.has_nan:
        mags.append(fmt.default_nan_code & fmt.magnitude_mask)
    mags = {c for c in mags if 0 <= c <= fmt.magnitude_mask}
    return sorted(mags | {c | fmt.sign_bit for c in mags})


def nan_codes(fmt):
    return [c for c in special_codes(fmt) if fmt.is_nan_code(c)]


def with_exponent(rng, fmt, e_field, frac=None):
    """Codes with the given exponent fields (clipped to the format's range),
    random fractions unless given, random signs."""
    m = fmt.mantissa_bits
    e = np.clip(np.asarray(e_field, dtype=np.int64), 0, fmt.magnitude_mask >> m)
    if frac is None:
        frac = rng.integers(0, 1 << m, e.size)
    sign = rng.integers(0, 2, e.size) * fmt.sign_bit
    return (e << m) | frac | sign


def pair_sample(fmt, n, s):
    """``n`` pairs of codes: specials with specials, specials with random
    codes, random codes, close exponents (cancellation, ties: b at or below
    half an ulp of a), products and quotients near overflow and underflow,
    tiny operands, and nearly equal magnitudes."""
    rng = np.random.default_rng(s)
    sp = np.array(special_codes(fmt), dtype=np.int64)
    m, bias, top = fmt.mantissa_bits, fmt.bias, fmt.magnitude_mask >> fmt.mantissa_bits
    k = n // 7
    a, b = [], []
    a.append(rng.choice(sp, k))
    b.append(rng.choice(sp, k))
    r, c = rng.integers(0, 1 << fmt.width, k), rng.choice(sp, k)
    swap = rng.random(k) < 0.5
    a.append(np.where(swap, r, c))
    b.append(np.where(swap, c, r))
    a.append(rng.integers(0, 1 << fmt.width, k))
    b.append(rng.integers(0, 1 << fmt.width, k))
    ea = rng.integers(0, top + 1, k)
    frac = np.where(rng.random(k) < 0.5, 0, rng.integers(0, 1 << m, k))
    a.append(with_exponent(rng, fmt, ea))
    b.append(with_exponent(rng, fmt, ea - rng.integers(-1, m + 4, k), frac))
    targets = np.array([fmt.emax, fmt.emax + 1, fmt.emin, fmt.emin - 1, fmt.emin - m,
                        fmt.emin - m - 1])
    t = rng.choice(targets, k)
    ea = rng.integers(0, top + 1, k)
    eb = np.where(rng.random(k) < 0.5, t - ea + 2 * bias, ea - t)  # a*b or a/b near 2**t
    a.append(with_exponent(rng, fmt, ea))
    b.append(with_exponent(rng, fmt, eb))
    a.append(with_exponent(rng, fmt, rng.integers(0, 3, k)))
    b.append(with_exponent(rng, fmt, rng.integers(0, 3, k)))
    rest = n - 6 * k
    x = rng.integers(0, 1 << fmt.width, rest)
    y = np.clip(x + rng.integers(-3, 4, rest), 0, (1 << fmt.width) - 1)
    a.append(x)
    b.append(y ^ (rng.integers(0, 2, rest) * fmt.sign_bit))
    return np.concatenate(a).astype(np.int64), np.concatenate(b).astype(np.int64)


def triple_sample(fmt, n, s):
    """``n`` triples for fma: pairs as above, and c a special, a random code,
    or minus the rounded product nudged by a few codes (near cancellation)."""
    a, b = pair_sample(fmt, n, s)
    rng = np.random.default_rng(s + 1)
    sp = np.array(special_codes(fmt), dtype=np.int64)
    c = np.where(rng.random(n) < 0.5, rng.choice(sp, n), rng.integers(0, 1 << fmt.width, n))
    near = rng.random(n) < 0.4
    ctx = fpsim.Context(rounding="rtz")
    for i in np.flatnonzero(near).tolist():
        try:
            p = arith.mul(fmt.from_bits(int(a[i])), fmt.from_bits(int(b[i])), ctx).bits
        except ValueError:
            continue
        p = int(np.clip(p + int(rng.integers(-2, 3)), 0, (1 << fmt.width) - 1))
        c[i] = p ^ fmt.sign_bit
    return a, b, c.astype(np.int64)


def unary_sample(fmt, n, s):
    """Every code of formats up to 8 bits; else specials, random codes, and
    codes of every exponent."""
    if fmt.width <= 8:
        return (np.arange(1 << fmt.width, dtype=np.int64),)
    rng = np.random.default_rng(s)
    sp = np.array(special_codes(fmt), dtype=np.int64)
    top = fmt.magnitude_mask >> fmt.mantissa_bits
    k = (n - sp.size) // 2
    parts = [sp, rng.integers(0, 1 << fmt.width, k),
             with_exponent(rng, fmt, rng.integers(0, top + 1, n - sp.size - k))]
    return (np.concatenate(parts).astype(np.int64),)


def sample(op, fmt, n, s):
    if ARITY[op] == 1:
        return unary_sample(fmt, n, s)
    if ARITY[op] == 3:
        return triple_sample(fmt, n, s)
    return pair_sample(fmt, n, s)


def without_scalar_errors(op, fmt, operands):
    """The elements for which the scalar model does not raise, with or
    without DAZ (it raises only for a NaN result in a format without NaN, 0/0
    or sqrt(-x), whatever the mode)."""
    ok = ((scalar(op, fmt, operands)[0] != ERROR)
          & (scalar(op, fmt, operands, {"daz": True})[0] != ERROR))
    return tuple(np.asarray(c)[ok] for c in operands)


def all_pairs(codes):
    codes = np.asarray(codes, dtype=np.int64)
    return np.repeat(codes, codes.size), np.tile(codes, codes.size)


def all_triples(codes):
    codes = np.asarray(codes, dtype=np.int64)
    a, b, c = np.meshgrid(codes, codes, codes, indexing="ij")
    return a.reshape(-1), b.reshape(-1), c.reshape(-1)


# -- 1. every pair of E4M3 codes ---------------------------------------------------------------

@pytest.mark.parametrize("op", ["add", "mul"])
def test_every_e4m3_pair_rne(op):
    """All 65,536 pairs, as a (256, 1) array against a (1, 256) one."""
    codes = np.arange(256)
    got, _ = check(op, E4M3, [codes[:, None], codes[None, :]], {"rounding": "rne"})
    assert got.shape == (256, 256)


# -- 2. every op, every format, every mode, saturation on and off ------------------------------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_every_op_every_mode_and_saturation_equals_scalar(fmt, op):
    operands = sample(op, fmt, 4000, seed("modes", fmt, op))
    for mode in MODES:
        for saturate in (False, True):
            check(op, fmt, operands, {"rounding": mode, "saturate": saturate})


FTZ_DAZ_TININESS = [{"ftz": ftz, "daz": daz, "tininess": tininess}
                    for ftz in (False, True) for daz in (False, True)
                    for tininess in ("after", "before")]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_ftz_daz_tininess_equal_scalar(fmt, op):
    operands = sample(op, fmt, 400, seed("ftz", fmt, op))
    for mode in ("rne", "rtz", "rup", "rdn"):
        for variant in FTZ_DAZ_TININESS:
            check(op, fmt, operands, {"rounding": mode, **variant})


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_settings_as_keyword_overrides_equal_scalar(fmt, op):
    """The same settings given as per-call overrides (the context keeps its own)."""
    operands = sample(op, fmt, 500, seed("overrides", fmt, op))
    for s in ({"rounding": "rup", "ftz": True, "saturate": True},
              {"rounding": "rdn", "daz": True, "tininess": "before", "nan": "x86"},
              {"rounding": "sr", "sr_bits": 7, "nan": "riscv"}):
        rand = None
        if s["rounding"] == "sr":
            rand = np.random.default_rng(3).integers(0, 1 << 7, operands[0].size, np.uint64)
        check(op, fmt, operands, s, rand=rand, via_overrides=True)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", TYPED, ids=ids)
def test_codes_with_fmt_equal_typed_arrays(fmt, op):
    """Integer codes with ``fmt=`` give the typed result's codes, as codes."""
    operands = sample(op, fmt, 600, seed("codes", fmt, op))
    for s in ({"rounding": "rne"}, {"rounding": "rtz", "saturate": True, "ftz": True}):
        typed, typed_flags = check(op, fmt, operands, s, typed=True)
        codes, flags = check(op, fmt, operands, s, typed=False)
        np.testing.assert_array_equal(codes, np.asarray(typed).view(cdtype(fmt)))
        np.testing.assert_array_equal(flags, typed_flags)


# -- 3. NaNs: every policy, payloads and signs in every position ------------------------------

NAN_FORMATS = [f for f in FORMATS if f.has_nan]


def nan_mix(fmt):
    """NaNs of both signs (quiet, signaling, several payloads) and a few
    numbers: zeros, one, a subnormal, max, infinity."""
    m = fmt.mantissa_bits
    numbers = [0, 1, fmt.bias << m, fmt.max_code] + ([fmt.inf_code] if fmt.has_inf else [])
    numbers = {c for n in numbers for c in (n, n | fmt.sign_bit)}
    return sorted(set(nan_codes(fmt)) | numbers)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fmt", NAN_FORMATS, ids=ids)
def test_nan_operands_under_every_policy(fmt, policy):
    codes = nan_mix(fmt)
    pairs = all_pairs(codes)
    for s in ({"nan": policy},
              {"nan": policy, "rounding": "rtz", "saturate": True, "daz": True, "ftz": True}):
        for op in BINARY:
            check(op, fmt, pairs, s)
        check("sqrt", fmt, [codes], s)
    check("fma", fmt, all_triples(codes[::2] if len(codes) > 16 else codes), {"nan": policy})


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fmt", NAN_FORMATS, ids=ids)
def test_nan_operands_stochastic_rounding(fmt, policy):
    codes = nan_mix(fmt)
    pairs = all_pairs(codes)
    rand = np.random.default_rng(1).integers(0, 1 << 5, pairs[0].size, np.uint64)
    for op in BINARY:
        check(op, fmt, pairs, {"nan": policy, "rounding": "sr", "sr_bits": 5}, rand=rand)


@pytest.mark.parametrize("policy", POLICIES)
def test_invalid_operations_give_the_policys_default_nan(policy):
    """inf - inf, 0 * inf, 0/0, inf/inf, sqrt(-1) in FP32: INVALID, and the
    default NaN (x86's is negative), as the scalar model."""
    inf, one, zero = FP32.inf_code, 0x3F800000, 0
    neg = FP32.sign_bit
    want_nan = 0xFFC00000 if policy == "x86" else 0x7FC00000
    cases = {"add": ([inf], [inf | neg]), "sub": ([inf], [inf]), "mul": ([zero], [inf]),
             "div": ([zero, inf], [zero, inf]), "sqrt": ([one | neg],)}
    for op, operands in cases.items():
        got, flags = check(op, FP32, operands, {"nan": policy})
        assert codes_out(FP32, got) == [want_nan] * len(operands[0])
        assert all(Flag(int(f)) == Flag.INVALID for f in flags)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.has_inf], ids=ids)
def test_fma_zero_times_inf_plus_quiet_nan_raises_invalid(fmt, policy):
    m = fmt.mantissa_bits
    inf, q = fmt.inf_code, 1 << (m - 1)
    qnans = [inf | q, inf | q | 1, fmt.sign_bit | inf | (2 * q - 1)]
    zeros, infs = [0, fmt.sign_bit], [inf, inf | fmt.sign_bit]
    a, b, c = [], [], []
    for z in zeros:
        for i in infs:
            for n in qnans:
                a += [z, i]
                b += [i, z]
                c += [n, n]
    got, flags = check("fma", fmt, [a, b, c], {"nan": policy})
    assert all(Flag.INVALID in Flag(int(f)) for f in flags)
    assert all(fmt.is_nan_code(c) for c in codes_out(fmt, got))


# -- 4. the underflow and overflow boundaries ----------------------------------------------------

def near_one(fmt, k=4):
    """1 and its k nearest codes on each side, both signs."""
    one = fmt.bias << fmt.mantissa_bits
    mags = [one + d for d in range(-k, k + 1)]
    return mags + [c | fmt.sign_bit for c in mags]


@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_tininess_at_the_smallest_normal(fmt):
    """Products, quotients and fmas landing within an ulp of the smallest
    normal (e.g. (1 + ulp) x max subnormal = min normal x (1 - 2**-2m)): tiny
    or not depending on tininess before / after rounding, the mode, FTZ."""
    m = fmt.mantissa_bits
    small = [(1 << m) + d for d in range(-4, 3)] + [1, 2]
    small += [c | fmt.sign_bit for c in small]
    a, b = all_pairs(sorted(set(near_one(fmt) + small)))
    c = np.where(np.arange(a.size) % 3 == 0, 1, 0) | (a & fmt.sign_bit)
    if fmt.specials is Specials.FNUZ:
        c = np.where(c == fmt.sign_bit, 0, c)  # no -0 (that code is NaN)
    for mode in ("rne", "rtz", "rup", "rdn", "sr"):
        for variant in ({}, {"tininess": "before"}, {"ftz": True},
                        {"daz": True, "tininess": "before"}):
            s = {"rounding": mode, **variant}
            rand = None
            if mode == "sr":
                s["sr_bits"] = 4
                rand = draws(seed("tiny", fmt), 4, a.size)
            check("mul", fmt, [a, b], s, rand=rand)
            check("div", fmt, [a, b], s, rand=rand)
            check("fma", fmt, [a, b, c], s, rand=rand)


@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_overflow_threshold(fmt):
    """max plus fractions of its ulp (a quarter, a half, three quarters, one),
    max times 1 + k ulp, and max / (1 - k ulp): every mode, saturating or
    not."""
    m, top = fmt.mantissa_bits, fmt.max_code
    half_ulp = top - (top & ((1 << m) - 1)) - ((m + 1) << m)  # 2**(emax - m - 1)
    fractions = [half_ulp + d for d in (-(1 << m), -1, 0, 1, (1 << m) // 2, 1 << m)]
    bigs = [top, top - 1, top - 2]
    bigs += [x | fmt.sign_bit for x in bigs]
    a1, b1 = all_pairs(sorted(set(bigs + fractions + [f | fmt.sign_bit for f in fractions])))
    a2, b2 = all_pairs(sorted(set(bigs + near_one(fmt))))
    for mode in (*MODES, "sr"):
        for saturate in (False, True):
            s = {"rounding": mode, "saturate": saturate}
            if mode == "sr":
                s["sr_bits"] = 32
            for op, (a, b) in (("add", (a1, b1)), ("sub", (a1, b1)), ("mul", (a2, b2)),
                               ("div", (a2, b2))):
                rand = draws(seed("overflow", op), 32, a.size) if mode == "sr" else None
                check(op, fmt, [a, b], s, rand=rand)
            rand = draws(seed("overflow fma"), 32, a2.size) if mode == "sr" else None
            check("fma", fmt, [a2, b2, b2], s, rand=rand)


# -- 4. exact zeros: the sign rules ------------------------------------------------------------

def finite_nonzero(fmt):
    return [c for c in special_codes(fmt)
            if not fmt.is_nan_code(c) and c & fmt.magnitude_mask
            and not (fmt.has_inf and c & fmt.magnitude_mask == fmt.inf_code)]


@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_exact_cancellation_is_plus_zero_or_minus_zero_rounding_down(fmt):
    """x + (-x), x - x and fma(x, 1, -x) are exact zeros: +0, or -0 in rdn
    (FNUZ formats have no -0: +0); no flags; every mode."""
    xs = np.array(finite_nonzero(fmt), dtype=np.int64)
    one = np.full(xs.size, fmt.bias << fmt.mantissa_bits)
    signed_zero = fmt.specials is not Specials.FNUZ
    for mode in MODES:
        s = {"rounding": mode}
        want = fmt.sign_bit if (mode == "rdn" and signed_zero) else 0
        for op, operands in (("add", [xs, xs ^ fmt.sign_bit]), ("sub", [xs, xs]),
                             ("fma", [xs, one, xs ^ fmt.sign_bit])):
            got, flags = check(op, fmt, operands, s)
            assert codes_out(fmt, got) == [want] * xs.size, f"{op}: exact zero in {mode}"
            assert not np.asarray(flags).any()


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.specials is not Specials.FNUZ], ids=ids)
def test_sums_of_zeros_keep_a_common_sign(fmt):
    """(+0) + (+0) = +0 and (-0) + (-0) = -0 in every mode; +0 + -0 is +0, or
    -0 in rdn; likewise for sub and fma with zero products."""
    z, nz = 0, fmt.sign_bit
    one = fmt.bias << fmt.mantissa_bits
    for mode in MODES:
        s = {"rounding": mode}
        mixed = nz if mode == "rdn" else z
        got, _ = check("add", fmt, [[z, nz, z, nz], [z, nz, nz, z]], s)
        assert codes_out(fmt, got) == [z, nz, mixed, mixed]
        got, _ = check("sub", fmt, [[z, nz, z, nz], [nz, z, z, nz]], s)
        assert codes_out(fmt, got) == [z, nz, mixed, mixed]
        got, _ = check("fma", fmt, [[nz, z, nz], [one, one, one], [nz, z, z]], s)
        assert codes_out(fmt, got) == [nz, z, mixed]
        got, _ = check("sqrt", fmt, [[z, nz]], s)
        assert codes_out(fmt, got) == [z, nz]


# -- 5. comparisons ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_comparisons_equal_scalar(fmt):
    """Every predicate, quiet and signaling (and the default), on every pair
    of special codes and a sample of pairs: the booleans and the flags."""
    specials = all_pairs(special_codes(fmt))
    sampled = pair_sample(fmt, 700, seed("compare", fmt))
    for op in COMPARISONS:
        for signaling in (None, False, True):
            for operands in (specials, sampled):
                check(op, fmt, operands, signaling=signaling)


@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_comparison_semantics(fmt):
    """bool results; -0 == +0; NaN unordered; quiet predicates raise INVALID
    only for signaling NaNs, signaling predicates for every NaN."""
    one = fmt.bias << fmt.mantissa_bits
    two = one + (1 << fmt.mantissa_bits)
    x = as_input(fmt, [one, one, two, 0], fmt in VALUE_DTYPES)
    minus_zero = 0 if fmt.specials is Specials.FNUZ else fmt.sign_bit
    y = as_input(fmt, [one, two, one, minus_zero], fmt in VALUE_DTYPES)
    kw = {} if fmt in VALUE_DTYPES else {"fmt": fmt}
    ctx = fpsim.Context()
    expect = {"eq": [1, 0, 0, 1], "ne": [0, 1, 1, 0], "lt": [0, 1, 0, 0], "le": [1, 1, 0, 1],
              "gt": [0, 0, 1, 0], "ge": [1, 0, 1, 1], "unordered": [0, 0, 0, 0]}
    for op, want in expect.items():
        got = getattr(array, op)(x, y, ctx, **kw)
        assert got.dtype == np.bool_ and got.shape == (4,)
        assert got.tolist() == [bool(w) for w in want], op
    assert ctx.flags == Flag(0)
    if not fmt.has_nan:
        return
    nans = nan_codes(fmt)
    quiet = [c for c in nans if not fmt.is_signaling_code(c)]
    for op in COMPARISONS:
        for signaling in (False, True):
            ctx = fpsim.Context()
            a = as_input(fmt, [quiet[0], one, quiet[-1]], fmt in VALUE_DTYPES)
            b = as_input(fmt, [one, quiet[0], quiet[-1]], fmt in VALUE_DTYPES)
            got, flags = getattr(array, op)(a, b, ctx, signaling=signaling, return_flags=True,
                                            **kw)
            assert got.tolist() == [op in ("ne", "unordered")] * 3, op
            want = Flag.INVALID if signaling else Flag(0)
            assert [Flag(int(f)) for f in flags] == [want] * 3
            assert ctx.flags == want
        if len(quiet) < len(nans):  # a signaling NaN: INVALID even for quiet predicates
            snan = [c for c in nans if fmt.is_signaling_code(c)][0]
            ctx = fpsim.Context()
            a = as_input(fmt, [snan, one], fmt in VALUE_DTYPES)
            b = as_input(fmt, [one, one], fmt in VALUE_DTYPES)
            _, flags = getattr(array, op)(a, b, ctx, signaling=False, return_flags=True, **kw)
            assert [Flag(int(f)) for f in flags] == [Flag.INVALID, Flag(0)]
            assert ctx.flags == Flag.INVALID


def test_comparison_defaults_are_the_scalar_defaults():
    """eq/ne/unordered are quiet by default, lt/le/gt/ge signaling."""
    x = np.array([np.nan, 1.0], np.float16)
    y = np.array([1.0, 1.0], np.float16)
    for op in COMPARISONS:
        ctx = fpsim.Context()
        _, flags = getattr(array, op)(x, y, ctx, return_flags=True)
        want = Flag(0) if op in QUIET_BY_DEFAULT else Flag.INVALID
        assert Flag(int(flags[0])) == want and ctx.flags == want, op


# -- 6. Hypothesis ---------------------------------------------------------------------------

HYPO_FORMATS = [FP16, BF16, FP32]
SR_BITS_DRAWN = [1, 2, 3, 5, 8, 11, 13, 16, 24, 31, 32, 33, 53, 64]


@st.composite
def cases(draw, arity):
    """(format, operand code arrays, settings, random bits or None)."""
    fmt = draw(st.sampled_from(HYPO_FORMATS))
    n = draw(st.integers(0, 12))
    code = st.one_of(st.integers(0, (1 << fmt.width) - 1), st.sampled_from(special_codes(fmt)))
    operands = [draw(st.lists(code, min_size=n, max_size=n)) for _ in range(arity)]
    if arity >= 2 and n and draw(st.booleans()):
        # the second operand close to the first (or to its negation):
        # cancellation, ties, exact results
        deltas = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
        flip = draw(st.booleans()) * fmt.sign_bit
        operands[1] = [min(max(c + d, 0), (1 << fmt.width) - 1) ^ flip
                       for c, d in zip(operands[0], deltas)]
    mode = draw(st.sampled_from([*MODES, "sr"]))
    s = {"rounding": mode, "ftz": draw(st.booleans()), "daz": draw(st.booleans()),
         "saturate": draw(st.booleans()), "tininess": draw(st.sampled_from(["after", "before"])),
         "nan": draw(st.sampled_from(POLICIES))}
    rand = None
    if mode == "sr":
        sr_bits = draw(st.sampled_from(SR_BITS_DRAWN))
        s["sr_bits"] = sr_bits
        top = (1 << sr_bits) - 1
        r = st.one_of(st.integers(0, top), st.sampled_from([0, top, 1 << (sr_bits - 1)]))
        rand = np.array(draw(st.lists(r, min_size=n, max_size=n)), dtype=np.uint64)
    return fmt, [np.array(c, dtype=np.int64) for c in operands], s, rand


@settings(max_examples=300)
@given(case=cases(2), op=st.sampled_from(BINARY))
def test_hypothesis_binary_ops_equal_scalar(case, op):
    fmt, operands, s, rand = case
    check(op, fmt, operands, s, rand=rand)


@settings(max_examples=200)
@given(case=cases(3))
def test_hypothesis_fma_equals_scalar(case):
    fmt, operands, s, rand = case
    check("fma", fmt, operands, s, rand=rand)


@settings(max_examples=100)
@given(case=cases(1))
def test_hypothesis_sqrt_equals_scalar(case):
    fmt, operands, s, rand = case
    check("sqrt", fmt, operands, s, rand=rand)


# -- 7. stochastic rounding -------------------------------------------------------------------

SR_BITS = [1, 5, 32, 64]
SR_VARIANTS = [{}, {"saturate": True, "ftz": True}, {"daz": True, "tininess": "before"}]


def draws(s, sr_bits, n):
    return np.random.default_rng(s).integers(0, 1 << sr_bits, size=n, dtype=np.uint64)


@pytest.mark.parametrize("sr_bits", SR_BITS)
@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_stochastic_rounding_with_random_bits_equals_scalar(fmt, sr_bits):
    """Element i with r[i] equals the scalar op with random_bits=int(r[i]);
    the same bits in give the same result out."""
    for op in OPS:
        operands = without_scalar_errors(op, fmt, sample(op, fmt, 700, seed("sr", fmt, op,
                                                                             sr_bits)))
        rand = draws(seed("bits", fmt, op, sr_bits), sr_bits, operands[0].size)
        for variant in SR_VARIANTS:
            s = {"rounding": "sr", "sr_bits": sr_bits, **variant}
            first = check(op, fmt, operands, s, rand=rand)
            again = call(op, fmt, operands, fpsim.Context(**s), fmt in VALUE_DTYPES,
                         random_bits=rand.copy(), return_flags=True)
            assert_same_result(op, fmt, operands, again, first, s, what="the same bits again")


@pytest.mark.parametrize("fmt", FORMATS, ids=ids)
def test_stochastic_rounding_every_sr_bits_from_1_to_64(fmt):
    """Every sr_bits, so that both sides of every limit on the bits an
    implementation's integers can hold (precision + sr_bits against 30, 60,
    62, 64) are checked."""
    for op in OPS:
        operands = without_scalar_errors(op, fmt, sample(op, fmt, 120, seed("sr64", fmt, op)))
        operands = tuple(np.resize(c, 120) for c in operands)
        for sr_bits in range(1, 65):
            rand = draws(seed("sr64 bits", fmt, op, sr_bits), sr_bits, 120)
            rand[:3] = [0, (1 << sr_bits) - 1, 1 << (sr_bits - 1)]
            check(op, fmt, operands, {"rounding": "sr", "sr_bits": sr_bits}, rand=rand)


@pytest.mark.parametrize("sr_bits", SR_BITS)
@pytest.mark.parametrize("fmt", [FP16, E4M3, FP32], ids=ids)
def test_stochastic_rounding_extreme_random_bits_broadcast(fmt, sr_bits):
    """A scalar random_bits (0, half, all ones; Python int or numpy uint64)
    broadcasts to every element."""
    for op in ("add", "div", "fma", "sqrt"):
        operands = sample(op, fmt, 300, seed("extreme", fmt, op))
        for r in (0, 1 << (sr_bits - 1), (1 << sr_bits) - 1):
            for rand in (r, np.uint64(r)):
                check(op, fmt, operands, {"rounding": "sr", "sr_bits": sr_bits}, rand=rand)


@pytest.mark.parametrize("sr_bits", [1, 5, 32])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", [FP16, BF16, E5M2, FP32], ids=ids)
def test_rng_equals_random_bits_drawn_from_the_same_generator(fmt, op, sr_bits):
    """rng= draws gen.integers(0, 2**sr_bits, size=n, dtype=uint64) for the n
    result elements in C order: one number per element, whatever the element
    (exact, NaN, ...).  A Generator and an int seed give the same."""
    operands = [np.resize(c, 500).reshape(20, 25)
                for c in sample(op, fmt, 500, seed("rng", fmt, op))]
    if ARITY[op] >= 2:  # a broadcast result shape: (20, 1) with (20, 25)
        operands[0] = operands[0][:, :1]
    shape = np.broadcast_shapes(*(c.shape for c in operands))
    n = int(np.prod(shape))
    s = {"rounding": "sr", "sr_bits": sr_bits}
    want = check(op, fmt, operands, s, rand=draws(77, sr_bits, n).reshape(shape))
    gen = np.random.default_rng(77)
    for rng in (gen, 77):
        ctx = fpsim.Context(**s)
        got, flags = call(op, fmt, operands, ctx, fmt in VALUE_DTYPES, rng=rng,
                          return_flags=True)
        assert np.shape(got) == shape
        assert_same_result(op, fmt, operands, (got, flags), want, s, rng=rng)
        assert ctx.flags == Flag(int(np.bitwise_or.reduce(want[1].reshape(-1))))
    # the Generator was advanced by exactly n draws
    reference = np.random.default_rng(77)
    reference.integers(0, 1 << sr_bits, size=n, dtype=np.uint64)
    assert (gen.integers(0, 1 << 32, size=4, dtype=np.uint64).tolist()
            == reference.integers(0, 1 << 32, size=4, dtype=np.uint64).tolist())


def test_a_generator_continues_its_stream_between_calls():
    """Two calls with one Generator use its stream in order: the same as one
    call on both arrays concatenated."""
    x = np.full(600, 1.0, np.float16)
    y = np.full(600, 2.0**-11, np.float16)  # half an ulp of 1: up or down at random
    gen = np.random.default_rng(5)
    first = array.add(x, y, rounding="sr", rng=gen)
    second = array.add(x, y, rounding="sr", rng=gen)
    both = array.add(np.concatenate([x, x]), np.concatenate([y, y]), rounding="sr", rng=5)
    np.testing.assert_array_equal(np.concatenate([first, second]).view(np.uint16),
                                  both.view(np.uint16))
    assert len(np.unique(first.view(np.uint16))) == 2


@pytest.mark.parametrize("chunk_size", [1, 7, 1000])
def test_chunk_size_does_not_change_results(chunk_size):
    """Every chunk size gives the scalar model's results, with random_bits=,
    with rng= (the stream continues across chunks) and in the deterministic
    modes."""
    n = 150 if chunk_size == 1 else 600
    for fmt in (FP16, E4M3, TF32, FP32):
        for op in OPS:
            operands = sample(op, fmt, n, seed("chunk", fmt, op))
            size = operands[0].size
            s = {"rounding": "sr", "sr_bits": 5}
            check(op, fmt, operands, s, rand=draws(9, 5, size), chunk_size=chunk_size)
            want = check(op, fmt, operands, s, rand=draws(10, 5, size))
            got, flags = call(op, fmt, operands, fpsim.Context(**s), fmt in VALUE_DTYPES,
                              rng=10, chunk_size=chunk_size, return_flags=True)
            assert_same_result(op, fmt, operands, (got, flags), want, s, rng=10,
                               chunk_size=chunk_size)
            check(op, fmt, operands, {"rounding": "rup", "ftz": True}, chunk_size=chunk_size)


# From 2**15 elements on, add, sub and mul of the 16-bit formats may be
# computed another way (through binary floating point); both sizes must
# equal the scalar model.
LARGE = 1 << 15  # (used by test_array_arith_exhaustive.py too)
# (every mode with saturation on and off is in the exhaustive sweeps)
LARGE_SETTINGS = [
    {}, {"rounding": "rup", "saturate": True}, {"rounding": "rto", "ftz": True, "daz": True},
    {"rounding": "rdn", "tininess": "before", "nan": "x86"}, {"rounding": "rna", "nan": "riscv"},
]


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("fmt", [FP16, BF16], ids=ids)
def test_large_arrays_equal_scalar(fmt, op):
    a, b = pair_sample(fmt, LARGE + 500, seed("large", fmt, op))
    for i, s in enumerate(LARGE_SETTINGS):
        want = scalar(op, fmt, [a, b], s)
        check(op, fmt, [a, b], s, expected=want)
        if i < 2:  # in chunks: the way of computing may not depend on the chunk's size
            check(op, fmt, [a, b], s, expected=want, chunk_size=1000)


def test_arrays_longer_than_the_default_chunk():
    n = array.DEFAULT_CHUNK + 5
    a, b = pair_sample(FP16, n, seed("long"))
    check("mul", FP16, [a, b], {"rounding": "sr"}, rand=draws(1, 32, n))
    want = check("mul", FP16, [a, b], {"rounding": "sr"}, rand=draws(2, 32, n))
    got = call("mul", FP16, [a, b], fpsim.Context(rounding="sr"), True, rng=2,
               return_flags=True)
    assert_same_result("mul", FP16, [a, b], got, want, {"rounding": "sr"}, rng=2)
    check("add", FP16, [a, b], {"rounding": "rna"})


def test_stochastic_rounding_follows_the_rule_over_every_random_integer():
    """With sr_bits=4, a sum k/16 of an ulp above 1 rounds up for exactly k of
    the 16 random integers."""
    one = np.float16(1.0)
    for k in range(16):
        # 1 + k/16 ulp, as 1 + (k * 2**-14): the FP16 ulp at 1 is 2**-10
        tiny = np.float16(k * 2.0**-14)
        got = array.add(np.full(16, one), np.full(16, tiny), rounding="sr", sr_bits=4,
                        random_bits=np.arange(16))
        assert int((got.view(np.uint16) == 0x3C01).sum()) == k


# -- 8. the interface: dtypes, broadcasting, flags, contexts -----------------------------------

def test_code_dtype_of_every_format():
    for fmt in FORMATS:
        assert array.code_dtype(fmt) == cdtype(fmt)


@pytest.mark.parametrize("fmt", TYPED, ids=ids)
def test_typed_arrays_in_typed_arrays_out(fmt):
    dt = VALUE_DTYPES[fmt]
    one = fmt.bias << fmt.mantissa_bits
    x = as_input(fmt, [one, 0, one + 1], True)
    assert x.dtype == dt
    for op in OPS:
        got = getattr(array, op)(*[x] * ARITY[op])
        assert got.dtype == dt and got.shape == (3,), op
        got, flags = getattr(array, op)(*[x] * ARITY[op], return_flags=True)
        assert got.dtype == dt and flags.dtype == np.uint8 and flags.shape == (3,), op
    for op in COMPARISONS:
        assert getattr(array, op)(x, x).dtype == np.bool_


CODE_DTYPE_CASES = [(fmt, np.dtype(dt)) for fmt in (E4M3, E3M2, FP16, TF32)
                    for dt in (np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64)
                    if np.iinfo(dt).max >= (1 << fmt.width) - 1]


@pytest.mark.parametrize("fmt,dtype", CODE_DTYPE_CASES,
                         ids=[f"{f.name}-{d.name}" for f, d in CODE_DTYPE_CASES])
def test_codes_in_codes_out(fmt, dtype):
    """Integer codes of any integer dtype wide enough, with fmt=: codes of
    dtype code_dtype(fmt) out."""
    a, b = pair_sample(fmt, 200, seed("dtypes", fmt))
    c = triple_sample(fmt, 200, seed("dtypes", fmt))[2]
    for op in OPS:
        operands = [a, b, c][:ARITY[op]]
        args = [x.astype(dtype) for x in operands]
        want = check(op, fmt, operands, {"rounding": "rtz"}, typed=False)
        if want[0].size != a.size:  # the scalar model raised for some elements
            continue
        got = getattr(array, op)(*args, fmt=fmt, rounding="rtz")
        assert got.dtype == cdtype(fmt), op
        np.testing.assert_array_equal(got, want[0])
    got = array.le(a.astype(dtype), b.astype(dtype), fmt=fmt)
    assert got.dtype == np.bool_
    check("le", fmt, [a, b])


@pytest.mark.parametrize("fmt", [FP16, E5M2FNUZ, TF32, E3M2, FP32], ids=ids)
def test_broadcasting(fmt):
    """0-d with an array, (3, 1) with (4,), and the three operands of fma."""
    rng = np.random.default_rng(seed("broadcast", fmt))
    # no zeros where 0/0 has no NaN to give (the scalar model raises)
    sp = np.array([c for c in special_codes(fmt) if fmt.has_nan or c & fmt.magnitude_mask])
    col = rng.choice(sp, (3, 1))
    row = rng.choice(sp, 4)
    scalar0 = np.array(fmt.bias << fmt.mantissa_bits)  # 0-d: one
    for op in BINARY:
        got, _ = check(op, fmt, [col, row], {"rounding": "rup"})
        assert got.shape == (3, 4)
        got, _ = check(op, fmt, [scalar0, row])
        assert got.shape == (4,)
        got, _ = check(op, fmt, [col, scalar0])
        assert got.shape == (3, 1)
        got, _ = check(op, fmt, [scalar0, scalar0])
        assert np.shape(got) == ()
    got, _ = check("fma", fmt, [rng.choice(sp, (2, 1, 1)), col, row])
    assert got.shape == (2, 3, 4)
    got, _ = check("fma", fmt, [scalar0, row, col])
    assert got.shape == (3, 4)
    got, _ = check("sqrt", fmt, [col & fmt.magnitude_mask])
    assert got.shape == (3, 1)
    got, _ = check("lt", fmt, [col, row])
    assert got.shape == (3, 4)
    # random_bits broadcast to the result shape: a row for every row
    r = draws(4, 8, 4)
    got, _ = check("mul", fmt, [col, row], {"rounding": "sr", "sr_bits": 8}, rand=r)
    assert got.shape == (3, 4)


def test_typed_numpy_scalars_broadcast():
    """A numpy scalar of the dtype (np.float16(2)) is a 0-d operand."""
    x = np.array([1.0, 3.0, 65504.0], np.float16)
    got = array.mul(x, np.float16(2.0))
    assert got.dtype == np.float16
    assert got.view(np.uint16).tolist() == [0x4000, 0x4600, 0x7C00]


def test_empty_arrays():
    for op in OPS:
        got, flags = getattr(array, op)(*[np.zeros(0, np.float32)] * ARITY[op],
                                        return_flags=True)
        assert got.shape == flags.shape == (0,) and got.dtype == np.float32
    got = array.add(np.zeros((0, 3), np.uint8), np.zeros(3, np.uint8), fmt=E4M3)
    assert got.shape == (0, 3) and got.dtype == np.uint8


def test_context_flags_are_the_or_of_the_element_flags_and_keep_earlier_ones():
    x = np.array([1.0, 1e-7, 60000.0, 0.0, np.inf, 2.0], np.float16)
    y = np.array([1.0, 1e-3, 60000.0, np.inf, -np.inf, 3.0], np.float16)
    per = []
    for a, b in zip(x.view(np.uint16).tolist(), y.view(np.uint16).tolist()):
        c = fpsim.Context()
        arith.mul(FP16.from_bits(a), FP16.from_bits(b), c)
        per.append(c.flags)
    ctx = fpsim.Context(flags=Flag.DIVIDE_BY_ZERO)
    _, flags = array.mul(x, y, ctx, return_flags=True)
    assert [Flag(int(f)) for f in flags] == per
    union = Flag(0)
    for f in per:
        union |= f
    assert union == Flag.INVALID | Flag.OVERFLOW | Flag.UNDERFLOW | Flag.INEXACT
    assert ctx.flags == union | Flag.DIVIDE_BY_ZERO
    # return_flags=False: the same result, the same sticky flags
    plain = fpsim.Context()
    got = array.mul(x, y, plain)
    np.testing.assert_array_equal(got.view(np.uint16), array.mul(x, y).view(np.uint16))
    assert plain.flags == union


def test_flags_go_to_the_current_context_without_ctx():
    """Without ctx= the current context's settings apply and it receives the
    flags, also when return_flags=True returns them per element."""
    x = np.array([1.0, 1e-7], np.float16)
    y = np.array([3.0, 1000.0], np.float16)
    with fpsim.localcontext(rounding="rup") as ctx:
        ctx.clear_flags()
        got, flags = array.div(x, y, return_flags=True)
        assert ctx.flags == Flag.UNDERFLOW | Flag.INEXACT
        assert [Flag(int(f)) for f in flags] == [Flag.INEXACT, Flag.UNDERFLOW | Flag.INEXACT]
        ctx.clear_flags()
        again = array.div(x, y)
        assert ctx.flags == Flag.UNDERFLOW | Flag.INEXACT
        want = [arith.div(FP16.round(1.0), FP16.round(3.0), rounding="rup").bits,
                arith.div(FP16.from_bits(int(x.view(np.uint16)[1])),
                          FP16.from_bits(int(y.view(np.uint16)[1])), rounding="rup").bits]
        assert got.view(np.uint16).tolist() == again.view(np.uint16).tolist() == want
        ctx.clear_flags()
        array.lt(np.array([np.nan], np.float16), np.array([1.0], np.float16))
        assert ctx.flags == Flag.INVALID


def test_overrides_apply_to_one_call_and_flags_still_go_to_ctx():
    ctx = fpsim.Context()
    x = np.array([400.0, -400.0], ml_dtypes.float8_e4m3fn)
    got = array.add(x, x, ctx, saturate=True, rounding="rtz")
    assert got.view(np.uint8).tolist() == [0x7E, 0xFE]
    assert ctx.flags == Flag.OVERFLOW | Flag.INEXACT
    assert ctx.saturate is False and ctx.rounding is fpsim.Rounding.RNE
    assert array.add(x, x, ctx).view(np.uint8).tolist() == [0x7F, 0xFF]  # NaN: no inf in E4M3


# -- 9. bad input ------------------------------------------------------------------------------

F16 = np.array([1.0, 2.0], np.float16)
F32 = np.array([1.0, 2.0], np.float32)
BF = np.array([1.0, 2.0], ml_dtypes.bfloat16)
U8 = np.array([0x38, 0x40], np.uint8)


def every_function():
    """(name, number of operands) of every array function."""
    for op in OPS:
        yield op, ARITY[op]
    for op in COMPARISONS:
        yield op, 2


@pytest.mark.parametrize("pair", [(F16, F32), (F16, BF), (F32, F16),
                                  (np.array([1.0], ml_dtypes.float8_e4m3fn),
                                   np.array([1.0], ml_dtypes.float8_e5m2)),
                                  (np.array([1.0], ml_dtypes.float8_e4m3fn),
                                   np.array([1.0], ml_dtypes.float8_e4m3fnuz))],
                         ids=lambda p: f"{p[0].dtype}-{p[1].dtype}")
def test_operands_of_different_formats_say_convert_first(pair):
    x, y = pair
    for op, arity in every_function():
        if arity == 1:
            continue
        with pytest.raises(TypeError, match="(?i)convert"):
            getattr(array, op)(*[x] * (arity - 1), y)
        with pytest.raises(TypeError, match="(?i)convert"):
            getattr(array, op)(y, *[x] * (arity - 1))
    with pytest.raises(TypeError, match="(?i)convert"):
        array.fma(x, x, y)
    with pytest.raises(TypeError, match="(?i)convert"):
        array.fma(y, x, x)


def test_integer_codes_without_fmt():
    for op, arity in every_function():
        with pytest.raises(TypeError, match="fmt"):
            getattr(array, op)(*[U8] * arity)
    with pytest.raises(TypeError, match="fmt"):
        array.add(np.array([1, 2]), np.array([3, 4]))


def test_fmt_disagreeing_with_the_dtype():
    for op, arity in every_function():
        with pytest.raises(TypeError, match="(?i)fmt|dtype|format"):
            getattr(array, op)(*[F16] * arity, fmt=BF16)
    with pytest.raises(TypeError, match="(?i)fmt|dtype|format"):
        array.add(np.array([1.0], ml_dtypes.float8_e5m2), np.array([1.0], ml_dtypes.float8_e5m2),
                  fmt=E4M3)
    # a fmt= that agrees with the dtype is accepted
    np.testing.assert_array_equal(array.add(F16, F16, fmt=FP16).view(np.uint16),
                                  array.add(F16, F16).view(np.uint16))


def test_codes_out_of_range():
    cases = [(E3M2, np.array([0, 64], np.uint8)), (E4M3, np.array([0, 256], np.int32)),
             (FP16, np.array([1, 1 << 16], np.int64)), (TF32, np.array([0, 1 << 19], np.uint32)),
             (E4M3, np.array([-1, 0], np.int8)), (FP32, np.array([-1, 0], np.int64))]
    for fmt, bad in cases:
        ok = np.zeros(2, bad.dtype)
        for op, arity in every_function():
            with pytest.raises(ValueError, match="out of range"):
                getattr(array, op)(*[ok] * (arity - 1), bad, fmt=fmt)
            with pytest.raises(ValueError, match="out of range"):
                getattr(array, op)(bad, *[ok] * (arity - 1), fmt=fmt)


def test_float64_operands_compute_and_formats_wider_than_fp64_are_refused():
    f64 = np.array([1.0, 2.0])
    numpy_ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                 "sqrt": np.sqrt, "fma": lambda x, y, z: x * y + z, "eq": np.equal,
                 "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                 "ge": np.greater_equal, "unordered": lambda x, y: np.isnan(x) | np.isnan(y)}
    for op, arity in every_function():
        got = getattr(array, op)(*[f64] * arity)
        assert got.tolist() == numpy_ops[op](*[f64] * arity).tolist(), op
        codes = getattr(array, op)(*[np.array([0x3FF0000000000000], np.uint64)] * arity,
                                   fmt=FP64)
        assert codes.dtype in (np.uint64, np.bool_), op
    # 11 exponent bits and 60 fraction bits: a precision of 61, beyond FP64's
    wide = fpsim.Format("e11m60", 11, 60, 1023)
    with pytest.raises(ValueError, match="up to 64 bits of precision up to 53"):
        array.add(np.array([0], np.uint64), np.array([0], np.uint64), fmt=wide)


@pytest.mark.parametrize("bad", [np.array(["1.0", "2.0"]), np.array([b"a", b"b"]),
                                 np.array(["2020-01-01", "2020-01-02"], "datetime64[D]"),
                                 np.array([True, False])],
                         ids=lambda a: a.dtype.name)
def test_non_numeric_dtypes(bad):
    for op, arity in every_function():
        with pytest.raises(TypeError, match="(?i)dtype"):
            getattr(array, op)(*[bad] * arity)


def test_shapes_that_do_not_broadcast():
    x3, x4 = np.ones(3, np.float16), np.ones(4, np.float16)
    for op, arity in every_function():
        if arity == 1:
            continue
        with pytest.raises(ValueError, match="broadcast"):
            getattr(array, op)(*[x3] * (arity - 1), x4)
    with pytest.raises(ValueError, match="broadcast"):
        array.fma(np.ones((2, 3), np.float16), x3, np.ones(2, np.float16))
    with pytest.raises(ValueError, match="broadcast"):
        array.add(np.zeros(3, np.uint8), np.zeros(4, np.uint8), fmt=E4M3)
    # random_bits= must broadcast to the result's shape
    with pytest.raises(ValueError, match="broadcast"):
        array.add(x3, x3, rounding="sr", random_bits=np.zeros(4, np.uint64))
    with pytest.raises(ValueError):  # more dimensions than the result (numpy's message)
        array.mul(x3, x3, rounding="sr", random_bits=np.zeros((2, 3), np.uint64))


def test_random_bits_or_rng_without_stochastic_rounding():
    for op, arity in every_function():
        if op in COMPARISONS:
            continue
        for mode in MODES:
            with pytest.raises(ValueError, match="(?i)stochastic|sr"):
                getattr(array, op)(*[F16] * arity, rounding=mode, random_bits=np.zeros(2, np.uint8))
            with pytest.raises(ValueError, match="(?i)stochastic|sr"):
                getattr(array, op)(*[F16] * arity, rounding=mode, rng=1)
        with pytest.raises(ValueError, match="(?i)stochastic|sr"):  # the context's mode
            getattr(array, op)(*[F16] * arity, fpsim.Context(), random_bits=0)
        with pytest.raises(ValueError, match="(?i)stochastic|sr"):
            getattr(array, op)(*[F16] * arity, fpsim.Context(), rng=np.random.default_rng(1))


@pytest.mark.parametrize("sr_bits", [1, 5, 32])
def test_random_bits_out_of_range(sr_bits):
    ok = np.array([0, (1 << sr_bits) - 1], np.uint64)
    for op, arity in every_function():
        if op in COMPARISONS:
            continue
        getattr(array, op)(*[F32] * arity, rounding="sr", sr_bits=sr_bits, random_bits=ok)
        for bad in (np.array([0, 1 << sr_bits], np.uint64), np.array([-1, 0], np.int64),
                    1 << sr_bits):
            with pytest.raises(ValueError, match="out of range"):
                getattr(array, op)(*[F32] * arity, rounding="sr", sr_bits=sr_bits,
                                   random_bits=bad)


def test_values_mixed_with_integer_codes():
    """Typed operands must all be of one dtype: integer codes beside them are
    refused, with fmt= or without."""
    codes = np.array([0x3C00, 0x4000], np.uint16)
    for op, arity in every_function():
        if arity == 1:
            continue
        with pytest.raises(TypeError):
            getattr(array, op)(*[F16] * (arity - 1), codes, fmt=FP16)
        with pytest.raises(TypeError):
            getattr(array, op)(codes, *[F16] * (arity - 1))


def test_codes_of_different_integer_dtypes_are_codes_of_fmt():
    a = np.array([0x38, 0x40, 0x7E], np.uint8)
    want = check("add", E4M3, [a, a], typed=False)[0]
    got = array.add(a, a.astype(np.int64), fmt=E4M3)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_bad_random_bits_and_chunk_size():
    with pytest.raises(ValueError, match="not both"):
        array.add(F16, F16, rounding="sr", random_bits=np.array([1, 2]), rng=1)
    with pytest.raises(TypeError):
        array.mul(F16, F16, rounding="sr", random_bits=np.array([0.5, 0.5]))
    for chunk_size in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="chunk_size"):
            array.add(F16, F16, chunk_size=chunk_size)
    with pytest.raises(TypeError, match="ctx"):
        array.add(F16, F16, "rne")
    with pytest.raises(TypeError, match="unexpected keyword"):
        array.add(F16, F16, rounding_mode="rne")
