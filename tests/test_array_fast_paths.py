"""The array engine's fast paths equal the scalar model, code for code and
flag for flag: conversions of float32/float64 arrays through the
round-to-odd proxy (:mod:`fpsim.array._proxy`), add, sub, mul and div of
FP16 and BF16 arrays through float32/float64 and the proxy, add, sub and mul
of FP16 and BF16 and float32 -> BF16 conversions by integer operations on
float32 bits (every code of both formats, at the end; with and without
per-element flags, and round to nearest's float32 sums at every alignment),
and FP32 arithmetic through float64 and the rounding kernel.

The fast paths serve deterministic modes on arrays large enough to pay for
their tables, so every conversion input set here is tiled past that size; the scalar model
(``fpsim.convert``) computes the expected result of each distinct input, and
every tile must agree.  The inputs sit where a faulty proxy would fail: every
representable value of the target (or a sample of them), each midpoint
between neighbours and the float32/float64 values just beside it, the
overflow threshold, the underflow boundaries down to a quarter of the
smallest subnormal, source subnormals, NaNs with payloads in their top and
bottom bits, infinities and zeros, and random bit patterns.
"""

from __future__ import annotations

import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, FP16, FP32, FP64, TF32, Flag, array
from fpsim.array._proxy import proxy_for

# (E2M1, E3M2, E2M3: formats without NaN, whose tables leave NaN inputs to
# the kernel)
NO_NAN = [fpsim.E2M1, fpsim.E3M2, fpsim.E2M3]
TARGETS = [FP16, BF16, E4M3, E5M2, TF32, E4M3FNUZ, E5M2FNUZ, *NO_NAN]
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]
EXTRA = [{}, {"saturate": True}, {"ftz": True, "tininess": "before"}, {"daz": True},
         {"nan": "x86"}, {"ftz": True, "saturate": True, "nan": "riscv"}]


