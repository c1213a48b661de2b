"""Arrays of PyTorch, JAX and CuPy: read as numpy arrays of the same values
(their bfloat16, float8, float4 and E8M0 types included), and results given
back as the framework's arrays on the caller's device.

fpsim never imports a framework: an object is recognised by its class (a
class named ``Tensor`` of module ``torch``, ``Array``/``ArrayImpl`` of
``jax``/``jaxlib``, ``ndarray`` of ``cupy``), and the framework's module is
taken from :data:`sys.modules`, where the user's own import put it.

The mappings are data: :data:`TORCH_DTYPES` (a torch dtype's name, the numpy
or ml_dtypes dtype of the same values, and how many elements one torch
element holds) and :func:`dtype_table`, from which the documentation's
table is generated.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

# torch dtype name -> (numpy or ml_dtypes dtype name, elements per torch element).
# float4_e2m1fn_x2 holds two E2M1 codes per byte, the first in the low nibble
# (bits 3..0), as torch._scaled_mm hands NVFP4/MXFP4 operands to cuBLAS: a
# byte's two codes are neighbours along the axis its bytes run along in
# memory, so a contiguous tensor of shape (..., n) is read as (..., 2n)
# float4_e2m1fn elements, and a transposed one (b.t() of a (N, K/2) tensor,
# as _scaled_mm takes B) as (K, N).
TORCH_DTYPES: dict[str, tuple[str, int]] = {
    "float64": ("float64", 1), "float32": ("float32", 1), "float16": ("float16", 1),
    "bfloat16": ("bfloat16", 1), "float8_e4m3fn": ("float8_e4m3fn", 1),
    "float8_e5m2": ("float8_e5m2", 1), "float8_e4m3fnuz": ("float8_e4m3fnuz", 1),
    "float8_e5m2fnuz": ("float8_e5m2fnuz", 1), "float8_e8m0fnu": ("float8_e8m0fnu", 1),
    "float4_e2m1fn_x2": ("float4_e2m1fn", 2),
    "bool": ("bool", 1), "uint8": ("uint8", 1), "int8": ("int8", 1), "uint16": ("uint16", 1),
    "int16": ("int16", 1), "uint32": ("uint32", 1), "int32": ("int32", 1),
    "uint64": ("uint64", 1), "int64": ("int64", 1),
}
# The value types that numpy itself lacks: read through integers of their width.
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
              "float8_e8m0fnu", "float4_e2m1fn", "float6_e3m2fn", "float6_e2m3fn", "float8_e3m4",
              "float8_e4m3", "float8_e4m3b11fnuz")
# JAX's dtypes are numpy's and ml_dtypes' own: these are the ones its CPU
# backend holds (jax 0.10: float6 arrays fail at device_put).
JAX_DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
              "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
              "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz")
# CuPy holds numpy's own dtypes.
CUPY_DTYPES = ("float64", "float32", "float16")


def framework_of(x: Any) -> str | None:
    """``"torch"``, ``"jax"`` or ``"cupy"`` for an array of that framework
    (subclasses included), else None; imports nothing."""
    for cls in type(x).__mro__:
        root = (getattr(cls, "__module__", None) or "").split(".")[0]
        name = cls.__name__
        if root == "torch" and name == "Tensor":
            return "torch"
        if root in ("jax", "jaxlib") and name in ("Array", "ArrayImpl"):
            return "jax"
        if root == "cupy" and name == "ndarray":
            return "cupy"
    return None


def _np_dtype(name: str) -> np.dtype:
    if name in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _unpack_fp4(a: np.ndarray) -> np.ndarray:
    """Bytes of two E2M1 codes (low nibble first) as float4_e2m1fn elements,
    the axis the bytes run along in memory doubled: the last axis whose
    stride is one byte (an axis of length 1 included: torch keeps its
    stride, so ``b.t()`` of a ``(1, K/2)`` tensor is read as ``(K, 1)``,
    the GEMV case), else the axis of the smallest stride among those longer
    than 1 (the later one on a tie).  A 0-d pair becomes 2 elements."""
    a = np.atleast_1d(a)
    axis = a.ndim - 1
    unit = [i for i in range(a.ndim) if abs(a.strides[i]) == 1]
    if unit:
        axis = unit[-1]
    else:
        longer = [i for i in range(a.ndim) if a.shape[i] > 1]
        if longer:
            axis = min(reversed(longer), key=lambda i: abs(a.strides[i]))
    b = np.moveaxis(a, axis, -1)
    out = np.empty(b.shape[:-1] + (2 * b.shape[-1],), np.uint8)
    out[..., 0::2] = b & 0xF
    out[..., 1::2] = b >> 4
    return np.moveaxis(out, -1, axis).view(_np_dtype("float4_e2m1fn"))


def _pack_fp4(a: np.ndarray) -> np.ndarray:
    codes = a.view(np.uint8)
    if codes.ndim == 0 or codes.shape[-1] % 2:
        raise ValueError(f"float4_e2m1fn results of shape {a.shape} cannot become "
                         "torch.float4_e2m1fn_x2 (two codes a byte along the last axis): the "
                         "last axis must have an even length; pass codes=True for uint8 codes")
    return (codes[..., 0::2] & 0xF) | (codes[..., 1::2] << 4)


# The layouts read: strided as it is, the others made dense (to_dense()).
# Nested tensors (torch.jagged, or strided with is_nested) are refused: their
# components differ in shape, so no one array holds them.
TORCH_LAYOUTS = ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                 "sparse_bsc", "_mkldnn")


def _no_values(where: str = "") -> TypeError:
    return TypeError(f"{where}a tensor on the meta device has no values: accepted tensors on a "
                     "device with data (cpu, cuda, ...)")


def from_torch(t: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array: any device but ``meta``
    (copied to the host), strides kept, autograd and lazy
    negation/conjugation resolved, sparse layouts made dense (the layouts of
    :data:`TORCH_LAYOUTS`; nested tensors are refused)."""
    torch = sys.modules["torch"]
    layout = str(t.layout).removeprefix("torch.")
    nested = bool(getattr(t, "is_nested", False))
    if nested or layout not in TORCH_LAYOUTS:
        what = (f"torch nested tensors (layout torch.{layout}) are not accepted: their "
                "components differ in shape, so no one array holds them" if nested else
                f"torch.{layout} tensors are not accepted")
        hint = "; pass t.to_padded_tensor(value), or each of t.unbind()" if nested else ""
        raise TypeError(f"{what}; accepted layouts: "
                        + ", ".join(f"torch.{k}" for k in TORCH_LAYOUTS)
                        + f" (all but strided made dense){hint}")
    name = str(t.dtype).removeprefix("torch.")
    if name not in TORCH_DTYPES:
        raise TypeError(f"torch.{name} tensors are not accepted: accepted dtypes are "
                        + ", ".join(f"torch.{k}" for k in TORCH_DTYPES))
    if t.device.type == "meta":
        raise _no_values()
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_neg():
        t = t.resolve_neg()
    if t.device.type != "cpu":
        t = t.cpu()
    np_name, per_element = TORCH_DTYPES[name]
    if np_name in _ML_DTYPES:
        # torch.Tensor.numpy() refuses these dtypes: read the same bytes as
        # unsigned integers of their width, then view them as ml_dtypes'.
        ints = getattr(torch, f"uint{8 * t.element_size()}")
        a = t.view(ints).numpy()
        if per_element == 2:
            return _unpack_fp4(a)
        return a.view(_np_dtype(np_name))
    return t.numpy()


