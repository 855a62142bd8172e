"""What the model reads."""

from agent.kb.base import Claim, Entry, Qualifier, QueryResult, SearchHit, SearchResults, Value
from agent.observations import format_entry, format_query_result, format_search, shorten_iri
from tests.support.terms import entity_uri as uri


def test_search_shows_at_most_eight_items_and_four_properties_with_datatypes():
    results = SearchResults(items=[SearchHit(f"Q{i}", f"item {i}", "a thing") for i in range(1, 12)],
                            properties=[SearchHit(f"P{i}", f"prop {i}", "a property", "wikibase-item")
                                        for i in range(1, 7)])
    text = format_search(results)
    assert text.count("(Q") == 8 and text.count("(P") == 4
    assert "item 1 (Q1): a thing" in text and "prop 1 (P1) [wikibase-item: an item]: a property" in text


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


def test_search_marks_scholarly_items_and_says_what_a_datatype_means_for_a_query():
    results = SearchResults(items=[SearchHit("Q60133667", "Riemannian Geometry",
                                             "scientific article published in Nature"),
                                   SearchHit("Q761383", "Riemannian geometry", "branch of differential geometry")],
                            properties=[SearchHit("P214", "VIAF ID", "identifier", "external-id"),
                                        SearchHit("P856", "official website", "URL", "url")])
    text = format_search(results)
    assert "Riemannian Geometry (Q60133667): scientific article published in Nature [scholarly graph]" in text
    assert "Riemannian geometry (Q761383): branch of differential geometry\n" in text
    assert "VIAF ID (P214) [external-id: an identifier string: compare with a plain literal]" in text
    assert "[url: an IRI: compare with STR()]" in text


def test_entries_show_preferred_values_and_what_wdt_returns():
    entry = Entry("Q42", "Douglas Adams", claims=[
        Claim("P551", "residence", Value("Santa Barbara", "Q159288"), rank="preferred"),
        Claim("P551", "residence", Value("London", "Q84")),
        Claim("P551", "residence", Value("Islington", "Q1136437")),
        Claim("P31", "instance of", Value("human", "Q5"), rank="preferred"),
    ])
    text = format_entry(entry)
    assert '"Santa Barbara (Q159288) [preferred]"' in text and '"London (Q84)"' in text
    assert text.endswith("(wdt: returns only the [preferred] values of P551; p:/ps: return them all)")


def test_query_results_drop_the_service_language_tag_only():
    rows = [{"l": {"type": "literal", "value": "Berlin", "xml:lang": "en"}},
            {"l": {"type": "literal", "value": "Berlín", "xml:lang": "es"}}]
    text = format_query_result(QueryResult("ok", ["l"], rows))
    assert "Berlin\n" in text and "Berlín@es" in text and "@en" not in text
