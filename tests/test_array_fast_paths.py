"""The array engine's fast paths equal the scalar model, code for code and
flag for flag: conversions of float32/float64 arrays through the
round-to-odd proxy (:mod:`fpsim.array._proxy`), and add, sub and mul of
FP16 and BF16 arrays through float64 and the proxy.

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
    return np.array(codes, np.uint16), np.array(flags, np.uint8)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("fmt", FLOAT_PATH, ids=lambda f: f.name)
def test_float_path_equals_scalar_model(fmt, op):
    a, b = operand_pairs(fmt, seed=fmt.mantissa_bits + len(op))
    for i, mode in enumerate(MODES):
        settings = {"rounding": mode, **EXTRA[(i + len(op)) % len(EXTRA)]}
        want_codes, want_flags = scalar_binary(op, fmt, a, b, settings)
        ctx = fpsim.Context(**settings)
        got, flags = getattr(array, op)(a, b, ctx, fmt=fmt, return_flags=True)
        bad = np.flatnonzero((got != want_codes) | (flags != want_flags))
        assert not bad.size, (
            f"{bad.size} of {a.size} differ, {fmt.name} {op} {settings}: " + "; ".join(
                f"0x{int(a[j]):04x}, 0x{int(b[j]):04x}: scalar 0x{int(want_codes[j]):04x} "
                f"{Flag(int(want_flags[j]))!r}, array 0x{int(got[j]):04x} "
                f"{Flag(int(flags[j]))!r}" for j in bad[:6]))
        assert ctx.flags == Flag(int(np.bitwise_or.reduce(want_flags)))
