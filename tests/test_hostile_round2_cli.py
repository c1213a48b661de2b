"""Hostile input, round 2: user code that ends the process, closed and
non-UTF-8 standard streams, and a probe's kernel that hangs.

The rule of the command line: bad input or a failing user callable exits
with status 2 and one line on stderr, never a traceback; only Ctrl-C
(KeyboardInterrupt) from user code is an interruption.  Here that rule is
held against user code raising ``SystemExit``, ``GeneratorExit`` and
BaseExceptions of its own, at import and at call (``sweep`` and ``probe``
import and call it); against closed stdin, stdout and stderr, full output
devices and ASCII-only encodings (every command); and against a probed
kernel that never returns (``probe --call-timeout``).  Each case runs
``python -m fpsim`` in a subprocess, the only place a closed stream or an
escaping SystemExit shows what a user sees.

Expected outputs follow from the rule and from the kernels' definitions
below (a kernel that exits is a failure, not a success), not from fpsim.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from fpsim import mma, sweep

TESTS = Path(__file__).resolve().parent

KERNELS = '''\
import sys
import time

import ml_dtypes
import numpy as np

E5M2 = ml_dtypes.float8_e5m2


def add(a, b):  # sums of two E5M2 values are exact in float32
    return (a.astype(np.float32) + b.astype(np.float32)).astype(E5M2)


def loop(a, b, c):  # acc = fl32(acc + a[k] * b[k]), k in order
    acc = c.astype(np.float32)
    for k in range(a.shape[1]):
        acc = (acc + a[:, k].astype(np.float32) * b[:, k].astype(np.float32)).astype(np.float32)
    return acc


class Planted(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self):
        raise SystemExit(0)


class ExitsWhenRead:
    def __array__(self, *args, **kwargs):
        sys.exit(0)


def _after_first(exc):
    # a sweep's first call (its probe) has 4 operands: fail on the chunks
    def kernel(*args):
        if args[0].size > 64:
            raise exc
        return loop(*args) if len(args) == 3 else add(*args)
    return kernel


def exits_0(*args):
    sys.exit(0)


def exits_none(*args):
    sys.exit()


def generator_exit(*args):
    raise GeneratorExit("closed")


def planted(*args):
    raise Planted("a BaseException of its own")


def unprintable(*args):
    raise Unprintable()


def exits_when_read(*args):
    return ExitsWhenRead()


def gemm_exits(A, B, C):
    sys.exit(0)


def hangs(*args):
    time.sleep(120)


def gemm_hangs(A, B, C):
    time.sleep(120)
'''

AT_IMPORT = {
    "imp_exit0": "import sys\nsys.exit(0)\n\ndef f(*args):\n    pass\n",
    "imp_raises": "raise ZeroDivisionError('division at import')\n",
    "imp_planted": "class Planted(BaseException):\n    pass\n\nraise Planted('at import')\n",
    "imp_getattr": "def __getattr__(name):\n    raise SystemExit(3)\n",
}


@pytest.fixture(scope="module")
def here(tmp_path_factory):
    """A folder holding the kernels (the subprocesses' working directory)."""
    folder = tmp_path_factory.mktemp("round2")
    (folder / "hostile2.py").write_text(KERNELS)
    for name, text in AT_IMPORT.items():
        (folder / f"{name}.py").write_text(text)
    values = np.float16([1.0, -2.5, 0.0, 65504.0])
    values.tofile(folder / "a.bin")
    np.float16([1.0, -2.5, 0.0, 1.0]).tofile(folder / "b.bin")
    (folder / "lines.txt").write_text("3C00 3C00 4000 00\n")
    return folder


def fpsim(cwd: Path, *argv: str, env: dict[str, str] | None = None, close: tuple[int, ...] = (),
          stdout: object = subprocess.PIPE, stderr: object = subprocess.PIPE,
          stdin: object = subprocess.DEVNULL, timeout: float = 60
          ) -> subprocess.CompletedProcess:
    """``python -m fpsim ARGV`` in ``cwd`` (the kernels importable), with the
    file descriptors ``close`` closed; output as text (bytes replaced)."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "PYTHONCOERCECLOCALE")}
    environment["PYTHONPATH"] = os.pathsep.join([str(cwd), str(TESTS)])
    environment.update(env or {})

    def closing() -> None:
        for fd in close:
            os.close(fd)

    done = subprocess.run([sys.executable, "-m", "fpsim", *argv], cwd=cwd, env=environment,
                          stdin=stdin, stdout=stdout, stderr=stderr, timeout=timeout,
                          preexec_fn=closing if close else None)
    for name in ("stdout", "stderr"):
        data = getattr(done, name)
        setattr(done, name, (data or b"").decode("utf-8", "replace"))
    return done


def one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit status 2, nothing on stdout, one line on stderr naming each needle."""
    err = done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, err)
    assert done.stdout == ""
    assert err.startswith("fpsim: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


PROBE = ("probe", "--fmt", "fp16", "--max-k", "4")
SWEEP = ("sweep", "add", "--fmt", "e5m2")


# -- class 2: user code that ends the process ------------------------------------------------

@pytest.mark.parametrize("kernel, raised", [
    ("exits_0", "SystemExit"), ("exits_none", "SystemExit"),
    ("generator_exit", "GeneratorExit"), ("planted", "Planted"),
    ("unprintable", "Unprintable"), ("exits_when_read", "SystemExit"),
])
def test_a_probed_kernel_that_exits_or_raises_a_base_exception_is_exit_2(here, kernel, raised):
    one_line_error(fpsim(here, *PROBE, "--against", f"hostile2:{kernel}"), kernel, raised)


def test_a_probed_gemm_that_exits_is_exit_2(here):
    one_line_error(fpsim(here, "probe", "--fmt", "fp16", "--shape", "gemm", "--against",
                         "hostile2:gemm_exits"), "gemm_exits", "SystemExit")


@pytest.mark.parametrize("kernel, raised", [("unprintable", "Unprintable"),
                                            ("exits_when_read", "SystemExit")])
def test_a_swept_kernel_whose_error_or_result_exits_is_exit_2(here, kernel, raised):
    one_line_error(fpsim(here, *SWEEP, "--against", f"hostile2:{kernel}"),
                   f"hostile2:{kernel}", raised)


@pytest.mark.parametrize("command", [SWEEP, PROBE], ids=["sweep", "probe"])
@pytest.mark.parametrize("module, raised", [
    ("imp_exit0", "SystemExit"), ("imp_raises", "ZeroDivisionError"),
    ("imp_planted", "Planted"), ("imp_getattr", "SystemExit"),
])
def test_a_module_that_exits_or_raises_while_imported_is_exit_2(here, command, module, raised):
    one_line_error(fpsim(here, *command, "--against", f"{module}:f"), f"{module}:f", raised)


def test_the_python_api_turns_an_exit_into_a_clear_chained_error(here, monkeypatch):
    monkeypatch.syspath_prepend(str(here))
    sweep.load_candidate.cache_clear()
    try:
        with pytest.raises(sweep.CandidateError, match="'imp_exit0:f'.*SystemExit") as caught:
            sweep.load_candidate("imp_exit0:f")
        assert isinstance(caught.value.__cause__, SystemExit)
    finally:
        sys.modules.pop("imp_exit0", None)
        sweep.load_candidate.cache_clear()

    def exits(a, b, c):
        raise SystemExit(0)

    with pytest.raises(mma.ProbeError, match=r"exits' raised at every K tried \(K=1: "
                       r"SystemExit: 0\)") as caught:
        mma.probe(exits, "fp16", max_k=4)
    causes = []
    cause = caught.value.__cause__
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__
    assert any(isinstance(c, SystemExit) for c in causes)


# -- the probe's call timeout ---------------------------------------------------------------

@pytest.mark.parametrize("shape, kernel", [("rows", "hangs"), ("gemm", "gemm_hangs")])
def test_a_probed_kernel_that_hangs_ends_within_the_call_timeout(here, shape, kernel):
    start = time.monotonic()
    done = fpsim(here, "probe", "--fmt", "fp16", "--shape", shape, "--against",
                 f"hostile2:{kernel}", "--call-timeout", "0.3", timeout=60)
    one_line_error(done, kernel, "0.3 s (the call timeout)", "--call-timeout")
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("text", ["nan", "0", "soon"])
def test_call_timeout_must_be_positive_finite_seconds(here, text):
    one_line_error(fpsim(here, *PROBE, "--against", "hostile2:loop", "--call-timeout", text),
                   "--call-timeout", "positive finite number of seconds")


def test_a_kernel_within_its_call_timeout_is_probed(here):
    done = fpsim(here, *PROBE, "--against", "hostile2:loop", "--call-timeout", "30")
    assert done.returncode == 0 and done.stderr == ""
    assert "((((p0 + c) + p1) + p2) + p3)" in done.stdout


def test_the_python_probe_takes_a_timeout():
    release = threading.Event()

    def blocked(a, b, c):
        release.wait(60)
        return np.zeros(len(c), np.float32)

    try:
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="'.*blocked' did not finish .* within 0.2 s"):
            mma.probe(blocked, "fp16", max_k=4, timeout=0.2)
        assert time.monotonic() - start < 20
    finally:
        release.set()
    for bad in (0, -1.0, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError, match="timeout must be a positive finite number"):
            mma.probe(blocked, "fp16", timeout=bad)


