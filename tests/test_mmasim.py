"""fpsim's block-scaled instructions against MMA-Sim itself (``mmasim``
2.1.1, Microsoft's published simulator, arXiv 2511.10909), where it is
installed (``tox -e mmasim``: it needs torch, ninja and a C++ compiler, as
it builds a small extension when imported).  Random codes and adversarial
blocks of ``tcgen05.mma`` m128n8 on every element pair of
``kind::mxf8f6f4`` and every scale choice of the FP4 kinds; the bits of
every output compared, NaNs included."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nv = pytest.importorskip("mmasim.nv_ptx")

from fpsim import mma  # noqa: E402

ELEMENTS = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
WIDTH = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}
M, N = 128, 8


def _codes(rng, name, shape, adversarial):
    c = rng.integers(0, 1 << WIDTH[name], shape).astype(np.uint8)
    if adversarial:
        pick = rng.random(shape)
        c[pick < 0.3] = 0
        c[(pick >= 0.3) & (pick < 0.4)] &= (1 << (WIDTH[name] - 1)) | 0x3   # small values
    return c


def _container(codes, name):
    """MMA-Sim's kind::mxf8f6f4 operand: FP8 as its torch dtype; FP6 in
    bits 5:0 and FP4 in bits 5:2 of a uint8 (PTX's layout)."""
    t = torch.from_numpy(codes)
    if name == "e4m3":
        return t.view(torch.float8_e4m3fn)
    if name == "e5m2":
        return t.view(torch.float8_e5m2)
    return t << 2 if name == "e2m1" else t


def _scales(rng, shape, scale, adversarial):
    if scale == "ue4m3":
        pool = [0, 1, 7, 0x38, 0x70, 0x7E, 0x7F, 0xB8] if adversarial else None
    else:
        pool = [0, 1, 60, 127, 200, 254, 255] if adversarial else None
    if pool is None:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.choice(pool, shape).astype(np.uint8)


def _c(rng, adversarial):
    if adversarial:
        v = rng.standard_normal((M, N)) * np.exp2(rng.integers(-140, 120, (M, N)))
        v[rng.random((M, N)) < 0.3] = 0
        return v.astype(np.float32)
    return rng.integers(0, 2**32, (M, N), dtype=np.uint64).astype(np.uint32).view(np.float32)


def _ours(unit, a, b, c, sa, sb):
    """fpsim on every (i, j): rows of A against columns of B."""
    A = np.broadcast_to(a[:, None, :], (M, N, a.shape[1]))
    B = np.broadcast_to(b.T[None, :, :], (M, N, b.shape[0]))
    SA = np.broadcast_to(sa[:, None, :], (M, N, sa.shape[1]))
    SB = np.broadcast_to(sb.T[None, :, :], (M, N, sb.shape[0]))
    return unit(A, B, c, scale_a=SA, scale_b=SB).view(np.uint32)


@pytest.mark.parametrize("fa, fb", list(itertools.product(ELEMENTS, ELEMENTS)))
@pytest.mark.parametrize("adversarial", [False, True], ids=["random", "adversarial"])
def test_mxf8f6f4_equals_mmasim(fa, fb, adversarial):
    rng = np.random.default_rng(WIDTH[fa] * 17 + WIDTH[fb] + adversarial)
    a = _codes(rng, fa, (M, 32), adversarial)
    b = _codes(rng, fb, (32, N), adversarial)
    sa = _scales(rng, (M, 1), "e8m0", adversarial)
    sb = _scales(rng, (1, N), "e8m0", adversarial)
    c = _c(rng, adversarial)
    op = nv.TCGen05MMABlockScale("Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{fa}.{fb}"
                                              ".ue8m0")
    theirs = op(_container(a, fa), _container(b, fb), torch.from_numpy(c.copy()),
                torch.from_numpy(sa).view(torch.float8_e8m0fnu),
                torch.from_numpy(sb).view(torch.float8_e8m0fnu))
    want = theirs.numpy().view(np.uint32)
    got = _ours(mma.block_scaled("b200", "mxfp8", a=fa, b=fb), a, b.copy(), c, sa, sb)
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {got.size} differ"


@pytest.mark.parametrize("kind, scale, block", [("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue8m0", 32),
                                                ("mxf4nvf4", "ue8m0", 16),
                                                ("mxf4nvf4", "ue4m3", 16)])
@pytest.mark.parametrize("adversarial", [False, True], ids=["random", "adversarial"])
def test_fp4_kinds_equal_mmasim(kind, scale, block, adversarial):
    rng = np.random.default_rng(block + len(kind) + adversarial)
    a = _codes(rng, "e2m1", (M, 64), adversarial)
    b = _codes(rng, "e2m1", (64, N), adversarial)
    per = 64 // block
    fscale = "ue4m3" if scale == "ue4m3" else "e8m0"
    sa = _scales(rng, (M, per), fscale, adversarial)
    sb = _scales(rng, (per, N), fscale, adversarial)
    c = _c(rng, adversarial)
    op = nv.TCGen05MMABlockScale("Blackwell", f"m128n8k64.kind::{kind}.block{block}.f32.e2m1."
                                              f"e2m1.{scale}")
    # two E2M1 codes a byte along K, element 2i in the high nibble (MMA-Sim 2.1.1)
    pa = (a[:, 0::2] << 4) | a[:, 1::2]
    pb = (b[0::2, :] << 4) | b[1::2, :]
    sdt = torch.float8_e4m3fn if scale == "ue4m3" else torch.float8_e8m0fnu
    theirs = op(torch.from_numpy(pa), torch.from_numpy(pb), torch.from_numpy(c.copy()),
                torch.from_numpy(sa).view(sdt), torch.from_numpy(sb).view(sdt))
    want = theirs.numpy().view(np.uint32)
    unit = mma.block_scaled("b200", kind, scale=fscale, block=block)
    got = _ours(unit, a, b.copy(), c, sa, sb)
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {got.size} differ"


@pytest.mark.parametrize("kind, fa, fb, scale, block", [
    ("mxf8f6f4", "e4m3", "e4m3", "ue8m0", 32), ("mxf8f6f4", "e5m2", "e2m1", "ue8m0", 32),
    ("mxf4", "e2m1", "e2m1", "ue8m0", 32), ("mxf4nvf4", "e2m1", "e2m1", "ue4m3", 16)])
def test_the_gemm_tiles_equal_mmasim_chained_along_k(kind, fa, fb, scale, block):
    """BlockScaledModel.gemm (the tile path, its exact and cut lanes) on
    data of a kernel's kind (elements of a few binades, scales near 1)
    against MMA-Sim's instruction run along K, each result the next c."""
    rng = np.random.default_rng(len(kind) + block)
    K, k = 256, (32 if kind == "mxf8f6f4" else 64)
    mask = {"e4m3": 0x3F, "e5m2": 0x3F, "e2m1": 0x7}
    a = rng.integers(0, 256, (M, K)).astype(np.uint8) & mask[fa] | 0x20 * (fa != "e2m1")
    a |= (rng.integers(0, 2, (M, K)) << (WIDTH[fa] - 1)).astype(np.uint8)   # signs
    b = rng.integers(0, 256, (K, N)).astype(np.uint8) & mask[fb] | 0x20 * (fb != "e2m1")
    b |= (rng.integers(0, 2, (K, N)) << (WIDTH[fb] - 1)).astype(np.uint8)
    lo, hi = (0x30, 0x40) if scale == "ue4m3" else (120, 134)
    sa = rng.integers(lo, hi, (M, K // block)).astype(np.uint8)
    sb = rng.integers(lo, hi, (K // block, N)).astype(np.uint8)
    c = (rng.standard_normal((M, N)) * 4).astype(np.float32)
    fscale = "ue4m3" if scale == "ue4m3" else "e8m0"
    sdt = torch.float8_e4m3fn if scale == "ue4m3" else torch.float8_e8m0fnu
    shape = f"m128n8k{k}.kind::{kind}.block{block}.f32.{fa}.{fb}.{scale}"
    op = nv.TCGen05MMABlockScale("Blackwell", shape)
    acc = torch.from_numpy(c.copy())
    per = k // block
    for j in range(K // k):
        x, y = a[:, j * k:(j + 1) * k], b[j * k:(j + 1) * k]
        if kind == "mxf8f6f4":
            x, y = _container(x.copy(), fa), _container(y.copy(), fb)
        else:
            x = torch.from_numpy((x[:, 0::2] << 4) | x[:, 1::2])
            y = torch.from_numpy((y[0::2, :] << 4) | y[1::2, :])
        acc = op(x, y, acc, torch.from_numpy(sa[:, j * per:(j + 1) * per].copy()).view(sdt),
                 torch.from_numpy(sb[j * per:(j + 1) * per].copy()).view(sdt))
    want = acc.numpy().view(np.uint32)
    if kind == "mxf8f6f4":
        unit = mma.block_scaled("b200", "mxfp8", a=fa, b=fb)
    else:
        unit = mma.block_scaled("b200", kind, scale=fscale, block=block)
    got = unit.gemm(a, b, sa, sb, c).view(np.uint32)
    assert np.isfinite(got.view(np.float32)).all()
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {got.size} differ"
