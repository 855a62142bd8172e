"""Whole small evaluation runs, offline: the stand-in model and Wikidata, interrupted, killed and resumed."""

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace

import pytest

from agent.kb.http import HttpClient
from agent.kb.live import LiveWikidata, WikidataConfig
from agent.llm import ChatModel, LLMConfig
from harness.datasets import load_dataset
from harness.evaluation import baseline_answerer, evaluate, with_gold_answers
from scripts.evaluate import main as evaluate_main
from scripts.report import main as report_main
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.llm_server import ErrorReply, TextReply, ToolCallReply, vllm_context_error
from tests.support.paths import ROOT
from tests.support.wikidata_server import SparqlReply, ask, select, timed_out

ADVISOR = [{"advisor": {"type": "uri", "value": "http://www.wikidata.org/entity/Q124500"}}]
EMPTY_QUERY = "SELECT ?x WHERE { wd:Q1 wdt:P1 ?x }"
QUESTIONS = [
    {"id": "1", "question": "Who advised Euler?", "sparql": EULER_ADVISORS_QUERY},
    {"id": "2", "question": "Who else advised Euler?", "sparql": EULER_ADVISORS_QUERY},
    {"id": "3", "question": "Nothing here", "sparql": EMPTY_QUERY},
]


def write_dataset(tmp_path, questions=QUESTIONS):
    data = tmp_path / "data"
    (data / "qald7").mkdir(parents=True, exist_ok=True)
    (data / "qald7" / "test.json").write_text(json.dumps(questions))
    return data


def agent_script(fail_after=None):
    calls = {"n": 0}

    def reply(body):
        calls["n"] += 1
        if fail_after is not None and calls["n"] > fail_after:
            return ErrorReply(400, "the model went away")
        steps = sum(message["role"] == "tool" for message in body["messages"])
        if steps == 0:
            return ToolCallReply("execute_sparql", {"thought": "run", "sparql": EULER_ADVISORS_QUERY})
        return ToolCallReply("stop", {"thought": "done"})

    return reply


def environment(monkeypatch, llm, wikidata):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("WIKIDATA_API_URL", wikidata.api_url)
    monkeypatch.setenv("WIKIDATA_SPARQL_URL", wikidata.sparql_url)
    monkeypatch.delenv("SPINACH_MODEL", raising=False)


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def euler_wikidata(wikidata_server):
    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    wikidata.add(*euler_entities())
    return wikidata


def run(data, out, *extra):
    return evaluate_main(["--dataset", "qald7", "--data", str(data), "--out", str(out), "--quiet", *extra])


