"""Tensor dumps on disk: raw binary files and ``.npy`` files.

A raw dump is what ``tensor.numpy().tofile(path)`` or a device's memory dump
writes: the elements' codes back to back, no header, in a stated byte order.
Each element takes the bytes of the narrowest unsigned integer that holds a
code (1 byte for formats of up to 8 bits, FP4 and FP6 included, as ml_dtypes
stores them; 2 for FP16/BF16; 4 for FP32/TF32; 8 for FP64).

A *packed* dump holds the codes of a 4- or 6-bit format several to a byte
(``pack="low-first"`` or ``"high-first"``: :mod:`fpsim.testing.packing`); a
*blocked* dump holds a matrix of 8-bit scale codes (E8M0, E4M3) in the tiled
layout of cuBLAS (``layout="blocked"``), which needs the matrix's logical
shape.  Either is read element by element in the logical C order, so a
comparison reports an element at its logical index, and either may be a raw
file or the bytes of a ``.npy`` file of 1-byte integers.

``.npy`` files carry their dtype and shape: float dtypes (numpy, ml_dtypes)
are values, integer dtypes are codes.

:func:`read` opens a dump and returns a :class:`Dump`: where its data lies,
not the data.  A comparison reads it chunk by chunk (so files bigger than
memory stream through), in this process or in a task elsewhere (a
:class:`Dump` pickles).  Dumps are read as hostile input
(:mod:`fpsim._files`): only regular files, with explicit reads rather than a
memory map, and a file that changes while it is read is reported, never
compared.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _files
from .. import array as _array
from ..array import engine
from ..formats import Format
from . import packing

BYTEORDERS = {"little": "<", "big": ">"}
# numpy's limits on an array: dimensions, and bytes counting the non-zero sizes only.
MAX_DIMS = 64
MAX_BYTES = (1 << 63) - 1
# A Fortran-ordered .npy file is read in C order, in blocks of elements whose
# disk positions are computed together (index arrays of at most 64 dimensions
# times this many), each read covering at most GATHER_SPAN elements around
# the ones wanted: bounded memory, few reads.
GATHER_BLOCK = 1 << 16
GATHER_SPAN = 1 << 20


class DumpError(ValueError):
    """A dump that cannot be read as asked: the message names the file."""


def _dtype(fmt: Format, byteorder: str) -> np.dtype:
    if byteorder not in BYTEORDERS:
        raise DumpError(f"byte order {byteorder!r}: accepted: little, big")
    return _array.code_dtype(fmt).newbyteorder(BYTEORDERS[byteorder])


@dataclass(frozen=True)
class Dump:
    """A dump's elements on disk: ``shape`` elements of ``dtype`` from byte
    ``offset`` of ``path``, stored in C order (``fortran``: Fortran order)
    as ``stored`` (of which ``shape`` is a C-order reshape).  ``stamp`` is
    the file's ``(device, inode, size, mtime_ns)`` when it was opened.

    ``pack``: the codes, ``bits`` wide, are packed in that order
    (:mod:`fpsim.testing.packing`), ``stored`` then being their count;
    ``tiles``: the logical shape ``(..., rows, cols)`` of a blocked scale
    layout, ``stored`` then being the elements the file holds, padding
    included."""

    path: str
    label: str                 # how messages name it, with the path: "ACTUAL"
    offset: int
    dtype: np.dtype
    stored: tuple[int, ...]
    fortran: bool
    shape: tuple[int, ...]
    stamp: tuple[int, int, int, int]
    pack: str | None = None
    bits: int = 0
    tiles: tuple[int, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.label} {self.path}"

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def reshape(self, *shape: Any) -> Dump:
        """The same elements in C order as ``shape`` (one size may be -1)."""
        dims = list(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape)
        if dims.count(-1) == 1:
            rest = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = self.size // rest if rest else 0
        if math.prod(dims) != self.size or any(d < 0 for d in dims):
            raise ValueError(f"cannot reshape {self.name} of {self.size} elements as {shape}")
        return dataclasses.replace(self, shape=tuple(dims))

    def read(self, start: int, stop: int, scratch: np.ndarray | None = None) -> np.ndarray:
        """Elements ``start:stop`` of the dump in flat C order: in
        ``scratch`` (bytes, uint8) when it is large enough, else in new
        memory."""
        fd = self._reopen()
        try:
            if self.pack is not None:
                return self._unpacked(fd, start, stop)
            if self.tiles is not None:
                return self._gather(fd, start, stop, self._blocked_positions)
            if not self.fortran or len(self.stored) < 2:
                return self._span(fd, start, stop, scratch)
            return self._gather(fd, start, stop, self._fortran_positions)
        finally:
            os.close(fd)

    def _fortran_positions(self, index: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(np.unravel_index(index, self.stored), self.stored,
                                    order="F")

    def _blocked_positions(self, index: np.ndarray) -> np.ndarray:
        return packing.blocked_offsets(index, self.tiles)

    def _gather(self, fd: int, start: int, stop: int, positions: Any) -> np.ndarray:
        """Elements ``start:stop`` in C order, stored at ``positions(index)``
        on disk: read in blocks of GATHER_BLOCK elements, each a window of
        at most GATHER_SPAN elements at a time in disk order."""
        out = np.empty(stop - start, self.dtype)
        for first in range(start, stop, GATHER_BLOCK):
            last = min(first + GATHER_BLOCK, stop)
            pos = positions(np.arange(first, last))
            order = np.argsort(pos, kind="stable")
            pos = pos[order]
            block = out[first - start:last - start]
            i = 0
            while i < pos.size:
                j = int(np.searchsorted(pos, pos[i] + GATHER_SPAN))
                lo = int(pos[i])
                block[order[i:j]] = self._span(fd, lo, int(pos[j - 1]) + 1)[pos[i:j] - lo]
                i = j
        return out

    def _unpacked(self, fd: int, start: int, stop: int) -> np.ndarray:
        """Codes ``start:stop`` of a packed dump: the whole groups of bytes
        that hold them are read and unpacked."""
        per, nbytes = packing._group(self.bits)
        first, last = start // per, -(-stop // per)
        count = min(last * per, self.stored[0]) - first * per
        raw = self._span(fd, first * nbytes, first * nbytes + -(-count * self.bits // 8))
        codes = packing._unpack_bits(raw, self.bits, count, self.pack)  # type: ignore[arg-type]
        return codes[start - first * per:stop - first * per]

    def load(self) -> np.ndarray:
        """The whole dump in memory, as an array of ``shape``."""
        if self.size == 0:
            return np.zeros(self.shape, self.dtype)
        if self.pack is not None or self.tiles is not None:
            return self.read(0, self.size).reshape(self.shape)
        fd = self._reopen()
        try:
            flat = self._span(fd, 0, self.size)
        finally:
            os.close(fd)
        a = flat.reshape(self.stored[::-1]).T if self.fortran else flat.reshape(self.stored)
        return a.reshape(self.shape)

    def check(self) -> None:
        """Raise :class:`DumpError` unless the file is the one opened, as it
        was (same file, size and modification time): call it after the last
        read, so that a file that changed is reported, not compared."""
        try:
            info = os.stat(self.path)
        except OSError:
            raise DumpError(f"{self.name} changed while it was read (it is gone)") from None
        self._unchanged(info, replaced=(info.st_dev, info.st_ino) != self.stamp[:2])

    def _reopen(self) -> int:
        # By path: a task on another machine reads the file there.  The
        # device and inode can differ between machines, so they are checked
        # at the end (:meth:`check`), where the dump was opened.
        if not os.path.exists(self.path):
            raise DumpError(f"{self.name} changed while it was read (it is gone)")
        fd, info = _files.open_regular(self.path, self.label, DumpError)
        try:
            self._unchanged(info)
        except DumpError:
            os.close(fd)
            raise
        return fd

    def _unchanged(self, info: os.stat_result, replaced: bool = False) -> None:
        was = self.stamp[2]
        if info.st_size != was:
            why = f"it was {was:,} bytes, now {info.st_size:,}"
        elif replaced:
            why = "it was replaced by another file"
        elif info.st_mtime_ns != self.stamp[3]:
            why = "it was modified"
        else:
            return
        raise DumpError(f"{self.name} changed while it was read ({why})")

    def _span(self, fd: int, start: int, stop: int,
              scratch: np.ndarray | None = None) -> np.ndarray:
        """Elements ``start:stop`` as stored on disk."""
        want = (stop - start) * self.dtype.itemsize
        if scratch is not None and scratch.size >= want:
            out = scratch[:want].view(self.dtype)
        else:
            out = np.empty(stop - start, self.dtype)
        got = _files.read_into(fd, memoryview(out).cast("B"),
                               self.offset + start * self.dtype.itemsize) if want else 0
        if got < want:  # the file shrank since it was opened
            self._unchanged(os.fstat(fd))
            raise DumpError(f"{self.name} changed while it was read (a read at byte "
                            f"{self.offset + start * self.dtype.itemsize + got:,} found its end)")
        return out


def check_shape(shape: tuple[int, ...], what: str, itemsize: int = 8) -> None:
    """A shape numpy can hold: at most 64 dimensions, and elements of
    ``itemsize`` bytes in fewer than 2**63 bytes counting only the non-zero
    sizes (numpy's own limits; an empty array of shape (2**40, 2**40, 0) is
    refused too)."""
    if len(shape) > MAX_DIMS:
        raise DumpError(f"{what} has {len(shape)} dimensions; at most {MAX_DIMS}")
    if math.prod(s for s in shape if s) * itemsize > MAX_BYTES:
        raise DumpError(f"{what} is larger than any array can be (its non-zero sizes times "
                        f"{itemsize} bytes must be below 2**63)")


def read(path: str | os.PathLike[str], fmt: Format | None, byteorder: str = "little",
         shape: tuple[int, ...] | None = None, label: str = "input", pack: str | None = None,
         layout: str = "row-major") -> Dump:
    """The dump at ``path`` (a regular file): values for a ``.npy`` file of
    a float dtype, codes otherwise.  Raw dumps need ``fmt`` and take
    ``shape`` (default: flat).  ``pack`` (``"low-first"``, ``"high-first"``)
    reads packed codes of a 4- or 6-bit format, ``layout="blocked"`` a
    matrix of 8-bit codes in the blocked layout of logical ``shape``
    (:mod:`fpsim.testing.packing`).  Only the header is read here."""
    path = os.fspath(path)
    name = f"{label} {path}"
    if pack is not None:
        packing.check_order(pack, "pack")
    if layout not in packing.LAYOUTS:
        raise DumpError(f"layout {layout!r}: accepted: {', '.join(packing.LAYOUTS)}")
    tiled = layout == "blocked"
    if pack is not None or tiled:
        _check_packing(fmt, pack, layout, shape, name)
    fd, info = _files.open_regular(path, label, DumpError)
    try:
        if path.endswith(".npy"):
            offset, dt, stored, fortran = _npy_header(fd, name)
            if dt.kind == "V":
                dt = _raw_codes(dt, fmt, name)
            if dt.kind in "iu" and fmt is not None:
                width = _array.code_dtype(fmt).itemsize
                if dt.itemsize != width:
                    raise DumpError(f"{name} holds {dt.itemsize}-byte codes; {fmt.name} codes "
                                    f"take {width} byte{'s' if width > 1 else ''}")
            n = math.prod(stored)
            unit = "elements"
            needed = n * dt.itemsize
            if info.st_size - offset < needed:
                raise DumpError(f"{name}: its header promises {needed:,} bytes of data (shape "
                                f"{stored}, {dt}), the file holds {info.st_size - offset:,} "
                                "after the header")
            if (pack is not None or tiled) and (dt.kind not in "iu" or dt.itemsize != 1):
                raise DumpError(f"{name} holds {dt} data; a {'packed' if pack else 'blocked'} "
                                "dump is bytes: accepted: a .npy file of uint8 (or int8)")
            if (pack is not None or tiled) and fortran and len(stored) > 1:
                raise DumpError(f"{name} is Fortran-ordered; a packed or blocked dump is a "
                                "stream of bytes: save it in C order")
        else:
            if fmt is None:
                raise DumpError(f"{name} is a raw dump: give its format with --fmt")
            dt = _dtype(fmt, byteorder)
            if info.st_size % dt.itemsize:
                raise DumpError(f"{name} is {info.st_size} bytes, not a multiple of "
                                f"{fmt.name}'s {dt.itemsize}-byte elements")
            offset, fortran = 0, False
            n = info.st_size // dt.itemsize
            unit = f"{fmt.name} elements"
            stored = (n,)
    finally:
        os.close(fd)
    stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if shape is not None:
        check_shape(shape, f"shape {shape}")
    if pack is not None:
        assert fmt is not None  # checked by _check_packing
        dt = np.dtype(np.uint8)
        count = n * 8 // fmt.width if shape is None else math.prod(shape)
        need = packing.packed_size(count, fmt)
        if n != need:
            raise DumpError(f"{name} holds {n:,} bytes; {count:,} {fmt.name} codes (shape "
                            f"{_text(shape)}) packed {fmt.width} bits each take {need:,}")
        return Dump(path, label, offset, dt, (count,), False,
                    (count,) if shape is None else tuple(shape), stamp, pack, fmt.width)
    if tiled:
        assert shape is not None  # checked by _check_packing
        need = packing.blocked_size(shape)
        if n != need:
            rows, cols = packing.blocked_shape(shape)
            mats = math.prod(shape[:-2])
            raise DumpError(f"{name} holds {n:,} {unit}; shape {_text(shape)} in the blocked "
                            f"layout takes {need:,} ({f'{mats} x ' if len(shape) > 2 else ''}"
                            f"{rows} x {cols}: rows padded to a multiple of 128, columns to 4)")
        return Dump(path, label, offset, np.dtype(np.uint8), (need,), False, tuple(shape),
                    stamp, tiles=tuple(shape))
    if shape is not None and math.prod(shape) != n:
        raise DumpError(f"{name} has {n} {unit}, not the {math.prod(shape)} of shape "
                        f"{shape}")
    return Dump(path, label, offset, dt, stored, fortran,
                stored if shape is None else tuple(shape), stamp)


# A format of each width, for the message on untyped codes: ml_dtypes' types
# that np.save stores as raw bytes (dtype V1, V2).
_EXAMPLE_FORMATS = {1: "e4m3", 2: "bf16", 4: "fp32", 8: "fp64"}


def _raw_codes(dt: np.dtype, fmt: Format | None, name: str) -> np.dtype:
    """The unsigned dtype of a .npy file's raw ``V<n>`` elements: np.save
    stores an ml_dtypes array (bfloat16, float8_*) so, as bytes without
    their type, which ``fmt`` names (its codes must be ``n`` bytes wide)."""
    if fmt is None:
        raise DumpError(f"{name} holds V{dt.itemsize} data: {dt.itemsize}-byte codes without "
                        "their type, most likely an ml_dtypes array (bfloat16, float8_*) that "
                        "np.save wrote: give their format with --fmt (e.g. --fmt "
                        f"{_EXAMPLE_FORMATS[dt.itemsize]})")
    return np.dtype(f"u{dt.itemsize}")


def _text(shape: tuple[int, ...] | None) -> str:
    return "flat" if shape is None else "x".join(map(str, shape))


def _check_packing(fmt: Format | None, pack: str | None, layout: str,
                   shape: tuple[int, ...] | None, name: str, hint: str = "give --shape"
                   ) -> None:
    """Packing and the blocked layout apply to some formats and shapes only."""
    what = f"packed in {pack} order" if pack is not None else "in the blocked layout"
    if fmt is None:
        raise DumpError(f"{name}: codes {what} need their format: give --fmt")
    if pack is not None and not packing.packable(fmt):
        raise DumpError(f"{name}: {fmt.name} codes are {fmt.width} bits; packing applies to "
                        "the 4- and 6-bit formats (e2m1, e3m2, e2m3)")
    if layout == "blocked":
        if fmt.width != 8 or pack is not None:
            raise DumpError(f"{name}: {fmt.name} codes are {fmt.width} bits; the blocked layout "
                            "is of 8-bit scale codes, one a byte (e8m0, e4m3)")
        if shape is None or len(shape) < 2:
            raise DumpError(f"{name}: the blocked layout needs the logical shape of the scale "
                            f"matrix, rows x cols (e.g. 300x7): {hint}")


def _npy_header(fd: int, name: str) -> tuple[int, np.dtype, tuple[int, ...], bool]:
    """``(data offset, dtype, shape, fortran_order)`` from a .npy header
    (numpy bounds the header's size)."""
    fmt = np.lib.format
    f = io.FileIO(fd, closefd=False)
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            stored, fortran, dt = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            stored, fortran, dt = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f".npy format version {version[0]}.{version[1]}; accepted: 1.0, "
                             "2.0")
    except (ValueError, OSError, SyntaxError, TypeError) as exc:
        raise DumpError(f"{name} is not a readable .npy file ({exc})") from None
    if dt.hasobject:
        raise DumpError(f"{name} holds Python objects; accepted: float values (numpy, "
                        "ml_dtypes) or integer codes")
    # Raw bytes (V1, V2, ...) are how np.save stores an ml_dtypes array: codes,
    # of the format read() is given.
    raw = dt.kind == "V" and dt.fields is None and dt.subdtype is None \
        and dt.itemsize in (1, 2, 4, 8)
    if not raw and (dt.kind not in "iuf" or dt.subdtype is not None):
        raise DumpError(f"{name} holds {dt} data; accepted: float values (numpy, ml_dtypes) "
                        "or integer codes")
    stored = tuple(int(s) for s in stored)
    check_shape(stored, f"{name}'s shape {stored}", dt.itemsize)
    return f.tell(), dt, stored, bool(fortran)


