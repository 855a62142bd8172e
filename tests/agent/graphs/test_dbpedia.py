"""A DBpedia-style graph by its profile alone: case-sensitive IDs with escapes, two property namespaces, classes."""

import json

import pytest

from agent import Agent, AgentConfig
from agent.actions import actions_for, check_argument
from agent.llm import ChatModel, LLMConfig
from agent.observations import format_entry, format_property_examples, format_query_result, format_search
from agent.prompts import render
from tests.support.graphs import fixture_graph, fixture_profile
from tests.support.llm_server import ToolCallReply

DBPEDIA = fixture_profile("dbpedia")
TEXAS = r"dbr:Paris\,_Texas"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    store = fixture_graph(tmp_path_factory.mktemp("dbpedia"), "dbpedia", timeout=20)
    yield store
    store.close()


@pytest.mark.parametrize("written, expected", [
    ("dbr:Marie_Curie", "dbr:Marie_Curie"), ("<http://dbpedia.org/resource/Marie_Curie>", "dbr:Marie_Curie"),
    ("http://dbpedia.org/resource/Marie_Curie", "dbr:Marie_Curie"), ("Marie_Curie", "dbr:Marie_Curie"),
    ("dbr:marie_curie", "dbr:marie_curie"),  # another IRI, not upper-cased into a third one
    (TEXAS, TEXAS), ("<http://dbpedia.org/resource/Paris,_Texas>", TEXAS),
    ("dbr:Paris_(mythology)", r"dbr:Paris_\(mythology\)"), ("dbo:Scientist", "dbo:Scientist")])
def test_items_and_classes_as_people_write_them(written, expected):
    assert check_argument("get_wikidata_entry", written, DBPEDIA) == (expected, None)


def test_properties_of_both_namespaces_are_told_apart():
    assert check_argument("get_property_examples", "dbp:nickname", DBPEDIA) == ("dbp:nickname", None)
    assert check_argument("get_property_examples", "http://dbpedia.org/property/nickname", DBPEDIA) == \
        ("dbp:nickname", None)
    assert check_argument("get_property_examples", "birthPlace", DBPEDIA) == ("dbo:birthPlace", None)
    _, error = check_argument("get_property_examples", "dbo:Scientist", DBPEDIA)
    assert error == "'dbo:Scientist' is not a property ID. Give one such as dbo:birthPlace (search first if needed)."


def test_search_tells_same_name_entities_apart_and_finds_classes_and_raw_properties(kb):
    assert [(hit.id, hit.description) for hit in kb.search("Paris").items] == [
        ("dbr:Paris", "capital of France"), (TEXAS, "city in Lamar County, Texas"),
        (r"dbr:Paris_\(mythology\)", "Trojan prince in Greek mythology")]
    assert [hit.id for hit in kb.search("Parigi").items] == []  # labels in other languages are not English names
    assert format_search(kb.search("scientist")).splitlines()[0] == "scientist (dbo:Scientist)"
    assert [hit.id for hit in kb.search("city").items] == ["dbo:City"]  # no label: named after its IRI
    assert "nickname (dbp:nickname)" in format_search(kb.search("nickname"))


def test_text2sparqls_languages_are_searched_and_english_is_shown_first(kb):
    assert format_search(kb.search("Varsovia")).splitlines()[0] == "Warsaw (dbr:Warsaw): city"  # Spanish
    assert [hit.id for hit in kb.search("Warschau").items] == ["dbr:Warsaw"]  # German
    assert format_search(kb.search("Köln")).splitlines()[0] == "Köln (dbr:Cologne): city"  # German alone
    assert kb.search("Cologne").items == []  # French is not listed


