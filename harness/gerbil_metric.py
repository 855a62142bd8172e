"""QALD's figures as GERBIL QA computes them: the figures QALD's leaderboards print, under GERBIL's names.

Read from GERBIL's QA branch (``QAUtils.translateQuestion``,
``QAMatchingsCounter``, ``FMeasureCalculator``) and from the QALD-JSON
loader it uses (NLIWOD's qa.commons, ``EJQuestionFactory``):

* **Answer sets.** An answer is the set of the bare ``value`` strings of
  every cell of every column (type, language and datatype are dropped, so
  ``"3"^^xsd:integer`` equals ``"3"`` and ``"Paris"@en`` equals
  ``"Paris"@fr``; a ``?xLabel`` column counts like any other); an ASK
  answer is the one string ``"true"`` or ``"false"``; duplicates collapse.
* **Resources or strings.** When every value of a set looks like an IRI
  (GERBIL's pattern ``[^\\s]+:[^\\s]+`` and a ``java.net.URI`` that parses),
  the set is read as resources, otherwise as strings.  Strings are matched
  as strings; the system's strings that match none are then turned into
  resources and matched against the gold's resources.  So a system that
  answers with resources only, against a gold read as strings (say an IRI
  column beside a literal one), matches nothing: every gold value is a
  false negative and every system value a false positive.
* **Per question** (true positives, false positives, false negatives):
  ``Macro/Micro Precision/Recall/F1`` use GERBIL's ``calculateMeasures``:
  all 1 when there is nothing to find and nothing was found, all 0 when
  nothing was right; ``Macro F1 QALD`` uses ``calculateMeasuresQALD``,
  which differs in one case: an empty answer to a non-empty gold (a
  declined question) is precision 1, recall 0.  Macro figures are means
  over questions; Micro figures are computed once from the summed counts;
  **Macro F1 QALD** is the harmonic mean of the QALD-rule mean precision and
  mean recall (NaN, as in Java, when both are 0).

What GERBIL does and this module does not: a system string that matches no
gold string is also looked up as an English label on DBpedia's endpoint,
and each resource found counts as a false positive in its place; where
DBpedia has no such label (numbers, dates, and most of Wikidata's answers)
the string itself counts once, as here.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from harness.metrics import Answer

#: Java's ``\s``: ASCII whitespace only.
_JAVA_SPACE = frozenset(" \t\n\x0b\f\r")

_ALPHA = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ALPHANUM = _ALPHA | frozenset("0123456789")
_SCHEME = _ALPHANUM | frozenset("+-.")
_UNRESERVED = _ALPHANUM | frozenset("_-!.~'()*")
_URIC = _UNRESERVED | frozenset(";/?:@&=+$,[]")
_PATH = _UNRESERVED | frozenset(":@&=+$,;/")
_AUTHORITY = _UNRESERVED | frozenset("$,;:@&=+[]")
_HEX = frozenset("0123456789abcdefABCDEF")


def _chars_allowed(text: str, allowed: frozenset[str]) -> bool:
    """``java.net.URI``'s check of one component: allowed ASCII, ``%XX`` escapes, and characters past ASCII that
    are neither spaces nor ISO controls."""
    i = 0
    while i < len(text):
        char = text[i]
        if char == "%":
            if i + 2 >= len(text) or text[i + 1] not in _HEX or text[i + 2] not in _HEX:
                return False
            i += 3
            continue
        if char in allowed:
            i += 1
            continue
        if ord(char) > 0x9F and not unicodedata.category(char).startswith("Z"):
            i += 1
            continue
        return False
    return True


def _hierarchical(text: str) -> bool:
    """A hierarchical part (``//authority/path?query``, or a path alone) as ``java.net.URI`` parses it."""
    rest = text
    if rest.startswith("//"):
        end = next((i for i, char in enumerate(rest[2:], 2) if char in "/?#"), len(rest))
        authority = rest[2:end]
        if not authority and end == len(rest):
            return False
        if not _chars_allowed(authority, _AUTHORITY):
            return False
        rest = rest[end:]
    path, _, query = rest.partition("?")
    return _chars_allowed(path, _PATH) and ("?" not in rest or _chars_allowed(query, _URIC))


def java_uri_parses(text: str) -> bool:
    """Whether ``java.net.URI.create`` accepts *text* (its grammar, RFC 2396 with RFC 2732's brackets)."""
    body, _, fragment = text.partition("#")
    if "#" in text and not _chars_allowed(fragment, _URIC):
        return False
    first = next((i for i, char in enumerate(body) if char in ":/?"), -1)
    if first >= 0 and body[first] == ":":
        scheme, rest = body[:first], body[first + 1:]
        if not scheme or scheme[0] not in _ALPHA or any(char not in _SCHEME for char in scheme):
            return False
        if rest.startswith("/"):
            return _hierarchical(rest)
        return bool(rest) and _chars_allowed(rest, _URIC)
    return _hierarchical(body)


def _has_iri_pattern(value: str) -> bool:
    """``QAUtils.IRI_PATTERN``, ``[^\\s]+:[^\\s]+``, found in *value*: a colon with no Java space on either side,
    tested in one pass (the regular expression backtracks quadratically on a long value without one)."""
    return any(char == ":" and value[i - 1] not in _JAVA_SPACE and value[i + 1] not in _JAVA_SPACE
               for i, char in enumerate(value[1:-1], 1))


def looks_like_iri(value: str) -> bool:
    """GERBIL's test of a gold or system value for being a resource (``QAUtils.transformToAnnotations``)."""
    return _has_iri_pattern(value) and java_uri_parses(value)


def answer_values(answer: Answer) -> frozenset[str]:
    """An answer as qa.commons reads it from QALD-JSON: every cell's bare value; ``"true"``/``"false"``."""
    if answer is None:
        return frozenset()
    if isinstance(answer, bool):
        return frozenset(["true" if answer else "false"])
    return frozenset(term.get("value", "") for row in answer for term in row.values())


@dataclass(frozen=True)
class Counts:
    """One question's matches, as GERBIL's ``EvaluationCounts``."""

    true_positives: int
    false_positives: int
    false_negatives: int


def score(gold: Answer, system: Answer) -> Counts:
    """GERBIL's ``QAMatchingsCounter.countMatchings`` on one question (see the module's docstring); the scorers'
    one call order, gold first."""
    system_values, gold_values = answer_values(system), answer_values(gold)
    gold_are_resources = all(looks_like_iri(value) for value in gold_values)
    system_are_resources = all(looks_like_iri(value) for value in system_values)
    if system_are_resources and not gold_are_resources:
        return Counts(0, len(system_values), len(gold_values))
    shared = len(system_values & gold_values)
    return Counts(shared, len(system_values) - shared, len(gold_values) - shared)


def measures(counts: Counts) -> tuple[float, float, float]:
    """Precision, recall and F1 by GERBIL's ``calculateMeasures``."""
    tp, fp, fn = counts.true_positives, counts.false_positives, counts.false_negatives
    if tp == 0:
        return (1.0, 1.0, 1.0) if fp == 0 and fn == 0 else (0.0, 0.0, 0.0)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return precision, recall, 2 * precision * recall / (precision + recall)


def qald_measures(counts: Counts) -> tuple[float, float, float]:
    """Precision, recall and F1 by GERBIL's ``calculateMeasuresQALD``: a declined question is precision 1."""
    if counts.true_positives == 0 and counts.false_positives == 0 and counts.false_negatives > 0:
        return 1.0, 0.0, 0.0
    return measures(counts)


@dataclass(frozen=True)
class GerbilScores:
    """GERBIL QA's figures for a run, each a fraction in [0, 1], named as GERBIL names them."""

    questions: int
    macro_precision: float
    macro_recall: float
    macro_f1: float
    #: "Macro F1 QALD": the harmonic mean of the QALD-rule mean precision and mean recall.
    macro_f1_qald: float
    micro_precision: float
    micro_recall: float
    micro_f1: float


#: GERBIL's names of the figures, in the order its result table shows them.
NAMES = {"micro_f1": "Micro F1 score", "micro_precision": "Micro Precision", "micro_recall": "Micro Recall",
         "macro_f1": "Macro F1 score", "macro_precision": "Macro Precision", "macro_recall": "Macro Recall",
         "macro_f1_qald": "Macro F1 QALD"}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def gerbil_scores(counts: Iterable[Counts]) -> GerbilScores:
    """GERBIL's ``FMeasureCalculator`` over the questions' counts."""
    counts = list(counts)
    if not counts:
        raise ValueError("no questions to score")
    per_question = [measures(count) for count in counts]
    qald = [qald_measures(count) for count in counts]
    precision, recall = _mean([m[0] for m in qald]), _mean([m[1] for m in qald])
    f1_qald = 2 * precision * recall / (precision + recall) if precision + recall else math.nan
    micro = measures(Counts(sum(c.true_positives for c in counts), sum(c.false_positives for c in counts),
                            sum(c.false_negatives for c in counts)))
    return GerbilScores(len(counts), _mean([m[0] for m in per_question]), _mean([m[1] for m in per_question]),
                        _mean([m[2] for m in per_question]), f1_qald, *micro)
