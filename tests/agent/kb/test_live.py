"""The live backend, through the real requests client, against a stand-in speaking Wikidata's formats."""

import time

import pytest

from agent.kb import open_kb
from agent.kb.base import KBUnavailable
from agent.kb.cache import ResponseCache
from agent.kb.http import HttpClient, deadline
from agent.kb.live import LiveWikidata, WikidataConfig, format_time
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from agent.observations import format_query_result
from agent.kb.base import Value
from tests.support.wikidata_server import (
    SparqlReply, ask, cut_by_timeout, entity, item_snak, malformed, select, server_error, statement, timed_out,
)


@pytest.fixture
def wikidata(wikidata_server):
    server = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    server.add(*euler_entities())
    return server


def live(server, **options) -> LiveWikidata:
    config = WikidataConfig(api_url=server.api_url, sparql_url=server.sparql_url, contact="ops@example.org",
                            **options)
    return LiveWikidata(config, http=HttpClient(contact=config.contact, timeout=config.timeout, backoff=0.05,
                                                cache=None))


def test_search_finds_items_and_properties_with_datatypes(wikidata):
    results = live(wikidata).search("doctoral advisor")
    assert [hit.id for hit in results.properties] == ["P184"]
    assert results.properties[0].datatype == "wikibase-item"
    euler = live(wikidata).search("Euler")
    assert [hit.id for hit in euler.items] == ["Q7604", "Q7605"]
    assert euler.items[0].description.startswith("Swiss mathematician")


def test_every_request_names_the_tool_and_the_operator(wikidata):
    live(wikidata).search("Euler")
    assert all("spinach-bot/" in request["user_agent"] and "ops@example.org" in request["user_agent"]
               for request in wikidata.requests)


def test_entry_lists_edges_with_labels_and_qualifiers_without_external_ids(wikidata):
    entry = live(wikidata).get_entry("Q7604")
    edges = {(claim.property_id, claim.property_label, claim.value.text, claim.value.id) for claim in entry.claims}
    assert ("P184", "doctoral advisor", "Johann Bernoulli", "Q124500") in edges
    assert ("P569", "date of birth", "1707-04-15", None) in edges
    assert not any(claim.property_id == "P214" for claim in entry.claims)
    educated = next(claim for claim in entry.claims if claim.property_id == "P69")
    assert [(q.property_label, q.value.text) for q in educated.qualifiers] == [("end time", "1726")]


def test_missing_entity_and_property_are_none(wikidata):
    assert live(wikidata).get_entry("Q999999") is None
    assert live(wikidata).property_examples("P999999") is None


def test_describe_names_ids_in_one_lookup_and_leaves_missing_ones_out(wikidata):
    hits = live(wikidata).describe(["Q7605", "P184", "Q999999"])
    assert [(hit.id, hit.label, hit.description, hit.datatype) for hit in hits] == [
        ("Q7605", "Euler (crater)", "lunar crater", None),
        ("P184", "doctoral advisor", "person who supervised the doctorate or PhD thesis of the subject",
         "wikibase-item")]
    [lookup] = [request["params"] for request in wikidata.requests]
    assert lookup["action"] == "wbgetentities" and lookup["ids"] == "Q7605|P184|Q999999"


def test_describe_names_ids_in_the_language_asked_never_in_anothers_put_in_its_place(wikidata):
    population = entity("P1082", "population", datatype="quantity")
    population["labels"]["de"] = {"language": "de", "value": "Einwohnerzahl"}
    wikidata.add(population)
    hits = live(wikidata).describe(["P1082", "P184"], language="de")
    assert [(hit.id, hit.label) for hit in hits] == [("P1082", "Einwohnerzahl"), ("P184", "P184")]
    assert wikidata.requests[-1]["params"]["languages"] == "de|mul"
    assert [hit.label for hit in live(wikidata).describe(["P1082"])] == ["population"]


def test_property_examples_come_from_p1855(wikidata):
    [example] = live(wikidata).property_examples("P184")
    assert (example.subject.id, example.value.id) == ("Q7604", "Q124500")


MULTI_LINE_QUERY = "SELECT ?x WHERE {\n  ?x wdt:P31 wd:Q5 .\n  FILTER(?x = ?y)\n}"


@pytest.mark.parametrize("reply, status", [
    (select(["advisor"], [{"advisor": "Q124500"}]), "ok"),
    (select(["advisor"], []), "empty"),
    (ask(True), "ok"),
    (timed_out(), "timeout"),
])
def test_query_service_answers_become_signals(wikidata_server, reply, status):
    server = wikidata_server(sparql=lambda query: reply)
    assert live(server).execute("SELECT * WHERE { ?s ?p ?o }").status == status


