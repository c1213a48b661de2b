"""The kernel under test: any Python callable on numpy arrays.

It is called with one array per operand, all of one shape, holding values of
the format in its numpy type where there is one (``numpy.float16``,
``ml_dtypes.bfloat16``, ``ml_dtypes.float8_e4m3fn``, ...) and otherwise its
codes (unsigned integers of the code's width, e.g. TF32 in ``uint32``).  It
returns an array of that shape: values of the format's numpy type, or codes
in the code's unsigned integer type.  On the command line a candidate is
named ``module:function`` (``module:Class.method`` too), imported where each
chunk runs.

A progress file records a candidate by what it computes, not by its name
(every :func:`functools.partial` is called ``functools:partial``, every
lambda of a module ``module:<lambda>``): :func:`identity` is a digest of the
callable's code and of the values it holds (see there).  A candidate it
cannot identify runs, but never resumes from a progress file.

This module is also where fpsim meets user code on the command line (``sweep``
and ``probe`` load ``--against`` through :func:`load`): anything but Ctrl-C
(KeyboardInterrupt) that user code raises, while its module is imported or
while it is called, ``SystemExit``, ``GeneratorExit`` and BaseExceptions of
its own included, is its failure, reported as one error that names it
(:func:`failure` words what it raised); :func:`run_within` bounds a call in
time.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib
import types
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
    """``module:qualname`` of a callable, ``functools.partial(module:qualname)``
    of a partial of one: how messages and reports name it (not how a
    progress file tells candidates apart: :func:`identity`)."""
    if isinstance(candidate, str):
        return candidate
    if type(candidate) is functools.partial:
        return f"functools.partial({name_of(candidate.func)})"
    kind = type(candidate)
    try:
        module = getattr(candidate, "__module__", None) or "?"
        qualname = getattr(candidate, "__qualname__", None) or kind.__qualname__
        return f"{module}:{qualname}"
    except KeyboardInterrupt:
        raise
    except BaseException:  # a __getattr__ of its own, which may raise anything
        return f"{kind.__module__}:{kind.__qualname__}"


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


def identity(candidate: Any) -> tuple[str | None, str]:
    """``(digest, "")``: what the candidate computes, as a SHA-256 digest
    that a progress file records; or ``(None, reason)`` where it cannot be
    told (then the sweep runs, but does not resume from a progress file).

    The digest covers, whatever the candidate's name:

    * a Python function: its code (bytecode, constants, the names it uses,
      nested functions and lambdas; not line numbers), module and qualname,
      defaults and the values in its closure; and the module-level
      functions, classes and values it names in its own module, followed in
      turn (what it reaches in other modules counts by name: ``np.add``);
    * a :func:`functools.partial`: its function, arguments and keywords;
    * a bound method: its function and its instance; an object with
      ``__call__``: its class (the code of the class's functions, where it is
      the candidate's module's) and its state (``__dict__`` and slots);
    * values: numbers, strings, containers of them, numpy arrays (their
      bytes), dtypes, scalars, enum members, modules, classes, functions and
      C callables (by ``module:qualname``).

    Anything else it holds (an object of C whose state cannot be read, a
    ufunc made by ``numpy.frompyfunc``, a structure too large or too deep)
    makes it unidentifiable; so does an error raised while reading it (user
    code: a ``__getattr__`` or a metaclass of its own), which is not the
    candidate's failure here: calling it will tell."""
    try:
        fn = resolve(candidate)
        text = _Fingerprint(_home(fn)).of(fn)
    except _Unidentifiable as why:
        return None, str(why)
    except KeyboardInterrupt:
        raise
    except RecursionError:
        return None, "it holds values nested too deep to read"
    except BaseException as exc:  # user code run while reading it
        return None, f"reading it raised {failure(exc)}"
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), ""


class _Unidentifiable(Exception):
    """What makes a candidate unidentifiable (its message says what)."""


def _home(obj: Any) -> str | None:
    """The module whose functions and classes are followed into the values
    they name: the candidate's own."""
    for _ in range(100):
        if type(obj) is functools.partial:
            obj = obj.func
        elif type(obj) is types.MethodType:
            obj = obj.__func__
        else:
            break
    if type(obj) is types.FunctionType or isinstance(obj, type):
        return obj.__module__  # type: ignore[no-any-return]
    module = type(obj).__module__
    return module if isinstance(module, str) else None


# Keys of a class's own namespace that are bookkeeping, not behaviour (the
# behaviour they record is in the class's functions and attributes).
_CLASS_BOOKKEEPING = frozenset({
    "__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__annotations__",
    "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__parameters__",
    "__orig_bases__", "__static_attributes__", "__firstlineno__", "_abc_impl",
})

_SIMPLE = (type(None), bool, float, complex, str, bytes, range, slice, type(Ellipsis),
           type(NotImplemented))

