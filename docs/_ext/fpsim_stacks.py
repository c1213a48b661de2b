"""Sphinx directives for docs/stacks.rst: the conversion profiles, and where
real stacks disagree, computed at build time with what is installed.

``.. fpsim-profiles::``
    A table of :func:`fpsim.testing.profiles`: settings, per-format
    overrides, notes and how each was established.

``.. fpsim-stack-disagreements::``
    Runs each case on fpsim, ml_dtypes, numpy and (when importable) torch,
    and tabulates the codes they return.  A stack without the operation
    shows "-"; torch, when it cannot be imported, shows "torch not installed
    in this build".
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from docutils import nodes
from fpsim_directives import table
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

import fpsim
from fpsim import array, ops
from fpsim.testing import profiles

try:
    import torch
except ImportError:  # pragma: no cover - depends on the build
    torch = None

NO_TORCH = "torch not installed in this build"


# -- profiles -----------------------------------------------------------------------------

def _settings(mapping: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in mapping.items())


class Profiles(SphinxDirective):
    """``.. fpsim-profiles::`` (see the module docstring)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        rows = []
        for p in profiles():
            overrides = "; ".join(f"{fmt}: {_settings(s)}" for fmt, s in p.formats.items())
            notes = " ".join(f"[{fmt}] {text}" for fmt, text in p.notes.items())
            rows.append([p.name, p.description, _settings(p.settings), overrides or "-",
                         notes or "-", p.source])
        return [table(["profile", "covers", "settings", "per-format settings",
                        "notes (not expressible as settings)", "how it was established"], rows)]


# -- disagreements ------------------------------------------------------------------------

def _show(code: int, fmt: fpsim.Format) -> str:
    value = float(array.decode(np.array([code], np.uint64), fmt)[0])
    digits = (fmt.width + 3) // 4
    return f"0x{code:0{digits}x} ({value:g})"


def _fpsim(x: Any, fmt: str, **settings: Any) -> str:
    f = fpsim.format(fmt)
    try:
        return _show(int(array.encode(np.asarray(x), f, **settings)[0]), f)
    except ValueError as exc:
        return f"error: {exc}"


def _ml(x: Any, fmt: str) -> str:
    f = fpsim.format(fmt)
    with np.errstate(all="ignore"):
        y = np.asarray(x).astype(array.value_dtype(f))
    return _show(int(y.view(array.code_dtype(f))[0]), f)


def _numpy(x: Any, fmt: str) -> str:
    if fmt != "fp16":
        return "-"
    with np.errstate(all="ignore"):
        return _show(int(np.asarray(x).astype(np.float16).view(np.uint16)[0]), fpsim.FP16)


_TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn",
                 "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
                 "e5m2fnuz": "float8_e5m2fnuz", "e8m0": "float8_e8m0fnu"}


def _torch(x: Any, fmt: str) -> str:
    if torch is None:
        return NO_TORCH
    name = _TORCH_DTYPES.get(fmt)
    if name is None or not hasattr(torch, name):
        return "-"
    t = torch.from_numpy(np.asarray(x)).to(getattr(torch, name))
    width = t.element_size()
    raw = t.view({1: torch.uint8, 2: torch.int16}[width]).numpy()
    return _show(int(raw.view({1: np.uint8, 2: np.uint16}[width])[0]), fpsim.format(fmt))


def _f32(bits: int) -> np.ndarray:
    return np.array([bits], np.uint32).view(np.float32)


CASTS: list[tuple[str, np.ndarray, str]] = [
    ("E4M3 overflow: 1000.0", np.float32([1000.0]), "e4m3"),
    ("E4M3 from +inf", np.float32([np.inf]), "e4m3"),
    ("E5M2 overflow: 1e6", np.float32([1e6]), "e5m2"),
    ("E5M2 from +inf", np.float32([np.inf]), "e5m2"),
    ("E4M3FNUZ from +inf", np.float32([np.inf]), "e4m3fnuz"),
    ("BF16 from NaN 0x7fe00000", _f32(0x7FE00000), "bf16"),
    ("BF16 from NaN 0xffc00000", _f32(0xFFC00000), "bf16"),
    ("E5M2 from NaN 0x7fc00000", _f32(0x7FC00000), "e5m2"),
    ("E4M3 from NaN 0xffc00000", _f32(0xFFC00000), "e4m3"),
    ("FP16 from signaling NaN 0x7f800001", _f32(0x7F800001), "fp16"),
    ("E8M0 from 3.0 (tie of 2 and 4)", np.float32([3.0]), "e8m0"),
    ("E8M0 from 1.25", np.float32([1.25]), "e8m0"),
    ("E8M0 from 0.0", np.float32([0.0]), "e8m0"),
    ("E8M0 from -1.0", np.float32([-1.0]), "e8m0"),
    ("E8M0 from 1.01 * 2**-127 (FP32 subnormal)", np.float32([1.01 * 2.0**-127]), "e8m0"),
    ("E4M3 from float64 431.99999999999994", np.float64([431.99999999999994]), "e4m3"),
]


