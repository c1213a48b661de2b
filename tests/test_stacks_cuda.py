"""Differential runs of PyTorch on CUDA against fpsim.

The stack under test is torch on an NVIDIA GPU; the golden model is fpsim's
array engine (:mod:`fpsim.array`, :mod:`fpsim.ops`) under the settings of a
profile (:func:`fpsim.testing.profile`).  Every expected value comes from
fpsim, never from torch.  The module is skipped where torch is not
installed or has no CUDA device, so the default run (no GPU) skips it.

* casts from float32 into float16, bfloat16, float8_e4m3fn, float8_e5m2
  (and the FNUZ and E8M0 float8 types) of a structured sample: every value
  of the format, every midpoint between neighbours and the nearest float32
  either side, every float32 exponent with the low halves that decide a
  BF16 rounding, overflow thresholds, subnormals, infinities, NaNs with
  payloads and 2**20 random float32 codes; compared bit for bit under the
  ``torch`` profile with E4M3 not saturating (``CUDA_OVERRIDES``), and NaN
  inputs against the NaN codes CUDA is found to write (``cuda_nan_codes``:
  canonical codes where fpsim's IEEE policy keeps sign and payload);
* the same casts for every one of the 2**32 float32 codes
  (``@pytest.mark.exhaustive``; worker processes compute fpsim's side);
* casts of every code of one format into another (widening to float32,
  between the 16-bit and 8-bit types);
* ``+ - * /`` of float16 and bfloat16 tensors: every code against 256
  partner codes both ways and 2**24 random pairs, against round to nearest
  even (every NaN result is 0x7fff);
* float16 and bfloat16 ``torch.matmul`` (cuBLAS) with
  ``allow_fp16/bf16_reduced_precision_reduction`` on and off, against
  :func:`fpsim.ops.matmul` with FP32 accumulation.  cuBLAS does not specify
  its summation order (nor the rounding of the tensor cores' internal
  additions), so the GEMM tests assert an error bound that holds for any
  order of FP32 accumulation and the ULP limits measured, and report ULP
  distances.

At the end of the run the module prints a summary (agreement per case, ULP
figures of the GEMMs) to the terminal, and writes it to the file named by
the environment variable ``FPSIM_CUDA_SUMMARY`` if set.

``FPSIM_TORCH_DEVICE=cpu`` runs the same comparisons on torch's CPU build
(a debugging aid: tests that pin CUDA-only behaviour then fail).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import fpsim
from fpsim import array, ops
from fpsim.testing import compare, profile

try:
    import torch
except ImportError as exc:   # not installed, or a build that cannot load here
    pytest.skip(f"torch is not importable: {exc}", allow_module_level=True)

DEVICE = os.environ.get("FPSIM_TORCH_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(),
                                reason="torch has no CUDA device here")

TORCH_DTYPE_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16",
                     "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
                     "e4m3fnuz": "float8_e4m3fnuz", "e5m2fnuz": "float8_e5m2fnuz",
                     "e8m0": "float8_e8m0fnu"}
INT_DTYPES = {8: ("uint8", np.uint8, np.uint8), 16: ("int16", np.int16, np.uint16),
              32: ("int32", np.int32, np.uint32)}

# CUDA torch's casts are the ``torch`` profile's with these per-format
# overrides (measured with torch 2.11 on an H100, docs/stacks.rst):
# float8_e4m3fn does NOT saturate: overflow and infinities give NaN
# (0x7f/0xff), where the profile (measured on torch 2.13's CPU build) gives
# ±448.  torch 2.11's CPU build on the same machine does not saturate
# either: a difference of torch versions, not of devices.
CUDA_OVERRIDES = {"e4m3": {"saturate": False}}
OTHER_PROFILES = ("torch", "cuda_satfinite", "ml_dtypes")   # reported, not asserted

SUMMARY: list[str] = []


def record(line: str) -> None:
    if not SUMMARY:
        SUMMARY.append(f"== torch {torch.__version__} on {device_name()}: summary ==")
        record_file(SUMMARY[0])
    SUMMARY.append(line)
    record_file(line)


def record_file(line: str) -> None:
    path = os.environ.get("FPSIM_CUDA_SUMMARY")
    if path:   # line by line, so that a run cut short keeps what it measured
        with open(path, "a") as f:
            f.write(line + "\n")


@pytest.fixture(scope="module", autouse=True)
def _print_summary(request):
    yield
    if not SUMMARY:
        return
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\n" + "\n".join(SUMMARY), flush=True)


def device_name() -> str:
    if DEVICE == "cuda" and torch.cuda.is_available():
        return (f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda}, "
                f"capability {'.'.join(map(str, torch.cuda.get_device_capability()))})")
    return DEVICE


def has_dtype(name: str) -> bool:
    return hasattr(torch, TORCH_DTYPE_NAMES[name])


def need(*names: str) -> None:
    for name in names:
        if not has_dtype(name):
            pytest.skip(f"torch {torch.__version__} has no {TORCH_DTYPE_NAMES[name]}")


def ctx_for(fmt: str, name: str | None = None) -> fpsim.Context:
    """The context that reproduces CUDA torch's casts into fmt (or, with
    ``name``, that profile's context)."""
    if name is not None:
        return profile(name).context(fmt)
    return profile("torch").context(fmt, **CUDA_OVERRIDES.get(fmt, {}))


