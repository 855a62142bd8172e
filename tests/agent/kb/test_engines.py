"""The final query on every engine, each engine's data date, and the fallback when the main engine is busy or slow.

Two real Oxigraph servers hold one small Wikidata-shaped graph at two dates, one behind the query service's
front, one behind QLever's (:mod:`tests.support.two_engines`); the knowledge base's own HTTP clients ask them.
"""

from __future__ import annotations

import json
import urllib.parse
from datetime import timedelta
from pathlib import Path

import pytest

from agent import Agent, AgentConfig, AgentResult
from agent.kb.base import CrossCheck, EngineOutcome, KBUnavailable, QueryResult, QueryStatus
from agent.kb.engines import QLEVER, WDQS, EngineConfigError, attempt_of, index_date, parse_engines
from agent.kb.http import HttpClient
from agent.kb.live import LiveWikidata, WikidataConfig
from agent.llm import ChatModel, LLMConfig
from agent.query_service import query_service_link
from harness.datasets import Example
from harness.evaluation import result_record
from tests.support.fault_proxy import Fault, Hold, Reply
from tests.support.llm_server import ToolCallReply
from tests.support.two_engines import (DIFFERENT_QUERY, EQUAL_QUERY, HUMANS_NOW, HUMANS_THEN, MWAPI_QUERY,
                                       TwoEngines)
from tests.support.wikidata_server import entity

pytestmark = pytest.mark.xdist_group("two_engines")

#: Enough 429s to outlast the client's tries (1 + 4 retries).
EVERY_TRY = 5
NO_API = "http://127.0.0.1:9/w/api.php"


def knowledge_base(pair: TwoEngines, **config) -> LiveWikidata:
    config = {"engines": pair.engines, "check_timeout": 30.0, "api_url": NO_API, **config}
    return LiveWikidata(WikidataConfig(**config),
                        http=HttpClient(backoff=0.01))


def human(fragment: str):
    """Matches the queries asking for humans (never the date look-ups)."""
    return lambda path, params: "wd:Q5" in params.get("query", "") and fragment in params.get("query", "")


def too_many() -> Reply:
    return Reply(429, "Too Many Requests", {"Retry-After": "0", "Content-Type": "text/plain"})


def by_key(check: CrossCheck) -> dict:
    return {run.engine.key: run for run in check.runs}


# -- the cross-check --------------------------------------------------------------------------------

def test_both_engines_give_the_same_rows_and_each_a_link_with_the_query_as_it_needs_it(two_engines):
    check = knowledge_base(two_engines).cross_check(EQUAL_QUERY)
    runs = by_key(check)
    assert [run.engine.key for run in check.runs] == ["wdqs", "qlever"]
    assert check.agree and runs["wdqs"].rows == runs["qlever"].rows == 1
    assert runs["wdqs"].try_link == query_service_link(EQUAL_QUERY)  # the query as posted, encoded as the bot does
    qlever_query = urllib.parse.unquote(runs["qlever"].try_link.removeprefix(QLEVER.try_url))
    assert runs["qlever"].try_link.startswith("https://qlever.dev/wikidata/?query=PREFIX%20")
    assert "PREFIX wd: <http://www.wikidata.org/entity/>" in qlever_query and "SERVICE" not in qlever_query
    assert all(char.isalnum() or char in "%:/.?=" for char in runs["qlever"].try_link)
    # the link's query is the one QLever answered
    assert " ".join(qlever_query.split()) in [" ".join(query.split()) for query in two_engines.qlever.queries]


def test_rows_only_one_engine_has_are_counted_for_each(two_engines):
    check = knowledge_base(two_engines).cross_check(DIFFERENT_QUERY)
    runs = by_key(check)
    assert not check.agree
    assert runs["wdqs"].rows == len(HUMANS_NOW) and runs["qlever"].rows == len(HUMANS_THEN)
    assert check.only_in(runs["wdqs"]) == 1 and check.only_in(runs["qlever"]) == 1  # Q7251; the merged Q4115189
    assert (("human", "http://www.wikidata.org/entity/Q4115189"),) in runs["qlever"].answer


