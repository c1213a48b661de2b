"""fpsim.quant.recipe's library rows against the libraries themselves
(issue 46): every row, on every input family, element codes, scale codes,
tensor scales and dequantized values bit for bit.

The rows are run two ways:

* ``test_*_live`` call the library (``tox -e quantpeers``: torch 2.13.0 and
  torchao 0.18.0 on the CPU, installed from the package index), on fresh
  inputs of several seeds;
* ``test_recorded`` replays ``tests/data/quant-peers/torchao-0.18.0.npz``
  (inputs and the library's outputs, recorded by ``python
  tests/test_quant_peers.py --record`` in that environment), in the default
  run where the library is absent.

The input families (:func:`families`): normal values over a few binades,
heavy-tailed (Student's t, 1.5 degrees), tiny (subnormal in the input's
format), ties (multiples of 1/4 on odd quarters), zero blocks (+0 and -0),
specials (+-inf, NaN in a block and next to an infinity), powers of two
(amax exactly 2**k and one ulp either side) and edges (amax = the element's
max × 2**k × (1 + j·2**-23), where a scale's rounding or its log2 decides).
Each in FP32, BF16 and FP16 where the library takes that input (torchao's
MX and NVFP4 refuse FP16).  NaN inputs are the positive quiet NaN; a float
output that is NaN matches any NaN (payloads of float outputs come from the
library's kernels: tools/quant_peers/torchao-0.18.0.md §4).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from fpsim import quant

DATA = Path(__file__).parent / "data" / "quant-peers" / "torchao-0.18.0.npz"
DT = {"fp32": np.float32, "bf16": ml_dtypes.bfloat16, "fp16": np.float16}
UINT = {"fp32": np.uint32, "bf16": np.uint16, "fp16": np.uint16}
MAXES = {"e4m3": 448.0, "e5m2": 57344.0, "e2m3": 7.5, "e3m2": 28.0, "e2m1": 6.0}
SHAPE = (8, 64)


def _cases() -> list[tuple[str, str, dict, tuple[str, ...], int, float]]:
    """(id, recipe name, options, input formats, block, element max)."""
    out = []
    for name, elems in (("mxfp8", ("e4m3", "e5m2")), ("mxfp6", ("e2m3", "e3m2")),
                        ("mxfp4", ("e2m1",))):
        for el in elems:
            for sr in ("floor", "ceil", "even", "rceil"):
                out.append((f"{name}-{el}-{sr}", name, {"element": el, "scale_rounding": sr},
                            ("fp32", "bf16"), 32, MAXES[el]))
    for pts in (False, True):
        out.append((f"nvfp4-pts{int(pts)}", "nvfp4", {"per_tensor_scale": pts},
                    ("fp32", "bf16"), 16, 6.0))
    for impl in ("inference", "training"):
        for sc in ("tensor", "row"):
            for el in ("e4m3", "e5m2"):
                for p2 in ((False, True) if impl == "training" else (False,)):
                    opts = {"element": el, "scaling": sc, "impl": impl}
                    if p2:
                        opts["round_scales_to_power_of_2"] = True
                    out.append((f"fp8-{impl}-{sc}-{el}{'-pow2' if p2 else ''}", "fp8", opts,
                                ("fp32", "bf16", "fp16"), 32, MAXES[el]))
    return out


CASES = _cases()


def _in_format(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to ``dtype`` (nearest even), as float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float32).astype(DT[dtype]).astype(np.float32)


def families(rng: np.random.Generator, dtype: str, block: int, top: float
             ) -> dict[str, np.ndarray]:
    """The input families (module docstring), float32 arrays exact in ``dtype``."""
    M, N = SHAPE
    out = {"normal": rng.standard_normal(SHAPE) * np.exp2(rng.integers(-4, 5, (M, 1))),
           "heavy": rng.standard_t(1.5, SHAPE)}
    lo = {"fp32": -135, "bf16": -128, "fp16": -22}[dtype]
    out["tiny"] = rng.standard_normal(SHAPE) * np.exp2(rng.integers(lo, lo + 12, (M, 1)))
    t = rng.integers(-64, 64, SHAPE) * 0.5 + 0.25 * rng.choice([-1, 1], SHAPE)
    out["ties"] = t * np.exp2(rng.integers(-3, 4, (M, 1)))
    z = rng.standard_normal(SHAPE)
    z[:, :block] = 0
    z[::2, block:2 * block] = -0.0
    out["zero"] = z
    s = rng.standard_normal(SHAPE)
    s[0, 1], s[1, N - 3], s[2, 3] = np.inf, -np.inf, np.nan
    s[3, 0], s[3, 5] = np.inf, np.nan
    out["special"] = s
    p = rng.standard_normal(SHAPE) * 0.4
    e = rng.integers(-8, 9, (M, N // block))
    for i in range(M):
        for j in range(N // block):
            a = np.float32(2.0 ** e[i, j])
            if i % 3 != 1:
                a = np.nextafter(a, np.float32(np.inf if i % 3 else 0))
            sl = slice(j * block, (j + 1) * block)
            p[i, sl] = np.clip(p[i, sl], -a, a)
            p[i, j * block + (i + j) % block] = a if (i + j) % 2 else -a
    out["pow2"] = p
    g = rng.standard_normal(SHAPE) * 0.3 * top
    for i in range(M):
        for j in range(N // block):
            a = np.float32(top * 2.0 ** int(rng.integers(-20, 21))
                           * (1 + int(rng.integers(-3, 4)) * 2.0 ** -23))
            sl = slice(j * block, (j + 1) * block)
            g[i, sl] = np.clip(g[i, sl], -a, a)
            g[i, j * block + (i * 7 + j) % block] = a
    out["edge"] = g
    return {k: _in_format(v, dtype) for k, v in out.items()}


def fpsim_outputs(name: str, opts: dict, x: np.ndarray, dtype: str) -> dict[str, np.ndarray]:
    """fpsim's row on ``x`` (float32 values exact in ``dtype``): the arrays
    the library's adapter returns."""
    r = quant.recipe("torchao", name, **opts)
    q = quant.quantize(x.astype(DT[dtype]), r, axis=-1 if name != "fp8" else 0)
    data = np.asarray(q.data)
    scale = np.asarray(q.scale)
    out = {"data": data.view(f"u{data.itemsize}") if data.dtype.kind != "u" else data,
           "scale": scale.view(f"u{scale.itemsize}")}
    if q.tensor_scale is not None:
        out["tensor_scale"] = np.asarray(q.tensor_scale).view(np.uint32)
    dq = np.asarray(q.dequantize())
    out["dequant"] = dq.view(f"u{dq.itemsize}")
    return out


