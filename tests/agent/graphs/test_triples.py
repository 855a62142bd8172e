"""A third graph added by a profile file alone: stored, searched, shown, and explored by the agent."""

import json

import pytest

from agent import Agent, AgentConfig
from agent.graph import load_graph
from agent.kb.local import LocalKB
from agent.llm import ChatModel, LLMConfig
from agent.observations import format_entry, format_property_examples, format_query_result, format_search
from tests.support.llm_server import ToolCallReply
from tests.support.paths import FIXTURES

GRAPHS = FIXTURES / "graphs"
LIBRARY = load_graph(GRAPHS / "library.toml")
BOOKS_QUERY = "SELECT ?book ?published WHERE { ?book schema:author lib:person1 ; schema:datePublished ?published }"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    store = LocalKB(tmp_path_factory.mktemp("library") / "store", graph=LIBRARY, timeout=20)
    store.load([GRAPHS / "library.ttl"], progress=False)
    return store


def test_search_uses_the_graphs_own_labels_and_descriptions(kb):
    assert [(hit.id, hit.description) for hit in kb.search("dune").items] == [
        ("lib:book1", "novel by Frank Herbert, 1965"), ("lib:film1", "film by Denis Villeneuve, 2021"),
        ("lib:book2", "novel by Frank Herbert, 1969"), ("lib:book3", "book")]
    assert [hit.id for hit in kb.search("author").properties] == ["schema:author"]
    assert "Properties:\nauthor (schema:author)" in format_search(kb.search("author"))


def test_an_entry_is_the_items_outgoing_triples_as_its_queries_write_them(kb):
    entry = format_entry(kb.get_entry("book1"))
    assert entry.startswith("Dune (lib:book1): novel by Frank Herbert, 1965\n")
    assert json.loads(entry.split("\n", 1)[1]) == {
        "author (schema:author)": "Frank Herbert (lib:person1)", "date published (schema:datePublished)": "1965-08-01",
        "number of pages (schema:numberOfPages)": "412", "type (rdf:type)": "schema:Book"}
    assert format_property_examples("schema:director", kb.property_examples("schema:director")) == \
        "Dune (lib:film1) schema:director Denis Villeneuve (lib:person2)"
    assert kb.get_entry("book9") is None and kb.property_examples("editor") is None


def test_queries_use_the_profiles_prefixes_and_show_names(kb):
    assert format_query_result(kb.execute(BOOKS_QUERY + " ORDER BY ?published")).splitlines()[1:] == [
        "Dune lib:book1\t1965-08-01", "Dune Messiah lib:book2\t1969-10-15", "Children of Dune lib:book3\t1976-04-01",
        "(3 rows)"]
    assert kb.execute("SELECT ?x WHERE { ?x wdt:P31 ?y }").status == "syntax_error"  # no Wikidata prefixes here


def test_the_agent_explores_the_third_graph_with_the_same_five_actions(llm_server, kb):
    def reply(name, **arguments):
        return ToolCallReply(name, {"thought": f"{name} next", **arguments})

    server = llm_server([reply("search_wikidata", query="Frank Herbert"), reply("get_wikidata_entry", qid="lib:book2"),
                         reply("get_property_examples", pid="schema:author"),
                         reply("execute_sparql", sparql=BOOKS_QUERY),
                         reply("stop", explanation="Three novels.", language="en")])
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="test", max_retries=0, timeout=10))
    agent = Agent(llm, kb, AgentConfig(
                                       answer_guaranteed=True))
    result = agent.run("Which books did Frank Herbert write, and when?")
    assert result.stop_reason == "stop" and [step.action for step in result.path] == [
        "search_wikidata", "get_wikidata_entry", "get_property_examples", "execute_sparql", "stop"]
    assert "Frank Herbert (lib:person1): American writer" in result.steps[0].observation
    assert result.steps[1].argument == "lib:book2" and "Dune Messiah (lib:book2)" in result.steps[1].observation
    assert result.steps[2].argument == "schema:author"
    assert sorted(row["book"]["value"] for row in result.answer) == [
        f"http://example.org/library/book{n}" for n in (1, 2, 3)]
    policy = server.requests[0]["messages"][0]["content"]
    assert policy.startswith("Answer with a SPARQL query over the library catalogue")
    assert "6. Items are lib: IRIs (lib:book1)" in policy and "Wikidata" not in policy