def test_a_run_is_interrupted_then_resumed_without_rerunning_finished_questions(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = write_dataset(tmp_path)
    wikidata = euler_wikidata(wikidata_server)
    out = tmp_path / "run"
    broken = llm_server(agent_script(fail_after=2))  # one question, then the model goes away
    environment(monkeypatch, broken, wikidata)
    assert run(data, out, "--workers", "1") == 1
    assert [record["id"] for record in lines(out / "results.jsonl")] == ["1"]
    gold = lines(out / "gold.jsonl")
    assert {record["id"] for record in gold} == {"1", "2", "3"} and all(r["retrieved_at"] for r in gold)
    [failure] = lines(out / "failures.jsonl")
    assert failure["id"] == "2" and failure["kind"] == "llm_error"

    healthy = llm_server(agent_script())
    environment(monkeypatch, healthy, wikidata)
    assert run(data, out, "--workers", "2") == 0
    records = lines(out / "results.jsonl")
    assert sorted(record["id"] for record in records) == ["1", "2"]  # 3 was dropped: empty gold result
    assert len(healthy.requests) == 2  # only question 2 was run again: two model calls
    assert all(record["f1"] == 1.0 and record["em"] for record in records)
    assert records[0]["gold_answer"] == ADVISOR and records[0]["stop_reason"] == "stop"
    assert records[0]["actions"] == {"execute_sparql": 1, "stop": 1}
    assert records[0]["qald"]["f1"] == 1.0 and records[0]["qald"]["gold"] == 1
    traces = lines(out / "traces.jsonl")
    assert len(traces) == 2 and traces[0]["trace"]["final_sparql"] == EULER_ADVISORS_QUERY
    assert "1 questions dropped" in capsys.readouterr().err
    info = json.loads((out / "run.json").read_text())
    assert [part["summary"]["scored"] for part in info["parts"]] == [1, 2]
    assert info["parts"][1]["summary"]["gold"]["empty"] == ["3"]

    # Re-scoring: from what is stored, with no model and no network.
    wikidata.close()
    assert evaluate_main(["--rescore", str(out)]) == 0
    assert "re-scored 2 questions (numbers compared lexically): F1 100.0, EM 100.0" in capsys.readouterr().out


def test_rolled_back_actions_are_not_counted(tmp_path, monkeypatch, llm_server, wikidata_server):
    script = [ToolCallReply("search_wikidata", {"thought": "look", "query": "Euler"}),
              ToolCallReply("search_wikidata", {"thought": "look again", "query": "Euler"}),  # rolls back
              ToolCallReply("execute_sparql", {"thought": "run", "sparql": EULER_ADVISORS_QUERY}),
              ToolCallReply("stop", {"thought": "done"})]

    def reply(body):
        return script.pop(0) if len(script) > 1 else script[0]

    environment(monkeypatch, llm_server(reply), euler_wikidata(wikidata_server))
    out = tmp_path / "run"
    assert run(write_dataset(tmp_path), out, "--limit", "1") == 0
    [record] = lines(out / "results.jsonl")
    [trace] = lines(out / "traces.jsonl")
    all_steps = [step["action"] for step in trace["trace"]["steps"]]
    assert all_steps.count("search_wikidata") == 2 and record["rolled_back"] >= 1
    kept = [step["action"] for step in trace["trace"]["steps"] if not step["rolled_back"]]
    assert record["actions"] == {action: kept.count(action) for action in set(kept)}
    assert sum(record["actions"].values()) == len(all_steps) - record["rolled_back"]


def test_rescoring_a_missing_directory_is_a_clear_error(tmp_path, capsys):
    assert evaluate_main(["--rescore", str(tmp_path / "nowhere")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:  # the old name is gone: re-scoring is not the upstream replay
        evaluate_main(["--replay", str(tmp_path)])
    assert exit.value.code == 2 and "unrecognized arguments: --replay" in capsys.readouterr().err


def test_gold_failures_are_reported_by_kind_and_retried_on_resume(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    questions = [*QUESTIONS[:1], {"id": "2", "question": "Slow?", "sparql": "SELECT ?slow WHERE { ?a ?b ?slow }"},
                 {"id": "3", "question": "Broken?", "sparql": "SELECT ?broken WHERE { ?a ?b ?broken }"}]
    data = write_dataset(tmp_path, questions)
    healthy = {"on": False}

    def answer(query):
        if "?slow" in query and not healthy["on"]:
            return timed_out()
        if "?broken" in query and not healthy["on"]:
            return SparqlReply(500, "java.lang.IllegalStateException: the server fell over")
        if query == EULER_ADVISORS_QUERY or "?a ?b" in query:
            return select(["advisor"], [{"advisor": "Q124500"}])
        return select([], [])

    wikidata = wikidata_server(sparql=answer)
    environment(monkeypatch, llm_server(agent_script()), wikidata)
    out = tmp_path / "run"
    assert run(data, out, "--workers", "1") == 1
    err = capsys.readouterr().err
    assert "1 questions without gold yet: gold query timeout (retried next run): 2" in err
    assert "1 questions without gold yet: gold query error (retried next run): 3" in err
    assert "Traceback" not in err
    assert [record["id"] for record in lines(out / "results.jsonl")] == ["1"]
    summary = json.loads((out / "run.json").read_text())["parts"][0]["summary"]
    assert summary["gold"]["failed"] == {"error": ["3"], "timeout": ["2"]}

    healthy["on"] = True
    assert run(data, out, "--workers", "1") == 0
    assert sorted(record["id"] for record in lines(out / "results.jsonl")) == ["1", "2", "3"]


def no_retry_kb(wikidata):
    """The live backend on the stand-in, giving up at the first refusal (the default retries take seconds)."""
    return LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                        http=HttpClient(max_retries=0))


TOO_MANY = SparqlReply(429, "Too Many Requests", {"Retry-After": "1"})


def test_an_unreachable_gold_service_is_recorded_and_asked_again(tmp_path, wikidata_server):
    down = {"on": True}
    wikidata = wikidata_server(sparql=lambda query: TOO_MANY if down["on"] else select(["x"], [{"x": "Q1"}]))
    examples = load_dataset("qald7", None, write_dataset(tmp_path))
    kept, summary = with_gold_answers(examples, no_retry_kb(wikidata), tmp_path / "run", progress=False)
    assert kept == [] and summary.failed == {"unreachable": ["1", "2", "3"]}
    assert all("429" in line["message"] for line in lines(tmp_path / "run" / "gold.jsonl"))
    down["on"] = False
    kept, summary = with_gold_answers(examples, no_retry_kb(wikidata), tmp_path / "run", progress=False)
    assert [example.id for example in kept] == ["1", "2", "3"] and summary.failed == {}


def test_a_gold_answer_cut_at_the_size_limit_excludes_its_question(tmp_path, wikidata_server):
    rows = [{"x": f"Q{n}"} for n in range(1, 400)]
    wikidata = wikidata_server(sparql=lambda query: select(["x"], rows))
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url,
                                     max_response_bytes=2000))
    examples = load_dataset("qald7", None, write_dataset(tmp_path))
    kept, summary = with_gold_answers(examples, kb, tmp_path / "run", progress=False)
    assert kept == [] and summary.cut == ["1", "2", "3"] and summary.failed == {}
    # A cut answer is final: not fetched again on resume.
    asked = len(wikidata.requests)
    with_gold_answers(examples, kb, tmp_path / "run", progress=False)
    assert len(wikidata.requests) == asked


def test_a_false_ask_is_a_gold_answer_not_an_empty_one(tmp_path, wikidata_server):
    wikidata = wikidata_server(sparql=lambda query: ask(False) if query.startswith("ASK") else select([], []))
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url))
    questions = [{"id": "1", "question": "Is it?", "sparql": "ASK { wd:Q1 wdt:P31 wd:Q5 }"},
                 {"id": "2", "question": "Which?", "sparql": EMPTY_QUERY}]
    examples = load_dataset("qald7", None, write_dataset(tmp_path, questions))
    kept, summary = with_gold_answers(examples, kb, tmp_path / "run", progress=False)
    assert [(example.id, example.gold_answer) for example in kept] == [("1", False)] and summary.empty == ["2"]


