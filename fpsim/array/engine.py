"""What every array function shares: dtypes of codes and values, reading
codes out of arrays, chunking, and the random numbers of stochastic rounding.

The contract on which the layers above the array engine (operators,
quantization, testing, sweeps, the CLI) build their own array functions;
they import these names from here and nothing from the engine's private
modules:

* operands: :func:`as_array` (any array-like, bfloat16 and float8 included),
  :func:`code_dtype` / :func:`value_dtype` / :func:`format_of_dtype` /
  :data:`VALUE_DTYPE_NAMES` (formats and numpy dtypes), :func:`check_flag`
  (True/False parameters), :func:`check_codes`
  (ValueError naming the first code that is not one of the format's),
  :func:`raw_codes` (an array's codes, checked or not) and
  :func:`check_size` (a MemoryError, from the shape alone and before any
  work, where an array of that shape could not be held in this machine's
  memory: every entry point calls it on its operands or its result's shape,
  so that a broadcast view of 2**40 elements is refused at once instead of
  walked);
* the loop: :func:`run_chunks` runs ``compute(start, stop)`` over chunks
  (:data:`DEFAULT_CHUNK` elements; on threads, :data:`THREADED_CHUNK`),
  fills the output, and ORs the flags into the context only once every
  chunk has succeeded; ``compute`` gives each element's flags (uint8), or,
  where the caller did not ask for them, may give them ORed into an int;
* stochastic rounding: :func:`stochastic_bits` (the random numbers of
  elements ``start:stop``, whatever the chunking), :func:`check_rng` and
  :func:`check_random_array` (given random numbers).
"""

from __future__ import annotations

import builtins
import functools
import math
import os
import sys
from typing import Any

import numpy as np

from .. import _threads
from ..context import Context, check_seed
from ..formats import Format
from ..formats import format as _lookup
from ..modes import STOCHASTIC
from . import _frameworks
from ._kernel import U64

DEFAULT_CHUNK = 1 << 16
# The chunk of a call that runs on several threads and was given no other
# chunk_size: each thread hands the interpreter lock back and forth between
# numpy's loops, which only pays when each loop runs long enough (measured on
# the project's 2-core machine: 64 Ki-element chunks on two threads are no
# faster than on one, 256 Ki-element chunks about 1.5x).
THREADED_CHUNK = 1 << 18

def code_dtype(fmt: Format | str) -> np.dtype:
    """The unsigned integer dtype that holds ``fmt``'s codes (uint8/16/32/64)."""
    fmt = _lookup(fmt)
    for bits, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64)):
        if fmt.width <= bits:
            return np.dtype(dt)
    raise ValueError(f"{fmt.name} is {fmt.width} bits wide; codes up to 64 bits are supported")


def value_dtype(fmt: Format | str) -> np.dtype | None:
    """The numpy or ml_dtypes dtype whose values are exactly ``fmt``'s
    (float16, float32, float64, bfloat16, float8_*), or None.

    >>> value_dtype(fpsim.BF16)
    dtype(bfloat16)
    """
    import ml_dtypes

    fmt = _lookup(fmt)
    names = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16,
             "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
             "e5m2": ml_dtypes.float8_e5m2, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
             "e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "e3m2": ml_dtypes.float6_e3m2fn,
             "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn,
             "e8m0": ml_dtypes.float8_e8m0fnu, "e3m4": ml_dtypes.float8_e3m4,
             "e4m3ieee": ml_dtypes.float8_e4m3, "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz}
    dt = names.get(fmt.name)
    if dt is None or _lookup(fmt.name) != fmt:
        return None
    return np.dtype(dt)


VALUE_DTYPE_NAMES = ("float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                     "float8_e4m3fnuz", "float8_e5m2fnuz", "float6_e3m2fn", "float6_e2m3fn",
                     "float4_e2m1fn", "float8_e8m0fnu", "float8_e3m4", "float8_e4m3",
                     "float8_e4m3b11fnuz")


