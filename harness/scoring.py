"""One shape for every scorer, so a run's dataset, not its name, says which figures it gets.

Every scorer has the same three calls, gold first everywhere:

* ``score(gold, predicted)``: one question's score, from the two answers as
  that scorer reads them (SPARQL JSON terms, bare values, answer strings);
* ``score_record(line)``: the same from a line of ``results.jsonl``;
* ``aggregate(scores)``: a run's figures, under the official names
  (``figures``).

========================  ===================================  ==========================================
name                      figures                              module (its reading of an answer)
========================  ===================================  ==========================================
``row_major``             SPINACH's EM and F1                  :mod:`harness.metrics`
``qald``                  the stricter QALD variant            :mod:`harness.qald_metric`
``gerbil``                GERBIL QA's Macro/Micro figures      :mod:`harness.gerbil_metric`
``text2sparql``           the TEXT2SPARQL client's set F1      :mod:`harness.text2sparql_metric`
``kqapro``                KQA Pro's accuracy                   :mod:`harness.kqapro` (its engine's reading)
========================  ===================================  ==========================================

A dataset's record (:class:`harness.datasets.Dataset`) lists its scorers by
these names, the headline one first; the headline scorer also writes its
figures into each results line as the run finishes (:meth:`judge`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Protocol, runtime_checkable

from harness import gerbil_metric, kqapro, metrics, qald_metric, text2sparql_metric
from harness.datasets import Dataset
from harness.diagnostics import diagnose
from harness.qald_json import qald_answer

Record = dict[str, Any]


@runtime_checkable
class Scorer(Protocol):
    """What every scorer offers (see the module's docstring)."""

    #: Its name in a dataset's record and in a run's summary.
    name: ClassVar[str]
    #: Its figures' official names, by the field of its aggregate that holds each.
    figures: ClassVar[Mapping[str, str]]

    def score(self, gold: Any, predicted: Any) -> Any: ...

    def score_record(self, record: Record) -> Any: ...

    def aggregate(self, scores: Iterable[Any]) -> Any: ...


@runtime_checkable
class HeadlineScorer(Scorer, Protocol):
    """A dataset's first scorer, which also writes its per-question figures into each results line."""

    def judge(self, record: Record) -> Record: ...


@dataclass(frozen=True)
class RowMajor:
    """SPINACH's row-major EM and F1 (:mod:`harness.metrics`); the results line also gets the QALD variant's
    per-question figures, its post-processed answer's F1 and EM, and its diagnosis."""

    numbers_by_value: bool = False
    name: ClassVar[str] = "row_major"
    figures: ClassVar[Mapping[str, str]] = {"em": "EM", "f1": "F1"}

    def score(self, gold: metrics.Answer, predicted: metrics.Answer) -> metrics.RowMajorScore:
        return metrics.score(gold, predicted, self.numbers_by_value)

    def score_record(self, record: Record) -> metrics.RowMajorScore:
        return metrics.RowMajorScore(float(record["f1"]), bool(record["em"])) if "f1" in record \
            else self.score(record["gold_answer"], record["predicted_answer"])

    def aggregate(self, scores: Iterable[metrics.RowMajorScore]) -> metrics.RowMajorFigures:
        return metrics.aggregate(scores)

    def judge(self, record: Record) -> Record:
        gold = record["gold_answer"]
        scored = self.score(gold, record["predicted_answer"])
        record["f1"], record["em"] = scored.f1, scored.em
        record["qald"] = asdict(QaldVariant(self.numbers_by_value).score(gold, record["predicted_answer"]))
        if record.get("postprocessed"):
            post = record["postprocessed"]
            again = self.score(gold, post["answer"])
            post["f1"], post["em"] = again.f1, again.em
        record["diagnosis"] = diagnose(record)
        return record


@dataclass(frozen=True)
class QaldVariant:
    """The project's stricter reading of QALD's figures (:mod:`harness.qald_metric`)."""

    numbers_by_value: bool = False
    name: ClassVar[str] = "qald"
    figures: ClassVar[Mapping[str, str]] = {"f1_qald": "F1 QALD", "macro_f1": "Macro F1",
                                            "micro_f1": "Micro F1"}

    def score(self, gold: metrics.Answer, predicted: metrics.Answer) -> qald_metric.QuestionScore:
        return qald_metric.score(gold, predicted, self.numbers_by_value)

    def score_record(self, record: Record) -> qald_metric.QuestionScore:
        """The figures the run recorded for the line, else computed from its answers."""
        if "qald" in record:
            return qald_metric.QuestionScore(**record["qald"])
        return self.score(record["gold_answer"], record["predicted_answer"])

    def aggregate(self, scores: Iterable[qald_metric.QuestionScore]) -> qald_metric.QaldScores:
        return qald_metric.aggregate(scores)


@dataclass(frozen=True)
class Gerbil:
    """GERBIL QA's figures, as QALD's leaderboards print them (:mod:`harness.gerbil_metric`)."""

    name: ClassVar[str] = "gerbil"
    figures: ClassVar[Mapping[str, str]] = gerbil_metric.NAMES

    def score(self, gold: metrics.Answer, predicted: metrics.Answer) -> gerbil_metric.Counts:
        return gerbil_metric.score(gold, predicted)

    def score_record(self, record: Record) -> gerbil_metric.Counts:
        return self.score(record["gold_answer"], record["predicted_answer"])

    def aggregate(self, scores: Iterable[gerbil_metric.Counts]) -> gerbil_metric.GerbilScores:
        return gerbil_metric.gerbil_scores(scores)


@dataclass(frozen=True)
class Text2Sparql:
    """The TEXT2SPARQL challenge's set figures, as its client computes them (:mod:`harness.text2sparql_metric`);
    ``score`` takes SPARQL JSON results, ``score_record`` makes them from a line's answers."""

    name: ClassVar[str] = "text2sparql"
    figures: ClassVar[Mapping[str, str]] = {"f1": "average.set_F", "precision": "average.set_P",
                                            "recall": "average.set_recall"}

    def score(self, gold: text2sparql_metric.SparqlResults,
              predicted: text2sparql_metric.SparqlResults) -> text2sparql_metric.SetScore | None:
        return text2sparql_metric.score(gold, predicted)

    def score_record(self, record: Record) -> text2sparql_metric.SetScore | None:
        return self.score(qald_answer(record["gold_answer"]),
                          qald_answer(record["predicted_answer"], record.get("predicted_variables")))

    def aggregate(self, scores: Iterable[text2sparql_metric.SetScore | None]) -> text2sparql_metric.SetScores:
        return text2sparql_metric.aggregate(scores)


@dataclass(frozen=True)
class KqaproFigures:
    """A KQA Pro run's accuracy (``None`` when no question has a public answer) and how many were judged."""

    questions: int
    judged: int
    accuracy: float | None


@dataclass(frozen=True)
class KqaproAccuracy:
    """KQA Pro's accuracy: the answer its engine reads from the final query, judged as its evaluation judges
    (:mod:`harness.kqapro`); ``score`` takes the gold and predicted answer strings."""

    name: ClassVar[str] = "kqapro"
    figures: ClassVar[Mapping[str, str]] = {"accuracy": "accuracy"}

    def score(self, gold: str, predicted: str) -> bool:
        return kqapro.same_answer(gold, predicted)

    def score_record(self, record: Record) -> bool | None:
        """Right or wrong by the engine's reading; ``None`` without a public answer, or for a line recorded
        before the engine's reading was."""
        return kqapro.judged(record)

    def aggregate(self, scores: Iterable[bool | None]) -> KqaproFigures:
        scores = list(scores)
        judged = [score for score in scores if score is not None]
        return KqaproFigures(len(scores), len(judged), sum(judged) / len(judged) if judged else None)

    def judge(self, record: Record) -> Record:
        return kqapro.score_record(record)


#: Every scorer by its name, made with the run's reading of numbers (for those that have one).
SCORERS = {scorer.name: scorer for scorer in (RowMajor, QaldVariant, Gerbil, Text2Sparql, KqaproAccuracy)}


def scorer(name: str, numbers_by_value: bool = False) -> Scorer:
    """The scorer called *name*; *numbers_by_value* for those that compare SPARQL literals."""
    made = SCORERS[name]
    return made(numbers_by_value=numbers_by_value) if "numbers_by_value" in {f.name for f in fields(made)} \
        else made()


def scorers_of(dataset: Dataset, numbers_by_value: bool = False) -> list[Scorer]:
    """*dataset*'s scorers, the headline one first."""
    return [scorer(name, numbers_by_value) for name in dataset.scorers]


def headline(dataset: Dataset, numbers_by_value: bool = False) -> HeadlineScorer:
    """The scorer whose figures each results line of a run over *dataset* carries."""
    first = scorer(dataset.scorers[0], numbers_by_value)
    if not isinstance(first, HeadlineScorer):
        raise TypeError(f"{dataset.name}'s first scorer, {first.name}, cannot judge a results line")
    return first


def figures(scorer: Scorer, records: Iterable[Record]) -> Any:
    """*scorer*'s figures over the results lines *records*."""
    return scorer.aggregate(scorer.score_record(record) for record in records)
