"""The table of every matrix instruction fpsim models (spec/mma.md and
docs/mma.rst, "Every instruction"), computed from fpsim itself.

``.. fpsim-instruction-table::``
    The table of :func:`instruction_rows` (one row per architecture row of
    ``fpsim.mma.presets.TABLE`` and input/output pair, then one per row of
    ``FMA_CHAINS``, with the GPUs that have it).

The rows come from :func:`fpsim.mma.presets` and :func:`fpsim.mma.preset`;
the recorded-row counts from running each preset on the recorded GPU
outputs in ``tests/data/tensorcore/`` (and ``open/``); the NaN codes from
``params.nan_code()``.  What is not a number of fpsim's is stated here as
data: the instruction names (MMA-Sim 2.1.1's spelling, ``mmasim.nv_ptx``
and ``mmasim.amd`` lists), where each model comes from, and what
``tests/test_mmasim_instructions.py`` found against MMA-Sim.

    python docs/_ext/fpsim_instructions.py           # print the Markdown table
    python docs/_ext/fpsim_instructions.py --write   # rewrite it in spec/mma.md
    python docs/_ext/fpsim_instructions.py --check   # exit 1 if spec/mma.md is stale

``tests/test_mma_instruction_table.py`` checks that spec/mma.md holds
:func:`markdown` and recounts the rows independently.  Sphinx is not needed
for the functions.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import numpy as np

import fpsim
import fpsim.mma as mma
from fpsim.mma.presets import FMA_CHAINS, GPUS, TABLE

try:  # Sphinx is needed for the directive, not for the functions the tests import
    from sphinx.util.docutils import SphinxDirective
except ImportError:  # pragma: no cover - depends on what is installed
    HAVE_SPHINX = False
else:
    HAVE_SPHINX = True

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "tensorcore"
SPEC = ROOT / "spec" / "mma.md"
BEGIN = "<!-- instruction table: docs/_ext/fpsim_instructions.py --write -->"
END = "<!-- end of the instruction table -->"

#: Recorded files whose ``c`` is not the one the GPU was given, not counted
#: (tests/data/tensorcore/README.md).
NOT_COUNTED = {"H100_E4M3_fp16": "c not stored", "H100_E5M2_fp16": "c not stored"}

_DTYPES = {"fp16": np.float16, "bf16": "bfloat16", "tf32": np.float32,
           "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}

# -- the instruction names (MMA-Sim 2.1.1's lists: family, its architecture, name) ------

_PTX = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp32": "f32", "e4m3": "e4m3",
        "e5m2": "e5m2"}
# PTX K of one mma.sync / wgmma / tcgen05.mma, by input format
_K = {"fp16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}
_MFMA = {("cdna1", "fp16"): "f32_32x32x8f16", ("cdna1", "bf16"): "f32_32x32x4bf16",
         ("cdna2", "fp16"): "f32_32x32x8f16", ("cdna2", "bf16"): "f32_32x32x8bf16_1k",
         ("cdna3", "fp16"): "f32_32x32x8_f16", ("cdna3", "bf16"): "f32_32x32x8_bf16",
         ("cdna3", "tf32"): "f32_32x32x4_xf32", ("cdna3", "e4m3fnuz"): "f32_32x32x16_fp8_fp8",
         ("cdna3", "e5m2fnuz"): "f32_32x32x16_bf8_bf8"}
# fpsim architecture row -> MMA-Sim's architecture (None: no MMA-Sim model)
MMASIM_ARCH = {"volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace",
               "hopper": "Hopper", "blackwell": "Blackwell", "cdna1": "CDNA1", "cdna2": "CDNA2",
               "cdna3": "CDNA3",
               "blackwell-rn": None, "blackwell-fit": None, "cdna3-matlab": None}


def mmasim_names(arch: str, fin: str, fout: str, gpu: str) -> list[tuple[str, str, str]]:
    """The instructions of ``gpu`` that the row models, as ``(family,
    MMA-Sim architecture, MMA-Sim name)`` (one ``m``/``n`` shape of each;
    ``tests/test_mma_instruction_table.py`` finds each in MMA-Sim's lists
    when ``mmasim`` is installed).  An architecture MMA-Sim does not model
    borrows the names of the GPU's own."""
    base = {"blackwell-rn": "blackwell", "blackwell-fit": "blackwell",
            "cdna3-matlab": "cdna3"}.get(arch, arch)
    if base.startswith("cdna"):
        return [("v_mfma", base.upper(), _MFMA[base, fin])]
    t, o, k = _PTX[fin], _PTX[fout], _K[fin]
    fp8 = fin in ("e4m3", "e5m2")
    if base == "volta":
        return [("mma", "Volta", f"m8n8k4.{o}.f16.f16.{o}")]
    if base == "turing":
        return [("mma", "Turing", f"m16n8k8.{o}.f16.f16.{o}")]
    if base == "blackwell" and gpu == "rtx-pro-6000":
        kind = "kind::f8f6f4." if fp8 else ""
        return [("mma", "RTX Blackwell", f"m16n8k{k}.{kind}{o}.{t}.{t}.{o}")]
    if base == "blackwell":
        kind = "f8f6f4" if fp8 else "tf32" if fin == "tf32" else "f16"
        return [("tcgen05.mma", "Blackwell", f"m64n8k{k}.kind::{kind}.{o}.{t}.{t}")]
    names = []
    if base == "hopper":
        names.append(("wgmma", "Hopper", f"m64n8k{k}.{o}.{t}.{t}"))
    if not (fp8 and base == "hopper"):
        names.append(("mma", MMASIM_ARCH[base], f"m16n8k{k}.{o}.{t}.{t}.{o}"))
    return names


