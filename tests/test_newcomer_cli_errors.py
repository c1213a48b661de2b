"""A newcomer's mistakes, round 2 (issue 41, items 8 and 10): each refusal
says what to do instead, in one short line.

* a mistyped format name gets the nearest names ("did you mean fp16?") and
  where every name is listed, not a list of fifty names cut in the middle;
  ``fp8`` is refused as ambiguous with its candidates named; ``ue4m3`` (the
  name fpsim's block-scaled models give NVFP4's scales) points to e4m3,
  whose codes they read; the Python API says the same as the command line;
* ``explain 0x3c00`` reads the number 15360, as documented, and notes that
  ``--bits`` decodes a code; a binary VALUE points to ``--bits``;
* ``gen ... --level 2`` points to TestFloat's ``-level``;
* ``ver`` names the missing file by its path, not by the metavar FILE;
* a ``.npy`` of raw ``V2`` elements (an ml_dtypes bfloat16 array as np.save
  writes it) is named for what it most likely is, with the ``--fmt`` to give;
* ``vectors`` outside a checkout of fpsim refuses to fill ./spec/vectors.

The expected words come from the issue; no expected value is computed by
the code under test (0x3C00 = 15360 by hand).
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpsim
import fpsim.mma as mma
from fpsim import testfloat

from hostile import one_line_error, run

LISTING = "python -m fpsim formats"


# -- format names ------------------------------------------------------------------------


@pytest.mark.parametrize("given, meant", [("fp-16", "fp16"), ("FP_16", "fp16"),
                                          ("fp17", "fp16"), ("e4m3fnuzz", "e4m3fnuz"),
                                          ("halff", "half (fp16)")])
def test_a_mistyped_format_name_gets_did_you_mean_in_a_short_message(given, meant):
    with pytest.raises(ValueError) as info:
        fpsim.format(given)
    msg = str(info.value)
    assert msg.startswith(f"unknown format {given!r}; did you mean {meant}"), msg
    assert LISTING in msg and len(msg) < 200, msg
    assert "binary8p1se" not in msg  # no list of every name


def test_the_cli_says_did_you_mean_in_one_line_with_nothing_cut_out(capsys):
    status, out, err = run(capsys, "explain", "1", "--fmt", "fp-16")
    one_line_error(status, err, "--fmt: unknown format 'fp-16'; did you mean fp16?", LISTING)
    assert out == "" and "left out" not in err and len(err) < 200


@pytest.mark.parametrize("name", ["fp8", "FP8", "float8"])
def test_fp8_is_refused_as_ambiguous_naming_the_candidates(capsys, name):
    with pytest.raises(ValueError, match=f"format '{name}' is ambiguous") as info:
        fpsim.format(name)
    for candidate in ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"):
        assert candidate in str(info.value)
    status, _, err = run(capsys, "explain", "1", "--fmt", name)
    one_line_error(status, err, "ambiguous", "e4m3 or e5m2")


def test_ue4m3_points_to_e4m3_whose_codes_the_block_scaled_models_read(capsys):
    model = mma.block_scaled("b200", "nvfp4")
    assert "scale ue4m3/16" in repr(model) and model.scale_format is fpsim.E4M3
    with pytest.raises(ValueError, match=r"unknown format 'ue4m3': .*use e4m3$"):
        fpsim.format("ue4m3")
    status, _, err = run(capsys, "explain", "--bits", "0x38", "--fmt", "ue4m3")
    one_line_error(status, err, "ue4m3", "sign bit", "use e4m3")


def test_testfloat_and_gpu_presets_suggest_names_too(capsys):
    with pytest.raises(ValueError, match=r"f-16_add: unknown format 'f-16'; did you mean f16\?"):
        testfloat.operation("f-16_add")
    with pytest.raises(ValueError, match="fp8_mul: format 'fp8' is ambiguous"):
        testfloat.operation("fp8_mul")
    with pytest.raises(ValueError, match=r"did you mean f16_mul or f16_mulAdd\?"):
        testfloat.operation("f16_mull")
    with pytest.raises(ValueError, match=r"format 'fp8' is ambiguous.*\(h100 has: .*e4m3->fp32"):
        mma.preset("h100", "fp8")
    with pytest.raises(ValueError, match=r"unknown format 'fp-16'; did you mean fp16\? \(h100"):
        mma.preset("h100", "fp-16")
    status, _, err = run(capsys, "gen", "f16_mull")
    one_line_error(status, err, "did you mean f16_mul")
    assert len(err) < 400  # the operations, not every format's name


# -- explain ---------------------------------------------------------------------------


def test_explain_of_a_hex_integer_reads_the_number_and_notes_bits(capsys):
    status, out, err = run(capsys, "explain", "0x3c00", "--fmt", "fp16")
    assert status == 0 and err == ""
    assert "0x7380 = 15360" in out  # the number 0x3C00 = 15360, rounded into fp16
    assert "--bits 0x3c00" in out and "code of fp16" in out
    status, out, _ = run(capsys, "explain", "0x3c00", "--fmt", "fp16", "--json")
    assert json.loads(out)["notes"][0].startswith("0x3c00 is read as the number 15360; --bits")
    status, out, _ = run(capsys, "explain", "0x1.8p3", "--fmt", "fp16")  # a hex float: no note
    assert status == 0 and "--bits" not in out


def test_explain_of_a_binary_value_points_to_bits(capsys):
    status, out, err = run(capsys, "explain", "0b0011110000000000", "--fmt", "fp16")
    one_line_error(status, err, "'--bits 0b0011110000000000' decodes it as a code")
    status, out, _ = run(capsys, "explain", "--bits", "0b0011110000000000", "--fmt", "fp16")
    assert status == 0 and "= 1" in out


# -- gen and ver ------------------------------------------------------------------------


def test_gen_with_double_dash_level_points_to_testfloat_spelling(capsys):
    status, out, err = run(capsys, "gen", "e4m3_mul", "--level", "2")
    one_line_error(status, err, "unrecognized arguments: --level 2", "did you mean -level?",
                   "one dash", "python -m fpsim gen --help")
    assert out == ""
    status, _, err = run(capsys, "gen", "e4m3_mul", "--level", "2", "--seed", "3")
    one_line_error(status, err, "-level for --level", "-seed for --seed")
    status, _, err = run(capsys, "explain", "1", "--fmtt", "fp16")
    one_line_error(status, err, "did you mean --fmt?")
    assert "one dash" not in err


def test_ver_names_a_missing_file_by_its_path(capsys, tmp_path):
    missing = tmp_path / "results.txt"
    status, _, err = run(capsys, "ver", "f16_add", missing)
    one_line_error(status, err, f"file not found: {missing}")
    assert "FILE" not in err


# -- dumps ---------------------------------------------------------------------------------


def test_an_npy_of_ml_dtypes_bfloat16_is_named_with_the_fmt_to_give(capsys, tmp_path):
    values = np.array([1.0, -2.5, 3.0], ml_dtypes.bfloat16)
    np.save(tmp_path / "a.npy", values)
    np.save(tmp_path / "b.npy", values)
    assert np.load(tmp_path / "a.npy").dtype == np.dtype("V2")  # what numpy writes
    status, _, err = run(capsys, "diff", tmp_path / "a.npy", tmp_path / "b.npy")
    one_line_error(status, err, "V2", "ml_dtypes", "--fmt bf16")
    assert "integer codes" not in err
    status, _, err = run(capsys, "ref", "sum", tmp_path / "a.npy", tmp_path / "out.npy")
    one_line_error(status, err, "input 1", "V2", "ml_dtypes", "--fmt bf16")
    # with --fmt naming a 2-byte format, the bytes are its codes
    status, out, _ = run(capsys, "diff", tmp_path / "a.npy", tmp_path / "b.npy", "--fmt", "bf16")
    assert status == 0 and "OK: bf16, shape (3,)" in out
    status, _, err = run(capsys, "diff", tmp_path / "a.npy", tmp_path / "b.npy", "--fmt", "e4m3")
    one_line_error(status, err, "holds 2-byte codes; e4m3 codes take 1 byte")


# -- vectors -------------------------------------------------------------------------------


def test_vectors_outside_a_checkout_refuses_and_writes_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "vectors")
    one_line_error(status, err, "--out DIR")
    assert out == "" and list(tmp_path.iterdir()) == []


def test_vectors_default_folder_is_used_in_a_checkout(capsys, tmp_path, monkeypatch):
    from fpsim import _vectors

    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "vectors.md").write_text("# vectors\n")
    monkeypatch.chdir(tmp_path)
    written = []
    monkeypatch.setattr(_vectors, "write", lambda out: written.append(out) or [])
    status, out, _ = run(capsys, "vectors")
    assert status == 0 and written == [Path("spec/vectors")]
    assert "under spec/vectors" in out
