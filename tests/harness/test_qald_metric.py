"""The project's stricter variant of QALD's metric, rule by rule on hand-made answers, and the QALD-JSON export."""

import json

import pytest

from harness.metrics import row_major_f1
from harness.qald_json import to_qald_json
from harness import qald_metric
from harness.qald_metric import aggregate, answer_set

XSD = "http://www.w3.org/2001/XMLSchema#"


def item(qid, var="x"):
    return {var: {"type": "uri", "value": f"http://www.wikidata.org/entity/{qid}"}}


def number(value, datatype="decimal", var="n"):
    return {var: {"type": "literal", "value": value, "datatype": XSD + datatype}}


def scores(score):
    return score.precision, score.recall, score.f1


def test_empty_gold_scores_one_only_for_an_empty_answer():
    assert scores(qald_metric.score([], [])) == (1.0, 1.0, 1.0)
    assert scores(qald_metric.score([], None)) == (1.0, 1.0, 1.0)
    assert scores(qald_metric.score([], [item("Q1")])) == (0.0, 0.0, 0.0)


def test_an_empty_answer_to_a_non_empty_gold_is_a_decline():
    assert scores(qald_metric.score([item("Q1")], [])) == (1.0, 0.0, 0.0)
    assert scores(qald_metric.score([item("Q1")], None)) == (1.0, 0.0, 0.0)


def test_precision_and_recall_over_answer_sets():
    gold = [item("Q1"), item("Q2"), item("Q3"), item("Q4")]
    system = [item("Q1"), item("Q2"), item("Q9")]
    precision, recall = 2 / 3, 1 / 2
    f1 = 2 * precision * recall / (precision + recall)
    assert scores(qald_metric.score(gold, system)) == pytest.approx((precision, recall, f1))
    assert scores(qald_metric.score(gold, [item("Q9")])) == (0.0, 0.0, 0.0)


def test_answers_are_sets_of_values_of_every_column_without_labels():
    rows = [{**item("Q1"), **item("Q2", "y"), "xLabel": {"type": "literal", "value": "one", "xml:lang": "en"}},
            item("Q1")]
    assert len(answer_set(rows)) == 2  # duplicates collapse, the label column is left out
    assert scores(qald_metric.score(rows, [item("Q1", "a"), item("Q2", "b")])) == (1.0, 1.0, 1.0)


def test_a_boolean_is_a_one_element_set():
    assert scores(qald_metric.score(True, True)) == (1.0, 1.0, 1.0)
    assert scores(qald_metric.score(True, False)) == (0.0, 0.0, 0.0)
    assert scores(qald_metric.score(True, [item("Q1")])) == (0.0, 0.0, 0.0)
    assert scores(qald_metric.score(False, None)) == (1.0, 0.0, 0.0)


def test_f1_qald_is_the_harmonic_mean_of_the_mean_precision_and_recall():
    per_question = [qald_metric.score([item("Q1"), item("Q2")], [item("Q1")]),  # P 1, R 0.5, F 2/3
                    qald_metric.score([item("Q3")], []),  # P 1, R 0, F 0
                    qald_metric.score([item("Q4")], [item("Q4"), item("Q5")])]  # P 0.5, R 1, F 2/3
    total = aggregate(per_question)
    precision, recall = (1 + 1 + 0.5) / 3, (0.5 + 0 + 1) / 3
    assert total.macro_precision == pytest.approx(precision) and total.macro_recall == pytest.approx(recall)
    assert total.f1_qald == pytest.approx(2 * precision * recall / (precision + recall))
    assert total.macro_f1 == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)
    assert total.f1_qald != pytest.approx(total.macro_f1)
    # Micro: 2 shared values of 3 given and of 4 expected.
    assert total.micro_precision == pytest.approx(2 / 3) and total.micro_recall == pytest.approx(2 / 4)
    assert total.micro_f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))


def test_no_questions_is_an_error():
    with pytest.raises(ValueError, match="no questions"):
        aggregate([])