def differences(got: dict, want: dict, dequant_dtype: str) -> list[str]:
    """Every array that differs, with the count and the first position."""
    errs = []
    for key in ("data", "scale", "tensor_scale", "dequant"):
        if key not in want or want[key] is None:
            assert key not in got or key == "tensor_scale" and got.get(key) is None, key
            continue
        g = np.asarray(got[key]).astype(np.uint64).reshape(-1)
        w = np.asarray(want[key]).astype(np.uint64).reshape(-1)
        if g.shape != w.shape:
            errs.append(f"{key}: {g.size} values against {w.size}")
            continue
        bad = g != w
        if key == "dequant":     # a NaN matches a NaN (payloads: the module's docstring)
            dt = {"fp32": np.float32, "bf16": ml_dtypes.bfloat16, "fp16": np.float16}
            u = UINT[dequant_dtype]
            gv = g.astype(u).view(dt[dequant_dtype]).astype(np.float64)
            wv = w.astype(u).view(dt[dequant_dtype]).astype(np.float64)
            bad &= ~(np.isnan(gv) & np.isnan(wv))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            errs.append(f"{key}: {int(bad.sum())} of {bad.size} differ; first at {i}: fpsim "
                        f"{int(g[i]):#x}, torchao {int(w[i]):#x}")
    return errs