def test_a_query_qlever_cannot_run_is_still_answered_by_the_query_service_saying_why(two_engines):
    before = len(two_engines.qlever.queries)
    runs = by_key(knowledge_base(two_engines).cross_check(MWAPI_QUERY))
    assert runs["wdqs"].outcome is EngineOutcome.ANSWERED and runs["wdqs"].rows == 1
    assert runs["qlever"].outcome is EngineOutcome.UNSUPPORTED and runs["qlever"].try_link == ""
    assert runs["qlever"].reason == "QLever does not support SERVICE wikibase:mwapi"
    assert not [query for query in two_engines.qlever.queries[before:] if "Adams" in query]  # never sent


def test_qlever_refusing_a_service_is_unsupported_with_its_own_words(two_engines):
    kb = knowledge_base(two_engines, engines=(two_engines.qlever.engine,))
    runs = by_key(kb.cross_check("PREFIX ex: <http://example.org/>\n"
                                 "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }"))
    assert runs["qlever"].outcome is EngineOutcome.UNSUPPORTED
    assert runs["qlever"].reason.startswith("QLever: SERVICE clauses are not supported")


def test_each_engine_says_how_fresh_its_data_is_and_an_old_copy_is_named_stale(two_engines):
    check = knowledge_base(two_engines, stale_after_days=30).cross_check(EQUAL_QUERY)
    runs = by_key(check)
    assert runs["wdqs"].data_date.modified == two_engines.wdqs.date
    assert runs["wdqs"].data_date.source == "schema:dateModified"
    assert runs["qlever"].data_date.modified == two_engines.qlever.date
    assert runs["qlever"].data_date.source == "dump date"
    assert check.stale == ("qlever",)
    assert knowledge_base(two_engines, stale_after_days=60).cross_check(EQUAL_QUERY).stale == ()
    assert knowledge_base(two_engines, stale_after_days=0).cross_check(EQUAL_QUERY).stale == ()  # 0: never stale
    # What the chat page and the reply are told: the days, or none for 0.
    assert [knowledge_base(two_engines, stale_after_days=days).stale_after_days for days in (30, 0)] == [30, None]


def test_qlevers_index_date_stands_in_when_its_data_names_no_date(two_engines):
    nothing = Reply(200, {"head": {"vars": ["date"]}, "results": {"bindings": []}},
                    {"Content-Type": "application/sparql-results+json"})
    two_engines.qlever.proxy.add(Fault("no dump date", lambda path, params: "wikibase:Dump" in params.get("query", ""),
                                   nothing))
    date = knowledge_base(two_engines).dates(two_engines.qlever.engine)
    assert date.source == "index date" and date.modified.date() == two_engines.qlever.date.date()
    assert two_engines.qlever.proxy.fired == ["no dump date"]


def test_a_data_date_is_asked_once_for_a_while(two_engines):
    kb = knowledge_base(two_engines)
    kb.cross_check(EQUAL_QUERY)
    asked = sum("dateModified" in params.get("query", "") for params in two_engines.wdqs.proxy.requests)
    kb.cross_check(DIFFERENT_QUERY)
    assert sum("dateModified" in params.get("query", "") for params in two_engines.wdqs.proxy.requests) == asked


def test_an_engine_that_does_not_answer_in_time_is_a_timeout_and_the_other_still_answers(two_engines):
    hold = two_engines.qlever.proxy.add(Fault("held", human("?human"), Hold()))
    try:
        runs = by_key(knowledge_base(two_engines, check_timeout=2).cross_check(DIFFERENT_QUERY))
    finally:
        hold.action.release.set()
    assert hold.action.arrived.is_set()
    assert runs["qlever"].outcome is EngineOutcome.TIMEOUT and runs["qlever"].reason == \
        "QLever gave no answer within 2 seconds"
    assert runs["qlever"].try_link  # it could run it: a reader may try
    assert runs["wdqs"].outcome is EngineOutcome.ANSWERED


