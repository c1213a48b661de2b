"""Sweeps of FP64 (and of the other spaces beyond 2**64 tuples: FP32
triples): what can be swept, the sample of a space too large for uint64
flat indices, and sweeps against independent kernels.

FP64 has 2**64 codes and 2**128 pairs: a sweep takes every code's special
values (``sqrt``), or a deterministic stratified sample.  The expected
results come from MPFR (gmpy2, in IEEE binary64 and binary32 with
subnormals, every rounding mode it has) and numpy's float64 arithmetic (IEEE
round to nearest even); the sample's tuples from the documented formula,
computed here with Python integers.
"""

from __future__ import annotations

import json

import gmpy2
import numpy as np
import pytest

from fpsim import Context, sweep
from fpsim.cli import main
from fpsim.formats import format as fmt_of
from fpsim.sweep._space import MAX_SAMPLE, Space

M64 = (1 << 64) - 1
FP64 = fmt_of("fp64")
FP32 = fmt_of("fp32")


def splitmix64(x: int) -> int:
    """SplitMix64 (Steele, Lea and Flood 2014), in Python integers."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _hash(r: int, seed: int) -> int:
    return splitmix64(r ^ ((seed * 0xD1B54A32D192ED03) & M64))


def oracle_flat(r: int, m: int, full: int, seed: int) -> int:
    """Rank r of a sample of m tuples of a space of full <= 2**64 tuples."""
    start, end = r * full // m, (r + 1) * full // m
    return start + _hash(r, seed) % (end - start)


def oracle_wide_flat(r: int, m: int, bits: int, seed: int) -> int:
    """Rank r of a sample of m tuples of a space of 2**bits > 2**64 tuples:
    the top 64 bits stratified, the low bits from chained hashes."""
    top = oracle_flat(r, m, 1 << 64, seed)
    low_bits, h, low = bits - 64, _hash(r, seed), 0
    for j in range(-(-low_bits // 64)):
        h = splitmix64((h + j + 1) & M64)
        low |= h << (64 * j)
    return (top << low_bits) | (low & ((1 << low_bits) - 1))


def _taken(space: Space, r0: int, r1: int) -> tuple[list[tuple[int, ...]], list[int]]:
    codes, flat = space.take(r0, r1)
    return list(zip(*(c.tolist() for c in codes))), [int(flat[i]) for i in range(r1 - r0)]


def _unravel(flat: int, width: int, arity: int) -> tuple[int, ...]:
    return tuple((flat >> (width * (arity - 1 - p))) & ((1 << width) - 1) for p in range(arity))


# -- the spaces ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, arity, fraction", [
    ("fp64", 2, 1e-33), ("fp64", 3, 1e-52), ("fp32", 3, 1e-23), ("fp64", 2, 1e-60)])
def test_a_sample_beyond_2_to_the_64_is_stratified_distinct_and_deterministic(fmt, arity,
                                                                             fraction):
    f = fmt_of(fmt)
    bits = f.width * arity
    space = Space(f, arity, "sample", fraction=fraction, seed=3)
    m = space.size
    assert m == max(1, round(fraction * 2 ** bits)) and m < MAX_SAMPLE
    k = min(m, 3000)
    t0, f0 = _taken(space, 0, k)
    for r, (t, fl) in enumerate(zip(t0, f0)):
        assert fl == oracle_wide_flat(r, m, bits, 3)          # the documented formula
        assert t == _unravel(fl, f.width, arity)             # codes and flat index agree
        assert r * 2**64 // m <= fl >> (bits - 64) < (r + 1) * 2**64 // m  # its stratum
    assert all(a < b for a, b in zip(f0, f0[1:]))  # increasing flat order: no repeats
    _, f1 = _taken(space, m - k, m)
    assert f1 == [oracle_wide_flat(r, m, bits, 3) for r in range(m - k, m)]
    # the same tuples whatever the chunk, and another seed gives others
    assert _taken(space, 5, 9) == (t0[5:9], f0[5:9]) or m < 9
    other = Space(f, arity, "sample", fraction=fraction, seed=4)
    assert _taken(other, 0, k)[1] != f0


@pytest.mark.parametrize("fmt, arity, fraction", [
    ("fp64", 1, 1e-13), ("fp64", 1, 1e-30), ("fp32", 2, 1e-14), ("fp32", 2, 1e-30),
    ("fp16", 3, 1e-6), ("e5m2", 2, 0.01)])
def test_a_sample_up_to_2_to_the_64_follows_the_documented_strata(fmt, arity, fraction):
    # FP64 codes and FP32 pairs (2**64 tuples), down to a sample of one
    # tuple, whose stratum is the whole space (it could not be made before).
    f = fmt_of(fmt)
    full = 2 ** (f.width * arity)
    space = Space(f, arity, "sample", fraction=fraction, seed=9)
    m = space.size
    for r0 in (0, max(0, m - 2000)):
        r1 = min(m, r0 + 2000)
        tuples, flats = _taken(space, r0, r1)
        assert flats == [oracle_flat(r, m, full, 9) for r in range(r0, r1)]
        assert tuples == [_unravel(fl, f.width, arity) for fl in flats]


def test_specials_of_fp64_codes_are_the_special_codes_themselves():
    codes = (0x0, 0x1, 0x3FF0000000000000, 0x7FF0000000000000, 0x7FF8000000000000,
             0x8000000000000000, 0xFFF0000000000000)
    space = Space(FP64, 1, "specials", specials=codes)
    tuples, flats = _taken(space, 0, space.size)
    assert space.size == 7 and [t[0] for t in tuples] == flats == list(codes)


@pytest.mark.parametrize("op, kwargs, message", [
    ("add", {}, r"every fp64 pair \(2\*\*128\) is beyond reach; sweep a sample "
                r"\(sample=F with F at most 3.23e-27: 1,099,511,627,775 of the 2\*\*128"),
    ("fma", {}, r"every fp64 triple \(2\*\*192\) is beyond reach; sweep a sample"),
    ("sqrt", {}, r"every fp64 code \(2\*\*64\) is beyond reach; sweep a sample \(sample=F "
                 r"with F at most 5.96e-08.*\) or given special values \(specials=\)"),
    ("mul", {"specials": "1"}, r"fp64 pairs holding a special value is beyond reach: each "
                               r"special value meets all 2\*\*64 codes of the other operand"),
    ("add", {"sample": 1e-20}, r"a sample of 3402823669209384448 tuples is too large .*"
                               r"at most 3.23e-27"),
    ("sqrt", {"sample": 1e-3}, r"too large .* at most 5.96e-08"),
])
def test_what_cannot_be_swept_in_fp64_is_refused_with_what_can(op, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep.run(op, "fp64", np.add, **kwargs)


def test_the_largest_fraction_named_is_accepted():
    for fmt, arity, top in (("fp64", 2, 3.23e-27), ("fp64", 1, 5.96e-08), ("fp32", 3, 1.38e-17)):
        assert Space(fmt_of(fmt), arity, "sample", fraction=top).size < MAX_SAMPLE
    with pytest.raises(ValueError, match="too large"):
        Space(FP64, 2, "sample", fraction=3.24e-27)
    with pytest.raises(ValueError, match=r"fp32 triples holding a special value is beyond"):
        sweep.run("fma", "fp32", np.add, specials="1")


# -- sweeps against MPFR and numpy ---------------------------------------------------------------

GMPY2_MODES = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero, "rup": gmpy2.RoundUp,
               "rdn": gmpy2.RoundDown, "raz": gmpy2.RoundAwayZero}


def mpfr_kernel(op: str, mode: str, bits: int, dtype):
    """A candidate computing ``op`` in MPFR, in IEEE binary64 or binary32
    (subnormals, overflow to infinity as the mode directs), rounded once."""
    ctx = gmpy2.ieee(bits)
    ctx.round = GMPY2_MODES[mode]
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "div": lambda x, y: x / y, "fma": gmpy2.fma, "sqrt": gmpy2.sqrt}[op]

    def kernel(*args):
        out = np.empty(args[0].shape, dtype)
        with gmpy2.context(ctx):
            for i, xs in enumerate(zip(*(a.tolist() for a in args))):
                out[i] = float(fn(*(gmpy2.mpfr(x) for x in xs)))
        return out

    return kernel


@pytest.mark.parametrize("mode", list(GMPY2_MODES))
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "fma", "sqrt"])
def test_fp64_sample_agrees_with_mpfr_in_every_mode(op, mode):
    arity = {"fma": 3, "sqrt": 1}.get(op, 2)
    fraction = 1200 / 2.0 ** (64 * arity)
    r = sweep.run(op, "fp64", mpfr_kernel(op, mode, 64, np.float64), rounding=mode,
                  sample=fraction, seed=len(op) + 7 * len(mode), chunk_size=500)
    assert r.size == 1200 and r.done == 1200 and r.chunks == 3
    assert r.ok, str(r)
    # NaN results of other codes than the golden ones agree (half the roots)
    assert r.report.exact > (500 if op == "sqrt" else 1000)


def test_fp32_fma_sample_agrees_with_mpfr():
    # FP32 triples (2**96) were refused before: a sample of them now runs.
    r = sweep.run("fma", "fp32", mpfr_kernel("fma", "rne", 32, np.float32), sample=1e-25,
                  seed=2)
    assert r.size == round(1e-25 * 2**96) and r.ok, str(r)


def _flush(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 2.0**-1022, np.copysign(0.0, x), x)


def ftz_mul(a, b):
    """numpy's IEEE product with subnormal results flushed to zero."""
    return _flush(a * b)


