"""The report's numbers, checked by hand on tiny stored runs, and the paired comparison of two runs."""

import json
import xml.etree.ElementTree as ElementTree

import pytest

from harness.comparison import compare_records
from harness.prices import Price, load_prices
from harness.reporting import bootstrap_interval, summarize
from scripts.report import main as report_main

USAGE = {"llm_calls": 4, "prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 500, "kb_calls": 3,
         "seconds": 2.0}


def record(key, f1, actions, question="q", source="qald10", split="test", part=0):
    return {"id": key, "question": question, "source": source, "split": split, "part": part, "f1": f1,
            "em": f1 == 1.0, "actions": actions, "usage": USAGE, "predicted_sparql": "SELECT ?x WHERE {}",
            "predicted_answer": [], "gold_answer": [{"x": {"type": "uri", "value": "http://x/" + key}}]}


def write_run(path, records, dataset="qald10", baseline=False, model="gpt-4o", summary=None):
    path.mkdir()
    settings = {"dataset": dataset, "split": "test", "language": "en", "model": model, "baseline": baseline,
                "numbers": "lexical"}
    part = {"settings": settings, **({"summary": summary} if summary else {})}
    (path / "run.json").write_text(json.dumps({**settings, "parts": [part]}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_summary_by_hand(tmp_path):
    run = write_run(tmp_path / "a", [record("1", 1.0, {"search_wikidata": 2, "execute_sparql": 1, "stop": 1}),
                                     record("2", 0.5, {"execute_sparql": 2, "stop": 1}),
                                     record("3", 0.0, {"search_wikidata": 1})])
    summary = summarize(run, {"gpt-4o": Price(input=2.0, cached=1.0, output=10.0)})
    assert summary.questions == 3
    assert summary.em == pytest.approx(100 / 3) and summary.f1 == pytest.approx(50.0)
    assert summary.actions["search_wikidata"] == 1.0 and summary.actions["execute_sparql"] == 1.0
    assert summary.cost["prompt_tokens"] == 1000 and summary.cost["cached_tokens"] == 500
    # 500 uncached x $2 + 500 cached x $1 + 100 output x $10, per million tokens.
    assert summary.dollars == pytest.approx((500 * 2 + 500 * 1 + 100 * 10) / 1e6)
    assert summary.steps_histogram == {1: 1, 3: 1, 4: 1}
    low, high = summary.f1_interval
    assert 0 <= low < 50 < high <= 100
    # Every prediction is empty against a non-empty gold: QALD counts it a decline (precision 1, recall 0).
    assert summary.qald.macro_precision == 1.0 and summary.qald.macro_recall == 0.0 and summary.qald.f1_qald == 0.0


def test_a_model_missing_from_the_price_table_gets_no_dollar_figure(tmp_path):
    run = write_run(tmp_path / "a", [record("1", 1.0, {})], model="home-made-model")
    assert summarize(run, load_prices()).dollars is None
    assert load_prices()["gpt-4o"].output > 0


def test_a_malformed_price_table_is_a_clear_error(tmp_path):
    (tmp_path / "prices.json").write_text('{"models": {"m": {"input": 1}}}')
    with pytest.raises(ValueError, match="not a price table"):
        load_prices(tmp_path / "prices.json")


def test_bootstrap_is_seeded_and_collapses_on_constant_data():
    assert bootstrap_interval([1.0, 0.0, 1.0]) == bootstrap_interval([1.0, 0.0, 1.0])
    assert bootstrap_interval([70.0] * 10) == (70.0, 70.0)
    assert bootstrap_interval([42.0]) == (42.0, 42.0)


def test_compare_pairs_by_dataset_split_and_id_and_sorts_ids_as_numbers():
    before = [record("1", 0.0, {}, "improved"), record("2", 1.0, {}, "regressed"), record("10", 0.5, {}, "same"),
              record("1", 1.0, {}, "another dataset's 1", source="qald7")]
    after = [record("10", 0.5, {}, "same"), record("1", 1.0, {}, "improved"), record("2", 0.2, {}, "regressed"),
             record("4", 1.0, {}, "new"), record("1", 0.0, {}, "another dataset's 1", source="qald9plus")]
    result = compare_records(before, after)
    assert [change.question for change in result.better] == ["improved"]
    assert [change.question for change in result.worse] == ["regressed"]
    assert result.paired == 3  # qald7's 1 and qald9plus's 1 are different questions
    assert [change.key for change in result.only_after] == [("qald10", "test", "4"), ("qald9plus", "test", "1")]
    assert [change.key for change in result.only_before] == [("qald7", "test", "1")]


def test_the_paired_test_tells_a_real_change_from_noise():
    same = [record(str(n), float(n % 2), {}) for n in range(40)]
    shuffled = [record(str(n), float((n // 2) % 2), {}) for n in range(40)]  # 10 up, 10 down
    noise = compare_records(same, shuffled)
    assert len(noise.better) == 10 and len(noise.worse) == 10 and noise.p_value > 0.5
    improved = [record(str(n), 1.0, {}) for n in range(40)]  # 20 up, none down
    real = compare_records(same, improved)
    assert len(real.better) == 20 and not real.worse and real.p_value < 0.001
    low, high = real.difference_interval
    assert 0 < low < 0.5 < high <= 1
    unchanged = compare_records(same, same)
    assert unchanged.p_value == 1.0 and unchanged.difference_interval == (0.0, 0.0)


def test_an_empty_run_or_a_missing_directory_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no results"):
        summarize(tmp_path / "empty")
    assert report_main([str(tmp_path / "nowhere")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_the_report_shows_the_baseline_without_the_agents_paper_figures_and_what_was_left_out(tmp_path, capsys):
    summary = {"in_split": 155, "asked": 155, "skipped_language": [], "scored": 15, "failures": {},
               "gold": {"empty": [str(n) for n in range(140)], "cut": [], "failed": {}}}
    run = write_run(tmp_path / "dev-baseline", [record(str(n), 0.5, {"execute_sparql": 1}, source="spinach")
                                                for n in range(15)], dataset="spinach", baseline=True,
                    summary=summary)
    assert report_main([str(run)]) == 0
    report = capsys.readouterr().out
    assert "spinach test baseline (gpt-4o)" in report and "46.4" not in report and "45.3" not in report
    assert "155 in the split, 155 asked; skipped 0 (no 'en' text), dropped 140 (gold empty)" in report
    assert "15 scored" in report
    assert "model gpt-4o, knowledge base ?, language en, gold from file, numeric literals compared as written" in report
    assert "QALD's official metric" not in report  # not a QALD dataset
    assert "$0.1253" in report


def test_the_plot_has_a_title_labels_counts_and_an_svg(tmp_path, capsys):
    run = write_run(tmp_path / "a", [record("1", 1.0, {"execute_sparql": 1, "stop": 1}),
                                     record("2", 0.0, {"execute_sparql": 1, "stop": 1}),
                                     record("3", 0.5, {"search_wikidata": 3, "execute_sparql": 1, "stop": 1})])
    assert report_main([str(run)]) == 0
    assert (run / "f1_vs_actions.png").stat().st_size > 10_000
    svg = (run / "f1_vs_actions.svg").read_text()
    ElementTree.fromstring(svg)  # well-formed
    for text in ("SPINACH agent, gpt-4o, qald10 test (3 questions)", "actions on the final path",
                 "row-major F1 (0 to 1)", "n=2", "n=1"):
        assert text in svg  # matplotlib keeps each text, drawn as paths, in a comment beside it
    assert "F1 QALD" in capsys.readouterr().out


def test_a_run_exports_as_qald_json(tmp_path, capsys):
    run = write_run(tmp_path / "a", [record("1", 0.0, {})])
    assert report_main(["--qald-json", str(tmp_path / "qald.json"), str(run)]) == 0
    document = json.loads((tmp_path / "qald.json").read_text())
    assert document["dataset"] == {"id": "qald10-test"}
    assert document["questions"][0]["answers"] == [{"head": {"vars": []}, "results": {"bindings": []}}]


def test_the_comparison_command_prints_the_test_and_the_counts(tmp_path, capsys):
    before = write_run(tmp_path / "before", [record("1", 0.0, {}, "up"), record("2", 1.0, {}, "down"),
                                             record("3", 0.5, {}, "same")])
    after = write_run(tmp_path / "after", [record("1", 1.0, {}, "up"), record("2", 0.0, {}, "down"),
                                           record("3", 0.5, {}, "same")])
    assert report_main(["--compare", str(before), str(after)]) == 0
    output = capsys.readouterr().out
    assert "3 questions in both runs, paired by (dataset, split, id): mean F1 50.0 -> 50.0" in output
    assert "1 better, 1 worse, 1 unchanged; paired randomization test p = 1.0000" in output
    assert "qald10 test 1          F1 0.00 -> 1.00  up" in output
