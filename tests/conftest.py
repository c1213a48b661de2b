"""Shared test settings.

Hypothesis profiles: ``ci`` (the default under tox) is derandomized so CI is
deterministic and has no deadline (timings on a loaded 2-core machine vary);
``dev`` explores with fresh random examples.  Choose with HYPOTHESIS_PROFILE.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
