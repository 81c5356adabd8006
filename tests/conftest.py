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
