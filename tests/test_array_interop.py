"""The array engine reads anything numpy can view: objects with
``__array__`` and objects that only speak DLPack, as well as PyTorch CPU
tensors where PyTorch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import fpsim
from fpsim import array


class ArrayLike:
    """Exposes only ``__array__`` (as PyTorch CPU tensors and pandas do)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class DLPackOnly:
    """Exposes only the DLPack protocol (as JAX and CuPy arrays do)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


VALUES = np.array([1.0, 1e-5, 70000.0, -0.0, np.nan], np.float32)


@pytest.mark.parametrize("wrap", [ArrayLike, DLPackOnly], ids=lambda w: w.__name__)
def test_encode_reads_array_protocols(wrap):
    want = array.encode(VALUES, fpsim.FP16)
    np.testing.assert_array_equal(array.encode(wrap(VALUES), fpsim.FP16), want)


@pytest.mark.parametrize("wrap", [ArrayLike, DLPackOnly], ids=lambda w: w.__name__)
def test_arithmetic_reads_array_protocols(wrap):
    h = array.round(VALUES, fpsim.FP16)
    want = array.mul(h, h)
    got = array.mul(wrap(h), wrap(h))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_dlpack_codes_with_fmt():
    codes = np.array([0x3C00, 0x0001, 0x7C01], np.uint16)
    got = array.add(DLPackOnly(codes), DLPackOnly(codes), fmt="fp16")
    np.testing.assert_array_equal(got, array.add(codes, codes, fmt="fp16"))


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0**-24, 65504.0], dtype=torch.float16)
    got = array.add(t, t)
    assert got.dtype == np.float16
    assert got.tolist() == [2.0, 2.0**-23, float("inf")]
    bits = torch.tensor([1.5, 3.0], dtype=torch.bfloat16).view(torch.int16).numpy()
    assert array.decode(array.mul(bits.view(np.uint16), bits.view(np.uint16), fmt="bf16"),
                        "bf16").tolist() == [2.25, 9.0]


@pytest.mark.parametrize("shape, strides, axis", [
    ((4, 8), (8, 1), 1),      # a C-ordered (M, K/2) tensor: pairs along K
    ((8, 4), (1, 8), 0),      # b.t() of an (N, K/2) tensor: pairs along K, axis 0
    ((32, 1), (1, 32), 0),    # b.t() of a (1, K/2) tensor (N = 1: the GEMV case)
    ((32, 1), (1, 1), 1),     # a C-ordered (M, 1) tensor: the last axis
    ((1, 32), (32, 1), 1),    # a (1, K/2) row
    ((4, 4), (16, 2), 1),     # every other byte of a row: the smallest stride
])
def test_packed_fp4_pairs_run_along_the_unit_stride_axis(shape, strides, axis):
    """torch's float4_e2m1fn_x2 bytes are read as the tensor lays them out
    (torch keeps the stride of a length-1 axis, and so does ``.numpy()``):
    the two codes of a byte run along the axis of stride one byte."""
    from fpsim.array._frameworks import _unpack_fp4

    buf = np.arange(128, dtype=np.uint8)
    a = np.lib.stride_tricks.as_strided(buf, shape, strides)
    got = _unpack_fp4(a).view(np.uint8)
    lo, hi = a & 0xF, a >> 4
    want = np.stack([lo, hi], axis=axis + 1).reshape(
        tuple(2 * n if i == axis else n for i, n in enumerate(shape)))
    assert got.shape == want.shape and (got == want).all()
