"""Hostile input, round 3 (spec/testing.md, section 7): ``python -OO``, and
the files fpsim writes.

* Under ``python -OO`` (``PYTHONOPTIMIZE=2``) there are no docstrings:
  every package still imports and the command line still runs.
* Every file fpsim writes (``ref``'s output, the vector files, a sweep's
  progress file) appears whole or not at all: a write that fails (a size
  limit, Ctrl-C) leaves the previous file as it was and no temporary file
  behind.
* An output that is not a regular file (a FIFO, a directory, a socket, a
  device) is refused in one line, at once: a FIFO without a reader is never
  opened, so nothing waits.  ``/dev/null`` discards.

The cases that used to fail by hanging run in a subprocess with a timeout,
so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import resource
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from fpsim import FP16, _files, _vectors
from fpsim.sweep import _progress
from fpsim.testing import _dumps
from fpsim.testing.tally import Partial

from hostile import cli, one_line_error, run

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="FIFOs, sockets, size limits and file modes are POSIX's")

N = 4096  # elements of the FP16 dumps here: 8 KiB


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.fixture
def halves(tmp_path):
    """An FP16 dump of N elements whose sum with itself is exact (x + x = 2x)."""
    x = (np.arange(N) % 1000).astype(np.float16) / 4
    x.tofile(tmp_path / "x.bin")
    return tmp_path / "x.bin", (x + x).view(np.uint16)


def _only(folder: Path, *names: str) -> None:
    """``folder`` holds exactly ``names``: no temporary file was left."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


# -- python -OO ------------------------------------------------------------------------------

def _optimized(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-OO", *argv], capture_output=True, text=True,
                          timeout=60)


