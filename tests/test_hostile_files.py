"""Hostile files (spec/testing.md, section 7, "Files"): the inputs of
``python -m fpsim diff`` and ``ref`` and the files ``vectors --check`` reads.

Only regular files are read (symlinks followed): a FIFO, a device, a
directory is refused in one line naming the file, without waiting.  A dump
that changes while it is read is reported, never compared and never a crash.
Each case exits 2 with one line on stderr that names the file, without a
traceback, within seconds; the ones that used to hang or eat memory run in
a subprocess with a timeout (and a data limit), so a regression fails
instead of hanging the suite.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import fpsim
from fpsim import _files
from fpsim.testing import _dumps

from hostile import cli, one_line_error, run

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="FIFOs, /dev/zero and symlinks are POSIX's")

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors"
N = 1000  # elements of the FP16 dumps here: 2,000 bytes


@pytest.fixture
def dumps(tmp_path):
    """Two FP16 dumps of N elements that differ in element 17 by one ULP."""
    expected = np.random.default_rng(7).uniform(-10, 10, N).astype(np.float16)
    actual = expected.copy()
    actual.view(np.uint16)[17] += 1
    actual.tofile(tmp_path / "a.bin")
    expected.tofile(tmp_path / "e.bin")
    return tmp_path / "a.bin", tmp_path / "e.bin"


# -- not a regular file ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["pipe.bin", "pipe.npy"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, dumps, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    p = cli("diff", fifo, dumps[1], "--fmt", "fp16", timeout=30)
    one_line_error(p.returncode, p.stderr, f"ACTUAL {fifo} is a FIFO (named pipe), "
                   "not a regular file")
    p = cli("ref", "exp", "--fmt", "fp16", fifo, tmp_path / "out.bin", timeout=30)
    one_line_error(p.returncode, p.stderr, f"input 1 {fifo} is a FIFO")
    assert not (tmp_path / "out.bin").exists()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("name", ["zero.bin", "zero.npy"])
def test_a_symlink_to_dev_zero_is_refused(tmp_path, dumps, name, capsys):
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    status, out, err = run(capsys, "diff", dumps[0], link, "--fmt", "fp16")
    one_line_error(status, err, f"EXPECTED {link} is a character device, not a regular file")
    assert out == ""
    status, _, err = run(capsys, "ref", "add", "--fmt", "fp16", dumps[0], link,
                         tmp_path / "o.bin")
    one_line_error(status, err, f"input 2 {link} is a character device")


def test_a_symlink_to_a_directory_is_refused(tmp_path, dumps, capsys):
    link = tmp_path / "folder.bin"
    link.symlink_to(tmp_path)
    status, _, err = run(capsys, "diff", link, dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {link} is a directory, not a regular file")
    status, _, err = run(capsys, "diff", tmp_path, dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {tmp_path} is a directory")


def test_a_symlink_to_a_regular_file_is_read(tmp_path, dumps, capsys):
    link = tmp_path / "link.bin"
    link.symlink_to(dumps[0])
    status, out, err = run(capsys, "diff", link, dumps[1], "--fmt", "fp16", "--max-ulp", "1")
    assert (status, err) == (0, "") and "OK" in out


def test_a_dangling_symlink_is_a_missing_file(tmp_path, dumps, capsys):
    link = tmp_path / "gone.bin"
    link.symlink_to(tmp_path / "nothing-here.bin")
    status, _, err = run(capsys, "diff", link, dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL file not found: {link}")


# -- files that change while they are read ---------------------------------------------------

def _after_read(monkeypatch, change):
    """Make ``change(path)`` happen to each dump right after ``_dumps.read``
    opened it, before the comparison reads its chunks."""
    real = _dumps.read

    def read(path, *args, **kwargs):
        dump = real(path, *args, **kwargs)
        change(Path(path))
        return dump

    monkeypatch.setattr(_dumps, "read", read)


def test_a_dump_truncated_after_it_was_opened(monkeypatch, dumps, capsys):
    _after_read(monkeypatch, lambda p: os.truncate(p, N) if p == dumps[0] else None)
    status, out, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {dumps[0]} changed while it was read "
                   "(it was 2,000 bytes, now 1,000)")
    assert out == ""


def test_a_dump_truncated_between_open_and_read(monkeypatch, dumps, capsys):
    """The checks when a chunk's file is opened pass, then the file shrinks
    before the read: the read comes back short (where a memory map would
    have faulted past the new end and killed the process)."""
    real = _files.read_into

    def read_into(fd, buffer, offset):
        os.truncate(dumps[0], N)  # (only ACTUAL's descriptor is read first)
        return real(fd, buffer, offset)

    monkeypatch.setattr(_files, "read_into", read_into)
    status, _, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {dumps[0]} changed while it was read "
                   "(it was 2,000 bytes, now 1,000)")


def test_a_short_read_of_a_file_of_the_right_size(monkeypatch, dumps):
    """A read that ends early though the size is back as it was (shrunk,
    then grown again, between the read and the check) is a change too."""
    dump = _dumps.read(dumps[0], fpsim.FP16, label="ACTUAL")
    real = _files.read_into
    monkeypatch.setattr(_files, "read_into",
                        lambda fd, buffer, offset: real(fd, buffer[:-2], offset))
    with pytest.raises(_dumps.DumpError, match=rf"^ACTUAL {dumps[0]} changed while it was "
                       r"read \(a read at byte 998 found its end\)$"):
        dump.read(0, N // 2)


def test_a_dump_that_grew(monkeypatch, dumps, capsys):
    def grow(p):
        if p == dumps[0]:
            with open(p, "ab") as f:
                f.write(b"\0\0")

    _after_read(monkeypatch, grow)
    status, _, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {dumps[0]} changed while it was read (it was 2,000 "
                   "bytes, now 2,002)")


def test_a_dump_modified_in_place(monkeypatch, dumps, capsys):
    def touch(p):  # same size, a new modification time: rewritten in place
        if p == dumps[1]:
            info = os.stat(p)
            os.utime(p, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))

    _after_read(monkeypatch, touch)
    status, _, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"EXPECTED {dumps[1]} changed while it was read (it was "
                   "modified)")


def test_a_dump_replaced_by_another_file_of_the_same_size_and_time(monkeypatch, tmp_path,
                                                                    dumps, capsys):
    """Size and time match, so every chunk reads the new file: the end of
    the comparison finds that the path names another file."""
    def replace(p):
        if p == dumps[1]:
            other = tmp_path / "other.bin"
            shutil.copyfile(dumps[0], other)
            info = os.stat(p)
            os.utime(other, ns=(info.st_atime_ns, info.st_mtime_ns))
            os.replace(other, p)

    _after_read(monkeypatch, replace)
    status, _, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"EXPECTED {dumps[1]} changed while it was read (it was "
                   "replaced by another file)")


def test_a_dump_removed_while_it_is_read(monkeypatch, dumps, capsys):
    _after_read(monkeypatch, lambda p: p.unlink() if p == dumps[1] else None)
    status, _, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"EXPECTED {dumps[1]} changed while it was read (it is gone)")


def test_changes_are_found_on_the_scheduler_too(monkeypatch, dumps, capsys):
    pytest.importorskip("dask")
    _after_read(monkeypatch, lambda p: os.truncate(p, 0) if p == dumps[0] else None)
    status, _, err = run(capsys, "diff", dumps[0], dumps[1], "--fmt", "fp16",
                         "--scheduler", "local", "--workers", "2")
    one_line_error(status, err, f"ACTUAL {dumps[0]} changed while it was read "
                   "(it was 2,000 bytes, now 0)")


# -- .npy headers, empty files -----------------------------------------------------------------

def test_an_npy_header_that_promises_more_data_than_the_file_holds(tmp_path, dumps, capsys):
    whole = tmp_path / "whole.npy"
    np.save(whole, np.zeros(N, np.float16))
    cut = tmp_path / "cut.npy"
    data = whole.read_bytes()
    header = len(data) - 2 * N  # np.save writes the header, then the 2,000 data bytes
    cut.write_bytes(data[:header + 2 * N - 500])
    status, _, err = run(capsys, "diff", cut, whole)
    one_line_error(status, err, f"ACTUAL {cut}: its header promises 2,000 bytes of data "
                   "(shape (1000,), float16), the file holds 1,500 after the header")


def test_an_npy_header_of_an_impossible_shape(tmp_path, capsys):
    """A header may claim any shape: one no array can have is refused, even
    with no data (its sizes multiply to 0)."""
    path = tmp_path / "huge.npy"
    header = {"descr": "<f2", "fortran_order": False, "shape": (1 << 40, 1 << 40, 0)}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
    status, _, err = run(capsys, "diff", path, path)
    one_line_error(status, err, f"ACTUAL {path}'s shape", "larger than any array can be")


def test_an_npy_file_of_objects_is_refused_unread(tmp_path, capsys):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([1, "x"], dtype=object), allow_pickle=True)
    status, _, err = run(capsys, "diff", path, path)
    one_line_error(status, err, f"ACTUAL {path} holds Python objects")


def test_empty_files(tmp_path, dumps, capsys):
    empty_npy = tmp_path / "empty.npy"
    empty_npy.write_bytes(b"")
    status, _, err = run(capsys, "diff", empty_npy, dumps[1], "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {empty_npy} is not a readable .npy file")
    status, _, err = run(capsys, "ref", "exp", empty_npy, tmp_path / "o.bin")
    one_line_error(status, err, f"input 1 {empty_npy} is not a readable .npy file")
    empty_raw = tmp_path / "empty.bin"
    empty_raw.write_bytes(b"")
    status, _, err = run(capsys, "diff", dumps[0], empty_raw, "--fmt", "fp16")
    one_line_error(status, err, f"ACTUAL {dumps[0]} has 1000 elements, EXPECTED {empty_raw} "
                   "has 0")


# -- vectors --check ---------------------------------------------------------------------------

@pytest.fixture
def vectors(tmp_path):
    copy = tmp_path / "vectors"
    shutil.copytree(VECTORS, copy)
    return copy


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("name", ["fp16/add_rne.tv", "SHA256SUMS"])
def test_vectors_check_refuses_a_symlink_to_dev_zero(vectors, name):
    target = vectors / name
    target.unlink()
    target.symlink_to("/dev/zero")
    p = cli("vectors", "--check", "--out", vectors, "--formats", "fp16", timeout=120,
            limit=1 << 30)
    one_line_error(p.returncode, p.stderr, f"{target} is a character device, not a regular file")


def test_vectors_check_reads_no_more_than_a_file_should_hold(vectors):
    """A vector file grown to 16 GiB (sparse: no disk used) is read up to
    one byte past its expected size: reported as differing, in seconds,
    within a 1 GiB data limit."""
    big = vectors / "fp32" / "add_rne.tv"
    os.truncate(big, 1 << 34)
    p = cli("vectors", "--check", "--out", vectors, "--formats", "fp32", timeout=120,
            limit=1 << 30)
    assert p.returncode == 1, p.stderr
    assert "differs from what fpsim computes now: fp32/add_rne.tv" in p.stdout


def test_vectors_check_does_not_follow_a_symlinked_folder(vectors):
    """A symlink pointing up would make a walk that follows links loop;
    what it holds is not part of the folder."""
    (vectors / "fp16" / "up").symlink_to(vectors)
    p = cli("vectors", "--check", "--out", vectors, "--formats", "fp16", timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip().endswith("up to date")
