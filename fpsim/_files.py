"""Reading input files that may be hostile (spec/testing.md, section 7).

Only regular files are read.  A path is checked after following symlinks
(a symlink to a regular file is fine; one to ``/dev/zero``, a directory or
a FIFO is not) and again on the open file, so a path swapped between the
check and the open is caught too.  The open itself never blocks: a FIFO
opened for reading waits for a writer, so it is opened non-blocking and
refused.  Reads are explicit reads at offsets, never a memory map: a file
that shrinks while it is read gives a short read, which the caller reports,
where a mapped page past the new end would kill the process with SIGBUS.
"""

from __future__ import annotations

import os
import stat

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_BINARY", 0))

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def open_regular(path: str, label: str, error: type[Exception] = ValueError
                 ) -> tuple[int, os.stat_result]:
    """A read-only file descriptor of ``path`` and its ``fstat``, if
    ``path`` (symlinks followed) is a regular file; else ``error`` with a
    one-line message that names the file by ``label`` (how the caller's
    users know it, e.g. ``"ACTUAL"``) and ``path``."""
    name = f"{label} {path}"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f"{label} file not found: {path}") from None
    except OSError as exc:
        raise error(f"{name} cannot be read ({exc.strerror or exc})") from None
    # Checked before opening: opening a device can have effects (a tape
    # rewinds), and nothing but a regular file is read anyway.
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{name} is {_kind(info.st_mode)}, not a regular file: "
                    "give a regular file")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise error(f"{name} cannot be read ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # replaced since the check above
        os.close(fd)
        raise error(f"{name} is {_kind(info.st_mode)}, not a regular file: "
                    "give a regular file")
    return fd, info


def read_into(fd: int, buffer: memoryview, offset: int) -> int:
    """Fill ``buffer`` (a byte view) from ``fd`` at byte ``offset``; the
    number of bytes read, fewer than asked only at the end of the file."""
    n, done = len(buffer), 0
    while done < n:
        got = _pread_into(fd, buffer[done:], offset + done)
        if got == 0:
            break
        done += got
    return done


if hasattr(os, "preadv"):
    def _pread_into(fd: int, buffer: memoryview, offset: int) -> int:
        return os.preadv(fd, [buffer], offset)
else:  # pragma: no cover  (Windows: no pread; each reader has its own descriptor)
    def _pread_into(fd: int, buffer: memoryview, offset: int) -> int:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.readv(fd, [buffer])