def format_of_dtype(dtype: np.dtype) -> Format | None:
    """The built-in format whose value type ``dtype`` is (in any byte
    order), or None (integer codes, other dtypes).

    >>> format_of_dtype(np.dtype(">f2")).name
    'fp16'
    """
    name = dtype.newbyteorder("=").name if dtype.kind in "fV" else None
    return _lookup(name) if name in VALUE_DTYPE_NAMES else None


def as_array(x: Any) -> np.ndarray:
    """``x`` as a plain numpy array (never a subclass such as np.matrix)
    without copying where numpy can view it: PyTorch tensors (any device,
    dtype bfloat16, float8, float4_e2m1fn_x2 and E8M0 included), JAX and
    CuPy arrays as :func:`as_numpy` describes; other
    objects through ``__array__`` or, for objects that only speak DLPack,
    :func:`numpy.from_dlpack`."""
    # Not imported, or still being imported by another thread: x cannot be a
    # masked array (its class would exist).
    masked = getattr(sys.modules.get("numpy.ma"), "MaskedArray", None)
    if masked is not None and isinstance(x, masked):
        # Its masked elements hold whatever data lies under the mask (numpy
        # arithmetic on it can leave -inf or garbage there): reading them as
        # values would be silently wrong, and skipping them is no IEEE rule.
        raise TypeError("numpy masked arrays are not accepted (the mask would be lost); pass "
                        "x.filled(value) to choose what masked elements become, or x.data")
    if isinstance(x, np.ndarray):
        # A subclass (np.matrix, np.recarray, np.memmap, ...) is read as the
        # plain array of its data: np.matrix keeps every result 2-D and makes
        # * a matrix product, which no step here expects.
        return x if type(x) is np.ndarray else x.view(np.ndarray)
    framework = _frameworks.framework_of(x)
    if framework is not None:
        return as_array(_frameworks.from_framework(x, framework))
    if not hasattr(x, "__array__") and hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    return np.asarray(x)


def as_numpy(x: Any) -> np.ndarray:
    """``x`` as the numpy array every fpsim function reads it as.

    PyTorch tensors on any device but ``meta`` (copied to the host; strides
    kept, ``requires_grad`` ignored, sparse layouts made dense; nested
    tensors refused, naming the layouts read), JAX arrays and
    CuPy arrays become numpy arrays of the same values, their dtypes read as
    ml_dtypes' (``torch.bfloat16`` as ``bfloat16``, ``torch.float8_e4m3fn``
    as ``float8_e4m3fn``, ...).  ``torch.float4_e2m1fn_x2`` holds two E2M1
    codes per byte, the first in the low nibble, neighbours along the axis
    the bytes run along in memory: a contiguous tensor of shape ``(..., n)``
    is read as ``(..., 2 * n)`` ``float4_e2m1fn`` values, its transpose as
    ``(2 * n, ...)``.
    fpsim imports no framework: it recognises the object's class.  Other
    objects are read through ``__array__`` or DLPack.

    >>> import ml_dtypes
    >>> as_numpy([1.5, 2.0]).dtype.name
    'float64'
    >>> as_numpy(np.array([1, 2], ml_dtypes.bfloat16)).dtype.name
    'bfloat16'
    """
    return as_array(x)


