"""A graph's own labels and languages: several label predicates, languages in order, through the agent's tools.

The museum graph names its techniques by SKOS (``skos:prefLabel``, ``skos:altLabel``) and its artworks by
``schema:name``, in English and Dutch; a profile lists all of them and both languages.
"""

import json
import sqlite3

import pytest

from agent import Agent, AgentConfig
from agent.actions import actions_for, shown_names, tool_schemas
from agent.graph import WIKIDATA, parse_profile
from agent.kb.local import LocalKB
from agent.kb.local.search import SCHEMA, SearchIndex
from agent.llm import ChatModel, LLMConfig
from agent.observations import format_search
from agent.prompts import render
from tests.support.graphs import GRAPHS, fixture_graph, fixture_profile
from tests.support.llm_server import ToolCallReply

MUSEUM = fixture_profile("museum")


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    store = fixture_graph(tmp_path_factory.mktemp("museum"), "museum", timeout=20)
    yield store
    store.close()


def run(llm_server, kb, replies):
    server = llm_server([*replies, ToolCallReply("stop", {"explanation": "Done.", "language": "en"})])
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="test", max_retries=0, timeout=10))
    return server, Agent(llm, kb, AgentConfig(answer_guaranteed=False)).run("Which paintings are oil on canvas?")


def search(text):
    return ToolCallReply("search_graph", {"thought": "Search.", "query": text})


def test_search_reads_every_label_predicate_in_every_language_listed(llm_server, kb):
    _, result = run(llm_server, kb, [search("oil on canvas"), search("olieverf op doek"), search("canvas painting"),
                                     search("Nachtwacht"), search("Rembrandt"), search("Vermeer")])
    first = [step.observation.splitlines()[0] for step in result.steps[:-1]]
    assert first == [
        "oil on canvas (aat:oil-on-canvas): concept",            # skos:prefLabel, English
        "oil on canvas (aat:oil-on-canvas): concept",            # its Dutch prefLabel finds it, shown in English
        "oil on canvas (aat:oil-on-canvas): concept",            # its altLabel
        "The Night Watch (mus:nightwatch): group portrait by Rembrandt",  # a word of a Dutch schema:name
        "Rembrandt van Rijn (mus:rembrandt): person",            # an untagged schema:name
        "Johannes Vermeer (mus:vermeer): person"]                # rdfs:label


def test_the_label_shown_is_in_the_first_language_present_then_untagged_then_any(kb):
    assert format_search(kb.search("oil on panel")).splitlines()[0] == "oil on panel (aat:oil-on-panel): concept"
    assert format_search(kb.search("olieverf op paneel")).splitlines()[0] == \
        "oil on panel (aat:oil-on-panel): concept"  # an English other name before a Dutch preferred one
    assert format_search(kb.search("ets")).splitlines()[0] == "ets (aat:etching): concept"  # Dutch alone
    assert kb.search("fresque").items == []  # French is not listed: not searched ...
    assert kb.get_entry("aat:fresco").label == "fresque"  # ... but names a thing that has nothing else
    assert {hit.id: hit.label for hit in kb.describe(["mus:nightwatch", "aat:etching"], language="nl")} == {
        "mus:nightwatch": "De Nachtwacht", "aat:etching": "ets"}


def test_entries_examples_and_results_show_labels_not_iris(llm_server, kb):
    query = "SELECT ?work ?medium WHERE { ?work schema:artMedium ?medium } ORDER BY ?work"
    _, result = run(llm_server, kb, [
        ToolCallReply("get_entry", {"thought": "The painting.", "entity": "mus:nightwatch"}),
        ToolCallReply("get_entry", {"thought": "The technique.", "entity": "aat:oil-on-panel"}),
        ToolCallReply("get_property_examples", {"thought": "The medium.", "property": "schema:artMedium"}),
        ToolCallReply("execute_sparql", {"thought": "All of them.", "sparql": query})])
    night_watch, panel, examples, rows = (step.observation for step in result.steps[:4])
    header, claims = night_watch.split("\n", 1)
    assert header == "The Night Watch (mus:nightwatch): group portrait by Rembrandt"
    assert json.loads(claims) == {
        "art medium (schema:artMedium)": "oil on canvas (aat:oil-on-canvas)",
        "creator (schema:creator)": "Rembrandt van Rijn (mus:rembrandt)",
        "name (schema:name)": "De Nachtwacht (nl)",  # its other names stay, saying their language
        "type (rdf:type)": "painting (schema:Painting)"}
    assert panel.startswith("oil on panel (aat:oil-on-panel): concept\n")
    assert json.loads(panel.split("\n", 1)[1])["pref label (skos:prefLabel)"] == "olieverf op paneel (nl)"
    assert examples.splitlines()[0] == \
        "The Milkmaid (mus:milkmaid) schema:artMedium oil on canvas (aat:oil-on-canvas)"
    assert rows.splitlines()[1:4] == ["The Milkmaid mus:milkmaid\toil on canvas aat:oil-on-canvas",
                                      "The Night Watch mus:nightwatch\toil on canvas aat:oil-on-canvas",
                                      "De drie bomen mus:threetrees\tets aat:etching"]