def test_numeric_literals_compared_by_value_only_when_asked():
    gold = [number("+100")]
    for system in ([number("100")], [number("100.0")], [number("1E2", "double")], [number("100", "integer")]):
        assert qald_metric.score(gold, system).f1 == 0.0
        assert qald_metric.score(gold, system, numbers_by_value=True).f1 == 1.0
        assert row_major_f1(gold, system) == 0.0
        assert row_major_f1(gold, system, numbers_by_value=True) == 1.0
    assert qald_metric.score(gold, [number("101")], numbers_by_value=True).f1 == 0.0
    assert qald_metric.score([number("+0")], [number("-0")], numbers_by_value=True).f1 == 1.0
    not_a_number = [number("about 100")]
    assert qald_metric.score(not_a_number, not_a_number, numbers_by_value=True).f1 == 1.0
    strings = [{"n": {"type": "literal", "value": "+100"}}]
    assert qald_metric.score(strings, [{"n": {"type": "literal", "value": "100"}}], numbers_by_value=True).f1 == 0.0


def test_the_export_is_qald_json_with_every_column():
    records = [
        {"id": "7", "question": "Who?", "predicted_sparql": "SELECT ?x ?xLabel WHERE {}",
         "predicted_answer": [{**item("Q1"), "xLabel": {"type": "literal", "value": "one"}}],
         "predicted_variables": ["x", "xLabel"]},
        {"id": "8", "question": "Is it?", "predicted_sparql": "ASK {}", "predicted_answer": True},
        {"id": "9", "question": "Nothing?", "predicted_sparql": None, "predicted_answer": None},
    ]
    document = json.loads(json.dumps(to_qald_json(records, "qald-10-test", "de")))
    assert document["dataset"] == {"id": "qald-10-test"}
    first, second, third = document["questions"]
    assert first["question"] == [{"language": "de", "string": "Who?"}]
    assert first["query"] == {"sparql": "SELECT ?x ?xLabel WHERE {}"}
    assert first["answers"] == [{"head": {"vars": ["x", "xLabel"]}, "results": {"bindings": [
        {**item("Q1"), "xLabel": {"type": "literal", "value": "one"}}]}}]
    assert second["answers"] == [{"head": {}, "boolean": True}]
    assert third["answers"] == [{"head": {"vars": []}, "results": {"bindings": []}}] and third["query"]["sparql"] == ""


def test_the_upstream_qald10_outputs_under_both_metrics(shared_dir):
    """The figures the README quotes: the paper's 387 QALD-10 outputs, against live gold and the file's gold."""
    from harness.datasets import load_dataset

    outputs = json.loads((shared_dir / "reference-outputs" / "qald10_spinach_output_test.json").read_text())
    live = aggregate(qald_metric.score(o["gold_answer_tuple"], o["predicted_answer_tuple"]) for o in outputs)
    assert (round(100 * live.f1_qald, 2), round(100 * live.macro_f1, 2), round(100 * live.micro_f1, 2)) == (
        69.07, 65.11, 48.96)
    file_gold = {example.question: example.gold_answer for example in load_dataset("qald10", None,
                                                                                     shared_dir / "datasets")}
    pairs = [(o["predicted_answer_tuple"], file_gold[o["question"]]) for o in outputs]
    assert len(pairs) == 387
    for by_value, expected in ((False, 57.37), (True, 59.11)):
        scores = aggregate(qald_metric.score(gold, predicted, by_value) for predicted, gold in pairs)
        assert round(100 * scores.f1_qald, 2) == expected


def test_an_export_reads_back_as_a_qald10_file(tmp_path):
    """The export has the shape of QALD-10's own file: the harness's QALD-JSON reader takes it unchanged."""
    from harness.datasets import load_dataset

    records = [{"id": "0", "question": "Who?", "predicted_sparql": "SELECT ?x WHERE {}",
                "predicted_answer": [item("Q1")], "predicted_variables": ["x"]},
               {"id": "1", "question": "Is it?", "predicted_sparql": "ASK {}", "predicted_answer": False}]
    (tmp_path / "qald10").mkdir()
    (tmp_path / "qald10" / "qald_10.json").write_text(json.dumps(to_qald_json(records, "qald-10-test", "en")))
    examples = load_dataset("qald10", None, tmp_path)
    assert [(e.id, e.question, e.gold_sparql, e.gold_answer) for e in examples] == [
        ("0", "Who?", "SELECT ?x WHERE {}", [item("Q1")]), ("1", "Is it?", "ASK {}", False)]
