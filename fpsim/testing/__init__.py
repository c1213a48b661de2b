"""The differential testing harness: judge a kernel's or a device's output
against the golden model.

* :func:`compare` gives a :class:`Report`: counts of bit-exact pairs, pairs
  within and beyond tolerance, mismatches by kind (NaN, infinity, sign of
  zero, ULP distance, κ), the largest ULP distance and the largest κ and
  where they are, a histogram, and the first offenders with their bit fields;
* :func:`kappa`: IEEE P3109's accuracy measure κ of each element pair, the
  count of the format's values between the actual and the expected value
  (NaN or ∞ where they do not match on NaNs or infinities);
* :func:`assert_bitwise_equal` and :func:`assert_ulp_close` raise
  :class:`AssertionError` with the report's table (as :mod:`numpy.testing`);
* :func:`ulp_distance`: the exact distance between two codes of a format;
* :func:`profile` / :func:`profiles`: contexts for what real stacks do
  (``ml_dtypes``, ``numpy``, ``torch``, ``onnx_saturate``,
  ``cuda_satfinite``), each with how it was established;
* :mod:`fpsim.testing.packing`: FP4 and FP6 codes packed several to a byte
  (both bit orders) and scale matrices in the blocked layout of cuBLAS,
  unpacked for a comparison (``diff`` reads such files with ``--pack`` and
  ``--layout``);
* the pytest plugin (:mod:`fpsim.testing.pytest_plugin`, registered by entry
  point) adds the full report of failing comparisons to a failed test's output.

>>> import numpy as np
>>> from fpsim.testing import compare
>>> compare(np.float16([1.0, 2.0]), np.float16([1.0, 2.0])).ok
True
"""

from ._compare import (
    Offender,
    Report,
    assert_bitwise_equal,
    assert_ulp_close,
    compare,
    kappa,
)
from ._profiles import Profile, profile, profiles
from ._ulp import ulp_distance

__all__ = ["compare", "Report", "Offender", "assert_bitwise_equal", "assert_ulp_close",
           "ulp_distance", "kappa", "Profile", "profile", "profiles"]
