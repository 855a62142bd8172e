"""KQA Pro runs of the harness on the fixture: accuracy, the multiple-choice setting, the report beside the
published figures when comparable, and the test split's export for the leaderboard."""

import json

import pytest

from harness.kqapro import leaderboard_lines, prediction, score_record
from harness.kqapro_report import KqaproSummary, print_kqapro_report
from harness.reporting import ACTIONS, USAGE
from scripts.evaluate import main as evaluate_main
from scripts.report import main as report_main
from tests.support.kqapro import FIXTURES, VAL
from tests.support.llm_server import ToolCallReply

TEST_QUERIES = {  # what the scripted model answers the test questions with
    "Which city is the capital of Italy?":
        'SELECT DISTINCT ?e WHERE { ?x <pred:name> "Italy" ; <capital> ?e }',
    "How tall is Jon Voight's co-star in Ali who played Muhammad Ali?":
        'SELECT DISTINCT ?pv WHERE { ?f <pred:name> "Ali" ; <cast_member> ?e . [ <pred:fact_h> ?f ; <pred:fact_r> '
        '<cast_member> ; <pred:fact_t> ?e ] <character_role> ?q . ?q <pred:value> "Muhammad Ali" . ?e <height> ?pv }',
    "Is the area of Paris, the city with a population of 2145906, greater than 100 square kilometre?":
        'ASK { ?e <pred:name> "Paris" ; <population> ?p ; <area> ?a . ?p <pred:value> "2145906"^^xsd:double . '
        '?a <pred:value> ?v FILTER(?v > 100) }',
    "How many films are there?":
        'SELECT (COUNT(DISTINCT ?e) AS ?n) WHERE { ?e <pred:instance_of> ?c . ?c <pred:name> "film" }',
}
#: One question the scripted model gets wrong: it takes the smaller population.
WRONG = "Which city has the larger population, Washington, D.C. or Rome?"


@pytest.fixture(scope="module")
def store(kqapro_store):
    """KQA Pro's fixture store (:mod:`tests.support.kqapro`): its directory, as a run is given it."""
    return kqapro_store


def scripted(body):
    """Answer with the gold query (or the test one), then stop; the choices of the multiple-choice setting ignored."""
    messages = body["messages"]
    question = messages[1]["content"].split("\n")[0].removeprefix("Question: ").split(" (Answer with one of:")[0]
    if any(message["role"] == "assistant" for message in messages):
        return ToolCallReply("stop", {"thought": "done", "explanation": "Found.", "language": "en"})
    sparql = next((item["sparql"] for item in VAL if item["question"] == question), TEST_QUERIES.get(question))
    if question == WRONG:
        sparql = sparql.replace("DESC(?v)", "?v")
    return ToolCallReply("execute_sparql", {"thought": "the query", "sparql": sparql})


@pytest.fixture
def model(llm_server, monkeypatch):
    server = llm_server(scripted)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    return server


def run(store, out, *options):
    return evaluate_main(["--dataset", "kqapro", "--data", str(FIXTURES), "--kb", str(store), "--out", str(out),
                          "--model", "scripted-model", "--quiet", "--workers", "2", *options])


def test_a_validation_run_scores_accuracy_and_reports_each_question(model, store, tmp_path, capsys):
    assert run(store, tmp_path / "val", "--split", "val") == 0
    assert capsys.readouterr().out.strip() == "30 questions: accuracy 96.67 (open)"
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "val" / "results.jsonl").read_text().splitlines())}
    assert len(records) == 30 and sum(r["correct"] for r in records.values()) == 29
    wrong = records["15"]
    assert (wrong["question_type"], wrong["answer"], wrong["gold_answer"], wrong["correct"]) == (
        "Select Between", "Washington, D.C.", "Rome", False)
    assert records["10"]["answer"] == "643801 square kilometre" and records["9"]["answer"] == "1790"
    assert all(r["engine_answer"] == r["answer"] and r["correct_lenient"] == r["correct"] for r in records.values())
    assert report_main([str(tmp_path / "val")]) == 0
    report = capsys.readouterr().out
    row = next(line for line in report.splitlines() if line.startswith("val "))
    assert row.split()[1:] == ["val", "open", "scripted-model", "30", "96.67", "90.0-100.0", "96.67"]
    assert "Select Between 1/2  50.0" in report and "Query Relation Qualifier 3/3 100.0" in report
    assert "comparison 2/3  66.7" in report and "zero-shot 21/22  95.5" in report
    assert "not set beside the published figures: 30 of the val split's 11,797 questions scored" in report
    assert ("#15 Select Between: gold 'Rome', engine read 'Washington, D.C.' (stop): Which city has the larger "
            "population") in report
    assert evaluate_main(["--rescore", str(tmp_path / "val")]) == 0
    assert "re-scored 30 KQA Pro questions: accuracy 96.67" in capsys.readouterr().out
    assert run(store, tmp_path / "val", "--split", "val", "--choices") == 2  # another setting in the same directory
    assert "setting 'open' (now 'choices')" in capsys.readouterr().err


