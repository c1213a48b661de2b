"""Packed codes and tiled scale layouts, as devices store them.

**Packing.**  The 4- and 6-bit formats (``e2m1``; ``e3m2``, ``e2m3``) are
stored by devices several codes to a byte: a *bit stream* in which code ``i``
occupies bits ``w*i .. w*i + w - 1`` (``w`` = 4 or 6), cut into bytes.  Two
orders are in use, and ``ORDERS`` names them:

* ``"low-first"``: the stream fills each byte from its least significant
  bit.  FP4: the first code of a pair is the low nibble (bits 3..0) and the
  second the high nibble (bits 7..4), as PyTorch's ``float4_e2m1fn_x2``
  stores them (and the NVFP4/MXFP4 matrix products of ``torch._scaled_mm``
  read them).  FP6: four codes are the 24-bit little-endian word ``c0 | c1
  << 6 | c2 << 12 | c3 << 18`` in three bytes, as AMD's rocRoller reads
  packed FP6.  This is the default.
* ``"high-first"``: the stream fills each byte from its most significant
  bit.  FP4: the first code is the high nibble (older torchao
  ``pack_uint4`` of its MX prototype).  FP6: the big-endian word ``c0 << 18
  | c1 << 12 | c2 << 6 | c3`` in three bytes.

  Each byte below is written from its bit 7 down to its bit 0; ``c1[5:2]``
  are bits 5 to 2 of the second code::

                      byte 0             byte 1             byte 2
      FP4 low-first   c1[3:0] c0[3:0]
      FP4 high-first  c0[3:0] c1[3:0]
      FP6 low-first   c1[1:0] c0[5:0]    c2[3:0] c1[5:2]    c3[5:0] c2[5:4]
      FP6 high-first  c0[5:0] c1[5:4]    c1[3:0] c2[5:2]    c2[1:0] c3[5:0]

``n`` codes take ``ceil(n * w / 8)`` bytes (:func:`packed_size`): an odd
count of FP4 codes leaves the last byte's other half zero, and FP6 counts
that are not multiples of 4 leave the last byte's unused bits zero.  Those
padding bits are written as zero and ignored when read.

**Tiled scale layout.**  cuBLAS, cuDNN and PyTorch/torchao pass the scale
factors of MX (E8M0) and NVFP4 (E4M3) matrix products in a *blocked*
("swizzled") layout rather than row-major; :func:`to_blocked` and
:func:`from_blocked` convert, and ``LAYOUTS`` names the two layouts.
See :func:`to_blocked` for the diagram.

>>> import numpy as np
>>> from fpsim.testing.packing import pack, unpack
>>> pack(np.uint8([0x2, 0xF]), "e2m1").tobytes().hex()   # 1.0, -6.0
'f2'
>>> pack(np.uint8([0x2, 0xF]), "e2m1", order="high-first").tobytes().hex()
'2f'
>>> unpack(np.uint8([0xF2, 0x05]), "e2m1", 3)    # the last half byte is padding
array([ 2, 15,  5], dtype=uint8)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..formats import Format
from ..formats import format as _lookup

__all__ = ["ORDERS", "LAYOUTS", "TILE_ROWS", "TILE_COLS", "PackingError", "packable", "packed_size",
           "pack", "unpack", "blocked_shape", "blocked_size", "blocked_offsets", "to_blocked",
           "from_blocked"]

ORDERS = ("low-first", "high-first")
LAYOUTS = ("row-major", "blocked")
# Code widths that are packed, and how many codes make a whole number of bytes.
_GROUP = {4: (2, 1), 6: (4, 3)}  # width: (codes, bytes)
TILE_ROWS, TILE_COLS = 128, 4    # a tile of the blocked layout, stored as 32 × 16
_SUB = 32                        # rows of a tile's sub-block


class PackingError(ValueError):
    """Codes or bytes that cannot be packed or unpacked as asked."""


def _format(fmt: Format | str) -> Format:
    return fmt if isinstance(fmt, Format) else _lookup(fmt)


def packable(fmt: Format | str) -> bool:
    """Whether ``fmt``'s codes are packed several to a byte (4 and 6 bits)."""
    return _format(fmt).width in _GROUP


def check_order(order: Any, what: str = "order") -> str:
    """``order`` if it names a packing order; else a one-line error
    naming ``what`` (the caller's name for it, e.g. ``"--pack"``)."""
    if order not in ORDERS:
        raise PackingError(f"{what} {order!r}: accepted: {', '.join(ORDERS)}")
    return order


