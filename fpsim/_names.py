"""The nearest accepted names to a mistyped one, for "did you mean" in
error messages (formats, TestFloat operations, command-line options).

Contract: :func:`nearest` takes the name given and the names accepted and
returns at most ``n`` of the accepted names, best first, never raising on
any string.  Names are compared by their *key*: lower case, with every
character that is not a letter or a digit dropped, so ``fp-16``, ``FP_16``
and ``--fp16`` all have the key ``fp16``.  Accepted names whose key equals
the given name's (a spelling away: ``fp-16`` -> ``fp16``, ``--level`` ->
``-level``) are returned alone; otherwise the names
:func:`difflib.get_close_matches` finds close by key.  Nothing here imports
more than the standard library.

>>> nearest("fp-16", ["fp64", "fp32", "fp16", "bf16"])
['fp16']
>>> nearest("e4m3fnuzz", ["e4m3", "e4m3fnuz", "e5m2fnuz"])
['e4m3fnuz', 'e5m2fnuz', 'e4m3']
>>> nearest("zzz", ["fp16", "bf16"])
[]
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["key", "nearest", "alternatives"]

_NOT_ALNUM = re.compile(r"[^0-9a-z]")


def key(name: str) -> str:
    """``name`` in lower case without anything but letters and digits.

    >>> key("--Fp8_E4M3")
    'fp8e4m3'
    """
    return _NOT_ALNUM.sub("", name.lower())


def nearest(name: str, names: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """At most ``n`` of ``names`` nearest to ``name``, best first (see the
    module's docstring); none when nothing is close."""
    by_key: dict[str, list[str]] = {}
    for accepted in names:
        by_key.setdefault(key(accepted), []).append(accepted)
    wanted = key(name)
    if not wanted:
        return []
    if wanted in by_key:  # a spelling away: nothing else is as near
        return by_key[wanted][:n]
    found: list[str] = []
    for k in difflib.get_close_matches(wanted, list(by_key), n=n, cutoff=cutoff):
        found += by_key[k]
    return found[:n]


def alternatives(names: list[str], word: str = "or") -> str:
    """``a``, ``a or b``, ``a, b or c``.

    >>> alternatives(["e4m3", "e5m2", "e4m3fnuz"])
    'e4m3, e5m2 or e4m3fnuz'
    """
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} {word} {names[-1]}"
