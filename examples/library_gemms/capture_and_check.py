"""Capture your GPU's library GEMMs, then check them against fpsim.

On a machine with a CUDA GPU and PyTorch::

    CUBLASLT_LOG_LEVEL=2 python capture_and_check.py capture out.npz 2> cublaslt.log

writes ``out.npz`` in the layout of ``tests/data/h100-cublas/captures.npz``
(raw bits, ``<what>_<M>x<K>x<N>_<array>``), and cuBLASLt's log names the
kernels it ran (``numSplitsK=`` is the ``split_k`` to give fpsim).  Then,
anywhere::

    python capture_and_check.py check out.npz --gpu h100 [--split-k KEY=S ...]

reproduces every array with ``fpsim.mma.cublas`` and prints, per array, how
many outputs differ (exit 0 when none does, 1 otherwise, 2 on bad input).
``--rows N`` checks the first N rows only (each output depends on its own
row of A alone).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

# (prefix, M, K, N): the shapes of the shipped captures.  Skinny, long-K shapes are the
# ones where cuBLAS splits K.
SIXTEEN = [(64, 4096, 32), (128, 4096, 64), (256, 2048, 256)]
FP8_K = [64, 128, 192, 256, 512, 1024]


def capture(path: str, seed: int = 0) -> None:  # pragma: no cover - needs a CUDA GPU
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def spread(m: int, n: int) -> torch.Tensor:
        """Random signs and exponents over several binades."""
        mant = torch.rand((m, n), generator=gen) + 1
        exp = torch.randint(-6, 7, (m, n), generator=gen).float()
        sign = torch.randint(0, 2, (m, n), generator=gen).float() * 2 - 1
        return sign * mant * torch.exp2(exp)

    out: dict[str, np.ndarray] = {}

    def bits(t: torch.Tensor) -> np.ndarray:
        t = t.detach().cpu().contiguous()
        width = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]
        raw = t.view(width).numpy()
        return raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[t.element_size()])

    for name, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        for m, k, n in SIXTEEN:
            a, b = spread(m, k).to(dt).cuda(), spread(k, n).to(dt).cuda()
            key = f"{name}_{m}x{k}x{n}"
            out[f"{key}_a"], out[f"{key}_b"] = bits(a), bits(b)
            out[f"{key}_d32"] = bits(torch.mm(a, b, out_dtype=torch.float32))
            out[f"{key}_d16"] = bits(torch.mm(a, b))
    for k in FP8_K:
        a = spread(128, k).clamp(-448, 448).to(torch.float8_e4m3fn).cuda()
        b = spread(64, k).clamp(-448, 448).to(torch.float8_e4m3fn).cuda().t()  # column-major
        one = torch.tensor(1.0, device="cuda")
        key = f"e4m3_128x{k}x64"
        out[f"{key}_a"], out[f"{key}_b"] = bits(a), bits(b.contiguous())  # B as K x N rows
        for fast in (0, 1):
            d = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float32,
                                 use_fast_accum=bool(fast))
            out[f"{key}_d32_fastaccum{fast}"] = bits(d)
    np.savez_compressed(path, **out)
    print(f"wrote {path}: {len(out)} arrays")


_DTYPES = {"fp16": "fp16", "bf16": "bf16", "e4m3": "e4m3"}


def check(path: str, gpu: str, splits: dict[str, int], rows: int | None) -> int:
    import fpsim.mma as mma

    z = np.load(path)
    keys = sorted({k.rsplit("_", 1)[0] for k in z.files if k.endswith("_a")})
    bad_total = 0
    for key in keys:
        fmt = key.split("_")[0] if not key.startswith("addmm_") else key.split("_")[1]
        if fmt not in _DTYPES:
            print(f"{key}: skipped ({fmt}: the cuBLAS TF32 tile is chosen by shape; pass it "
                  "to fpsim.mma.cublas(..., promote_every=) yourself)")
            continue
        a, b = z[f"{key}_a"][:rows], z[f"{key}_b"]
        s = splits.get(key, 1)
        for want in sorted(k for k in z.files if k.startswith(key + "_d")):
            kind = want[len(key) + 2:]
            out = "fp32" if kind.startswith("32") else fmt
            fast = kind.endswith("fastaccum1")
            g = mma.cublas(gpu, fmt, out, split_k=s, fast_accum=fast) if fmt == "e4m3" else \
                mma.cublas(gpu, fmt, out, split_k=s)
            c = None
            if key.startswith("addmm_"):
                c = z[f"{key}_c32" if out == "fp32" else f"{key}_c16"][:rows]
            d = g(a, b, c, fmt=fmt) if c is not None else g(a, b, fmt=fmt)
            expected = z[want][:rows]
            differ = int((d != expected).sum())
            bad_total += differ
            print(f"{want}: {differ} of {d.size} outputs differ")
    return 0 if bad_total == 0 else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture", help="run torch.mm and torch._scaled_mm on the GPU")
    c.add_argument("path")
    k = sub.add_parser("check", help="reproduce every array with fpsim.mma.cublas")
    k.add_argument("path")
    k.add_argument("--gpu", default="h100")
    k.add_argument("--split-k", action="append", default=[], metavar="KEY=S",
                   help="cuBLASLt's numSplitsK for one capture, e.g. fp16_64x4096x32=3")
    k.add_argument("--rows", type=int, default=None)
    args = p.parse_args(argv)
    try:
        if args.cmd == "capture":
            capture(args.path)
            return 0
        splits = {}
        for item in args.split_k:
            key, _, s = item.partition("=")
            splits[key] = int(s)
        return check(args.path, args.gpu, splits, args.rows)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"capture_and_check: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
