"""The project's stricter reading of QALD's metric, a second figure beside GERBIL's (:mod:`harness.gerbil_metric`).

GERBIL QA compares bare values over every column; this variant compares
whole SPARQL JSON terms (type, value, language, datatype, so
``"3"^^xsd:integer`` and ``"3"`` differ), leaves out columns that only name
or describe another (``?xLabel``, ``?xDescription``) on both sides, as the
row-major metric leaves them out of gold rows, and can compare numeric
literals by value (``--numbers``).  A boolean is a one-element set; no
answer at all is the empty set.  Per question, with gold set G and system
set S, the rules of GERBIL's ``calculateMeasuresQALD``:

* G empty: precision, recall and F1 are 1 if S is empty too, else 0;
* G not empty, S empty: precision 1, recall 0, F1 0 (the system declined);
* otherwise precision |G∩S|/|S|, recall |G∩S|/|G|, F1 their harmonic mean.

Over a dataset: the QALD-rule precision and recall are the means of the
per-question figures (a declined question counts as precision 1, unlike
GERBIL's "Macro Precision"), and F1 QALD is the harmonic mean of those two
means; macro F1 is the mean of the per-question F1.  Micro figures pool the
counts of all questions: Σ|G∩S| over Σ|S| and Σ|G| (1 when the sum below
is 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.metrics import Answer, Value, ignored_variable, term_key


@dataclass(frozen=True)
class QuestionScore:
    """One question's precision, recall and F1, and the set sizes behind them."""

    precision: float
    recall: float
    f1: float
    gold: int
    system: int
    shared: int


@dataclass(frozen=True)
class QaldScores:
    """A dataset's figures, each a fraction in [0, 1]."""

    questions: int
    macro_precision: float
    macro_recall: float
    f1_qald: float
    macro_f1: float
    micro_precision: float
    micro_recall: float
    micro_f1: float


def answer_set(answer: Answer, numbers_by_value: bool = False) -> frozenset[Value | bool]:
    """The values of an answer as one set (see the module's docstring)."""
    if answer is None:
        return frozenset()
    if isinstance(answer, bool):
        return frozenset([answer])
    return frozenset(term_key(term, numbers_by_value) for row in answer for name, term in row.items()
                     if not ignored_variable(name))


def _harmonic(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def score(gold: Answer, system: Answer, numbers_by_value: bool = False) -> QuestionScore:
    """Precision, recall and F1 of one question by QALD's rules (the scorers' one call order, gold first)."""
    gold_set, system_set = answer_set(gold, numbers_by_value), answer_set(system, numbers_by_value)
    shared = len(gold_set & system_set)
    sizes = {"gold": len(gold_set), "system": len(system_set), "shared": shared}
    if not gold_set:
        value = 1.0 if not system_set else 0.0
        return QuestionScore(value, value, value, **sizes)
    if not system_set:
        return QuestionScore(1.0, 0.0, 0.0, **sizes)
    precision, recall = shared / len(system_set), shared / len(gold_set)
    return QuestionScore(precision, recall, _harmonic(precision, recall), **sizes)


def aggregate(scores: Iterable[QuestionScore]) -> QaldScores:
    """Macro (F1 QALD and the mean per-question F1) and micro figures over questions."""
    scores = list(scores)
    if not scores:
        raise ValueError("no questions to score")
    count = len(scores)
    precision = sum(score.precision for score in scores) / count
    recall = sum(score.recall for score in scores) / count
    shared = sum(score.shared for score in scores)
    system = sum(score.system for score in scores)
    gold = sum(score.gold for score in scores)
    micro_precision = shared / system if system else 1.0
    micro_recall = shared / gold if gold else 1.0
    return QaldScores(questions=count, macro_precision=precision, macro_recall=recall,
                      f1_qald=_harmonic(precision, recall), macro_f1=sum(score.f1 for score in scores) / count,
                      micro_precision=micro_precision, micro_recall=micro_recall,
                      micro_f1=_harmonic(micro_precision, micro_recall))
