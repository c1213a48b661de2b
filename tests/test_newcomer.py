"""A newcomer's first session: every fpsim command of README.md, run as written.

The commands are read out of README.md, so a README that names a command
this file does not check, or a check whose command left the README, fails
here: the README cannot drift from what the command line does.  Each
command runs in a fresh process (``python -m fpsim ...``), as a person
would type it, in a scratch folder holding the files it names; the checks
are its exit status and the lines a person reads first.  The second half
runs the first commands a careful user tries next (negative values, long
exact values, the NaN literals, ``--version``, ``--help``).

Expected values are derived by hand from the format definitions: 1e-5 in
FP16 is 168 × 2**-24 (see tests/test_cli.py), 2**-133 is BF16's smallest
subnormal, 0x00003C00 in FP32 is 15360 × 2**-149 = 15 × 2**-139.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import sigint_default

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

# `python -m fpsim ...` inside code spans and code blocks, up to the span's end
COMMANDS = [c.strip() for c in re.findall(r"python -m fpsim[^`\n]*", README)]


def fpsim(args: str | list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    argv = args.split() if isinstance(args, str) else args
    return subprocess.run([sys.executable, "-m", "fpsim", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=_env(cwd))


def _env(cwd: Path) -> dict[str, str]:
    env = dict(os.environ)
    # the candidate kernels a README command names live in the scratch folder
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), env.get("PYTHONPATH", "")])
    return env


def _args(command: str) -> list[str]:
    return command.split()[3:]  # after 'python -m fpsim'


# -- the README's own commands -------------------------------------------------------------

def check_explain(command: str, tmp: Path) -> None:
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0 and r.stderr == ""
    assert "0x00a8 = 1.0013580322265625e-05" in r.stdout
    assert "subnormal" in r.stdout and "underflow, inexact" in r.stdout


def check_help(command: str, tmp: Path) -> None:
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0
    for name in ("explain", "formats", "diff", "ref", "vectors", "sweep", "gen", "ver", "probe"):
        assert re.search(rf"^\s+{name}\s+\S", r.stdout, re.MULTILINE), name  # with a summary


def check_version(command: str, tmp: Path) -> None:
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0 and re.fullmatch(r"fpsim \d+\.\d+\.\d+\S*\n", r.stdout)


def check_ref(command: str, tmp: Path) -> None:
    rng = np.random.default_rng(1)
    # 64x128 @ 128xN: the second input's shape follows from its size
    rng.standard_normal((64, 128)).astype(np.float16).tofile(tmp / "a.bin")
    rng.standard_normal((128, 32)).astype(np.float16).tofile(tmp / "b.bin")
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("wrote gold.bin:")
    assert "fp16" in r.stdout and "64x32" in r.stdout
    assert (tmp / "gold.bin").stat().st_size == 64 * 32 * 2


def check_diff(command: str, tmp: Path) -> None:
    gold = np.fromfile(tmp / "gold.bin", np.uint16)
    out = gold.copy()
    out[5] += 1  # one element one ULP off (a finite value's next code up)
    out.tofile(tmp / "out.bin")
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0, r.stderr  # within --max-ulp 1
    assert "fpsim compare: OK" in r.stdout and "within tolerance                1" in r.stdout
    out[5] += 1  # two ULP: beyond the tolerance, exit 1
    out.tofile(tmp / "out.bin")
    r = fpsim(_args(command), tmp)
    assert r.returncode == 1 and "MISMATCH" in r.stdout and "the offender:" in r.stdout


KERNELS = '''\
import os
import numpy as np


def fp16_add(a, b):
    open("started", "w").close()  # tells the test the sweep is running
    return (a.astype(np.float16) + b.astype(np.float16)).astype(np.float16)
'''


def check_sweep(command: str, tmp: Path) -> None:
    # All 4,294,967,296 pairs take minutes: run it as written, then Ctrl-C
    # it once the kernel is running, as an impatient newcomer would.
    (tmp / "mykernels.py").write_text(KERNELS)
    proc = subprocess.Popen([sys.executable, "-m", "fpsim", *_args(command)], cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp), preexec_fn=sigint_default)
    deadline = time.monotonic() + 120
    while not (tmp / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "sweep interrupted after" in err
    assert "4294967296 tuples" in out and "INTERRUPTED" in out
    if "0 tuples, 0/" in out:  # stopped inside the first chunk
        assert "nothing compared" in out and "compare: OK" not in out


def check_gen(command: str, tmp: Path) -> None:
    # every ordered pair of the 256 E4M3 codes, one line each: a b result flags
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert len(lines) == 65536
    pairs = {tuple(line.split()[:2]) for line in lines}
    assert len(pairs) == 65536
    # 1.0 (0x38) times 1.0 is exactly 1.0, no flag; 448 (0x7E) times 2 (0x40)
    # overflows E4M3 (no infinity): NaN 0x7F with overflow and inexact
    assert "38 38 38 00" in lines and "7E 40 7F 05" in lines
    (tmp / "cases.txt").write_text(r.stdout)


def check_ver(command: str, tmp: Path) -> None:
    # the device's lines: the golden ones, then one result bit flipped
    cases = (tmp / "cases.txt").read_text().splitlines()
    (tmp / "results.txt").write_text("\n".join(cases) + "\n")
    r = fpsim(_args(command), tmp)
    assert r.returncode == 0 and "OK" in r.stdout.splitlines()[0]
    a, b, result, flags = cases[1000].split()
    cases[1000] = f"{a} {b} {int(result, 16) ^ 1:02X} {flags}"
    (tmp / "results.txt").write_text("\n".join(cases) + "\n")
    r = fpsim(_args(command), tmp)
    assert r.returncode == 1 and "line 1001" in r.stdout
    assert "1 of 65,536 lines differ" in r.stdout


CHECKS = {
    "python -m fpsim explain 1e-5 --fmt fp16": check_explain,
    "python -m fpsim --help": check_help,
    "python -m fpsim --version": check_version,
    "python -m fpsim ref matmul --fmt fp16 --shape 64x128 a.bin b.bin gold.bin": check_ref,
    "python -m fpsim diff out.bin gold.bin --fmt fp16 --max-ulp 1": check_diff,
    "python -m fpsim sweep add --fmt fp16 --against mykernels:fp16_add": check_sweep,
    "python -m fpsim gen e4m3_mul -level 2": check_gen,
    "python -m fpsim ver e4m3_mul results.txt": check_ver,
}


def test_every_readme_command_has_a_check():
    assert COMMANDS, "no 'python -m fpsim' command found in README.md"
    unchecked = sorted(set(COMMANDS) - set(CHECKS))
    assert not unchecked, f"README.md commands without a check here: {unchecked}"
    gone = sorted(set(CHECKS) - set(COMMANDS))
    assert not gone, f"checks of commands no longer in README.md: {gone}"


def test_readme_commands_as_written_in_order(tmp_path):
    # in the README's order: ref writes gold.bin, which diff then reads
    for command in dict.fromkeys(COMMANDS):
        CHECKS[command](command, tmp_path)


def test_readme_test_command_runs_the_quick_environments_first():
    # `tox` alone: lint, docs and the suite, quick ones first; the long
    # environments only by name (and in CI)
    assert "pip install tox && tox\n" in README
    ini = (ROOT / "tox.ini").read_text()
    envlist = re.search(r"^envlist\s*=\s*(.+)$", ini, re.MULTILINE)[1]
    assert [e.strip() for e in envlist.split(",")] == ["lint", "docs", "py"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install tox && tox\n" in ci and "tox -e exhaustive,dask" in ci
    for env in ("exhaustive", "dask"):
        assert re.search(rf"`tox -e {env}` \([^)]*about \d+ minutes", README), env


# -- what a careful newcomer types next -------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["explain", "--fmt", "fp16", "--", "-1e-5"],
    ["explain", "-1e-5", "--fmt", "fp16"],
    ["explain", "--fmt", "fp16", "-1e-5"],
    ["explain", "--fmt=fp16", "-1e-5"],
])
def test_negative_values_in_every_argument_form(tmp_path, argv):
    r = fpsim(argv, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "0x80a8 = -1.0013580322265625e-05" in r.stdout  # -(168 × 2**-24)


def test_long_exact_values_are_shown_short_and_in_full_on_request(tmp_path):
    r = fpsim("explain -0.0 --fmt bf16", tmp_path)
    assert r.returncode == 0
    assert "next up    0x0001 = 2^-133 ~ 9.184e-41" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) < 120
    r = fpsim("explain --bits 0x3C00 --fmt fp32", tmp_path)
    assert "0x00003c00 = 15 * 2^-139 ~ 2.15239444e-41" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) < 120
    full = fpsim("explain --bits 0x3C00 --fmt fp32 --exact", tmp_path).stdout
    exact = "2.15239444120291902093884863993331117764648234272232822541885688405471910300548188388347625732421875e-41"  # noqa: E501  (15 × 2**-139)
    assert f"0x00003c00 = {exact}" in full
    data = json.loads(fpsim("explain --bits 0x3C00 --fmt fp32 --json", tmp_path).stdout)
    assert data["value"] == exact and data["short"]["value"] == "15 * 2^-139 ~ 2.15239444e-41"


def test_errors_share_one_sign_convention(tmp_path):
    # 1/3 in FP16 rounds down to 0x3555 = 1365/4096: every error is negative
    data = json.loads(fpsim("explain 1/3 --json", tmp_path).stdout)
    assert data["error_convention"].startswith("result - exact")
    for key in ("abs_error", "rel_error", "ulp_error"):
        assert data[key].lstrip("~").startswith("-"), key
    text = fpsim("explain 1/3", tmp_path).stdout
    assert "(result - exact)" in text and "((result - exact) / |exact|)" in text
    assert "exactly ~" not in text  # 1/3 is exact; only its decimal is rounded


def test_stochastic_rounding_states_its_seed(tmp_path):
    r = fpsim("explain 1/3 --rounding sr", tmp_path)
    assert "stochastic rounding, seed 0" in r.stdout
    assert "default 0" in fpsim("explain --help", tmp_path).stdout
    assert json.loads(fpsim("explain 1/3 --rounding sr --json", tmp_path).stdout)["seed"] == 0


def test_nan_literals_keep_their_sign_and_their_notes_agree_with_the_flags(tmp_path):
    r = fpsim("explain -nan --json", tmp_path)
    data = json.loads(r.stdout)
    assert data["input_value"] == "-nan" and data["bits"] == "0xfe00"
    data = json.loads(fpsim("explain snan --json", tmp_path).stdout)
    assert data["flags"] == [] and data["bits"] == "0x7c01"
    assert any("without a flag" in n for n in data["notes"])
    assert not any("raises invalid)" in n for n in data["notes"])


def test_layouts_read_right(tmp_path):
    assert "no sign, 8 exponent, 0 fraction bits; bias 127; no infinities, NaN = 11111111" \
        in fpsim("explain 1 --fmt e8m0", tmp_path).stdout
    assert "2 exponent, 1 fraction bit;" in fpsim("explain 1 --fmt e2m1", tmp_path).stdout


def test_vectors_check_outside_a_checkout_says_so_in_one_line(tmp_path):
    r = fpsim("vectors --check", tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no folder spec/vectors" in r.stderr


def test_ref_reads_the_format_of_npy_inputs_as_diff_does(tmp_path):
    np.save(tmp_path / "x.npy", np.float16([1, 2, 3]))
    np.save(tmp_path / "y.npy", np.float16([0.5, 2**-24, 65504]))
    r = fpsim("ref add x.npy y.npy out.npy", tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "wrote out.npy: add of 2 fp16 inputs, fp16, shape 3 (.npy)\n"
    # 1 + 0.5; 2 + 2**-24 rounds to 2; 3 + 65504 = 65507 rounds to 65504 (spacing 32)
    assert np.load(tmp_path / "out.npy").tolist() == [1.5, 2.0, 65504.0]


def test_the_gitignore_covers_what_tox_writes():
    ignored = (ROOT / ".gitignore").read_text().split()
    assert ".tox/" in ignored and ".venv" in ignored  # .venv as a file or a folder


def test_the_histogram_heading_counts_the_pairs_it_leaves_out():
    from fpsim.testing import compare

    nan = np.float16("nan")
    r = compare(np.float16([1, nan, nan, 2]), np.float16([1, nan, 3, 2.001953125]), max_ulp=1)
    assert sum(h["count"] for h in r.histogram) == 2 and r.histogram_excluded == 2
    assert r.to_dict()["histogram_excluded"] == 2
    assert "ULP histogram (2 pairs with a NaN left out): 0: 1, 1: 1" in str(r)
    assert "NaN mismatches" in str(r)  # a count of pairs, labelled as one


def test_a_sweep_stopped_before_its_first_chunk_says_nothing_was_compared(tmp_path):
    # Ctrl-C inside the first chunk (after the sweep's probe call on a few
    # operands, which must answer)
    (tmp_path / "stopped.py").write_text(
        "def at_once(a, b):\n"
        "    if a.size > 64:\n"
        "        raise KeyboardInterrupt\n"
        "    return a\n")
    r = fpsim("sweep add --fmt e5m2 --against stopped:at_once", tmp_path)
    assert r.returncode == 130
    assert "nothing compared" in r.stdout and "compare: OK" not in r.stdout


def test_far_and_enormous_inputs_are_explained_briefly(tmp_path):
    # 10**99999999 is far beyond every format: read by its sign and side only
    r = fpsim(["explain", "--fmt", "e4m3", "--", "-1e99999999"], tmp_path, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "(-x with |x| beyond 1e+" in r.stdout and "exactly" not in r.stdout
    assert "0xff = -nan" in r.stdout  # E4M3 overflows to NaN, keeping the sign
    # a 100,000-digit integer: quoted by its ends, its value shown short
    r = fpsim(["explain", "1" * 100000], tmp_path, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "(99,940 characters)" in r.stdout and "~ 1.1111111111111111e+99999" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) < 200
