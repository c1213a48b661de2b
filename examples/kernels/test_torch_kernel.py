"""Testing a PyTorch function against fpsim: an FP8 cast with a per-tensor
scale, as training recipes quantize activations (runs on the CPU, and on a
CUDA device where one is present).

Run with ``pytest examples/kernels`` (``tox -e frameworks``).
"""

import pytest

torch = pytest.importorskip("torch")

from fpsim import quant, testing  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def to_float8(x):
    """The kernel under test: x times 448 / amax(|x|) in FP32, clamped to
    E4M3's range and cast to float8_e4m3fn; returns the codes and the scale."""
    amax = x.abs().max().float()
    scale = 448.0 / amax
    return (x.float() * scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


def to_float8_in_bf16(x):
    """The same kernel with a bug: the product is rounded to BF16 before the
    cast, a second rounding that the golden model does not make."""
    amax = x.abs().max().float()
    scale = 448.0 / amax
    return (x * scale.to(torch.bfloat16)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


def inputs(device):
    gen = torch.Generator().manual_seed(0)
    return (torch.randn(64, 128, generator=gen) * 3).to(torch.bfloat16).to(device)


@pytest.mark.parametrize("device", DEVICES)
def test_to_float8_is_bit_exact(device):
    x = inputs(device)
    q, scale = to_float8(x)                     # torch tensors, on the device
    # The golden model: the same recipe, scale = max / amax in FP32, every
    # element x * scale rounded once to E4M3 (saturating).
    golden = quant.quantize(x, "e4m3", scale_rule="max/amax")
    testing.assert_bitwise_equal(scale, golden.scale)
    testing.assert_bitwise_equal(q, golden.data)


@pytest.mark.parametrize("device", DEVICES)
def test_the_double_rounding_is_caught(device):
    x = inputs(device)
    q, _ = to_float8_in_bf16(x)
    golden = quant.quantize(x, "e4m3", scale_rule="max/amax")
    report = testing.compare(q, golden.data)
    assert not report.ok and report.max_ulp == 1
    with pytest.raises(AssertionError, match="MISMATCH: e4m3"):
        testing.assert_bitwise_equal(q, golden.data)