def test_flushing_fp64_multiplier_disagrees_exactly_on_subnormal_products(tmp_path):
    path = str(tmp_path / "p.json")
    r = sweep.run("mul", "fp64", ftz_mul, sample=1e-33, seed=5, chunk_size=1 << 16,
                  progress_file=path, offenders=5)
    # the tuples again, from the documented formula; numpy's product is the golden one
    m = r.size
    flats = [oracle_wide_flat(k, m, 128, 5) for k in range(m)]
    a = np.array([f >> 64 for f in flats], np.uint64).view(np.float64)
    b = np.array([f & M64 for f in flats], np.uint64).view(np.float64)
    with np.errstate(all="ignore"):
        p = a * b
    sub = np.flatnonzero((p != 0) & (np.abs(p) < 2.0**-1022))
    assert not r.ok and r.report.beyond_tolerance == r.report.ulp_mismatch == len(sub) > 100
    # the offenders: the first subnormal products, by their operands' codes
    assert [o.index for o in r.report.offenders] == [(flats[k] >> 64, flats[k] & M64)
                                                     for k in sub[:5].tolist()]
    assert r.report.shape == (2**64, 2**64)
    d = r.to_dict()
    first = d["report"]["offenders"][0]["operands"]
    assert [o["bits"] for o in first] == [f"0x{flats[sub[0]] >> 64:016x}",
                                          f"0x{flats[sub[0]] & M64:016x}"]
    assert json.loads(json.dumps(d)) == d
    # the progress file holds the 128-bit indices: a resumed sweep finds them done
    again = sweep.run("mul", "fp64", ftz_mul, sample=1e-33, seed=5, chunk_size=1 << 16,
                      progress_file=path, offenders=5)
    assert again.resumed_from == m and again.report.offenders == r.report.offenders


