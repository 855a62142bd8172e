"""Every scorer takes the gold answer first, and every dataset's record names scorers that exist."""

import pytest

from harness.datasets import DATASETS, FILE_FORMATS
from harness.qald_json import qald_answer
from harness.scoring import SCORERS, HeadlineScorer, Scorer, figures, headline, scorer
from tests.support.terms import literal

GOLD = [{"x": literal("Paris")}]
#: The gold value and one more: an answer that says too much loses precision and keeps its recall.
MORE = [{"x": literal("Paris")}, {"x": literal("Lyon")}]


def test_each_dataset_names_registered_scorers_and_a_headline_that_judges_its_lines():
    for record in [*DATASETS.values(), *FILE_FORMATS.values()]:
        assert record.scorers and set(record.scorers) <= set(SCORERS), record.name
        assert isinstance(headline(record), HeadlineScorer), record.name
    assert all(isinstance(scorer(name), Scorer) for name in SCORERS)


@pytest.mark.parametrize("name, precision, recall", [
    ("qald", "macro_precision", "macro_recall"), ("gerbil", "macro_precision", "macro_recall"),
    ("text2sparql", "precision", "recall")])
def test_an_answer_saying_too_much_loses_precision_not_recall(name, precision, recall):
    judge = scorer(name)
    gold, more = (qald_answer(GOLD), qald_answer(MORE)) if name == "text2sparql" else (GOLD, MORE)
    result = judge.aggregate([judge.score(gold, more)])
    assert (getattr(result, precision), getattr(result, recall)) == (0.5, 1.0)
    line = {"gold_answer": GOLD, "predicted_answer": MORE, "predicted_variables": ["x"]}
    assert figures(judge, [line]) == result


def test_the_row_major_and_kqapro_scorers_take_gold_first():
    row_major = scorer("row_major")
    assert row_major.score(GOLD, MORE).f1 == pytest.approx(2 / 3) and not row_major.score(GOLD, MORE).em
    assert row_major.score(MORE, GOLD).f1 == pytest.approx(2 / 3)  # F1 is symmetric here; EM needs all of it
    assert row_major.aggregate([row_major.score(GOLD, GOLD), row_major.score(GOLD, MORE)]).em == 0.5
    kqapro = scorer("kqapro")
    assert kqapro.score("1990-05-01", "1990") and kqapro.aggregate([True, False, None]).accuracy == 0.5
