"""``python -m agent`` end to end, against the stand-in servers."""

import json
import subprocess
import sys

from agent.__main__ import build_parser, main
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.llm_server import EndlessReply, SlowReply, TextReply, ToolCallReply
from tests.support.processes import PATIENCE, wait_for
from tests.support.wikidata_server import select


def test_every_option_is_documented():
    help_text = build_parser().format_help()
    for action in build_parser()._actions:
        assert action.help, f"{action.dest} has no help text"
        for option in action.option_strings:
            assert option in help_text


def servers(llm_server, wikidata_server):
    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    wikidata.add(*euler_entities())
    llm = llm_server([ToolCallReply("search_wikidata", {"thought": "find him", "query": "Leonhard Euler"}),
                      ToolCallReply("execute_sparql", {"thought": "ask", "sparql": EULER_ADVISORS_QUERY}),
                      ToolCallReply("stop", {"thought": "done"})])
    return llm, wikidata


def test_the_trace_is_printed_as_it_goes_then_the_query_and_its_rows(llm_server, wikidata_server, tmp_path,
                                                                      monkeypatch, capsys):
    llm, wikidata = servers(llm_server, wikidata_server)
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    key = tmp_path / "key"
    key.write_text("sk-secret-value\n")
    status = main(["Who were the doctoral advisors of Leonhard Euler?", "--base-url", llm.base_url,
                   "--api-key-file", str(key), "--cache", str(tmp_path / "cache.sqlite")])
    out = capsys.readouterr().out
    assert status == 0
    assert "[1] Thought: find him" in out and "Leonhard Euler (Q7604)" in out
    assert "Final SPARQL:\n" + EULER_ADVISORS_QUERY in out and "Q124500" in out
    assert "sk-secret-value" not in out


def test_json_output_is_the_whole_run(llm_server, wikidata_server, tmp_path):
    llm, wikidata = servers(llm_server, wikidata_server)
    env = {"PATH": "", "OPENAI_BASE_URL": llm.base_url, "WIKIDATA_API_URL": wikidata.api_url,
           "WIKIDATA_SPARQL_URL": wikidata.sparql_url}
    done = subprocess.run([sys.executable, "-m", "agent", "--json", "Who advised Euler?"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["final_sparql"] == EULER_ADVISORS_QUERY and run["stop_reason"] == "stop"


def test_no_model_configured_is_a_clear_error_not_a_traceback():
    done = subprocess.run([sys.executable, "-m", "agent", "Who?"], env={"PATH": ""}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "no language model is configured" in done.stderr and "Traceback" not in done.stderr


def test_a_kqapro_store_brings_its_graph_to_the_agent(llm_server, kqapro_store, capsys):
    store = kqapro_store
    query = 'SELECT DISTINCT ?pv WHERE { ?e <pred:name> "Will Smith" . ?e <height> ?pv . }'
    llm = llm_server([ToolCallReply("get_wikidata_entry", {"thought": "look", "qid": "<Q40096>"}),
                      ToolCallReply("execute_sparql", {"thought": "ask", "sparql": query}),
                      ToolCallReply("stop", {"thought": "done"})])
    assert main(["How tall is Will Smith?", "--kb", str(store), "--base-url", llm.base_url]) == 0
    out = capsys.readouterr().out
    assert "Will Smith (Q40096)" in out and '"height (<height>)": "1.88 metre"' in out
    assert "Final SPARQL:\n" + query in out
    assert "over the KQA Pro knowledge base" in llm.requests[0]["messages"][0]["content"]


def test_the_model_timeout_is_an_option(llm_server, wikidata_server, monkeypatch, capsys):
    llm = llm_server(lambda body: SlowReply(5, ToolCallReply("stop", {"explanation": "", "language": "en"})))
    _, wikidata = servers(llm_server, wikidata_server)
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    assert main(["Who?", "--base-url", llm.base_url, "--llm-timeout", "0.5", "--max-total-actions", "1"]) == 1
    assert "Ended: llm_error (no reply within 0.5 s (the model's timeout); not asked again" in capsys.readouterr().out
    assert len(llm.requests) == 1   # gave up after half a second, not a minute, and not sent again


def test_a_switch_to_the_text_protocol_is_said_in_one_line(llm_server, wikidata_server, monkeypatch, capsys):
    _, wikidata = servers(llm_server, wikidata_server)
    llm = llm_server([TextReply("Thought: ask\nAction: execute_sparql(" + EULER_ADVISORS_QUERY + ")"),
                      TextReply("Thought: done\nAction: stop()")], supports_tools=False)
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    assert main(["Who advised Euler?", "--base-url", llm.base_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Protocol: switched to the plain-text protocol for this question (the endpoint refused tool " \
           "definitions)" in lines


def test_a_run_without_a_switch_says_nothing_of_protocols(llm_server, wikidata_server, monkeypatch, capsys):
    llm, wikidata = servers(llm_server, wikidata_server)
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    assert main(["Who advised Euler?", "--base-url", llm.base_url]) == 0
    assert "Protocol:" not in capsys.readouterr().out


def test_streamed_replies_and_the_runs_time_are_options(llm_server, wikidata_server, monkeypatch, capsys):
    endless = EndlessReply()
    llm = llm_server([endless], supports_tools=False)  # the text protocol's requests are streamed
    _, wikidata = servers(llm_server, wikidata_server)
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    assert main(["Who?", "--base-url", llm.base_url, "--llm-stream", "--max-seconds", "1"]) == 1
    assert "Ended: time_limit (the run's 1 s are spent (no reply within " in capsys.readouterr().out
    assert llm.requests[-1]["stream"] is True
    wait_for(endless.noticed.is_set, PATIENCE, "the model to notice the closed request and stop")
