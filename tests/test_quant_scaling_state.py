"""Stateful scaling: delayed scaling's scale sequence from a scripted
sequence of amaxes (history roll, margin, interval, amax_compute), derived
by hand from the documented rule; the loss scaler's scale sequence from a
scripted sequence of finite/non-finite steps, derived by hand from
GradScaler's documented rules; and the loss-scaling story (FP16 gradients
vanish without a scale, recover with one; BF16 needs none)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fpsim.quant import DelayedScaling, LossScaler, scale_sweep

AMAXES = [1.0, 4.0, 2.0, 0.5, 0.5, 0.5]


def run(ds: DelayedScaling, amaxes):
    used = []
    for a in amaxes:
        q = ds.step(np.float32([a, -a / 4, 0.0]))
        used.append(float(q.scale))
    return used


@pytest.mark.parametrize("kw,want_used,want_final", [
    # history_len 3, margin 1: s = 448 / a / 2 after each step, a = max(history)
    ({"history_len": 3, "margin": 1}, [1, 224, 56, 56, 56, 112], 448),
    # the most recent amax alone
    ({"history_len": 3, "margin": 1, "amax_compute": "most_recent"},
     [1, 224, 56, 112, 448, 448], 448),
    # updates every second step only (after steps 2, 4 and 6)
    ({"history_len": 3, "margin": 1, "interval": 2}, [1, 1, 56, 56, 56, 56], 448),
    # a history of one entry, no margin
    ({"history_len": 1}, [1, 448, 112, 224, 896, 896], 896),
])
def test_delayed_scaling_sequence(kw, want_used, want_final):
    ds = DelayedScaling("e4m3", **kw)
    assert run(ds, AMAXES) == want_used
    assert float(ds.scale) == want_final


def test_delayed_scaling_history_and_elements():
    ds = DelayedScaling("e4m3", history_len=3)
    run(ds, [1.0, 4.0])
    assert ds.history.tolist() == [4.0, 1.0, 0.0]
    x = np.float32([0.3, -1.7, 2.5])
    s = np.float32(ds.scale)
    q = ds.step(x)
    want = np.clip((x * s).astype(np.float64), -448, 448).astype(np.float32).astype(
        ml_dtypes.float8_e4m3fn)
    assert np.array_equal(q.data.view(np.uint8), want.view(np.uint8))
    assert q.dequantize().tolist() == (q.data.astype(np.float64) / float(s)).tolist()


def test_delayed_scaling_keeps_the_scale_on_zero_amax():
    ds = DelayedScaling("e5m2", history_len=2)
    run(ds, [0.0, 0.0])
    assert float(ds.scale) == 1.0
    with pytest.raises(ValueError, match="history_len"):
        DelayedScaling(history_len=0)
    with pytest.raises(ValueError, match="amax_compute"):
        DelayedScaling(amax_compute="mean")


def test_loss_scaler_follows_gradscaler_rules():
    """growth_interval 3: three clean steps double the scale; a step with
    an inf halves it and restarts the count."""
    s = LossScaler(init_scale=2.0**16, growth_interval=3)
    steps = [False, False, False, True, False, True, True, False, False, False]
    got = []
    for found_inf in steps:
        s.update(found_inf)
        got.append(s.scale)
    assert got == [65536, 65536, 131072, 65536, 65536, 32768, 16384, 16384, 16384, 32768]
    assert s.growth_tracker == 0


def test_loss_scaler_does_not_grow_into_infinity():
    s = LossScaler(init_scale=2.0**127, growth_interval=1)
    s.update(False)
    assert s.scale == 2.0**127 and s.growth_tracker == 0


def test_fp16_gradients_overflow_then_recover():
    """Gradients up to 2.0 at scale 2**16: 131072 overflows FP16 (step
    skipped, scale halved); 65536 rounds to inf too (above 65504 + 16);
    at 2**14 the step goes through."""
    g = np.float32([2.0, 1e-3, -3e-7, 1e-9])
    s = LossScaler()
    records = [s.step(g, "fp16") for _ in range(3)]
    assert [r.scale for r in records] == [65536, 32768, 16384]
    assert [r.skipped for r in records] == [True, True, False]
    assert records[0].overflow_fraction == 0.25 and records[2].overflow_fraction == 0.0


def test_fp16_needs_a_scale_and_bf16_does_not():
    rng = np.random.default_rng(0)
    g = (10.0 ** rng.uniform(-10, -3, 100_000) * rng.choice([-1, 1], 100_000)).astype(np.float32)
    table = scale_sweep(g, scales=[1.0, 2.0**16])
    cell = {(r["scale"], r["format"]): r for r in table.rows}
    # below FP16's smallest subnormal's half (2**-25) a gradient becomes 0:
    # log10(2**-25) = -7.53, about 35% of 10**U(-10, -3)
    assert 0.3 < cell[(1.0, "fp16")]["underflow"] < 0.4
    assert cell[(2.0**16, "fp16")]["underflow"] == 0.0
    assert cell[(1.0, "bf16")]["underflow"] == 0.0
    assert all(r["overflow"] == 0.0 for r in table.rows)
    assert "fp16 under" in str(table) and "2**16" in str(table)
    s = LossScaler()
    assert s.step(g, "fp16").underflow_fraction == 0.0
    assert LossScaler(init_scale=1.0).step(g, "fp16").underflow_fraction > 0.3
    assert LossScaler(init_scale=1.0).step(g, "bf16").underflow_fraction == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="growth_factor"):
        LossScaler(growth_factor=1.0)
    with pytest.raises(ValueError, match="backoff_factor"):
        LossScaler(backoff_factor=2.0)
    with pytest.raises(ValueError, match="growth_interval"):
        LossScaler(growth_interval=0)