def cuda_nan_codes(src: str, codes: np.ndarray, dst: str) -> np.ndarray:
    """The NaN codes CUDA torch writes when it casts the NaN ``codes`` of
    ``src`` into ``dst`` (the rule measured; fpsim's IEEE policy keeps sign
    and payload instead).  A cast goes through float32: widening to float32
    gives 0x7fffffff from FP16 and ±0x7fffffff from E5M2, ±0x7ff00000 from
    E4M3, 0x7f800001 (a signaling NaN) from the FNUZ types and E8M0, and the
    BF16 bits shifted left (payload and signaling kept); narrowing from
    float32 gives 0x7fff in FP16 and BF16 (sign dropped), the sign with
    0x7f in E4M3 and E5M2, 0x80 in the FNUZ types and 0xff in E8M0."""
    c = np.asarray(codes).astype(np.uint64)
    sign = {"fp32": c >> np.uint64(31), "bf16": c >> np.uint64(15)}.get(
        src, (c >> np.uint64(7)) & np.uint64(1))
    if src == "fp32":
        c32 = c
    elif src == "bf16":
        c32 = c << np.uint64(16)
    elif src == "fp16":
        c32 = np.full_like(c, 0x7FFFFFFF)
    elif src == "e4m3":
        c32 = (sign << np.uint64(31)) | np.uint64(0x7FF00000)
    elif src == "e5m2":
        c32 = (sign << np.uint64(31)) | np.uint64(0x7FFFFFFF)
    else:
        c32 = np.full_like(c, 0x7F800001)
    sign32 = c32 >> np.uint64(31)
    out = {"fp32": c32, "fp16": np.full_like(c, 0x7FFF), "bf16": np.full_like(c, 0x7FFF),
           "e4m3": (sign32 << np.uint64(7)) | np.uint64(0x7F),
           "e5m2": (sign32 << np.uint64(7)) | np.uint64(0x7F),
           "e4m3fnuz": np.full_like(c, 0x80), "e5m2fnuz": np.full_like(c, 0x80),
           "e8m0": np.full_like(c, 0xFF)}[dst]
    return out.astype(array.code_dtype(fpsim.format(dst)))


# -- moving codes in and out of torch ----------------------------------------------------

def to_torch(codes: np.ndarray, fmt: str):
    """A device tensor of format ``fmt`` holding ``codes``."""
    _, signed, unsigned = INT_DTYPES[fpsim.format(fmt).width]
    raw = torch.from_numpy(np.ascontiguousarray(codes, unsigned).view(signed))
    return raw.to(DEVICE).view(getattr(torch, TORCH_DTYPE_NAMES[fmt]))


def from_torch(t) -> np.ndarray:
    """The codes of a tensor, as unsigned numpy integers."""
    tname, _, unsigned = INT_DTYPES[t.element_size() * 8]
    return t.view(getattr(torch, tname)).cpu().numpy().view(unsigned)


def fp32_to_torch(x: np.ndarray):
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(DEVICE)


def cast(x: np.ndarray, fmt: str) -> np.ndarray:
    """float32 values cast on the device into fmt, as codes."""
    return from_torch(fp32_to_torch(x).to(getattr(torch, TORCH_DTYPE_NAMES[fmt])))


def hexes(a) -> list[str]:
    return [hex(int(c)) for c in np.asarray(a).reshape(-1)]


def show_codes(codes) -> str:
    codes = sorted(set(int(c) for c in codes))
    return str([hex(c) for c in codes]) if len(codes) <= 6 else f"{len(codes)} distinct codes"


# -- samples ------------------------------------------------------------------------------