def test_qlevers_429_for_a_query_out_of_time_is_a_timeout_and_a_plain_429_is_busy(two_engines):
    two_engines.qlever.proxy.add(Fault("timed out", human("?human"), Reply(429, {
        "status": "ERROR", "exception": "Cancelled due to timeout. Stage: IndexScan", "query": "…"})))
    runs = by_key(knowledge_base(two_engines).cross_check(DIFFERENT_QUERY))
    assert runs["qlever"].outcome is EngineOutcome.TIMEOUT
    two_engines.qlever.proxy.add(Fault("busy", human("?human"), too_many()))
    runs = by_key(knowledge_base(two_engines).cross_check(DIFFERENT_QUERY))
    assert runs["qlever"].outcome is EngineOutcome.BUSY and runs["qlever"].reason == "QLever was busy (HTTP 429)"
    assert two_engines.qlever.proxy.fired == ["timed out", "busy"]  # one request each: no retries in a cross-check


def test_a_check_round_trips_through_a_run_record(two_engines):
    check = knowledge_base(two_engines, stale_after_days=30).cross_check(DIFFERENT_QUERY)
    again = CrossCheck.from_dict(json.loads(json.dumps(check.to_dict())))
    assert again.stale == check.stale and [run.rows for run in again.runs] == [3, 3]
    assert again.runs[1].data_date == check.runs[1].data_date


# -- the fallback during a run ----------------------------------------------------------------------

@pytest.mark.parametrize("fault, said", [
    (too_many(), "The query service was busy (HTTP 429); QLever answered:"),
    (Reply(503, "Service Unavailable", {"Retry-After": "0", "Content-Type": "text/plain"}),
     "The query service was busy (HTTP 503); QLever answered:"),
    (Reply(503, "<html><body><h1>Wikidata Query Service</h1><p>The service is down for maintenance.</p></body>"
                "</html>", {"Retry-After": "0", "Content-Type": "text/html"}),
     "The query service was down for maintenance; QLever answered:"),
    (Reply(200, "<html><body><p>Wikidata Query Service is under maintenance. Please try again later.</p></body>"
                "</html>", {"Content-Type": "text/html"}),
     "The query service was down for maintenance; QLever answered:"),
])
def test_a_busy_query_service_sends_the_query_to_qlever_in_its_dialect(two_engines, fault, said):
    two_engines.wdqs.proxy.add(Fault("busy", human("?human"), fault, times=EVERY_TRY))
    result = knowledge_base(two_engines).execute(DIFFERENT_QUERY)
    assert result.engine == "qlever" and result.fallback == said
    assert sorted(row["human"]["value"].rsplit("/", 1)[1] for row in result.bindings) == sorted(HUMANS_THEN)
    assert two_engines.qlever.queries[-1].startswith("PREFIX wdt: <http://www.wikidata.org/prop/direct/>")


def test_a_query_service_out_of_time_sends_the_query_to_qlever(two_engines):
    hold = two_engines.wdqs.proxy.add(Fault("held", human("?human"), Hold()))
    try:
        result = knowledge_base(two_engines).execute(DIFFERENT_QUERY, timeout=2)
    finally:
        hold.action.release.set()
    assert result.engine == "qlever"
    assert result.fallback == "The query service gave no answer within 2 seconds; QLever answered:"


def test_when_no_engine_answers_the_main_ones_result_stands_saying_both(two_engines):
    two_engines.wdqs.proxy.add(Fault("wdqs busy", human("?human"), Reply(503, "Service Unavailable", {
        "Retry-After": "0", "Content-Type": "text/plain"}), times=EVERY_TRY))
    two_engines.qlever.proxy.add(Fault("qlever busy", human("?human"), too_many()))
    result = knowledge_base(two_engines).execute(DIFFERENT_QUERY)
    assert result.status == "error" and result.engine == "wdqs"
    assert result.fallback == "The query service was busy (HTTP 503); QLever was busy (HTTP 429)."


def test_one_engine_keeps_the_old_behaviour(two_engines):
    two_engines.wdqs.proxy.add(Fault("busy", human("?human"), too_many(), times=EVERY_TRY))
    kb = knowledge_base(two_engines, engines=(two_engines.wdqs.engine,))
    asked = len(two_engines.qlever.proxy.requests)
    with pytest.raises(KBUnavailable, match="answered HTTP 429 \\(too many requests\\) after 5 tries"):
        kb.execute(DIFFERENT_QUERY)
    assert len(two_engines.qlever.proxy.requests) == asked


def make_agent(llm_server, kb, replies) -> Agent:
    server = llm_server(replies)
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="test", max_retries=0, timeout=30))
    return Agent(llm=llm, kb=kb, config=AgentConfig())