def from_framework(x: Any, framework: str) -> np.ndarray:
    """The numpy array of a framework's array (see :func:`framework_of`)."""
    if framework == "torch":
        return from_torch(x)
    if framework == "cupy":
        return x.get()        # CuPy refuses an implicit copy to the host
    return np.asarray(x)      # JAX: its dtypes are ml_dtypes'; copied from any device


def dtype_table() -> list[tuple[str, str, str, str, str]]:
    """Rows (numpy/ml_dtypes dtype, fpsim format, torch dtype, JAX dtype,
    CuPy dtype): the framework dtype of each value dtype that fpsim reads,
    "" where a framework has none.  The docs' table is this.

    >>> [r for r in dtype_table() if r[0] == "float4_e2m1fn"]
    [('float4_e2m1fn', 'e2m1', 'torch.float4_e2m1fn_x2 (two per byte)', 'jnp.float4_e2m1fn', '')]
    """
    from .engine import VALUE_DTYPE_NAMES, format_of_dtype

    torch_of = {v[0]: (f"torch.{k}" + (" (two per byte)" if v[1] == 2 else ""))
                for k, v in TORCH_DTYPES.items()}
    rows = []
    for name in VALUE_DTYPE_NAMES:
        fmt = format_of_dtype(_np_dtype(name))
        rows.append((name, fmt.name if fmt is not None else "",
                     torch_of.get(name, ""), f"jnp.{name}" if name in JAX_DTYPES else "",
                     f"cupy.{name}" if name in CUPY_DTYPES else ""))
    return rows


