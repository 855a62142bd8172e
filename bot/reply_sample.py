"""A reply holding every kind of markup the bot's replies hold: the edit check parses it once on each wiki to learn
which classes and styles the bot's own markup brings there (its templates render as that wiki defines them)."""

from __future__ import annotations

from agent.trace import AgentResult, Step, StopReason, Usage
from bot.render import Markup, render_reply

QUERY = ('SELECT ?item ?itemLabel ?date WHERE { ?item wdt:P31 wd:Q5 ; wdt:P569 ?date . FILTER(?date > "1900"^^xsd:date)'
         ' SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". } } LIMIT 10')
ENTITY = "http://www.wikidata.org/entity/Q42"
XSD_DATE_TIME = "http://www.w3.org/2001/XMLSchema#dateTime"


def sample_reply(markup: Markup = Markup.TEMPLATES) -> str:
    """A reply with a query in the ``{{SPARQL}}`` template (in the plain *markup*, a text block and a link), a
    preview table that is cut, and a trace of searches, entries and queries in its collapsed block."""
    rows = [{"item": {"type": "uri", "value": ENTITY},
             "itemLabel": {"type": "literal", "value": "Douglas Adams", "xml:lang": "en"},
             "date": {"type": "literal", "value": "1952-03-11T00:00:00Z", "datatype": XSD_DATE_TIME}}] * 7
    steps = [Step("Find the item.", "search_wikidata", "Douglas Adams", "Douglas Adams (Q42): English writer"),
             Step("Read it.", "get_wikidata_entry", "Q42", "Q42: instance of (P31): human (Q5)"),
             Step("Run the query.", "execute_sparql", "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } LIMIT 1", "x\nQ42"),
             Step("Run the final query.", "execute_sparql", QUERY, "item\titemLabel\tdate\nQ42\tDouglas Adams\t1952")]
    result = AgentResult("sample", QUERY, rows, ["item", "itemLabel", "date"], steps, StopReason.STOP,
                         "The query lists people born after 1900.", Usage(llm_calls=4))
    return render_reply(result, markup=markup)
