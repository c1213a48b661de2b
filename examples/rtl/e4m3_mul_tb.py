"""cocotb testbench for e4m3_mul.v: drive every operand pair, dump the outputs.

The DUT is combinational, so each pair is one write of the inputs and a 1 ns
wait; the outputs are read back and collected in a numpy array of shape
(2, 256, 256), indexed ``[sat, a, b]``, which is saved to the ``.npy`` file
named by the environment variable ``E4M3_MUL_DUMP``.  The check against
fpsim runs afterwards, on the whole array at once (test_e4m3_mul.py): the
simulator only simulates.

This module runs inside the simulator (cocotb loads it); start it through
test_e4m3_mul.py (pytest) or cocotb's runner, not directly.
"""

from __future__ import annotations

import os
import time

import cocotb
import numpy as np
from cocotb.triggers import Timer


@cocotb.test()
async def all_pairs(dut) -> None:
    """Apply all 65,536 (a, b) pairs under sat = 0 and sat = 1."""
    path = os.environ["E4M3_MUL_DUMP"]
    width = len(dut.y)
    out = np.zeros((2, 256, 256), dtype=np.uint16 if width > 8 else np.uint8)
    start = time.perf_counter()
    for sat in (0, 1):
        dut.sat.value = sat
        for a in range(256):
            dut.a.value = a
            row = out[sat, a]
            for b in range(256):
                dut.b.value = b
                await Timer(1, "ns")
                # an X or Z anywhere in y raises here: the DUT must drive
                # every output bit for every input
                row[b] = dut.y.value.to_unsigned()
    np.save(path, out)
    dut._log.info("%d-bit output, %d pairs in %.1f s, saved to %s", width, out.size,
                  time.perf_counter() - start, path)
