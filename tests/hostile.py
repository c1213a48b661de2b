"""What the hostile-input tests share: running the command line in a
subprocess with a time limit (a hang fails the test instead of hanging the
suite) and a memory limit (growth fails it instead of eating the machine),
and the check of a one-line refusal."""

from __future__ import annotations

import subprocess
import sys
from typing import Any


def cli(*argv: object, timeout: float = 60, limit: int | None = None
        ) -> subprocess.CompletedProcess:
    """``python -m fpsim ARGV`` in a subprocess (what it prints at exit
    too), stopped after ``timeout`` seconds, with at most ``limit`` bytes of
    data where given."""
    def limited() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return subprocess.run([sys.executable, "-m", "fpsim", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limited if limit else None)


def one_line_error(status: int, err: str, *needles: str) -> None:
    """Exit status 2, one line on stderr naming each of ``needles``, no traceback."""
    assert status == 2, err
    assert err.startswith("fpsim: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


def run(capsys: Any, *argv: object) -> tuple[int, str, str]:
    """``main(ARGV)`` in this process: the exit status, stdout and stderr."""
    from fpsim.cli import main

    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err
