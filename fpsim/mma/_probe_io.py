"""What the probes share: building constructed rows in a format, and calling
the black box under test with them.

A *row* is one dot product ``d = a·b + c`` of the call width ``W``: a dict
``{position: product}`` (each product a float64 value, split here into two
operands exact in the input format) and ``c`` (a float64 value exact in the
output format).  :class:`Caller` turns a batch of rows into the arrays the
callable takes, calls it once (or a few times for a GEMM-shaped callable),
checks what comes back, and returns the results as float64 values.

Contract (used by :mod:`fpsim.mma.probe` only): every value here is exact
in float64; a row that cannot be built in the formats raises
:class:`Unbuildable`, which the probes catch to leave that row out.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import array as _array
from ..formats import Format

__all__ = ["Row", "Caller", "Unbuildable", "ProbeError", "ProbeTimeout", "exact_in", "split",
           "SHAPES", "call_user", "as_array"]

#: The calling conventions :func:`fpsim.mma.probe` accepts.
SHAPES = ("rows", "gemm")

_GEMM_BLOCK = 16  # rows per GEMM call: D = A (s, K) @ B (K, s) + C, its diagonal kept


class ProbeError(RuntimeError):
    """The callable under test failed on a probe's input (it raised)."""


class ProbeTimeout(RuntimeError):
    """The callable under test did not return within the probe's timeout
    (not a :class:`ProbeError`: the stages that read a refusal from a
    ProbeError must not take a hang for one and call again)."""


class Unbuildable(ValueError):
    """A constructed value does not exist in the format (out of its range)."""


@dataclass(frozen=True)
class Row:
    """One constructed dot product: ``products`` maps a position to the
    product's value (or to an explicit ``(a, b)`` pair); ``c`` the addend."""

    products: tuple[tuple[int, Any], ...]
    c: float = 0.0
    note: str = ""

    @staticmethod
    def of(products: dict[int, Any], c: float = 0.0, note: str = "") -> Row:
        return Row(tuple(sorted(products.items())), float(c), note)

    def describe(self) -> str:
        """``"p0=1, p1=-1, p2=2^-24, c=0"``: the row as a person reads it."""
        parts = []
        for pos, v in self.products:
            value = v[0] * v[1] if isinstance(v, tuple) else v
            parts.append(f"p{pos}={show(value)}")
        parts.append(f"c={show(self.c)}")
        return ", ".join(parts)


def show(x: float) -> str:
    """A value as a short exact string: ``2^-24``, ``-1.5*2^3``, ``3``."""
    if x != x:
        return "nan"
    if x in (math.inf, -math.inf):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    if x == int(x) and abs(x) < 2 ** 20:
        return str(int(x))
    m, e = math.frexp(abs(x))
    n = int(m * (1 << 53))
    tz = (n & -n).bit_length() - 1
    n >>= tz
    e = e - 53 + tz
    sign = "-" if x < 0 else ""
    if n == 1:
        return f"{sign}2^{e}"
    if n < (1 << 12):
        return f"{sign}{n}*2^{e}"
    return f"{sign}{x!r}"


def exact_in(x: float, fmt: Format, subnormals: bool = True) -> bool:
    """Whether float64 ``x`` is a finite value of ``fmt`` (with its subnormals
    only when ``subnormals``)."""
    if x == 0:
        return True
    if not math.isfinite(x) or abs(x) > float(fmt.max):
        return False
    e = math.frexp(abs(x))[1] - 1
    if e < fmt.emin and not (subnormals and fmt.subnormals):
        return False
    lsb = max(e, fmt.emin) - fmt.mantissa_bits
    return math.ldexp(abs(x), -lsb) == int(math.ldexp(abs(x), -lsb))


_OFFSETS = sorted(range(-300, 301), key=lambda d: (abs(d), d))


@functools.lru_cache(maxsize=4096)
def split(value: float, fmt: Format, subnormals: bool = True) -> tuple[float, float]:
    """Two values of ``fmt`` whose exact product is ``value``: ``a`` carries
    the significand, ``b`` is a power of two; the exponents as balanced as the
    format allows.  :class:`Unbuildable` when there are none."""
    if value == 0:
        return 0.0, 0.0
    m, e = math.frexp(value)  # value = m * 2**e, 0.5 <= |m| < 1
    n = int(m * (1 << 53))
    tz = (n & -n).bit_length() - 1
    n >>= tz
    e = e - 53 + tz  # value = n * 2**e, n odd
    bits = abs(n).bit_length()
    total = e + bits - 1  # exponent of value
    half = total // 2
    for d in _OFFSETS:
        ea = half + d  # exponent of a
        a = math.ldexp(n, ea - (bits - 1))
        b = math.ldexp(1.0, total - ea)
        if exact_in(a, fmt, subnormals) and exact_in(b, fmt, subnormals):
            return a, b
    raise Unbuildable(f"{show(value)} is not a product of two {fmt.name} values")