def interesting(target: fpsim.Format, dtype: type, seed: int) -> np.ndarray:
    """Distinct inputs of ``dtype`` around every rounding decision of ``target``."""
    rng = np.random.default_rng(seed)
    step = max(1, (1 << target.width) // 2048)
    codes = np.arange(0, 1 << target.width, step, dtype=np.uint64)
    v = array.decode(codes, target)
    v = np.unique(np.abs(v[np.isfinite(v)]))
    mids = (v[:-1] + v[1:]) / 2  # exact in float64 for formats of at most 24 bits
    top = float(target.max)
    ulp_top = float(target.max - target.from_bits(target.max_code - 1).value)
    tiny = float(target.min_subnormal)
    edges = np.array([top + ulp_top / 2, top + ulp_top, 2 * top, 4 * top, 1e30, 3.4e38,
                      tiny / 2, tiny / 4, tiny / 8, tiny * 0.75, tiny * 1.5, 2.0**-126,
                      2.0**-127, 2.0**-140, 2.0**-149, 1e-300, 1e300])
    with np.errstate(over="ignore"):
        base = np.concatenate([v, mids, edges]).astype(dtype)
        near = [base, np.nextafter(base, dtype(np.inf)), np.nextafter(base, dtype(0))]
    vals = np.concatenate(near + [-x for x in near])
    info = np.finfo(dtype)
    width = info.bits
    ubits = np.dtype(f"u{width // 8}").type
    specials_bits = [
        0, 1, 3, (1 << (width - 1)) | 1,                                  # zeros, subnormals
        int(info.smallest_normal.view(f"u{width // 8}")) - 1,             # largest subnormal
    ]
    e_bits = 11 if width == 64 else 8
    m_bits = width - 1 - e_bits
    inf = ((1 << e_bits) - 1) << m_bits
    specials_bits += [inf, inf | (1 << (width - 1)), inf | 1, inf | (1 << (m_bits - 1)),
                      inf | (1 << (m_bits - 1)) | 1, inf | (1 << (m_bits - 2)),
                      (1 << width) - 1, inf | ((1 << m_bits) - 1) >> 1]
    special = np.array(specials_bits, dtype=ubits).view(dtype)
    random_bits = rng.integers(0, 1 << min(width, 63), 3000, dtype=np.uint64)
    random_bits |= rng.integers(0, 2, 3000, dtype=np.uint64) << np.uint64(width - 1)
    rand = random_bits.astype(ubits).view(dtype)
    out = np.concatenate([vals, special, rand]).view(ubits)
    return np.unique(out).view(dtype)


def tiled(values: np.ndarray, target: fpsim.Format) -> np.ndarray:
    """``values`` repeated past the size at which the proxy table is built."""
    need = (1 << proxy_for(target).width) // 8 + 1
    return np.tile(values, -(-need // values.size))


def scalar(values: np.ndarray, target: fpsim.Format, settings: dict) -> tuple[list, list]:
    src = FP64 if values.dtype == np.float64 else FP32
    ctx = fpsim.Context(**settings)
    codes, flags = [], []
    for bits in values.view(f"u{values.dtype.itemsize}").tolist():
        ctx.clear_flags()
        codes.append(fpsim.convert(src.from_bits(bits), target, ctx).bits)
        flags.append(ctx.flags.value)
    return codes, flags


def check(values: np.ndarray, target: fpsim.Format, settings: dict) -> None:
    if not target.has_nan:
        values = values[~np.isnan(values)]
    want_codes, want_flags = scalar(values, target, settings)
    big = tiled(values, target)
    ctx = fpsim.Context(**settings)
    got, flags = array.encode(big, target, ctx, return_flags=True)
    n = values.size
    got = got.reshape(-1, n)
    flags = flags.reshape(-1, n)
    assert (got == got[0]).all() and (flags == flags[0]).all(), "tiles differ"
    bad = np.flatnonzero((got[0] != np.array(want_codes)) | (flags[0] != np.array(want_flags)))
    if bad.size:
        bits = values.view(f"u{values.dtype.itemsize}")
        lines = [f"{bad.size} of {n} differ, {values.dtype} -> {target.name} {settings}:"]
        for i in bad[:8]:
            lines.append(f"  0x{int(bits[i]):x} ({values[i]!r}): scalar 0x{want_codes[i]:x} "
                         f"{Flag(want_flags[i])!r}, array 0x{int(got[0][i]):x} "
                         f"{Flag(int(flags[0][i]))!r}")
        pytest.fail("\n".join(lines))
    assert ctx.flags == Flag(int(np.bitwise_or.reduce(np.array(want_flags, np.uint8))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("target", TARGETS, ids=lambda f: f.name)
def test_proxy_path_equals_scalar_model_in_every_mode(target, dtype):
    values = interesting(target, dtype, seed=target.width)
    for i, mode in enumerate(MODES):
        check(values, target, {"rounding": mode, **EXTRA[i % len(EXTRA)]})


@pytest.mark.parametrize("target", TARGETS, ids=lambda f: f.name)
def test_proxy_path_follows_every_setting(target):
    values = interesting(target, np.float32, seed=7)[::3]
    for extra in EXTRA:
        check(values, target, {"rounding": "rne", **extra})


@pytest.mark.parametrize("target", NO_NAN, ids=lambda f: f.name)
@pytest.mark.parametrize("source", [np.float32, np.float16], ids=lambda d: d.__name__)
def test_a_nan_into_a_format_without_nan_is_refused_by_every_path(target, source):
    """Large arrays take a table (the proxy's, or every FP16 code's); a
    NaN among them is the kernel's, which refuses it as it does in a small
    array: the same error, and no code for it."""
    values = np.linspace(-8, 8, 70001).astype(source)
    for v in (values[:5], values):
        v = v.copy()
        v[3] = np.nan
        with pytest.raises(ValueError, match=f"NaN is not representable in {target.name}"):
            array.encode(v, target)
    ok = array.encode(values, target)         # (the table path, no NaN)
    assert ok[::997].tolist() == [fpsim.convert(float(x), target).bits for x in values[::997]]


def test_proxy_formats_reach_two_binades_past_the_target():
    """The proxy keeps two more fraction bits than the target and its range
    reaches below a quarter of the smallest subnormal and past four times
    2**emax, so that clamping beyond it changes no result."""
    for target in TARGETS:
        p = proxy_for(target)
        assert p.mantissa_bits == target.mantissa_bits + 2
        assert p.min_normal <= target.min_subnormal / 4
        assert 2 ** p.emax >= 4 * 2 ** target.emax
    assert proxy_for(FP32) is None  # its table would be too large: the kernel converts


# -- add, sub and mul of 16-bit formats through float32/float64 ----------------------

FLOAT_PATH = [FP16, BF16]
FLOAT_PATH_SIZE = 1 << 15  # the smallest array that takes the float64 path


def operand_pairs(fmt: fpsim.Format, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Operand codes where sums and products are hard: specials, operands a
    few codes apart with either sign (cancellation, exact zeros), operands
    in far-apart binades (the smaller one is all sticky bits), subnormals."""
    rng = np.random.default_rng(seed)
    n = FLOAT_PATH_SIZE
    a = rng.integers(0, 1 << 16, n, dtype=np.uint64)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint64)
    specials = np.array([0, fmt.sign_bit, 1, fmt.sign_bit | 1, fmt.max_code,
                         fmt.max_code | fmt.sign_bit, 1 << fmt.mantissa_bits,
                         (1 << fmt.mantissa_bits) - 1, fmt.inf_code, fmt.inf_code | fmt.sign_bit,
                         fmt.default_nan_code, fmt.inf_code + 1, fmt.inf_code + 3 | fmt.sign_bit],
                        dtype=np.uint64)
    pick = rng.random(n) < 0.1
    a[pick] = rng.choice(specials, int(pick.sum()))
    close = rng.random(n) < 0.4
    b[close] = np.clip(a[close].astype(np.int64) + rng.integers(-40, 40, int(close.sum())),
                       0, (1 << 16) - 1).astype(np.uint64)
    b[rng.random(n) < 0.5] ^= np.uint64(fmt.sign_bit)
    far = rng.random(n) < 0.2
    low_binades = rng.integers(0, 3, int(far.sum())).astype(np.uint64)
    b[far] = (b[far] & np.uint64(fmt.sign_bit | ((1 << fmt.mantissa_bits) - 1))) | (
        low_binades << np.uint64(fmt.mantissa_bits))
    return a.astype(np.uint16), b.astype(np.uint16)


def scalar_binary(op, fmt, a, b, settings):
    fn = getattr(fpsim.arith, op)
    ctx = fpsim.Context(**settings)
    codes, flags = [], []
    make = fmt.from_bits
    for x, y in zip(a.tolist(), b.tolist()):
        ctx.clear_flags()
        codes.append(fn(make(x), make(y), ctx).bits)
        flags.append(ctx.flags.value)
    return np.array(codes, f"u{fmt.width // 8}"), np.array(flags, np.uint8)


def check_binary(op, fmt, a, b, settings, dtype=None, chunk_size=None):
    """The array operation on codes ``a`` and ``b`` (or on their values
    viewed as ``dtype``) equals the scalar model, codes, flags and the
    context's flags."""
    want_codes, want_flags = scalar_binary(op, fmt, a, b, settings)
    ctx = fpsim.Context(**settings)
    fn = getattr(array, op)
    kw = {} if chunk_size is None else {"chunk_size": chunk_size}
    if dtype is None:
        got, flags = fn(a, b, ctx, fmt=fmt, return_flags=True, **kw)
    else:
        got, flags = fn(a.view(dtype), b.view(dtype), ctx, return_flags=True, **kw)
        got = got.view(a.dtype)
    bad = np.flatnonzero((got != want_codes) | (flags != want_flags))
    d = fmt.width // 4
    assert not bad.size, (
        f"{bad.size} of {a.size} differ, {fmt.name} {op} {settings}: " + "; ".join(
            f"0x{int(a[j]):0{d}x}, 0x{int(b[j]):0{d}x}: scalar 0x{int(want_codes[j]):0{d}x} "
            f"{Flag(int(want_flags[j]))!r}, array 0x{int(got[j]):0{d}x} "
            f"{Flag(int(flags[j]))!r}" for j in bad[:6]))
    assert ctx.flags == Flag(int(np.bitwise_or.reduce(want_flags)))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("fmt", FLOAT_PATH, ids=lambda f: f.name)
def test_float_path_equals_scalar_model(fmt, op):
    a, b = operand_pairs(fmt, seed=fmt.mantissa_bits + len(op))
    for i, mode in enumerate(MODES):
        check_binary(op, fmt, a, b, {"rounding": mode, **EXTRA[(i + len(op)) % len(EXTRA)]})


# -- add, sub and mul of FP32 through float64 and the kernel -------------------------

FP32_SETTINGS = [  # every combination of the four switches, each mode taking four
    {"ftz": ftz, "daz": daz, "tininess": "before" if before else "after", "saturate": sat}
    for ftz in (False, True) for daz in (False, True) for before in (False, True)
    for sat in (False, True)]


def fp32_operand_pairs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """FP32 operand codes where sums and products are hard: random codes,
    specials (zeros, subnormals, the largest finite values, infinities,
    quiet and signaling NaNs with payloads), operands a few codes apart
    with either sign (cancellation, exact zeros), operands whose exponents
    differ by 0 to 30 with a power of two among them (ties and sticky bits
    at every alignment), products near the overflow threshold and across
    the subnormal range, subnormal operands, and pairs near the subnormal
    range (tiny sums)."""
    rng = np.random.default_rng(seed)
    n = FLOAT_PATH_SIZE
    m, sign = FP32.mantissa_bits, FP32.sign_bit
    frac_mask = np.uint64((1 << m) - 1)
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    specials = np.array([0, sign, 1, sign | 1, 3, (1 << m) - 1, sign | (1 << m) - 1,
                         1 << m, FP32.max_code, FP32.max_code - 1, FP32.max_code | sign,
                         FP32.inf_code, FP32.inf_code | sign, FP32.default_nan_code,
                         FP32.inf_code + 1, FP32.inf_code + 3 | sign,
                         FP32.inf_code | (1 << (m - 1)) | 5, (1 << 32) - 1], dtype=np.uint64)
    e_a = (a >> np.uint64(m)) & np.uint64(0xFF)
    kind = rng.integers(0, 6, n)
    k = kind == 0  # close codes: cancellation and exact zeros
    b[k] = np.clip(a[k].astype(np.int64) + rng.integers(-40, 40, int(k.sum())),
                   0, (1 << 32) - 1).astype(np.uint64)
    k = kind == 1  # exponents 0..30 apart, b's fraction often zero (ties)
    e_b = np.clip(e_a[k].astype(np.int64) - rng.integers(0, 31, int(k.sum())), 0, 254)
    frac = b[k] & frac_mask
    frac[rng.random(int(k.sum())) < 0.5] = 0
    b[k] = (b[k] & np.uint64(sign)) | (e_b.astype(np.uint64) << np.uint64(m)) | frac
    k = kind == 2  # products near overflow or in and below the subnormal range
    biased = rng.choice([254, 255, 1, 0, -13, -22, -23, -24], int(k.sum()))  # the product's
    e_b = np.clip(biased + rng.integers(-1, 2, int(k.sum())) - e_a[k].astype(np.int64) + 127,
                  1, 254)
    b[k] = (b[k] & np.uint64(sign | ((1 << m) - 1))) | (e_b.astype(np.uint64) << np.uint64(m))
    k = kind == 3  # subnormal operands
    b[k] &= np.uint64(sign) | frac_mask
    k = kind == 4  # both operands near the subnormal range: tiny sums
    a[k] &= np.uint64(sign | (3 << m)) | frac_mask
    b[k] &= np.uint64(sign | (3 << m)) | frac_mask
    pick = rng.random(n) < 0.08
    a[pick] = rng.choice(specials, int(pick.sum()))
    pick = rng.random(n) < 0.04
    b[pick] = rng.choice(specials, int(pick.sum()))
    b[rng.random(n) < 0.5] ^= np.uint64(sign)
    return a.astype(np.uint32), b.astype(np.uint32)


def fp32_division_pairs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs above, plus divisors that are powers of two placing the
    quotient across the subnormal range (ties there) and past overflow, and
    exact quotients (a = b × c with b and c of at most 12 bits)."""
    a, b = fp32_operand_pairs(seed)
    rng = np.random.default_rng(seed + 100)
    n, m = a.size, FP32.mantissa_bits
    e_a = ((a >> m) & 0xFF).astype(np.int64)
    k = rng.random(n) < 0.25
    target = rng.choice([-1, 0, 1, 2, -22, -23, -24, 254, 255, 256], int(k.sum()))
    e_b = np.clip(e_a[k] - target + 127 - 127, 1, 254)  # quotient's biased exponent ~ target
    b[k] = (b[k] & np.uint32(FP32.sign_bit)) | (e_b.astype(np.uint32) << np.uint32(m))
    k = np.flatnonzero(rng.random(n) < 0.15)
    small = lambda size: (rng.integers(1, 1 << 12, size) * 2.0 ** rng.integers(-30, 30, size))  # noqa: E731
    bv, cv = small(k.size), small(k.size)
    b[k] = bv.astype(np.float32).view(np.uint32)
    a[k] = (bv * cv).astype(np.float32).view(np.uint32)
    return a, b


@pytest.mark.exhaustive  # (20 s: the hard-pair tests here run by default)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_fp32_float_path_equals_scalar_model(op):
    """FP32 add, sub, mul and div through float64 (TwoSum's error, the
    quotient's exact remainder) and the kernel: every deterministic mode,
    every combination of ftz, daz, tininess and saturate, codes and float32
    values as operands."""
    a, b = fp32_division_pairs(seed=9) if op == "div" else fp32_operand_pairs(seed=len(op))
    for i, mode in enumerate(MODES):
        for j in range(4):
            settings = {"rounding": mode, **FP32_SETTINGS[(4 * i + j) % 16]}
            if j == 3:
                settings["nan"] = ["x86", "riscv", "arm_default_nan"][i % 3]
            check_binary(op, FP32, a, b, settings, np.float32 if j % 2 else None)


def fp32_fma_triples(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hard pairs above as a and b, with c: other hard codes, and, in
    two lanes of five, the negated FP32 rounding of a × b moved by 0, ±1 or
    ±2 codes (cancellation down to the product's rounding error, exact
    zeros, and sums whose exact value is the product's low bits)."""
    a, b = fp32_operand_pairs(seed)
    c, _ = fp32_operand_pairs(seed + 1)
    rng = np.random.default_rng(seed + 2)
    with np.errstate(all="ignore"):
        near = (-(a.view(np.float32) * b.view(np.float32))).view(np.uint32)
    k = rng.random(a.size) < 0.4
    step = rng.integers(-2, 3, a.size).astype(np.int64)
    c[k] = (near[k].astype(np.int64) + step[k]).clip(0, (1 << 32) - 1).astype(np.uint32)
    return a, b, c


def test_fp32_fma_float_path_equals_scalar_model():
    """FP32 fma through float64 (the exact product, TwoSum with c) and the
    kernel, against the scalar fma: every deterministic mode and
    combination of ftz, daz, tininess and saturate, codes and float32
    values, results and flags."""
    a, b, c = fp32_fma_triples(seed=31)
    make = FP32.from_bits
    for i, mode in enumerate(MODES):
        for j in range(2):
            settings = {"rounding": mode, **FP32_SETTINGS[(2 * i + j * 5) % 16]}
            ctx = fpsim.Context(**settings)
            want_codes, want_flags = [], []
            for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
                ctx.clear_flags()
                want_codes.append(fpsim.arith.fma(make(x), make(y), make(z), ctx).bits)
                want_flags.append(ctx.flags.value)
            want_codes = np.array(want_codes, np.uint32)
            want_flags = np.array(want_flags, np.uint8)
            run = fpsim.Context(**settings)
            if j:
                got, flags = array.fma(a.view(np.float32), b.view(np.float32),
                                       c.view(np.float32), run, return_flags=True)
                got = got.view(np.uint32)
            else:
                got, flags = array.fma(a, b, c, run, fmt=FP32, return_flags=True)
            bad = np.flatnonzero((got != want_codes) | (flags != want_flags))
            assert not bad.size, (mode, settings, [
                (hex(int(a[t])), hex(int(b[t])), hex(int(c[t])), hex(int(want_codes[t])),
                 hex(int(got[t])), int(want_flags[t]), int(flags[t])) for t in bad[:5]])
            assert run.flags == Flag(int(np.bitwise_or.reduce(want_flags)))


# -- FP16 and BF16 by integer operations on float32 bits ---------------------------
#
# float32 -> BF16 encodes, and add, sub and mul of FP16 and BF16, round the
# float32 value (or the round-to-odd proxy of an exact sum) by integer
# operations on its bits (fpsim.array._convert.round_fp32_bits); lanes whose
# result is not a normal number go to the general path.  The inputs below
# cover every code of both formats.

BITS_FORMATS = [FP16, BF16]


def every_code_neighbourhood(fmt: fpsim.Format, seed: int) -> np.ndarray:
    """Distinct float32 values around every code of ``fmt``: each code's
    value, the midpoint to the next code up (ties; below the smallest
    subnormal too), the float32 values one place either side of both, each
    value with random bits below the format's last place, and the inputs of
    :func:`interesting` (overflow and underflow edges, NaN payloads)."""
    rng = np.random.default_rng(seed)
    codes = np.arange(1 << 16, dtype=np.uint64)
    v = array.decode(codes, fmt)
    finite = np.isfinite(v) & ((codes & np.uint64(0x7FFF)) < np.uint64(fmt.max_code))
    nxt = array.decode(codes[finite] + np.uint64(1), fmt)
    mids = (v[finite] + nxt) / 2          # p + 1 bits: exact in float32
    with np.errstate(over="ignore", invalid="ignore"):  # (NaN codes)
        base = np.concatenate([v, mids]).astype(np.float32)
        near = [base, np.nextafter(base, np.float32(np.inf)),
                np.nextafter(base, np.float32(-np.inf))]
        noisy = v.astype(np.float32).view(np.uint32) ^ rng.integers(
            0, 1 << (23 - fmt.mantissa_bits), v.size, dtype=np.uint32)
    out = np.concatenate(near + [noisy.view(np.float32), interesting(fmt, np.float32, seed)])
    return np.unique(out.view(np.uint32)).view(np.float32)


def test_fp32_to_bf16_bits_equals_ml_dtypes_on_every_code_neighbourhood():
    """Round to nearest even, on every code's neighbourhood and a strided
    sweep of all float32 codes: the codes are ml_dtypes' cast (an
    independent implementation), and the flags follow from them: INEXACT where the
    result differs from the input, OVERFLOW where a finite input became
    infinite, UNDERFLOW where an inexact input lies below the smallest
    normal by more than half a last place of the binade below (tininess
    after rounding)."""
    import ml_dtypes

    sweep = (np.arange(0, 1 << 32, 4093, dtype=np.uint64) + 17).astype(np.uint32)  # all binades
    x = np.concatenate([every_code_neighbourhood(BF16, seed=1), sweep.view(np.float32)])
    x = x[~np.isnan(x)]
    ctx = fpsim.Context()
    got, flags = array.encode(x, BF16, ctx, return_flags=True)
    want = x.astype(ml_dtypes.bfloat16)
    assert np.array_equal(got, want.view(np.uint16))
    back = want.astype(np.float32)
    inexact = back != x
    overflow = np.isfinite(x) & np.isinf(back)
    tiny = np.abs(x.astype(np.float64)) < 2.0**-126 - 2.0**-135
    expected = (np.where(inexact, Flag.INEXACT.value, 0)
                | np.where(overflow, Flag.OVERFLOW.value, 0)
                | np.where(tiny & inexact, Flag.UNDERFLOW.value, 0))
    assert np.array_equal(flags, expected.astype(np.uint8))
    assert ctx.flags == Flag(int(np.bitwise_or.reduce(expected)))


@pytest.mark.exhaustive
def test_fp32_to_bf16_bits_equals_scalar_model_in_every_mode_and_setting():
    x = every_code_neighbourhood(BF16, seed=2)
    for i, mode in enumerate(MODES):
        check(x, BF16, {"rounding": mode, **EXTRA[i % len(EXTRA)]})
    for extra in EXTRA[1:]:
        check(x[::5], BF16, {"rounding": "rne", **extra})
    check(x[::7], BF16, {"rounding": "rup", "ftz": True})  # tininess after rounding


@pytest.mark.parametrize("mode", MODES)
def test_round_fp32_bits_serves_normal_results_exactly(mode):
    """FP16 through the function itself (FP16 encodes take the proxy; BF16's
    are the tests above): every lane it serves equals the scalar conversion,
    exact zeros and subnormals and overflow (saturating or not) included;
    the lanes it leaves to the caller all have results that are not normal
    numbers below infinity."""
    from fpsim.array._convert import round_fp32_bits
    from fpsim.modes import Rounding

    for fmt in [FP16]:
        x = every_code_neighbourhood(fmt, seed=3)
        saturate = mode in ("rne", "rup", "rto")
        want_codes, want_flags = scalar(x, fmt, {"rounding": mode, "saturate": saturate})
        want_codes = np.array(want_codes, np.uint16)
        codes, flags, redo = round_fp32_bits(x.view(np.uint32), fmt, Rounding(mode), saturate,
                                             True, True)
        served = np.ones(x.size, bool)
        served[redo] = False
        bad = np.flatnonzero(served & ((codes != want_codes) | (flags != np.array(want_flags))))
        assert not bad.size, [(hex(int(x.view(np.uint32)[j])), hex(int(want_codes[j])),
                               hex(int(codes[j])), want_flags[j], int(flags[j])) for j in bad[:5]]
        mag = want_codes[redo] & np.uint16(0x7FFF)
        special = ~np.isfinite(x[redo])  # (saturation turns infinities into normals)
        assert ((mag <= 1 << fmt.mantissa_bits) | (mag >= fmt.inf_code) | special).all()
        overflow = (np.array(want_flags, np.uint8) & Flag.OVERFLOW.value) != 0
        assert served[overflow].all()
        assert redo.size < x.size // 5


def hard_partners(fmt: fpsim.Format, op: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every code of ``fmt`` six times as the first operand, the second
    chosen where the bit path could fail: the value that cancels it exactly
    (a zero operand for mul), codes a few apart with either sign
    (cancellation, ties, exact results), tiny operands of either sign (a
    float32 sum that is inexact, landing on the format's grid, its error
    pointing either way), specials (zeros, infinities, NaN payloads, the
    largest and smallest values), partners placing the result near
    overflow and across the subnormal range, and random codes."""
    rng = np.random.default_rng(seed)
    n = 1 << 16
    m, sign = fmt.mantissa_bits, fmt.sign_bit
    a = np.arange(n, dtype=np.int64)
    random_sign = rng.integers(0, 2, n) * sign
    cancel = a ^ (0 if op == "sub" else sign) if op != "mul" else random_sign
    near = np.clip(a + rng.integers(-4, 5, n), 0, n - 1) ^ random_sign
    tiny = (rng.integers(0, 3 << m, n)) | random_sign              # exponent fields 0..2
    specials = np.array([0, sign, 1, sign | 1, (1 << m) - 1, 1 << m, fmt.max_code,
                         fmt.max_code - 1, fmt.max_code | sign, fmt.inf_code,
                         fmt.inf_code | sign, fmt.default_nan_code, fmt.inf_code + 1,
                         fmt.inf_code + 3 | sign, (1 << 16) - 1])
    special = rng.choice(specials, n)
    e_a = (a >> m) & ((1 << fmt.exponent_bits) - 1)
    top = (1 << fmt.exponent_bits) - 2
    if op == "mul":  # products near overflow, the smallest normal and in the subnormal range
        target = rng.choice([top + 1, top, 1, 0, -1, -m, -m - 1, -m - 2], n) + fmt.bias
        e_b = np.clip(target - e_a + fmt.bias + rng.integers(-1, 2, n), 1, top)
        edge = (e_b << m) | (a & ((1 << m) - 1)) | random_sign
    else:  # sums near overflow: the largest binade
        edge = (top << m) | rng.integers(0, 1 << m, n) | random_sign
    rand = rng.integers(0, n, n)
    b = np.concatenate([cancel, near, tiny, special, edge, rand])
    return np.tile(a, 6).astype(np.uint16), b.astype(np.uint16)


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("fmt", BITS_FORMATS, ids=lambda f: f.name)
def test_bit_path_equals_scalar_model_on_every_code(fmt, op):
    """add, sub and mul of FP16 and BF16 (float32 arithmetic, TwoSum's
    round-to-odd proxy, integer rounding of the bits): every code against
    hard partners, in every deterministic mode with each setting (ftz,
    daz, tininess, saturate, NaN policies), as values and as codes, and
    in chunks that do not divide the array."""
    a, b = hard_partners(fmt, op, seed=fmt.exponent_bits + len(op))
    import ml_dtypes

    dtype = np.float16 if fmt is FP16 else ml_dtypes.bfloat16
    for i, mode in enumerate(MODES):
        settings = {"rounding": mode, **EXTRA[(i + len(op)) % len(EXTRA)]}
        check_binary(op, fmt, a, b, settings, dtype if i % 2 else None,
                     chunk_size=40_009 if i % 3 == 0 else None)


@pytest.mark.parametrize("fmt", BITS_FORMATS, ids=lambda f: f.name)
def test_bit_path_broadcasts_a_scalar_operand(fmt):
    """A single value on either side (read through a broadcast view)."""
    a, _ = hard_partners(fmt, "add", seed=5)
    a = a[: 1 << 16: 3]
    for c in (0x0001, fmt.max_code, fmt.sign_bit, 0x3C00 if fmt is FP16 else 0x3F80):
        one = np.array([c], np.uint16)
        for op in ("add", "sub", "mul"):
            for settings in ({"rounding": "rdn"}, {"rounding": "rtz", "ftz": True}):
                want = scalar_binary(op, fmt, a, np.repeat(one, a.size), settings)
                ctx = fpsim.Context(**settings)
                got = getattr(array, op)(a, one, ctx, fmt=fmt, return_flags=True)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
                want = scalar_binary(op, fmt, np.repeat(one, a.size), a, settings)
                got = getattr(array, op)(one, a, ctx, fmt=fmt, return_flags=True)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_bit_path_needs_ieee_float32_arithmetic(monkeypatch):
    """Where the unit does not add float32 as IEEE's default (a library set
    flush-to-zero or another rounding mode), BF16 and FP16 sums take the
    table path: the same results."""
    from fpsim.array import _native

    a, b = hard_partners(BF16, "add", seed=6)
    want = scalar_binary("add", BF16, a, b, {"rounding": "rup"})
    monkeypatch.setattr(_native, "float32_adds_are_ieee", lambda: False)
    got = array.add(a, b, fmt=BF16, rounding="rup", return_flags=True)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


# -- 16-bit results below the normal range by bits (round_fp32_bits) -------------------------

def _tiny_product_operands(fmt, n, seed_):
    """Pairs of codes whose products land below ``fmt``'s smallest normal:
    random small magnitudes, exact subnormal multiples, ties of the
    subnormal grid and products just under the smallest normal."""
    rng = np.random.default_rng(seed_)
    m, emin = fmt.mantissa_bits, fmt.emin
    # exponent fields so that the exponents add up below emin (and around it)
    low = fmt.bias + emin // 2 - m - 3
    e1 = rng.integers(max(low, 0), fmt.bias + emin // 2 + 2, n)
    e2 = rng.integers(max(low, 0), fmt.bias + emin // 2 + 2, n)
    f1 = rng.integers(0, 1 << m, n)
    f2 = rng.integers(0, 1 << m, n)
    s1 = rng.integers(0, 2, n) * fmt.sign_bit
    s2 = rng.integers(0, 2, n) * fmt.sign_bit
    a = s1 | (np.clip(e1, 0, None) << m) | f1
    b = s2 | (np.clip(e2, 0, None) << m) | f2
    # ties: a power of two (a subnormal) times 1.5 (a half unit of the grid)
    one_half = (fmt.bias << m) | (1 << (m - 1))
    pow2 = np.arange(1, 1 << m, dtype=np.int64)
    a = np.concatenate([a, pow2, pow2 | fmt.sign_bit])
    b = np.concatenate([b, np.full(pow2.size, one_half), np.full(pow2.size, one_half)])
    return a.astype(np.int64), b.astype(np.int64)


@pytest.mark.parametrize("tininess", ["after", "before"])
@pytest.mark.parametrize("mode", ["rne", "rna", "rtz", "rup", "rdn", "rto"])
@pytest.mark.parametrize("fmt", [fpsim.FP16, fpsim.BF16], ids=["fp16", "bf16"])
def test_16_bit_products_below_the_normal_range(fmt, mode, tininess):
    """FP16's products are exact in float32 and round into FP16's subnormals
    by bits (round_fp32_bits) or, in a chunk made mostly of them, through the
    proxy table; BF16's tiny products go to the integer path: each way, code
    for code and flag for flag the scalar model's."""
    from test_array_arith import check

    a, b = _tiny_product_operands(fmt, 20000, 11)
    # chunks under 4,096 lanes round their tiny lanes by bits; larger chunks
    # made mostly of them take the proxy table
    for chunk_size in (2048, 1 << 16):
        check("mul", fmt, [a, b], {"rounding": mode, "tininess": tininess},
              chunk_size=chunk_size)


@pytest.mark.parametrize("mode", ["rne", "rna", "rtz", "rup", "rdn", "rto"])
def test_float32_subnormals_into_bf16_by_bits(mode):
    """Every kind of FP32 subnormal (exact in BF16, ties, above and below
    them) rounded into BF16's subnormals by bits, against the scalar model."""
    rng = np.random.default_rng(12)
    bits = np.concatenate([rng.integers(1, 1 << 23, 30000),
                           (np.arange(1, 1 << 7) << 16) | (1 << 15),      # ties
                           (np.arange(1, 1 << 7) << 16) | 1,
                           (np.arange(1, 1 << 7) << 16) - 1]).astype(np.uint32)
    bits |= rng.integers(0, 2, bits.size).astype(np.uint32) << np.uint32(31)
    ctx = fpsim.Context(rounding=mode)
    codes, flags = array.encode(bits, "bf16", ctx, src="fp32", return_flags=True)
    for i in range(0, bits.size, 97):  # a sample through the scalar model
        c = fpsim.Context(rounding=mode)
        want = fpsim.convert(fpsim.FP32.from_bits(int(bits[i])), fpsim.BF16, c)
        assert (int(codes[i]), int(flags[i])) == (want.bits, c.flags.value), hex(bits[i])


# -- the bit path without per-element flags (return_flags=False) ----------------------------
#
# Without per-element flags, add, sub and mul of FP16 and BF16 give each
# chunk's flags ORed into one int and look for INEXACT only until a chunk of
# the call is known inexact; round to nearest (even or away) rounds the
# float32 sum as it is and computes TwoSum's error only for that search.
# The arrays below are chunks of exact results with a few lanes planted
# where the search could go wrong: one inexact lane in the last (short)
# chunk, a sum whose only inexactness is float32's own rounding (its bits
# land on the format's grid), NaNs, infinities and overflow in chunks after
# the first inexact one, tiny results, and a whole chunk of tiny products
# (which takes the proxy table's path).  Codes against the scalar model
# lane by lane, the context's flags against the OR of its flags.

FLAGLESS_CHUNK = 4096


def _codes_of_values(fmt: fpsim.Format, values) -> np.ndarray:
    return np.array([fmt.round(float(v)).bits for v in values], np.uint16)


def flagless_pools(fmt: fpsim.Format, op: str, seed: int) -> dict[str, tuple[np.ndarray,
                                                                            np.ndarray]]:
    """Operand codes by what their results raise (in round to nearest
    even, default settings): "exact" (small integers; for mul, products of
    at most 5 bits), "rounded" (INEXACT alone, the float32 result having
    bits below the format's last place), "float32" (sums INEXACT alone
    though float32's sum lies on the format's grid: a term below half of
    float32's last place of the other; mul: as "rounded"), "special" (NaN
    operands, quiet and signaling, with payloads; infinities, inf - inf,
    0 × inf, overflow) and "tiny" (subnormal operands and results)."""
    rng = np.random.default_rng(seed)
    m, sign = fmt.mantissa_bits, fmt.sign_bit
    signs = lambda k: rng.integers(0, 2, k) * 2 - 1  # noqa: E731
    if op == "mul":
        x = rng.choice([1, 3, 5, 7], 200) * 2.0 ** rng.integers(-4, 5, 200) * signs(200)
        y = rng.choice([1, 3], 200) * 2.0 ** rng.integers(-4, 5, 200) * signs(200)
    else:
        x = rng.integers(-127, 128, 200).astype(float)
        y = rng.integers(-127, 128, 200).astype(float)
    pools = {"exact": (_codes_of_values(fmt, x), _codes_of_values(fmt, y))}
    e = rng.integers(-6, 7, 300).astype(float)
    x = (1 + rng.integers(0, 1 << m, 300) * 2.0**-m) * 2.0**e * signs(300)
    if op == "mul":  # odd last places: a product with a bit at 2**-2m, below the format's
        x = (1 + (rng.integers(0, 1 << (m - 1), 300) * 2 + 1) * 2.0**-m) * 2.0**e * signs(300)
        y = (1 + (rng.integers(0, 1 << (m - 1), 300) * 2 + 1) * 2.0**-m) * signs(300)
    else:
        y = rng.choice([2.0**-(m + 1), 2.0**-(m + 2), 3 * 2.0**-(m + 2)], 300) * 2.0**e * signs(300)
    pools["rounded"] = (_codes_of_values(fmt, x), _codes_of_values(fmt, y))
    if op != "mul":
        e = rng.integers(6, 14, 300).astype(float)
        x = (1 + rng.integers(0, 1 << m, 300) * 2.0**-m) * 2.0**e * signs(300)
        y = 2.0 ** (e - 30) * signs(300)
        pools["float32"] = (_codes_of_values(fmt, x), _codes_of_values(fmt, y))
    else:
        pools["float32"] = pools["rounded"]
    one, two = fmt.round(1.0).bits, fmt.round(2.0).bits
    quiet, signaling = fmt.default_nan_code, fmt.inf_code | 1
    special = [(quiet, one), (one, quiet | 5 | sign), (signaling, one), (one, signaling | 3),
               (fmt.inf_code, one), (one, fmt.inf_code | sign), (fmt.inf_code, fmt.inf_code),
               (fmt.inf_code, fmt.inf_code | sign), (fmt.max_code, fmt.max_code),
               (fmt.max_code | sign, fmt.max_code | sign), (fmt.max_code, fmt.max_code | sign),
               (0, fmt.inf_code), (fmt.max_code, two), (fmt.max_code - 3, fmt.max_code - 1)]
    a, b = np.array(special, np.uint16).T
    pools["special"] = (a, b)
    a = rng.integers(0, 3 << m, 200) | rng.integers(0, 2, 200) * sign   # exponent fields 0..2
    b = rng.integers(0, 3 << m, 200) | rng.integers(0, 2, 200) * sign
    if op == "mul":
        a, b = _tiny_product_operands(fmt, 200, seed)
        a, b = a[:200], b[:200]
    pools["tiny"] = (a.astype(np.uint16), b.astype(np.uint16))
    return pools


# Per chunk: the pool a few lanes of an otherwise exact chunk come from
# ("" none; "all tiny": every lane a tiny one).  The last chunk is short.
FLAGLESS_LAYOUTS = {
    "exact only": ["", "", "", "", ""],
    "inexact in the last chunk": ["", "", "", "", "rounded"],
    "float32's rounding in the last chunk": ["", "", "", "float32"],
    "inexact first, specials later": ["rounded", "", "special", "tiny", "special"],
    "specials and tiny results, nothing rounded": ["special", "", "tiny", "special"],
    "every kind": ["rounded", "float32", "special", "tiny", ""],
    "a chunk of tiny results": ["", "all tiny", "", "", "", "", "", "", "rounded"],
}


def flagless_layout(pools: dict, chunks: list[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices into the pools, concatenated in the order of ``pools``: one
    chunk of exact lanes per entry of ``chunks``, each with one to three
    lanes of the pool it names (the last chunk 777 lanes short)."""
    rng = np.random.default_rng(seed)
    offsets, start = {}, 0
    for name, (a, _) in pools.items():
        offsets[name], start = (start, a.size), start + a.size
    def draw(name, k):  # noqa: E306
        first, size = offsets[name]
        return first + rng.integers(0, size, k)
    parts = []
    for i, name in enumerate(chunks):
        n = FLAGLESS_CHUNK - (777 if i == len(chunks) - 1 else 0)
        if name == "all tiny":
            parts.append(draw("tiny", n))
            continue
        part = draw("exact", n)
        if name:
            k = int(rng.integers(1, 4))
            part[rng.choice(n, k, replace=False)] = draw(name, k)
        parts.append(part)
    a = np.concatenate([p[0] for p in pools.values()])
    b = np.concatenate([p[1] for p in pools.values()])
    index = np.concatenate(parts)
    return a[index], b[index]


def test_flagless_pools_raise_what_they_are_named_after():
    """The pools the tests below plant (round to nearest even, default
    settings): "exact" lanes raise nothing, "rounded" and "float32" lanes
    INEXACT alone, and "float32" sums have bits that float32 rounds onto
    the format's grid (so that only TwoSum's error shows them inexact)."""
    import ml_dtypes

    for fmt in BITS_FORMATS:
        for op in ("add", "sub", "mul"):
            pools = flagless_pools(fmt, op, seed=1)
            for name in ("exact", "rounded", "float32"):
                a, b = pools[name]
                _, flags = scalar_binary(op, fmt, a, b, {})
                want = 0 if name == "exact" else Flag.INEXACT.value
                assert (flags == want).all(), (fmt.name, op, name)
            if op != "mul":
                a, b = pools["float32"]
                dtype = np.float16 if fmt is FP16 else ml_dtypes.bfloat16
                x, y = a.view(dtype).astype(np.float32), b.view(dtype).astype(np.float32)
                s = x + y if op == "add" else x - y
                assert (s.astype(dtype).astype(np.float32) == s).all()


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("fmt", BITS_FORMATS, ids=lambda f: f.name)
def test_bit_path_without_per_element_flags_equals_scalar_model(fmt, op):
    """return_flags=False: the codes of every lane and the context's flags
    (the OR of every lane's) are the scalar model's, for every layout of
    the pools above, in every deterministic mode with each setting, on one
    thread and on two (chunks then run in any order, the search for
    INEXACT shared between them), as values and as codes."""
    import ml_dtypes

    dtype = np.float16 if fmt is FP16 else ml_dtypes.bfloat16
    pools = flagless_pools(fmt, op, seed=fmt.exponent_bits + len(op))
    a_all = np.concatenate([p[0] for p in pools.values()])
    b_all = np.concatenate([p[1] for p in pools.values()])
    fn = getattr(array, op)
    for i, mode in enumerate(MODES):
        for j, extra in enumerate([{}, EXTRA[(i + len(op)) % len(EXTRA)]]):
            settings = {"rounding": mode, **extra}
            want_codes, want_flags = scalar_binary(op, fmt, a_all, b_all, settings)
            lookup = {(int(x), int(y)): (int(c), int(f)) for x, y, c, f in
                      zip(a_all, b_all, want_codes, want_flags)}
            for k, (name, chunks) in enumerate(FLAGLESS_LAYOUTS.items()):
                if "all tiny" in chunks and (j or i % 3):
                    continue  # (its proxy table costs a second a setting: two settings)
                a, b = flagless_layout(pools, chunks, seed=k)
                expected = [lookup[(int(x), int(y))] for x, y in zip(a, b)]
                codes = np.array([c for c, _ in expected], np.uint16)
                flags = Flag(int(np.bitwise_or.reduce(np.array([f for _, f in expected]))))
                workers = 1 + (i + j + k) % 2
                ctx = fpsim.Context(**settings)
                if (i + k) % 2:
                    got = fn(a.view(dtype), b.view(dtype), ctx, chunk_size=FLAGLESS_CHUNK,
                             workers=workers).view(np.uint16)
                else:
                    got = fn(a, b, ctx, fmt=fmt, chunk_size=FLAGLESS_CHUNK, workers=workers)
                bad = np.flatnonzero(got != codes)
                assert not bad.size, (name, settings, workers, [
                    (hex(int(a[t])), hex(int(b[t])), hex(int(codes[t])), hex(int(got[t])))
                    for t in bad[:5]])
                assert ctx.flags == flags, (name, settings, workers, ctx.flags, flags)


@pytest.mark.parametrize("fmt", BITS_FORMATS, ids=lambda f: f.name)
def test_bit_path_without_per_element_flags_in_default_chunks(fmt):
    """The default chunks, on one thread and on every CPU: large random
    arrays (the benchmark's kind of data) give the codes of
    return_flags=True, and the same context flags, in every mode."""
    import ml_dtypes

    dtype = np.float16 if fmt is FP16 else ml_dtypes.bfloat16
    rng = np.random.default_rng(4)
    n = 3 * array.DEFAULT_CHUNK + 123
    x = (rng.standard_normal(n) * 100).astype(dtype)
    y = (rng.standard_normal(n) * 100).astype(dtype)
    y[-5:] = [np.inf, -np.inf, np.nan, 0, 1e30 if fmt is BF16 else 6e4]
    for op in ("add", "sub", "mul"):
        fn = getattr(array, op)
        for mode in MODES:
            want_ctx = fpsim.Context(rounding=mode)
            want, _ = fn(x, y, want_ctx, return_flags=True)
            for workers in (1, None):
                ctx = fpsim.Context(rounding=mode)
                got = fn(x, y, ctx, workers=workers)
                assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), (op, mode)
                assert ctx.flags == want_ctx.flags, (op, mode, workers)


def _every_partner_of_three_binades(fmt: fpsim.Format, block: int):
    """Blocks of operand codes: every code of the lowest normal binade,
    of [1, 2) and of the highest (either sign) against every code of the
    format but NaNs, ``block`` first operands at a time."""
    m = fmt.mantissa_bits
    top = (1 << fmt.exponent_bits) - 2
    firsts = np.concatenate([(e << m) + np.arange(1 << m) for e in (1, fmt.bias, top)])
    firsts = np.concatenate([firsts, firsts | fmt.sign_bit]).astype(np.uint16)
    codes = np.arange(1 << 16, dtype=np.uint16)
    partners = codes[(codes & np.uint16(fmt.sign_bit - 1)) <= fmt.inf_code]
    for start in range(0, firsts.size, block):
        a = np.repeat(firsts[start:start + block], partners.size)
        yield a, np.tile(partners, a.size // partners.size)


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("fmt", BITS_FORMATS, ids=lambda f: f.name)
def test_nearest_sums_round_the_float32_sum_at_every_alignment(fmt, op):
    """Round to nearest rounds the float32 sum itself, without its error
    term (double rounding through float32 is innocuous for at most 11
    significant bits: fpsim.array._floatpaths), at every alignment of the
    terms: every code of three binades against every code.  FP16's sums
    are exact in float64, and numpy's float64 -> float16 cast rounds them
    once to nearest even (fpsim._machine.float16_casts_are_ieee checks it):
    an independent reference for the codes, with INEXACT where the result
    is not the exact sum and OVERFLOW where a finite sum became infinite.
    BF16's terms lie up to 2**254 apart: against the integer path, to
    nearest even and away, codes and flags.  Per-element flags and the
    context's flags alone (return_flags=False) both."""
    from fpsim.array._chunks import _CHUNK_OPS, _wide
    from fpsim.context import resolve

    fn = getattr(array, op)
    modes = ["rne"] if fmt is FP16 else ["rne", "rna"]
    if fmt is FP16:
        assert fpsim._machine.float16_casts_are_ieee()
    for mode in modes:
        _, key = resolve(None, {"rounding": mode})
        for a, b in _every_partner_of_three_binades(fmt, 16 if fmt is FP16 else 4):
            if fmt is FP16:
                x = a.view(np.float16).astype(np.float64)
                y = b.view(np.float16).astype(np.float64)
                exact = x + y if op == "add" else x - y
                with np.errstate(over="ignore"):
                    rounded = exact.astype(np.float16)
                want = rounded.view(np.uint16)
                back = rounded.astype(np.float64)
                want_flags = np.where(back != exact, Flag.INEXACT.value, 0)
                want_flags |= np.where(np.isinf(back) & np.isfinite(exact),
                                       Flag.OVERFLOW.value, 0)
                want_flags = want_flags.astype(np.uint8)
            else:
                want, want_flags = _CHUNK_OPS[op](fmt, _wide([a, b]), key, None)
            ctx = fpsim.Context(rounding=mode)
            got, flags = fn(a, b, ctx, fmt=fmt, return_flags=True)
            bad = np.flatnonzero((got != want) | (flags != want_flags))
            assert not bad.size, (mode, [(hex(int(a[t])), hex(int(b[t])), hex(int(want[t])),
                                          hex(int(got[t])), int(want_flags[t]), int(flags[t]))
                                         for t in bad[:5]])
            plain = fpsim.Context(rounding=mode)
            assert np.array_equal(fn(a, b, plain, fmt=fmt), want)
            assert plain.flags == Flag(int(np.bitwise_or.reduce(want_flags)))
