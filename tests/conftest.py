"""Shared fixtures: each lives in ``tests/support/`` and is registered here; the bot tests' own are in
``tests/bot/conftest.py``."""

import os
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytest_plugins = [
    "tests.support.llm_server",
    "tests.support.wikidata_server",
    "tests.support.mediawiki",
    "tests.support.figures",
    "tests.support.browser",
    "tests.support.serve_rig",
    "tests.support.two_engines",
    "tests.support.kqapro",
]

SHARED = ROOT.parent / "shared"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Two workers per core for ``--numprocesses=auto``: a worker spends much of its time waiting (on its
    MediaWiki, a bot process, a real backoff), and a second one per core keeps the cores busy.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 2 * len(os.sched_getaffinity(0))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``../shared`` material; tests that need it skip, saying why, when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared (datasets, reference outputs, Wikidata samples) is not present beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def gold_queries(shared_dir) -> list[str]:
    """The 714 gold queries of SPINACH dev/test and QALD-10: the real queries SPARQL handling is judged on."""
    from harness.datasets import load_dataset

    sets = (("spinach", "dev"), ("spinach", "test"), ("qald10", "test"))
    data = shared_dir / "datasets"
    return [example.gold_sparql for name, split in sets for example in load_dataset(name, split, data)]