def pair_for(value: Any, fmt: Format, subnormals: bool) -> tuple[float, float]:
    if isinstance(value, tuple):
        a, b = value
        if not (exact_in(a, fmt, subnormals) and exact_in(b, fmt, subnormals)):
            raise Unbuildable(f"{show(a)} or {show(b)} is not a {fmt.name} value")
        return float(a), float(b)
    return split(float(value), fmt, subnormals)


def to_dtype(values: np.ndarray, fmt: Format) -> np.ndarray:
    """float64 values (exact in ``fmt``) as the array type a kernel takes:
    the format's numpy/ml_dtypes dtype, float32 for TF32."""
    dt = _array.value_dtype(fmt)
    if dt is None:  # TF32 and the like: float32 values
        return values.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(dt)


def accepted_dtype(fmt: Format) -> str:
    dt = _array.value_dtype(fmt)
    return dt.name if dt is not None else "float32"


class Caller:
    """The callable under test, called with batches of rows.

    ``shape="rows"``: ``fn(a, b, c) -> d`` with ``a``, ``b`` of shape
    ``(rows, K)``, ``c`` and ``d`` of shape ``(rows,)``.  ``shape="gemm"``:
    ``fn(A, B, C) -> D`` with ``A (M, K)``, ``B (K, N)``, ``C``, ``D (M, N)``;
    a batch of rows is given as blocks of ``M = N = 16`` whose diagonal holds
    the rows (``B``'s column ``r`` is row ``r``'s ``b``; ``C`` is zero off
    the diagonal).
    """

    def __init__(self, fn: Callable[..., Any], fin: Format, fout: Format, shape: str,
                 input_subnormals: bool = True, timeout: float | None = None) -> None:
        self.fn, self.fin, self.fout, self.shape = fn, fin, fout, shape
        self.subnormals = input_subnormals
        self.timeout = timeout  # seconds one call may take (None: no limit)
        self.pad = 1  # GEMM calls: M, N and K padded with zeros to multiples of this
        self.calls = 0
        self.rows = 0
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__

    def build(self, rows: Sequence[Row], width: int, skip: bool = False
              ) -> tuple[list[Row], np.ndarray, np.ndarray, np.ndarray]:
        """The rows built, and float64 ``a``, ``b`` ``(rows, width)`` and
        ``c``.  A row that cannot be built raises :class:`Unbuildable`, or
        is left out with ``skip``."""
        a = np.zeros((len(rows), width))
        b = np.zeros((len(rows), width))
        c = np.zeros(len(rows))
        kept = []
        for row in rows:
            i = len(kept)
            try:
                for pos, v in row.products:
                    a[i, pos], b[i, pos] = pair_for(v, self.fin, self.subnormals)
                if not exact_in(row.c, self.fout):
                    raise Unbuildable(f"c={show(row.c)} is not a {self.fout.name} value")
            except Unbuildable:
                if not skip:
                    raise
                a[i] = b[i] = 0
                continue
            c[i] = row.c
            kept.append(row)
        n = len(kept)
        return kept, a[:n], b[:n], c[:n]

    def __call__(self, rows: Sequence[Row], width: int, what: str) -> np.ndarray:
        """The callable's results for ``rows``, as float64 values."""
        rows, a, b, c = self.build(rows, width)
        return self.call_arrays(a, b, c, what, rows)

    def call_arrays(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, what: str,
                    rows: Sequence[Row] | None = None) -> np.ndarray:
        """The callable's results for float64 ``a``, ``b``, ``c`` (values of
        the formats, infinities and NaNs included), as float64 values."""
        out = self.outputs(a, b, c, what, rows)
        with np.errstate(over="ignore", invalid="ignore"):
            return out.astype(np.float64)

    def call_codes(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, what: str) -> np.ndarray:
        """The same call, its results as codes of the output format (the
        bits a NaN came back with)."""
        return self.outputs(a, b, c, what).view(_array.code_dtype(self.fout))

    def outputs(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, what: str,
                rows: Sequence[Row] | None = None) -> np.ndarray:
        """The callable's results in the output format's dtype."""
        A, B, C = to_dtype(a, self.fin), to_dtype(b, self.fin), to_dtype(c, self.fout)
        if self.shape == "rows":
            out = self._call(A, B, C, what, rows, (len(c),))
        else:
            out = np.empty(len(c), dtype=_array.value_dtype(self.fout))
            up = lambda x: -(-x // self.pad) * self.pad  # noqa: E731
            K = up(A.shape[1])
            for s in range(0, len(c), _GEMM_BLOCK):
                e = min(s + _GEMM_BLOCK, len(c))
                n = e - s
                p = up(n)
                Am = np.zeros((p, K), dtype=A.dtype)
                Am[:n, :A.shape[1]] = A[s:e]
                Bm = np.zeros((K, p), dtype=B.dtype)
                Bm[:A.shape[1], :n] = B[s:e].T
                Cm = np.zeros((p, p), dtype=C.dtype)
                Cm[np.arange(n), np.arange(n)] = C[s:e]
                D = self._call(Am, Bm, Cm, what, rows[s:e] if rows is not None else None, (p, p))
                out[s:e] = D[np.arange(n), np.arange(n)]
        self.rows += len(c)
        return out

    def _call(self, A: np.ndarray, B: np.ndarray, C: np.ndarray, what: str,
              rows: Sequence[Row] | None, shape: tuple[int, ...]) -> np.ndarray:
        self.calls += 1
        first = f" (first row: {rows[0].describe()})" if rows else ""
        out = call_user(self.fn, (A, B, C), self.name, what, self.timeout,
                        lambda: f"a {A.shape} {A.dtype}, b {B.shape} {B.dtype}, c {C.shape} "
                                f"{C.dtype}{first}")
        return self.check(out, shape, what)

    def check(self, out: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
        want = accepted_dtype(self.fout)
        conv = ("fn(a, b, c) -> d of shape (rows,)" if self.shape == "rows"
                else "fn(A, B, C) -> D of shape (M, N)")
        arr = as_array(out, self.name, what, f"{conv}, dtype {want}")
        if arr.dtype == object:
            raise TypeError(f"the callable {self.name!r} returned a {type(out).__name__} on the "
                            f"{what} probe, not an array; accepted: {conv}, dtype {want}")
        if arr.shape != shape:
            raise ValueError(f"the callable {self.name!r} returned shape {arr.shape} on the "
                             f"{what} probe where {shape} was expected; accepted: {conv}")
        dt = _array.value_dtype(self.fout)
        if arr.dtype != (dt if dt is not None else np.float32):
            raise TypeError(f"the callable {self.name!r} returned dtype {arr.dtype} on the "
                            f"{what} probe; accepted: {want} ({self.fout.name} values)")
        return arr


def call_user(fn: Callable[..., Any], args: tuple[Any, ...], name: str, what: str,
              timeout: float | None, called_with: Callable[[], str]) -> Any:
    """``fn(*args)``, numpy's warnings off, given up after ``timeout``
    seconds (None: no limit; the hung call is left in a daemon thread, see
    :func:`fpsim._usercode.run_within`).  Anything it raises but
    KeyboardInterrupt, ``SystemExit`` and ``GeneratorExit`` included, is a
    :class:`ProbeError` naming the callable, the probe and the arguments
    (``called_with()``), chained from it; a hang is a :class:`ProbeTimeout`."""
    from .._usercode import message, run_within

    def work() -> Any:
        with np.errstate(all="ignore"):
            return fn(*args)

    def timed_out() -> BaseException:
        return ProbeTimeout(f"the callable {name!r} did not finish the {what} probe within "
                            f"{timeout:g} s (the call timeout), called with {called_with()}")

    try:
        return work() if timeout is None else run_within(timeout, work, (), timed_out)
    except (KeyboardInterrupt, ProbeTimeout):
        raise  # Ctrl-C is an interruption, not the callable's failure
    except BaseException as exc:
        # Everything else is the callable's failure: a SystemExit(0) let
        # through would end the probe with a success status and no report.
        text = message(exc)
        raise ProbeError(f"the callable {name!r} raised {type(exc).__name__} on the {what} "
                         f"probe, called with {called_with()}"
                         + (f": {text}" if text else "")) from exc


def as_array(out: Any, name: str, what: str, accepted: str) -> np.ndarray:
    """``numpy.asarray(out)``, which runs the result's own code (its
    ``__array__``): its failure is the callable's, named."""
    from .._usercode import failure

    try:
        return out if isinstance(out, np.ndarray) else np.asarray(out)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        raise TypeError(f"the callable {name!r} returned a {type(out).__name__} on the {what} "
                        f"probe, not an array ({failure(exc)}); accepted: {accepted}") from None
    except BaseException as exc:
        raise ProbeError(f"the callable {name!r} returned a {type(out).__name__} on the {what} "
                         f"probe that raised {failure(exc)} when read as an array") from exc


def codes_equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise: the same value, bit for bit as a value (NaN equals NaN;
    +0 and -0 differ)."""
    same = (x == y) & (np.signbit(x) == np.signbit(y))
    return same | (np.isnan(x) & np.isnan(y))