def test_entries_examples_and_queries_write_escaped_names(kb):
    entry = format_entry(kb.get_entry(TEXAS))
    assert entry.startswith(rf"Paris ({TEXAS}): city in Lamar County, Texas")
    assert json.loads(entry.split("\n", 1)[1]) == {
        "country (dbo:country)": "United States (dbr:United_States)", "population total (dbo:populationTotal)": "24171",
        "type (rdf:type)": "city (dbo:City)"}
    assert kb.get_entry("dbr:marie_curie") is None
    assert format_property_examples("dbp:nickname", kb.property_examples("dbp:nickname")).splitlines() == [
        "Marie Curie (dbr:Marie_Curie) dbp:nickname Madame Curie",
        "Pierre Curie (dbr:Pierre_Curie) dbp:nickname Pierre"]
    result = kb.execute(rf"SELECT ?c ?n WHERE {{ {TEXAS} dbo:country ?c ; dbo:populationTotal ?n }}")
    assert format_query_result(result).splitlines()[1:] == ["United States dbr:United_States\t24171", "(1 row)"]


def test_know_before_use_names_the_graphs_own_terms(llm_server, kb):
    query = rf"SELECT ?n WHERE {{ {TEXAS} dbo:populationTotal ?n . dbr:Nowhere dbo:country ?c }}"
    server = llm_server([ToolCallReply("search_wikidata", {"thought": "Which Paris?", "query": "Texas"}),
                         ToolCallReply("execute_sparql", {"thought": "Its population.", "sparql": query}),
                         ToolCallReply("stop", {"explanation": "None.", "language": "en"})])
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="test", max_retries=0, timeout=10))
    result = Agent(llm, kb, AgentConfig(answer_guaranteed=True)).run("How many live in Paris, Texas?")
    step = result.steps[1]
    assert step.unseen_ids == [TEXAS, "dbo:populationTotal", "dbr:Nowhere", "dbo:country"]
    assert step.observation.endswith(
        rf"IDs new to this run (check them): {TEXAS} = Paris — city in Lamar County, Texas; "
        "dbo:populationTotal = population total; dbr:Nowhere does not exist; dbo:country = country.")


def test_the_tools_and_the_policy_name_the_graph_not_wikidata(llm_server, kb):
    server = llm_server([ToolCallReply("search_graph", {"thought": "Find her.", "query": "Marie Curie"}),
                         ToolCallReply("get_entry", {"thought": "Her entry.", "entity": "dbr:Marie_Curie"}),
                         ToolCallReply("get_wikidata_entry", {"thought": "The old name works too.", "qid": TEXAS}),
                         ToolCallReply("stop", {"explanation": "None.", "language": "en"})])
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="test", max_retries=0, timeout=10))
    result = Agent(llm, kb, AgentConfig(answer_guaranteed=False)).run("Where was Marie Curie born?")
    assert [step.action for step in result.steps] == ["search_wikidata", "get_wikidata_entry", "get_wikidata_entry",
                                                      "stop"]  # the trace keeps one vocabulary
    assert "Warsaw (dbr:Warsaw)" in result.steps[1].observation
    first, last = server.requests[0], server.requests[-1]
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        "search_graph", "get_entry", "get_property_examples", "execute_sparql", "stop"]
    assert "wikidata" not in json.dumps(last["messages"]).lower()
    text = render("policy", answer_guaranteed=False, text_protocol=True, actions=actions_for(DBPEDIA),
                  scholarly_service="", graph=DBPEDIA.prompt)
    assert "- search_graph(query): items and properties by label" in text
    assert "when the DBpedia sample cannot answer the question" in text and "Wikidata" not in text


def test_the_store_runs_the_profiles_dialect_not_the_query_services(kb):
    result = kb.execute("SELECT ?c ?cLabel WHERE { ?c a dbo:City . "
                        "SERVICE wikibase:label { bd:serviceParam wikibase:language \"en\" } }")
    assert (result.status, result.message) == ("error", "not supported offline: SERVICE wikibase:label")
    result = kb.execute("SELECT (SUM(xsd:int(?n)) AS ?all) WHERE { ?c dbo:populationTotal ?n }")
    assert result.bindings == [{"all": {"type": "literal", "value": "2126821",
                                        "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]
