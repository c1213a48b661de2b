"""fpsim.quant.recipe's library rows against the libraries themselves
(issue 46): every row, on every input family, element codes, scale codes,
tensor scales and dequantized values bit for bit.

The libraries: torchao 0.18.0, brevitas 0.13.4, ModelOpt 0.47.0 and
compressed-tensors 0.20.1, each through its
adapter in ``tools/quant_peers/`` (the library's own functions; the
transcriptions beside them cite every line).  The rows are run two ways:

* ``test_live`` calls the library (``tox -e quantpeers``: torch 2.13.0,
  torchao and brevitas on the CPU, installed from the package index), on
  fresh inputs of three seeds;
* ``test_recorded`` replays ``tests/data/quant-peers/<library>.npz``
  (inputs and the library's outputs, recorded by ``python
  tests/test_quant_peers.py --record`` in that environment), in the default
  run where the libraries are absent.

The input families (:func:`families`): normal values over a few binades,
heavy-tailed (Student's t, 1.5 degrees), tiny (subnormal in the input's
format), ties (multiples of 1/4 on odd quarters), zero blocks (+0 and -0),
specials (+-inf, NaN in a block and next to an infinity), powers of two
(amax exactly 2**k and one ulp either side) and edges (amax = the element's
max × 2**k × (1 + j·2**-23), where a scale's rounding or its log2 decides).
Each in FP32, BF16 and FP16 where the library takes that input (torchao's
MX and NVFP4 refuse FP16).  NaN inputs are the positive quiet NaN; a float
output that is NaN matches any NaN (payloads of float outputs come from the
library's kernels: tools/quant_peers/torchao-0.18.0.md §4).  brevitas
holds its scales and quantized values as floats (the adapter encodes the
codes from them): there a NaN scale or element matches a NaN.  ModelOpt
stores codes, but the sign of a NaN torch's CPU kernels write depends on
the kernel and the tensor's length (NAN_SIGN): there an FP8 NaN code
matches a NaN code of either sign (compressed-tensors too, and its E2M1
code for a NaN, index 0, of either sign).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from fpsim import quant

DATA = Path(__file__).parent / "data" / "quant-peers"
FILES = {"torchao": "torchao-0.18.0.npz", "brevitas": "brevitas-0.13.4.npz",
         "modelopt": "modelopt-0.47.0.npz",
         "compressed-tensors": "compressed-tensors-0.20.1.npz"}
#: The Python module each library installs (what the live tests import).
MODULES = {"torchao": "torchao", "brevitas": "brevitas", "modelopt": "modelopt",
           "compressed-tensors": "compressed_tensors"}
DT = {"fp32": np.float32, "bf16": ml_dtypes.bfloat16, "fp16": np.float16}
UINT = {"fp32": np.uint32, "bf16": np.uint16, "fp16": np.uint16}
MAXES = {"e4m3": 448.0, "e5m2": 57344.0, "e2m3": 7.5, "e3m2": 28.0, "e2m1": 6.0,
         "e4m3fnuz": 240.0, "e5m2fnuz": 57344.0}
SHAPE = (8, 64)


def _cases() -> list[tuple[str, str, str, dict, tuple[str, ...], int, float]]:
    """(library, id, recipe name, options, input formats, block, element max)."""
    out = []
    for name, elems in (("mxfp8", ("e4m3", "e5m2")), ("mxfp6", ("e2m3", "e3m2")),
                        ("mxfp4", ("e2m1",))):
        for el in elems:
            for sr in ("floor", "ceil", "even", "rceil"):
                out.append(("torchao", f"{name}-{el}-{sr}", name,
                            {"element": el, "scale_rounding": sr}, ("fp32", "bf16"), 32,
                            MAXES[el]))
            out.append(("brevitas", f"{name}-{el}", name, {"element": el},
                        ("fp32", "bf16", "fp16"), 32, MAXES[el]))
    for pts in (False, True):
        out.append(("torchao", f"nvfp4-pts{int(pts)}", "nvfp4", {"per_tensor_scale": pts},
                    ("fp32", "bf16"), 16, 6.0))
    for impl in ("inference", "training"):
        for sc in ("tensor", "row"):
            for el in ("e4m3", "e5m2"):
                for p2 in ((False, True) if impl == "training" else (False,)):
                    opts = {"element": el, "scaling": sc, "impl": impl}
                    if p2:
                        opts["round_scales_to_power_of_2"] = True
                    out.append(("torchao", f"fp8-{impl}-{sc}-{el}{'-pow2' if p2 else ''}",
                                "fp8", opts, ("fp32", "bf16", "fp16"), 32, MAXES[el]))
    for sc in ("tensor", "channel"):
        for el in ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"):
            out.append(("brevitas", f"fp8-{sc}-{el}", "fp8", {"element": el, "scaling": sc},
                        ("fp32", "bf16", "fp16"), 32, MAXES[el]))
        out.append(("modelopt", f"fp8-{sc}", "fp8", {"scaling": sc}, ("fp32", "bf16", "fp16"),
                    32, 448.0))
    out.append(("brevitas", "mxint8", "mxint8", {}, ("fp32", "bf16", "fp16"), 32, 127 / 64))
    for sc in ("tensor", "channel"):
        out.append(("compressed-tensors", f"fp8-{sc}", "fp8", {"scaling": sc},
                    ("fp32", "bf16", "fp16"), 32, 448.0))
    # TOKEN (dynamic): rows as the tokens of a (1, rows, columns) activation, and the
    # 2-D tensor itself (one scale: the token_2d_tensor bug); "_rank" is the test's
    for rank in (3, 2):
        out.append(("compressed-tensors", f"fp8-token{'-2d' if rank == 2 else ''}", "fp8",
                    {"scaling": "token", "_rank": rank}, ("fp32", "bf16", "fp16"), 32, 448.0))
    out.append(("compressed-tensors", "fp8-group", "fp8", {"scaling": "group", "group_size": 32},
                ("fp32", "bf16", "fp16"), 32, 448.0))
    out.append(("compressed-tensors", "fp8-block", "fp8", {"scaling": "block", "block": (4, 32)},
                ("fp32", "bf16", "fp16"), 32, 448.0))
    out.append(("modelopt", "fp8-block", "fp8", {"scaling": "block", "block_size": 32},
                ("fp32", "bf16", "fp16"), 32, 448.0))
    out.append(("modelopt", "fp8-fake", "fp8", {"path": "fake"}, ("fp32", "bf16", "fp16"), 32,
                448.0))      # (the library's fake quantization gives its dequantized values)
    out.append(("compressed-tensors", "nvfp4", "nvfp4", {}, ("fp32", "bf16", "fp16"), 16, 6.0))
    for name, top in (("mxfp8", 448.0), ("mxfp6", 7.5), ("mxfp4", 6.0)):
        out.append(("compressed-tensors", name, name, {}, ("fp32", "bf16", "fp16"), 32, top))
    out += [("modelopt", "nvfp4", "nvfp4", {}, ("fp32", "bf16", "fp16"), 16, 6.0),
            ("modelopt", "mxfp8", "mxfp8", {}, ("fp32", "bf16", "fp16"), 32, 448.0),
            ("modelopt", "mxfp4", "mxfp4", {}, ("fp32", "bf16", "fp16"), 32, 6.0)]
    return out


#: The element and scale formats whose NaN codes match a NaN of either sign
#: (differences(nan_sign=...)): ModelOpt's stored codes of NaNs torch wrote.
NAN_SIGN = {("modelopt", "fp8"): ("e4m3", None), ("modelopt", "nvfp4"): (None, "e4m3"),
            ("modelopt", "mxfp8"): ("e4m3", None),
            ("compressed-tensors", "fp8"): ("e4m3", None),
            ("compressed-tensors", "nvfp4"): ("e2m1_nan", "e4m3"),
            ("compressed-tensors", "mxfp8"): ("e4m3", None),
            ("compressed-tensors", "mxfp6"): ("e2m3_nan", None),
            ("compressed-tensors", "mxfp4"): ("e2m1_nan", None)}


#: Rows whose blocks holding a NaN are not compared in FP32 inputs, and why:
#: compressed-tensors rounds the amax's bits up a binade (mxfp_utils.py
#: 120-125), so a NaN amax becomes inf or, for torch's all-ones NaN (which its
#: FP32 min-max observer returns for some tensor lengths and not others), 0:
#: the block's scale and elements follow the observer's kernel.
NAN_BLOCKS_FREE = {("compressed-tensors", "mxfp8"), ("compressed-tensors", "mxfp6"),
                   ("compressed-tensors", "mxfp4")}


def _nan_blocks(x: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the elements and of the blocks (along the last axis) of x
    whose block holds a NaN."""
    M, N = x.shape
    blocks = np.isnan(x).reshape(M, N // block, block).any(axis=-1)
    return np.repeat(blocks, block, axis=-1), blocks


def _compare(library: str, name: str, got: dict, want: dict, dequant_dtype: str,
             x: np.ndarray | None = None, dtype: str = "", block: int = 32) -> list[str]:
    if (library, name) in NAN_BLOCKS_FREE and dtype == "fp32" and x is not None \
            and np.isnan(x).any():
        elems, blocks = _nan_blocks(x, block)
        got, want = dict(got), dict(want)
        for key, mask in (("data", elems), ("dequant", elems), ("scale", blocks)):
            got[key] = np.where(mask.reshape(np.shape(want[key])), 0,
                                np.asarray(got[key]).reshape(np.shape(want[key])))
            want[key] = np.where(mask.reshape(np.shape(want[key])), 0, want[key])
    return differences(got, want, dequant_dtype, library == "brevitas",
                       name == "fp8" or (library, name) in (("modelopt", "nvfp4"),
                                                            ("compressed-tensors", "nvfp4")),
                       NAN_SIGN.get((library, name)))


CASES = _cases()


def _in_format(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to ``dtype`` (nearest even), as float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float32).astype(DT[dtype]).astype(np.float32)


def families(rng: np.random.Generator, dtype: str, block: int, top: float,
             shape: tuple[int, int] = SHAPE) -> dict[str, np.ndarray]:
    """The input families (module docstring), float32 arrays exact in ``dtype``."""
    M, N = shape
    out = {"normal": rng.standard_normal(shape) * np.exp2(rng.integers(-4, 5, (M, 1))),
           "heavy": rng.standard_t(1.5, shape)}
    lo = {"fp32": -135, "bf16": -128, "fp16": -22}[dtype]
    out["tiny"] = rng.standard_normal(shape) * np.exp2(rng.integers(lo, lo + 12, (M, 1)))
    t = rng.integers(-64, 64, shape) * 0.5 + 0.25 * rng.choice([-1, 1], shape)
    out["ties"] = t * np.exp2(rng.integers(-3, 4, (M, 1)))
    z = rng.standard_normal(shape)
    z[:, :block] = 0
    z[::2, block:2 * block] = -0.0
    out["zero"] = z
    s = rng.standard_normal(shape)
    s[0, 1], s[1, N - 3], s[2, 3] = np.inf, -np.inf, np.nan
    s[3, 0], s[3, 5] = np.inf, np.nan
    out["special"] = s
    p = rng.standard_normal(shape) * 0.4
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
    g = rng.standard_normal(shape) * 0.3 * top
    for i in range(M):
        for j in range(N // block):
            a = np.float32(top * 2.0 ** int(rng.integers(-20, 21))
                           * (1 + int(rng.integers(-3, 4)) * 2.0 ** -23))
            sl = slice(j * block, (j + 1) * block)
            g[i, sl] = np.clip(g[i, sl], -a, a)
            g[i, j * block + (i * 7 + j) % block] = a
    out["edge"] = g
    return {k: _in_format(v, dtype) for k, v in out.items()}


def _axis(library: str, name: str, opts: dict) -> tuple[int | None, int]:
    """(fpsim's axis, the adapter's axis) of a row: blocks along the last
    axis; one scale per row (torchao's row, brevitas' channel) is fpsim's
    channel axis 0, the adapter's reduction over the last axis (torchao)
    or its channel axis 0 (brevitas)."""
    if name != "fp8" or opts.get("scaling") in ("group", "block"):
        return -1, -1
    if opts.get("scaling") == "token":
        return None, -1      # (token: no axis; the adapter's rows)
    if library in ("torchao", "modelopt"):
        return 0, -1
    return 0, 0          # brevitas, compressed-tensors: the channel axis


def fpsim_outputs(library: str, name: str, opts: dict, x: np.ndarray, dtype: str
                  ) -> dict[str, np.ndarray]:
    """fpsim's row on ``x`` (float32 values exact in ``dtype``): the arrays
    the library's adapter returns (brevitas' float scales as FP32 bits)."""
    rank = opts.get("_rank")
    r = quant.recipe(library, name, **{k: v for k, v in opts.items() if k != "_rank"})
    xd = x.astype(DT[dtype])
    q = quant.quantize(xd[None] if rank == 3 else xd, r, axis=_axis(library, name, opts)[0])
    data = np.asarray(q.data)
    scale = np.asarray(q.scale)
    if (library, name) == ("brevitas", "mxint8"):
        # its adapter gives OCP MXINT8's E8M0 code of the scale's binade
        s = scale.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            code = np.where(np.isfinite(s) & (s > 0), np.floor(np.log2(np.where(s > 0, s, 1)))
                            + 127, np.where(s == 0, 0, 255))
        scale = np.clip(code, 0, 255).astype(np.uint8)
    elif library == "brevitas":        # its adapter gives the scale's FP32 bits
        scale = scale.astype(np.float32)
    out = {"data": data.view(f"u{data.itemsize}") if data.dtype.kind != "u" else data,
           "scale": scale.view(f"u{scale.itemsize}")}
    if q.tensor_scale is not None:
        out["tensor_scale"] = np.asarray(q.tensor_scale).view(np.uint32)
    dq = np.asarray(q.dequantize())
    out["dequant"] = dq.view(f"u{dq.itemsize}")
    nan = np.isnan(np.asarray(q.data).astype(np.float64))
    out["nan"] = nan if q.nan_elements is None else nan | q.nan_elements
    return out


_NAN_CODES = {"e4m3": lambda c: (c & 0x7F) == 0x7F, "e5m2": lambda c: (c & 0x7F) > 0x7C}


def differences(got: dict, want: dict, dequant_dtype: str, floats: bool = False,
                float_scale: bool = False, nan_sign: tuple[str | None, str | None] | None = None
                ) -> list[str]:
    """Every array that differs, with the count and the first position.
    ``floats``: the library holds scales and quantized values as floats
    (brevitas): a NaN there matches a NaN, whatever its code;
    ``float_scale``: the scale is an FP32 tensor (FP8 rows), whose NaN
    matches a NaN (torch's FP16 -> FP32 conversion writes 0x7FFFFFFF for a
    tensor shorter than its vector width, the payload otherwise);
    ``nan_sign``: the element and scale formats whose NaN codes match a NaN
    code of either sign (ModelOpt: the sign torch's CPU kernels give a NaN
    depends on the kernel and the tensor's length, e.g. 0xFFFF from its
    vectorized FP32 -> BF16 conversion, 0x7FC0 from its scalar one)."""
    errs = []
    if floats:
        nm = np.asarray(want["nan_mask"]).reshape(got["nan"].shape)
        if not np.array_equal(nm, got["nan"]):
            errs.append(f"NaN elements: {int((nm != got['nan']).sum())} differ")
        got = {**got, "data": np.where(nm, 0, got["data"])}
        want = {**want, "data": np.where(nm, 0, want["data"])}
        if got["scale"].dtype != np.uint8:       # (MXINT8: E8M0 codes on both sides)
            want["scale"] = want["scale_fp32"]
    for key in ("data", "scale", "tensor_scale", "dequant"):
        if key not in want or want[key] is None:
            continue
        g = np.asarray(got[key]).astype(np.uint64).reshape(-1)
        w = np.asarray(want[key]).astype(np.uint64).reshape(-1)
        if g.shape != w.shape:
            errs.append(f"{key}: {g.size} values against {w.size}")
            continue
        bad = g != w
        if nan_sign is not None and key in ("data", "scale"):
            kind = nan_sign[0 if key == "data" else 1]
            test = _NAN_CODES.get(kind)
            if test is not None:
                bad &= ~(test(g) & test(w))
            elif kind in ("e2m1_nan", "e2m3_nan") and got.get("nan") is not None:
                # E2M1/E2M3 codes written for NaNs: index 0 with the NaN's sign
                mag = 0x7 if kind == "e2m1_nan" else 0x1F
                nan = np.asarray(got["nan"]).reshape(-1)
                bad &= ~(nan & ((g & mag) == 0) & ((w & mag) == 0))
        if key == "dequant" and nan_sign is not None and nan_sign[0] in ("e2m1_nan", "e2m3_nan") \
                and got.get("nan") is not None:
            # a NaN element's code, index 0 of either sign, dequantizes to a zero of that sign
            nan = np.asarray(got["nan"]).reshape(-1)
            u = UINT[dequant_dtype]
            gz = (g.astype(u) & u(0x7FFF if u == np.uint16 else 0x7FFFFFFF)) == 0
            wz = (w.astype(u) & u(0x7FFF if u == np.uint16 else 0x7FFFFFFF)) == 0
            bad &= ~(nan & gz & wz)
        fmt = dequant_dtype if key == "dequant" else \
            "fp32" if (floats or float_scale) and key in ("scale", "tensor_scale") \
            and g.dtype != np.uint8 and np.asarray(got[key]).dtype != np.uint8 else None
        if fmt is not None:     # a NaN matches a NaN (payloads: the module's docstring)
            u = UINT[fmt]
            gv = g.astype(u).view(DT[fmt]).astype(np.float64)
            wv = w.astype(u).view(DT[fmt]).astype(np.float64)
            bad &= ~(np.isnan(gv) & np.isnan(wv))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            errs.append(f"{key}: {int(bad.sum())} of {bad.size} differ; first at {i}: fpsim "
                        f"{int(g[i]):#x}, library {int(w[i]):#x}")
    return errs


# -- the library, live (tox -e quantpeers) ---------------------------------------------


def _adapter(library: str):
    """The library's own functions on a float32 array exact in a format
    (``tools/quant_peers/<library>_adapter.py``)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip(MODULES[library])
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "quant_peers"))
    try:
        module = __import__(f"{library.replace('-', '_')}_adapter")
    finally:
        sys.path.pop(0)
    torch.set_num_threads(1)
    return module.peer


def _peer(peer, library, name, opts, x, dtype):
    if library == "modelopt" and name == "fp8":       # ModelOpt names it granularity
        opts = {"granularity": opts.get("scaling", "tensor"),
                **{k: opts[k] for k in ("block_size", "path") if k in opts}}
    if "_rank" in opts:
        opts = {**{k: v for k, v in opts.items() if k != "_rank"}, "token_rank": opts["_rank"]}
    try:
        return peer(name, x, dtype, axis=_axis(library, name, opts)[1], **opts)
    except NotImplementedError:      # the library refuses this input format
        return None


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_live(case):
    library, cid, name, opts, dtypes, block, top = case
    peer = _adapter(library)
    for seed in range(3):
        for dtype in dtypes:
            rng = np.random.default_rng(zlib.crc32(f"{library}-{cid}-{dtype}-{seed}".encode()))
            for fam, x in families(rng, dtype, block, top).items():
                want = _peer(peer, library, name, opts, x, dtype)
                if want is None:
                    continue
                got = fpsim_outputs(library, name, opts, x, dtype)
                errs = _compare(library, name, got, want, want["dequant_dtype"], x, dtype, block)
                assert not errs, f"{library} {cid} {dtype} {fam} seed {seed}: " + "; ".join(errs)


# -- the recording (default run) -------------------------------------------------------


RECORDED_SHAPE = (4, 64)


PARTS = ("x", "data", "scale", "tensor_scale", "dequant", "scale_fp32", "nan_mask")


def record(library: str) -> int:
    """Run the library on seed 0 of every case and family (4 x 64 inputs);
    write inputs and outputs to ``DATA / FILES[library]``, one array per
    case, input format and part, the families stacked on its first axis.
    Returns the number of runs recorded."""
    peer = _adapter(library)
    arrays: dict[str, np.ndarray] = {}
    n = 0
    for lib, cid, name, opts, dtypes, block, top in CASES:
        if lib != library:
            continue
        for dtype in dtypes:
            rng = np.random.default_rng(zlib.crc32(f"{library}-{cid}-{dtype}-0".encode()))
            runs: dict[str, list] = {}
            for fam, x in families(rng, dtype, block, top, RECORDED_SHAPE).items():
                want = _peer(peer, library, name, opts, x, dtype)
                if want is None:
                    break
                runs.setdefault("families", []).append(fam)
                runs.setdefault("x", []).append(x.view(np.uint32))
                for part in PARTS[1:]:
                    if want.get(part) is not None:
                        runs.setdefault(part, []).append(np.asarray(want[part]))
                arrays[f"{cid}|{dtype}|dequant_dtype"] = np.array(want["dequant_dtype"])
                n += 1
            for part, values in runs.items():
                arrays[f"{cid}|{dtype}|{part}"] = np.stack(values)
    np.savez_compressed(DATA / FILES[library], **arrays)
    return n


RECORDED = {"torchao": 640, "brevitas": 336, "modelopt": 168, "compressed-tensors": 240}


@pytest.mark.parametrize("library", list(FILES))
def test_recorded(library):
    """Every recorded run of the library (seed 0 of every case, input
    format and family), replayed against fpsim's rows."""
    z = np.load(DATA / FILES[library])
    cases = {c[1]: c for c in CASES if c[0] == library}
    groups = sorted({k.rsplit("|", 1)[0] for k in z.files})
    assert {g.split("|")[0] for g in groups} == set(cases), "a case has no recorded run"
    failed, n = [], 0
    for group in groups:
        cid, dtype = group.split("|")
        _, _, name, opts, _dtypes, _block, _top = cases[cid]
        for i, fam in enumerate(z[group + "|families"]):
            x = z[group + "|x"][i].view(np.float32)
            want = {p: z[f"{group}|{p}"][i] for p in PARTS[1:] if f"{group}|{p}" in z.files}
            errs = _compare(library, name, fpsim_outputs(library, name, opts, x, dtype), want,
                            str(z[group + "|dequant_dtype"]), x, dtype, cases[cid][5])
            n += 1
            if errs:
                failed.append(f"{cid} {dtype} {fam}: " + "; ".join(errs))
    assert n == RECORDED[library] and not failed, "\n".join(failed[:10])


if __name__ == "__main__":      # python tests/test_quant_peers.py --record torchao
    if sys.argv[1:2] == ["--record"]:
        for lib in sys.argv[2:] or list(FILES):
            print(f"recorded {record(lib)} runs of {lib}")
