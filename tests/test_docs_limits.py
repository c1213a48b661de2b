"""The format-limits page (docs/limits.rst): the table that
``docs/_ext/fpsim_limits.py`` computes at build time, and its plots.

The expected values are typed in here from the format definitions (IEEE 754
binary16/binary32, the OCP 8-bit floating point specification, bfloat16),
never taken from fpsim.  Sphinx is not needed: the extension's table and
plot functions import without it.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

import fpsim

EXT = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "fpsim_limits.py"


def _load():
    sys.path.insert(0, str(EXT.parent))  # the extensions' shared module, as conf.py does
    spec = importlib.util.spec_from_file_location("fpsim_limits", EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


limits = _load()
ROWS = {row["name"]: row for row in limits.limits_rows()}

# name: (max, min normal, min subnormal, precision p), from the definitions.
DEFINED = {
    "fp32": ((2 - 2**-23) * 2**127, 2**-126, 2**-149, 24),
    "bf16": ((2 - 2**-7) * 2**127, 2**-126, 2**-133, 8),
    "fp16": (65504, 2**-14, 2**-24, 11),
    "e5m2": (57344, 2**-14, 2**-16, 3),
    "e4m3": (448, 2**-6, 2**-9, 4),
}


def test_every_builtin_format_has_a_row_with_every_column():
    assert list(ROWS) == [f.name for f in limits.BUILTIN]
    assert set(ROWS) >= {"fp64", "fp32", "tf32", "bf16", "fp16", "e8m0", "e5m2", "e5m2fnuz",
                         "e4m3", "e4m3fnuz", "e3m2", "e2m3", "e2m1"}
    for row in ROWS.values():
        assert set(row) == set(limits.COLUMNS)
        assert all(isinstance(v, str) and v for v in row.values())


def test_max_values_appear_exactly():
    assert ROWS["fp16"]["max"] == "65504"
    assert ROWS["e4m3"]["max"] == "448"
    assert ROWS["e5m2"]["max"] == "57344"
    assert ROWS["e5m2fnuz"]["max"] == "57344"
    assert ROWS["e4m3fnuz"]["max"] == "240"


def test_bf16_max_appears_as_the_float_repr():
    assert ROWS["bf16"]["max_decimal"] == "3.3895313892515355e+38"
    assert ROWS["fp32"]["max_decimal"] == "3.4028234663852886e+38"
    assert ROWS["fp16"]["max_decimal"] == "65504.0"
    # The exact form reads back as the same value.
    assert ROWS["bf16"]["max"] == "(2^8 - 1) × 2^120"


def test_smallest_subnormals_appear_as_powers_of_two():
    assert ROWS["fp16"]["min_subnormal"].split("\n")[0] == "2^-24"
    assert ROWS["e4m3"]["min_subnormal"].split("\n")[0] == "2^-9"
    assert ROWS["e5m2"]["min_subnormal"].split("\n")[0] == "2^-16"
    assert ROWS["fp16"]["min_normal"] == "2^-14\n= 6.103515625e-05"
    assert ROWS["fp16"]["min_subnormal"] == "2^-24\n≈ 5.960464477539063e-08"
    assert ROWS["e8m0"]["min_subnormal"] == "none"


def test_layout_columns():
    fp16 = ROWS["fp16"]
    assert (fp16["width"], fp16["fields"], fp16["exponents"], fp16["precision"],
            fp16["eps"]) == ("16", "1/5/10", "-14..15", "11", "2^-10")
    assert ROWS["e4m3"]["exponents"] == "-6..8"
    assert ROWS["bf16"]["exponents"] == "-126..127"


def test_special_codes():
    assert ROWS["fp16"]["inf"] == "0x7c00, 0xfc00"
    assert ROWS["fp16"]["nan"] == "0x7c01–0x7fff, 0xfc01–0xffff"
    assert ROWS["fp16"]["negative_zero"] == "0x8000"
    assert ROWS["fp32"]["nan"] == "0x7f800001–0x7fffffff, 0xff800001–0xffffffff"
    assert ROWS["e4m3"]["inf"] == "none"
    assert ROWS["e4m3"]["nan"] == "0x7f, 0xff"
    assert ROWS["e4m3fnuz"]["nan"] == "0x80"
    assert ROWS["e4m3fnuz"]["negative_zero"] == "none"
    assert ROWS["e5m2"]["nan"] == "0x7d–0x7f, 0xfd–0xff"
    assert ROWS["e2m1"]["nan"] == "none"


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_decimal_digits_match_an_independent_computation(name):
    p = DEFINED[name][3]
    row = ROWS[name]
    assert row["digits"] == f"{p * math.log10(2):.2f}"
    assert int(row["digits_safe"]) == math.floor((p - 1) * math.log10(2))
    assert int(row["digits_roundtrip"]) == math.ceil(1 + p * math.log10(2))


def test_decimal_digits_of_the_ieee_formats_are_cs():
    # <float.h> on IEEE machines: FLT_DIG 6, DBL_DIG 15, FLT_DECIMAL_DIG 9, DBL_DECIMAL_DIG 17.
    assert (ROWS["fp32"]["digits_safe"], ROWS["fp32"]["digits_roundtrip"]) == ("6", "9")
    assert (ROWS["fp64"]["digits_safe"], ROWS["fp64"]["digits_roundtrip"]) == ("15", "17")
    assert (ROWS["fp16"]["digits_safe"], ROWS["fp16"]["digits_roundtrip"]) == ("3", "5")


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_decades_match_an_independent_computation(name):
    mx, min_normal, min_sub, _ = DEFINED[name]
    row = ROWS[name]
    assert row["decades_normal"] == f"{math.log10(mx / min_normal):.2f}"
    assert row["decades"] == f"{math.log10(mx / min_sub):.2f}"


def test_fp64_decades_do_not_overflow():
    # max / min_subnormal of FP64 is about 10**632: no float64 holds it.
    expected = math.log10(2**1024 - 2**971) + 1074 * math.log10(2)
    assert ROWS["fp64"]["decades"] == f"{expected:.2f}"


def test_the_table_needs_no_sphinx(monkeypatch):
    # The default test environment has no Sphinx: the module must still load.
    for name in ("docutils", "docutils.parsers.rst", "sphinx", "sphinx.util.docutils"):
        monkeypatch.setitem(sys.modules, name, None)
    module = _load()
    assert module.limits_rows() == limits.limits_rows()


def test_columns_option_refuses_unknown_keys():
    assert limits._columns("name, max") == ["name", "max"]
    with pytest.raises(ValueError, match="unknown column"):
        limits._columns("name, mystery")


def test_spacing_points_are_the_sawtooth():
    sub, normal = limits.spacing_points(fpsim.FP16)
    # Normal binades: from eps at 2**e down to eps/(2 - eps) at the binade's last value.
    assert normal[0] == (2.0**-14, 2.0**-10)
    assert normal[1] == ((2 - 2**-10) * 2**-14, 2**-10 / (2 - 2**-10))
    assert normal[-1] == (65504.0, 32.0 / 65504)
    # Subnormals: ulp is the smallest subnormal, so ulp(x)/x = 1 at the smallest.
    assert sub[0] == (2.0**-24, 1.0)
    assert len(normal) == 2 * 30


@pytest.mark.parametrize("name", ["values", "spacing"])
def test_each_plot_writes_a_png(name, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"{name}.png"
    limits.PLOTS[name](path)
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