KILL_AFTER_TRACE = """
import os, signal, sys
real_fsync = os.fsync

def fsync(fd):
    real_fsync(fd)
    if os.readlink(f"/proc/self/fd/{fd}").endswith("traces.jsonl"):
        os.kill(os.getpid(), signal.SIGKILL)  # after the trace, before the result

os.fsync = fsync
from scripts.evaluate import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_kill_between_trace_and_result_leaves_one_trace_per_question(
        tmp_path, monkeypatch, llm_server, wikidata_server):
    data = write_dataset(tmp_path)
    environment(monkeypatch, llm_server(agent_script()), euler_wikidata(wikidata_server))
    out = tmp_path / "run"
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_TRACE, "--dataset", "qald7", "--data", str(data),
                             "--out", str(out), "--workers", "1", "--quiet"], cwd=ROOT, env=os.environ.copy(),
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(lines(out / "traces.jsonl")) == 1 and lines(out / "results.jsonl") == []

    assert run(data, out, "--workers", "1") == 0
    results, traces = lines(out / "results.jsonl"), lines(out / "traces.jsonl")
    assert sorted(record["id"] for record in results) == ["1", "2"]
    assert sorted(trace["id"] for trace in traces) == ["1", "2"]


def test_a_line_cut_by_a_crash_does_not_swallow_the_next_one(tmp_path, monkeypatch, llm_server, wikidata_server):
    data = write_dataset(tmp_path)
    environment(monkeypatch, llm_server(agent_script()), euler_wikidata(wikidata_server))
    out = tmp_path / "run"
    assert run(data, out, "--limit", "1") == 0
    with (out / "results.jsonl").open("a") as results:
        results.write('{"id": "2", "question": "cut sho')  # what a crash mid-write leaves
    assert run(data, out) == 0
    assert sorted(record["id"] for record in lines(out / "results.jsonl")) == ["1", "2"]


def test_resuming_with_other_settings_is_refused_unless_forced(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = write_dataset(tmp_path)
    environment(monkeypatch, llm_server(agent_script()), euler_wikidata(wikidata_server))
    out = tmp_path / "run"
    assert run(data, out, "--limit", "1", "--model", "model-a") == 0
    capsys.readouterr()
    assert run(data, out, "--model", "model-b") == 2
    assert ("holds a run made with another model 'model-a' (now 'model-b'); use a new --out directory, "
            "or --force") in capsys.readouterr().err
    assert run(data, out, "--model", "model-a", "--gold", "live") == 2
    assert "another gold 'file' (now 'live')" in capsys.readouterr().err
    assert len(lines(out / "results.jsonl")) == 1

    assert run(data, out, "--model", "model-b", "--force") == 0
    info = json.loads((out / "run.json").read_text())
    assert [part["settings"]["model"] for part in info["parts"]] == ["model-a", "model-b"]
    assert all(len(part["settings"]["prompt"]) == 12 for part in info["parts"])
    assert {record["id"]: record["part"] for record in lines(out / "results.jsonl")} == {"1": 0, "2": 1}


def test_a_forced_part_on_another_dataset_does_not_take_its_ids_as_done(
        tmp_path, monkeypatch, llm_server, wikidata_server):
    data = write_dataset(tmp_path)
    (data / "qald9plus").mkdir()
    (data / "qald9plus" / "test.json").write_text(json.dumps(QUESTIONS[:1]))  # same id "1", another dataset
    environment(monkeypatch, llm_server(agent_script()), euler_wikidata(wikidata_server))
    out = tmp_path / "run"
    assert run(data, out, "--limit", "1") == 0
    assert evaluate_main(["--dataset", "qald9plus", "--data", str(data), "--out", str(out), "--quiet",
                          "--force"]) == 0
    keys = sorted((record["source"], record["id"]) for record in lines(out / "results.jsonl"))
    assert keys == [("qald7", "1"), ("qald9plus", "1")]
    assert sorted((trace["source"], trace["id"]) for trace in lines(out / "traces.jsonl")) == keys
    assert sorted((gold["source"], gold["id"]) for gold in lines(out / "gold.jsonl")) == keys


QALD10 = {"dataset": {"id": "qald-10"}, "questions": [
    {"id": 0, "question": [{"language": "en", "string": "Who advised Euler?"},
                           {"language": "zh", "string": "欧拉的导师是谁？"}],
     "query": {"sparql": EULER_ADVISORS_QUERY},
     "answers": [{"head": {"vars": ["advisor"]}, "results": {"bindings": ADVISOR}}]},
    {"id": 1, "question": [{"language": "en", "string": "How many advisors?"}],
     "query": {"sparql": "SELECT (COUNT(*) AS ?n) WHERE { wd:Q7604 wdt:P184 ?a }"},
     "answers": [{"head": {"vars": ["n"]}, "results": {"bindings": [
         {"n": {"type": "literal", "value": "+1", "datatype": "http://www.w3.org/2001/XMLSchema#decimal"}}]}}]},
]}


def test_qald10_skips_questions_without_text_in_the_language_and_counts_them(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = tmp_path / "data"
    (data / "qald10").mkdir(parents=True)
    (data / "qald10" / "qald_10.json").write_text(json.dumps(QALD10, ensure_ascii=False))
    wikidata = euler_wikidata(wikidata_server)
    environment(monkeypatch, llm_server(agent_script()), wikidata)
    out = tmp_path / "zh"
    assert evaluate_main(["--dataset", "qald10", "--data", str(data), "--language", "zh", "--out", str(out),
                          "--quiet"]) == 0
    assert "1 questions skipped: no 'zh' text (1)" in capsys.readouterr().err
    [record] = lines(out / "results.jsonl")
    assert record["question"] == "欧拉的导师是谁？" and record["f1"] == 1.0
    summary = json.loads((out / "run.json").read_text())["parts"][0]["summary"]
    assert summary["in_split"] == 2 and summary["skipped_language"] == ["1"]
    assert not [r for r in wikidata.requests if r["params"].get("query") == EULER_ADVISORS_QUERY][1:]


def test_qald10_gold_from_the_live_service_and_numbers_by_value(
        tmp_path, monkeypatch, llm_server, wikidata_server):
    data = tmp_path / "data"
    (data / "qald10").mkdir(parents=True)
    (data / "qald10" / "qald_10.json").write_text(json.dumps(QALD10, ensure_ascii=False))
    count_query = QALD10["questions"][1]["query"]["sparql"]
    number = {"type": "literal", "value": "1", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}
    wikidata = wikidata_server(sparql={
        EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}, {"advisor": "Q1"}]),
        count_query: select(["n"], [{"n": number}])})

    def script(body):
        steps = sum(message["role"] == "tool" for message in body["messages"])
        wanted = count_query if "How many" in json.dumps(body["messages"]) else EULER_ADVISORS_QUERY
        if steps == 0:
            return ToolCallReply("execute_sparql", {"thought": "run", "sparql": wanted})
        return ToolCallReply("stop", {"thought": "done"})

    environment(monkeypatch, llm_server(script), wikidata)
    file_run, live_run = tmp_path / "file", tmp_path / "live"
    common = ["--dataset", "qald10", "--data", str(data), "--quiet", "--workers", "1"]
    assert evaluate_main([*common, "--out", str(file_run)]) == 0
    assert evaluate_main([*common, "--out", str(live_run), "--gold", "live"]) == 0
    by_file = {r["id"]: r for r in lines(file_run / "results.jsonl")}
    by_live = {r["id"]: r for r in lines(live_run / "results.jsonl")}
    # The file's "+1"^^xsd:decimal equals the service's "1"^^xsd:integer by value (the default for file answers).
    assert by_file["1"]["f1"] == 1.0 and json.loads((file_run / "run.json").read_text())["numbers"] == "value"
    # The file has one advisor; the live service two (and the agent's query returns both).
    assert by_file["0"]["f1"] < 1.0 and by_live["0"]["f1"] == 1.0
    assert len(by_live["0"]["gold_answer"]) == 2
    assert json.loads((live_run / "run.json").read_text())["numbers"] == "lexical"
    assert {line["id"] for line in lines(live_run / "gold.jsonl")} == {"0", "1"}


def test_the_baseline_writes_one_query_in_one_call(tmp_path, monkeypatch, llm_server, wikidata_server):
    data = write_dataset(tmp_path)
    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    llm = llm_server(lambda body: TextReply(f"```sparql\n{EULER_ADVISORS_QUERY}\n```"))
    environment(monkeypatch, llm, wikidata)
    out = tmp_path / "baseline"
    assert run(data, out, "--baseline", "--limit", "1") == 0
    [record] = lines(out / "results.jsonl")
    assert record["predicted_sparql"] == EULER_ADVISORS_QUERY and record["f1"] == 1.0
    assert record["usage"]["llm_calls"] == 1 and "tools" not in llm.requests[0]


def test_the_baseline_records_an_unreachable_knowledge_base_and_retries_it(
        tmp_path, monkeypatch, llm_server, wikidata_server):
    down = {"on": True}
    wikidata = wikidata_server(sparql=lambda query: TOO_MANY if down["on"] else select(["advisor"],
                                                                                          [{"advisor": "Q124500"}]))
    environment(monkeypatch, llm_server(lambda body: TextReply(EULER_ADVISORS_QUERY)), wikidata)
    llm = ChatModel.from_config(LLMConfig.from_env(os.environ))
    [example] = [replace(example, gold_answer=ADVISOR)
                 for example in load_dataset("qald7", None, write_dataset(tmp_path))[:1]]
    out = tmp_path / "baseline"
    records, failures = evaluate([example], baseline_answerer(llm, no_retry_kb(wikidata)), out, progress=False)
    assert records == [] and failures == {"kb_error": 1}
    [failure] = lines(out / "failures.jsonl")
    assert failure["kind"] == "kb_error" and "429" in failure["message"]
    down["on"] = False
    records, failures = evaluate([example], baseline_answerer(llm, no_retry_kb(wikidata)), out, progress=False)
    assert [record["f1"] for record in records] == [1.0] and not failures


def test_loading_examples_keeps_the_file_order(tmp_path):
    assert [e.id for e in load_dataset("qald7", None, write_dataset(tmp_path))] == ["1", "2", "3"]


def test_the_report_of_a_run_names_its_settings(tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = write_dataset(tmp_path)
    environment(monkeypatch, llm_server(agent_script()), euler_wikidata(wikidata_server))
    out = tmp_path / "run"
    assert run(data, out) == 0
    capsys.readouterr()
    assert report_main([str(out)]) == 0
    report = capsys.readouterr().out
    assert "qald7 test agent (scripted-stand-in)" in report and "100.0" in report
    assert "62.2/74.6" not in report and "the dataset file holds 3 questions, the published split 50" in report
    assert "dropped 1 (gold empty)" in report
    assert (out / "f1_vs_actions.png").stat().st_size > 1000 and (out / "f1_vs_actions.svg").exists()


def qald10_file(tmp_path):
    """Four QALD-10-format questions with their file answers (one of them the 2022 "0")."""
    def item(key, text, sparql, answer):
        return {"id": key, "question": [{"language": "en", "string": text}], "query": {"sparql": sparql},
                "answers": [answer]}

    advisors = {"head": {"vars": ["advisor"]}, "results": {"bindings": ADVISOR}}
    zero = {"head": {"vars": ["c"]}, "results": {"bindings": [{"c": {
        "type": "literal", "datatype": "http://www.w3.org/2001/XMLSchema#integer", "value": "0"}}]}}
    data = tmp_path / "data"
    (data / "qald10").mkdir(parents=True)
    (data / "qald10" / "qald_10.json").write_text(json.dumps({"questions": [
        item("1", "Who advised Euler?", EULER_ADVISORS_QUERY, advisors),
        item("2", "What did Euler like to eat?", EULER_ADVISORS_QUERY, advisors),
        item("3", "Who advised Euler's advisor?", EULER_ADVISORS_QUERY, advisors),
        item("4", "How many craters are named after Euler's cat?", "SELECT (COUNT(*) AS ?c) {}", zero)]}))
    return data


def researcher_script(body):
    """A stand-in model: answers question 1, says question 2 cannot be answered, outgrows its context on 3."""
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    steps = sum(message["role"] == "tool" for message in body["messages"])
    if "tools" not in body:
        return TextReply(json.dumps({"sparql": "", "explanation": "", "language": "en"}))
    if "like to eat" in question:
        return ToolCallReply("stop", {"explanation": "Wikidata records no favourite food.", "language": "en",
                                      "cannot_answer": True})
    if "advised Euler's" in question and steps:
        return vllm_context_error(8192, 9100)
    if steps == 0:
        return ToolCallReply("execute_sparql", {"thought": "ask", "sparql": EULER_ADVISORS_QUERY})
    return ToolCallReply("stop", {"explanation": "P184.", "language": "en"})


def researchers_services(monkeypatch, llm_server, wikidata_server):
    """The model as :func:`researcher_script` plays it and Wikidata knowing Euler's advisor, the environment naming
    both; the model's stand-in."""
    llm = llm_server(researcher_script)
    wikidata = wikidata_server(sparql=lambda query: select(["advisor"], [{"advisor": "Q124500"}])
                               if "wd:Q7604 wdt:P184" in query else select([], []))
    wikidata.add(*euler_entities())
    environment(monkeypatch, llm, wikidata)
    return llm