def like(result: Any, other: Any, *, fmt: Format | str | None = None,
         codes: bool = False) -> Any:
    """``result`` (an fpsim result: a numpy array, or a tuple or list of
    them, such as ``(values, flags)``) as arrays of ``other``'s framework
    on ``other``'s device: a torch tensor, a JAX array or a CuPy array of
    the matching dtype (bfloat16 values become ``torch.bfloat16``, E2M1
    values ``torch.float4_e2m1fn_x2`` packed two a byte along the last
    axis, flags ``uint8``).  Where ``other`` is no framework's array,
    ``result`` comes back as numpy.

    A target on the meta device, which holds no values, is a
    :class:`TypeError`, as a meta input is.

    ``fmt=`` first reads integer codes (:func:`fpsim.array.encode`'s
    results, say) as that format's values; ``codes=True`` gives the
    integer codes of values instead.  A dtype the framework lacks (torch
    has no float6, JAX no float64 unless ``jax_enable_x64`` is set) is a
    :class:`TypeError` that names what it holds.

    >>> codes = np.array([0x3F80, 0xC000], np.uint16)
    >>> like(codes, np.zeros(1), fmt="bf16").astype(np.float32)
    array([ 1., -2.], dtype=float32)
    """
    if isinstance(result, (tuple, list)):
        return type(result)(like(r, other, fmt=fmt, codes=codes) for r in result)
    if not isinstance(result, (np.ndarray, np.generic)):
        raise TypeError(f"like() converts numpy arrays (and tuples or lists of them), not "
                        f"{type(result).__name__}")
    a = np.asarray(result)
    codes = check_flag("codes", codes)
    if fmt is not None:
        fmt = _lookup(fmt)
        dt = value_dtype(fmt)
        if a.dtype.kind not in "iu":
            raise TypeError(f"fmt= reads integer codes as {fmt.name} values; got {a.dtype.name} "
                            "values: leave fmt out")
        if dt is None:
            raise TypeError(f"{fmt.name} has no numpy or ml_dtypes dtype to hold its values: "
                            "leave fmt out for its integer codes")
        check_codes(a, fmt)
        a = a.astype(code_dtype(fmt)).view(dt)
    if codes and a.dtype.kind not in "iub":
        a = a.view(f"u{a.dtype.itemsize}")
    framework = _frameworks.framework_of(other)
    return a if framework is None else _frameworks.to_framework(a, other, framework)


