"""Step-by-step oracles of fpsim.ops' running sums, in numpy (or ml_dtypes)
arithmetic of the accumulator's type, each addition rounded once; shared by
the operator tests.  They never call fpsim."""

from __future__ import annotations

import numpy as np


def seq_sum(terms, acc_dtype):
    """acc = +0; acc = acc + t for each t (terms along the last axis)."""
    acc = np.zeros(terms.shape[:-1], acc_dtype)
    for k in range(terms.shape[-1]):
        acc = (acc + terms[..., k].astype(acc_dtype)).astype(acc_dtype)
    return acc


def pairwise_sum(terms, acc_dtype):
    """Adjacent pairs, level by level, an odd last term carried up (+0 if none)."""
    level = [terms[..., k].astype(acc_dtype) for k in range(terms.shape[-1])]
    if not level:
        return np.zeros(terms.shape[:-1], acc_dtype)
    while len(level) > 1:
        nxt = [(level[i] + level[i + 1]).astype(acc_dtype) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return np.asarray(level[0], acc_dtype)


def pieces_sum(terms, acc_dtype, sizes):
    """Pieces of the given sizes summed sequentially from +0, then the piece
    sums sequentially from +0 (empty pieces skipped)."""
    outer = np.zeros(terms.shape[:-1], acc_dtype)
    start = 0
    for size in sizes:
        if size:
            outer = (outer + seq_sum(terms[..., start:start + size], acc_dtype)).astype(acc_dtype)
        start += size
    return outer
