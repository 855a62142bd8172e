"""KQA Pro's answers: read from a query's result as KQA Pro writes them, judged as its evaluation judges them.

KQA Pro scores a prediction by one string per question.  The headline
reading is its SPARQL engine's (:mod:`harness.kqapro_engine`): the kind of
answer from the query's form, an answer only from a result of one row.  The
project's reading (:func:`answer_text`) is more lenient, a labelled second
figure: the first column of the first row of any result, each term read as
what it is: an entity or concept is its name, a value node its value (a date
``yyyy-mm-dd``, a year, a string, or a number with its unit, ``"1"`` meaning
none, an integral number without decimals), a literal itself, a predicate
its name with spaces, an ``ASK`` ``yes`` or ``no`` (:func:`term_text`).  Its evaluation
(``evaluate.py`` of the baselines) counts a prediction right when, after
writing integral numbers without decimals, it equals the gold answer, or
both read as dates or years that agree (a date and a year agree on the
year): :func:`same_answer`.

The dataset's questions are typed by the last function of their KoPL
program, the question types of the paper's Table 3
(:data:`QUESTION_TYPES`), and by the reasoning its evaluation reports
(multi-hop, qualifier, comparison, logical, count, verify, zero-shot):
:func:`reasoning`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from tqdm import tqdm

import pyoxigraph as ox

from agent.kb.base import Term
from agent.trace import AgentResult
from agent.kb.local import LocalKB
from agent.kb.local.kqapro import DATE, NAME, UNIT, VALUE, YEAR
from harness.datasets import DATASETS, Example
from harness.kqapro_engine import NO_ANSWER, number_text, read_answer

XSD = "http://www.w3.org/2001/XMLSchema#"
#: The number of questions of each split of the release (the paper's counts): a run over fewer is no
#: run over the split.
PUBLISHED_QUESTIONS = DATASETS["kqapro"].published
#: The two settings of the benchmark: the answer is free text, or one of the question's ten choices.
SETTINGS = ("open", "choices")
#: The paper's question types (Table 3), by the last function of a question's program.
QUESTION_TYPES = {
    "What": "Query Name", "Count": "Count", "QueryAttr": "Query Attribute",
    "QueryAttrUnderCondition": "Query Attribute", "QueryRelation": "Query Relation",
    "SelectBetween": "Select Between", "SelectAmong": "Select Among", "VerifyStr": "Verify",
    "VerifyNum": "Verify", "VerifyYear": "Verify", "VerifyDate": "Verify",
    "QueryAttrQualifier": "Query Attribute Qualifier", "QueryRelationQualifier": "Query Relation Qualifier",
}
#: The reasoning KQA Pro's evaluation reports, by the functions a program uses (``zero-shot`` aside).
REASONING = {
    "multi-hop": lambda f: f == "Relate" or f.startswith("Filter"),
    "qualifier": lambda f: f in ("QFilterStr", "QFilterNum", "QFilterYear", "QFilterDate", "QueryAttrUnderCondition",
                                 "QueryAttrQualifier", "QueryRelationQualifier"),
    "comparison": lambda f: f in ("SelectBetween", "SelectAmong"),
    "logical": lambda f: f in ("And", "Or"),
    "count": lambda f: f == "Count",
    "verify": lambda f: f in ("VerifyStr", "VerifyNum", "VerifyYear", "VerifyDate"),
}


def question_type(functions: list[str]) -> str:
    """The Table 3 type of a question whose program calls *functions* ("unknown" without a program: test)."""
    return QUESTION_TYPES.get(functions[-1], functions[-1]) if functions else "unknown"


def reasoning(functions: list[str], answer: str | None = None, train_answers: set[str] | None = None) -> list[str]:
    """The reasoning skills a question needs, as KQA Pro's evaluation counts them; ``zero-shot`` when its
    answer is no answer of the training set (known only with *train_answers*)."""
    skills = [name for name, uses in REASONING.items() if any(uses(function) for function in functions)]
    if answer is not None and train_answers is not None and answer not in train_answers:
        skills.append("zero-shot")
    return skills


# -- the answer string ---------------------------------------------------------------------------

def _literal_text(value: str, datatype: str) -> str:
    if datatype in (XSD + "double", XSD + "float", XSD + "decimal"):
        try:
            return number_text(float(value))
        except (ValueError, OverflowError):
            return value
    if datatype == XSD + "boolean":
        return "yes" if value == "true" else "no"
    return value


def term_text(term: Term, kb: LocalKB) -> str:
    """One result term as KQA Pro's engine writes the answer it stands for."""
    value = term.get("value", "")
    if term.get("type") != "uri":
        return _literal_text(value, term.get("datatype", ""))
    found: dict[str, Any] = {}
    for predicate, obj in kb.outgoing(value):
        found.setdefault(predicate, obj)
    if NAME in found:
        return found[NAME].value
    if DATE in found:
        return found[DATE].value
    if YEAR in found:
        return found[YEAR].value
    if VALUE in found:
        text = _literal_text(found[VALUE].value, found[VALUE].datatype.value)
        if UNIT in found and isinstance(found[VALUE], ox.Literal) and found[VALUE].datatype.value == XSD + "double":
            unit = found[UNIT].value
            return text if unit == "1" else f"{text} {unit}"
        return text
    name = value[len(kb.graph.base):] if kb.graph.base and value.startswith(kb.graph.base) else value
    return name.replace("_", " ")


