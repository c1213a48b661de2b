"""The instruction table of spec/mma.md and docs/mma.rst ("Every
instruction"; issue 44, item 5) is what fpsim computes, and its counts of
recorded GPU rows are right.

``docs/_ext/fpsim_instructions.py`` writes the table from fpsim itself; here
spec/mma.md must hold exactly that table, every preset must have its row,
and every recorded-row count is recounted from the recorded files
(``tests/data/tensorcore/``, the oracle) with this file's own reading of
them.  With ``mmasim`` installed (``tox -e mmasim``), every instruction name
must be one of MMA-Sim's, and the named differences each row claims those
that ``tests/test_mmasim_instructions.py`` applies to it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpsim.mma as mma
from fpsim.mma.presets import GPUS, TABLE

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "tensorcore"
DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32,
          "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def _load_generator():
    ext = ROOT / "docs" / "_ext"
    sys.path.insert(0, str(ext))  # the extensions' shared module, as conf.py does
    spec = importlib.util.spec_from_file_location("fpsim_instructions",
                                                  ext / "fpsim_instructions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()
ROWS = gen.instruction_rows()


def test_spec_holds_the_table_fpsim_computes():
    assert gen.spec_table() == gen.markdown(), \
        "spec/mma.md's instruction table is stale: python docs/_ext/fpsim_instructions.py --write"


def test_every_preset_has_its_row():
    listed = {(g, r["formats"]) for r in ROWS
              for g in r["GPUs (architecture)"].rsplit(" (", 1)[0].split(", ")}
    for gpu, fin, fout in mma.presets():
        assert (gpu, f"{fin}→{fout}") in listed, (gpu, fin, fout)
    assert len(listed) == len(mma.presets())
    for r in ROWS:
        assert all(r[c] for c in gen.COLUMNS), r


def _recount(path: Path, gpu: str) -> tuple[int, int]:
    """Rows of a recorded file that ``gpu``'s preset gives bit for bit,
    read as tests/test_mma.py reads them."""
    _, fin, fout = path.stem.lower().split("_")
    z = np.load(path)
    a32, b32 = z["a"].view(np.float32), z["b"].view(np.float32)
    a, b = a32.astype(DTYPES[fin]), b32.astype(DTYPES[fin])
    assert np.array_equal(a.astype(np.float32), a32) and np.array_equal(b.astype(np.float32), b32)
    c = z["c"].view(np.float32)
    if fout == "fp16":          # the harness rounded c to FP16 (nearest even)
        c = c.astype(np.float16)
    d = mma.preset(gpu, fin, fout)(a, b, c)
    return int((d.astype(np.float32).view(np.uint32) == z["d"]).sum()), len(z["d"])


def test_recorded_row_counts_are_recounted_from_the_recordings():
    claimed = {}
    for r in ROWS:
        for line in r["recorded GPU rows reproduced"].split("\n"):
            m = re.fullmatch(r"(\w+) (\w+)→(\w+) \(([\w-]+)\): ([\d,]+) of ([\d,]+)", line)
            if m:
                g, fin, fout, preset, got, n = m.groups()
                claimed[(g, fin, fout, preset)] = (int(got.replace(",", "")),
                                                   int(n.replace(",", "")))
    # every file at the top of tests/data/tensorcore is its preset's, all 5,000 rows
    top = sorted(DATA.glob("*.npz"))
    assert len(top) == 16
    for path in top:
        g, fin, fout = path.stem.lower().split("_")
        assert claimed[(g.upper(), fin, fout, g)] == (5000, 5000), path.stem
    # and every claim, top or open/, is what the recording gives
    for (g, fin, fout, preset), count in claimed.items():
        stem = f"{g}_{fin.upper() if fin.startswith('e') else fin}_{fout}"
        path = DATA / f"{stem}.npz"
        path = path if path.exists() else DATA / "open" / f"{stem}.npz"
        assert _recount(path, preset) == count, (g, fin, fout, preset)
    # b200-fit's reason to exist: all 5,000 B200 E4M3 rows, the published b200 3,207
    assert claimed[("B200", "e4m3", "fp32", "b200-fit")] == (5000, 5000)
    assert claimed[("B200", "e4m3", "fp32", "b200")] == (3207, 5000)


def test_nan_codes_are_the_units():
    for r in ROWS:
        out = r["formats"].split("→")[1]
        want = {"fp32": ("0x7FFFFFFF", "0x7FC00000"), "fp16": ("0x7FFF", "0x7E00"),
                "fp64": ("0xFFF8000000000000", "0x7FF8000000000000")}[out]
        amd = r["instruction"].startswith("v_mfma")
        chain = r["formats"] in ("fp32→fp32", "fp64→fp64")
        if chain and not amd:       # NVIDIA's FP64 units: CUDA's CUDART_NAN (not measured)
            assert r["NaN"].startswith(want[0]) and "CUDART_NAN" in r["NaN"], r
        else:
            assert r["NaN"].startswith(want[amd]), r


# -- against MMA-Sim's own lists (tox -e mmasim) ----------------------------------------


def _mmasim_test_module():
    pytest.importorskip("torch")
    pytest.importorskip("mmasim")
    path = ROOT / "tests" / "test_mmasim_instructions.py"
    spec = importlib.util.spec_from_file_location("_mmasim_instructions_for_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row_instructions():
    for arch, fin, fout, _k, _p in TABLE:
        gpus = [g for g, i, o in mma.presets() if GPUS[g][0] == arch
                and (i, o) == (fin, fout)]
        for g in gpus:
            for name in gen.mmasim_names(arch, fin, fout, g):
                yield arch, fin, fout, g, name


def test_instruction_names_are_mmasims_and_differences_are_its():
    t = _mmasim_test_module()
    names = {(i.family, i.arch, n) for i in t._mmasim_instructions()[0]
             for n in [i.name, *t._mmasim_instructions()[1][i.id]]}
    for arch, fin, fout, gpu, (family, march, name) in _row_instructions():
        assert (family, march, name) in names, (arch, fin, fout, gpu, name)
        if gen.MMASIM_ARCH[arch] is None:
            assert gpu in t.FPSIM_ONLY, gpu
            continue
        i = t._describe(family, march, name)
        assert (i.a, i.d) == (fin, fout), (i, fin, fout)
        applies = {d.name for d in t.NAMED_DIFFERENCES if d.applies(i)}
        assert applies == set(gen.differences(arch, fin)), (arch, fin, applies)