def test_a_researchers_run_records_what_it_was_and_why_each_answer_scored_so(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    llm = researchers_services(monkeypatch, llm_server, wikidata_server)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url.replace("http://", "http://reader:s3cret@"))
    out = tmp_path / "run"
    status = evaluate_main(["--dataset", "qald10", "--data", str(qald10_file(tmp_path)), "--out", str(out),
                            "--quiet", "--repeats", "2", "--llm-timeout", "30"])
    assert status == 0
    err = capsys.readouterr().err
    assert ("warning: scored against QALD-10's file answers, written in 2022: 1 questions have the gold answer "
            '"0", and Wikidata has changed since') in err and "--gold live" in err
    info = json.loads((out / "run.json").read_text())
    settings, summary = info["parts"][0]["settings"], info["parts"][0]["summary"]
    assert settings["endpoint"] == llm.base_url and "s3cret" not in (out / "run.json").read_text()
    assert settings["model"] == "scripted-stand-in" and summary["models_reported"] == {"scripted-stand-in": 8}
    assert settings["sampling"]["temperature"] == 1.0 and settings["sampling"]["llm_timeout"] == 30.0
    assert len(settings["code"]["commit"]) == 40 and settings["repeats"] == 2
    assert settings["kb_source"]["sparql"].endswith("/sparql") and "2022" in settings["gold_source"]
    assert summary["protocols"] == {"tools": 8} and lines(out / "failures.jsonl") == []
    results = {(r["id"], r["repeat"]): r for r in lines(out / "results.jsonl")}
    assert sorted(results) == [(key, repeat) for key in "1234" for repeat in (1, 2)]
    assert {key: results[(key, 1)]["diagnosis"] for key in "1234"} == {
        "1": "correct", "2": "cannot answer", "3": "correct", "4": "wrong rows"}
    assert results[("3", 1)]["stop_reason"] == "context_length"    # scored, with its best effort, not retried
    assert results[("1", 2)]["protocol"] == "tools" and results[("1", 1)]["model"] == "scripted-stand-in"

    assert report_main([str(out)]) == 0
    report = capsys.readouterr().out
    print(report)
    assert "qald10 test agent (scripted-stand-in)" in report and "63.1/69.5" not in report
    assert "no paper figure: not the whole split" not in report
    assert "the dataset file holds 4 questions, the published split 394" in report
    assert "gold from the dataset file (QALD-10's answers of 2022); the paper ran the gold queries" in report
    assert "run: 2 repeats; F1 mean 50.0, SD 0.0, 50.0-50.0 (50.0, 50.0)" in report
    assert "with upstream's post-processing (upstream's code" in report and "run: F1 50.0, EM 50.0" in report
    assert "run cannot answer: 2, 2#2" in report and "run wrong rows: 4, 4#2" in report


