"""Reading input files that may be hostile (spec/testing.md, section 7).

Only regular files are read.  A path is checked after following symlinks
(a symlink to a regular file is fine; one to ``/dev/zero``, a directory or
a FIFO is not) and again on the open file, so a path swapped between the
check and the open is caught too.  The open itself never blocks: a FIFO
opened for reading waits for a writer, so it is opened non-blocking and
refused.  Reads are explicit reads at offsets, never a memory map: a file
that shrinks while it is read gives a short read, which the caller reports,
where a mapped page past the new end would kill the process with SIGBUS.

Every file fpsim writes (``ref``'s output, the vector files and their
manifest, a sweep's progress file) appears whole or not at all
(:func:`atomic_output`, :func:`write_atomic`): it is written to a fresh
hidden file in the same folder, flushed to the disk, then renamed onto its
name.  A full disk, a file size limit (``ulimit -f``), Ctrl-C or an error
leaves any previous file as it was and removes the fresh one (a ``kill
-9`` can leave the fresh one, never a truncated file under the name).  An
output is checked before anything is written (:func:`check_output`): a
directory, a FIFO, a socket or a device is refused in one line, never
opened (opening a FIFO waits for a reader; renaming onto one would replace
it unseen), except ``/dev/null``, which is written directly and discards
the output.  A symlink is followed (the file it names is replaced, the
link kept); a new file gets mode ``0666`` less the umask, a replaced one
keeps its permission bits; a read-only file is refused, as ``open`` would.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

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


# -- writing ------------------------------------------------------------------------------


class WriteError(OSError):
    """A file that could not be written whole (a full disk, a size limit, a
    folder that does not exist or cannot be written): its message, one line,
    names the file and says that any previous file is unchanged."""

    def __init__(self, errno: int | None, message: str) -> None:
        super().__init__(errno, message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[type, tuple[int | None, str]]:
        return type(self), (self.errno, self.message)


def _devnull_device() -> int | None:
    try:
        info = os.stat(os.devnull)
    except OSError:  # pragma: no cover  (a chroot without /dev/null)
        return None
    return info.st_rdev if stat.S_ISCHR(info.st_mode) else None


def _same_file(info: os.stat_result, fd: int) -> bool:
    try:
        other = os.fstat(fd)
    except (OSError, ValueError):
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)


def check_output(path: str | os.PathLike[str], label: str = "output",
                 error: type[Exception] = ValueError) -> os.stat_result | None:
    """Check, without opening it, that ``path`` may be written whole: the
    ``stat`` of the regular file it names (symlinks followed), None where
    there is none yet, or ``error`` with one line naming it by ``label``
    (a directory, a FIFO, a socket, a device other than ``/dev/null``, a
    read-only file, this process's own standard output or error).
    ``/dev/null`` passes (its ``stat``): writing there discards."""
    path = os.fspath(path)
    name = f"{label} {path}"
    if not path:
        raise error(f"{label}: an empty file name")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if path.endswith(("/", os.sep)):  # no file of that name: a folder's name
            raise error(f"{name} names a folder (it ends with '/'): give a file name") from None
        return None  # a new file (or a symlink to one): written where it points
    except OSError as exc:
        raise error(f"{name} cannot be written ({exc.strerror or exc})") from None
    mode = info.st_mode
    if stat.S_ISCHR(mode) and info.st_rdev == _devnull_device():
        return info
    if not stat.S_ISREG(mode):
        raise error(f"{name} is {_kind(mode)}, not a regular file: give a file name (or "
                    f"{os.devnull}, which discards)")
    if any(_same_file(info, fd) for fd in (1, 2)):
        raise error(f"{name} is this command's own standard output or error: give a file "
                    "name")
    if not os.access(path, os.W_OK):
        raise error(f"{name} cannot be written (it is read-only: Permission denied)")
    return info


def _fresh(folder: str, base: str) -> tuple[int, str]:
    """A new empty file in ``folder``, opened for writing: its descriptor and
    path.  Created with ``O_EXCL`` (never an existing file or a symlink)
    and mode 0666, which the umask reduces as for any new file."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_BINARY", 0))
    # Hidden, named after the target; a long name is cut so that the whole
    # stays within the 255 bytes a file name may have.
    stem = base if len(os.fsencode(base)) <= 200 else "fpsim"
    for _ in range(100):
        tmp = os.path.join(folder, f".{stem}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free name for a temporary file in {folder}")  # pragma: no cover


def _sync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (best effort; not on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_output(path: str | os.PathLike[str], label: str = "output",
                  error: type[Exception] = ValueError) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; on a clean exit
    it replaces ``path`` whole (flushed, ``fsync``-ed, renamed onto it).
    On any exception (``KeyboardInterrupt`` included) the fresh file is
    removed and ``path`` left as it was; a failure to write is a
    :class:`WriteError` (an ``OSError``) naming ``path``.  ``path`` is
    checked first by :func:`check_output` (``error`` for what it refuses);
    at ``/dev/null`` the output is written there directly.

    >>> import os, shutil, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with atomic_output(os.path.join(folder, "out.bin")) as f:
    ...     _ = f.write(b"golden")
    >>> os.listdir(folder)
    ['out.bin']
    >>> shutil.rmtree(folder)
    """
    path = os.fspath(path)
    info = check_output(path, label, error)
    if info is not None and not stat.S_ISREG(info.st_mode):  # /dev/null
        with open(os.devnull, "wb") as sink:
            yield sink
        return
    target = os.path.realpath(path)  # a symlink keeps pointing at the new file
    folder, base = os.path.split(target)

    left = f"{path} is unchanged" if info is not None else "nothing was written"

    def failed(exc: OSError) -> WriteError:
        return WriteError(exc.errno, f"cannot write {label} {path} ({exc.strerror or exc}); "
                          f"{left}")

    try:
        fd, tmp = _fresh(folder, base)
    except OSError as exc:
        raise failed(exc) from None
    try:
        try:
            if info is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
            f = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise failed(exc) from None
        raise
    if sys.platform != "win32":
        _sync_folder(folder)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, label: str = "output",
                 error: type[Exception] = ValueError) -> None:
    """Write ``data`` (``str`` as ASCII) as the whole of ``path``, by
    :func:`atomic_output`."""
    with atomic_output(path, label, error) as f:
        f.write(data.encode("ascii") if isinstance(data, str) else data)
