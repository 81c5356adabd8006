import os

import pytest

from tests.helpers import CORPUS


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite golden outputs and snapshots instead of comparing against them",
    )


@pytest.fixture
def update_golden(request):
    return request.config.getoption("--update-golden") or os.environ.get("TRAINPROOF_UPDATE_GOLDEN") == "1"


@pytest.fixture
def corpus():
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS} (it is not part of a user's clone)")
    return CORPUS


# Budgets of the property-based tests (tests/test_fuzz.py). "ci" is the default:
# derandomized, so every run tries the same inputs, and no example database
# written into the checkout. "long" tries 20 times as many, new ones each run:
#     pytest tests/test_fuzz.py --hypothesis-profile=long
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is needed only by the fuzz test, which then skips
    pass
else:
    FUZZ_EXAMPLES = 500
    settings.register_profile(
        "ci", max_examples=FUZZ_EXAMPLES, derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.register_profile(
        "long", max_examples=20 * FUZZ_EXAMPLES, derandomize=False, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
    )
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster of 2 CPUs for every Ray test of the session, started the way the CLI starts one, shut down
    at the end of the session (the tests that need it skip without ray)."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    from trainproof.data import ray_engine

    ray_engine.connect(jobs=2)
    yield ray
    ray.shutdown()
