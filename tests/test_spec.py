"""spec/ stays in step with the code: the generated format tables are up to
date (their numbers come from fpsim; the check regenerates and compares)."""

import subprocess
import sys
from pathlib import Path

SPEC = Path(__file__).resolve().parent.parent / "spec"


def test_generated_format_tables_are_up_to_date():
    done = subprocess.run([sys.executable, str(SPEC / "generate.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