def run_on_busy_query_service(two_engines, llm_server, wikidata_server) -> AgentResult:
    """A run whose one query meets a busy query service: the Action API (for the IDs the query names) is the
    Wikidata stand-in."""
    api = wikidata_server()
    api.add(entity("Q5", "human", "common name of Homo sapiens"), entity("P31", "instance of"))
    two_engines.wdqs.proxy.add(Fault("busy", human("?human"), too_many(), times=EVERY_TRY))
    kb = knowledge_base(two_engines, stale_after_days=30, api_url=api.api_url)
    agent = make_agent(llm_server, kb, [
        ToolCallReply("execute_sparql", {"thought": "List the humans.", "sparql": DIFFERENT_QUERY}),
        ToolCallReply("stop", {"explanation": "The humans in the graph.", "language": "en"}),
    ])
    return agent.run("Which humans are there?")


def test_the_trace_says_which_engine_answered_and_the_result_carries_the_cross_check(two_engines, llm_server,
                                                                                    wikidata_server):
    result = run_on_busy_query_service(two_engines, llm_server, wikidata_server)
    step = result.steps[0]
    assert step.engine == "qlever" and step.query_status == "ok" and step.row_count == len(HUMANS_THEN)
    assert step.observation.startswith("The query service was busy (HTTP 429); QLever answered:\n")
    assert result.final_sparql == DIFFERENT_QUERY and result.final_engine == "qlever"
    runs = by_key(result.cross_check)
    # QLever's answer is the run's own (no second request); the query service, no longer busy, is asked once
    assert runs["qlever"].rows == len(HUMANS_THEN) and runs["wdqs"].rows == len(HUMANS_NOW)
    assert result.cross_check.stale == ("qlever",)
    again = AgentResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.steps[0].engine == "qlever" and again.cross_check.stale == ("qlever",)
    assert [run.outcome for run in again.cross_check.runs] == [EngineOutcome.ANSWERED] * 2


def test_the_evaluation_records_which_engine_answered_each_question(two_engines, llm_server, wikidata_server):
    result = run_on_busy_query_service(two_engines, llm_server, wikidata_server)
    example = Example(id="1", question="Which humans are there?", gold_sparql=DIFFERENT_QUERY,
                      gold_answer=result.answer, source="test", split="dev")
    record = result_record(example, result)
    assert record["engine"] == "qlever"


def test_an_old_record_without_engines_still_loads():
    record = {"question": "q", "final_sparql": None, "answer": None, "variables": [], "stop_reason": "stop",
              "steps": [{"thought": "t", "action": "execute_sparql", "argument": "ASK {}"}],
              "usage": {"llm_calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "cached_tokens": 0,
                        "kb_calls": 1, "seconds": 1.0}}
    result = AgentResult.from_dict(record)
    assert result.steps[0].engine == "" and result.cross_check is None and result.final_engine == ""


# -- configuration ----------------------------------------------------------------------------------

def test_by_default_the_query_service_then_qlever_and_an_own_endpoint_alone():
    assert WikidataConfig().all_engines() == (WDQS, QLEVER)
    assert [engine.key for engine in WikidataConfig(sparql_url="http://127.0.0.1:9/sparql").all_engines()] == \
        ["sparql"]
    assert WikidataConfig.from_env({"WIKIDATA_ENGINES": "wdqs"}).all_engines() == (WDQS,)  # the second turned off


def test_an_operator_names_engines_in_order_and_adds_one():
    config = WikidataConfig.from_env({"WIKIDATA_ENGINES": "qlever=http://127.0.0.1:7001/api, wdqs, "
                                                          "mirror=http://127.0.0.1:7002/sparql sparql11 "
                                                          "http://127.0.0.1:7002/#",
                                      "WIKIDATA_STALE_AFTER_DAYS": "7"})
    qlever, wdqs, mirror = config.all_engines()
    assert (qlever.name, qlever.endpoint, qlever.dialect) == ("QLever", "http://127.0.0.1:7001/api", "qlever")
    assert config.sparql_url == qlever.endpoint and config.dialect == "qlever"  # the first is the main one
    assert wdqs == WDQS and (mirror.key, mirror.dialect, mirror.try_url) == ("mirror", "sparql11",
                                                                             "http://127.0.0.1:7002/#")
    assert config.stale_after == timedelta(days=7)


