"""The preview's headers as a German, French or English reader sees them in a browser, on the real MediaWiki.

The bot answers the rivers question (:mod:`tests.test_reply_in_browser`)
through the one rig; the final query binds ``?length`` to P2043,
``?basin_km2`` to P2053 and ``?river`` to instances of Q4022.  Their labels come from the stand-in Wikidata's
``wbgetentities``, the agent's own knowledge base.
"""

from __future__ import annotations

import pytest

from tests.support.bot_rig import BotRig
from tests.test_reply_in_browser import answer, open_page, plan
from tests.test_reply_in_browser import world  # noqa: F401 (a fixture)

pytestmark = pytest.mark.mediawiki
LABELS = {"P2043": {"de": "Länge", "fr": "longueur"},
          "P2053": {"de": "Einzugsgebiet", "fr": "bassin versant"},
          "Q4022": {"de": "Fluss", "fr": "rivière"}}  # the class of ?river's items (wdt:P31 wd:Q4022)
HEADERS = {"en": ["river", "length", "basin km²"],
           "de": ["Fluss", "Länge", "Einzugsgebiet km²"],
           "fr": ["rivière", "longueur", "bassin versant km²"]}
#: In the page: the preview's headers as the reader sees them.
SHOWN_HEADERS = "[...document.querySelectorAll('#mw-content-text table.wikitable th')].map((th) => th.innerText.trim())"


@pytest.fixture
def labelled(world):  # noqa: F811
    """The rivers' Wikidata, its properties and the class of rivers labelled in German and French as well."""
    for pid, labels in LABELS.items():
        for language, label in labels.items():
            world.entities[pid]["labels"][language] = {"language": language, "value": label}
    return world


@pytest.mark.parametrize("language", ["en", "de", "fr"])
def test_the_previews_headers_read_in_the_askers_language(mediawiki, llm_server, labelled, browser, tmp_path,
                                                          language):
    forum = mediawiki.fresh_forum(f"headers {language}")
    rig = BotRig(mediawiki, tmp_path, llm_server(plan(language)), labelled)
    answer(mediawiki, rig, forum, language)
    open_page(browser, mediawiki, forum)
    assert browser.evaluate(SHOWN_HEADERS) == HEADERS[language]
    if language != "en":  # the labels were asked for in the reply's language
        assert any(request["params"].get("languages") == f"{language}|mul" for request in labelled.requests)


def test_a_label_that_cannot_be_read_leaves_the_variables_words_and_the_reply_is_posted(
        mediawiki, llm_server, labelled, browser, tmp_path, monkeypatch):
    def failing(params):
        if params.get("languages", "").startswith("de|"):
            return {"error": {"code": "internal_api_error_DBQueryError", "info": "A database query error occurred."}}
        return found(params)

    found = labelled.get_entities
    monkeypatch.setattr(labelled, "get_entities", failing)
    forum = mediawiki.fresh_forum("headers unreadable")
    rig = BotRig(mediawiki, tmp_path, llm_server(plan("de")), labelled)
    reply = answer(mediawiki, rig, forum, "de")
    assert "Das sind die Flüsse" in reply.splitlines()[0]
    open_page(browser, mediawiki, forum)
    assert browser.evaluate(SHOWN_HEADERS) == HEADERS["en"]