@pytest.mark.parametrize("option, message", [
    (["--choices"], "error: --choices is KQA Pro's multiple-choice setting; other datasets have no choices\n"),
    (["--language", "de"], "error: --language is for QALD-10 and QALD-JSON or TEXT2SPARQL question files; "
                           "qald7's questions are in English only\n"),
])
def test_an_option_the_dataset_cannot_use_is_refused_in_one_line(tmp_path, capsys, option, message):
    out = tmp_path / "run"
    assert run(write_dataset(tmp_path), out, *option) == 2
    assert capsys.readouterr().err == message and not out.exists()


def test_a_split_of_a_question_file_is_refused_in_one_line(tmp_path, capsys):
    questions = tmp_path / "mine.json"
    questions.write_text(json.dumps(QUESTIONS))
    assert evaluate_main(["--questions", str(questions), "--split", "dev", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == ("error: --split names a split of a --dataset; a --questions file is one set "
                                       "of questions\n")


def test_a_researchers_qald_json_file_gets_gerbils_figures_and_its_own_name(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    environment(monkeypatch, llm_server(agent_script()), euler_wikidata(wikidata_server))
    question = {"id": "1", "question": [{"language": "en", "string": "Who advised Euler?"}],
                "query": {"sparql": EULER_ADVISORS_QUERY},
                "answers": [{"head": {"vars": ["advisor"]}, "results": {"bindings": ADVISOR}}]}
    declared, plain = tmp_path / "declared.json", tmp_path / "mine.json"
    declared.write_text(json.dumps({"dataset": {"id": "euler-advisors"}, "questions": [question]}))
    plain.write_text(json.dumps({"questions": [question]}))
    for path in (declared, plain):
        assert evaluate_main(["--questions", str(path), "--out", str(tmp_path / path.stem), "--quiet"]) == 0
    capsys.readouterr()
    assert report_main([str(tmp_path / "declared")]) == 0
    report = capsys.readouterr().out
    assert "QALD: GERBIL QA's figures" in report
    gerbil = next(line for line in report.splitlines()[report.splitlines().index(next(
        line for line in report.splitlines() if line.startswith("QALD: GERBIL"))):] if line.startswith("declared"))
    assert gerbil.split()[1:] == ["100.00"] * 7
    for name, dataset_id in (("declared", "euler-advisors"), ("mine", "mine")):
        export = tmp_path / f"{name}-qald.json"
        assert report_main(["--qald-json", str(export), str(tmp_path / name)]) == 0
        assert json.loads(export.read_text())["dataset"]["id"] == dataset_id


#: What a summary says about the answers (timings and the directory's own name aside: two runs differ there).
SAME_SUMMARY = ("questions", "em", "em_interval", "f1", "f1_interval", "actions", "steps_histogram", "figures",
                "left_out", "repeat_f1", "repeat_em", "postprocessed", "diagnoses", "diagnosed", "models",
                "protocols", "stop_reasons", "paper_gaps", "gold_caveat")


def test_a_notebook_runs_the_evaluation_in_one_call_and_gets_the_command_lines_summary(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    import harness
    from harness.reporting import summarize
    from harness.run import RunRefused

    llm = researchers_services(monkeypatch, llm_server, wikidata_server)
    data = qald10_file(tmp_path)
    assert evaluate_main(["--dataset", "qald10", "--data", str(data), "--out", str(tmp_path / "cli"),
                          "--quiet", "--repeats", "2"]) == 0
    said: list[str] = []
    done = harness.evaluate(dataset="qald10", data=data, out=tmp_path / "notebook", repeats=2, progress=False,
                            llm=LLMConfig(base_url=llm.base_url, api_key="test", model=None), say=said.append)
    assert done.complete and done.line == "8 answers (4 questions x 2 repeats): F1 50.0, EM 50.0"
    assert done.line in capsys.readouterr().out
    assert any(line.startswith("warning: scored against QALD-10's file answers") for line in said)
    cli = summarize(tmp_path / "cli")
    for name in SAME_SUMMARY:
        assert getattr(done.summary, name) == getattr(cli, name), name
    assert done.summary.gerbil.questions == 8 and done.summary.qald.f1_qald == cli.qald.f1_qald
    assert set(done.summary.figures) == {"qald", "gerbil", "text2sparql"}
    with pytest.raises(RunRefused, match="^--choices is KQA Pro's multiple-choice setting"):
        harness.evaluate(dataset="qald10", data=data, out=tmp_path / "refused", choices=True)
    assert not (tmp_path / "refused").exists()
