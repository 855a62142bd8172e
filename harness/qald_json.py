"""Export a run as QALD-JSON, the format GERBIL's QALD experiments read.

Each question carries its text in the run's language, the system's query and
its answer as SPARQL JSON results (a boolean as ``{"head": {}, "boolean": …}``,
no answer as an empty result), every column kept: GERBIL scores every column,
and so GERBIL's figures for the file are the ones the report prints
(:mod:`harness.gerbil_metric`).
"""

from __future__ import annotations

from typing import Any


def qald_answer(answer: Any, variables: list[str] | None = None) -> dict[str, Any]:
    """One SPARQL JSON result object for a predicted answer (rows, a boolean, or ``None``)."""
    if isinstance(answer, bool):
        return {"head": {}, "boolean": answer}
    rows = answer or []
    names = list(variables or _variables(rows))
    bindings = [{name: row[name] for name in names if name in row} for row in rows]
    return {"head": {"vars": names}, "results": {"bindings": bindings}}


def _variables(rows: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def to_qald_json(records: list[dict[str, Any]], dataset_id: str, language: str) -> dict[str, Any]:
    """The run's *records* (lines of ``results.jsonl``) as one QALD-JSON document."""
    questions = []
    for record in records:
        questions.append({
            "id": record["id"],
            "question": [{"language": language, "string": record["question"]}],
            "query": {"sparql": record.get("predicted_sparql") or ""},
            "answers": [qald_answer(record.get("predicted_answer"), record.get("predicted_variables"))],
        })
    return {"dataset": {"id": dataset_id}, "questions": questions}