def test_a_syntax_error_keeps_its_whole_message_and_no_stack_trace(wikidata_server):
    server = wikidata_server(sparql=lambda query: malformed('Encountered " "}" "} "" at line 4, column 1.'))
    result = live(server).execute(MULTI_LINE_QUERY)
    assert result.status == "syntax_error"
    assert result.message.startswith('Encountered " "}" "} "" at line 4, column 1.\nWas expecting one of:')
    assert '"(" ...' in result.message and "<PNAME_LN> ..." in result.message
    assert "FutureTask" not in result.message and "queryStr" not in result.message
    observation = format_query_result(result)
    assert observation.startswith("Syntax error: Encountered") and "Was expecting one of:" in observation


def test_other_server_errors_show_the_exception_not_the_echo_of_the_query(wikidata_server):
    server = wikidata_server(sparql=lambda query: server_error(
        "java.lang.IllegalArgumentException: Unknown function: geof:nonsense"))
    result = live(server).execute(MULTI_LINE_QUERY)
    assert result.status == "error"
    assert result.message == "HTTP 500: java.lang.IllegalArgumentException: Unknown function: geof:nonsense"


def test_a_response_cut_by_a_timeout_is_a_timeout_with_its_complete_rows_and_is_never_cached(wikidata_server,
                                                                                           tmp_path):
    rows = [{"x": f"Q{i}"} for i in range(1, 40)]
    server = wikidata_server(sparql=lambda query: cut_by_timeout(["x"], rows, cut_at=1500))
    config = WikidataConfig(api_url=server.api_url, sparql_url=server.sparql_url)
    kb = LiveWikidata(config, cache=ResponseCache(tmp_path / "cache.sqlite"))
    result = kb.execute(MULTI_LINE_QUERY)
    assert result.status == "timeout" and result.truncated
    assert 0 < len(result.bindings) < len(rows)
    assert result.bindings[0] == {"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q1"}}
    assert "incomplete" in format_query_result(result) and "Q1" in format_query_result(result)
    kb.execute(MULTI_LINE_QUERY)
    assert sum(request["path"] == "/sparql" for request in server.requests) == 2


def test_rows_that_bind_nothing_are_an_empty_result(wikidata_server):
    server = wikidata_server(sparql=lambda query: SparqlReply(body={"head": {"vars": ["max"]},
                                                                    "results": {"bindings": [{}]}}))
    result = live(server).execute("SELECT (MAX(?v) AS ?max) WHERE { wd:Q1 wdt:P1082 ?v }")
    assert result.status == "empty"
    assert format_query_result(result) == "The query returned an empty result."


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_failing_query_service_is_a_signal_after_its_retries(wikidata_server, status):
    server = wikidata_server(sparql=lambda query: SparqlReply(status, "<html>Bad gateway</html>",
                                                              {"Retry-After": "0"}))
    result = live(server).execute(MULTI_LINE_QUERY)
    assert result.status == "error" and f"HTTP {status}" in result.message and "lighter query" in result.message
    assert sum(request["path"] == "/sparql" for request in server.requests) == 1 + 4  # the default retries


def test_ask_gives_a_boolean(wikidata_server):
    server = wikidata_server(sparql=lambda query: ask(False))
    assert live(server).execute("ASK { wd:Q1 wdt:P31 wd:Q5 }").answer is False


def test_rate_limit_waits_as_long_as_retry_after_says(wikidata_server):
    server = wikidata_server(sparql=lambda query: select(["x"], [{"x": "Q1"}]),
                             interruptions=[SparqlReply(429, "slow down", {"Retry-After": "1"})])
    started = time.monotonic()
    result = live(server).execute("SELECT ?x WHERE { ?x ?p ?o }")
    assert result.status == "ok"
    assert time.monotonic() - started >= 1.0
    assert len(server.requests) == 2


def test_a_wait_the_service_asks_for_that_would_outlast_the_runs_time_is_not_waited(wikidata_server):
    """A run with three seconds left is not put to sleep for the thirty a busy service asks for: the 429 is its
    answer at once, and the service is not asked again.  With time enough the wait is honoured (above)."""
    server = wikidata_server(sparql=lambda query: select(["x"], [{"x": "Q1"}]),
                             interruptions=[SparqlReply(429, "slow down", {"Retry-After": "30"})])
    with deadline(time.monotonic() + 3):
        with pytest.raises(KBUnavailable, match=r"HTTP 429 \(too many requests\) after 1 try"):
            live(server).execute("SELECT ?x WHERE { ?x ?p ?o }")
    assert len(server.requests) == 1