def test_every_package_imports_without_docstrings():
    p = _optimized("-c", "import numpy as np\n"
                         "import fpsim, fpsim.array, fpsim.ops, fpsim.mma, fpsim.quant\n"
                         "import fpsim.testing, fpsim.sweep, fpsim.cli\n"
                         "x = fpsim.array.add(np.float16([1.0, 2.0]), np.float16(0.5))\n"
                         "print(fpsim.array.add.__doc__, x.tolist())\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "None [1.5, 2.5]\n"


@pytest.mark.parametrize("argv, needle", [
    (["explain", "1e-5", "--fmt", "fp16"], "subnormal"),
    (["--help"], "explain"),
])
def test_the_command_line_runs_without_docstrings(argv, needle):
    p = _optimized("-m", "fpsim", *argv)
    assert p.returncode == 0, p.stderr
    assert needle in p.stdout and p.stderr == ""


# -- whole or not at all ---------------------------------------------------------------------

def _limit_file_size(limit: int):
    def limited() -> None:
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    return limited


def test_ref_over_the_file_size_limit_leaves_the_previous_output(tmp_path, halves):
    out = tmp_path / "out.bin"
    out.write_bytes(b"previous golden output")
    # ulimit -f: the 8 KiB output passes the 4 KiB limit (Python ignores
    # SIGXFSZ, so the write fails with EFBIG instead of killing the process).
    p = subprocess.run([sys.executable, "-m", "fpsim", "ref", "add", "--fmt", "fp16",
                        str(halves[0]), str(halves[0]), str(out)], capture_output=True,
                       text=True, timeout=60, preexec_fn=_limit_file_size(4096))
    one_line_error(p.returncode, p.stderr, f"cannot write output {out} (File too large)",
                   f"{out} is unchanged")
    assert out.read_bytes() == b"previous golden output"
    _only(tmp_path, "x.bin", "out.bin")


def test_an_interrupted_dump_leaves_the_previous_one(tmp_path, monkeypatch):
    out = tmp_path / "out.npy"
    out.write_bytes(b"previous")
    real_save = np.save

    def interrupted(file, arr, **kw):  # half the data, then Ctrl-C
        real_save(file, arr[: arr.size // 2], **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _dumps.write(out, np.arange(N, dtype=np.uint16), FP16)
    assert out.read_bytes() == b"previous"
    _only(tmp_path, "out.npy")


def test_a_failed_write_removes_the_fresh_file(tmp_path, monkeypatch):
    out = tmp_path / "out.bin"
    out.write_bytes(b"previous")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device") as caught:
        _dumps.write(out, np.arange(16, dtype=np.uint16), FP16)
    assert caught.value.errno == 28 and str(out) in str(caught.value)
    assert out.read_bytes() == b"previous"
    _only(tmp_path, "out.bin")


def test_a_file_name_of_the_longest_length_is_written(tmp_path):
    # the temporary file beside it is named after it, cut to fit 255 bytes
    out = tmp_path / ("n" * 255)
    _files.write_atomic(out, "whole\n")
    assert out.read_text() == "whole\n"
    _only(tmp_path, out.name)


def test_a_new_output_has_the_usual_mode_and_a_replaced_one_keeps_its_own(tmp_path, capsys,
                                                                          halves):
    new, old = tmp_path / "new.bin", tmp_path / "old.bin"
    old.write_bytes(b"previous")
    old.chmod(0o640)
    for out in (new, old):
        status, _, err = run(capsys, "ref", "add", "--fmt", "fp16", halves[0], halves[0], out)
        assert status == 0, err
        assert np.array_equal(np.fromfile(out, np.uint16), halves[1])
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~_umask()
    assert stat.S_IMODE(old.stat().st_mode) == 0o640


def test_a_progress_file_has_the_usual_mode(tmp_path):
    # (a fresh temporary file is 0600; the progress file is a file like any other)
    path = tmp_path / "sweep.progress"
    _progress.save(str(path), {"op": "add"}, 4, {0, 1}, Partial())
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    _only(tmp_path, "sweep.progress")


def test_an_output_through_a_symlink_replaces_the_file_it_names(tmp_path, capsys, halves):
    target = tmp_path / "golden.bin"
    target.write_bytes(b"previous")
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    status, _, err = run(capsys, "ref", "add", "--fmt", "fp16", halves[0], halves[0], link)
    assert status == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert np.array_equal(np.fromfile(target, np.uint16), halves[1])
    _only(tmp_path, "x.bin", "golden.bin", "link.bin")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root may write any file")
def test_a_read_only_output_is_refused(tmp_path, capsys, halves):
    out = tmp_path / "out.bin"
    out.write_bytes(b"previous")
    out.chmod(0o444)
    status, _, err = run(capsys, "ref", "add", "--fmt", "fp16", halves[0], halves[0], out)
    one_line_error(status, err, f"output {out} cannot be written", "read-only")
    assert out.read_bytes() == b"previous"


def test_vectors_refuse_a_fifo_among_the_files_without_waiting(tmp_path):
    # Two small vector files stand for the ~2,000: the second is a FIFO.
    os.mkfifo(tmp_path / "b.tv")
    script = ("import sys\nfrom pathlib import Path\nfrom fpsim import _vectors\n"
              "_vectors.files = lambda only=None: iter([('a.tv', lambda: 'A\\n'), "
              "('b.tv', lambda: 'B\\n')])\n"
              "try:\n    _vectors.write(Path(sys.argv[1]))\n"
              "except ValueError as exc:\n    print(exc)\n")
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"vector file {tmp_path / 'b.tv'} is a FIFO (named pipe), not a " \
                       f"regular file: give a file name (or {os.devnull}, which discards)\n"
    assert (tmp_path / "a.tv").read_text() == "A\n"
    assert stat.S_ISFIFO((tmp_path / "b.tv").stat().st_mode)
    _only(tmp_path, "a.tv", "b.tv")


def test_vectors_write_whole_files_and_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setattr(_vectors, "files",
                        lambda only=None: iter([("f/a.tv", lambda: "A\n")]))
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a.tv").write_text("old\n")
    assert _vectors.write(tmp_path) == ["f/a.tv"]
    assert (tmp_path / "f" / "a.tv").read_text() == "A\n"
    assert (tmp_path / _vectors.MANIFEST).read_text().endswith("  f/a.tv\n")
    _only(tmp_path, "f", _vectors.MANIFEST)
    _only(tmp_path / "f", "a.tv")


# -- outputs that are not files --------------------------------------------------------------

def test_ref_refuses_a_fifo_output_without_waiting_for_a_reader(tmp_path, halves):
    fifo = tmp_path / "out.bin"
    os.mkfifo(fifo)
    p = cli("ref", "add", "--fmt", "fp16", halves[0], halves[0], fifo, timeout=30)
    one_line_error(p.returncode, p.stderr, f"output {fifo} is a FIFO (named pipe), not a "
                   "regular file")
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # refused, not replaced
    _only(tmp_path, "x.bin", "out.bin")


def test_ref_refuses_a_directory_a_socket_a_device_or_no_file_name(tmp_path, capsys, halves):
    folder = tempfile.mkdtemp()  # short: a socket's path has at most ~100 bytes
    try:
        sock_path = os.path.join(folder, "s")
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(sock_path)
            for out, kind in ((tmp_path, "a directory"), (sock_path, "a socket"),
                              ("/dev/zero", "a character device")):
                status, _, err = run(capsys, "ref", "add", "--fmt", "fp16", halves[0],
                                     halves[0], out)
                one_line_error(status, err, f"output {out} is {kind}, not a regular file")
            for out, needle in (("", "output: an empty file name"),
                                (f"{tmp_path}/new/", "names a folder")):
                status, _, err = run(capsys, "ref", "add", "--fmt", "fp16", halves[0],
                                     halves[0], out)
                one_line_error(status, err, needle)
    finally:
        os.unlink(sock_path)
        os.rmdir(folder)


def test_ref_refuses_its_own_standard_output(tmp_path, halves):
    # /dev/stdout is a pipe here, as in 'ref ... /dev/stdout | od': refused,
    # never the golden bytes mixed with the report's line.
    p = cli("ref", "add", "--fmt", "fp16", halves[0], halves[0], "/dev/stdout", timeout=30)
    one_line_error(p.returncode, p.stderr, "output /dev/stdout is a FIFO")
    assert p.stdout == ""
    with open(tmp_path / "stdout.txt", "w") as stdout:  # /dev/stdout is a file
        p = subprocess.run([sys.executable, "-m", "fpsim", "ref", "add", "--fmt", "fp16",
                            str(halves[0]), str(halves[0]), "/dev/stdout"], stdout=stdout,
                           stderr=subprocess.PIPE, text=True, timeout=30)
    one_line_error(p.returncode, p.stderr, "is this command's own standard output")
    assert (tmp_path / "stdout.txt").read_bytes() == b""


def test_ref_discards_into_dev_null(capsys, halves):
    status, out, err = run(capsys, "ref", "add", "--fmt", "fp16", halves[0], halves[0],
                           os.devnull)
    assert status == 0, err
    assert out.startswith(f"wrote {os.devnull}: add of 2 fp16 inputs")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