def test_fp64_sqrt_specials_against_numpy():
    r = sweep.run("sqrt", "fp64", np.sqrt,
                  specials="0,-0,inf,-inf,nan,1,2,-1,0x1,0x7fefffffffffffff")
    assert r.ok and r.size == 10
    r = sweep.run("sqrt", "fp64", lambda a: np.sqrt(a).astype(np.float32).astype(np.float64),
                  specials="2,3,4,0x3ff8000000000000")  # 2, 3, 4 and 1.5
    assert r.report.ulp_mismatch == 3   # sqrt(2), sqrt(3), sqrt(1.5) lose bits in FP32, 2 not


def test_the_contexts_rounding_reaches_the_fp64_golden_model():
    up = mpfr_kernel("mul", "rup", 64, np.float64)
    assert sweep.run("mul", "fp64", up, ctx=Context(rounding="rup"), sample=5e-36, seed=1).ok
    r = sweep.run("mul", "fp64", up, sample=5e-36, seed=1)  # golden: to nearest even
    assert not r.ok and r.report.ulp_mismatch > 100


def test_fp64_sweep_on_the_command_line(capsys):
    status = main(["sweep", "mul", "--fmt", "fp64", "--against", "numpy:multiply",
                   "--sample", "1e-34", "--json"])
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert status == 0 and d["verdict"] == "agrees" and d["size"] == 34028
    assert d["sweep"]["space"] == {"kind": "sample", "format": "fp64", "arity": 2,
                                   "size": 34028, "fraction": 1e-34, "seed": 0}
    status = main(["sweep", "mul", "--fmt", "fp64", "--against", "numpy:multiply"])
    out, err = capsys.readouterr()
    assert status == 2 and "every fp64 pair (2**128) is beyond reach" in err
