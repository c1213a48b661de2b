"""Library GEMMs on Dask (issue 30): blocks of outputs on Dask's local
threads, local processes and a 2-worker distributed cluster give the bits
of the in-process engine, with C, per-row/column scales, split-K and the
row model (inputs that are not finite); bad scheduler arguments are clear
errors.  Run by ``tox -e dask``."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fpsim.mma as mma
from fpsim.mma import LibraryGEMM, Schedule
from fpsim.mma import gemm as engine

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        yield c


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(engine, "_BLOCK_MACS", 1 << 18)  # many blocks, ragged edges


def _cases():
    rng = np.random.default_rng(7)
    f8 = ml_dtypes.float8_e4m3fn
    a = rng.standard_normal((70, 300)).astype(f8)
    b = rng.standard_normal((300, 45)).astype(f8)
    sa = rng.uniform(0.5, 2, (70, 1)).astype(np.float32).astype(np.float64)
    sb = rng.uniform(0.5, 2, (1, 45)).astype(np.float32).astype(np.float64)
    h = rng.standard_normal((40, 260)).astype(np.float16)
    hb = rng.standard_normal((260, 33)).astype(np.float16)
    hb[5, 3] = np.inf  # a column on the row model
    c = rng.standard_normal((40, 33)).astype(np.float16)
    return [
        (mma.cublas("h100", "e4m3", out="bf16"), (a, b), dict(scale_a=sa, scale_b=sb)),
        (mma.cublas("h100", "fp16", out="fp16", split_k=3), (h, hb, c), {}),
        (LibraryGEMM(mma.preset("mi300x", "fp16"), Schedule(compute=None), "fp32"),
         (h, hb), {}),
    ]


@pytest.mark.parametrize("where", ["local", "processes", "cluster"])
def test_blocks_on_dask_give_the_bits_of_the_engine(where, cluster):
    scheduler = cluster.scheduler_address if where == "cluster" else where
    for g, args, kw in _cases():
        whole = g(*args, **kw)
        spread = g(*args, **kw, scheduler=scheduler, workers=2)
        assert spread.dtype == whole.dtype
        assert np.array_equal(spread.view(np.uint8), whole.view(np.uint8)), g


def test_a_distributed_client_is_accepted(cluster):
    g, args, kw = _cases()[0]
    with distributed.Client(cluster, set_as_default=False) as client:
        assert np.array_equal(g(*args, **kw, scheduler=client).view(np.uint16),
                              g(*args, **kw).view(np.uint16))


def test_bad_schedulers_are_clear_errors():
    g, args, kw = _cases()[0]
    with pytest.raises(ValueError, match="accepted: local, threads, processes"):
        g(*args, **kw, scheduler="nowhere")
    with pytest.raises(ConnectionError, match="cannot reach the Dask scheduler"):
        g(*args, **kw, scheduler="tcp://127.0.0.1:1", timeout=1)
    with pytest.raises(ValueError, match="workers"):
        g(*args, **kw, scheduler="local", workers=0)
    with pytest.raises(ValueError, match="convert="):
        engine.run(g.model, g.schedule, np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8),
                   g.out, convert=lambda x, s, d: x, scheduler="local")