def fp32_sample(fmt: str) -> np.ndarray:
    """float32 values that test a cast into ``fmt`` (see the module docstring)."""
    f = fpsim.format(fmt)
    values = array.decode(np.arange(1 << f.width, dtype=np.uint64).astype(array.code_dtype(f)), f)
    values = np.unique(values[np.isfinite(values)])           # exact, sorted, float64
    top = values[-1] + (values[-1] - values[-2]) / 2           # max + half an ulp
    mids = np.concatenate([(values[:-1] + values[1:]) / 2, [top, 2 * values[-1]]])
    mids = mids[np.abs(mids) <= np.finfo(np.float32).max].astype(np.float32)
    f32 = np.float32
    special = np.array([np.finfo(f32).max, np.finfo(f32).tiny, np.finfo(f32).smallest_subnormal,
                        2.0**-127, 1.01 * 2.0**-127, 1.5 * 2.0**-127, 2.0**-128], f32)
    pos = np.concatenate([values.astype(f32), mids, np.nextafter(mids, f32(np.inf)),
                          np.nextafter(mids, f32(0)), special])
    pos = pos[np.isfinite(pos)]
    # Every float32 exponent and leading 8 fraction bits, with the low halves
    # that decide a BF16 rounding (zero, below, at and above the tie, all ones).
    high = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    low = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)
    grid = (high[:, None] | low[None, :]).reshape(-1).view(np.float32)
    rng = np.random.default_rng(f.width * 1000 + f.precision)
    random = rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(f32)
    nans = np.array([0x7FC00000, 0x7FC00001, 0x7FE00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000,
                     0x7FFFE000, 0x7F802000], np.uint32).view(f32)
    return np.concatenate([pos, -pos, grid, random, [f32(0), -f32(0), f32(np.inf),
                                                     -f32(np.inf)], nans, -nans]).astype(f32)


