"""A whole small evaluation run, offline: the stand-in model and Wikidata, interrupted and resumed."""

import json

from harness.datasets import load_dataset
from scripts.evaluate import main as evaluate_main
from scripts.report import main as report_main
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.llm_server import ErrorReply, TextReply, ToolCallReply
from tests.support.wikidata_server import select

ADVISOR = [{"advisor": {"type": "uri", "value": "http://www.wikidata.org/entity/Q124500"}}]
QUESTIONS = [
    {"id": "1", "question": "Who advised Euler?", "sparql": EULER_ADVISORS_QUERY},
    {"id": "2", "question": "Who else advised Euler?", "sparql": EULER_ADVISORS_QUERY},
    {"id": "3", "question": "Nothing here", "sparql": "SELECT ?x WHERE { wd:Q1 wdt:P1 ?x }"},
]


def write_dataset(tmp_path):
    data = tmp_path / "data"
    (data / "qald7").mkdir(parents=True)
    (data / "qald7" / "test.json").write_text(json.dumps(QUESTIONS))
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


def test_a_run_is_interrupted_then_resumed_without_rerunning_finished_questions(
        tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = write_dataset(tmp_path)
    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    wikidata.add(*euler_entities())
    out = tmp_path / "run"
    broken = llm_server(agent_script(fail_after=2))  # one question, then the model goes away
    environment(monkeypatch, broken, wikidata)
    status = evaluate_main(["--dataset", "qald7", "--data", str(data), "--out", str(out), "--workers", "1",
                            "--quiet"])
    assert status == 1
    first = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [record["id"] for record in first] == ["1"]
    gold = [json.loads(line) for line in (out / "gold.jsonl").read_text().splitlines()]
    assert {record["id"] for record in gold} == {"1", "2", "3"} and all(r["retrieved_at"] for r in gold)

    healthy = llm_server(agent_script())
    environment(monkeypatch, healthy, wikidata)
    status = evaluate_main(["--dataset", "qald7", "--data", str(data), "--out", str(out), "--workers", "2",
                            "--quiet"])
    assert status == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(record["id"] for record in records) == ["1", "2"]  # 3 was dropped: empty gold result
    assert len(healthy.requests) == 2  # only question 2 was run again: two model calls
    assert all(record["f1"] == 1.0 and record["em"] for record in records)
    assert records[0]["gold_answer"] == ADVISOR and records[0]["stop_reason"] == "stop"
    assert records[0]["actions"] == {"execute_sparql": 1, "stop": 1}
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 and traces[0]["trace"]["final_sparql"] == EULER_ADVISORS_QUERY
    assert "1 questions dropped" in capsys.readouterr().err

    # Replay: scores again from what is stored, with no model and no network.
    environment(monkeypatch, broken, wikidata)
    wikidata.close()
    assert evaluate_main(["--replay", str(out)]) == 0
    assert "re-scored 2 questions: F1 100.0, EM 100.0" in capsys.readouterr().out

    assert report_main([str(out)]) == 0
    report = capsys.readouterr().out
    assert "qald7 test" in report and "100.0" in report and "62.2/74.6" in report
    assert (out / "f1_vs_actions.png").stat().st_size > 1000


def test_the_baseline_writes_one_query_in_one_call(tmp_path, monkeypatch, llm_server, wikidata_server):
    data = write_dataset(tmp_path)
    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    llm = llm_server(lambda body: TextReply(f"```sparql\n{EULER_ADVISORS_QUERY}\n```"))
    environment(monkeypatch, llm, wikidata)
    out = tmp_path / "baseline"
    assert evaluate_main(["--dataset", "qald7", "--data", str(data), "--out", str(out), "--baseline",
                          "--limit", "1", "--quiet"]) == 0
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert record["predicted_sparql"] == EULER_ADVISORS_QUERY and record["f1"] == 1.0
    assert record["usage"]["llm_calls"] == 1 and "tools" not in llm.requests[0]


def test_a_directory_cannot_mix_two_runs(tmp_path, monkeypatch, llm_server, wikidata_server, capsys):
    data = write_dataset(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(json.dumps({"dataset": "spinach", "split": "dev", "baseline": False}))
    environment(monkeypatch, llm_server([]), wikidata_server())
    assert evaluate_main(["--dataset", "qald7", "--data", str(data), "--out", str(tmp_path / "run")]) == 2
    assert "another dataset" in capsys.readouterr().err


def test_loading_examples_keeps_the_file_order(tmp_path):
    assert [e.id for e in load_dataset("qald7", None, write_dataset(tmp_path))] == ["1", "2", "3"]
