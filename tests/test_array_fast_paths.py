"""The array engine's fast paths equal the scalar model, code for code and
flag for flag: conversions of float32/float64 arrays through the
round-to-odd proxy (:mod:`fpsim.array._proxy`), add, sub and mul of FP16
and BF16 arrays through float64 and the proxy, and of FP32 arrays through
float64 and the rounding kernel.

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

TARGETS = [FP16, BF16, E4M3, E5M2, TF32, E4M3FNUZ, E5M2FNUZ]
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


def check_binary(op, fmt, a, b, settings, dtype=None):
    """The array operation on codes ``a`` and ``b`` (or on their values
    viewed as ``dtype``) equals the scalar model, codes, flags and the
    context's flags."""
    want_codes, want_flags = scalar_binary(op, fmt, a, b, settings)
    ctx = fpsim.Context(**settings)
    fn = getattr(array, op)
    if dtype is None:
        got, flags = fn(a, b, ctx, fmt=fmt, return_flags=True)
    else:
        got, flags = fn(a.view(dtype), b.view(dtype), ctx, return_flags=True)
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