def e8m0_subnormal_band(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        a = np.abs(x.astype(np.float64))
    return (a > 2.0**-127) & (a < 1.5 * 2.0**-127)


def nan_of(codes: np.ndarray, fmt: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isnan(array.decode(codes, fmt))


def judge(got: np.ndarray, expected: np.ndarray, fmt: str, *, max_ulp: int = 0):
    """compare() with NaN-ness only (nan="any"), signed zeros distinguished."""
    return compare(got, expected, fmt, max_ulp=max_ulp, nan="any", signed_zero=True)


def nan_summary(got: np.ndarray, ieee: np.ndarray | None = None) -> str:
    """The NaN codes ``got`` written for NaN inputs, and how many equal
    ``ieee``, fpsim's codes under the IEEE policy (sign and payload kept)."""
    distinct = np.unique(got)
    shown = hexes(distinct) if len(distinct) <= 6 else f"{len(distinct)} distinct codes"
    text = f"{len(got)} NaN inputs give {shown}"
    if ieee is not None:
        text += f"; {int((got == ieee).sum())} equal fpsim's IEEE-policy code"
    return text


def describe(report) -> str:
    return (f"{report.total} compared, {report.exact} bit-exact, "
            f"{report.within_tolerance} NaN with another code, "
            f"{report.beyond_tolerance} beyond (nan {report.nan_mismatch}, inf "
            f"{report.inf_mismatch}, ±0 {report.signed_zero_mismatch}, ulp "
            f"{report.ulp_mismatch}; max {report.max_ulp} ULP)")


def first_mismatches(inputs: np.ndarray, got: np.ndarray, expected: np.ndarray, fmt: str,
                     n: int = 6) -> str:
    bad = (got != expected) & ~(nan_of(got, fmt) & nan_of(expected, fmt))
    idx = np.flatnonzero(bad)[:n]
    ins = inputs.view(np.uint32) if inputs.dtype == np.float32 else inputs
    return ", ".join(f"{hex(int(ins[i]))}->{hex(int(got[i]))} (fpsim {hex(int(expected[i]))})"
                     for i in idx)


# -- (a) float32 -> format casts -----------------------------------------------------------

CAST_FORMATS = ["fp16", "bf16", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e8m0"]


@pytest.mark.parametrize("fmt", CAST_FORMATS)
def test_cuda_casts_from_float32(fmt):
    need(fmt)
    x = fp32_sample(fmt)
    if fmt == "e8m0":
        # The torch profile's e8m0 notes: zero, negatives, FP32 subnormals.
        x = x[np.isnan(x) | ((x > 0) & ~e8m0_subnormal_band(x))]
    got = cast(x, fmt)
    nan_in = np.isnan(x)
    num, got_num = x[~nan_in], got[~nan_in]
    others = []
    for name in OTHER_PROFILES:   # how far the other profiles are, for the summary
        try:
            other = array.encode(num, fmt, ctx_for(fmt, name))
        except ValueError:
            continue
        differ = (got_num != other) & ~(nan_of(got_num, fmt) & nan_of(other, fmt))
        others.append(f"{name} {int(differ.sum())}")
    expected = array.encode(num, fmt, ctx_for(fmt))
    report = judge(got_num, expected, fmt)
    nan_rule = cuda_nan_codes("fp32", x[nan_in].view(np.uint32), fmt)
    nan_ok = int((got[nan_in] == nan_rule).sum())
    record(f"cast fp32->{fmt}: {describe(report)}; {nan_ok} of {int(nan_in.sum())} NaN inputs "
           f"give the NaN rule's code; values differing under other profiles: "
           + ", ".join(others)
           + ("" if report.ok else "; e.g. " + first_mismatches(num, got_num, expected, fmt)))
    assert report.ok and report.within_tolerance == 0, str(report)
    assert nan_ok == nan_in.sum(), hexes(np.unique(got[nan_in]))


def test_cuda_e4m3_overflow_gives_nan():
    # Where CUDA torch 2.11 differs from the torch profile (measured on the
    # 2.13 CPU build): float8_e4m3fn does not saturate.  464 is the tie
    # between 448 and the first value beyond (ties to even: 448); anything
    # above it, and ±inf, gives NaN.
    x = np.array([448, 464, np.nextafter(np.float32(464), np.float32(np.inf)), 1000, 1e30,
                  np.inf, -1000, -np.inf], np.float32)
    got = cast(x, "e4m3")
    assert hexes(got) == ["0x7e", "0x7e", "0x7f", "0x7f", "0x7f", "0x7f", "0xff", "0xff"]
    assert hexes(array.encode(x, "e4m3", ctx_for("e4m3"))) == hexes(got)
    saturated = hexes(array.encode(x, "e4m3", profile("torch").context("e4m3")))
    assert saturated == ["0x7e", "0x7e", "0x7e", "0x7e", "0x7e", "0x7e", "0xfe", "0xfe"]


# -- NaN codes and double rounding ---------------------------------------------------------

def test_cuda_cast_nan_codes():
    # What no context setting expresses: the NaN codes CUDA torch writes.
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7FE00000, 0x7F800001, 0xFFC00001],
                    np.uint32).view(np.float32)
    seen = {}
    for fmt in ("fp16", "bf16", "e4m3", "e5m2"):
        seen[fmt] = hexes(cast(nans, fmt))
        record(f"NaN {hexes(nans.view(np.uint32))} -> {fmt}: {seen[fmt]}")
    assert seen["fp16"] == seen["bf16"] == ["0x7fff"] * 5     # sign and payload dropped
    assert seen["e4m3"] == seen["e5m2"] == ["0x7f", "0xff", "0x7f", "0x7f", "0xff"]   # sign kept


def test_cuda_casts_from_float64():
    # Whether a float64 tensor is rounded once or through float32 first.
    # 431.99999999999994 lies below the E4M3 tie 432 (416 once, 448 twice);
    # 1 + 2**-11 + 2**-40 lies above the FP16 tie 1 + 2**-11 (1 + 2**-10
    # once, 1 twice); 1 + 2**-8 + 2**-40 likewise for BF16.
    cases = [("e4m3", 431.99999999999994), ("e5m2", 14.999999999999998),
             ("fp16", 1 + 2.0**-11 + 2.0**-40), ("bf16", 1 + 2.0**-8 + 2.0**-40)]
    for fmt, v in cases:
        if not has_dtype(fmt):
            continue
        x = np.array([v])
        got = from_torch(torch.from_numpy(x).to(DEVICE).to(getattr(torch, TORCH_DTYPE_NAMES[fmt])))
        once = array.encode(x, fmt, ctx_for(fmt))
        twice = array.encode(array.round(x, "fp32"), fmt, ctx_for(fmt))
        assert once[0] != twice[0]
        kind = "once" if got[0] == once[0] else "twice" if got[0] == twice[0] else "neither"
        record(f"float64 {v!r} -> {fmt}: {hex(int(got[0]))} (rounded {kind}; fpsim once "
               f"{hex(int(once[0]))}, via fp32 {hex(int(twice[0]))})")
        assert kind == "twice"


# -- (b) casts of every code of one format into another ------------------------------------

CODE_CASTS = [(src, "fp32") for src in CAST_FORMATS] + [
    (s, d) for s in ("fp16", "bf16", "e4m3", "e5m2") for d in ("fp16", "bf16", "e4m3", "e5m2")
    if s != d]


@pytest.mark.parametrize("src,dst", CODE_CASTS, ids=[f"{s}-{d}" for s, d in CODE_CASTS])
def test_cuda_casts_of_every_code(src, dst):
    need(src, dst)
    f = fpsim.format(src)
    codes = np.arange(1 << f.width, dtype=np.uint64).astype(array.code_dtype(f))
    got = from_torch(to_torch(codes, src).to(getattr(torch, TORCH_DTYPE_NAMES[dst])))
    nan_in = nan_of(codes, src)
    expected = array.convert(codes[~nan_in], src, dst, ctx_for(dst))
    report = judge(got[~nan_in], expected, dst)
    ieee = array.convert(codes[nan_in], src, dst, ctx_for(dst)) \
        if fpsim.format(dst).specials.value != "none" else None
    record(f"every {src} code -> {dst}: {describe(report)}; "
           f"{nan_summary(got[nan_in], ieee)}"
           + ("" if report.ok else "; e.g. " + first_mismatches(codes[~nan_in], got[~nan_in],
                                                                expected, dst)))
    assert report.ok and report.within_tolerance == 0, str(report)
    assert hexes(got[nan_in]) == hexes(cuda_nan_codes(src, codes[nan_in], dst))


# -- (c) elementwise arithmetic --------------------------------------------------------------

NOTABLE = {
    "fp16": [0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x0401,
             0x3C00, 0xBC00, 0x3C01, 0x3BFF, 0x4000, 0xC000, 0x3555, 0x3E00, 0x5640, 0x7BFF,
             0xFBFF, 0x7BFE, 0x7800, 0x1400, 0x0200, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7E01,
             0x7FFF, 0x7C01, 0xFD55, 0x7D00, 0x2000, 0x0C00, 0x6800, 0x1000],
    "bf16": [0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x007F, 0x807F, 0x0080, 0x8080, 0x0081,
             0x3F80, 0xBF80, 0x3F81, 0x3F7F, 0x4000, 0xC000, 0x3EAB, 0x3FC0, 0x4349, 0x7F7F,
             0xFF7F, 0x7F7E, 0x7F00, 0x1F80, 0x0040, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FC1,
             0x7FFF, 0x7F81, 0xFFAA, 0x7FA0, 0x2000, 0x0100, 0x5F80, 0x2080],
}
BINARY = [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
          ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b)]
