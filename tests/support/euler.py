"""A tiny Wikidata world around Leonhard Euler, in the Special:EntityData JSON format."""

from __future__ import annotations

from tests.support.wikidata_server import entity, item_snak, statement, string_snak, time_snak

EULER_ADVISORS_QUERY = "SELECT ?advisor WHERE { wd:Q7604 wdt:P184 ?advisor . }"


def euler_entities() -> list[dict]:
    return [
        entity("Q7604", "Leonhard Euler", "Swiss mathematician and physicist (1707–1783)", aliases=["Euler"],
               claims={
                   "P31": [statement(item_snak("P31", "Q5"))],
                   "P184": [statement(item_snak("P184", "Q124500"))],
                   "P569": [statement(time_snak("P569", "+1707-04-15T00:00:00Z"))],
                   "P69": [statement(item_snak("P69", "Q372608"),
                                     [time_snak("P582", "+1726-00-00T00:00:00Z", 9)])],
                   "P214": [statement(string_snak("P214", "2466264", "external-id"))],
               }),
        entity("Q124500", "Johann Bernoulli", "Swiss mathematician (1667–1748)",
               claims={"P31": [statement(item_snak("P31", "Q5"))]}),
        entity("Q5", "human", "any member of Homo sapiens"),
        entity("Q372608", "University of Basel", "university in Switzerland"),
        entity("Q7605", "Euler (crater)", "lunar crater"),
        entity("P31", "instance of", "that class of which this subject is a particular example",
               datatype="wikibase-item"),
        entity("P184", "doctoral advisor", "person who supervised the doctorate or PhD thesis of the subject",
               datatype="wikibase-item", claims={"P1855": [statement(item_snak("P1855", "Q7604"),
                                                                     [item_snak("P184", "Q124500")])]}),
        entity("P569", "date of birth", "date on which the subject was born", datatype="time"),
        entity("P69", "educated at", "educational institution attended by subject", datatype="wikibase-item"),
        entity("P582", "end time", "moment when an entity ceases to exist", datatype="time"),
        entity("P214", "VIAF ID", "identifier for the Virtual International Authority File", datatype="external-id"),
    ]


def euler_run(llm_server, wikidata_server):
    """A model that runs :data:`EULER_ADVISORS_QUERY` then stops, and a Wikidata that answers it with Johann
    Bernoulli (*llm_server* and *wikidata_server* are the fixtures of the same names): the servers, started."""
    from tests.support.llm_server import ToolCallReply
    from tests.support.wikidata_server import select

    def reply(body):
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("execute_sparql", {"thought": "run", "sparql": EULER_ADVISORS_QUERY})
        return ToolCallReply("stop", {"thought": "done"})

    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    wikidata.add(*euler_entities())
    return llm_server(reply), wikidata
