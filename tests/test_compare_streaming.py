"""Dumps larger than the memory a comparison may use stream through it.

The process's data limit (RLIMIT_DATA: heap and private anonymous memory;
read-only file mappings do not count) is set below the size of either dump:
loading one of them fails, while ``python -m fpsim diff`` of both gives the
full report.  Linux only (RLIMIT_DATA covers mmap'ed anonymous memory there
since 4.7).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

resource = pytest.importorskip("resource")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_DATA semantics are Linux's")

N = 1 << 27          # 256 MiB per FP16 dump
LIMIT = 200 << 20    # bytes of data the comparing process may allocate


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (LIMIT, LIMIT))


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    expected = np.random.default_rng(0).integers(0, 0x7C00, N, dtype=np.uint16)
    expected.tofile(d / "e.bin")
    expected[[3, N // 2, N - 1]] += np.uint16(2)
    expected[N - 10] = 0x7E00
    expected.tofile(d / "a.bin")
    return d / "a.bin", d / "e.bin"


def test_loading_a_dump_exceeds_the_limit(dumps):
    code = f"import numpy as np; np.fromfile({str(dumps[0])!r}, np.uint16).sum()"
    p = subprocess.run([sys.executable, "-c", code], preexec_fn=_limited, capture_output=True,
                       text=True)
    assert p.returncode != 0 and "MemoryError" in p.stderr


def test_diff_streams_dumps_larger_than_its_memory(dumps):
    p = subprocess.run([sys.executable, "-m", "fpsim", "diff", str(dumps[0]), str(dumps[1]),
                        "--fmt", "fp16", "--json", "--max-ulp", "1"], preexec_fn=_limited,
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    r = json.loads(p.stdout)
    assert r["total"] == N and r["exact"] == N - 4
    assert r["ulp_mismatch"] == 3 and r["nan_mismatch"] == 1 and r["max_ulp"] == 2
    assert [o["index"][0] for o in r["offenders"]] == [3, N // 2, N - 10, N - 1]
