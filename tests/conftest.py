"""Shared test settings.

Hypothesis profiles: ``ci`` (the default under tox) is derandomized so CI is
deterministic and has no deadline (timings on a loaded 2-core machine vary);
``dev`` explores with fresh random examples.  Choose with HYPOTHESIS_PROFILE.
"""

import collections
import os
import signal
import threading

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# -- the default run's sample of the slowest parametrizations -----------------------
#
# The README's command (`tox`) runs in under five minutes on a 2-core machine:
# of each test below, only every N-th parametrization (in collection order: the
# first, the N+1-th, ...) runs there; the others are marked `exhaustive` and run
# in `tox -e exhaustive`, which CI also runs.  Every feature keeps tests in the
# default run: the sampled parametrizations, and the other tests of its file.
# The figures are the seconds each test took in all on the 2-core machine
# (pytest --durations=0, 2026-11-28), the ones that cost the most.
SAMPLED = {
    "tests/test_p3109_rules.py::test_every_pair_of_codes_equals_the_texts": 3,         # 27.8 s
    "tests/test_ops_elementary.py::test_every_fp16_code_directed_modes_against_mpfr": 3,  # 25.0
    "tests/test_mma_probe_library.py::test_the_probe_recovers_each_library_schedule": 3,  # 20.4
    "tests/test_array_native.py::test_native_lanes_equal_the_oracle": 3,               # 18.1
    "tests/test_array_fast_paths.py::test_proxy_path_equals_scalar_model_in_every_mode": 10,
    "tests/test_ops_elementary.py::test_every_code_rne_against_mpfr": 2,               # 15.0
    "tests/test_p3109_formats.py::test_sampled_codes_of_wide_formats_decode_as_gfloat": 4,
    "tests/test_array_fast_paths.py::test_round_fp32_bits_serves_normal_results_exactly": 3,
    "tests/test_round_vs_mpfr.py::test_rounding_and_flags_match_mpfr": 3,              # 13.0
    "tests/test_array_arith.py::test_every_op_every_mode_and_saturation_equals_scalar": 3,
    "tests/test_array_fast_paths.py::test_float_path_equals_scalar_model": 4,          # 10.3
    "tests/test_array_arith.py::test_large_arrays_equal_scalar": 3,                    # 9.6
    "tests/test_p3109_rules.py::test_conversions_equal_the_texts": 3,                  # 9.1
    "tests/test_array_vs_scalar.py::test_encode_floats_every_setting": 3,              # 8.8
    "tests/test_array_fast_paths.py::test_proxy_path_follows_every_setting": 5,        # 8.6
    "tests/test_array_arith.py::test_ftz_daz_tininess_equal_scalar": 3,                # 8.6
    "tests/test_vectors.py::test_added_formats_agree_with_gfloat_and_ml_dtypes": 3,    # 8.6
    "tests/test_mma_probe.py::test_probing_a_preset_recovers_its_own_parameters_and_names_it": 4,
    "tests/test_array_stochastic.py::test_random_bits_from_codes_equal_scalar": 2,     # 7.8
    "tests/test_arith_vs_mpfr.py::test_op_matches_mpfr": 2,                            # 6.5
    "tests/test_ops_fast_paths.py::"
    "test_functions_on_distinct_codes_give_every_elements_bits_and_flags": 2,           # 5.7
    "tests/test_array_arith.py::test_stochastic_rounding_with_random_bits_equals_scalar": 3,
    "tests/test_p3109_modes.py::test_array_arith_equals_scalar_on_every_pair": 3,      # 5.6
    "tests/test_convert_vs_ml_dtypes.py::test_convert_every_code_matches_ml_dtypes_astype": 2,
    "tests/test_p3109_rules.py::test_stochastic_rounding_equals_the_text": 3,          # 5.4
    "tests/test_round_vs_ml_dtypes.py::test_rne_from_float64_matches_ml_dtypes": 3,    # 4.9
    "tests/test_vectors.py::test_vectors_hold_through_the_scalar_and_array_paths": 3,  # 4.8
    "tests/test_ops_fast_paths.py::test_elementary_fp32_round_to_nearest": 2,          # 4.7
    "tests/test_array_arith.py::test_stochastic_rounding_every_sr_bits_from_1_to_64": 3,
    "tests/test_strategies.py::test_notable_code_is_found_at_once": 3,                 # 4.7
    "tests/test_p3109_modes.py::test_array_encode_equals_scalar": 3,                   # 4.7
    "tests/test_p3109_formats.py::test_rounding_to_nearest_even_matches_gfloat": 3,    # 4.6
    "tests/test_cli_gen_ver.py::test_gen_then_ver_round_trips_every_conversion": 4,    # 4.6
    "tests/test_array_arith.py::test_tininess_at_the_smallest_normal": 3,              # 4.0
    "tests/test_strategies.py::test_rounding_inputs_of_p3109_formats_are_gfloat_ties": 3,
    "tests/test_round_independent.py::test_ftz_flushes_tiny_results_to_zero_of_the_input_sign": 3,
    "tests/test_mma_tile.py::test_tile_path_equals_the_row_model_on_random_codes": 3,  # 3.5
    "tests/test_testfloat_gen_ver.py::"
    "test_ver_accepts_softfloats_results_in_every_mode_and_tininess": 3,                # 3.4
    "tests/test_strategies.py::test_bounds_that_are_values_of_the_format": 2,          # 3.4
    "tests/test_cli_gen_ver.py::"
    "test_gen_then_ver_round_trips_every_operation_of_every_format": 3,                 # 3.3
    "tests/test_cli_gen_ver.py::test_gen_then_ver_round_trips_under_every_setting": 3,  # 2.0
    "tests/test_arith_independent.py::test_rna_and_rto_match_the_reference": 2,        # 1.9
}


