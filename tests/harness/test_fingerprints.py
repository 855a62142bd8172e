"""Runs known by what decided their results, not by names: resuming and comparing refuse unlike runs and say
what differs.  Real runs of the harness against the stand-in model and a small company graph in a local store."""

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from agent.graph import load_graph
from agent.kb.local import LocalKB
from scripts.evaluate import main as evaluate_main
from scripts.report import main as report_main
from tests.support.llm_server import ToolCallReply

PV, PRODI = "http://ld.company.org/prod-vocab/", "http://ld.company.org/prod-instances/"
COMPANY = f"""@prefix pv: <{PV}> .
@prefix prodi: <{PRODI}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
prodi:dept-1 a pv:Department ; rdfs:label "Marketing" .
prodi:dept-2 a pv:Department ; rdfs:label "Sales" .
prodi:empl-Karen.Brant%40company.org a pv:Employee ; rdfs:label "Karen Brant" ; pv:memberOf prodi:dept-1 .
prodi:empl-Ann.Lee%40company.org a pv:Employee ; rdfs:label "Ann Lee" ; pv:memberOf prodi:dept-2 .
"""
DEPARTMENT = ("SELECT ?d WHERE { <http://ld.company.org/prod-instances/empl-Karen.Brant%40company.org> "
              "<http://ld.company.org/prod-vocab/memberOf> ?d }")
DEPARTMENTS = "SELECT ?d WHERE { ?d a <http://ld.company.org/prod-vocab/Department> }"
EMPLOYEES = "SELECT ?e WHERE { ?e a <http://ld.company.org/prod-vocab/Employee> }"


def question_file(path: Path, questions: dict[str, str]) -> Path:
    """A TEXT2SPARQL questions YAML (as CK25's) with *questions* (text: query), ids from 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("dataset:\n  id: https://example.org/company/\nquestions:\n" + "".join(
        f"  - id: {number}\n    question:\n      en: {json.dumps(text)}\n"
        f"    query:\n      sparql: {json.dumps(query)}\n"
        for number, (text, query) in enumerate(questions.items(), 1)), encoding="utf-8")
    return path


FIRST = {"In which department is Ms. Brant?": DEPARTMENT, "Which departments are there?": DEPARTMENTS}
OTHER = {"Who are the employees?": EMPLOYEES, "Which departments are there?": DEPARTMENTS}


def company_store(directory: Path, turtle: str = COMPANY, profile=None) -> Path:
    """A local store of the small company graph under the CK25 profile (or *profile*)."""
    source = directory.parent / f"{directory.name}.ttl"
    source.write_text(turtle, encoding="utf-8")
    kb = LocalKB(directory, graph=profile or load_graph("ck25"))
    kb.load([source], progress=False)
    kb.close()
    return directory


def answering(queries: dict[str, str]):
    """A stand-in model that runs each question's own query, then stops."""
    def reply(body):
        asked = next(message["content"] for message in body["messages"] if message["role"] == "user")
        question = asked.removeprefix("Question: ").split("\n", 1)[0]
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("execute_sparql", {"thought": "Ask.", "sparql": queries[question]})
        return ToolCallReply("stop", {"explanation": "Found.", "language": "en"})

    return reply


@pytest.fixture
def model(llm_server):
    return llm_server(answering({**FIRST, **OTHER}))


def run(questions: Path, store: Path, out: Path, model, *extra: str) -> int:
    return evaluate_main(["--questions", str(questions), "--kb", str(store), "--out", str(out), "--base-url",
                          model.base_url, "--model", "scripted", "--workers", "1", "--quiet", *extra])