def chain_names(arch: str, fmt: str, gpu: str) -> list[tuple[str, str, str]]:
    """The instructions of an ``FMA_CHAINS`` row on ``gpu``, as
    :func:`mmasim_names` gives them (every ``k`` of the row)."""
    if arch.startswith("cdna"):
        sep = "_" if arch == "cdna3" else ""
        t = "f64" if fmt == "fp64" else "f32"
        shape = "16x16x4" if fmt == "fp64" else "32x32x2"
        return [("v_mfma", arch.upper(), f"{t}_{shape}{sep}{t}")]
    march = "RTX Blackwell" if gpu == "rtx-pro-6000" else MMASIM_ARCH[arch]
    shapes = ["m16n8k16", "m16n8k8", "m16n8k4"] if arch == "hopper" else []
    return [("mma", march, f"{s}.f64.f64.f64.f64") for s in shapes + ["m8n8k4"]]


def instruction_text(family: str, name: str) -> str:
    """PTX / ISA spelling: ``mma.sync m16n8k16.f32.bf16.bf16.f32``,
    ``v_mfma_f32_32x32x8_f16``, with ``N`` for the free ``n``."""
    if family == "v_mfma":
        return f"v_mfma_{name}"
    if family != "mma":
        name = name.replace("n8k", "Nk", 1)
    return {"mma": "mma.sync", "wgmma": "wgmma.mma_async"}.get(family, family) + " " + name


# -- where each model comes from --------------------------------------------------------

_MATLAB = "published: MATLAB tensor-core models (Khattak & Mikaitis)"
_MMASIM = "MMA-Sim 2.1.1"
SOURCES = {
    "volta": _MATLAB,
    "turing": _MMASIM + " (Turing's F = 24, 8 products a step: Ampere's)",
    "ampere": _MATLAB + "; zero-term floor 2^-132 from MMA-Sim",
    "ada": _MATLAB + "; zero-term floor 2^-132 from MMA-Sim",
    "hopper": _MATLAB,
    "blackwell": _MATLAB + " (RTX PRO 6000: the B200 model)",
    "blackwell-rn": _MATLAB + ": its round-to-nearest B200 variant",
    "blackwell-fit": "fitted to recorded B200 rows (8 extra bits, nearest even)",
    "cdna1": _MATLAB,
    "cdna2": _MATLAB,
    "cdna3": _MATLAB,
    "cdna3-matlab": _MATLAB,
}


def source(arch: str, fin: str, fout: str) -> str:
    """Where the model of a row comes from."""
    if fin in ("e4m3", "e5m2") and fout == "fp16":
        return _MMASIM + " (t_fdpa; issue 44, item 3)"
    if arch == "cdna3" and fin.endswith("fnuz"):
        return _MMASIM + " (gtr_fdpa; MATLAB model: mi300x-matlab)"
    return SOURCES[arch]


# -- what tests/test_mmasim_instructions.py found ---------------------------------------

#: Named differences of tests/test_mmasim_instructions.py (NAMED_DIFFERENCES)
#: that apply to each MMA-Sim architecture (NVIDIA: every family).
DIFFERENCES: dict[str, tuple[str, ...]] = {
    "Volta": (), "Turing": (), "Ampere": (), "Ada Lovelace": (), "Hopper": (), "Blackwell": (),
    "RTX Blackwell": (), "CDNA1": (), "CDNA2": (), "CDNA3": ()}
_DIFF_TEXT = {"gtr_fdpa-drops-nan-c": "a NaN/Inf c MMA-Sim drops (its bug)"}


def differences(arch: str, fin: str) -> tuple[str, ...]:
    """The named differences from MMA-Sim that apply to a row's instruction."""
    found = DIFFERENCES[MMASIM_ARCH[arch]]
    if arch == "cdna3" and fin.endswith("fnuz"):
        found += ("gtr_fdpa-drops-nan-c",)
    return found


