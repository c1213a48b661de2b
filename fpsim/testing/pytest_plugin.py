"""The fpsim pytest plugin (registered by the ``pytest11`` entry point, so
it is active wherever fpsim is installed; disable it with ``-p no:fpsim``).

When a test fails, the :func:`fpsim.testing.compare` reports that were not
OK are added to the failure's output, in a section named ``fpsim compare
reports``: the full table with the offenders, so that ``assert compare(out,
golden).ok`` fails as informatively as :func:`~fpsim.testing.assert_ulp_close`
does.  Which reports count:

* of a plain test, those made during its call (``--fpsim-max-reports N``
  limits how many are shown, default 3);
* of a Hypothesis test, those made during the run of the failing example
  Hypothesis reports, the final replay of the minimal (shrunk) example:
  not those of the examples tried and shrunk before it, as Hypothesis's own
  report shows that example alone;
* a report already in the failure's message (an
  :func:`~fpsim.testing.assert_ulp_close` or
  :func:`~fpsim.testing.assert_bitwise_equal` that failed) is not repeated.

Comparisons of :class:`~fpsim.value.Float` values in a failed ``assert``
(``assert x == y``) print each Float with a short decimal (the shortest
that reads back as its float64, or 17 digits marked ``~``) where its exact
expansion is long (105 digits for FP32's smallest subnormal).
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import Any

import pytest

from . import _compare

SECTION = "fpsim compare reports"
_REPORTS = pytest.StashKey[list]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("fpsim")
    group.addoption("--fpsim-max-reports", type=int, default=3, metavar="N",
                    help="fpsim: failing compare() reports shown per failed test (default 3)")


def pytest_report_header(config: Any) -> str:
    from .. import __version__

    return f"fpsim {__version__}: failing compare() reports are shown with failed tests"


class _Examples:
    """Keeps, of a Hypothesis test's reports, those of the final replays
    that failed (Hypothesis replays each distinct failure's minimal example
    last, marked final, and reports those).  Each example's run starts by
    dropping what the examples before it left, unless they were kept."""

    def __init__(self, reports: list[_compare.Report]) -> None:
        self.reports = reports
        self.kept = 0           # reports[:kept] are those of failed final replays
        self.known = True       # whether Hypothesis said which examples are final

    def wrap(self, test: Any) -> Any:
        @functools.wraps(test)
        def example(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            final = _is_final()
            if final is None:   # this Hypothesis does not say: the last example counts
                self.known, self.kept = False, 0
            del self.reports[self.kept:]
            try:
                return test(*args, **kwargs)
            except BaseException:
                if final:
                    self.kept = len(self.reports)
                raise

        return example

    def finish(self) -> None:
        if self.known:
            del self.reports[self.kept:]


def _is_final() -> bool | None:
    """Whether the Hypothesis example running now is a final replay (None
    where Hypothesis does not say)."""
    try:
        from hypothesis.control import current_build_context

        final = current_build_context().is_final
    except Exception:
        return None
    return final if isinstance(final, bool) else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, Any, None]:
    reports: list[_compare.Report] = []
    # A Hypothesis test calls `.hypothesis.inner_test` once per example, and
    # reads it at each call of the test (so that plugins can wrap it).
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    inner = getattr(handle, "inner_test", None)
    examples = _Examples(reports) if callable(inner) else None
    if examples is not None:
        handle.inner_test = examples.wrap(inner)
    _compare._collectors.append(reports)
    try:
        yield
    finally:
        _compare._collectors.remove(reports)
        if examples is not None:
            handle.inner_test = inner
            examples.finish()
        item.stash[_REPORTS] = reports


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed:
        return
    said = _messages(call.excinfo.value) if call.excinfo is not None else []
    reports = [r for r in item.stash.get(_REPORTS, [])
               if not any(str(r) in message for message in said)]
    if not reports:
        return
    limit = item.config.getoption("fpsim_max_reports")
    shown = reports[:max(limit, 0)]
    text = "\n\n".join(str(r) for r in shown)
    if len(reports) > len(shown):
        text += f"\n\n({len(reports) - len(shown)} more failing reports not shown; " \
                "--fpsim-max-reports N shows more)"
    report.sections.append((SECTION, text))


def _messages(exc: BaseException) -> list[str]:
    """The messages of ``exc``, of the exceptions it groups (Hypothesis
    raises a group for several distinct failures) and of their causes."""
    out: list[str] = []
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        try:
            out.append(str(e))
        except Exception:  # a message that cannot be written says nothing
            pass
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(op: str, left: Any, right: Any) -> list[str] | None:
    from ..value import Float

    if not isinstance(left, Float) and not isinstance(right, Float):
        return None
    return [f"{_text(left)} {op} {_text(right)}"]


def _text(x: Any) -> str:
    from ..value import Float

    if isinstance(x, Float):
        return x.short_repr()
    try:
        text = repr(x)
    except Exception as exc:
        return f"<{type(x).__name__} instance (repr raised {type(exc).__name__})>"
    return text if len(text) <= 240 else text[:117] + "..." + text[-120:]