def _width(fmt: Format | str) -> tuple[Format, int]:
    f = _format(fmt)
    if f.width not in _GROUP:
        raise PackingError(f"{f.name} codes are {f.width} bits: packing applies to the 4- and "
                           "6-bit formats (e2m1; e3m2, e2m3), whose codes are otherwise stored "
                           "one to a byte")
    return f, f.width


def packed_size(count: int, fmt: Format | str) -> int:
    """Bytes that ``count`` packed codes of ``fmt`` take: ``ceil(count * w / 8)``.

    >>> packed_size(5, "e2m1"), packed_size(5, "e3m2"), packed_size(4, "e2m3")
    (3, 4, 3)
    """
    _, w = _width(fmt)
    return -(-_count(count) * w // 8)


def _count(count: Any) -> int:
    """A number of codes: an int (numpy's too, not a bool) >= 0."""
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
        raise TypeError(f"count must be a non-negative int, got {type(count).__name__} "
                        f"{count!r}")
    if count < 0:
        raise PackingError(f"count must be a non-negative int, got {count!r}")
    return int(count)


def pack(codes: Any, fmt: Format | str, order: str = "low-first") -> np.ndarray:
    """The codes of ``fmt`` (an integer array of any shape, read in C
    order) packed into bytes: a 1-D ``uint8`` array of
    :func:`packed_size` bytes, the padding bits zero.

    >>> import numpy as np
    >>> pack(np.uint8([1, 2, 3, 4]), "e3m2").tobytes().hex()   # 000001 000010 000011 000100
    '813010'
    >>> pack(np.uint8([1, 2, 3, 4]), "e3m2", order="high-first").tobytes().hex()
    '0420c4'
    >>> pack(np.uint8([0, 0x10]), "e2m1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fpsim.testing.packing.PackingError: codes out of range for e2m1: ...; the first: 0x10 at index 1
    """
    f, w = _width(fmt)
    check_order(order)
    a = np.asarray(codes)
    if a.dtype.kind not in "iu":
        raise PackingError(f"pack takes integer codes, not {a.dtype} values: view them as "
                           "codes first")
    flat = a.reshape(-1)
    bad = (flat < 0) | (flat >> w != 0) if flat.size else np.zeros(0, bool)
    if bad.any():
        i = int(np.argmax(bad))
        raise PackingError(f"codes out of range for {f.name}: accepted 0..0x{(1 << w) - 1:x} "
                           f"({w} bits); the first: {int(flat[i]):#x} at index {i}")
    per, nbytes = _GROUP[w]
    n = flat.size
    groups = -(-n // per)
    padded = np.zeros(groups * per, np.uint32)
    padded[:n] = flat
    padded = padded.reshape(groups, per)
    word = np.zeros(groups, np.uint32)
    for k in range(per):
        shift = w * k if order == "low-first" else w * (per - 1 - k)
        word |= padded[:, k] << np.uint32(shift)
    out = np.empty((groups, nbytes), np.uint8)
    for j in range(nbytes):
        shift = 8 * j if order == "low-first" else 8 * (nbytes - 1 - j)
        out[:, j] = (word >> np.uint32(shift)) & np.uint32(0xFF)
    return out.reshape(-1)[:packed_size(n, f)]


def unpack(data: Any, fmt: Format | str, count: int | None = None,
           order: str = "low-first") -> np.ndarray:
    """The first ``count`` codes of ``fmt`` packed in ``data`` (bytes, or an
    array of 1-byte integers, read in C order), as a 1-D ``uint8`` array.
    ``count`` defaults to as many codes as the bytes hold (an odd count of
    FP4 codes, for instance, must be given); ``data`` must be exactly
    :func:`packed_size` bytes of it, and the padding bits are ignored.

    >>> import numpy as np
    >>> unpack(bytes.fromhex("813010"), "e3m2")
    array([1, 2, 3, 4], dtype=uint8)
    >>> unpack(bytes.fromhex("813010"), "e3m2", 5)
    Traceback (most recent call last):
    ...
    fpsim.testing.packing.PackingError: 5 packed e3m2 codes take 4 bytes, not 3
    """
    f, w = _width(fmt)
    check_order(order)
    raw = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
        else np.asarray(data)
    if raw.dtype.itemsize != 1 or raw.dtype.kind not in "iu":
        raise PackingError(f"unpack takes bytes (an array of 1-byte integers), not {raw.dtype}")
    raw = raw.reshape(-1).view(np.uint8)
    count = raw.size * 8 // w if count is None else _count(count)
    if raw.size != packed_size(count, f):
        raise PackingError(f"{count:,} packed {f.name} codes take {packed_size(count, f):,} "
                           f"bytes, not {raw.size:,}")
    return _unpack_bits(raw, w, count, order)


def _group(width: int) -> tuple[int, int]:
    """(codes, bytes) of the smallest whole group of ``width``-bit codes."""
    return _GROUP[width]


def _unpack_bits(raw: np.ndarray, w: int, count: int, order: str) -> np.ndarray:
    """``count`` codes of ``w`` bits from the uint8 array ``raw`` of
    ``ceil(count * w / 8)`` bytes (unchecked)."""
    per, nbytes = _GROUP[w]
    groups = -(-count // per)
    padded = np.zeros(groups * nbytes, np.uint32)
    padded[:raw.size] = raw
    padded = padded.reshape(groups, nbytes)
    word = np.zeros(groups, np.uint32)
    for j in range(nbytes):
        shift = 8 * j if order == "low-first" else 8 * (nbytes - 1 - j)
        word |= padded[:, j] << np.uint32(shift)
    out = np.empty((groups, per), np.uint8)
    mask = np.uint32((1 << w) - 1)
    for k in range(per):
        shift = w * k if order == "low-first" else w * (per - 1 - k)
        out[:, k] = (word >> np.uint32(shift)) & mask
    return out.reshape(-1)[:count]


# -- the blocked (swizzled) layout of scale factors ----------------------------------------------

def _shape(shape: Any) -> tuple[int, ...]:
    """A logical shape: a sequence of ints (numpy's too, not bools)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"shape must be a sequence of ints (..., rows, cols), got "
                        f"{type(shape).__name__} {shape!r}")
    sizes = tuple(shape)
    for s in sizes:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"shape {sizes!r} holds {type(s).__name__} {s!r}; accepted a "
                            "sequence of ints (..., rows, cols)")
    return tuple(int(s) for s in sizes)


def _matrix(shape: Any) -> tuple[int, int, int]:
    """(batch, rows, cols) of a logical shape (..., rows, cols)."""
    shape = _shape(shape)
    if len(shape) < 2 or any(s < 0 for s in shape):
        raise PackingError(f"the blocked layout is of matrices: a shape (..., rows, cols) of "
                           f"two or more sizes, not {shape}")
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def blocked_shape(shape: Any) -> tuple[int, int]:
    """(rows, cols) of one matrix of logical ``shape`` once padded to whole
    tiles: rows to a multiple of 128, columns to a multiple of 4.

    >>> blocked_shape((300, 7))
    (384, 8)
    """
    _, rows, cols = _matrix(shape)
    return -(-rows // TILE_ROWS) * TILE_ROWS, -(-cols // TILE_COLS) * TILE_COLS


def blocked_size(shape: Any) -> int:
    """Elements the blocked layout of logical ``shape`` (..., rows, cols)
    stores: every matrix padded to whole 128 × 4 tiles (of a 3-D or
    higher shape, the matrices one after another).

    >>> blocked_size((300, 7)), blocked_size((2, 128, 4)), blocked_size((0, 4))
    (3072, 1024, 0)
    """
    batch, _, _ = _matrix(shape)
    r, c = blocked_shape(shape)
    return batch * r * c


def blocked_offsets(index: Any, shape: Any) -> np.ndarray:
    """Where in the blocked layout the elements at flat C-order ``index``
    (an integer array) of logical ``shape`` (..., rows, cols) are stored.

    >>> blocked_offsets([0, 1, 4, 5 * 8 + 2, 5 * 8 + 5], (128, 8)).tolist()
    [0, 1, 512, 82, 593]
    """
    batch, rows, cols = _matrix(shape)
    padded_rows, padded_cols = blocked_shape(shape)
    if batch * padded_rows * padded_cols > np.iinfo(np.int64).max:
        raise PackingError(f"shape {_shape(shape)} in the blocked layout takes more elements "
                           "than an int64 offset can address")
    index = np.asarray(index)
    if index.dtype.kind not in "iu" and not (index.size == 0 and index.dtype.kind == "f"):
        raise TypeError(f"index must hold integers (flat C-order indices), got dtype "
                        f"{index.dtype}")
    total = batch * rows * cols
    if index.size and (index.min() < 0 or int(index.max()) >= total):
        bad = int(index.min()) if index.min() < 0 else int(index.max())
        raise PackingError(f"index {bad} is outside shape {_shape(shape)}: accepted flat "
                           f"indices 0..{total - 1}" if total else
                           f"index {bad}: shape {_shape(shape)} holds no element")
    index = index.astype(np.int64)
    b, rest = np.divmod(index, max(rows * cols, 1))
    r, c = np.divmod(rest, max(cols, 1))
    tile = (r // TILE_ROWS) * (padded_cols // TILE_COLS) + c // TILE_COLS
    within = (r % _SUB) * (TILE_COLS * TILE_ROWS // _SUB) + (r % TILE_ROWS) // _SUB * TILE_COLS \
        + c % TILE_COLS
    return b * (padded_rows * padded_cols) + tile * (TILE_ROWS * TILE_COLS) + within


def to_blocked(a: Any) -> np.ndarray:
    """The matrix ``a`` of shape (rows, cols), or each matrix of a stack
    (..., rows, cols), in the blocked layout of cuBLAS's "1D block scaling
    factors" (the layout torchao's ``to_blocked`` makes): a 1-D array of
    :func:`blocked_size` elements.

    The matrix is padded with zeros to whole tiles of 128 rows × 4 columns
    (rows to a multiple of 128, columns to a multiple of 4).  The tiles are
    stored one after another in row-major order of tiles (all the tiles of
    rows 0..127 first), each in 512 consecutive elements.  A tile's rows
    are taken in four bands of 32; it is stored as 32 lines of 16
    elements, line ``i`` holding row ``i`` of each band in turn::

        the matrix, padded, in tiles (T0, T1, ...: their order in storage)

                          cols 0..3   cols 4..7   cols 8..11
            rows   0..127    T0          T1          T2
            rows 128..255    T3          T4          T5

        one tile: 128 rows x 4 columns, in four bands of 32 rows

            band 0: rows  0..31     band 1: rows 32..63
            band 2: rows 64..95     band 3: rows 96..127

        stored as 32 lines of 16 elements (rN = row N, 4 columns each)

                       elements 0..3  4..7     8..11    12..15
            line  0:   r0             r32      r64      r96
            line  1:   r1             r33      r65      r97
            ...
            line 31:   r31            r63      r95      r127

    So element (r, c) of the matrix is at::

        ((r // 128) * (padded_cols // 4) + c // 4) * 512
            + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4

    (:func:`blocked_offsets`).  For a scale matrix of an M × K operand in
    MXFP8 (blocks of 32 along K) the scale matrix is M × K/32; in NVFP4
    (blocks of 16), M × K/16.

    >>> import numpy as np
    >>> s = np.arange(128 * 4).reshape(128, 4)
    >>> b = to_blocked(s)
    >>> b[:8].tolist(), b[16:20].tolist()
    ([0, 1, 2, 3, 128, 129, 130, 131], [4, 5, 6, 7])
    >>> to_blocked(np.ones((1, 1), np.uint8)).size   # one tile, the rest padding
    512
    """
    a = np.asarray(a)
    batch, rows, cols = _matrix(a.shape)
    pr, pc = blocked_shape(a.shape)
    padded = np.zeros((batch, pr, pc), a.dtype)
    padded[:, :rows, :cols] = a.reshape(batch, rows, cols)
    # (batch, tile row, band, line, tile column, column) -> tiles, lines, bands, columns
    t = padded.reshape(batch, pr // TILE_ROWS, TILE_ROWS // _SUB, _SUB, pc // TILE_COLS,
                       TILE_COLS)
    return np.ascontiguousarray(t.transpose(0, 1, 4, 3, 2, 5)).reshape(-1)


def from_blocked(data: Any, shape: Any) -> np.ndarray:
    """The matrix (or stack of matrices) of logical ``shape`` (..., rows,
    cols) stored in the blocked layout in ``data`` (a 1-D array of
    :func:`blocked_size` elements): the inverse of :func:`to_blocked`, the
    padding dropped.

    >>> import numpy as np
    >>> s = np.arange(300 * 7).reshape(300, 7)
    >>> bool((from_blocked(to_blocked(s), (300, 7)) == s).all())
    True
    """
    shape = _shape(shape)
    batch, rows, cols = _matrix(shape)
    a = np.asarray(data).reshape(-1)
    if a.size != blocked_size(shape):
        pr, pc = blocked_shape(shape)
        raise PackingError(f"shape {shape} in the blocked layout takes {blocked_size(shape):,} "
                           f"elements ({batch} x {pr} x {pc}: rows padded to 128, columns to "
                           f"4), not {a.size:,}")
    pr, pc = blocked_shape(shape)
    t = a.reshape(batch, pr // TILE_ROWS, pc // TILE_COLS, _SUB, TILE_ROWS // _SUB, TILE_COLS)
    padded = t.transpose(0, 1, 4, 3, 2, 5).reshape(batch, pr, pc)
    return np.ascontiguousarray(padded[:, :rows, :cols]).reshape(shape)
