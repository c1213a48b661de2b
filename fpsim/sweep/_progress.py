"""The progress file: which chunks of a sweep are done and their merged
tally, so that an interrupted sweep resumes without redoing them.

JSON, written atomically (a fresh temporary file renamed over the old one),
so an interruption at any moment leaves the previous or the new state::

    {"fpsim_sweep_progress": 3,
     "spec": {...everything that decides the report...,
              "candidate_code": "sha256:..."},  # what the candidate computes
     "chunks": 4096,
     "done": [[0, 1200], [1204, 1210]],      # half-open ranges of chunk numbers
     "partial": {...counts, histogram, largest distance, first offenders...},
     "digest": "sha256 of the above"}

A progress file decides what a resumed sweep reports, so it is read as
hostile: it must be a regular file of a sane size, every field must have
its type and range, the counts must add up (to each other and to the
tuples in the chunks done), and the digest must match the content, so that
a file edited by hand (counts set to zero, chunks added) is refused rather
than turned into a false "agrees".  The candidate is told apart by its code
and the values it holds (:func:`fpsim.sweep._candidate.identity`), not by
its name: a file is resumed only by a candidate of the same identity, and
never by one that has none (nor is a file of version 2, which recorded the
name alone, ever resumed).  One sweep at a time may use a file: a lock
(``FILE.lock``, held with ``flock`` while the sweep runs) refuses a second
one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._files import open_regular, write_atomic
from ..testing.tally import BINS, COUNTS, Partial

VERSION = 3
MAX_BYTES = 1 << 28  # far above any real file: its size is that of the offenders and ranges
_KINDS = ("nan", "inf", "signed_zero", "ulp")


def ranges(done: set[int]) -> list[list[int]]:
    """``done`` as sorted half-open ranges."""
    out: list[list[int]] = []
    for c in sorted(done):
        if out and out[-1][1] == c:
            out[-1][1] = c + 1
        else:
            out.append([c, c + 1])
    return out


def _digest(data: dict[str, Any]) -> str:
    body = {k: data[k] for k in ("fpsim_sweep_progress", "spec", "chunks", "done", "partial")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def save(path: str, spec: dict[str, Any], chunks: int, done: set[int], partial: Partial) -> None:
    data: dict[str, Any] = {"fpsim_sweep_progress": VERSION, "spec": spec, "chunks": chunks,
                            "done": ranges(done), "partial": partial.to_dict()}
    data["digest"] = _digest(data)
    # Whole or not at all: a fresh file beside the target, renamed over it.
    write_atomic(path, json.dumps(data), "progress file")


def load(path: str, spec: dict[str, Any], chunks: int,
         tuples_in: Callable[[set[int]], int],
         unidentified: str = "") -> tuple[set[int], Partial] | None:
    """The done chunks and their tally from ``path``; None if there is no
    such file.  ``spec`` holds ``candidate_code``, the candidate's identity
    (None where it has none, ``unidentified`` then saying why);
    ``tuples_in(done)`` counts the tuples of chunks ``done``.  A file of
    another sweep (any difference in what decides the report, the
    candidate's code included), a file when the candidate has no identity,
    or one that does not add up, is an error naming the file, never silently
    restarted, mixed or believed."""
    if not os.path.exists(path):  # (a dangling symlink too: save() writes the file it points to)
        return None
    if spec.get("candidate_code") is None:
        raise ValueError(f"progress file {path}: the candidate {spec.get('candidate')!r} "
                         f"cannot be identified by its code ({unidentified or 'unknown'}), so "
                         "fpsim cannot tell whether the chunks this file holds were done by "
                         "it; delete the file, or pass another progress file, to sweep afresh")
    fd, info = open_regular(path, "progress file")  # never waits on a FIFO
    try:
        with os.fdopen(fd, "rb") as f:
            if info.st_size > MAX_BYTES:
                raise ValueError(f"{info.st_size} bytes is not the size of a progress file")
            text = f.read(MAX_BYTES + 1)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise ValueError("not JSON (a progress file is a JSON file fpsim wrote)") from None
        done, partial = _read(data, spec, chunks, tuples_in)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ValueError(f"progress file {path}: {reason}") from None
    return done, partial


def _read(data: Any, spec: dict[str, Any], chunks: int,
          tuples_in: Callable[[set[int]], int]) -> tuple[set[int], Partial]:
    if not isinstance(data, dict) or "fpsim_sweep_progress" not in data:
        raise ValueError(f"not an fpsim sweep progress file (version {VERSION})")
    version = data["fpsim_sweep_progress"]
    if version == 2:
        raise ValueError("written by an earlier fpsim (version 2), which recorded the candidate "
                         "by its name alone, so it cannot tell which code did its chunks; "
                         "delete it to start the sweep over")
    if version != VERSION:
        raise ValueError(f"written as version {version!r}, this fpsim reads version {VERSION}; "
                         "delete it to start the sweep over")
    missing = {"spec", "chunks", "done", "partial", "digest"} - set(data)
    if missing:
        raise ValueError(f"it lacks {', '.join(sorted(missing))}")
    if data["digest"] != _digest(data):
        raise ValueError("its content does not match its digest: it was edited or damaged; "
                         "delete it to start the sweep over")
    theirs = data["spec"]
    if not isinstance(theirs, dict):
        raise ValueError("its spec is not an object")
    keys = sorted(k for k in set(theirs) | set(spec)
                  if theirs.get(k) != spec.get(k) and k != "candidate_code")
    if keys:
        raise ValueError(f"it belongs to another sweep (differs in: {', '.join(keys)}); "
                         "use another file, or delete it to start over")
    if theirs.get("candidate_code") != spec["candidate_code"]:
        raise ValueError(f"it was written by another candidate: {spec['candidate']!r} then had "
                         "other code, or held other values (its identity "
                         f"{_short(theirs.get('candidate_code'))}, now "
                         f"{_short(spec['candidate_code'])}); use another file, or delete it "
                         "to start over")
    if data["chunks"] != chunks or type(data["chunks"]) is not int:
        raise ValueError(f"it counts {data['chunks']!r} chunks, this sweep {chunks}")
    done = _done(data["done"], chunks)
    partial = _partial(data["partial"], spec, tuples_in(done))
    return done, partial


def _short(code: Any) -> str:
    """An identity in a message: its first digits."""
    return f"{code[:19]}..." if isinstance(code, str) else "none"


def _done(given: Any, chunks: int) -> set[int]:
    """The chunk numbers of sorted, disjoint, in-range half-open ranges,
    checked before they are expanded (so a range cannot ask for memory the
    sweep does not have)."""
    if not isinstance(given, list):
        raise ValueError("its chunks done are not a list of ranges")
    last = 0
    for r in given:
        if not (isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r)
                and last <= r[0] < r[1] <= chunks):
            raise ValueError(f"its chunks done hold {r!r}: not a sorted, disjoint range of "
                             f"chunks 0..{chunks}")
        last = r[1]
    return {c for a, b in given for c in range(a, b)}


def _partial(given: Any, spec: dict[str, Any], tuples: int) -> Partial:
    """The tally, checked against itself and the tuples it must cover."""
    if not isinstance(given, dict):
        raise ValueError("its tally is not an object")
    for name in COUNTS:
        if type(given.get(name)) is not int or given[name] < 0:
            raise ValueError(f"its tally's {name} is not a count: {given.get(name)!r}")
    bins, top, offenders = given.get("bins"), given.get("top"), given.get("offenders")
    if not (isinstance(bins, list) and len(bins) == BINS
            and all(type(b) is int and b >= 0 for b in bins)):
        raise ValueError(f"its tally's histogram is not {BINS} counts")
    if not (top is None or (isinstance(top, list) and len(top) == 3
                            and all(type(x) is int and x >= 0 for x in top))):
        raise ValueError(f"its tally's largest distance is not (distance, rank, index): {top!r}")
    if not isinstance(offenders, list) or not all(
            isinstance(o, list) and len(o) == 6 and type(o[0]) is int and type(o[1]) is int
            and o[2] in _KINDS and (o[3] is None or type(o[3]) is int)
            and type(o[4]) is int and type(o[5]) is int for o in offenders):
        raise ValueError("its tally's offenders are not (rank, index, kind, ulp, actual, "
                         "expected) lists")
    c = given
    tol = spec.get("tolerance", {})
    limit, max_ulp = tol.get("offenders", 0), tol.get("max_ulp", 0)
    problems = []
    if c["total"] != tuples:
        problems.append(f"it counts {c['total']} tuples, but its chunks done hold {tuples}")
    if c["exact"] + c["within_tolerance"] + c["beyond_tolerance"] != c["total"]:
        problems.append("exact, within and beyond tolerance do not add up to the total")
    kinds = c["nan_mismatch"] + c["inf_mismatch"] + c["signed_zero_mismatch"] + c["ulp_mismatch"]
    if kinds != c["beyond_tolerance"]:
        problems.append("the mismatch kinds do not add up to the pairs beyond tolerance")
    if sum(bins) > c["total"] or (sum(bins) > 0) != (top is not None):
        problems.append("the histogram does not fit the total and the largest distance")
    elif top is not None and not c["beyond_tolerance"] and top[0] > max_ulp:
        problems.append("its largest distance is beyond tolerance, but no pair is")
    if len(offenders) != min(c["beyond_tolerance"], limit) \
            or [o[0] for o in offenders] != sorted({o[0] for o in offenders}):
        problems.append("its offenders do not match the pairs beyond tolerance")
    if problems:
        raise ValueError("its tally does not add up (" + "; ".join(problems) + "): it was "
                         "edited or damaged; delete it to start the sweep over")
    return Partial.from_dict(given)


@contextmanager
def lock(path: str) -> Iterator[None]:
    """Hold ``path + ".lock"`` while a sweep uses the progress file ``path``;
    a second sweep on the same file is refused, not interleaved.  The lock
    is the kernel's (``flock``): a sweep that dies releases it.  Where there
    is no ``fcntl`` (Windows) the file is not locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    name = path + ".lock"
    fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"progress file {path} is in use by another sweep (it holds "
                             f"{name}); wait for it to end, or use another file") from None
        yield
    finally:
        os.close(fd)  # releases the lock