# -- the library, live (tox -e quantpeers) ---------------------------------------------


def _adapter():
    """torchao's own functions on a float32 array exact in a format
    (tools/quant_peers/torchao_adapter.py, reading the library's outputs
    as codes and bits)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchao")
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "quant_peers"))
    try:
        import torchao_adapter
    finally:
        sys.path.pop(0)
    torch.set_num_threads(1)
    return torchao_adapter.peer


def _peer(peer, name, opts, x, dtype):
    axis = -1 if name != "fp8" else 0
    if name == "fp8":
        axis = -1            # the adapter's rows run along the last axis: fpsim's channel 0
    try:
        return peer(name, x, dtype, axis=axis, **opts)
    except NotImplementedError:
        return None


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_torchao_live(case):
    peer = _adapter()
    cid, name, opts, dtypes, block, top = case
    for seed in range(3):
        for dtype in dtypes:
            rng = np.random.default_rng(zlib.crc32(f"{cid}-{dtype}-{seed}".encode()))
            for fam, x in families(rng, dtype, block, top).items():
                want = _peer(peer, name, opts, x, dtype)
                if want is None:
                    continue
                got = fpsim_outputs(name, opts, x, dtype)
                errs = differences(got, want, want["dequant_dtype"])
                assert not errs, f"{cid} {dtype} {fam} seed {seed}: " + "; ".join(errs)


# -- the recording (default run) -------------------------------------------------------


def _key(cid: str, dtype: str, fam: str, part: str) -> str:
    return f"{cid}|{dtype}|{fam}|{part}"


def record(path: Path = DATA) -> int:
    """Run torchao on seed 0 of every case and family; write inputs and
    outputs to ``path``.  Returns the number of runs recorded."""
    peer = _adapter()
    arrays = {}
    n = 0
    for cid, name, opts, dtypes, block, top in CASES:
        for dtype in dtypes:
            rng = np.random.default_rng(zlib.crc32(f"{cid}-{dtype}-0".encode()))
            for fam, x in families(rng, dtype, block, top).items():
                want = _peer(peer, name, opts, x, dtype)
                if want is None:
                    continue
                arrays[_key(cid, dtype, fam, "x")] = x.view(np.uint32)
                for part in ("data", "scale", "tensor_scale", "dequant"):
                    if want.get(part) is not None:
                        arrays[_key(cid, dtype, fam, part)] = np.asarray(want[part])
                arrays[_key(cid, dtype, fam, "dequant_dtype")] = np.array(want["dequant_dtype"])
                n += 1
    np.savez_compressed(path, **arrays)
    return n


def _recorded():
    if not DATA.exists():
        return []
    z = np.load(DATA)
    runs = sorted({k.rsplit("|", 1)[0] for k in z.files})
    return runs


def test_recorded():
    """Every recorded run (seed 0 of every case, input format and family:
    640 runs), replayed against fpsim's rows."""
    z = np.load(DATA)
    runs = _recorded()
    cases = {c[0]: c for c in CASES}
    assert {r.split("|")[0] for r in runs} == set(cases), "a case has no recorded run"
    failed = []
    for run in runs:
        cid, dtype, fam = run.split("|")
        _, name, opts, _dtypes, _block, _top = cases[cid]
        x = z[run + "|x"].view(np.float32)
        want = {p: z[f"{run}|{p}"] for p in ("data", "scale", "tensor_scale", "dequant")
                if f"{run}|{p}" in z.files}
        errs = differences(fpsim_outputs(name, opts, x, dtype), want,
                           str(z[run + "|dequant_dtype"]))
        if errs:
            failed.append(f"{cid} {dtype} {fam}: " + "; ".join(errs))
    assert len(runs) == 640 and not failed, "\n".join(failed[:10])


if __name__ == "__main__":      # python tests/test_quant_peers.py --record
    if sys.argv[1:] == ["--record"]:
        print(f"recorded {record()} runs in {DATA}")