def _sum_row() -> list[str]:
    x = np.concatenate([[1.0], np.full(10**5, 2.0**-24)]).astype(np.float16)
    got = float(x.sum())
    models = {
        "FP16 sequential": ops.sum(x, accumulate="fp16"),
        "FP16 pairwise": ops.sum(x, accumulate="fp16", order="pairwise"),
        "FP32 sequential": ops.sum(x, accumulate="fp32"),
        "FP32 pairwise": ops.sum(x, accumulate="fp32", order="pairwise"),
    }
    text = "; ".join(f"{k}: {float(v):g}" for k, v in models.items())
    return ["float16 sum of 1 and 100000 × 2**-24", text, "-", f"{got:g}", "-"]


def _matmul_rows() -> list[list[str]]:
    if torch is None:
        return [["float16/bfloat16 matmul", "-", "-", "-", NO_TORCH]]
    rows = []
    rng = np.random.default_rng(3)
    for name, tname in (("fp16", "float16"), ("bf16", "bfloat16")):
        dtype = array.value_dtype(fpsim.format(name))
        counts: dict[str, list[int]] = {"FP32 sequential": [0, 0], "FP32 pairwise": [0, 0],
                                        f"{name.upper()} sequential": [0, 0]}
        total = 0
        for m, k, n in ((16, 256, 16), (8, 1000, 8), (4, 3000, 4)) * 6:
            scale = np.exp(rng.uniform(-4, 4, (m, k)))
            a = (rng.standard_normal((m, k)) * scale).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            tdtype = getattr(torch, tname)
            r = (torch.from_numpy(a.astype(np.float32)).to(tdtype)
                 @ torch.from_numpy(b.astype(np.float32)).to(tdtype))
            got = r.view(torch.int16).numpy().view(np.uint16)
            total += got.size
            models = {
                "FP32 sequential": ops.matmul(a, b),
                "FP32 pairwise": ops.matmul(a, b, order="pairwise"),
                f"{name.upper()} sequential": ops.matmul(a, b, accumulate=name),
            }
            for label, model in models.items():
                report = fpsim.testing.compare(got, model.view(np.uint16), name)
                counts[label][0] += report.beyond_tolerance
                counts[label][1] = max(counts[label][1], report.max_ulp or 0)
        text = "; ".join(f"{label}: {c[0]} of {total} differ, max {c[1]} ULP"
                         for label, c in counts.items())
        rows.append([f"{name.upper()} matmul (K = 256 to 3000, rows scaled by e**±4), fpsim "
                     "accumulations against torch", text, "-", "-",
                     f"torch {torch.__version__}"])
    return rows


class Disagreements(SphinxDirective):
    """``.. fpsim-stack-disagreements::`` (see the module docstring)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        rows = []
        for label, x, fmt in CASTS:
            fpsim_cell = _fpsim(x, fmt)
            if "inf" in label or "overflow" in label:
                fpsim_cell += f"; saturate: {_fpsim(x, fmt, saturate=True)}"
            rows.append([label, fpsim_cell, _ml(x, fmt) if fmt != "fp16" else "-",
                         _numpy(x, fmt), _torch(x, fmt)])
        rows.append(_sum_row())
        rows.extend(_matmul_rows())
        versions = (f"fpsim (default context) {fpsim.__version__}",
                    f"ml_dtypes {ml_dtypes.__version__}", f"numpy {np.__version__}",
                    f"torch {torch.__version__}" if torch is not None else "torch")
        return [table(["case", *versions], rows)]


def setup(app: Sphinx) -> dict[str, Any]:
    import fpsim.testing  # noqa: F401  (compare, used above)

    app.add_directive("fpsim-profiles", Profiles)
    app.add_directive("fpsim-stack-disagreements", Disagreements)
    return {"version": fpsim.__version__, "parallel_read_safe": True,
            "parallel_write_safe": True}
