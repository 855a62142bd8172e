"""The report's numbers, checked by hand on a tiny stored run, and the comparison of two runs."""

import json

import pytest

from harness.reporting import bootstrap_interval, compare, summarize


def record(key, f1, actions, question="q"):
    return {"id": key, "question": question, "f1": f1, "em": f1 == 1.0, "actions": actions,
            "usage": {"llm_calls": 4, "prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 500,
                      "kb_calls": 3, "seconds": 2.0}}


def write_run(path, records, dataset="qald10"):
    path.mkdir()
    (path / "run.json").write_text(json.dumps({"dataset": dataset, "split": "test", "baseline": False}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_summary_by_hand(tmp_path):
    run = write_run(tmp_path / "a", [record("1", 1.0, {"search_wikidata": 2, "execute_sparql": 1, "stop": 1}),
                                     record("2", 0.5, {"execute_sparql": 2, "stop": 1}),
                                     record("3", 0.0, {"search_wikidata": 1})])
    summary = summarize(run)
    assert summary.questions == 3
    assert summary.em == pytest.approx(100 / 3) and summary.f1 == pytest.approx(50.0)
    assert summary.actions["search_wikidata"] == 1.0 and summary.actions["execute_sparql"] == 1.0
    assert summary.cost["prompt_tokens"] == 1000 and summary.cost["cached_tokens"] == 500
    assert summary.steps_histogram == {1: 1, 3: 1, 4: 1}
    low, high = summary.f1_interval
    assert 0 <= low < 50 < high <= 100


def test_bootstrap_is_seeded_and_collapses_on_constant_data():
    assert bootstrap_interval([1.0, 0.0, 1.0]) == bootstrap_interval([1.0, 0.0, 1.0])
    assert bootstrap_interval([70.0] * 10) == (70.0, 70.0)


def test_compare_names_what_got_better_and_worse(tmp_path):
    before = write_run(tmp_path / "before", [record("1", 0.0, {}, "improved"), record("2", 1.0, {}, "regressed"),
                                             record("3", 0.5, {}, "same")])
    after = write_run(tmp_path / "after", [record("1", 1.0, {}, "improved"), record("2", 0.2, {}, "regressed"),
                                           record("3", 0.5, {}, "same"), record("4", 1.0, {}, "new")])
    changes = compare(before, after)
    assert [row[1] for row in changes["better"]] == ["improved"]
    assert [row[1] for row in changes["worse"]] == ["regressed"]
    assert [row[0] for row in changes["only after"]] == ["4"] and changes["only before"] == []


def test_an_empty_run_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no results"):
        summarize(tmp_path / "empty")
