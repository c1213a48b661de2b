"""Testing a Triton kernel against fpsim: the FP8 cast of
``test_torch_kernel.py`` written as a GPU kernel.  It runs where Triton and
a CUDA device are present, and is skipped elsewhere.

Run with ``pytest examples/kernels`` (``tox -e frameworks``).
"""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import triton.language as tl  # noqa: E402

from fpsim import quant, testing  # noqa: E402


@triton.jit
def _to_float8(x_ptr, out_ptr, scale_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.clamp(x * tl.load(scale_ptr), -448.0, 448.0)
    tl.store(out_ptr + offsets, y.to(tl.float8e4nv), mask=mask)


def to_float8(x):
    """x * (448 / amax) in FP32 on the GPU, cast to E4M3; codes and scale.
    The scale is one division, as the golden model rounds it (``448.0 /
    amax`` would be torch's reciprocal times 448: two roundings)."""
    x = x.contiguous()
    amax = x.abs().max().float()
    scale = torch.div(torch.tensor(448.0, device=x.device), amax).reshape(1)
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    _to_float8[(triton.cdiv(x.numel(), 1024),)](x, out, scale, x.numel(), BLOCK=1024)
    return out, scale[0]


@pytest.mark.parametrize("seed", range(50))
def test_triton_to_float8_is_bit_exact(seed):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(64, 128, generator=gen) * 3).to(torch.bfloat16).cuda()
    q, scale = to_float8(x)
    golden = quant.quantize(x, "e4m3", scale_rule="max/amax")
    testing.assert_bitwise_equal(scale, golden.scale)
    testing.assert_bitwise_equal(q, golden.data)