def write(path: str | os.PathLike[str], codes: np.ndarray, fmt: Format,
          byteorder: str = "little", pack: str | None = None, layout: str = "row-major") -> None:
    """Write codes of ``fmt``: a ``.npy`` file (of ``fmt``'s value dtype
    where there is one, else of codes) or a raw dump in ``byteorder``.
    ``pack`` writes the codes of a 4- or 6-bit format packed in that order,
    ``layout="blocked"`` a matrix of 8-bit codes in the blocked layout
    (:mod:`fpsim.testing.packing`): raw bytes, or a ``.npy`` file of uint8.
    The file appears whole or not at all (:func:`_save`)."""
    path = os.fspath(path)
    codes = np.ascontiguousarray(np.asarray(codes).astype(_array.code_dtype(fmt), copy=False))
    if pack is not None or layout != "row-major":
        if pack is not None:
            packing.check_order(pack, "pack")
        if layout not in packing.LAYOUTS:
            raise DumpError(f"layout {layout!r}: accepted: {', '.join(packing.LAYOUTS)}")
        _check_packing(fmt, pack, layout, codes.shape, f"output {path}",
                       f"the output's shape is {_text(codes.shape) or 'scalar'}")
        if pack is not None:
            data = packing.pack(codes, fmt, pack)
            w = fmt.width
            if codes.ndim and codes.shape[-1] * w % 8 == 0:  # rows of whole bytes, as torch keeps
                data = data.reshape(codes.shape[:-1] + (codes.shape[-1] * w // 8,))
        else:
            data = packing.to_blocked(codes)
        _save(path, data, path.endswith(".npy"))
        return
    if path.endswith(".npy"):
        # numpy's own float types as values; ml_dtypes types would be saved
        # as anonymous bytes ('|V1'), so those formats are saved as codes.
        vd = _array.value_dtype(fmt)
        native = vd is not None and vd.kind == "f" and vd.type.__module__ == "numpy"
        _save(path, codes.view(vd) if native else codes, True)
        return
    _save(path, codes.astype(_dtype(fmt, byteorder), copy=False), False)


def _save(path: str, data: np.ndarray, npy: bool) -> None:
    """``data`` as the whole of ``path``, a ``.npy`` file or raw bytes,
    written beside it and renamed onto it (:func:`fpsim._files.atomic_output`):
    a failed write (a full disk) is an ``OSError`` and leaves any previous
    file as it was; a directory, FIFO or device at ``path`` is a
    :class:`DumpError`."""
    with _files.atomic_output(path, "output", DumpError) as out:
        if npy:
            np.save(out, data, allow_pickle=False)
        else:
            # flat: a byte view of an empty array of several dimensions (0×0) is refused
            out.write(memoryview(data.reshape(-1)).cast("B"))


def parse_shape(text: str) -> tuple[int, ...]:
    """``"64x128"`` (or ``"64,128"``) as ``(64, 128)``."""
    parts = text.replace(",", "x").split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise DumpError(f"shape {text!r}: accepted: sizes joined by 'x', e.g. 64x128") from None
    if any(s < 0 for s in shape):
        raise DumpError(f"shape {text!r} has a negative size")
    check_shape(shape, f"shape {text!r}")
    return shape


def codes_of(a: np.ndarray, fmt: Format, label: str) -> Any:
    """A dump's array as codes of ``fmt`` (value arrays must be ``fmt``'s dtype)."""
    if a.dtype.kind in "iu":
        engine.check_codes(a, fmt, label)
    else:
        own = _array.value_dtype(fmt)  # (None, which float64 equals, where fmt has no dtype)
        if own is None or a.dtype.newbyteorder("=") != own:
            dtype = f" ({own})" if own is not None else ", which has no dtype: pass its codes"
            raise DumpError(f"{label} holds {a.dtype} values, not {fmt.name}{dtype}: convert "
                            "it, or pass the format it holds with --fmt")
    return engine.raw_codes(a, fmt, check=False)
