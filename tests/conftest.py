"""Shared fixtures: each lives in ``tests/support/`` and is registered here."""

import os
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.support.llm_server",
    "tests.support.wikidata_server",
    "tests.support.mediawiki",
    "tests.support.figures",
    "tests.support.browser",
    "tests.support.serve_rig",
    "tests.support.kqapro",
]

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


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


# -- the bot's tests: a forum page, the bot's wiki session, the stand-ins the bot talks to, the bot ---------------

@pytest.fixture
def forum(mediawiki, request) -> str:
    """A fresh forum page of the test's own on the test wiki (and an empty stop page): its title."""
    from tests.support.mediawiki import unique

    return mediawiki.fresh_forum(unique(request.node.name))


@pytest.fixture(scope="module")
def site(mediawiki):
    """The bot's pywikibot site on the test wiki, logged in as the bot."""
    import pywikibot

    site = pywikibot.Site()
    site.login()
    assert site.logged_in()
    return site


@pytest.fixture
def services(llm_server, wikidata_server) -> dict:
    """The model (one query about Euler's advisors, then stop) and Wikidata (Euler's world, one advisor)."""
    from tests.support.bot_rig import scripted
    from tests.support.euler import euler_entities
    from tests.support.wikidata_server import select

    wikidata = wikidata_server(sparql=lambda query: select(["advisor"], [{"advisor": "Q124500"}]))
    wikidata.add(*euler_entities())
    return {"wikidata": wikidata, "llm": llm_server(scripted({}))}


@pytest.fixture
def rig(mediawiki, services, tmp_path):
    """The bot as its operator runs it, against the test wiki and *services*."""
    from tests.support.bot_rig import BotRig

    return BotRig(mediawiki, tmp_path, services["llm"], services["wikidata"])


@pytest.fixture
def world(wikidata_server):
    """Wikidata answering the rivers question (:mod:`tests.support.rivers`)."""
    from tests.support.rivers import add_river_entities, rivers

    return add_river_entities(wikidata_server(sparql=rivers))