# -- class 3: standard streams and encodings -----------------------------------------------

def test_gen_with_stdout_closed_is_one_line(here):
    one_line_error(fpsim(here, "gen", "f16_add", "-n", "3", close=(1,)), "stdout")


def test_ver_with_stdin_closed_is_one_line(here):
    one_line_error(fpsim(here, "ver", "f16_add", close=(0,)), "stdin")


# ver is the exception: its exit status is its verdict, which stands without
# the report (tests/test_hostile_round3_sweeps.py).
@pytest.mark.parametrize("argv", [
    ("explain", "1e-5"), ("formats",), ("diff", "a.bin", "b.bin", "--fmt", "fp16"),
    ("ref", "list"), (*SWEEP, "--against", "hostile2:add"),
    (*PROBE, "--against", "hostile2:loop"),
], ids=lambda argv: argv[0])
def test_every_command_with_stdout_closed_is_one_line_not_a_silent_status(here, argv):
    one_line_error(fpsim(here, *argv, close=(1,)), "stdout is closed")


def test_with_stderr_closed_an_error_never_lands_on_stdout(here):
    for argv in (("explain", "1", "--fmt", "nosuch"), (*PROBE, "--against", "hostile2:exits_0")):
        done = fpsim(here, *argv, close=(2,))
        assert done.returncode == 2 and done.stdout == "", (argv, done.stdout)


