"""Framework arrays as they are: PyTorch tensors, JAX arrays and CuPy arrays
read by every entry point with the same bits as the equivalent numpy input,
and results given back with ``fpsim.array.like``.

The oracles are the frameworks themselves (their own casts to float32 and
their integer views of the same bytes) and hand-built numpy inputs; the
torch and JAX parts run where those are installed (``tox -e frameworks``);
CuPy, which needs a GPU, is stood in for by a module that behaves as CuPy
documents (``ndarray.get()``, an implicit ``__array__`` that raises), and
is used itself where it imports.
"""

from __future__ import annotations

import subprocess
import sys
import types
import warnings

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import array, mma, ops, quant, testing
from fpsim.array import _frameworks

RNG = np.random.default_rng(20261128)

# ---------------------------------------------------------------------------
# Inputs built with numpy alone, and the test's own conversions to each
# framework (not fpsim's).

ML = {n: np.dtype(getattr(ml_dtypes, n)) for n in (
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn")}


def values(dtype: str, shape: tuple[int, ...], scale: float = 4.0) -> np.ndarray:
    x = RNG.standard_normal(shape) * scale
    return x.astype(np.float32).astype(ML.get(dtype, np.dtype(dtype)))


def all_codes(dtype: str) -> np.ndarray:
    """Every code of an 8-bit dtype, a sample of 4,096 codes of a wider one."""
    dt = ML.get(dtype, np.dtype(dtype))
    if dt.itemsize == 1:
        top = 16 if dtype == "float4_e2m1fn" else 256
        return np.arange(top, dtype=np.uint8)
    ints = np.dtype(f"u{dt.itemsize}")
    return RNG.integers(0, np.iinfo(ints).max, 4096, dtype=ints, endpoint=True)


def bits(x: object) -> object:
    """What equality means for a result: codes of arrays (NaNs included),
    the text of reports, element-wise for tuples."""
    if isinstance(x, tuple | list):
        return [bits(y) for y in x]
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
        return (x.dtype.name, x.shape,
                (x if kind in "iub" else x.view(f"u{x.dtype.itemsize}")).tobytes())
    if isinstance(x, quant.Quantized):
        return [bits(x.data), bits(x.scale), bits(x.amax), bits(x.saturated)]
    return str(x)


# ---------------------------------------------------------------------------
# Without any framework: detection, the stand-in CuPy, imports.


def test_no_framework_is_imported():
    code = ("import sys, numpy as np, fpsim\n"
            "from fpsim import array, ops, mma, quant, testing\n"
            "x = np.float16([1.0, 2.0])\n"
            "array.add(x, x); ops.sum(x); testing.compare(x, x)\n"
            "array.like(x, x); array.as_numpy([1.0])\n"
            "bad = [m for m in ('torch', 'jax', 'cupy', 'jaxlib') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_framework_of_needs_the_class_not_the_name():
    assert _frameworks.framework_of(np.zeros(2)) is None
    assert _frameworks.framework_of([1.0]) is None
    Tensor = type("Tensor", (), {"__module__": "mytorch"})  # noqa: N806
    assert _frameworks.framework_of(Tensor()) is None
    Tensor = type("Tensor", (), {"__module__": "torch"})  # noqa: N806
    Parameter = type("Parameter", (Tensor,), {"__module__": "torch.nn.parameter"})  # noqa: N806
    assert _frameworks.framework_of(Parameter()) == "torch"


class _FakeDevice:
    def __init__(self, id: int) -> None:
        self.id = id

    def __enter__(self) -> None:
        _FakeCupy.current.append(self.id)

    def __exit__(self, *exc: object) -> None:
        _FakeCupy.current.pop()


class _FakeCupy(types.ModuleType):
    """CuPy as documented: arrays of numpy's dtypes on a device, copied to
    the host by ``get()``, refusing ``np.asarray`` (implicit copies)."""

    current: list[int] = [0]

    def __init__(self) -> None:
        super().__init__("cupy")
        module = self

        class ndarray:  # noqa: N801
            __module__ = "cupy._core.core"

            def __init__(self, host: np.ndarray, device: int) -> None:
                if host.dtype.name not in ("float16", "float32", "float64", "bool") \
                        and host.dtype.kind not in "iu":
                    raise TypeError(f"Unsupported dtype {host.dtype}")
                self._host, self.device = host.copy(), _FakeDevice(device)

            def get(self) -> np.ndarray:
                return self._host.copy()

            def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
                raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                                "Please use `.get()` to construct a NumPy array explicitly.")

        module.ndarray = ndarray
        module.cuda = types.SimpleNamespace(Device=_FakeDevice)

    def asarray(self, a: np.ndarray) -> object:
        return self.ndarray(np.asarray(a), self.current[-1])


@pytest.fixture
def cupy(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    try:
        import cupy as real

        real.cuda.runtime.getDeviceCount()
        return real
    except Exception:
        fake = _FakeCupy()
        monkeypatch.setitem(sys.modules, "cupy", fake)
        return fake


def test_cupy_arrays_in_and_out(cupy: types.ModuleType):
    x = values("float16", (3, 5))
    with cupy.cuda.Device(0):
        cx = cupy.asarray(x)
    assert _frameworks.framework_of(cx) == "cupy"
    assert bits(array.as_numpy(cx)) == bits(x)
    assert bits(array.mul(cx, cx)) == bits(array.mul(x, x))
    assert bits(ops.matmul(cx, cupy.asarray(np.ascontiguousarray(x.T)))) \
        == bits(ops.matmul(x, x.T))
    back = array.like(array.mul(x, x), cx)
    assert _frameworks.framework_of(back) == "cupy" and back.device.id == cx.device.id
    assert bits(back.get()) == bits(array.mul(x, x))
    bf = array.round(x, "bf16")
    with pytest.raises(TypeError, match="CuPy has no dtype for bfloat16.*codes=True"):
        array.like(bf, cx)
    codes = array.like(bf, cx, codes=True)
    assert bits(codes.get()) == bits(bf.view(np.uint16))


def test_like_without_a_framework_returns_numpy():
    bf = values("bfloat16", (4,))
    assert array.like(bf, np.zeros(1)) is not None
    assert bits(array.like(bf, [0.0])) == bits(bf)
    assert bits(array.like(bf, None, codes=True)) == bits(bf.view(np.uint16))
    out, flags = array.like(array.add(bf, bf, return_flags=True), np.zeros(1))
    assert bits(out) == bits(array.add(bf, bf))
    codes = np.array([0x3C00, 0x7C00], np.uint16)
    assert array.like(codes, None, fmt="fp16").tolist() == [1.0, np.inf]


@pytest.mark.parametrize("call, message", [
    (lambda: array.like(testing.compare(np.zeros(1), np.zeros(1)), None),
     "like\\(\\) converts numpy arrays .*not Report"),
    (lambda: array.like(np.float32([1.0]), None, fmt="fp16"),
     "fmt= reads integer codes as fp16 values; got float32"),
    (lambda: array.like(np.uint32([1]), None, fmt="tf32"),
     "tf32 has no numpy or ml_dtypes dtype"),
    (lambda: array.like(np.uint16([0x1FF]), None, fmt="e4m3"), "out of range for e4m3"),
])
def test_like_errors(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


# ---------------------------------------------------------------------------
# PyTorch.

def _torch():
    return pytest.importorskip("torch")


def to_torch(a: np.ndarray, how: str = "plain"):
    """The test's own numpy -> torch conversion: integers of the same width
    viewed as the torch dtype (float4 packed by hand, low nibble first)."""
    torch = _torch()
    name = a.dtype.name
    if name == "float4_e2m1fn":
        c = a.view(np.uint8)
        c = (c[..., 0::2] & 0xF) | (c[..., 1::2] << 4)
        t = torch.from_numpy(np.ascontiguousarray(c)).view(torch.float4_e2m1fn_x2)
    elif name in ML:
        t = torch.from_numpy(np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}"))
        t = t.view(getattr(torch, name))
    else:
        t = torch.from_numpy(np.ascontiguousarray(a))
    if how == "strided" and a.ndim:     # every other row of a tensor twice as long
        big = np.zeros((2 * a.shape[0],) + a.shape[1:], a.dtype)
        big[0::2] = a
        t = to_torch(big)[0::2]
        assert not t.is_contiguous() or t.shape[0] <= 1
    elif how == "transposed" and t.ndim == 2:
        t = t.t().contiguous().t()
        assert not t.is_contiguous() or 1 in t.shape
    elif how == "grad" and t.dtype in (torch.float32, torch.float64, torch.float16,
                                       torch.bfloat16):
        t = t.clone().requires_grad_(True)
    elif how == "cuda":
        t = t.cuda()
    return t


TORCH_NAMES = [k for k in _frameworks.TORCH_DTYPES]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_torch_dtypes_read_as_their_codes(name):
    """Each torch dtype's bytes become the numpy dtype of the table, code
    for code; torch's own cast to float32 agrees with the values read."""
    torch = _torch()
    np_name, per = _frameworks.TORCH_DTYPES[name]
    dt = ML.get(np_name, np.dtype(np_name))
    if dt.kind == "b":
        t = torch.tensor([True, False, True])
        assert array.as_numpy(t).tolist() == [True, False, True]
        return
    if np_name == "float4_e2m1fn":
        pairs = np.arange(256, dtype=np.uint8)
        t = torch.from_numpy(pairs).view(torch.float4_e2m1fn_x2)
        a = array.as_numpy(t)
        assert a.dtype.name == "float4_e2m1fn" and a.shape == (512,)
        expect = np.empty(512, np.uint8)
        expect[0::2], expect[1::2] = pairs & 15, pairs >> 4
        assert (a.view(np.uint8) == expect).all()
        table = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]     # OCP MX v1.0, E2M1
        hand = [(-1 if c & 8 else 1) * table[c & 7] for c in expect]
        assert a.astype(np.float64).tolist() == hand
        # 2-D: the codes pair along the axis the bytes run along in memory
        grid = pairs.reshape(16, 16)
        rows = array.as_numpy(torch.from_numpy(grid).view(torch.float4_e2m1fn_x2))
        assert rows.shape == (16, 32) and (rows.view(np.uint8) == expect.reshape(16, 32)).all()
        cols = array.as_numpy(torch.from_numpy(grid).view(torch.float4_e2m1fn_x2).t())
        assert cols.shape == (32, 16) and (cols.view(np.uint8) == expect.reshape(16, 32).T).all()
        every_other = array.as_numpy(torch.from_numpy(grid).view(torch.float4_e2m1fn_x2)[:, ::2])
        assert (every_other.view(np.uint8) == expect.reshape(16, 16, 2)[:, ::2].reshape(16, 16)
                ).all()
        return
    ints = np.dtype(f"u{dt.itemsize}") if dt.kind != "i" else dt
    codes = all_codes(np_name) if dt.kind in "fV" else \
        RNG.integers(np.iinfo(dt).min, np.iinfo(dt).max, 1000, dtype=dt, endpoint=True)
    tint = getattr(torch, f"uint{8 * dt.itemsize}") if dt.kind != "i" else getattr(torch, name)
    t = torch.from_numpy(codes.astype(ints)).view(tint).view(getattr(torch, name))
    a = array.as_numpy(t)
    assert a.dtype == dt
    assert (a.view(ints) == codes.astype(ints)).all()
    if dt.kind in "fV" and name != "float64":
        theirs = t.to(torch.float32).numpy()
        ours = a.astype(np.float32)
        both_nan = np.isnan(theirs) & np.isnan(ours)
        assert ((theirs == ours) | both_nan).all()
    back = array.like(a, t)
    assert back.dtype == t.dtype and back.shape == t.shape
    assert torch.equal(back.view(tint), t.view(tint))


def test_torch_float4_round_trip_and_odd_length():
    torch = _torch()
    t = torch.from_numpy(np.arange(256, dtype=np.uint8).reshape(8, 32)).view(
        torch.float4_e2m1fn_x2)
    a = array.as_numpy(t)
    assert a.shape == (8, 64)
    back = array.like(a, t)
    assert back.dtype == torch.float4_e2m1fn_x2 and back.shape == (8, 32)
    assert torch.equal(back.view(torch.uint8), t.view(torch.uint8))
    with pytest.raises(ValueError, match="last axis must have an even length"):
        array.like(a[:, :3], t)


@pytest.mark.parametrize("how", ["strided", "transposed", "grad", "parameter", "sparse",
                                 "channels_last", "expanded"])
def test_torch_layouts(how):
    torch = _torch()
    x = values("bfloat16", (6, 4))
    if how in ("strided", "transposed", "grad"):
        t = to_torch(x, how)
    elif how == "parameter":
        t = torch.nn.Parameter(to_torch(x))
    elif how == "sparse":
        x = np.where(RNG.random(x.shape) < 0.5, x, 0).astype(x.dtype)
        t = to_torch(x).to_sparse()
    elif how == "channels_last":
        x = values("bfloat16", (2, 3, 4, 5))
        t = to_torch(x).to(memory_format=torch.channels_last)
        assert not t.is_contiguous()
    else:
        x = np.broadcast_to(values("bfloat16", (1, 4)), (6, 4))
        t = to_torch(x[:1].copy()).expand(6, 4)
    assert bits(array.as_numpy(t)) == bits(np.ascontiguousarray(x))
    assert bits(array.mul(t, t)) == bits(array.mul(x, x))


def test_torch_errors():
    torch = _torch()
    with pytest.raises(TypeError, match="torch.complex64 tensors are not accepted: accepted "
                                        "dtypes are torch.float64"):
        array.as_numpy(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="meta device has no values"):
        array.as_numpy(torch.zeros(2, device="meta"))
    t = torch.zeros(2)
    with pytest.raises(TypeError, match="torch has no dtype for float6_e3m2fn results"):
        array.like(np.zeros(2, ml_dtypes.float6_e3m2fn), t)
    assert array.like(np.zeros(2, ml_dtypes.float6_e3m2fn), t, codes=True).dtype == torch.uint8


def test_like_refuses_a_meta_target_as_a_meta_input_is_refused():
    # Issue 45, item 8: like() onto a meta tensor gave a tensor with no
    # values, where a meta input is refused: both name the meta device now.
    torch = _torch()
    meta = torch.empty(3, device="meta")
    for result in (np.float32([1.0, 2.0, 3.0]), (np.float16([1.0]), np.uint8([0]))):
        with pytest.raises(TypeError, match="like\\(\\): the target tensor is on the meta "
                                            "device.*meta device has no values"):
            array.like(result, meta)
    with pytest.raises(TypeError, match="meta device has no values"):
        array.add(meta, meta)
    # a tensor with data, on the same CPU, is a target as before
    assert torch.equal(array.like(np.float32([1.0, 2.0]), torch.empty(0)),
                       torch.tensor([1.0, 2.0]))


def test_nested_tensors_are_refused_naming_the_accepted_layouts():
    # Issue 45, item 8: a jagged tensor surfaced torch's own RuntimeError
    # ("to_dense does not support layout Jagged"), a strided nested one
    # "NestedTensorImpl doesn't support sizes": fpsim's TypeError names
    # what is accepted (sparse layouts are made dense, as before).
    torch = _torch()
    parts = [torch.ones(2, dtype=torch.float16), torch.ones(3, dtype=torch.float16)]
    with warnings.catch_warnings():  # (torch's notes on prototype and beta layouts)
        warnings.simplefilter("ignore", UserWarning)
        jagged = torch.nested.nested_tensor(parts, layout=torch.jagged)
        strided = torch.nested.nested_tensor(parts)
        eye = torch.eye(4, dtype=torch.float16)
        sparse_layouts = (eye.to_sparse(), eye.to_sparse_csr(), eye.to_sparse_csc(),
                          eye.to_sparse_bsr((2, 2)), eye.to_sparse_bsc((2, 2)))
    for t, layout in ((jagged, "torch.jagged"), (strided, "torch.strided")):
        for call in (lambda: array.as_numpy(t), lambda: ops.exp(t),
                     lambda: array.add(t, t), lambda: array.encode(t, "e4m3")):
            with pytest.raises(TypeError) as info:
                call()
            message = str(info.value)
            assert f"torch nested tensors (layout {layout}) are not accepted" in message
            assert "accepted layouts: torch.strided, torch.sparse_coo" in message
            assert "to_padded_tensor" in message and "\n" not in message
    # the sparse layouts are read, made dense
    for sparse in sparse_layouts:
        assert bits(array.as_numpy(sparse)) == bits(np.eye(4, dtype=np.float16))


def test_block_scaled_gemm_reads_packed_fp4_and_scale_tensors():
    """A kernel's own NVFP4 operands: E2M1 packed two a byte in
    ``torch.float4_e2m1fn_x2`` (low nibble first, as torch._scaled_mm
    hands them to cuBLAS) and UE4M3 scales as ``torch.float8_e4m3fn``,
    give the bits of the same operands as unpacked codes."""
    torch = _torch()
    rng = np.random.default_rng(4)
    a = rng.integers(0, 16, (6, 64)).astype(np.uint8)
    b = rng.integers(0, 16, (64, 5)).astype(np.uint8)
    sa = rng.integers(0x30, 0x40, (6, 4)).astype(np.uint8)
    sb = rng.integers(0x30, 0x40, (4, 5)).astype(np.uint8)
    unit = mma.preset("b200", "nvfp4")
    want = unit.gemm(a, b, sa, sb)
    packed_a = torch.from_numpy(a[:, 0::2] | (a[:, 1::2] << 4)).view(torch.float4_e2m1fn_x2)
    packed_bt = torch.from_numpy(np.ascontiguousarray(b.T[:, 0::2] | (b.T[:, 1::2] << 4)))
    got = unit.gemm(packed_a, packed_bt.view(torch.float4_e2m1fn_x2).T,
                    torch.from_numpy(sa).view(torch.float8_e4m3fn),
                    torch.from_numpy(sb).view(torch.float8_e4m3fn))
    assert bits(got) == bits(want)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_block_scaled_gemv_reads_a_packed_fp4_column(n):
    """The decode case: ``b.t()`` of an ``(N, K/2)`` packed tensor is the
    ``(K, N)`` operand for every N, N = 1 included (torch keeps the stride
    of a length-1 axis, which tells the bytes run along K)."""
    torch = _torch()
    rng = np.random.default_rng(n)
    a = rng.integers(0, 16, (3, 64)).astype(np.uint8)
    b = rng.integers(0, 16, (64, n)).astype(np.uint8)
    sa = rng.integers(0x30, 0x40, (3, 4)).astype(np.uint8)
    sb = rng.integers(0x30, 0x40, (4, n)).astype(np.uint8)
    unit = mma.preset("b200", "nvfp4")
    packed_bt = torch.from_numpy(np.ascontiguousarray(b.T[:, 0::2] | (b.T[:, 1::2] << 4)))
    bt = packed_bt.view(torch.float4_e2m1fn_x2).t()
    assert array.as_numpy(bt).shape == (64, n)
    packed_a = torch.from_numpy(a[:, 0::2] | (a[:, 1::2] << 4)).view(torch.float4_e2m1fn_x2)
    got = unit.gemm(packed_a, bt, torch.from_numpy(sa).view(torch.float8_e4m3fn),
                    torch.from_numpy(sb).view(torch.float8_e4m3fn))
    assert bits(got) == bits(unit.gemm(a, b, sa, sb))


def test_torch_cuda_tensors():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = values("bfloat16", (5, 7))
    t = to_torch(x, "cuda")
    assert bits(array.as_numpy(t)) == bits(x)
    out = array.like(array.round(t, "e4m3"), t)
    assert out.device == t.device and out.dtype == torch.float8_e4m3fn
    assert bits(array.as_numpy(out)) == bits(array.round(x, "e4m3"))


# ---------------------------------------------------------------------------
# Every entry point: numpy input against the framework's, bit for bit.


def _cases():
    a16 = values("float16", (8, 16), 1.0)
    b16 = values("float16", (16, 8), 1.0)
    bf = values("bfloat16", (6, 10))
    bf2 = values("bfloat16", (6, 10))
    e4 = values("float8_e4m3fn", (16, 32), 8.0)
    e4b = values("float8_e4m3fn", (32, 16), 8.0)
    f32 = values("float32", (6, 10))
    c32 = values("float32", (8, 8))
    u16 = all_codes("bfloat16")[:64].reshape(8, 8)
    u8 = all_codes("float8_e4m3fn").reshape(16, 16)
    logits, target = values("float16", (5, 7)), RNG.integers(0, 7, 5)
    ones = np.ones(10, np.float32)
    return {
        "array.round": (lambda x: array.round(x, "e4m3", saturate=True), (f32,)),
        "array.encode": (lambda x: array.encode(x, "fp16", return_flags=True), (bf,)),
        "array.decode": (lambda c: array.decode(c, "bf16"), (u16,)),
        "array.convert": (lambda c: array.convert(c, "e4m3", "bf16"), (u8,)),
        "array.add": (lambda x, y: array.add(x, y, return_flags=True), (bf, bf2)),
        "array.mul e4m3": (lambda x, y: array.mul(x, y), (e4[:, :16], e4b[:16])),
        "array.div": (lambda x, y: array.div(x, y), (a16, a16[::-1])),
        "array.fma": (lambda x, y, z: array.fma(x, y, z), (f32, f32, f32[::-1])),
        "array.sqrt": (lambda x: array.sqrt(x), (bf,)),
        "array.add_sequence": (lambda x: array.add_sequence(x), (bf,)),
        "array.lt": (lambda x, y: array.lt(x, y), (bf, bf2)),
        "ops.sum": (lambda x: ops.sum(x, axis=1), (bf,)),
        "ops.mean": (lambda x: ops.mean(x), (a16,)),
        "ops.dot": (lambda x, y: ops.dot(x, y), (bf[0], bf2[0])),
        "ops.matmul": (lambda x, y: ops.matmul(x, y), (a16, b16)),
        "ops.softmax": (lambda x: ops.softmax(x), (a16,)),
        "ops.layer_norm": (lambda x, w, b: ops.layer_norm(x, w, b), (bf, ones, ones)),
        "ops.rms_norm": (lambda x: ops.rms_norm(x), (bf,)),
        "ops.gelu": (lambda x: ops.gelu(x), (bf,)),
        "ops.mse_loss": (lambda x, y: ops.mse_loss(x, y), (bf, f32)),
        "ops.cross_entropy": (lambda x, t: ops.cross_entropy(x, t), (logits, target)),
        "mma.preset": (lambda x, y, c: mma.preset("h100", "fp16")(x, y, c, chain=True),
                       (a16, a16[::-1].copy(), c32[:, 0].copy())),
        "mma.cublas fp16": (lambda x, y: mma.cublas("h100", "fp16", out="fp16")(x, y),
                            (a16, b16)),
        "mma.cublas e4m3 scaled": (
            lambda x, y, s: mma.cublas("h100", "e4m3", out="bf16")(x, y, scale_a=s, scale_b=s),
            (e4, e4b, np.float32(0.25))),
        "quant.quantize tensor": (lambda x: quant.quantize(x, "e4m3"), (bf,)),
        "quant.quantize mx": (lambda x: quant.quantize(x, "e2m1", "mx", axis=-1),
                              (values("float32", (4, 64)),)),
        "quant.quantize nvfp4": (lambda x: quant.quantize(x, "e2m1", "nvfp4", axis=-1),
                                 (values("bfloat16", (4, 32)),)),
        "quant.error_report": (lambda x: quant.error_report(x, quant.quantize(x, "e5m2")),
                               (bf,)),
        "quant.DelayedScaling": (lambda x: _delayed(x), (bf,)),
        "quant.LossScaler": (lambda g, inf: _loss_scaler(g, inf), (f32 * 1e-6, np.float32(1.0))),
        "quant.scale_sweep": (lambda g: quant.scale_sweep(g * 1e-6), (f32,)),
        "ops.exp": (lambda x: ops.exp(x), (bf,)),
        "ops.reciprocal": (lambda x: ops.reciprocal(x), (a16,)),
        "ops.log_softmax": (lambda x: ops.log_softmax(x), (bf,)),
        "ops.relu": (lambda x: ops.relu(x), (e4,)),
        "ops.silu": (lambda x: ops.silu(x), (bf,)),
        "mma.cutlass": (lambda x, y: mma.cutlass("h100", "fp16", out="fp16")(x, y),
                        (a16, b16)),
        "mma.triton": (lambda x, y: mma.triton("h100", "bf16", out="bf16")(x, y),
                       (bf.T.copy(), bf2)),
        "testing.compare": (lambda x, y: testing.compare(x, y, max_ulp=1), (bf, bf2)),
        "testing.assert_ulp_close": (lambda x, y: _raised(testing.assert_ulp_close, x, y,
                                                          max_ulp=2), (bf, bf2)),
        "testing.assert_bitwise_equal": (lambda x: _raised(testing.assert_bitwise_equal, x,
                                                           x), (e4,)),
        "sweep candidate": (lambda x: _sweep_with(x), (e4[:1, :1],)),
    }


def _raised(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except AssertionError as exc:
        return str(exc)
    return "passed"


def _delayed(x):
    recipe = quant.DelayedScaling(history_len=4)
    return [recipe.step(x), recipe.step(x), recipe.scale]


def _loss_scaler(gradients, found_inf):
    scaler = quant.LossScaler()
    record = scaler.step(gradients)
    scaler.update(found_inf)
    return [str(record), scaler.scale]


def _sweep_with(x):
    """A sweep whose candidate returns arrays of x's kind (its results
    computed by ml_dtypes on numpy, handed back as x's framework)."""
    from fpsim import sweep

    def candidate(p, q):
        out = (p.astype(np.float32) * q.astype(np.float32)).astype(ml_dtypes.float8_e4m3fn)
        return array.like(out, x)

    return sweep.run("mul", "e4m3", candidate).ok


CASES = _cases()


def _frameworks_to_test():
    out = []
    for name, conv in (("torch", "plain"), ("torch", "strided"), ("torch", "grad"),
                       ("jax", "plain")):
        out.append(f"{name}-{conv}")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("framework", _frameworks_to_test())
def test_entry_points_same_bits(case, framework):
    fn, inputs = CASES[case]
    name, how = framework.split("-")
    if name == "torch":
        _torch()
        converted = [to_torch(np.asarray(x), how) if isinstance(x, np.ndarray) else x
                     for x in inputs]
    else:
        jnp = pytest.importorskip("jax.numpy")
        converted = [jnp.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
    expected = fn(*inputs)
    got = fn(*converted)
    assert bits(got) == bits(expected)


# ---------------------------------------------------------------------------
# JAX.

@pytest.mark.parametrize("name", _frameworks.JAX_DTYPES)
def test_jax_dtypes_both_ways(name):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    dt = ML.get(name, np.dtype(getattr(ml_dtypes, name, name)))
    if dt.itemsize == 8 and not jax.config.read("jax_enable_x64"):
        with pytest.raises(TypeError, match="need JAX's 64-bit types"):
            array.like(np.zeros(2, dt), jnp.zeros(1))
        return
    codes = all_codes(name) if name in ML else all_codes(name)
    if name == "float4_e2m1fn":
        codes = np.arange(16, dtype=np.uint8)
    host = codes.view(dt) if codes.dtype.itemsize == dt.itemsize else codes.astype(dt)
    j = jax.device_put(host)
    a = array.as_numpy(j)
    assert a.dtype == dt and (a.view(codes.dtype) == host.view(codes.dtype)).all()
    back = array.like(a, j)
    assert back.dtype == j.dtype
    assert (np.asarray(back).view(codes.dtype) == host.view(codes.dtype)).all()


def test_jax_refuses_float6():
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(TypeError, match="JAX has no dtype for float6_e2m3fn results"):
        array.like(np.zeros(2, ml_dtypes.float6_e2m3fn), jnp.zeros(1))


def test_dtype_table_is_the_code():
    rows = _frameworks.dtype_table()
    names = [r[0] for r in rows]
    assert names == list(array.engine.VALUE_DTYPE_NAMES)
    for np_name, fmt, torch_name, jax_name, _ in rows:
        assert fmt == array.engine.format_of_dtype(ML.get(np_name, np.dtype(
            getattr(ml_dtypes, np_name, np_name)))).name
    torch_rows = {r[2].split(" ")[0].removeprefix("torch."): r[0] for r in rows if r[2]}
    assert torch_rows["bfloat16"] == "bfloat16"
    assert torch_rows["float4_e2m1fn_x2"] == "float4_e2m1fn"
    assert fpsim.format("e2m1").name == "e2m1"


def test_the_probe_does_not_name_xla_cpus_bf16_dot_as_a_gpu():
    """Issue 42: jnp.dot bf16 -> bf16 on XLA CPU has four FP32 chains by
    k mod 4; the probe names no GPU (tests/test_probe_cpu_library.py replays
    a recording of the same calls in the default run)."""
    jnp = pytest.importorskip("jax.numpy")

    def dot(A, B, C):
        r = jnp.dot(jnp.asarray(A, jnp.bfloat16), jnp.asarray(B, jnp.bfloat16),
                    preferred_element_type=jnp.bfloat16)
        return np.asarray((r.astype(jnp.float32) + jnp.asarray(C, jnp.float32))
                          .astype(jnp.bfloat16))

    r = mma.probe(dot, "bf16", "bf16", shape="gemm")
    gpus = set(mma.gpus())
    assert not gpus & set(r.matches), str(r)