def to_framework(a: np.ndarray, like: Any, framework: str) -> Any:
    """A numpy array as ``like``'s framework's array on ``like``'s device."""
    if framework == "torch":
        return _to_torch(a, like)
    if framework == "jax":
        return _to_jax(a, like)
    return _to_cupy(a, like)


def _to_torch(a: np.ndarray, like: Any) -> Any:
    torch = sys.modules["torch"]
    if like.device.type == "meta":  # a result there would hold no values
        raise _no_values("like(): the target tensor is on the meta device, where no result "
                         "would hold values; ")
    name = a.dtype.name
    target = [k for k, v in TORCH_DTYPES.items() if v[0] == name]
    if not target:
        raise TypeError(f"torch has no dtype for {name} results: torch holds "
                        + ", ".join(sorted({v[0] for v in TORCH_DTYPES.values()}))
                        + "; pass codes=True for the integer codes")
    if target[0] == "float4_e2m1fn_x2":
        a = _pack_fp4(a)
    a = np.ascontiguousarray(a)  # torch.from_numpy takes no negative strides
    if name in _ML_DTYPES:
        t = torch.from_numpy(a.view(f"u{a.dtype.itemsize}")).view(getattr(torch, target[0]))
    else:
        t = torch.from_numpy(a)
    return t.to(like.device)


def _to_jax(a: np.ndarray, like: Any) -> Any:
    jax = sys.modules["jax"]
    name = a.dtype.name
    if a.dtype.itemsize == 8 and not jax.config.read("jax_enable_x64"):
        # jax.device_put would silently narrow them to 32 bits.
        raise TypeError(f"{name} results need JAX's 64-bit types: set "
                        "jax.config.update('jax_enable_x64', True), or take the numpy result")
    if name not in JAX_DTYPES and a.dtype.kind not in "iub":
        raise TypeError(f"JAX has no dtype for {name} results on its backends: JAX holds "
                        + ", ".join(JAX_DTYPES) + "; pass codes=True for the integer codes")
    return jax.device_put(a, next(iter(like.devices())))


def _to_cupy(a: np.ndarray, like: Any) -> Any:
    cupy = sys.modules["cupy"]
    if a.dtype.name not in CUPY_DTYPES and a.dtype.kind not in "iub":
        raise TypeError(f"CuPy has no dtype for {a.dtype.name} results: CuPy holds "
                        + ", ".join(CUPY_DTYPES) + "; pass codes=True for the integer codes")
    with cupy.cuda.Device(like.device.id):
        return cupy.asarray(a)