def test_one_language_alone_finds_nothing_in_another(tmp_path):
    english = parse_profile((GRAPHS / "museum.toml").read_text().replace('languages = ["en", "nl"]',
                                                                         'language = "en"'), "english.toml")
    store = LocalKB(tmp_path / "store", graph=english, timeout=20)
    try:
        store.load([GRAPHS / "museum.ttl"], progress=False)
        assert store.search("olieverf op doek").items == [] and store.search("ets").items == []
        assert [hit.id for hit in store.search("oil on canvas").items] == ["aat:oil-on-canvas"]
    finally:
        store.close()


def test_the_model_sees_neutral_tool_and_argument_names_off_wikidata(llm_server, kb):
    server, result = run(llm_server, kb, [
        ToolCallReply("get_entry", {"thought": "A model that knows Wikidata's names.", "qid": "mus:vermeer"}),
        ToolCallReply("get_entry", {"thought": "No argument.", "query": "mus:vermeer"})])
    assert [step.action for step in result.steps] == ["get_wikidata_entry", "get_wikidata_entry", "stop"]
    assert result.steps[0].observation.startswith("Johannes Vermeer (mus:vermeer)")
    assert result.steps[1].observation == 'get_entry takes its argument as "entity"; the call gave "query".'
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in server.requests[0]["tools"]}
    assert list(tools) == ["search_graph", "get_entry", "get_property_examples", "execute_sparql", "stop"]
    assert list(tools["get_entry"]["properties"]) == ["thought", "entity"]
    assert list(tools["get_property_examples"]["properties"]) == ["thought", "property"]
    # The history the model reads back names the argument as its tools do.
    replayed = [call["function"] for message in server.requests[-1]["messages"]
                for call in message.get("tool_calls", [])]
    assert json.loads(replayed[0]["arguments"]) == {"entity": "mus:vermeer"}
    text = render("policy", answer_guaranteed=False, text_protocol=True, actions=actions_for(MUSEUM),
                  scholarly_service="", graph=MUSEUM.prompt)
    assert "- get_entry(entity): an item's statements" in text
    assert "- get_property_examples(property): how a property is used" in text


def test_wikidata_keeps_its_own_tool_and_argument_names():
    tools = {tool["function"]["name"]: list(tool["function"]["parameters"]["properties"])
             for tool in tool_schemas(WIKIDATA)}
    assert tools["search_wikidata"] == ["thought", "query"] and tools["get_wikidata_entry"] == ["thought", "qid"]
    assert tools["get_property_examples"] == ["thought", "pid"]
    assert shown_names("wikidata")["search_wikidata"] == "search_wikidata"
    assert shown_names(MUSEUM) == {"search_wikidata": "search_graph", "get_wikidata_entry": "get_entry",
                                   "get_property_examples": "get_property_examples",
                                   "execute_sparql": "execute_sparql", "stop": "stop"}


def test_an_index_written_before_labels_were_ranked_takes_new_labels(tmp_path):
    path = tmp_path / "index.sqlite"
    before = SCHEMA.replace(",\n    label_rank INTEGER NOT NULL DEFAULT 2147483647, description_rank INTEGER "
                            "NOT NULL DEFAULT 2147483647", "")
    assert "label_rank" not in before
    old = sqlite3.connect(path)
    old.executescript(before)
    old.execute("INSERT INTO entities (id, kind, number, label) VALUES ('aat:fresco', 'item', 0, 'fresque')")
    old.commit()
    old.close()
    index = SearchIndex(path, MUSEUM.names, kind_of=MUSEUM.kind_of, fallback=True)
    index.begin("museum.ttl")
    index.add([("aat:fresco", "label", "fresco", "en"), ("aat:fresco", "alias", "fresco", "nl")])
    index.commit()
    assert [(hit.id, hit.label) for hit in index.search("fresco", "item", 5)] == [("aat:fresco", "fresco")]
