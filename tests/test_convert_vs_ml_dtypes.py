"""fpsim.convert of every code of a source format agrees with ml_dtypes'
``astype`` of the same code.

Bit-exact for non-NaN results, NaN-ness for NaN results (ml_dtypes turns
infinities into NaN for the formats without infinity: non-saturating).  The
flags are checked against the definitions: INEXACT iff the converted value
differs from the source value (a NaN result from a finite source differs);
INVALID iff the source is a signaling NaN, or an infinity going to a format
without infinity.  Signaling NaNs are recognised by a field decoder written
here (IEEE-style formats: NaN with the fraction's top bit clear).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fpsim

Flag = fpsim.Flag

# name -> (fpsim format, dtype, uint dtype, (exponent_bits, mantissa_bits, ieee specials?))
FORMATS = {
    "fp16": (fpsim.FP16, np.float16, np.uint16, (5, 10, True)),
    "bf16": (fpsim.BF16, ml_dtypes.bfloat16, np.uint16, (8, 7, True)),
    "fp32": (fpsim.FP32, np.float32, np.uint32, (8, 23, True)),
    "e4m3": (fpsim.E4M3, ml_dtypes.float8_e4m3fn, np.uint8, (4, 3, False)),
    "e5m2": (fpsim.E5M2, ml_dtypes.float8_e5m2, np.uint8, (5, 2, True)),
    "e4m3fnuz": (fpsim.E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, np.uint8, (4, 3, False)),
    "e5m2fnuz": (fpsim.E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, np.uint8, (5, 2, False)),
    "e3m4": (fpsim.format("float8_e3m4"), ml_dtypes.float8_e3m4, np.uint8, (3, 4, True)),
    "e4m3ieee": (fpsim.format("float8_e4m3"), ml_dtypes.float8_e4m3, np.uint8, (4, 3, True)),
    "e4m3b11fnuz": (fpsim.format("float8_e4m3b11fnuz"), ml_dtypes.float8_e4m3b11fnuz,
                    np.uint8, (4, 3, False)),
}

PAIRS = [
    ("fp16", "e4m3"), ("fp16", "e5m2"), ("fp16", "e4m3fnuz"), ("fp16", "e5m2fnuz"),
    ("fp16", "bf16"),
    ("bf16", "e4m3"), ("bf16", "e5m2"), ("bf16", "e4m3fnuz"), ("bf16", "e5m2fnuz"),
    ("bf16", "fp16"),
    ("e4m3", "fp16"), ("e4m3", "bf16"), ("e4m3", "fp32"),
    ("e5m2", "fp16"), ("e5m2", "bf16"), ("e5m2", "fp32"),
    ("e4m3fnuz", "fp16"), ("e5m2fnuz", "bf16"), ("e4m3", "e5m2"), ("e5m2", "e4m3"),
    ("fp16", "e3m4"), ("bf16", "e3m4"), ("e3m4", "fp32"), ("e3m4", "e4m3ieee"),
    ("fp16", "e4m3ieee"), ("bf16", "e4m3ieee"), ("e4m3ieee", "fp32"), ("e4m3ieee", "e4m3"),
    ("e4m3", "e4m3ieee"), ("fp16", "e4m3b11fnuz"), ("bf16", "e4m3b11fnuz"),
    ("e4m3b11fnuz", "fp32"), ("e4m3b11fnuz", "e4m3fnuz"), ("e4m3fnuz", "e4m3b11fnuz"),
]


def is_signaling_ieee(code: int, e: int, m: int) -> bool:
    ef = (code >> m) & ((1 << e) - 1)
    frac = code & ((1 << m) - 1)
    return ef == (1 << e) - 1 and frac != 0 and not frac >> (m - 1)


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_convert_every_code_matches_ml_dtypes_astype(src, dst):
    sfmt, sdtype, sutype, (se, sm, s_ieee) = FORMATS[src]
    dfmt, ddtype, dutype, (_, _, d_ieee) = FORMATS[dst]
    codes = np.arange(1 << sfmt.width, dtype=np.uint64).astype(sutype)
    with np.errstate(invalid="ignore", over="ignore"):
        src_vals = codes.view(sdtype)
        ref = src_vals.astype(ddtype)
        ref_bits = ref.view(dutype).tolist()
        ref_f64 = ref.astype(np.float64).tolist()
        src_f64 = src_vals.astype(np.float64).tolist()
    ctx = fpsim.Context()
    bad = []
    for code, rb, rv, sv in zip(codes.tolist(), ref_bits, ref_f64, src_f64):
        x = sfmt.from_bits(code)
        ctx.clear_flags()
        r = fpsim.convert(x, dfmt, ctx)
        ok = r.fmt is dfmt and (r.is_nan if math.isnan(rv) else r.bits == rb)
        if ok:
            if math.isnan(sv):
                want = Flag.INVALID if s_ieee and is_signaling_ieee(code, se, sm) else Flag(0)
            elif math.isinf(sv):
                want = Flag(0) if d_ieee else Flag.INVALID
            else:
                want = Flag(0) if rv == sv else Flag.INEXACT
            ok = (ctx.flags & (Flag.INVALID | Flag.INEXACT)) == want
        if not ok:
            bad.append((hex(code), sv, hex(rb), rv, hex(r.bits), str(ctx.flags)))
    assert not bad, f"{len(bad)} mismatches; first: {bad[:5]}"


def test_convert_accepts_a_format_name_and_numpy_scalars():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 1 << 16, 2000).astype(np.uint16)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = codes.view(np.float16).astype(ml_dtypes.float8_e4m3fn)
        ref_f64 = ref.astype(np.float64).tolist()
    ref_bits = ref.view(np.uint8).tolist()
    for code, scalar, rb, rv in zip(codes.tolist(), codes.view(np.float16), ref_bits, ref_f64):
        for given in (fpsim.FP16.from_bits(code), scalar):
            r = fpsim.convert(given, "e4m3")
            assert r.fmt is fpsim.E4M3
            assert r.is_nan if math.isnan(rv) else r.bits == rb, (hex(code), r)
