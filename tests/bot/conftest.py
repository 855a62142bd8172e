"""The bot's tests' fixtures: a forum page, the bot's wiki session, the stand-ins the bot talks to, the bot.

The test wiki itself (``mediawiki``), the stand-in servers and the browser are the whole suite's, registered in
``tests/conftest.py``.
"""

import pytest

from tests.support.bot_rig import BotRig, scripted
from tests.support.euler import euler_entities
from tests.support.mediawiki import unique
from tests.support.rivers import add_river_entities, rivers
from tests.support.wikidata_server import select


@pytest.fixture
def forum(mediawiki, request) -> str:
    """A fresh forum page of the test's own on the test wiki (and an empty stop page): its title."""
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
    wikidata = wikidata_server(sparql=lambda query: select(["advisor"], [{"advisor": "Q124500"}]))
    wikidata.add(*euler_entities())
    return {"wikidata": wikidata, "llm": llm_server(scripted({}))}


@pytest.fixture
def rig(mediawiki, services, tmp_path) -> BotRig:
    """The bot as its operator runs it, against the test wiki and *services*."""
    return BotRig(mediawiki, tmp_path, services["llm"], services["wikidata"])


@pytest.fixture
def world(wikidata_server):
    """Wikidata answering the rivers question (:mod:`tests.support.rivers`)."""
    return add_river_entities(wikidata_server(sparql=rivers))
