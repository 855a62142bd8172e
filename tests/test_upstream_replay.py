"""The 387 real upstream GPT-4o runs on QALD-10, replayed through our agent."""

import json

import pytest

from harness.replay import comparable_sparql, replay


@pytest.fixture(scope="module")
def outcomes(shared_dir):
    runs = json.loads((shared_dir / "reference-outputs" / "qald10_spinach_traces_test.log").read_text())
    assert len(runs) == 387
    return [(run, replay(run)) for run in runs]


def last_query_with_rows(result):
    for step in reversed(result.steps):
        if step.action == "execute_sparql" and step.query_status == "ok":
            return step.argument
    return None


def test_clean_runs_take_the_same_actions_and_end_on_the_same_query(outcomes):
    clean = [(run, outcome) for run, outcome in outcomes if outcome.clean]
    assert len(clean) == 335
    for run, outcome in clean:
        if outcome.reproduced:
            continue
        # The only other clean runs are those the upstream agent ended without a final query.
        assert run.get("final_sparql") is None, outcome.question
        assert outcome.reason.startswith("same actions"), outcome.question
        assert outcome.result.final_sparql == last_query_with_rows(outcome.result)


def test_reproduced_runs_match_modulo_a_trailing_limit(outcomes):
    reproduced = [(run, outcome) for run, outcome in outcomes if outcome.reproduced]
    assert len(reproduced) == 346
    for run, outcome in reproduced:
        assert comparable_sparql(outcome.result.final_sparql) == comparable_sparql(
            (run.get("final_sparql") or {}).get("sparql"))


def test_other_runs_roll_back_and_come_to_a_clean_end(outcomes):
    others = [outcome for _, outcome in outcomes if not outcome.clean and not outcome.reproduced]
    assert others
    for outcome in others:
        assert any(step.rolled_back for step in outcome.result.steps), outcome.question
        assert outcome.result.stop_reason in ("stop", "path_limit", "action_limit"), outcome.question
        assert len(outcome.result.path) <= 15 and len(outcome.result.steps) <= 30
