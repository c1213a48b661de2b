"""Tensor dumps on disk: raw binary files and ``.npy`` files.

A raw dump is what ``tensor.numpy().tofile(path)`` or a device's memory dump
writes: the elements' codes back to back, no header, in a stated byte order.
Each element takes the bytes of the narrowest unsigned integer that holds a
code (1 byte for formats of up to 8 bits, FP4 and FP6 included, as ml_dtypes
stores them; 2 for FP16/BF16; 4 for FP32/TF32; 8 for FP64).  Packed FP4 (two
elements per byte) is not read.

``.npy`` files carry their dtype and shape: float dtypes (numpy, ml_dtypes)
are values, integer dtypes are codes.  Both kinds are memory-mapped, so a
comparison streams through files bigger than memory.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import array as _array
from ..array import _common
from ..formats import Format

BYTEORDERS = {"little": "<", "big": ">"}


class DumpError(ValueError):
    """A dump that cannot be read as asked: the message names the file."""


def _dtype(fmt: Format, byteorder: str) -> np.dtype:
    if byteorder not in BYTEORDERS:
        raise DumpError(f"byte order {byteorder!r}: accepted: little, big")
    return _array.code_dtype(fmt).newbyteorder(BYTEORDERS[byteorder])


def read(path: str | os.PathLike[str], fmt: Format | None, byteorder: str = "little",
         shape: tuple[int, ...] | None = None, label: str = "input") -> np.ndarray:
    """The dump at ``path`` as an array (memory-mapped): values for a
    ``.npy`` file of a float dtype, codes otherwise.  Raw dumps need ``fmt``
    and take ``shape`` (default: flat)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DumpError(f"{label} file not found: {path}")
    if os.path.isdir(path):
        raise DumpError(f"{label} is a directory, not a file: {path}")
    if path.endswith(".npy"):
        try:
            a = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise DumpError(f"{label} {path} is not a readable .npy file ({exc})") from None
        if a.dtype.kind == "V" and a.dtype.fields is None and a.dtype.itemsize in (1, 2, 4, 8):
            # ml_dtypes arrays saved with np.save come back as raw bytes: codes.
            a = a.view(f"u{a.dtype.itemsize}")
        if a.dtype.kind in "iu" and fmt is not None:
            width = _array.code_dtype(fmt).itemsize
            if a.dtype.itemsize != width:
                raise DumpError(f"{label} {path} holds {a.dtype.itemsize}-byte codes; "
                                f"{fmt.name} codes take {width} byte{'s' if width > 1 else ''}")
        elif a.dtype.kind not in "iuf" and a.dtype.kind != "V":
            raise DumpError(f"{label} {path} holds {a.dtype} data; accepted: float values "
                            "(numpy, ml_dtypes) or integer codes")
        if shape is not None and a.size != int(np.prod(shape)):
            raise DumpError(f"{label} {path} has {a.size} elements, not the "
                            f"{int(np.prod(shape))} of shape {shape}")
        return a if shape is None else a.reshape(shape)
    if fmt is None:
        raise DumpError(f"{label} {path} is a raw dump: give its format with --fmt")
    dt = _dtype(fmt, byteorder)
    size = os.path.getsize(path)
    if size % dt.itemsize:
        raise DumpError(f"{label} {path} is {size} bytes, not a multiple of {fmt.name}'s "
                        f"{dt.itemsize}-byte elements")
    n = size // dt.itemsize
    if shape is not None and int(np.prod(shape)) != n:
        raise DumpError(f"{label} {path} has {n} {fmt.name} elements, not the "
                        f"{int(np.prod(shape))} of shape {shape}")
    if n == 0:
        return np.zeros(shape or (0,), dt)
    return np.memmap(path, dtype=dt, mode="r", shape=shape or (n,))


def write(path: str | os.PathLike[str], codes: np.ndarray, fmt: Format,
          byteorder: str = "little") -> None:
    """Write codes of ``fmt``: a ``.npy`` file (of ``fmt``'s value dtype
    where there is one, else of codes) or a raw dump in ``byteorder``."""
    path = os.fspath(path)
    codes = np.ascontiguousarray(np.asarray(codes).astype(_array.code_dtype(fmt), copy=False))
    if path.endswith(".npy"):
        # numpy's own float types as values; ml_dtypes types would be saved
        # as anonymous bytes ('|V1'), so those formats are saved as codes.
        vd = _array.value_dtype(fmt)
        native = vd is not None and vd.kind == "f" and vd.type.__module__ == "numpy"
        np.save(path, codes.view(vd) if native else codes, allow_pickle=False)
        return
    data = codes.astype(_dtype(fmt, byteorder), copy=False)
    with open(path, "wb") as out:  # a failed write (a full disk) raises OSError
        out.write(memoryview(data).cast("B"))


def ref(a: np.ndarray, label: str) -> tuple[str, int, str, int]:
    """``(path, byte offset, dtype, element count)`` of a dump read by
    :func:`read`: what a task elsewhere needs to map it again."""
    if a.size == 0:
        return ("", 0, a.dtype.str, 0)
    if not isinstance(a, np.memmap) or a.filename is None or not a.flags.c_contiguous:
        raise DumpError(f"{label} is not a C-ordered file on disk; compare it without "
                        "--scheduler")
    return (a.filename, int(a.offset), a.dtype.str, int(a.size))


def parse_shape(text: str) -> tuple[int, ...]:
    """``"64x128"`` (or ``"64,128"``) as ``(64, 128)``."""
    parts = text.replace(",", "x").split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise DumpError(f"shape {text!r}: accepted: sizes joined by 'x', e.g. 64x128") from None
    if any(s < 0 for s in shape):
        raise DumpError(f"shape {text!r} has a negative size")
    return shape


def codes_of(a: np.ndarray, fmt: Format, label: str) -> Any:
    """A dump's array as codes of ``fmt`` (value arrays must be ``fmt``'s dtype)."""
    if a.dtype.kind in "iu":
        _common.check_codes(a, fmt, label)
    elif a.dtype.newbyteorder("=") != _array.value_dtype(fmt):
        raise DumpError(f"{label} holds {a.dtype} values, not {fmt.name} "
                        f"({_array.value_dtype(fmt)}): convert it, or pass the format it holds "
                        "with --fmt")
    return _common.raw_codes(a, fmt, check=False)
