"""Why a question scored what it scored: one diagnosis per result line, from what the line records.

=================  ==========================================================================
diagnosis          the run ...
=================  ==========================================================================
correct            answered with exactly the gold answer (F1 1)
partial rows       answered with some of the gold answer (0 < F1 < 1)
wrong rows         answered, with none of it (F1 0; a wrong yes/no too)
empty result       ended on a query that returned nothing (or its last query did)
syntax error       ended without an answer, its last query refused as malformed
timeout            ended without an answer, its last query past the time limit
no query           ended without an answer and without a query that ran (or its last one failed otherwise)
cannot answer      was ended by the model saying Wikidata cannot answer the question
model failure      was ended by the model's endpoint (a prompt longer than its context), by replies
                   without a usable action, or by steps that learnt nothing new (``no_progress``: the
                   model could not make use of the graph)
=================  ==========================================================================

Runs the model or the knowledge base could not finish are not scored at all
(``failures.jsonl``), so they get no diagnosis.
"""

from __future__ import annotations

from typing import Any

from agent.trace import StopReason

DIAGNOSES = ("correct", "partial rows", "wrong rows", "empty result", "syntax error", "timeout", "no query",
             "cannot answer", "model failure")
#: Stop reasons where the model's endpoint, replies without a usable action, or steps that learnt nothing (the model
#: could not make use of the graph) ended a run that is still scored.
MODEL_FAILURES = (StopReason.CONTEXT_LENGTH, StopReason.NO_USABLE_ACTION, StopReason.NO_PROGRESS)
_BY_QUERY_STATUS = {"empty": "empty result", "syntax_error": "syntax error", "timeout": "timeout"}


def diagnose(record: dict[str, Any]) -> str:
    """The diagnosis of a scored line: from its ``f1``, stop reason, predicted answer and last query's status."""
    if record.get("stop_reason") == StopReason.CANNOT_ANSWER:
        return "cannot answer"
    if record.get("stop_reason") in MODEL_FAILURES and record.get("predicted_answer") in (None, []):
        return "model failure"
    answer = record.get("predicted_answer")
    if answer is None:
        return _BY_QUERY_STATUS.get(record.get("last_query_status") or "", "no query")
    if record["f1"] >= 1.0:
        return "correct"
    if answer == []:
        return "empty result"
    return "wrong rows" if record["f1"] <= 0.0 else "partial rows"
