"""``python -m fpsim`` (see :mod:`fpsim.cli`)."""

import sys

from .cli import main

sys.exit(main())
