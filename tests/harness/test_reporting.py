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
    # Every prediction is empty against a non-empty gold: the QALD rule counts it a decline (precision 1, recall 0),
    # GERBIL's Macro Precision 0.
    assert summary.qald.macro_precision == 1.0 and summary.qald.macro_recall == 0.0 and summary.qald.f1_qald == 0.0
    assert summary.gerbil.macro_precision == 0.0 and summary.gerbil.macro_f1_qald == 0.0


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
    assert "spinach test baseline (gpt-4o (not reported by the endpoint))" in report
    assert "46.4" not in report and "45.3" not in report
    assert "no paper figure: a one-call baseline run" in report
    assert "155 in the split, 155 asked; skipped 0 (no 'en' text), dropped 140 (gold empty)" in report
    assert "15 scored" in report
    assert "model asked gpt-4o, reported (not reported) (15)" in report
    assert "language en, numeric literals compared as written" in report
    assert "GERBIL" not in report  # not a QALD dataset
    assert "(EM and F1: the SPINACH paper's row-major metric;" in report
    assert "$0.1253" in report


def test_the_plot_has_a_title_labels_counts_and_an_svg(tmp_path, capsys):
    run = write_run(tmp_path / "a", [record("1", 1.0, {"execute_sparql": 1, "stop": 1}),
                                     record("2", 0.0, {"execute_sparql": 1, "stop": 1}),
                                     record("3", 0.5, {"search_wikidata": 3, "execute_sparql": 1, "stop": 1})])
    assert report_main([str(run)]) == 0
    assert (run / "f1_vs_actions.png").stat().st_size > 10_000
    svg = (run / "f1_vs_actions.svg").read_text()
    ElementTree.fromstring(svg)  # well-formed
    for text in ("SPINACH agent, gpt-4o (not reported by the endpoint), qald10 test (3 questions)",
                 "actions on the final path",
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


WHOLE_SPLIT = {"in_split": 3, "asked": 3, "skipped_language": [], "scored": 3, "failures": {},
               "gold": {"empty": [], "cut": [], "failed": {}}}


def answered(key, f1, model="gpt-4o-2024-08-06", repeat=1, diagnosis=None, **fields):
    line = {**record(key, f1, {"execute_sparql": 1, "stop": 1}), "model": model, "repeat": repeat,
            "diagnosis": diagnosis or ("correct" if f1 == 1.0 else "partial rows" if f1 else "wrong rows"), **fields}
    return line


def settled(path, records, summary=WHOLE_SPLIT, **settings):
    run = write_run(path, records, summary=summary)
    info = json.loads((run / "run.json").read_text())
    info["parts"][0]["settings"].update({"kb": "wikidata", "gold": "live", **settings})
    (run / "run.json").write_text(json.dumps({**info, **info["parts"][0]["settings"]}))
    return run


def test_the_papers_figures_stand_only_beside_a_comparable_run(tmp_path, capsys):
    comparable = settled(tmp_path / "whole", [answered(str(n), 1.0) for n in range(3)],
                         summary={**WHOLE_SPLIT, "in_split": 394, "asked": 394})
    assert report_main([str(comparable)]) == 0
    report = capsys.readouterr().out
    assert "qald10 test agent (gpt-4o-2024-08-06 (asked for gpt-4o))" in report and "63.1/69.5" in report
    assert "no paper figure" not in report

    subset = {**WHOLE_SPLIT, "in_split": 394, "asked": 80}
    stand_in = settled(tmp_path / "stand-in", [answered(str(n), 1.0, model="scripted-stand-in") for n in range(3)],
                       summary=subset, kb="stores/tiny", gold="file")
    assert report_main([str(stand_in)]) == 0
    report = capsys.readouterr().out
    assert "qald10 test agent (scripted-stand-in (asked for gpt-4o))" in report and "63.1/69.5" not in report
    assert "no paper figure: not the whole split: 80 of 394 questions asked" in report
    assert "gold from the dataset file (QALD-10's answers of 2022); the paper ran the gold queries" in report
    assert "answered from a local store, not live Wikidata" in report
    assert "warning, stand-in: scored against QALD-10's file answers, written in 2022" in report
    assert "add --gold live" in report


def test_repeats_give_the_mean_and_spread_beside_the_interval_over_questions(tmp_path, capsys):
    lines = [answered(str(n), f1, repeat=repeat) for repeat, f1s in ((1, (1.0, 1.0, 0.0)), (2, (1.0, 0.0, 0.0)),
                                                                     (3, (1.0, 1.0, 1.0))) for n, f1 in enumerate(f1s)]
    run = settled(tmp_path / "x3", lines, repeats=3)
    summary = summarize(run)
    assert summary.questions == 3 and summary.repeat_f1 == pytest.approx([200 / 3, 100 / 3, 100.0])
    assert summary.f1 == pytest.approx(200 / 3)   # the mean over questions of each one's mean over repeats
    assert report_main([str(run)]) == 0
    assert "x3: 3 repeats; F1 mean 66.7, SD 33.3, 33.3-100.0 (66.7, 33.3, 100.0)" in capsys.readouterr().out


def test_each_answer_gets_a_diagnosis_counted_and_listed(tmp_path, capsys):
    lines = [answered("1", 1.0), answered("2", 0.5), answered("3", 0.0), answered("4", 0.0, diagnosis="no query"),
             answered("5", 0.0, diagnosis="cannot answer"), answered("6", 0.0, diagnosis="syntax error"),
             answered("7", 0.0, diagnosis="model failure"),
             answered("8", 0.5, postprocessed={"f1": 1.0, "em": True, "answer": [], "sparql": "x"})]
    run = settled(tmp_path / "d", lines, summary={**WHOLE_SPLIT, "in_split": 8, "asked": 8})
    summary = summarize(run)
    assert summary.diagnoses["correct"] == 1 and summary.diagnoses["partial rows"] == 2
    assert summary.diagnosed["cannot answer"] == [("5", 1)] and summary.diagnoses["timeout"] == 0
    assert summary.postprocessed[0] == pytest.approx(100 * (1 + .5 + 1) / 8)
    assert report_main([str(run), "--questions"]) == 0
    report = capsys.readouterr().out
    assert "d partial rows: 2, 8" in report and "d model failure: 7" in report
    assert "with upstream's post-processing (upstream's code applied" in report and "d: F1 31.2" in report
    assert "     5 #1 cannot answer" in report


def test_compare_takes_each_questions_mean_over_its_repeats():
    before = [record("1", 0.0, {})]
    after = [{**record("1", 1.0, {}), "repeat": 1}, {**record("1", 0.0, {}), "repeat": 2}]
    result = compare_records(before, after)
    assert result.paired == 1 and result.mean_after == 0.5 and [c.after for c in result.better] == [0.5]


def test_qald_figures_are_gerbils_under_gerbils_names_and_the_stricter_variant_is_labelled(tmp_path, capsys):
    x, three = {"type": "uri", "value": "http://x/1"}, {"type": "literal", "value": "3"}
    lines = [{**record("1", 0.0, {}), "gold_answer": [{"n": three}],
              "predicted_answer": [{"n": {**three, "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]},
             {**record("2", 0.0, {}), "gold_answer": [{"x": x}], "predicted_answer": []},
             {**record("3", 1.0, {}), "gold_answer": [{"x": x}],
              "predicted_answer": [{"x": x, "xLabel": {"type": "literal", "value": "one", "xml:lang": "en"}}]}]
    run = write_run(tmp_path / "mix", lines)
    summary = summarize(run)
    # GERBIL: a typed 3 is the plain 3; the declined answer is precision 0 (1 in F1 QALD); the label costs precision.
    assert summary.gerbil.macro_precision == pytest.approx(1.5 / 3) and summary.gerbil.macro_recall == 2 / 3
    assert summary.gerbil.macro_f1_qald == pytest.approx(2 * (2.5 / 3) * (2 / 3) / (2.5 / 3 + 2 / 3))
    assert summary.qald.f1_qald == pytest.approx(4 / 9)  # QALD-rule P (0 + 1 + 1) / 3, R (0 + 0 + 1) / 3
    assert summary.text2sparql.f1 == pytest.approx((1 + 0 + 2 / 3) / 3) and summary.text2sparql.left_out == 0
    assert report_main([str(run)]) == 0
    report = capsys.readouterr().out
    header = next(line for line in report.splitlines() if line.startswith("run ") and "Macro F1 QALD" in line)
    assert header.split()[1:] == ["Micro", "F1", "score", "Micro", "Precision", "Micro", "Recall", "Macro", "F1",
                                  "score", "Macro", "Precision", "Macro", "Recall", "Macro", "F1", "QALD"]
    assert report.splitlines()[report.splitlines().index(header) + 1].split() == [
        "mix", "66.67", "66.67", "66.67", "55.56", "50.00", "66.67", "74.07"]
    assert "The project's stricter variant (whole terms" in report
    assert "TEXT2SPARQL's set figures, as its client (text2sparql-client 2.1.0, evaluate)" in report
    table = report.splitlines()[report.splitlines().index(next(line for line in report.splitlines()
                                                                if line.startswith("TEXT2SPARQL's set"))) + 2]
    assert table.split() == ["mix", "55.56", "50.00", "66.67", "3", "0"]


def test_compare_refuses_runs_that_measured_different_things_and_says_which(tmp_path, capsys):
    lines = [answered(str(n), 1.0) for n in range(3)]
    live = settled(tmp_path / "live", lines)
    file_gold = settled(tmp_path / "file", lines, gold="file", numbers="value")
    assert report_main(["--compare", str(live), str(file_gold)]) == 2
    error = capsys.readouterr().err
    assert "measured different things: they differ in gold source 'live' (before) and 'file' (after); " \
           "numbers mode 'lexical' (before) and 'value' (after). Compare anyway with --allow-different" in error
    kqapro = settled(tmp_path / "kqapro", lines, dataset="kqapro", setting="choices", graph="kqapro (local store)")
    assert report_main(["--compare", str(live), str(kqapro)]) == 2
    error = capsys.readouterr().err
    assert "dataset 'qald10' (before) and 'kqapro' (after)" in error
    assert "answer mode None (before) and 'choices' (after)" in error
    assert "graph 'live Wikidata' (before) and 'kqapro (local store)' (after)" in error
    assert report_main(["--compare", str(live), str(file_gold), "--allow-different"]) == 0
    output = capsys.readouterr().out
    assert output.startswith("warning: the runs measured different things: they differ in gold source")
    assert "3 questions in both runs" in output
    assert report_main(["--compare", str(live), str(settled(tmp_path / "again", lines))]) == 0


def test_an_export_of_a_run_with_repeats_names_one_repeat(tmp_path, capsys):
    lines = [answered(str(n), f1, repeat=repeat) for repeat, f1 in ((1, 1.0), (2, 0.0)) for n in range(3)]
    run = settled(tmp_path / "x2", lines, repeats=2)
    target = tmp_path / "qald.json"
    assert report_main(["--qald-json", str(target), str(run)]) == 2
    assert "holds 2 repeats of the split (1, 2); an export holds each question once: name one with --repeat N" \
        in capsys.readouterr().err and not target.exists()
    assert report_main(["--qald-json", str(target), "--repeat", "2", str(run)]) == 0
    assert [q["id"] for q in json.loads(target.read_text())["questions"]] == ["0", "1", "2"]
    assert report_main(["--qald-json", str(target), "--repeat", "3", str(run)]) == 2
    assert "has no repeat 3 (it holds 1, 2)" in capsys.readouterr().err


def test_the_plot_title_counts_answers_as_its_bins_do(tmp_path, capsys):
    lines = [answered(str(n), 1.0, repeat=repeat) for repeat in (1, 2) for n in range(3)]
    run = settled(tmp_path / "x2", lines, repeats=2)
    assert report_main([str(run)]) == 0
    svg = (run / "f1_vs_actions.svg").read_text()
    assert "(6 answers: 3 questions x 2 repeats)" in svg and "n=6" in svg


def test_gerbil_reading_the_qald_json_export_gets_the_reports_figures(tmp_path, capsys):
    """The export carries every column, so the answers GERBIL reads from it score what the report prints."""
    from harness import gerbil_metric
    from harness.gerbil_metric import gerbil_scores

    x, label = {"type": "uri", "value": "http://x/1"}, {"type": "literal", "value": "one", "xml:lang": "en"}
    lines = [{**record("1", 1.0, {}), "gold_answer": [{"x": x}], "predicted_answer": [{"x": x, "xLabel": label}],
              "predicted_variables": ["x", "xLabel"]},
             {**record("2", 0.0, {}), "gold_answer": True, "predicted_answer": False},
             {**record("3", 0.0, {}), "gold_answer": [{"x": x}], "predicted_answer": None}]
    run = write_run(tmp_path / "mix", lines)
    assert report_main(["--qald-json", str(tmp_path / "qald.json"), str(run)]) == 0
    exported = json.loads((tmp_path / "qald.json").read_text())["questions"]
    read = [answer.get("boolean") if "boolean" in answer else answer["results"]["bindings"]
            for answer in (question["answers"][0] for question in exported)]
    scores = gerbil_scores(gerbil_metric.score(line["gold_answer"], answer) for answer, line in zip(read, lines))
    assert scores == summarize(run).gerbil and scores.macro_precision == pytest.approx(0.5 / 3)


def test_the_action_columns_name_the_tools_as_the_runs_graph_named_them(tmp_path, capsys):
    records = [record("1", 1.0, {"search_wikidata": 2, "get_wikidata_entry": 1, "execute_sparql": 1, "stop": 1})]
    wikidata = write_run(tmp_path / "wikidata", records)
    assert report_main([str(wikidata)]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "execute_sparql" in line)
    assert "search_wikidata" in header and "get_wikidata_entry" in header
    museum = write_run(tmp_path / "museum", records)
    info = json.loads((museum / "run.json").read_text())
    info["parts"][0]["settings"]["graph"] = "museum (local store)"
    (museum / "run.json").write_text(json.dumps(info))
    assert report_main([str(museum)]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "execute_sparql" in line)
    assert "search_graph" in header and "get_entry" in header and "wikidata" not in header
    assert summarize(museum).actions["search_wikidata"] == 2.0  # records keep one vocabulary
    assert report_main([str(wikidata), str(museum)]) == 0  # two graphs: the names the records keep
    header = next(line for line in capsys.readouterr().out.splitlines() if "execute_sparql" in line)
    assert "search_wikidata" in header