def agreement(arch: str, fin: str, fout: str, counts: dict[str, tuple[int, int]]) -> str:
    """The row's agreement with MMA-Sim 2.1.1 (tests/test_mmasim_instructions.py)."""
    if MMASIM_ARCH[arch] is None:
        if arch == "blackwell-fit":
            got, n = counts.get(f"B200 {fin}→{fout} (b200)", (0, 0))
            return f"no MMA-Sim model; MMA-Sim's Blackwell (= b200) gives {got:,} of {n:,}"
        return "no MMA-Sim model (fpsim-only variant)"
    text = "bit for bit"
    found = differences(arch, fin)
    if found:
        text += " but " + "; ".join(_DIFF_TEXT[d] for d in found)
    if arch.startswith("cdna"):
        text += "; NaN code differs (MMA-Sim's is no model of the GPU)"
    return text


# -- the recorded rows -----------------------------------------------------------------

def recordings() -> list[Path]:
    """Every recorded file: tests/data/tensorcore/*.npz, then open/*.npz."""
    return sorted(DATA.glob("*.npz")) + sorted((DATA / "open").glob("*.npz"))


def _applies(recorded_gpu: str, gpu: str) -> bool:
    """A recording of ``B200`` checks ``b200`` and its variants (``b200-rn``, ``b200-fit``)."""
    return gpu == recorded_gpu or gpu.startswith(recorded_gpu + "-")


@functools.cache
def _operands(path: Path) -> tuple[Any, Any, Any, Any]:
    import ml_dtypes  # noqa: F401 - registers the dtype names

    _, fin, fout = path.stem.lower().split("_")
    z = np.load(path)
    dt = np.dtype(_DTYPES[fin])
    a = z["a"].view(np.float32).astype(dt)
    b = z["b"].view(np.float32).astype(dt)
    c = z["c"].view(np.float32)
    if fout == "fp16":      # the harness rounds c to FP16, nearest even
        c = c.astype(np.float16)
    return a, b, c, z["d"]


def reproduced(gpu: str, fin: str, fout: str, path: Path) -> tuple[int, int]:
    """``(rows fpsim's preset reproduces bit for bit, rows)`` of a recording."""
    a, b, c, d = _operands(path)
    got = mma.preset(gpu, fin, fout)(a, b, c)
    bits = got.astype(np.float32).view(np.uint32)
    return int((bits == d).sum()), len(d)


def recorded_counts(arch: str, fin: str, fout: str, gpus: list[str]) -> dict[str, tuple[int, int]]:
    """``label -> (reproduced, rows)`` for every recording of a GPU of the row
    (``"B200 e4m3→fp32 (b200)"``: run on the named preset)."""
    found = {}
    for path in recordings():
        rgpu, rin, rout = path.stem.lower().split("_")
        if path.stem in NOT_COUNTED:
            continue
        users = [g for g in gpus if _applies(rgpu, g)]
        if not users or (rin, rout) != (fin, fout):
            continue
        found[f"{rgpu.upper()} {rin}→{rout} ({users[0]})"] = reproduced(users[0], fin, fout, path)
    # b200-fit differs from MMA-Sim where the b200 preset misses the recorded rows
    if arch == "blackwell-fit":
        for path in recordings():
            rgpu, rin, rout = path.stem.lower().split("_")
            if rgpu == "b200" and (rin, rout) == (fin, fout):
                found[f"B200 {rin}→{rout} (b200)"] = reproduced("b200", fin, fout, path)
    return found


#: Where the FMA-chain units' NaN codes come from (none measured).
CHAIN_NAN_SOURCES = {"nvidia": "CUDA's CUDART_NAN; not measured",
                     "amd": "the quiet bit alone, LLVM AMDGPU's; not measured"}

#: Where each NaN rule comes from (spec/mma.md, "NaN codes").
NAN_SOURCES = {"all_ones": "PTX's canonical NaN", "quiet": "LLVM AMDGPU's, not measured"}


def _skipped(fin: str, fout: str, gpus: list[str]) -> list[str]:
    out = []
    for stem, why in NOT_COUNTED.items():
        rgpu, rin, rout = stem.lower().split("_")
        if (rin, rout) == (fin, fout) and any(_applies(rgpu, g) for g in gpus):
            out.append(f"{rgpu.upper()} {rin}→{rout}: {why}")
    return out


# -- the table -------------------------------------------------------------------------

COLUMNS = ("GPUs (architecture)", "instruction", "k", "formats", "model from",
           "recorded GPU rows reproduced", "against MMA-Sim 2.1.1", "NaN")