@pytest.mark.parametrize("value, message", [
    ("wdqs, qlevr", "WIKIDATA_ENGINES: unknown engine 'qlevr': give a known engine (wdqs, qlever), "
                    "or KEY=ENDPOINT [DIALECT [TRY_URL]]"),
    ("wdqs, mirror=http://x/sparql blazegraph", "WIKIDATA_ENGINES: engine 'mirror': dialect must be one of "
                                                "wdqs, qlever, sparql11, not 'blazegraph'"),
    ("wdqs, wdqs", "WIKIDATA_ENGINES: engine wdqs named twice"),
    ("mirror=ftp://x", "WIKIDATA_ENGINES: 'mirror=ftp://x': give a known engine (wdqs, qlever), "
                       "or KEY=ENDPOINT [DIALECT [TRY_URL]]"),
    (" , ", None),
])
def test_a_bad_engine_list_is_one_line_naming_the_setting(value, message):
    with pytest.raises(EngineConfigError) as raised:
        parse_engines(value, "WIKIDATA_ENGINES", ("wdqs", "qlever", "sparql11"))
    text = str(raised.value)
    assert "\n" not in text and text.startswith("WIKIDATA_ENGINES: ")
    if message:
        assert text == message


def test_a_bad_staleness_names_its_variable():
    with pytest.raises(EngineConfigError, match="^WIKIDATA_STALE_AFTER_DAYS: 'soon' is not a number of days"):
        WikidataConfig.from_env({"WIKIDATA_STALE_AFTER_DAYS": "soon"})


def test_an_index_name_without_a_date_gives_none():
    assert index_date(json.dumps({"name-index": "Wikidata"})) is None
    assert index_date("not json") is None
    assert index_date(json.dumps({"name-index": "Wikidata (version 31.01.2026)"})).isoformat() == \
        "2026-01-31T00:00:00+00:00"


# -- the embedded store -------------------------------------------------------------------------------

def test_the_runs_own_result_stands_for_its_engine_as_it_went():
    outcomes = {status: attempt_of(QueryResult(status, message="line one\n  line two")) for status in QueryStatus}
    assert {status: attempt.outcome for status, attempt in outcomes.items()} == {
        QueryStatus.OK: EngineOutcome.ANSWERED, QueryStatus.EMPTY: EngineOutcome.ANSWERED,
        QueryStatus.SYNTAX_ERROR: EngineOutcome.FAILED, QueryStatus.TIMEOUT: EngineOutcome.TIMEOUT,
        QueryStatus.ERROR: EngineOutcome.FAILED}
    # A reader gets the reason on one line where the engine did not answer, and none where it did.
    assert [outcomes[status].reason for status in (QueryStatus.OK, QueryStatus.TIMEOUT)] == ["", "line one line two"]


def test_the_local_store_is_its_own_one_engine_dated_by_its_load(tmp_path: Path):
    from agent.kb.local import LocalKB, load_date

    data = tmp_path / "graph.ttl"
    data.write_text("<http://www.wikidata.org/entity/Q42> <http://www.wikidata.org/prop/direct/P31> "
                    "<http://www.wikidata.org/entity/Q5> .\n")
    kb = LocalKB(tmp_path / "store")
    try:
        kb.load([data], progress=False)
        check = kb.cross_check(DIFFERENT_QUERY)
    finally:
        kb.close()
    (run,) = check.runs
    assert run.engine.key == "local" and run.outcome is EngineOutcome.ANSWERED and run.rows == 1
    assert run.data_date.source == "load manifest" and run.data_date.modified == load_date(tmp_path / "store")
    assert json.loads((tmp_path / "store" / "manifest.json").read_text())["files"] == ["graph.ttl"]


