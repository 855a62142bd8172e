"""The TEXT2SPARQL challenge's set-F1, computed as its official client (``text2sparql-client`` 2.1.0) computes it.

The challenge scores with ``text2sparql query`` (run the gold and the
system's queries, turn each result into a set) and ``text2sparql evaluate``
(trec_eval's ``set_P``, ``set_recall`` and ``set_F`` per question through
pytrec_eval, then their mean).  Its reading of a result, which this module
follows rule for rule:

* a result is the set of the bare ``value`` strings of every cell of every
  column: type, language and datatype are dropped, so ``"3"^^xsd:integer``,
  the plain ``"3"`` and ``<3>`` are one value, and duplicates count once;
* an ASK result becomes the single value ``"true"``, relevant when the gold
  says true and judged not relevant when it says false: a gold *false* scores
  0 whatever the answer, and against a gold *true* any boolean answer scores 1;
* a query that failed, or was never given, is an empty result.

Per question, with R the gold values judged relevant and S the system's:
precision |R∩S|/|S|, recall |R∩S|/|R|, F1 their harmonic mean, all 0 when
R∩S is empty.  A question whose gold result has no value at all is left out
of the mean (pytrec_eval returns nothing for it), so a system gains nothing
there whatever it answers.  The figure is the mean of the per-question F1
(``average.set_F``); with no question left it is undefined (``None``).

The client also reports nDCG for questions marked ``RESULT_ORDER_MATTERS``
and a combined ``set_F_ndcg``; those are not computed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SparqlResults = Mapping[str, Any]
#: The client release whose reading this module follows.
CLIENT = "text2sparql-client 2.1.0"


@dataclass(frozen=True)
class SetScore:
    """One question's set precision, recall and F1 (trec_eval's ``set_P``, ``set_recall``, ``set_F``)."""

    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class SetScores:
    """A dataset's mean set precision, recall and F1 (the client's ``average``), and how many questions were left
    out for want of a gold value; the means are ``None`` when no question is left."""

    questions: int
    left_out: int
    precision: float | None
    recall: float | None
    f1: float | None


def judged_values(results: SparqlResults) -> dict[str, int]:
    """A SPARQL JSON result as the client reads it: each bare value with its relevance (1, or 0 for a false ASK)."""
    if "boolean" in results:
        return {"true": 1 if results["boolean"] else 0}
    bindings = results.get("results", {}).get("bindings", [])
    return {row[name]["value"]: 1 for name in results.get("head", {}).get("vars", []) for row in bindings
            if name in row}


def score(gold: SparqlResults, predicted: SparqlResults) -> SetScore | None:
    """One question's set figures, or ``None`` when the gold result has no value (the client leaves it out)."""
    judged = judged_values(gold)
    if not judged:
        return None
    relevant = {value for value, relevance in judged.items() if relevance > 0}
    retrieved = judged_values(predicted)
    hits = sum(1 for value in retrieved if value in relevant)
    if not hits:
        return SetScore(0.0, 0.0, 0.0)
    precision, recall = hits / len(retrieved), hits / len(relevant)
    return SetScore(precision, recall, 2.0 * precision * recall / (precision + recall))


def aggregate(scores: Iterable[SetScore | None]) -> SetScores:
    """The mean of each figure over the questions the client keeps."""
    scores = list(scores)
    kept = [score for score in scores if score is not None]
    if not kept:
        return SetScores(len(scores), len(scores), None, None, None)
    count = len(kept)
    return SetScores(len(scores), len(scores) - count, sum(score.precision for score in kept) / count,
                     sum(score.recall for score in kept) / count, sum(score.f1 for score in kept) / count)
