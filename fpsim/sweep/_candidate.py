"""The kernel under test: any Python callable on numpy arrays.

It is called with one array per operand, all of one shape, holding values of
the format in its numpy type where there is one (``numpy.float16``,
``ml_dtypes.bfloat16``, ``ml_dtypes.float8_e4m3fn``, ...) and otherwise its
codes (unsigned integers of the code's width, e.g. TF32 in ``uint32``).  It
returns an array of that shape: values of the format's numpy type, or codes
in the code's unsigned integer type.  On the command line and in a progress
file a candidate is named ``module:function`` (``module:Class.method`` too),
imported where each chunk runs.

This module is also where fpsim meets user code on the command line (``sweep``
and ``probe`` load ``--against`` through :func:`load`): anything but Ctrl-C
(KeyboardInterrupt) that user code raises, while its module is imported or
while it is called, ``SystemExit``, ``GeneratorExit`` and BaseExceptions of
its own included, is its failure, reported as one error that names it
(:func:`failure` words what it raised); :func:`run_within` bounds a call in
time.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import array as _array
from .._usercode import failure, message, run_within  # noqa: F401  (used by _task)
from ..array import engine
from ..formats import Format

NAMING = "'module:function' (an importable module and a callable in it)"


class CandidateError(RuntimeError):
    """The candidate failed (raised, or ran past the chunk timeout): the
    sweep cannot judge it, which is neither an agreement nor a mismatch."""


def name_of(candidate: Any) -> str:
    """``module:qualname`` of a callable (how a progress file records it)."""
    if isinstance(candidate, str):
        return candidate
    module = getattr(candidate, "__module__", None) or "?"
    qualname = getattr(candidate, "__qualname__", None) or type(candidate).__qualname__
    return f"{module}:{qualname}"


@functools.lru_cache(maxsize=32)
def load(name: str) -> Callable[..., Any]:
    """The callable named ``module:function``: ImportError if the module
    cannot be found or has no such attribute, TypeError if it is not
    callable, :class:`CandidateError` (chained from what was raised) if
    importing the module or looking the attribute up raises anything else,
    ``SystemExit`` included; only KeyboardInterrupt goes through."""
    if not isinstance(name, str) or name.count(":") != 1 or not all(name.partition(":")[::2]):
        raise ValueError(f"candidate {name!r}: name it as {NAMING}, e.g. mykernels:fp16_add")
    module_name, _, attribute = name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import the candidate {name!r}: module {module_name!r} "
                          f"cannot be imported ({failure(exc)}); it must be importable from "
                          "the current directory or sys.path where it runs") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        # A module that calls sys.exit() or raises while being imported: its
        # failure, never the end of fpsim (nor a success status).
        raise CandidateError(f"cannot import the candidate {name!r}: importing module "
                             f"{module_name!r} raised {failure(exc)}") from exc
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"cannot import the candidate {name!r}: {module_name!r} has no "
                              f"attribute {attribute!r}") from None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a module __getattr__ or a property of its own
            raise CandidateError(f"cannot import the candidate {name!r}: looking up "
                                 f"{attribute!r} in {module_name!r} raised "
                                 f"{failure(exc)}") from exc
    if not callable(obj):
        raise TypeError(f"the candidate {name!r} is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]


def resolve(candidate: Any) -> Callable[..., Any]:
    """The callable itself, given it or its name."""
    if isinstance(candidate, str):
        return load(candidate)
    if not callable(candidate):
        raise TypeError(f"the candidate must be a callable or a name {NAMING}, "
                        f"got {type(candidate).__name__}")
    return candidate  # type: ignore[no-any-return]


def arguments(codes: list[np.ndarray], fmt: Format) -> list[np.ndarray]:
    """The candidate's arguments for operand codes (uint64 arrays)."""
    cd, vd = _array.code_dtype(fmt), _array.value_dtype(fmt)
    narrow = [c.astype(cd, copy=False) for c in codes]
    if vd is not None and vd.itemsize == cd.itemsize:
        return [c.view(vd) for c in narrow]
    return narrow


def call(candidate: Any, codes: list[np.ndarray], fmt: Format) -> np.ndarray:
    """The candidate's results on operands ``codes`` as codes of ``fmt``
    (its code type), checked for shape and type."""
    fn = resolve(candidate)
    name = name_of(candidate)
    args = arguments(codes, fmt)
    try:
        with np.errstate(all="ignore"):  # inf - inf and the like are the point of a sweep
            out = fn(*args)
    except KeyboardInterrupt:
        raise  # Ctrl-C lands in whatever runs: an interruption, not the candidate's fault
    except BaseException as exc:
        # Everything else a candidate raises is its failure, SystemExit(0)
        # and GeneratorExit included: letting one through could end the
        # sweep with a success status and no report.
        raise CandidateError(f"the candidate {name!r} raised {failure(exc)}") from exc
    try:
        out = _array.engine.as_array(out)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        raise TypeError(f"the candidate {name!r} returned a {type(out).__name__}, not an "
                        f"array ({failure(exc)})") from None
    except BaseException as exc:  # its __array__ (user code too) ended the process
        raise CandidateError(f"the candidate {name!r} returned a {type(out).__name__} that "
                             f"raised {failure(exc)} when read as an array") from exc
    shape = args[0].shape
    if out.shape != shape:
        raise ValueError(f"the candidate {name!r} returned shape {out.shape} for operands of "
                         f"shape {shape}; it must return one result per element")
    cd, vd = _array.code_dtype(fmt), _array.value_dtype(fmt)
    if vd is not None and out.dtype == vd:
        return np.ascontiguousarray(out).view(cd)
    if out.dtype == cd:
        engine.check_codes(out, fmt, f"the output of the candidate {name!r}")
        return out
    accepted = f"{vd} ({fmt.name} values) or " if vd is not None else ""
    raise TypeError(f"the candidate {name!r} returned {out.dtype} results; accepted: "
                    f"{accepted}{cd} ({fmt.name} codes)")