def answer_text(answer: list[dict[str, Term]] | bool | None, variables: list[str], kb: LocalKB) -> str:
    """The answer string of a query's result: ``yes``/``no``, else the first column of its first row ("" when
    there is none)."""
    if isinstance(answer, bool):
        return "yes" if answer else "no"
    if not answer:
        return ""
    row = answer[0]
    name = next((variable for variable in variables if variable in row), next(iter(row), None))
    return term_text(row[name], kb) if name is not None else ""


# -- judging ---------------------------------------------------------------------------------------

def _whole_numbers(text: str) -> str:
    """``100.0 meters`` as ``100 meters``: KQA Pro's evaluation writes a leading number so before comparing."""
    number, *unit = text.split() or [""]
    try:
        value: float | int = float(number)
        if value - int(value) < 1e-5:
            value = int(value)
    except (ValueError, OverflowError):
        return text
    return " ".join([str(value), *unit])


def _date_or_year(text: str) -> date | int:
    parts = text.split("-")
    if len(parts) == 3:
        return date(int(parts[0]), int(parts[1]), int(parts[2]))
    return int(text)


def _same_time(first: str, second: str) -> bool:
    try:
        a, b = _date_or_year(first), _date_or_year(second)
    except (ValueError, OverflowError):
        return False
    if isinstance(a, date) and isinstance(b, date):
        return a == b
    return (a.year if isinstance(a, date) else a) == (b.year if isinstance(b, date) else b)


def same_answer(gold: str, predicted: str) -> bool:
    """KQA Pro's judgement: equal once integral numbers lose their decimals, or equal as dates or years."""
    gold, predicted = _whole_numbers(gold), _whole_numbers(predicted)
    return _same_time(gold, predicted) or gold == predicted


def choose(answer: str, choices: list[str]) -> str | None:
    """The multiple-choice setting: the choice that *answer* is, judged as KQA Pro judges; ``None`` for none."""
    return next((choice for choice in choices if same_answer(choice, answer)), None)


def with_choices(question: str, choices: list[str]) -> str:
    """The question as the agent reads it in the multiple-choice setting: one line, its ten choices after it."""
    return f"{question} (Answer with one of: {'; '.join(choices)}.)"


# -- the validity check ----------------------------------------------------------------------------

@dataclass
class Disagreement:
    index: str
    question: str
    gold: str
    found: str
    why: str


@dataclass
class Validity:
    """How many gold queries of a split give their gold answer on the store."""

    checked: int = 0
    agreed: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    #: Disagreements by kind: a query error, not one row, no reading (the engine reads nothing), another answer.
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def share(self) -> float:
        return 100.0 * self.agreed / self.checked if self.checked else 0.0


