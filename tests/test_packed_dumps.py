"""Packed codes and the blocked scale layout (fpsim.testing.packing), and
dumps in them read by ``python -m fpsim diff`` and written by ``ref``.

The oracles are independent of the code under test: a bit-string model of
the two packing orders (each code's bits written out one by one, the stream
cut into bytes), byte formulas transcribed from the bit diagrams of the
public packings (PyTorch's ``float4_e2m1fn_x2``: val1 in bits 7..4, val0 in
bits 3..0; AMD rocRoller's ``getFp6``), ml_dtypes' FP4 values, and for the
blocked layout the scalar index formula of cuBLAS's "1D block scaling
factors layout", torchao's ``to_blocked`` rearrangement retold in numpy,
and two offsets published in nvmath-python's documentation.
"""

from __future__ import annotations

import json
import pickle

import ml_dtypes
import numpy as np
import pytest

from fpsim.formats import format as lookup
from fpsim.testing import _compare, _dumps, compare, packing
from fpsim.testing.packing import from_blocked, pack, to_blocked, unpack

from hostile import cli, one_line_error, run

WIDTH = {"e2m1": 4, "e3m2": 6, "e2m3": 6}
ORDERS = ("low-first", "high-first")


# -- oracles ------------------------------------------------------------------------------------

def stream_oracle(codes, w, order):
    """Pack by writing out bits: low-first puts each code's bits least
    significant first into a stream that fills each byte from bit 0;
    high-first most significant first, filling each byte from bit 7."""
    bits = []
    for c in codes:
        b = [(int(c) >> i) & 1 for i in range(w)]
        bits += b if order == "low-first" else b[::-1]
    bits += [0] * (-len(bits) % 8)
    out = []
    for k in range(0, len(bits), 8):
        byte = bits[k:k + 8]
        weights = range(8) if order == "low-first" else range(7, -1, -1)
        out.append(sum(bit << i for bit, i in zip(byte, weights)))
    return bytes(out)


def fp6_bytes_oracle(c, order):
    """The three bytes of four FP6 codes, from the bit diagrams (c: 4 arrays)."""
    c0, c1, c2, c3 = (x.astype(np.uint8) for x in c)
    if order == "low-first":   # rocRoller getFp6: code 0 = b0 & 0x3f, code 1 = b0 >> 6 | ...
        return ((c1 & 3) << 6 | c0, (c2 & 0xF) << 4 | c1 >> 2, c3 << 2 | c2 >> 4)
    return (c0 << 2 | c1 >> 4, (c1 & 0xF) << 4 | c2 >> 2, (c2 & 3) << 6 | c3)


