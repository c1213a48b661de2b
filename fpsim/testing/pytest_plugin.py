"""The fpsim pytest plugin (registered by the ``pytest11`` entry point, so
it is active wherever fpsim is installed; disable it with ``-p no:fpsim``).

When a test fails, every :func:`fpsim.testing.compare` report made during
the test that was not OK is added to the failure's output, in a section
named ``fpsim compare reports``: the full table with the offenders, so that
``assert compare(out, golden).ok`` fails as informatively as
:func:`~fpsim.testing.assert_ulp_close` does.  ``--fpsim-max-reports N``
limits how many reports a failed test shows (default 3).
"""

from __future__ import annotations

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, Any, None]:
    reports: list[_compare.Report] = []
    _compare._collectors.append(reports)
    try:
        yield
    finally:
        _compare._collectors.remove(reports)
        item.stash[_REPORTS] = reports



@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed:
        return
    reports = item.stash.get(_REPORTS, [])
    if not reports:
        return
    limit = item.config.getoption("fpsim_max_reports")
    shown = reports[:max(limit, 0)]
    text = "\n\n".join(str(r) for r in shown)
    if len(reports) > len(shown):
        text += f"\n\n({len(reports) - len(shown)} more failing reports not shown; " \
                "--fpsim-max-reports N shows more)"
    report.sections.append((SECTION, text))
