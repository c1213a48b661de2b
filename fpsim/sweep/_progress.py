"""The progress file: which chunks of a sweep are done and their merged
tally, so that an interrupted sweep resumes without redoing them.

JSON, written atomically (a temporary file renamed over the old one), so
an interruption at any moment leaves the previous or the new state::

    {"fpsim_sweep_progress": 1,
     "spec": {...everything that decides the report...},
     "chunks": 4096,
     "done": [[0, 1200], [1204, 1210]],      # half-open ranges of chunk numbers
     "partial": {...counts, histogram, largest distance, first offenders...}}
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..testing._tally import Partial

VERSION = 1


def ranges(done: set[int]) -> list[list[int]]:
    """``done`` as sorted half-open ranges."""
    out: list[list[int]] = []
    for c in sorted(done):
        if out and out[-1][1] == c:
            out[-1][1] = c + 1
        else:
            out.append([c, c + 1])
    return out


def save(path: str, spec: dict[str, Any], chunks: int, done: set[int], partial: Partial) -> None:
    data = {"fpsim_sweep_progress": VERSION, "spec": spec, "chunks": chunks,
            "done": ranges(done), "partial": partial.to_dict()}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: str, spec: dict[str, Any], chunks: int) -> tuple[set[int], Partial] | None:
    """The done chunks and their tally from ``path``; None if there is no
    such file.  A file of another sweep (any difference in what decides the
    report) is an error, not silently restarted or mixed."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            data = json.load(f)
        if data.get("fpsim_sweep_progress") != VERSION:
            raise ValueError("not an fpsim sweep progress file (version 1)")
        theirs = data["spec"]
        if theirs != spec:
            keys = sorted(k for k in set(theirs) | set(spec) if theirs.get(k) != spec.get(k))
            raise ValueError(f"it belongs to another sweep (differs in: {', '.join(keys)}); "
                             "use another file, or delete it to start over")
        if data["chunks"] != chunks:
            raise ValueError(f"it counts {data['chunks']} chunks, this sweep {chunks}")
        done = {c for a, b in data["done"] for c in range(int(a), int(b))}
        if any(c < 0 or c >= chunks for c in done):
            raise ValueError("it lists chunks this sweep does not have")
        partial = Partial.from_dict(data["partial"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"progress file {path}: {exc}") from None
    return done, partial