PARTNERS = 256


def pair_sample(fmt: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng({"fp16": 16, "bf16": 8}[fmt])
    notable = np.array(NOTABLE[fmt], np.uint16)
    partners = np.concatenate([notable, rng.integers(0, 1 << 16, PARTNERS - len(notable),
                                                     dtype=np.uint16)])
    every = np.arange(1 << 16, dtype=np.uint16)
    x = np.concatenate([np.repeat(every, PARTNERS), np.tile(partners, 1 << 16),
                        rng.integers(0, 1 << 16, 1 << 24, dtype=np.uint16)])
    y = np.concatenate([np.tile(partners, 1 << 16), np.repeat(every, PARTNERS),
                        rng.integers(0, 1 << 16, 1 << 24, dtype=np.uint16)])
    return x, y


@pytest.fixture(scope="module", params=["fp16", "bf16"])
def pairs(request):
    fmt = request.param
    x, y = pair_sample(fmt)
    return fmt, x, y, to_torch(x, fmt), to_torch(y, fmt)


@pytest.mark.parametrize("name,fn", BINARY, ids=[b[0] for b in BINARY])
def test_cuda_elementwise_is_round_to_nearest_even(name, fn, pairs):
    fmt, x, y, tx, ty = pairs
    got = from_torch(fn(tx, ty))
    expected = getattr(array, name)(x, y, fmt=fmt)
    report = judge(got, expected, fmt)
    nan = nan_of(got, fmt)
    record(f"{fmt} {name} ({len(x)} pairs): {describe(report)}; NaN codes written: "
           f"{show_codes(np.unique(got[nan]))}"
           + ("" if report.ok else "; e.g. " + first_mismatches(
               np.stack([x, y], -1).view(np.uint32).reshape(-1), got, expected, fmt)))
    assert report.ok, str(report)
    assert (got[nan] == 0x7FFF).all()     # every NaN result is 0x7fff


def test_cuda_arithmetic_nan_codes():
    # Invalid operations and NaN operands: which NaN codes CUDA torch writes.
    for fmt in ("fp16", "bf16"):
        inf, one, qnan, neg_nan = {"fp16": (0x7C00, 0x3C00, 0x7E01, 0xFE00),
                                   "bf16": (0x7F80, 0x3F80, 0x7FC1, 0xFFC0)}[fmt]
        x = np.array([inf, 0, qnan, neg_nan, one], np.uint16)
        y = np.array([inf, 0, one, one, neg_nan], np.uint16)
        tx, ty = to_torch(x, fmt), to_torch(y, fmt)
        subs = from_torch(tx - ty)[:1]
        divs = from_torch(tx / ty)[1:2]
        adds = from_torch(tx + ty)[2:]
        record(f"{fmt} NaN codes: inf-inf {hexes(subs)}, 0/0 {hexes(divs)}, "
               f"NaN+1 / -NaN+1 / 1+(-NaN) {hexes(adds)}")
        assert hexes(np.concatenate([subs, divs, adds])) == ["0x7fff"] * 5


# -- (d) matmul ----------------------------------------------------------------------------

GEMM_SHAPES = [(64, 256, 64), (128, 1024, 128), (64, 4096, 64), (32, 8192, 32),
               (256, 512, 256)]
REDUCED = {"fp16": "allow_fp16_reduced_precision_reduction",
           "bf16": "allow_bf16_reduced_precision_reduction"}


def ulp_of(v: np.ndarray, fmt: str) -> np.ndarray:
    """The spacing of ``fmt`` at |v| (float64)."""
    f = fpsim.format(fmt)
    a = np.abs(v.astype(np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(np.where(a > 0, e, f.emin), f.emin)
    return np.exp2(e - (f.precision - 1))


def gemm_inputs(fmt: str, shape: tuple[int, int, int], data: str, seed: int):
    m, k, n = shape
    rng = np.random.default_rng(seed)
    if data == "uniform":       # positive: no cancellation, every sum well-conditioned
        a, b = rng.uniform(0, 1, (m, k)), rng.uniform(0, 1, (k, n))
    else:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    return array.encode(a, fmt), array.encode(b, fmt)


def device_matmul(fmt: str, a: np.ndarray, b: np.ndarray, reduced: bool,
                  out_dtype=None) -> np.ndarray:
    flags = torch.backends.cuda.matmul
    old = getattr(flags, REDUCED[fmt])
    setattr(flags, REDUCED[fmt], reduced)
    try:
        ta, tb = to_torch(a, fmt), to_torch(b, fmt)
        if out_dtype is None:
            out = torch.matmul(ta, tb)
        else:
            out = torch.mm(ta, tb, out_dtype=out_dtype)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return from_torch(out)
    finally:
        setattr(flags, REDUCED[fmt], old)


_REFS: dict = {}


def gemm_refs(fmt: str, shape, data: str, seed: int):
    key = (fmt, shape, data, seed)
    if key not in _REFS:
        a, b = gemm_inputs(fmt, shape, data, seed)
        f = fpsim.format(fmt)
        absa, absb = a & ~np.array(f.sign_bit, a.dtype), b & ~np.array(f.sign_bit, b.dtype)
        seq32 = ops.matmul(a, b, fmt=fmt, out="fp32")   # FP32 accumulation, exact products
        _REFS[key] = dict(
            a=a, b=b, seq32=seq32,
            seq=array.convert(seq32, "fp32", fmt),           # the same, rounded once to fmt
            pair=ops.matmul(a, b, fmt=fmt, order="pairwise"),
            narrow=ops.matmul(a, b, fmt=fmt, accumulate=fmt, compute=fmt),
            abs32=ops.matmul(absa, absb, fmt=fmt, out="fp32"),    # sum of |a||b|
        )
    return _REFS[key]


@pytest.mark.parametrize("data", ["uniform", "normal"])
@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", GEMM_SHAPES, ids=["x".join(map(str, s)) for s in GEMM_SHAPES])
def test_cuda_matmul_against_fp32_accumulation(shape, fmt, data):
    # cuBLAS does not specify its summation order, nor how its tensor cores
    # round partial sums, so no fpsim order is expected to match every
    # element.  Asserted, with the reduced-precision-reduction flag off and
    # on: (1) the result is within the error bound of ANY order of FP32
    # accumulation, and so is the FP32 accumulator itself (out_dtype=
    # float32); (2) on positive data (no cancellation) it is within 1 ULP of
    # fpsim's FP32 sequential accumulation, and on normal data at most 1% of
    # the elements are further; (3) FP16/BF16 accumulation is far from it;
    # (4) the same call gives the same bits twice.  ULP figures go to the
    # summary.
    m, k, n = shape
    refs = gemm_refs(fmt, shape, data, seed=k + m)
    ref = array.decode(refs["seq32"], "fp32")
    scale = array.decode(refs["abs32"], "fp32")
    # Any order of FP32 additions, even truncating ones: |error| <= 2 (k-1)
    # 2**-24 sum|a||b| for each of the two sums compared; the FP16/BF16
    # result adds the final rounding of each.
    bound32 = 4 * k * 2.0**-24 * scale
    bound = bound32 + ulp_of(ref, fmt)
    results = {}
    for reduced in (False, True):
        got = device_matmul(fmt, refs["a"], refs["b"], reduced)
        again = device_matmul(fmt, refs["a"], refs["b"], reduced)
        figures = {name: compare(got, refs[name], fmt, max_ulp=1)
                   for name in ("seq", "pair", "narrow")}
        value = array.decode(got, fmt)
        ratio = float(np.max(np.abs(value - ref) / bound))
        line = (f"matmul {fmt} {m}x{k}x{n} {data} reduced={'on' if reduced else 'off'}: "
                + "; ".join(f"vs {name}: exact {r.exact}/{r.total}, >1 ULP "
                            f"{r.beyond_tolerance}, max {r.max_ulp} ULP"
                            for name, r in figures.items())
                + f"; error/bound {ratio:.3g}")
        try:
            got32 = device_matmul(fmt, refs["a"], refs["b"], reduced, out_dtype=torch.float32)
        except (RuntimeError, TypeError, NotImplementedError):
            got32 = None
        ratio32 = 0.0
        if got32 is not None:
            r32 = compare(got32, refs["seq32"], "fp32")
            ratio32 = float(np.max(np.abs(got32.view(np.float32).astype(np.float64) - ref)
                                   / bound32))
            line += (f"; out_dtype=float32 vs fpsim FP32 sequential: exact {r32.exact}/"
                     f"{r32.total}, max {r32.max_ulp} FP32 ULP, error/bound {ratio32:.3g}")
        record(line)
        results[reduced] = got
        assert np.array_equal(got, again), "the same GEMM gave different bits"
        assert np.isfinite(value).all()
        assert ratio <= 1, f"error beyond the FP32-accumulation bound: {ratio}"
        assert ratio32 <= 1, f"FP32 accumulator beyond the bound: {ratio32}"
        if data == "uniform":
            assert figures["seq"].ok, str(figures["seq"])
        else:
            assert figures["seq"].beyond_tolerance <= got.size // 100, str(figures["seq"])
        assert figures["narrow"].beyond_tolerance > got.size // 10, str(figures["narrow"])
    same = np.array_equal(results[False], results[True])
    record(f"matmul {fmt} {m}x{k}x{n} {data}: reduced-precision flag on and off give "
           f"{'the same' if same else 'different'} bits")


# -- every float32 code ------------------------------------------------------------------

SWEEP_FORMATS = ["fp16", "bf16", "e4m3", "e5m2"]
SWEEP_CHUNK = 1 << 24


def _sweep_expected(start: int) -> dict[str, np.ndarray]:
    """fpsim's codes for the float32 codes start .. start + SWEEP_CHUNK - 1
    (run in worker processes)."""
    x = np.arange(start, start + SWEEP_CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return {fmt: array.encode(x, fmt, ctx_for(fmt)) for fmt in SWEEP_FORMATS}


def sweep(starts: list[int]) -> tuple[dict[str, int], dict[str, str], dict[str, set[int]]]:
    """Cast the float32 codes of the chunks starting at ``starts`` on the
    device, and by fpsim in worker processes; count the codes that differ
    (bit for bit where the input is not NaN, NaN-ness where it is)."""
    mismatches = {fmt: 0 for fmt in SWEEP_FORMATS}
    examples: dict[str, str] = {}
    nan_codes: dict[str, set[int]] = {fmt: set() for fmt in SWEEP_FORMATS}
    workers = min(16, os.cpu_count() or 1)
    window = 2 * workers
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {s: pool.submit(_sweep_expected, s) for s in starts[:window]}
        for i, s in enumerate(starts):
            if i + window < len(starts):
                futures[starts[i + window]] = pool.submit(_sweep_expected, starts[i + window])
            x = np.arange(s, s + SWEEP_CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
            dev = fp32_to_torch(x)
            nan_in = np.isnan(x)
            expected = futures.pop(s).result()
            for fmt in SWEEP_FORMATS:
                got = from_torch(dev.to(getattr(torch, TORCH_DTYPE_NAMES[fmt])))
                n = int(((got != expected[fmt]) & ~nan_in).sum())
                if nan_in.any():
                    got_nan = got[nan_in]
                    rule = cuda_nan_codes("fp32", x[nan_in].view(np.uint32), fmt)
                    n += int((got_nan != rule).sum())
                    nan_codes[fmt].update(int(c) for c in np.unique(got_nan))
                if n:
                    mismatches[fmt] += n
                    examples.setdefault(fmt, first_mismatches(x, got, expected[fmt], fmt))
    return mismatches, examples, nan_codes


@pytest.mark.exhaustive
def test_cuda_casts_from_every_float32_code():
    # Every one of the 2**32 float32 codes, cast into FP16, BF16, E4M3 and
    # E5M2 on the device and by fpsim: bit for bit where the input is not
    # NaN, the NaN rule's code (cuda_nan_codes) where it is.
    t0 = time.time()
    mismatches, examples, nan_codes = sweep(list(range(0, 1 << 32, SWEEP_CHUNK)))
    for fmt in SWEEP_FORMATS:
        record(f"every fp32 code -> {fmt}: {mismatches[fmt]} of 2**32 differ"
               + (f" (e.g. {examples[fmt]})" if fmt in examples else "")
               + f"; NaN codes written: {show_codes(nan_codes[fmt])}")
    record(f"every fp32 code sweep took {time.time() - t0:.0f} s")
    assert mismatches == {fmt: 0 for fmt in SWEEP_FORMATS}, examples


# -- which matrix unit does cuBLAS use? (fpsim.mma.probe) ----------------------------------

def _probe_gemm(fmt: str):
    """``(A, B, C) -> A @ B + C`` on the device: the product by cuBLAS with an
    FP32 result (``torch.mm(..., out_dtype=float32)``; FP8 through
    ``torch._scaled_mm`` with unit scales), C added in float32 afterwards
    (the probe then sees where, and how, C joins)."""
    def gemm(a, b, c):
        ta = to_torch(a.view(f"u{a.itemsize}"), fmt)
        tb = to_torch(b.view(f"u{b.itemsize}"), fmt)
        if fmt in ("e4m3", "e5m2"):
            one = torch.ones((), device=DEVICE, dtype=torch.float32)
            d = torch._scaled_mm(ta, tb.t().contiguous().t(), scale_a=one, scale_b=one,
                                 out_dtype=torch.float32)
        else:
            d = torch.mm(ta, tb, out_dtype=torch.float32)
        d = d + fp32_to_torch(c)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return d.cpu().numpy()
    return gemm


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "e4m3"])
def test_cuda_matmul_probed_as_a_matrix_unit(fmt):
    """Probe cuBLAS's GEMM as a black box and record what it is: the order of
    its additions, the block size, alignment bits, rounding, and the
    fpsim.mma presets it matches (recorded in docs/stacks.rst)."""
    from fpsim import mma

    try:
        result = mma.probe(_probe_gemm(fmt), fmt, "fp32", shape="gemm", max_k=64)
    except mma.ProbeError as exc:
        record(f"probe matmul {fmt}: the probe could not run it: {exc}")
        pytest.skip(f"cuBLAS {fmt} GEMM could not be probed: {exc}")
    p = result.params
    summary = (f"k={p.k} {p.accumulation} extra_bits={p.extra_bits} rounding={p.rounding}"
               if p is not None else "no block-FMA parameters")
    record(f"probe matmul {fmt}: order {result.order}; {summary}; chained={result.chained}; "
           f"matches {', '.join(result.matches) or 'no preset'}")
    assert result.order  # the probe recovered at least the order of the additions


def _library_call(fmt: str, fast_accum: bool = False):
    """``(A, B) -> A @ B`` as users call it: ``torch.mm(a, b,
    out_dtype=float32)``, or ``torch._scaled_mm`` with unit scales for FP8."""
    def mm(a, b):
        ta = to_torch(a.view(f"u{a.itemsize}"), fmt)
        tb = to_torch(b.view(f"u{b.itemsize}"), fmt)
        if fmt in ("e4m3", "e5m2"):
            one = torch.ones((), device=DEVICE, dtype=torch.float32)
            d = torch._scaled_mm(ta, tb.t().contiguous().t(), scale_a=one, scale_b=one,
                                 out_dtype=torch.float32, use_fast_accum=fast_accum)
        else:
            d = torch.mm(ta, tb, out_dtype=torch.float32)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return d.cpu().numpy()
    return mm


@pytest.mark.parametrize("fmt, fast", [("fp16", False), ("bf16", False), ("e4m3", False),
                                       ("e4m3", True)])
def test_cuda_library_gemm_named_by_the_probe(fmt, fast):
    """The probe's library stage on the GEMM users call (no C): the schedule
    and the instruction presets that reproduce it (recorded in
    docs/stacks.rst).  On an H100 the cuBLAS presets must be named."""
    from fpsim import mma

    result = mma.probe(_library_call(fmt, fast), fmt, "fp32", shape="gemm")
    record(f"probe library {fmt} fast_accum={fast}: shape {result.findings['shape'].how}; "
           f"schedule {result.schedule}; matches {', '.join(result.matches) or 'none'}")
    if "H100" in torch.cuda.get_device_name():
        assert result.reproduces and "h100" in result.matches, str(result)
        want = mma.cublas("h100", fmt, fast_accum=fast).schedule if fmt == "e4m3" else None
        if want is not None:
            assert result.schedule["promote_every"] == want.promote_every, str(result)
