"""Shared fixtures: each lives in ``tests/support/`` and is registered here."""

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.support.llm_server",
    "tests.support.wikidata_server",
    "tests.support.mediawiki",
]

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``../shared`` material; tests that need it skip, saying why, when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared (datasets, reference outputs, Wikidata samples) is not present beside the repository")
    return SHARED