def validate(examples: Iterable[Example], kb: LocalKB, progress: bool = True) -> Validity:
    """Run every gold query with a gold answer on *kb*; count those whose answer, as KQA Pro's engine reads it,
    agrees."""
    validity = Validity()
    pending = [example for example in examples if example.gold_sparql and example.answer is not None]
    for example in tqdm(pending, desc="gold queries", unit="query", disable=not progress):
        validity.checked += 1
        result = kb.execute(example.gold_sparql)
        if result.status.ran:
            answer = result.boolean if result.boolean is not None else result.bindings
            reading = read_answer(example.gold_sparql, answer, result.variables, kb)
            found, why = reading.answer, reading.why
        else:
            found, why = None, f"query {result.status}: {result.message}"
        if found is not None and same_answer(example.answer, found):
            validity.agreed += 1
            continue
        kind = ("another answer" if found is not None else "query failed" if why.startswith("query")
                else "not one row" if why.endswith("rows, not one") else "no reading")
        validity.kinds[kind] += 1
        validity.disagreements.append(Disagreement(example.id, example.question, example.answer, found or "",
                                                   why or "another answer"))
    return validity


# -- runs ------------------------------------------------------------------------------------------

def result_record(example: Example, result: AgentResult, kb: LocalKB, setting: str = "open", part: int = 0,
                  train_answers: set[str] | None = None) -> dict[str, Any]:
    """One line of a KQA Pro run's ``results.jsonl``: the answer string KQA Pro's engine reads from the final
    query (``engine_answer``, ``None`` when it reads none, and why), the project's more lenient reading
    (``answer``), in the multiple-choice setting the choice each is, and whether each is right (``None``
    without a gold answer)."""
    engine = read_answer(result.final_sparql, result.answer, result.variables, kb)
    record = {
        "id": example.id, "question": example.question, "source": example.source, "split": example.split,
        "part": part, "setting": setting, "question_type": question_type(example.functions),
        "reasoning": reasoning(example.functions, example.answer, train_answers),
        "gold_sparql": example.gold_sparql, "gold_answer": example.answer, "choices": example.choices,
        "predicted_sparql": result.final_sparql, "predicted_answer": result.answer,
        "predicted_variables": result.variables, "engine_answer": engine.answer, "engine_note": engine.why,
        "answer": answer_text(result.answer, result.variables, kb),
        "steps": len(result.path), "actions": dict(Counter(step.action for step in result.path)),
        "rolled_back": sum(step.rolled_back for step in result.steps), "stop_reason": result.stop_reason,
        "model": result.model, "usage": result.usage.to_dict(),
    }
    return score_record(record)


def prediction(record: dict[str, Any], lenient: bool = False) -> str:
    """What a question's run answers, by the engine's reading (``None`` written as the baselines write it), or
    with *lenient* the project's: the choice in the multiple-choice setting (the free answer when it is none of
    them), else the free answer."""
    if lenient:
        free = record.get("answer") or ""
    else:
        free = record.get("engine_answer") or NO_ANSWER
    if record.get("setting") == "choices":
        return choose(free, record.get("choices") or []) or free
    return free


def judged(record: dict[str, Any]) -> bool | None:
    """Whether a line's prediction, as KQA Pro's engine reads it, is right; ``None`` without a public answer or
    for a line recorded before the engine's reading was (it has no ``engine_answer``)."""
    gold = record.get("gold_answer")
    return None if gold is None or "engine_answer" not in record else same_answer(gold, prediction(record))


def score_record(record: dict[str, Any]) -> dict[str, Any]:
    """Judge a record's prediction against its gold answer: ``correct`` by the engine's reading (and EM, F1, the
    same 0 or 1, which the reports and the paired test read), ``correct_lenient`` by the project's; ``None`` for
    a question without a public answer, and ``correct`` also for a line recorded before the engine's reading
    was (it has no ``engine_answer``)."""
    gold = record.get("gold_answer")
    correct = judged(record)
    record["correct"] = correct
    record["correct_lenient"] = None if gold is None else same_answer(gold, prediction(record, lenient=True))
    record["em"] = record["f1"] = None if correct is None else float(correct)
    return record


def leaderboard_lines(records: list[dict[str, Any]], count: int) -> tuple[list[str], list[str]]:
    """The predictions as KQA Pro's leaderboard takes them, one a line in the split's order, and the ids of
    questions without one (their lines are empty)."""
    by_id = {int(record["id"]): prediction(record) for record in records}
    missing = [str(index) for index in range(count) if index not in by_id]
    return [" ".join(by_id.get(index, "").split()) for index in range(count)], missing