def test_a_client_timeout_is_the_timeout_signal(wikidata_server):
    def slow(query):
        time.sleep(2)
        return select(["x"], [])

    server = wikidata_server(sparql=slow)
    result = live(server).execute("SELECT ?x WHERE { ?x ?p ?o }", timeout=0.5)
    assert result.status == "timeout"


def test_a_response_over_the_size_limit_keeps_its_complete_rows(wikidata_server):
    rows = [{"x": f"Q{i}"} for i in range(1, 2000)]
    server = wikidata_server(sparql=lambda query: select(["x"], rows))
    result = live(server, max_response_bytes=20_000).execute("SELECT ?x WHERE { ?x ?p ?o }")
    assert result.truncated and result.status == "ok"
    assert 0 < len(result.bindings) < len(rows)
    assert result.bindings == [{"x": {"type": "uri", "value": f"http://www.wikidata.org/entity/Q{i}"}}
                               for i in range(1, len(result.bindings) + 1)]
    assert "size limit" in result.message


def test_a_response_over_the_size_limit_with_brackets_in_its_variable_names_keeps_its_rows(wikidata_server):
    rows = [{"x]": f"Q{i}", "y": f"Q{i}"} for i in range(1, 2000)]
    server = wikidata_server(sparql=lambda query: select(["x]", "y"], rows))
    result = live(server, max_response_bytes=20_000).execute("SELECT ?x WHERE { ?x ?p ?o }")
    assert result.truncated and result.status == "ok" and result.variables == ["x]", "y"]
    assert 0 < len(result.bindings) < len(rows)


def test_the_cache_answers_repeats_and_offline_mode_never_touches_the_network(wikidata, tmp_path):
    config = WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url)
    kb = open_kb(cache_path=tmp_path / "cache.sqlite", config=config)
    first = kb.execute(EULER_ADVISORS_QUERY)
    kb.search("Euler")
    sent = len(wikidata.requests)
    assert kb.execute(EULER_ADVISORS_QUERY) == first
    assert len(wikidata.requests) == sent

    offline = open_kb(cache_path=tmp_path / "cache.sqlite", offline=True, config=config)
    assert offline.execute(EULER_ADVISORS_QUERY) == first
    assert [hit.id for hit in offline.search("Euler").items] == ["Q7604", "Q7605"]
    with pytest.raises(KBUnavailable, match="offline"):
        offline.execute("SELECT ?other WHERE { ?other ?p ?o }")
    assert len(wikidata.requests) == sent


def test_cache_expiry_refetches(wikidata, tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", max_age=0.0)
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url), cache=cache)
    kb.execute(EULER_ADVISORS_QUERY)
    time.sleep(0.01)
    kb.execute(EULER_ADVISORS_QUERY)
    assert sum(request["path"] == "/sparql" for request in wikidata.requests) == 2


def test_offline_needs_a_cache():
    with pytest.raises(ValueError, match="cache"):
        open_kb(offline=True)


def test_unreachable_service_is_kb_unavailable():
    kb = LiveWikidata(WikidataConfig(api_url="http://127.0.0.1:9/w/api.php", sparql_url="http://127.0.0.1:9/sparql"),
                      http=HttpClient(max_retries=1, backoff=0.01))
    with pytest.raises(KBUnavailable):
        kb.search("Euler")


@pytest.mark.parametrize("time_value, precision, text", [
    ("+1707-04-15T00:00:00Z", 11, "1707-04-15"),
    ("+1707-04-00T00:00:00Z", 10, "1707-04"),
    ("+1707-00-00T00:00:00Z", 9, "1707"),
    ("+1700-00-00T00:00:00Z", 8, "1700s"),
    ("+1701-00-00T00:00:00Z", 7, "18th century"),
    ("-0500-00-00T00:00:00Z", 9, "-0500"),
])
def test_times_read_at_their_precision(time_value, precision, text):
    assert format_time({"time": time_value, "precision": precision}) == text


def test_labels_fall_back_to_mul_so_items_do_not_show_as_bare_ids(wikidata_server):
    server = wikidata_server()
    person = entity("Q2", "placeholder", claims={"P31": [statement(item_snak("P31", "Q5"))]})
    person["labels"] = {"mul": {"language": "mul", "value": "Ada Example"}}
    human = entity("Q5", "human")
    human["labels"] = {"mul": {"language": "mul", "value": "human"}}
    server.add(person, human, entity("P31", "instance of", datatype="wikibase-item"))
    entry = live(server).get_entry("Q2")
    assert entry.label == "Ada Example" and entry.claims[0].value == Value("human", "Q5")
    asked = [request["params"] for request in server.requests if request["params"].get("action") == "wbgetentities"]
    assert all(params["languages"] == "en|mul" and params["languagefallback"] == "1" for params in asked)
