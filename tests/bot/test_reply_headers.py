"""The preview's headers as a German, French or English reader sees them in a browser, on the real MediaWiki.

The bot answers the rivers question (:mod:`tests.bot.test_reply_in_browser`)
through the one rig; the final query binds ``?length`` to P2043,
``?basin_km2`` to P2053 and ``?river`` to instances of Q4022.  Their labels come from the stand-in Wikidata's
``wbgetentities``, the agent's own knowledge base.
"""

from __future__ import annotations

import pytest

from tests.support.bot_rig import BotRig
from tests.bot.test_reply_in_browser import answer, open_page, plan

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
def labelled(world):
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


XSD = "http://www.w3.org/2001/XMLSchema#"
#: A question in each language, the model's final query with its variables named in that language, the query
#: service's rows (labels tagged with the language), the labels of what the variables hold, and what a reader of
#: that language sees: the preview's headers, the lead, the steps' title, the first row of the steps' table and
#: the footer's punctuation.
ASKED = {
    "de": {"question": "Welche Städte haben mehr als zehn Millionen Einwohner?",
           "query": "SELECT ?stadt ?stadtLabel ?einwohnerzahl WHERE { ?stadt wdt:P31 wd:Q515 ; "
                    "wdt:P1082 ?einwohnerzahl . FILTER(?einwohnerzahl > 10000000) }",
           "rows": [("Q8686", "Schanghai", {"einwohnerzahl": ("24870895", "decimal")}),
                    ("Q1490", "Tokio", {"einwohnerzahl": ("14047594", "decimal")})],
           "labels": {"Q515": ("city", "Stadt"), "P1082": ("population", "Einwohnerzahl")},
           "headers": ["Stadt", "Einwohnerzahl"],
           "lead": "Die Abfrage unten liefert 2 Ergebnisse.",
           "title": "Vorgehen (1 Schritt, 2 Modellaufrufe)",
           "row": "Q8686  Schanghai   24.870.895",
           "footer": "Sprachmodell; bitte prüfe die Abfrage (über diesen Bot: seine Benutzerseite)."},
    "fr": {"question": "Quelle est la durée et la date de sortie des films de Marcel Carné ?",
           "query": "SELECT ?film ?filmLabel ?duree ?date WHERE { ?film wdt:P31 wd:Q11424 ; wdt:P57 wd:Q312258 ; "
                    "wdt:P2047 ?duree ; wdt:P577 ?date . }",
           "rows": [("Q751040", "Les Enfants du paradis", {"duree": ("190", "decimal"),
                                                          "date": ("1945-03-09T00:00:00Z", "dateTime")}),
                    ("Q1133412", "Le Quai des brumes", {"duree": ("91", "decimal"),
                                                        "date": ("1938-05-18T00:00:00Z", "dateTime")})],
           "labels": {"Q11424": ("film", "film"), "P2047": ("duration", "durée"),
                      "P577": ("publication date", "date de publication")},
           "headers": ["film", "durée", "date de publication"],
           "lead": "La requête ci-dessous donne 2 résultats.",
           "title": "Ma démarche (1 étape, 2 appels au modèle)",
           "row": "Q751040  Les Enfants du paradis  190    1945-03-09",
           "footer": "modèle de langue ; merci de vérifier la requête (à propos de ce bot : sa page utilisateur)."},
    "es": {"question": "¿Qué ríos miden más de 6000 km?",
           "query": "SELECT ?rio ?rioLabel ?longitud WHERE { ?rio wdt:P31 wd:Q4022 ; wdt:P2043 ?longitud . "
                    "FILTER(?longitud > 6000) }",
           "rows": [("Q3392", "Nilo", {"longitud": ("6650", "decimal")}),
                    ("Q3783", "Amazonas", {"longitud": ("6400", "decimal")})],
           "labels": {"Q4022": ("river", "río"), "P2043": ("length", "longitud")},
           "headers": ["río", "longitud"],
           "lead": "La consulta de abajo da 2 resultados.",
           "title": "Cómo busqué (1 paso, 2 llamadas al modelo)",
           "row": "Q3392  Nilo      6650",
           "footer": "modelo de lenguaje; comprueba la consulta (sobre este bot: su página de usuario)."},
}


def asked_world(wikidata_server, language: str):
    """The query service answering the final query in *language*, its labels tagged with the language, and the
    properties and classes labelled in English and in *language*."""
    from tests.support.wikidata_server import entity, select

    asked = ASKED[language]
    item, label = asked["query"].split()[1][1:], asked["query"].split()[2][1:]
    rows = [{item: qid, label: {"type": "literal", "value": name, "xml:lang": language},
             **{name_: {"type": "literal", "value": value, "datatype": XSD + datatype}
                for name_, (value, datatype) in values.items()}} for qid, name, values in asked["rows"]]
    wikidata = wikidata_server(sparql={asked["query"]: select(list(rows[0]), rows)})
    for entity_id, (english, translated) in asked["labels"].items():
        wikidata.add(entity(entity_id, english))
        wikidata.entities[entity_id]["labels"][language] = {"language": language, "value": translated}
    return wikidata


def asked_plan(language: str):
    """A model that runs the final query in *language* and stops with an explanation in that language."""
    from tests.support.llm_server import ErrorReply, ToolCallReply

    def reply(body):
        if "tools" not in body:
            return ErrorReply(400, "no pruning expected")
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("execute_sparql", {"thought": "", "sparql": ASKED[language]["query"]})
        return ToolCallReply("stop", {"thought": "", "language": language, "explanation": ""})

    return reply


@pytest.mark.parametrize("language", ["de", "fr", "es"])
def test_a_reply_reads_as_a_regular_of_the_askers_language_writes_it(mediawiki, llm_server, wikidata_server, browser,
                                                                     tmp_path, language):
    from tests.support.forum_text import new_section

    asked = ASKED[language]
    forum = mediawiki.fresh_forum(f"read {language}")
    rig = BotRig(mediawiki, tmp_path, llm_server(asked_plan(language)), asked_world(wikidata_server, language))
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Frage", asked["question"]))
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]
    open_page(browser, mediawiki, forum)
    assert browser.evaluate(SHOWN_HEADERS) == asked["headers"]
    browser.evaluate("[...document.querySelectorAll('.mw-collapsible-toggle')].pop().click(), true")
    shown = browser.evaluate("document.querySelector('#mw-content-text').innerText").replace("\xa0", " ")
    lines = [line.strip() for line in shown.splitlines()]
    assert asked["lead"] in shown and asked["title"] in shown, shown
    assert asked["row"] in lines, shown  # the steps' first row: no language tag, numbers and dates as written
    assert f"@{language}" not in shown and asked["footer"] in shown  # French spaces its ";" and ":"