def test_bot_ini_names_the_engines_and_a_bad_one_is_one_line_naming_the_key(tmp_path):
    from bot.config import BotConfig

    (tmp_path / "bot.ini").write_text("[bot]\nengines = qlever=http://127.0.0.1:7001/api, wdqs\n"
                                      "stale_after_days = 9\n")
    config = BotConfig.from_file(tmp_path / "bot.ini").wikidata_config(environ={})
    assert [engine.key for engine in config.all_engines()] == ["qlever", "wdqs"]
    assert config.stale_after == timedelta(days=9)
    assert BotConfig().wikidata_config(environ={"WIKIDATA_ENGINES": "wdqs"}).all_engines() == (WDQS,)
    (tmp_path / "bot.ini").write_text("[bot]\nengines = wdqs, qlevr\n")
    with pytest.raises(ValueError) as raised:
        BotConfig.from_file(tmp_path / "bot.ini")
    assert str(raised.value) == f"{tmp_path / 'bot.ini'}: engines: unknown engine 'qlevr': give a known engine " \
                                "(wdqs, qlever), or KEY=ENDPOINT [DIALECT [TRY_URL]]"


def test_the_command_lines_take_the_engines_and_say_a_bad_one_in_one_line(capsys, monkeypatch):
    from agent.__main__ import main as agent_main
    from serve.__main__ import build_parser, engine_settings

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SPINACH_MODEL", "m")
    assert agent_main(["Who?", "--engines", "wdqs, blazegraph"]) == 2
    assert capsys.readouterr().err == "error: --engines: unknown engine 'blazegraph': give a known engine " \
                                      "(wdqs, qlever), or KEY=ENDPOINT [DIALECT [TRY_URL]]\n"
    assert agent_main(["Who?", "--stale-after-days", "-1"]) == 2
    assert capsys.readouterr().err.startswith("error: --stale-after-days: '-1' is not a number of days")
    environ: dict[str, str] = {}
    engine_settings(build_parser().parse_args(["--engines", "qlever, wdqs", "--stale-after-days", "3"]), environ)
    assert environ == {"WIKIDATA_ENGINES": "qlever, wdqs", "WIKIDATA_STALE_AFTER_DAYS": "3.0"}
    assert [engine.key for engine in WikidataConfig.from_env(environ).all_engines()] == ["qlever", "wdqs"]
    with pytest.raises(EngineConfigError, match="^--engines: engine wdqs named twice$"):
        engine_settings(build_parser().parse_args(["--engines", "wdqs,wdqs"]), {})


def test_the_report_counts_which_engine_answered_the_final_queries(tmp_path, capsys):
    from harness.reporting import summarize
    from scripts.report import main as report_main
    from tests.harness.test_reporting import record, write_run

    records = [{**record("1", 1.0, {"stop": 1}), "engine": "wdqs"}, {**record("2", 1.0, {"stop": 1}),
                                                                    "engine": "qlever"},
               {**record("3", 0.0, {"stop": 1}), "engine": "wdqs"}, record("4", 0.0, {"stop": 1})]
    run = write_run(tmp_path / "run", records)
    assert summarize(run).engines == {"wdqs": 2, "qlever": 1, "(not recorded)": 1}
    report_main([str(run)])
    assert "final queries answered by wdqs 2, qlever 1, (not recorded) 1" in capsys.readouterr().out


def test_the_agents_command_line_says_what_each_engine_found(two_engines, llm_server, wikidata_server, capsys,
                                                              monkeypatch):
    from agent.__main__ import main as agent_main

    api = wikidata_server()
    api.add(entity("Q5", "human"), entity("P31", "instance of"))
    model = llm_server([ToolCallReply("execute_sparql", {"thought": "List them.", "sparql": DIFFERENT_QUERY}),
                        ToolCallReply("stop", {"explanation": "The humans.", "language": "en"})])
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("SPINACH_MODEL", "m")
    monkeypatch.setenv("WIKIDATA_API_URL", api.api_url)
    assert agent_main(["Which humans?", "--engines", two_engines.setting, "--stale-after-days", "30"]) == 0
    out = capsys.readouterr().out
    assert f"On the query service: 3 rows, 1 only here; data of {two_engines.wdqs.date:%Y-%m-%d %H:%M} UTC " \
           "(schema:dateModified)\n    https://query.wikidata.org/#SELECT%20%3Fhuman" in out
    assert f"On QLever: 3 rows, 1 only here; data of {two_engines.qlever.date:%Y-%m-%d %H:%M} UTC (dump date) " \
           "(stale)\n    https://qlever.dev/wikidata/?query=PREFIX" in out