def test_two_question_files_of_one_name_are_neither_resumed_nor_compared_as_one(tmp_path, model, capsys):
    store = company_store(tmp_path / "store")
    first = question_file(tmp_path / "a" / "questions.yml", FIRST)
    other = question_file(tmp_path / "b" / "questions.yml", OTHER)
    assert run(first, store, tmp_path / "first", model) == 0
    assert run(other, store, tmp_path / "other", model) == 0
    capsys.readouterr()

    assert report_main(["--compare", str(tmp_path / "first"), str(tmp_path / "other")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "measured different things: they differ in questions (text or gold)" in error
    assert "1 paired questions with other text or gold query (e.g. questions file 1: 'In which department" in error

    assert report_main(["--compare", str(tmp_path / "first"), str(tmp_path / "other"), "--allow-different"]) == 0
    output = capsys.readouterr().out.splitlines()
    assert output[0].startswith("warning: the runs measured different things: they differ in questions (text or")
    assert output[1].startswith("2 questions in both runs")

    asked = len(model.requests)
    assert run(other, store, tmp_path / "first", model) == 2  # resuming the first run with the other file
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds a run made with other questions (text or gold); use a new" in error
    assert len(model.requests) == asked


def test_a_store_that_lost_triples_is_another_graph(tmp_path, model, capsys):
    questions = question_file(tmp_path / "questions.yml", FIRST)
    full = company_store(tmp_path / "full")
    without = company_store(tmp_path / "without", "\n".join(line.replace("; pv:memberOf", ". #")
                                                           for line in COMPANY.splitlines()))
    assert run(questions, full, tmp_path / "on-full", model) == 0
    assert run(questions, without, tmp_path / "on-without", model) == 0
    capsys.readouterr()
    assert report_main(["--compare", str(tmp_path / "on-full"), str(tmp_path / "on-without")]) == 2
    assert "they differ in graph content (fingerprint " in capsys.readouterr().err

    # The same store, changed in place, is not the graph a run began on.
    kb = LocalKB(full)
    member = ox.NamedNode(PV + "memberOf")
    for quad in list(kb.store.quads_for_pattern(None, member, None)):
        kb.store.remove(quad)
    kb.settle()
    kb.close()
    assert run(questions, full, tmp_path / "on-full", model) == 2
    assert "holds a run made with other graph content; use a new --out directory" in capsys.readouterr().err

    # Two stores loaded from the same file hold the same graph (blank nodes aside): they compare.
    again = company_store(tmp_path / "again")
    assert run(questions, again, tmp_path / "on-again", model) == 0
    full_print, without_print, again_print = (json.loads((tmp_path / name / "run.json").read_text())["fingerprint"]
                                              for name in ("on-full", "on-without", "on-again"))
    assert full_print == again_print and without_print["graph"] != again_print["graph"]


def test_a_new_prompt_rule_in_the_profile_refuses_the_resume(tmp_path, model, capsys):
    profile = load_graph("ck25")
    store = company_store(tmp_path / "museum", profile=profile)
    questions = question_file(tmp_path / "questions.yml", FIRST)
    out = tmp_path / "run"
    assert run(questions, store, out, model, "--limit", "1") == 0
    kept = (store / "graph.toml").read_text(encoding="utf-8")
    (store / "graph.toml").write_text(kept.replace('rules = [\n', 'rules = [\n  "Always count the rooms.",\n'),
                                      encoding="utf-8")
    asked = len(model.requests)
    capsys.readouterr()
    assert run(questions, store, out, model) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "holds a run made with other graph profile, prompts as rendered for the graph; use a new" in error
    assert len(model.requests) == asked  # no model request carried the new line
    ruled = tmp_path / "ruled"
    assert run(questions, store, ruled, model, "--limit", "1") == 0  # in a new directory: a run of its own
    assert "Always count the rooms." in model.requests[-1]["messages"][0]["content"]
    (store / "graph.toml").write_text(kept, encoding="utf-8")
    assert run(questions, store, out, model) == 0  # the same profile again: resumed
    capsys.readouterr()
    assert report_main(["--compare", str(out), str(ruled)]) == 0  # what a comparison is for, said above it
    assert capsys.readouterr().out.splitlines()[0] == (
        "the runs differ in what this comparison measures: graph profile, prompts as rendered for the graph")
    info = json.loads((out / "run.json").read_text())
    assert sorted(info["fingerprint"]) == ["examples", "graph", "model", "profile", "prompts", "questions"]
    assert info["fingerprint"]["examples"] == "none"


def test_a_wikidata_example_store_shows_nothing_on_another_graph_and_says_so_once(tmp_path, model, capsys):
    from agent.examples import ExampleStore, SolvedExample

    examples = tmp_path / "examples.sqlite"
    store = ExampleStore(examples)
    store.add([SolvedExample(f"forum {number}", f"In which department is {name}?",
                             f"SELECT ?d WHERE {{ wd:Q{number} wdt:P108 ?d }}", "forum")
               for number, name in enumerate(("Mr. Smith", "Ms. Jones", "Dr. Brant"), 1)])
    store.close()
    out = tmp_path / "run"
    assert run(question_file(tmp_path / "questions.yml", FIRST), company_store(tmp_path / "store"), out, model,
               "--examples", str(examples)) == 0
    error = capsys.readouterr().err
    assert error.count("no examples for the graph 'ck25' (its 3 are for other graphs): none is shown") == 1
    assert not any("Similar solved requests" in json.dumps(request["messages"]) or "wdt:P108" in
                   json.dumps(request["messages"]) for request in model.requests)
    assert len(model.requests) == 4


def test_the_wikidata_baseline_is_refused_on_another_graph_in_one_line(tmp_path, model, capsys):
    out = tmp_path / "run"
    assert run(question_file(tmp_path / "questions.yml", FIRST), company_store(tmp_path / "store"), out, model,
               "--baseline") == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "error: --baseline writes Wikidata Query Service queries; " in error
    assert "holds the graph 'ck25': run the agent" in error and model.requests == []