_C_CALLABLES = (types.BuiltinFunctionType, types.WrapperDescriptorType,
                types.MethodWrapperType, types.MethodDescriptorType,
                types.ClassMethodDescriptorType, types.GetSetDescriptorType,
                types.MemberDescriptorType)


class _Fingerprint:
    """A canonical text of a callable and the values it holds (see
    :func:`identity`).  Deterministic across processes: no ``hash()``, no
    ``id()`` in the text; sets and dicts in the order of their items' texts."""

    STEPS = 1_000_000  # values read at most (a candidate holds a few; a table, thousands)
    DEPTH = 200       # nesting at most

    def __init__(self, home: str | None) -> None:
        self.home = home
        self.steps = 0
        self.depth = 0
        self.done: dict[int, str] = {}
        self.active: set[int] = set()
        self.keep: list[Any] = []  # alive while their ids are keys of done

    def of(self, obj: Any) -> str:
        self.steps += 1
        if self.steps > self.STEPS:
            raise _Unidentifiable(f"it holds more than {self.STEPS:,} values")
        if type(obj) is int:
            return f"int {obj:x}"
        if type(obj) in _SIMPLE:
            return f"{type(obj).__name__} {obj!r}"
        key = id(obj)
        if key in self.done:
            return self.done[key]
        if key in self.active:  # a cycle: a function that names itself, a list in itself
            return f"<cycle {type(obj).__name__}>"
        if self.depth >= self.DEPTH:
            raise _Unidentifiable("it holds values nested too deep to read")
        self.active.add(key)
        self.depth += 1
        try:
            text = self._of(obj)
        finally:
            self.depth -= 1
            self.active.discard(key)
        self.done[key] = text
        self.keep.append(obj)
        return text

    def _of(self, obj: Any) -> str:
        kind = type(obj)
        if kind in (tuple, list):
            return f"{kind.__name__}(" + ", ".join(self.of(x) for x in obj) + ")"
        if kind in (set, frozenset):
            return f"{kind.__name__}(" + ", ".join(sorted(self.of(x) for x in obj)) + ")"
        if kind in (dict, types.MappingProxyType):
            return self._mapping(obj)
        if kind is types.CodeType:
            return self._code(obj)
        if kind is types.FunctionType:
            return self._function(obj)
        if kind is types.MethodType:
            return f"method({self.of(obj.__func__)}, {self.of(obj.__self__)})"
        if kind is functools.partial:
            return (f"partial({self.of(obj.func)}, {self.of(obj.args)}, "
                    f"{self.of(obj.keywords)}, {self._mapping(vars(obj))})")
        if kind in (staticmethod, classmethod):
            return f"{kind.__name__}({self.of(obj.__func__)})"
        if kind is property:
            return f"property({self.of(obj.fget)}, {self.of(obj.fset)}, {self.of(obj.fdel)})"
        if kind is types.ModuleType:
            return f"module {obj.__name__}"
        if isinstance(obj, type):
            return self._class(obj)
        if isinstance(obj, _C_CALLABLES):
            owner = getattr(obj, "__self__", None)
            held = "" if owner is None or type(owner) is types.ModuleType else \
                f" of {self.of(owner)}"
            return f"C {getattr(obj, '__module__', None)}:{obj.__qualname__}{held}"
        if isinstance(obj, enum.Enum):
            return f"enum {self._class_name(kind)}.{obj.name}"
        if isinstance(obj, np.ndarray):
            return self._array(obj)
        if isinstance(obj, np.generic):
            return f"numpy {obj.dtype.str} {obj.dtype.name} {obj.tobytes().hex()}"
        if isinstance(obj, np.dtype):
            return f"dtype {obj.str} {obj.name}"
        if isinstance(obj, np.ufunc):
            if obj.__name__.endswith("(vectorized)"):  # numpy.frompyfunc: its function is hidden
                raise _Unidentifiable(f"it holds the ufunc {obj.__name__!r} made by "
                                      "numpy.frompyfunc, whose function cannot be read")
            return f"ufunc {self._class_name(kind)} {obj.__name__}"
        if isinstance(obj, np.vectorize):
            return (f"vectorize({self.of(obj.pyfunc)}, {self.of(obj.otypes)}, "
                    f"{self.of(obj.excluded)}, {self.of(obj.signature)}, {self.of(obj.cache)})")
        return self._object(obj)

    def _mapping(self, obj: Any) -> str:
        items = sorted(f"{self.of(k)}: {self.of(v)}" for k, v in obj.items())
        return "{" + ", ".join(items) + "}"

    def _code(self, code: types.CodeType) -> str:
        fields = (code.co_code.hex(), code.co_argcount, code.co_posonlyargcount,
                  code.co_kwonlyargcount, code.co_flags, code.co_names, code.co_varnames,
                  code.co_freevars, code.co_cellvars,
                  getattr(code, "co_qualname", code.co_name))
        return f"code{fields!r} consts({', '.join(self.of(c) for c in code.co_consts)})"

    def _function(self, fn: types.FunctionType) -> str:
        parts = [f"function {fn.__module__}:{fn.__qualname__}", self._code(fn.__code__),
                 self.of(fn.__defaults__), self.of(fn.__kwdefaults__)]
        for cell in fn.__closure__ or ():
            try:
                parts.append(self.of(cell.cell_contents))
            except ValueError:  # a cell not yet filled
                parts.append("<empty cell>")
        if fn.__dict__:
            parts.append(self._mapping(fn.__dict__))
        if fn.__module__ == self.home:
            # The module-level values it names, in its own module: a helper
            # it calls, a table it reads.
            names = sorted(_names(fn.__code__))
            space = fn.__globals__
            parts += [f"{n}={self.of(space[n])}" for n in names if n in space]
        return "(" + "; ".join(parts) + ")"

    @staticmethod
    def _class_name(cls: type) -> str:
        return f"{getattr(cls, '__module__', None)}:{getattr(cls, '__qualname__', cls.__name__)}"

    def _class(self, cls: type) -> str:
        name = f"class {self._class_name(cls)}"
        if cls.__module__ != self.home:
            return name
        own = [f"{k}={self.of(v)}" for k, v in sorted(vars(cls).items())
               if k not in _CLASS_BOOKKEEPING]
        bases = ", ".join(self.of(b) for b in cls.__bases__ if b is not object)
        return f"{name}({bases}; {'; '.join(own)})"

    def _array(self, a: np.ndarray) -> str:
        head = f"ndarray {a.dtype.str} {a.dtype.name} {a.shape}"
        if a.dtype.hasobject:
            return f"{head} {self.of(a.tolist())}"
        data = np.ascontiguousarray(a).view(np.uint8) if a.size else np.zeros(0, np.uint8)
        return f"{head} {hashlib.sha256(data.tobytes()).hexdigest()}"

    def _object(self, obj: Any) -> str:
        kind = type(obj)
        state = []
        for c in kind.__mro__[:-1]:  # its classes, object aside
            read = _BUILTIN_STATE.get(c)
            if read is not None:  # a subclass of dict, tuple, int, ...: what the base holds
                state.append(self.of(read(obj)))
                break
            if c.__flags__ & _MADE_BY_CLASS_STATEMENT != _HEAPTYPE \
                    and not (issubclass(c, BaseException) and c.__module__ == "builtins"):
                # a class of C (a lock, a random generator, a tensor):
                # the state it keeps is not there to read
                raise _Unidentifiable(f"it holds a {self._class_name(kind)} object, whose "
                                      "state cannot be read")
        try:
            held = object.__getattribute__(obj, "__dict__")
        except (AttributeError, TypeError):
            held = None
        if held is not None:
            state.append(self._mapping(held))
        for s in (s for c in kind.__mro__ for s in _slots(c)):
            try:
                state.append(f"{s}={self.of(object.__getattribute__(obj, s))}")
            except AttributeError:
                state.append(f"{s} unset")
        return f"object {self.of(kind)}({'; '.join(state)})"


