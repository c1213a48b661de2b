"""FP32 results by the machine's own float64 → float32 conversion
(:mod:`fpsim.array._native`) against the tests' exact oracle, at every
boundary its rules name: FP32 values, midpoints between them and the float64
values beside both, with and without a sticky bit, in every deterministic
mode and setting, near the smallest normal and the largest finite value.
Lanes the conversion leaves alone go through the kernel; they are checked
here too, and so is the kernel alone (a unit not rounding to nearest)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import array
from fpsim.array import _convert, _native
from fpsim.context import resolve

from oracle import Flag, ref_rational, spec_of

FP32 = spec_of("fp32")
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]
SETTINGS = [{}, {"ftz": True}, {"tininess": "before"}, {"saturate": True},
            {"ftz": True, "daz": True, "tininess": "before", "saturate": True}]


def boundary_values(seed: int) -> np.ndarray:
    """float64 values at and beside FP32 values and the midpoints between
    them, in the binades next to the smallest normal and the largest finite
    value and at random in between, both signs."""
    rng = np.random.default_rng(seed)
    exponents = np.concatenate([np.arange(-152, -120), np.arange(120, 129),
                                rng.integers(-120, 120, 40)])
    fractions = np.concatenate([[0, 1, (1 << 23) - 1, (1 << 23) - 2],
                                rng.integers(0, 1 << 23, 12)])
    base = np.ldexp((fractions[None, :] + (1 << 23)).astype(np.float64),
                    exponents[:, None] - 23).reshape(-1)
    ulp32 = np.ldexp(1.0, np.frexp(base)[1] - 24)
    mids = base + ulp32 / 2
    values = np.concatenate([base, mids])
    values = np.concatenate([values, np.nextafter(values, 0), np.nextafter(values, np.inf)])
    values = np.concatenate([values, -values, [np.inf, -np.inf, np.nan, 0.0, -0.0,
                                                float(np.finfo(np.float32).max) * 2]])
    with np.errstate(over="ignore"):
        return values[np.isfinite(values.astype(np.float32)) | ~np.isfinite(values)]


def expected(values: np.ndarray, sticky: np.ndarray, mode: str, settings: dict
             ) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's FP32 code and flags of each exact value: ``v``, or where
    sticky a value strictly between ``|v|`` and the next float64 magnitude
    (here: half-way).  DAZ changes nothing: it reads the source format's
    subnormals, and these are float64 normals."""
    codes, flags = [], []
    kw = {k: settings[k] for k in ("ftz", "tininess", "saturate") if k in settings}
    for v, s in zip(values.tolist(), sticky.tolist()):
        if v != v:
            codes.append(0x7FC00000)
            flags.append(0)
            continue
        if np.isinf(v):  # spec/rounding.md: clamped by saturate, with INVALID
            saturated = settings.get("saturate", False)
            codes.append((0x7F7FFFFF if saturated else 0x7F800000) | (v < 0) << 31)
            flags.append(fpsim.Flag.INVALID.value if saturated else 0)
            continue
        x = Fraction(v)
        if s:
            step = Fraction(np.nextafter(abs(v), np.inf)) - abs(x)
            x += step / 2 if v > 0 else -step / 2
        kind, sign, value, fl = ref_rational(FP32, x, mode, **kw)
        if x == 0:
            code = 0x80000000 if np.signbit(v) else 0
        elif kind == "inf":
            code = 0x7F800000 | (sign << 31)
        else:
            code = int(np.array(float(value), np.float32).view(np.uint32)) | (sign << 31)
        codes.append(code)
        flags.append(sum(f.value for f in (fpsim.Flag[m.name] for m in Flag if m in fl)))
    return np.array(codes, np.uint64), np.array(flags, np.uint8)


def check(values: np.ndarray, sticky: np.ndarray | None, mode: str, settings: dict) -> None:
    _, key = resolve(None, {"rounding": mode, **settings})
    got, got_flags = _convert.round_fp64_to_fp32(values, sticky, key, _native.usable(key))
    want, want_flags = expected(values, np.zeros(values.shape, bool) if sticky is None
                                else sticky, mode, settings)
    bad = np.flatnonzero((got.astype(np.uint64) != want) | (got_flags != want_flags))
    assert not bad.size, f"{bad.size} of {values.size} differ, {mode} {settings}: " + "; ".join(
        f"{values[i].hex()} sticky={None if sticky is None else bool(sticky[i])}: want "
        f"0x{int(want[i]):08x} {int(want_flags[i])}, got 0x{int(got[i]):08x} "
        f"{int(got_flags[i])}" for i in bad[:5])


def test_this_machine_converts_to_nearest():
    """The cast rounds to nearest here, so the tests below exercise the
    machine's conversion and not only the kernel."""
    assert _native.rounds_to_nearest()


def test_this_machine_converts_to_fp16_as_ieee():
    """numpy's float64 -> float16 cast rounds to nearest even here, subnormals
    kept (the matrix units' FP16 outputs use it: test_mma_tile.py)."""
    assert _native.float16_casts_are_ieee()


@pytest.mark.parametrize("mode", MODES)
def test_native_lanes_equal_the_oracle(mode):
    values = boundary_values(seed=len(mode))
    rng = np.random.default_rng(7)
    for i, settings in enumerate(SETTINGS):
        check(values, None, mode, settings)
        sticky = rng.random(values.size) < 0.5
        sticky[~np.isfinite(values) | (values == 0)] = False
        check(values, sticky, mode, settings)


@pytest.mark.parametrize("mode", ["rne", "rup"])
def test_kernel_alone_when_the_unit_does_not_round_to_nearest(mode, monkeypatch):
    monkeypatch.setattr(_native, "rounds_to_nearest", lambda: False)
    values = boundary_values(seed=3)
    check(values, (np.arange(values.size) % 3 == 0) & np.isfinite(values) & (values != 0),
          mode, {})


@pytest.mark.parametrize("mode", MODES)
def test_encode_float64_to_fp32(mode):
    """The public path: fpsim.array.encode of float64 values into FP32
    (values, and codes with src="fp64"), flags included."""
    values = boundary_values(seed=5)
    want, want_flags = expected(values, np.zeros(values.shape, bool), mode, {})
    got, flags = array.encode(values, "fp32", rounding=mode, return_flags=True)
    assert np.array_equal(got.astype(np.uint64), want)
    assert np.array_equal(flags, want_flags)
    got = array.encode(values.view(np.uint64), "fp32", src="fp64", rounding=mode)
    assert np.array_equal(got.astype(np.uint64), want)