def cublas_offset(r, c, cols):
    """cuBLAS docs, 1D block scaling factors layout: 128x4 tiles in
    row-major order of tiles, each stored as 32 lines of 16 (line r % 32
    holds rows r % 32, +32, +64, +96, four columns each)."""
    tiles_per_row = (cols + 3) // 4
    tile = (r // 128) * tiles_per_row + c // 4
    return tile * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def torchao_to_blocked(a):
    """torchao.prototype.mx_formats.utils.to_blocked, retold in numpy."""
    rows, cols = a.shape
    nrb, ncb = -(-rows // 128), -(-cols // 4)
    padded = np.zeros((nrb * 128, ncb * 4), a.dtype)
    padded[:rows, :cols] = a
    blocks = padded.reshape(nrb, 128, ncb, 4).transpose(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(-1)


# -- packing: exhaustive ------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
def test_every_pair_of_fp4_codes_packs_as_the_nibble_order_says(order):
    c0, c1 = (g.reshape(-1).astype(np.uint8) for g in np.meshgrid(np.arange(16), np.arange(16)))
    codes = np.stack([c0, c1], axis=1).reshape(-1)
    data = pack(codes, "e2m1", order)
    expected = c1 << 4 | c0 if order == "low-first" else c0 << 4 | c1
    assert np.array_equal(data, expected)
    assert np.array_equal(unpack(data, "e2m1", codes.size, order), codes)
    assert data.tobytes() == stream_oracle(codes, 4, order)


@pytest.mark.parametrize("fmt", ["e3m2", "e2m3"])
@pytest.mark.parametrize("order", ORDERS)
def test_every_quadruple_of_fp6_codes_packs_and_unpacks(fmt, order):
    """All 64**4 groups of four codes, 64**3 at a time."""
    rest = np.stack(np.meshgrid(np.arange(64), np.arange(64), np.arange(64), indexing="ij"),
                    axis=-1).reshape(-1, 3).astype(np.uint8)
    for first in range(64):
        group = np.concatenate([np.full((rest.shape[0], 1), first, np.uint8), rest], axis=1)
        codes = group.reshape(-1)
        data = pack(codes, fmt, order)
        want = np.stack(fp6_bytes_oracle(group.T, order), axis=1).reshape(-1)
        assert np.array_equal(data, want), first
        assert np.array_equal(unpack(data, fmt, codes.size, order), codes), first


@pytest.mark.parametrize("fmt", list(WIDTH))
@pytest.mark.parametrize("order", ORDERS)
def test_random_counts_match_the_bit_stream_model(fmt, order):
    rng = np.random.default_rng(WIDTH[fmt] * 10 + len(order))
    for n in list(range(0, 13)) + list(rng.integers(13, 400, 20)):
        codes = rng.integers(0, 1 << WIDTH[fmt], n).astype(np.uint8)
        data = pack(codes, fmt, order)
        assert data.tobytes() == stream_oracle(codes, WIDTH[fmt], order), n
        assert data.size == -(-n * WIDTH[fmt] // 8) == packing.packed_size(n, fmt)
        assert np.array_equal(unpack(data, fmt, n, order), codes)


def test_an_odd_fp4_count_pads_the_last_byte_with_zero_and_ignores_it_when_read():
    assert pack(np.uint8([0x7, 0x9, 0x3]), "e2m1").tobytes() == bytes([0x97, 0x03])
    assert pack(np.uint8([0x7, 0x9, 0x3]), "e2m1", "high-first").tobytes() == bytes([0x79, 0x30])
    assert unpack(bytes([0x97, 0xF3]), "e2m1", 3).tolist() == [7, 9, 3]
    assert unpack(bytes([0x97, 0xF3]), "e2m1").tolist() == [7, 9, 3, 15]  # no count: 2 a byte


def test_fp4_packing_agrees_with_ml_dtypes_values():
    """Values through ml_dtypes' float4_e2m1fn: 1.0 and -6.0 are the byte
    0xF2 low nibble first (val0 in bits 3..0, as torch's float4_e2m1fn_x2)."""
    values = np.float32([1.0, -6.0, 0.5, -0.0, 3.0, 4.0])
    codes = values.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    data = pack(codes, "e2m1")
    assert data.tobytes().hex() == "f2" "81" "65"
    back = unpack(data, "e2m1", values.size).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    assert np.array_equal(back, values) and np.signbit(back[3])


@pytest.mark.parametrize("codes, fmt, message", [
    (np.uint8([16]), "e2m1", "codes out of range for e2m1: accepted 0..0xf (4 bits); the first: "
                             "0x10 at index 0"),
    (np.int16([3, -1]), "e3m2", "the first: -0x1 at index 1"),
    (np.float32([1.0]), "e2m1", "pack takes integer codes, not float32 values"),
    (np.uint8([1]), "fp16", "fp16 codes are 16 bits: packing applies to the 4- and 6-bit"),
    (np.uint8([1]), "e8m0", "e8m0 codes are 8 bits"),
])
def test_pack_refuses_what_it_cannot_pack(codes, fmt, message):
    with pytest.raises(packing.PackingError) as e:
        pack(codes, fmt)
    assert message in str(e.value)


def test_unpack_checks_the_size_and_the_order():
    with pytest.raises(packing.PackingError, match="3 packed e2m1 codes take 2 bytes, not 3"):
        unpack(bytes(3), "e2m1", 3)
    with pytest.raises(packing.PackingError, match="order 'middle': accepted: low-first, high-"):
        unpack(bytes(1), "e2m1", order="middle")
    with pytest.raises(packing.PackingError, match="1-byte integers"):
        unpack(np.uint16([1]), "e2m1")


# -- the blocked layout ---------------------------------------------------------------------------

SHAPES = [(128, 4), (256, 8), (1, 1), (130, 5), (300, 7), (127, 3), (0, 4), (5, 0), (129, 12)]


@pytest.mark.parametrize("shape", SHAPES)
def test_blocked_layout_follows_the_cublas_index_formula(shape):
    rows, cols = shape
    a = np.random.default_rng(rows * 1000 + cols).integers(1, 256, shape).astype(np.uint8)
    b = to_blocked(a)
    assert b.size == (-(-rows // 128) * 128) * (-(-cols // 4) * 4)
    want = np.zeros(b.size, np.uint8)   # the padding is zero
    for r in range(rows):
        for c in range(cols):
            want[cublas_offset(r, c, cols)] = a[r, c]
    assert np.array_equal(b, want)
    assert np.array_equal(b, torchao_to_blocked(a))
    assert np.array_equal(from_blocked(b, shape), a)
    index = np.arange(rows * cols)
    assert np.array_equal(packing.blocked_offsets(index, shape),
                          [cublas_offset(i // cols, i % cols, cols) for i in index])


def test_blocked_offsets_published_by_nvidia():
    """nvmath-python's get_block_scale_offset: an NVFP4 operand of 128 x 128
    (scales 128 x 8); the scale of row 5, K-group 2 is at 82, of K-group 5 at 593."""
    assert packing.blocked_offsets([5 * 8 + 2, 5 * 8 + 5], (128, 8)).tolist() == [82, 593]


def test_a_stack_of_matrices_is_blocked_one_matrix_after_another():
    a = np.random.default_rng(2).integers(0, 256, (3, 130, 5)).astype(np.uint8)
    b = to_blocked(a)
    one = packing.blocked_size((130, 5))
    assert b.size == 3 * one
    for k in range(3):
        assert np.array_equal(b[k * one:(k + 1) * one], torchao_to_blocked(a[k]))
    assert np.array_equal(from_blocked(b, a.shape), a)


def test_from_blocked_checks_the_size():
    with pytest.raises(packing.PackingError, match=r"shape \(300, 7\) in the blocked layout "
                       r"takes 3,072 elements \(1 x 384 x 8: rows padded to 128, columns to 4\)"):
        from_blocked(np.zeros(2100, np.uint8), (300, 7))
    with pytest.raises(packing.PackingError, match="a shape .* of two or more sizes"):
        to_blocked(np.zeros(5))


# -- dumps on disk ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", list(WIDTH))
@pytest.mark.parametrize("order", ORDERS)
def test_a_packed_dump_reads_any_span_of_its_logical_codes(tmp_path, fmt, order):
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 5, 7, 8, 63, 1001):
        codes = rng.integers(0, 1 << WIDTH[fmt], n).astype(np.uint8)
        path = tmp_path / f"{n}.bin"
        path.write_bytes(stream_oracle(codes, WIDTH[fmt], order))
        d = _dumps.read(path, lookup(fmt), shape=(n,), pack=order)
        assert np.array_equal(d.load(), codes)
        for start, stop in [(0, n), (n - 1, n), (n // 3, n // 2 + 1), (1, n)]:
            assert np.array_equal(d.read(start, stop), codes[start:stop]), (n, start, stop)
        assert pickle.loads(pickle.dumps(d)) == d   # a task elsewhere reads it as here


def test_a_blocked_dump_reads_its_logical_matrix(tmp_path, monkeypatch):
    monkeypatch.setattr(_dumps, "GATHER_BLOCK", 50)    # several gathers per read
    a = np.random.default_rng(4).integers(0, 256, (2, 300, 7)).astype(np.uint8)
    to_blocked(a).tofile(tmp_path / "s.bin")
    d = _dumps.read(tmp_path / "s.bin", lookup("e8m0"), shape=(2, 300, 7),
                    layout="blocked")
    assert np.array_equal(d.load(), a)
    flat = a.reshape(-1)
    assert np.array_equal(d.reshape(-1).read(2000, 2500), flat[2000:2500])


def cli_diff(capsys, *argv):
    status, out, err = run(capsys, "diff", *argv, "--json")
    return status, (json.loads(out) if out else None), err


@pytest.mark.parametrize("fmt", list(WIDTH))
@pytest.mark.parametrize("order", ORDERS)
def test_diff_of_a_packed_dump_and_its_unpacked_twin_agrees(capsys, tmp_path, fmt, order,
                                                            monkeypatch):
    monkeypatch.setattr(_compare, "CHUNK", 37)   # chunks that split groups of bytes
    n = 1001
    codes = np.random.default_rng(5).integers(0, 1 << WIDTH[fmt], n).astype(np.uint8)
    (tmp_path / "packed.bin").write_bytes(stream_oracle(codes, WIDTH[fmt], order))
    codes.tofile(tmp_path / "plain.bin")
    status, d, err = cli_diff(capsys, tmp_path / "packed.bin", tmp_path / "plain.bin", "--fmt",
                              fmt, "--actual-pack", order, "--shape", n)
    assert (status, err, d["exact"], d["total"]) == (0, "", n, n)
    # both packed, the logical shape a matrix
    (tmp_path / "twin.bin").write_bytes(stream_oracle(codes, WIDTH[fmt], order))
    status, d, _ = cli_diff(capsys, tmp_path / "packed.bin", tmp_path / "twin.bin", "--fmt",
                            fmt, "--pack", order, "--shape", "7x143")
    assert (status, d["shape"]) == (0, [7, 143])


@pytest.mark.parametrize("fmt, order, byte, mask, index", [
    ("e2m1", "low-first", 100, 0x10, 201),    # high nibble of byte 100: the second code
    ("e2m1", "low-first", 100, 0x01, 200),
    ("e2m1", "high-first", 100, 0x10, 200),
    ("e3m2", "low-first", 31, 0x80, 42),      # byte 1 of group 10: bits 7..4 are code 2's
    ("e3m2", "low-first", 31, 0x01, 41),      # bits 3..0 are code 1's bits 5..2
    ("e2m3", "high-first", 32, 0x01, 43),     # byte 2 of group 10: bits 5..0 are code 3's
    ("e2m3", "high-first", 32, 0x80, 42),
])
def test_a_corrupted_packed_byte_is_reported_at_its_logical_index(capsys, tmp_path, fmt, order,
                                                                  byte, mask, index):
    n = 999
    codes = np.random.default_rng(6).integers(0, 1 << WIDTH[fmt], n).astype(np.uint8)
    data = bytearray(stream_oracle(codes, WIDTH[fmt], order))
    data[byte] ^= mask
    (tmp_path / "device.bin").write_bytes(bytes(data))
    codes.tofile(tmp_path / "golden.bin")
    status, d, _ = cli_diff(capsys, tmp_path / "device.bin", tmp_path / "golden.bin", "--fmt",
                            fmt, "--actual-pack", order, "--shape", n)
    assert status == 1 and d["beyond_tolerance"] + d["within_tolerance"] == 1
    assert [o["index"] for o in d["offenders"]] == [[index]]
    assert int(d["offenders"][0]["expected"]["bits"], 16) == codes[index]


def test_diff_reads_a_blocked_scale_dump_against_a_row_major_one(capsys, tmp_path):
    scales = np.random.default_rng(8).integers(100, 150, (300, 7)).astype(np.uint8)
    device = torchao_to_blocked(scales)
    device[cublas_offset(200, 5, 7)] += 1
    device.tofile(tmp_path / "device.bin")
    scales.tofile(tmp_path / "golden.bin")
    status, d, _ = cli_diff(capsys, tmp_path / "device.bin", tmp_path / "golden.bin", "--fmt",
                            "e8m0", "--actual-layout", "blocked", "--shape", "300x7")
    assert status == 1 and [o["index"] for o in d["offenders"]] == [[200, 5]]
    status, d, _ = cli_diff(capsys, tmp_path / "device.bin", tmp_path / "golden.bin", "--fmt",
                            "e8m0", "--actual-layout", "blocked", "--shape", "300x7",
                            "--max-ulp", "1")
    assert status == 0


def test_diff_reads_packed_bytes_saved_as_npy(capsys, tmp_path):
    """torch's float4_e2m1fn_x2 tensors of M x K/2 bytes, saved as uint8."""
    codes = np.random.default_rng(9).integers(0, 16, (6, 10)).astype(np.uint8)
    np.save(tmp_path / "device.npy", (codes[:, 1::2] << 4 | codes[:, ::2]).astype(np.uint8))
    np.save(tmp_path / "golden.npy", codes.view(ml_dtypes.float4_e2m1fn))
    status, d, err = cli_diff(capsys, tmp_path / "device.npy", tmp_path / "golden.npy",
                              "--fmt", "e2m1", "--actual-pack", "low-first", "--shape", "6x10")
    assert (status, err, d["shape"]) == (0, "", [6, 10])


def test_ref_writes_packed_output(capsys, tmp_path):
    """A cast to FP4 whose values ml_dtypes gives, packed as torch packs them."""
    values = np.float32([0.5, -1.0, 6.0, 2.9, -0.7, 1.6, 5.0])
    values.tofile(tmp_path / "x.bin")
    status, out, _ = run(capsys, "ref", "cast", tmp_path / "x.bin", tmp_path / "y.bin", "--fmt",
                         "fp32", "--out-fmt", "e2m1", "--out-pack", "low-first")
    assert status == 0 and "raw bytes, packed low-first" in out
    codes = values.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    pairs = np.append(codes, np.uint8(0)).astype(np.uint8).reshape(-1, 2)
    assert (tmp_path / "y.bin").read_bytes() == (pairs[:, 1] << 4 | pairs[:, 0]).tobytes()
    # read back packed: the inputs' packing is the output's too when the format is the same
    status, _, _ = run(capsys, "ref", "relu", tmp_path / "y.bin", tmp_path / "z.bin", "--fmt",
                       "e2m1", "--pack", "low-first", "--shape", "7")
    relu = np.where(np.signbit(codes.view(ml_dtypes.float4_e2m1fn)), np.uint8(0), codes)
    assert status == 0 and unpack((tmp_path / "z.bin").read_bytes(), "e2m1", 7).tolist() \
        == relu.tolist()


def test_ref_converts_a_scale_matrix_between_layouts(capsys, tmp_path):
    scales = np.random.default_rng(10).integers(0, 255, (130, 5)).astype(np.uint8)
    scales.tofile(tmp_path / "rows.bin")
    status, out, _ = run(capsys, "ref", "cast", tmp_path / "rows.bin", tmp_path / "blocked.bin",
                         "--fmt", "e8m0", "--out-fmt", "e8m0", "--shape", "130x5",
                         "--out-layout", "blocked")
    assert status == 0 and "blocked layout" in out
    assert (tmp_path / "blocked.bin").read_bytes() == torchao_to_blocked(scales).tobytes()
    status, _, _ = run(capsys, "ref", "cast", tmp_path / "blocked.bin", tmp_path / "back.npy",
                       "--fmt", "e8m0", "--out-fmt", "e8m0", "--shape", "130x5", "--layout",
                       "blocked", "--out-layout", "row-major")
    assert status == 0 and np.array_equal(np.load(tmp_path / "back.npy"), scales)


def test_compare_of_unpacked_codes_names_the_logical_index():
    golden = np.arange(12, dtype=np.uint8).reshape(3, 4) % 16
    device = pack(golden, "e2m1").copy()
    device[3] ^= 0x10     # the high nibble of byte 3: element 7, row 1 column 3
    r = compare(unpack(device, "e2m1", 12).reshape(3, 4), golden, "e2m1")
    assert not r.ok and r.offenders[0].index == (1, 3)


# -- hostile input ------------------------------------------------------------------------------

@pytest.fixture
def files(tmp_path):
    np.zeros(10, np.uint8).tofile(tmp_path / "ten.bin")
    np.zeros(5, np.uint8).tofile(tmp_path / "five.bin")
    np.save(tmp_path / "floats.npy", np.zeros(4, np.float32))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.zeros((4, 4), np.uint8)))
    return tmp_path


@pytest.mark.parametrize("argv, needles", [
    (["five.bin", "ten.bin", "--fmt", "e2m1", "--actual-pack", "low-first", "--shape", "12"],
     ["ACTUAL {d}/five.bin holds 5 bytes; 12 e2m1 codes (shape 12) packed 4 bits each take 6"]),
    (["ten.bin", "ten.bin", "--fmt", "e3m2", "--pack", "high-first", "--shape", "2x7"],
     ["holds 10 bytes; 14 e3m2 codes (shape 2x7) packed 6 bits each take 11"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--layout", "blocked", "--shape", "2x5"],
     ["ACTUAL {d}/ten.bin holds 10 e8m0 elements; shape 2x5 in the blocked layout takes 1,024 "
      "(128 x 8: rows padded to a multiple of 128, columns to 4)"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--layout", "blocked", "--shape", "2x200x5"],
     ["takes 4,096 (2 x 256 x 8: rows padded"]),
    (["ten.bin", "ten.bin", "--fmt", "e2m1", "--actual-pack", "low-first"],
     ["length mismatch: ACTUAL {d}/ten.bin has 20 elements, EXPECTED {d}/ten.bin has 10; a "
      "packed dump's last byte may hold padding: give the count with --shape"]),
    (["ten.bin", "ten.bin", "--fmt", "e2m1", "--pack", "sideways"],
     ["argument --pack: invalid choice: 'sideways'", "low-first", "high-first"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--layout", "swizzled"],
     ["argument --layout: invalid choice: 'swizzled'", "row-major", "blocked"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--expected-pack", "odd"],
     ["argument --expected-pack: invalid choice: 'odd'", "none"]),
    (["ten.bin", "ten.bin", "--fmt", "fp16", "--pack", "low-first"],
     ["--pack low-first: fp16 codes are 16 bits; packing applies to the 4- and 6-bit formats "
      "(e2m1, e3m2, e2m3)"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--actual-pack", "high-first"],
     ["--actual-pack high-first: e8m0 codes are 8 bits; packing applies to"]),
    (["ten.bin", "ten.bin", "--fmt", "e2m1", "--layout", "blocked", "--shape", "2x10"],
     ["--layout blocked: e2m1 codes are 4 bits; the blocked layout is of 8-bit scale codes, "
      "one a byte (e8m0, e4m3)"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--layout", "blocked"],
     ["the blocked layout needs the logical shape of the scale matrix, rows x cols (e.g. "
      "300x7): give --shape"]),
    (["ten.bin", "ten.bin", "--fmt", "e8m0", "--layout", "blocked", "--shape", "10"],
     ["give --shape"]),
    (["floats.npy", "ten.bin", "--fmt", "e2m1", "--actual-pack", "low-first"],
     ["floats.npy holds float32 data; a packed dump is bytes: accepted: a .npy file of uint8"]),
    (["fortran.npy", "ten.bin", "--fmt", "e2m1", "--actual-pack", "low-first"],
     ["fortran.npy is Fortran-ordered; a packed or blocked dump is a stream of bytes"]),
])
def test_bad_packing_options_and_sizes_are_one_line_errors(capsys, files, argv, needles):
    status, out, err = run(capsys, "diff", *[files / a if a.endswith((".bin", ".npy")) else a
                                             for a in argv])
    assert status == 2 and out == ""
    assert err.startswith("fpsim: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle.format(d=files) in err, err


def test_unknown_pack_values_name_the_accepted_ones_in_a_subprocess(files):
    p = cli("diff", files / "ten.bin", files / "ten.bin", "--fmt", "e2m1", "--pack", "nibbles")
    one_line_error(p.returncode, p.stderr, "--pack", "low-first", "high-first")
    p = cli("ref", "cast", files / "ten.bin", files / "out.bin", "--fmt", "e2m1", "--out-fmt",
            "fp16", "--out-pack", "low-first")
    one_line_error(p.returncode, p.stderr, "--out-pack low-first: fp16 codes are 16 bits")
    assert not (files / "out.bin").exists()


def test_ref_refuses_a_blocked_output_that_is_not_a_matrix(capsys, files):
    status, _, err = run(capsys, "ref", "cast", files / "ten.bin", files / "out.bin", "--fmt",
                         "e8m0", "--out-fmt", "e8m0", "--out-layout", "blocked")
    assert status == 2 and "the output's shape is 10" in err and err.count("\n") == 1
    assert not (files / "out.bin").exists()