# A class a class statement makes is a heap type and not immutable; the
# classes of C are static or immutable (Py_TPFLAGS_HEAPTYPE, _IMMUTABLETYPE).
_HEAPTYPE = 1 << 9
_MADE_BY_CLASS_STATEMENT = _HEAPTYPE | 1 << 8

# What an instance of a built-in class holds, read by the class's own code
# (never a subclass's override).
_BUILTIN_STATE: dict[type, Callable[[Any], Any]] = {
    dict: lambda o: dict(dict.items(o)), list: lambda o: list(list.__iter__(o)),
    tuple: lambda o: tuple(tuple.__iter__(o)), set: lambda o: frozenset(set.__iter__(o)),
    frozenset: lambda o: frozenset(frozenset.__iter__(o)), int: lambda o: int.__int__(o),
    float: lambda o: float.__repr__(o), complex: lambda o: complex.__repr__(o),
    str: lambda o: str.__str__(o), bytes: lambda o: bytes.hex(o),
    bytearray: lambda o: bytearray.hex(o),
    BaseException: lambda o: BaseException.args.__get__(o),  # type: ignore[attr-defined]
    types.SimpleNamespace: lambda o: None,  # (its __dict__ holds it all)
}


def _names(code: types.CodeType) -> set[str]:
    """The global (and attribute) names a code object and those nested in
    it use."""
    names = set(code.co_names)
    for c in code.co_consts:
        if type(c) is types.CodeType:
            names |= _names(c)
    return names


def _slots(cls: type) -> tuple[str, ...]:
    slots = vars(cls).get("__slots__", ())
    slots = (slots,) if isinstance(slots, str) else tuple(slots)
    return tuple(s for s in slots if s not in ("__dict__", "__weakref__"))


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