def instruction_rows() -> list[dict[str, str]]:
    """One row per architecture row and input/output pair of
    :data:`fpsim.mma.presets.TABLE`, with the GPUs :func:`fpsim.mma.presets`
    lists for it (the block-scaled instructions have their own table)."""
    listed = mma.presets()
    rows = []
    for arch, fin, fout, _k, _extra in TABLE:
        gpus = [g for g, i, o in listed if GPUS[g][0] == arch and (i, o) == (fin, fout)]
        if not gpus:
            continue
        params = mma.preset(gpus[0], fin, fout).params
        names = []
        for g in gpus:
            for family, _march, name in mmasim_names(arch, fin, fout, g):
                text = instruction_text(family, name)
                if text not in names:
                    names.append(text)
        counts = recorded_counts(arch, fin, fout, gpus)
        shown = [f"{label}: {got:,} of {n:,}" for label, (got, n) in counts.items()
                 if not (arch == "blackwell-fit" and label.endswith("(b200)"))]
        shown += _skipped(fin, fout, gpus)
        nan = params.nan_code()
        width = params.output_format.width // 4
        issue = f" (issued {params.issue_k})" if params.issue_k else ""
        rows.append({
            "GPUs (architecture)": f"{', '.join(gpus)} ({arch})",
            "instruction": "\n".join(names),
            "k": f"{params.k}{issue}",
            "formats": f"{fin}→{fout}",
            "model from": source(arch, fin, fout),
            "recorded GPU rows reproduced": "\n".join(shown) or "none recorded",
            "against MMA-Sim 2.1.1": agreement(arch, fin, fout, counts),
            "NaN": f"0x{nan:0{width}X} ({params.nan}: {NAN_SOURCES[params.nan]})",
        })
    for arch, fmt, k, nan in FMA_CHAINS:
        gpus = [g for g, i, o in listed if GPUS[g][0] == arch and (i, o) == (fmt, fmt)]
        if not gpus:
            continue
        names = []
        for g in gpus:
            for family, _march, name in chain_names(arch, fmt, g):
                text = instruction_text(family, name)
                if text not in names:
                    names.append(text)
        vendor = "amd" if arch.startswith("cdna") else "nvidia"
        width = 16 if fmt == "fp64" else 8
        rows.append({
            "GPUs (architecture)": f"{', '.join(gpus)} ({arch})",
            "instruction": "\n".join(names),
            "k": str(k),
            "formats": f"{fmt}→{fmt}",
            "model from": _MMASIM + " (MMA_FMA: a chain of IEEE fmas from c)",
            "recorded GPU rows reproduced": "none recorded",
            "against MMA-Sim 2.1.1": "bit for bit (tests/test_mmasim_fma_chains.py); NaN code "
                                     "differs (MMA-Sim's is the host CPU's fma's)",
            "NaN": f"0x{nan:0{width}X} ({CHAIN_NAN_SOURCES[vendor]})",
        })
    return rows


def markdown() -> str:
    """The table as spec/mma.md holds it (between :data:`BEGIN` and :data:`END`)."""
    def cell(text: str) -> str:
        return text.replace("\n", "; ").replace("|", "\\|")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in instruction_rows():
        lines.append("| " + " | ".join(cell(row[c]) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def spec_table(text: str | None = None) -> str:
    """The table as it stands in spec/mma.md."""
    text = SPEC.read_text(encoding="utf-8") if text is None else text
    start = text.index(BEGIN) + len(BEGIN) + 1
    return text[start:text.index(END, start)]


def write_spec() -> bool:
    """Rewrite the table in spec/mma.md; True when it changed."""
    text = SPEC.read_text(encoding="utf-8")
    old = spec_table(text)
    if old == markdown():
        return False
    start = text.index(BEGIN) + len(BEGIN) + 1
    SPEC.write_text(text[:start] + markdown() + text[start + len(old):], encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        stale = spec_table() != markdown()
        if stale:
            print("spec/mma.md's instruction table is stale: "
                  "python docs/_ext/fpsim_instructions.py --write", file=sys.stderr)
        return int(stale)
    if "--write" in args:
        print("rewrote spec/mma.md" if write_spec() else "spec/mma.md is up to date")
        return 0
    print(markdown(), end="")
    return 0


# -- Sphinx ------------------------------------------------------------------------------

if HAVE_SPHINX:
    from fpsim_directives import table

    class InstructionTable(SphinxDirective):
        """``.. fpsim-instruction-table::`` (see the module docstring)."""

        has_content = False

        def run(self) -> list[Any]:
            rows = [[row[c] for c in COLUMNS] for row in instruction_rows()]
            return [table(list(COLUMNS), rows, {1})]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("fpsim-instruction-table", InstructionTable)
    return {"version": fpsim.__version__, "parallel_read_safe": True,
            "parallel_write_safe": True}


if __name__ == "__main__":
    sys.exit(main())