@functools.cache
def physical_memory() -> int:
    """This machine's memory in bytes (its physical pages; where the system
    does not say, 2**40: a terabyte)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    try:  # Windows
        import ctypes

        class _Status(ctypes.Structure):
            _fields_ = [("length", ctypes.c_ulong), ("load", ctypes.c_ulong),
                        ("total", ctypes.c_ulonglong), ("rest", ctypes.c_ulonglong * 6)]

        status = _Status()
        status.length = ctypes.sizeof(_Status)
        if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]
            return int(status.total)
    except (AttributeError, ImportError, OSError):
        pass
    return 1 << 40


def check_size(op: str, shape: tuple[int, ...], itemsize: int, what: str = "the result"
               ) -> None:
    """Refuse, from ``shape`` alone, an array of ``itemsize``-byte elements
    larger than this machine's memory, before any work: a broadcast view
    (``np.broadcast_to(x, (2**40,))``) or operands that broadcast into a
    huge result cost nothing to pass, and walking them would run for hours
    before the output's allocation fails.  A :class:`MemoryError`, as
    numpy's own refusal to allocate is, naming the shape and the sizes.

    >>> check_size("add", (2**30, 2**30), 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    MemoryError: add(): the result would hold 1,152,921,504,606,846,976 elements ...
    >>> check_size("add", (1000, 1000), 2)
    """
    elements = math.prod(shape)
    need = elements * max(int(itemsize), 1)
    memory = physical_memory()
    if need > memory:
        raise MemoryError(f"{op}(): {what} would hold {elements:,} elements (shape "
                          f"{tuple(shape)}) of {max(int(itemsize), 1)} bytes, {_bytes(need)}, "
                          f"more than this machine's memory ({_bytes(memory)})")


def _bytes(n: int) -> str:
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n:,} bytes"


def check_codes(a: np.ndarray, fmt: Format, label: str | None = None) -> None:
    """Integer codes must fit the format's width; ``label`` names the array
    in the message."""
    if not a.size:
        return
    negative = a.dtype.kind == "i" and a.min() < 0
    if negative or int(a.max()) >> fmt.width:
        owner = "" if label is None else f"{label} has "
        what = "negative codes, " if negative else "codes "
        raise ValueError(f"{owner}{what}out of range for {fmt.name}: accepted 0.."
                         f"0x{(1 << fmt.width) - 1:x} ({fmt.width} bits)")


def codes_of(a: np.ndarray, src: Format, check: bool = True) -> np.ndarray:
    """The codes of ``a`` as uint64: a float array viewed as its bits, or an
    integer array of codes (checked against the format's width unless the
    caller already did)."""
    if not a.dtype.isnative:  # big-endian data: bits are read in native order
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.kind in "iu":
        if check:
            check_codes(a, src)
        return a.astype(U64)
    return a.view(f"u{a.dtype.itemsize}").astype(U64)


def raw_codes(a: np.ndarray, fmt: Format, check: bool = True) -> np.ndarray:
    """The codes of ``a`` as unsigned integers of the narrowest width that
    holds them: a float array viewed as its bits (native byte order), an
    integer array of codes cast to ``code_dtype(fmt)`` (checked unless the
    caller already did)."""
    if a.dtype.kind in "iu":
        if check:
            check_codes(a, fmt)
        return a.astype(code_dtype(fmt), copy=False)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a.view(f"u{a.dtype.itemsize}")


def run_chunks(size: int, shape: tuple[int, ...], dtype: Any, chunk_size: int,
               compute: Any, ctx: Context, return_flags: bool, workers: int | None = 1
               ) -> Any:
    """The loop every array function runs: ``compute(start, stop)`` gives
    the results and flags of elements ``start:stop`` (with ``return_flags``
    False, the flags may be given ORed into one int); they fill an output of
    ``dtype`` and ``shape``, and the flags of all elements are ORed into
    ``ctx`` once every chunk has succeeded (a call that raises leaves the
    context's flags as they were).

    With more than one worker (:func:`fpsim._threads.thread_count`), the
    first chunk runs alone (whatever it builds on first use, such as a
    table, is then built once) and the others on a thread pool, in chunks of
    :data:`THREADED_CHUNK` elements where ``chunk_size`` is the default;
    ``compute`` must then not depend on the order of its calls (callers
    drawing random numbers in element order pass ``workers=1``)."""
    check_chunk_size(chunk_size)
    return_flags = check_flag("return_flags", return_flags)
    threads = _threads.thread_count(workers, size, -(-size // chunk_size))
    if threads > 1 and chunk_size == DEFAULT_CHUNK:
        chunk_size = THREADED_CHUNK
        threads = _threads.thread_count(workers, size, -(-size // chunk_size))
    out = np.empty(size, dtype)
    all_flags = np.empty(size, np.uint8) if return_flags else None

    def one(start: int) -> int:
        stop = min(start + chunk_size, size)
        values, flags = compute(start, stop)
        out[start:stop] = values
        if all_flags is not None:
            all_flags[start:stop] = flags
        if isinstance(flags, int):
            return flags
        return int(np.bitwise_or.reduce(flags)) if flags.size else 0

    starts = builtins.range(0, size, chunk_size)
    seen = 0
    if threads > 1:
        seen = one(0)
        for flags in _threads.run_pieces(one, starts[1:], threads):
            seen |= flags
    else:
        for start in starts:
            seen |= one(start)
    if seen:
        ctx._flags[0] |= seen
    out = out.reshape(shape)
    if all_flags is not None:
        return out, all_flags.reshape(shape)
    return out


def check_chunk_size(chunk_size: Any) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")


def check_flag(name: str, value: Any) -> bool:
    """A True/False parameter (numpy's bool too), as a bool; a TypeError
    naming ``name`` otherwise (a string or a number is no answer to a
    yes-or-no question: ``"False"`` is truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def stochastic_bits(key: tuple[Any, ...], random_bits: Any, rng: Any, ctx: Context,
                    shape: tuple[int, ...]) -> Any:
    """Under stochastic rounding, the random numbers of the result's elements
    as a function of ``(start, stop)``; None in the other modes, which take
    neither ``random_bits=`` nor ``rng=``."""
    if key[0] in STOCHASTIC:
        return random_source(random_bits, rng, ctx, shape, key[5])
    if random_bits is not None or rng is not None:
        raise ValueError("random_bits= and rng= are only used by stochastic rounding "
                         "(rounding='sr', 'sr_b' or 'sr_c')")
    return None


def random_source(random_bits: Any, rng: Any, ctx: Context, shape: tuple[int, ...],
                   sr_bits: int) -> Any:
    if random_bits is not None:
        if rng is not None:
            raise ValueError("give random_bits= or rng=, not both")
        r = check_random_array(random_bits, sr_bits)
        try:
            r = np.broadcast_to(r, shape)
        except ValueError:
            raise ValueError(f"random_bits of shape {r.shape} does not broadcast to the "
                             f"result's shape {shape}; accepted one number per result element "
                             "(or a shape that broadcasts to it)") from None
        flat = r.reshape(-1).astype(U64)
        return lambda start, stop: flat[start:stop]
    gen = rng
    if gen is None:
        # The context's generator: a numpy Generator is used (and advanced)
        # directly; a random.Random seeds one with 64 bits drawn from it, so
        # that successive calls continue the context's stream.
        gen = ctx.rng
        if not hasattr(gen, "integers"):
            gen = np.random.default_rng(gen.getrandbits(64))
    else:
        gen = check_rng(gen)
        if not hasattr(gen, "integers"):
            gen = np.random.default_rng(gen)

    def draw(start: int, stop: int) -> np.ndarray:
        r = gen.integers(0, 1 << sr_bits, size=stop - start, dtype=U64, endpoint=False)
        # A stand-in generator's numbers must be what the kernels add to the
        # discarded bits: one per element, each in [0, 2**sr_bits).
        r = np.asarray(r)
        if (r.shape != (stop - start,) or r.dtype.kind not in "iu"
                or (r.size and (r.min() < 0 or (sr_bits < 64 and int(r.max()) >> sr_bits)))):
            raise ValueError(f"rng.integers(0, 2**{sr_bits}, size={stop - start}) gave "
                             f"{r.dtype} values of shape {r.shape}, not that many integers in "
                             f"[0, 2**{sr_bits}); accepted a numpy.random.Generator or an int "
                             "seed")
        return r.astype(U64, copy=False)

    return draw


def check_random_array(random_bits: Any, sr_bits: int, name: str = "random_bits") -> np.ndarray:
    """An array of stochastic rounding's random integers, checked as
    :func:`fpsim.rounding.check_random_bits` checks one (the same rule and
    message): an integer array whose elements lie in ``[0, 2**sr_bits)``.

    >>> check_random_array([0, 7, 8], 3)
    Traceback (most recent call last):
    ...
    ValueError: random_bits out of range (it holds 8): accepted 0 <= random_bits < 2**sr_bits = 8
    """
    r = as_array(random_bits)
    if r.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {r.dtype}")
    if r.size:
        low, high = r.min(), r.max()
        bad = low if low < 0 else high if sr_bits < 64 and int(high) >> sr_bits else None
        if bad is not None:
            raise ValueError(f"{name} out of range (it holds {int(bad)}): accepted 0 <= {name} "
                             f"< 2**sr_bits = {1 << sr_bits}")
    return r


def check_rng(rng: Any) -> Any:
    """An ``rng=`` argument, checked where it enters: an int seed (>= 0,
    returned as an int) or an object with numpy's ``integers``."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return check_seed(rng)
    if not hasattr(rng, "integers"):
        raise TypeError(f"rng must be a numpy.random.Generator or an int seed, got "
                        f"{type(rng).__name__}")
    return rng


import fpsim  # noqa: E402,F401  (doctests)