def test_a_sweep_with_stderr_closed_completes(here):
    done = fpsim(here, *SWEEP, "--against", "hostile2:add", close=(2,))
    assert done.returncode == 0 and "AGREES" in done.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_output_devices_are_exit_2(here):
    with open("/dev/full", "wb") as full:
        done = fpsim(here, "explain", "1", "--fmt", "nosuch", stderr=full)
        assert done.returncode == 2 and done.stdout == ""
        done = fpsim(here, "gen", "f16_add", "-n", "100000", stdout=full)
        one_line_error(done, "stdout", "No space left on device")


ASCII = {"PYTHONIOENCODING": "ascii"}
C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
@pytest.mark.parametrize("argv, shown", [
    (("ref", "list"), "x x y + z, one rounding"),           # '×' in the operators' list
    (("explain", "--help"), "clamp overflow (and inf) to +/-max"),  # '±' in the help
], ids=["ref-list", "explain-help"])
def test_ascii_streams_get_ascii_text(here, env, argv, shown):
    done = fpsim(here, *argv, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.isascii() and shown in " ".join(done.stdout.split())


def test_the_probe_report_degrades_to_ascii(here):
    done = fpsim(here, "probe", "--fmt", "fp16", "--shape", "gemm", "--k", "32", "--against",
                 "probe_kernels:h100_gemm", env=ASCII)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.isascii() and "(instruction preset x schedule x where C joins" \
        in done.stdout


def test_ver_reads_stdin_as_it_reads_a_file_whatever_the_encoding(here):
    data = b"3C00 3C00 4000 00\n\xff\xfe 0000\n"
    (here / "bad.txt").write_bytes(data)
    from_file = fpsim(here, "ver", "f16_add", "bad.txt", env=ASCII)
    one_line_error(from_file, "line 2: f16_add: 2 fields")
    with open(here / "bad.txt", "rb") as source:
        one_line_error(fpsim(here, "ver", "f16_add", stdin=source, env=ASCII),
                       "line 2: f16_add: 2 fields")
