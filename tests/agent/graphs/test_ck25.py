"""CK25, a real corporate graph nobody here wrote, answered by its profile alone: load, queries, search, entries."""

import json

import pytest
import yaml

from agent.graph import load_graph
from agent.kb.local import LocalKB
from agent.observations import format_entry, format_property_examples, format_search
from scripts import evaluate
from tests.support.llm_server import ToolCallReply

CK25 = load_graph("ck25")
KAREN = "prodi:empl-Karen.Brant%40company.org"


@pytest.fixture(scope="module")
def ck25_dir(shared_dir):
    return shared_dir / "datasets" / "ck25"


@pytest.fixture(scope="module")
def kb(ck25_dir, tmp_path_factory):
    store = LocalKB(tmp_path_factory.mktemp("ck25") / "store", graph=CK25, timeout=60)
    graphs = ck25_dir / "graphs"
    store.load([graphs / "prod-inst.ttl", graphs / "text2sparql.ttl"], progress=False)
    yield store
    store.close()


def test_every_reference_query_runs_as_written_and_answers(kb, ck25_dir):
    questions = yaml.safe_load((ck25_dir / "questions.yml").read_text(encoding="utf-8"))["questions"]
    outcomes = {question["id"]: kb.execute(question["query"]["sparql"]) for question in questions}
    failed = {number: (result.status, result.message) for number, result in outcomes.items()
              if result.status != "ok" and result.boolean is None}
    assert len(outcomes) == 50 and failed == {}
    # Two sum xsd:int casts, which Oxigraph knows only as SPARQL 1.1's xsd:integer.
    assert "xsd:int(" in questions[36]["query"]["sparql"] and outcomes[37].bindings


def test_the_named_graphs_are_kept_and_the_default_graph_is_their_union(kb):
    graphs = kb.execute("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert sorted(row["g"]["value"] for row in graphs.bindings) == [
        "http://ld.company.org/prod-inst/", "https://text2sparql.aksw.org/2025/corporate/"]
    assert kb.execute(f"ASK {{ {KAREN} pv:memberOf prodi:dept-73191 }}").boolean is True


def test_search_finds_instances_classes_and_properties_by_the_graphs_labels(kb):
    assert [hit.id for hit in kb.search("Karen Brant").items] == [KAREN]
    inductor = format_search(kb.search("Inductor")).splitlines()
    assert inductor[:2] == ["Inductor (prodi:prod-cat-Inductor): product category",  # told apart by class
                            "L262-1109442 - Polymer Inductor Rheostat Breaker (prodi:hw-L262-1109442): hardware"]
    employee = format_search(kb.search("employee"))
    assert employee.startswith("Employee (pv:Employee): An employee in my company.")
    assert "has manager (pv:hasManager): The manager of the employee." in format_search(kb.search("manager"))
    assert [hit.id for hit in kb.search("lat").properties] == ["wgs:lat"]  # a second vocabulary, named by its IRI


def test_entries_and_examples_show_ids_as_queries_write_them(kb):
    entry = format_entry(kb.get_entry(KAREN))
    assert entry.startswith(f"Karen Brant ({KAREN}): employee\n")  # described by its class
    assert '"member of (pv:memberOf)": "Engineering (prodi:dept-73191)"' in entry
    assert '"type (rdf:type)": "Employee (pv:Employee)"' in entry
    assert format_entry(kb.get_entry("pv:Employee")).startswith("Employee (pv:Employee): An employee in my company.")
    examples = format_property_examples("pv:memberOf", kb.property_examples("pv:memberOf")).splitlines()
    assert len(examples) == 3 and all(" pv:memberOf " in line and "(prodi:dept-" in line for line in examples)
    assert kb.get_entry("prodi:empl-karen.brant%40company.org") is None  # IRIs are case-sensitive


def scripted_model(questions):
    """A model that, for each CK25 question, searches the first class it names, looks at an example of the first
    property, runs the question's reference query and stops: the whole evaluation path, with no model's skill."""
    by_text = {question["question"]["en"]: question for question in questions}

    def reply(body):
        asked = next(message["content"] for message in body["messages"] if message["role"] == "user")
        question = by_text[asked.removeprefix("Question: ").split("\n", 1)[0]]
        done = sum(message["role"] == "assistant" for message in body["messages"])
        if done == 0:
            return ToolCallReply("search_wikidata", {"thought": "Find the class.",
                                                     "query": (question.get("classes") or [":Employee"])[0][1:]})
        if done == 1:
            return ToolCallReply("get_property_examples", {"thought": "How is it used?",
                                                           "pid": "pv:" + (question.get("properties") or
                                                                           [":name"])[0][1:]})
        if done == 2:
            return ToolCallReply("execute_sparql", {"thought": "Ask.", "sparql": question["query"]["sparql"]})
        return ToolCallReply("stop", {"explanation": "Found.", "language": "en"})

    return reply


def test_a_scripted_run_answers_the_questions_file_end_to_end(kb, ck25_dir, llm_server, tmp_path, capsys):
    questions = yaml.safe_load((ck25_dir / "questions.yml").read_text(encoding="utf-8"))["questions"]
    server = llm_server(scripted_model(questions))
    kb.close()  # the evaluation opens the store itself
    out = tmp_path / "run"
    code = evaluate.main(["--questions", str(ck25_dir / "questions.yml"), "--kb", str(kb.directory), "--out", str(out),
                          "--base-url", server.base_url, "--model", "scripted", "--workers", "2", "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert "50 questions: F1 100.0, EM 100.0" in capsys.readouterr().out
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 50 and {record["source"] for record in records} == {"questions"}
    assert all(record["diagnosis"] == "correct" for record in records)
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    steps = next(trace for trace in traces if trace["id"] == "1")["trace"]["steps"]
    assert [step["action"] for step in steps] == ["search_wikidata", "get_property_examples", "execute_sparql", "stop"]
    assert steps[0]["observation"].startswith("Department (pv:Department): A department in an organization.")
    assert steps[1]["observation"].count(" pv:memberOf ") == 3