def test_the_multiple_choice_setting_shows_the_choices_and_counts_the_choice(model, store, tmp_path, capsys):
    assert run(store, tmp_path / "mc", "--split", "val", "--choices", "--limit", "16") == 0
    assert capsys.readouterr().out.strip() == "16 questions: accuracy 93.75 (choices)"
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "mc" / "results.jsonl").read_text().splitlines())}
    assert prediction(records["10"]) == "643801 square kilometre" and prediction(records["15"]) == "Washington, D.C."
    asked = [request["messages"][1]["content"] for request in model.requests]
    assert any("Which city is the capital of France? (Answer with one of: Paris; Berlin; London;" in text
               for text in asked)
    report_main([str(tmp_path / "mc")])
    assert "not set beside the published figures: the figures are open-ended, this run is multiple-choice" in \
        capsys.readouterr().out


def test_the_test_split_is_exported_for_the_leaderboard_in_its_order(model, store, tmp_path, capsys):
    assert run(store, tmp_path / "test", "--split", "test") == 0
    assert "4 questions answered (open); the test split has no public answers" in capsys.readouterr().out
    predictions = tmp_path / "predict.txt"
    assert report_main(["--kqapro-predictions", str(predictions), str(tmp_path / "test")]) == 0
    # The second query ends "?e <height> ?pv }": KQA Pro's engine finds an attribute's key only in a triple
    # written "?e <key> ?pv ." and reads nothing, which its baselines write as None.
    assert predictions.read_text() == "Rome\nNone\nyes\n2\n"
    lenient = {r["id"]: r["answer"] for r in map(json.loads, (tmp_path / "test" / "results.jsonl").open())}
    assert lenient["1"] == "1.88 metre"
    assert "wrote 4 predictions of KQA Pro's test split" in capsys.readouterr().out
    report_main([str(tmp_path / "test")])
    assert "the test split has no public answers (send its predictions to the leaderboard)" in capsys.readouterr().out
    assert report_main(["--compare", str(tmp_path / "test"), str(tmp_path / "test")]) == 2
    assert "holds questions without a gold answer" in capsys.readouterr().err
    lines, missing = leaderboard_lines([{"id": "2", "engine_answer": "yes\nno", "answer": "no"},
                                        {"id": "0", "setting": "choices", "engine_answer": "Rome",
                                         "choices": ["Paris", "Rome"]}], 4)
    assert (lines, missing) == (["Rome", "", "yes no", ""], ["1", "3"])


def test_a_run_stands_beside_the_published_figures_only_when_comparable(capsys, tmp_path):
    record = {"id": "0", "correct": True, "question_type": "Count", "reasoning": ["count"], "usage": {},
              "actions": {}, "stop_reason": "stop"}
    whole = [record] * 11_797
    summary = KqaproSummary(tmp_path / "val-run", {"split": "val", "setting": "open", "model": "gpt-4o"}, whole,
                            whole, 91.0, (90.5, 91.5), {"Count": (11_797, 11_797)}, {}, dict.fromkeys(USAGE, 0.0),
                            None, dict.fromkeys(ACTIONS, 0.0))
    print_kqapro_report([summary])
    report = capsys.readouterr().out
    assert "beside the published test-set figures (this run: val, gpt-4o):" in report
    assert " 89.68  BART to SPARQL, fine-tuned" in report and " 97.50  human experts" in report
    assert " 75.35  Interactive-KBQA, few-shot LLM agent" in report and " 91.00  this run" in report
    summary.info["model"] = ""
    assert summary.comparable() == (False, "the run names no model")
    summary.info["model"], summary.judged = "gpt-4o", whole[:100]
    assert summary.comparable() == (False, "100 of the val split's 11,797 questions scored")


def test_answers_recorded_before_the_engines_reading_get_only_the_lenient_figure(tmp_path, capsys):
    """A line without ``engine_answer`` was read the lenient way only: no headline figure, and no export."""
    old = {"id": "0", "question": "How many films are there?", "source": "kqapro", "split": "val", "part": 0,
           "setting": "open", "question_type": "Count", "reasoning": ["count"], "gold_answer": "2", "answer": "2",
           "usage": {}, "actions": {}, "stop_reason": "stop"}
    run = tmp_path / "old"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"dataset": "kqapro", "split": "val", "model": "m", "setting": "open"}))
    (run / "results.jsonl").write_text(json.dumps(score_record(dict(old))) + "\n")
    assert report_main([str(run)]) == 0
    report = capsys.readouterr().out
    row = next(line for line in report.splitlines() if line.startswith("old "))
    assert row.split()[-3:] == ["-", "-", "100.00"]  # no headline accuracy, its interval, the lenient figure
    assert "old: answers recorded before the engine's reading was: 1;" in report
    assert report_main(["--kqapro-predictions", str(tmp_path / "p.txt"), str(run)]) == 2
    assert "recorded before KQA Pro's engine reading was: 1 (e.g. 0)" in capsys.readouterr().err
    assert not (tmp_path / "p.txt").exists()