# And of every parametrized test, the default run keeps at most DEFAULT_CASES
# of the parametrizations left (after SAMPLED and the tests' own `exhaustive`
# marks), spread evenly over them in collection order: the first, and every
# ceil(n / DEFAULT_CASES)-th after it.  The others are marked `exhaustive`, so
# `tox` (the default run) and `tox -e exhaustive` together run every case, and
# every test function runs in the default run.
DEFAULT_CASES = 3


def _default_cases(n: int) -> set[int]:
    """The positions, among ``n`` parametrizations, that the default run keeps."""
    every = -(-n // DEFAULT_CASES)
    return set(range(0, n, every))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark all but every N-th parametrization of the tests of SAMPLED
    ``exhaustive``, and then all but DEFAULT_CASES of every parametrized
    test's remaining ones (before ``-m`` deselects by marker)."""
    seen: collections.Counter[str] = collections.Counter()
    left: dict[str, list[pytest.Item]] = collections.defaultdict(list)
    for item in items:
        name, bracket, _ = item.nodeid.partition("[")
        if not bracket:
            continue
        every = SAMPLED.get(name)
        if every is not None:
            if seen[name] % every:
                item.add_marker(pytest.mark.exhaustive)
            seen[name] += 1
        if item.get_closest_marker("exhaustive") is None:
            left[name].append(item)
    for cases in left.values():
        keep = _default_cases(len(cases))
        for i, item in enumerate(cases):
            if i not in keep:
                item.add_marker(pytest.mark.exhaustive)


@pytest.fixture(autouse=True)
def _sigint_left_as_found():
    """A test (or the fpsim code it runs) that leaves SIGINT's handler
    changed breaks every later test of Ctrl-C in its process, and a user's
    Ctrl-C: fail that test, naming what it left, and put the handler back."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"the test left SIGINT's handler {after!r} (it was {before!r})")


def sigint_default() -> None:
    """A child's ``preexec_fn``: it starts with SIGINT's default action, so
    that Python there turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def ctrl_c():
    """For tests of Ctrl-C: SIGINT raises KeyboardInterrupt in this process
    for the test's duration, and the fixture's value is a ``preexec_fn``
    that starts a child with SIGINT's default action, so that Python
    installs its handler there too.  (A shell's background job, and what it
    starts, inherit SIGINT ignored.)"""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield sigint_default
    signal.signal(signal.SIGINT, before)
