"""The 387 real upstream GPT-4o runs on QALD-10, replayed through our agent and scored like upstream's."""

import json

import pytest

from harness.replay import replay
from harness.recorded_kb import same_query
from scripts.replay_upstream import REPLAY_CONFIG, main


@pytest.fixture(scope="module")
def replayed(shared_dir):
    reference = shared_dir / "reference-outputs"
    runs = json.loads((reference / "qald10_spinach_traces_test.log").read_text())
    outputs = json.loads((reference / "qald10_spinach_output_test.json").read_text())
    assert len(runs) == len(outputs) == 387
    return [(run, output, replay(run, output, REPLAY_CONFIG)) for run, output in zip(runs, outputs)]


def test_the_answers_score_at_least_upstreams_published_figure(replayed):
    f1 = 100 * sum(outcome.f1 for _, _, outcome in replayed) / len(replayed)
    em = 100 * sum(outcome.em for _, _, outcome in replayed) / len(replayed)
    assert round(f1, 2) >= 69.54 and round(em, 2) >= 63.05


def test_runs_without_a_stop_get_the_extraction_and_say_it_is_a_best_effort(replayed):
    extracted = [outcome for _, _, outcome in replayed if "extraction" in outcome.result.end_of_run]
    assert len(extracted) >= 20
    for outcome in extracted:
        assert outcome.result.stop_reason != "stop" and outcome.result.best_effort
    stopped = [outcome for _, _, outcome in replayed if outcome.result.stop_reason == "stop"]
    assert stopped and not any(outcome.result.best_effort for outcome in stopped)


def test_labels_get_their_ids(replayed):
    fixed = {outcome.question: outcome for _, _, outcome in replayed if "label_ids" in outcome.result.end_of_run}
    trotsky = fixed["Where did Trotzky die?"]
    assert trotsky.result.final_sparql.startswith("SELECT DISTINCT ?placeOfDeath ?placeOfDeathLabel WHERE {")
    assert trotsky.f1 == 1.0


def test_clean_runs_take_the_same_actions_and_almost_all_end_on_upstreams_final_query(replayed):
    clean = [outcome for _, _, outcome in replayed if outcome.clean]
    assert len(clean) == 335
    assert all(outcome.reason == "same actions" for outcome in clean)
    assert sum(outcome.same_final for outcome in clean) >= 325


def test_runs_with_a_rollback_come_to_a_clean_end_within_the_budgets(replayed):
    rolled = [outcome for _, _, outcome in replayed if outcome.rolled_back]
    assert rolled
    for outcome in rolled:
        assert outcome.result.stop_reason in ("stop", "path_limit", "action_limit", "repeated_stop")
        assert len(outcome.result.path) <= 15 and len(outcome.result.steps) <= 30


def test_same_query_ignores_layout_an_outer_distinct_and_projection_order():
    assert same_query("SELECT ?a ?b WHERE {\n ?a ?p ?b . }", "SELECT DISTINCT ?b ?a WHERE { ?a ?p ?b . }")
    assert not same_query("SELECT ?a WHERE { ?a ?p ?b }", "SELECT ?b WHERE { ?a ?p ?b }")
    assert not same_query("SELECT ?a WHERE { ?a ?p 1 }", "SELECT ?a WHERE { ?a ?p 2 }")


def test_the_command_prints_the_figure_first(shared_dir, tmp_path, capsys):
    reference = shared_dir / "reference-outputs"
    runs = json.loads((reference / "qald10_spinach_traces_test.log").read_text())[:12]
    outputs = json.loads((reference / "qald10_spinach_output_test.json").read_text())[:12]
    (tmp_path / "traces.json").write_text(json.dumps(runs))
    (tmp_path / "outputs.json").write_text(json.dumps(outputs[:11]))
    assert main([str(tmp_path / "traces.json"), "--outputs", str(tmp_path / "outputs.json")]) == 2
    assert "not the same questions" in capsys.readouterr().err
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    assert main([str(tmp_path / "traces.json"), "--outputs", str(tmp_path / "outputs.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("replay F1 ") and lines[0].endswith("(upstream 69.54/63.05)")
    assert lines[1].startswith("without the end-of-run steps: F1 ")
    assert lines[2].startswith("runs each end-of-run step changed: extraction ")
