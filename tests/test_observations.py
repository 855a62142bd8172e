"""What the model reads."""

from agent.kb.base import Claim, Entry, Qualifier, QueryResult, SearchHit, SearchResults, Value
from agent.observations import format_entry, format_query_result, format_search, shorten_iri


def uri(qid):
    return {"type": "uri", "value": f"http://www.wikidata.org/entity/{qid}"}


def test_search_shows_at_most_eight_items_and_four_properties_with_datatypes():
    results = SearchResults(items=[SearchHit(f"Q{i}", f"item {i}", "a thing") for i in range(1, 12)],
                            properties=[SearchHit(f"P{i}", f"prop {i}", "a property", "wikibase-item")
                                        for i in range(1, 7)])
    text = format_search(results)
    assert text.count("(Q") == 8 and text.count("(P") == 4
    assert "item 1 (Q1): a thing" in text and "prop 1 (P1) [wikibase-item]: a property" in text


def test_large_results_show_the_first_and_last_five_rows():
    rows = [{"x": uri(f"Q{i}")} for i in range(1, 24)]
    text = format_query_result(QueryResult("ok", ["x"], rows))
    lines = text.splitlines()
    assert lines[0] == "x" and lines[1:6] == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert "13 rows omitted" in text and lines[-2] == "Q23" and lines[-1] == "(23 rows)"
    assert "http://" not in text


def test_the_four_signals():
    assert format_query_result(QueryResult("empty", ["x"])) == "The query returned an empty result."
    assert format_query_result(QueryResult("syntax_error", message="Lexical error at line 1")).startswith(
        "Syntax error: Lexical error")
    assert "timed out" in format_query_result(QueryResult("timeout"))
    assert format_query_result(QueryResult("ok", boolean=True)) == "True"


def test_iris_shorten_to_ids_and_prefixes():
    assert shorten_iri("http://www.wikidata.org/entity/Q42") == "Q42"
    assert shorten_iri("http://www.wikidata.org/prop/direct/P31") == "wdt:P31"
    assert shorten_iri("http://www.wikidata.org/prop/qualifier/P580") == "pq:P580"
    assert shorten_iri("http://www.wikidata.org/entity/statement/Q42-abc") == "wds:Q42-abc"
    assert shorten_iri("http://www.wikidata.org/prop/direct-normalized/P214") == "wdtn:P214"
    assert shorten_iri("http://example.org/x") == "http://example.org/x"


def test_entries_group_values_and_keep_qualifiers():
    entry = Entry("Q42", "Douglas Adams", "English writer", [
        Claim("P69", "educated at", Value("St John's College", "Q691283"),
              [Qualifier("P580", "start time", Value("1971"))]),
        Claim("P69", "educated at", Value("Brentwood School", "Q4961791")),
        Claim("P31", "instance of", Value("human", "Q5")),
    ])
    text = format_entry(entry)
    assert text.startswith("Douglas Adams (Q42): English writer\n")
    assert '"instance of (P31)": "human (Q5)"' in text
    assert '"start time (P580)": "1971"' in text and "Brentwood School (Q4961791)" in text
