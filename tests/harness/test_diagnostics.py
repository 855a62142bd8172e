"""Each scored answer gets the one diagnosis a researcher would give it, from what its result line records."""

import pytest

from harness.diagnostics import DIAGNOSES, diagnose

ROWS = [{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q1"}}]


@pytest.mark.parametrize("line, diagnosis", [
    ({"f1": 1.0, "stop_reason": "stop", "predicted_answer": ROWS}, "correct"),
    ({"f1": 1.0, "stop_reason": "stop", "predicted_answer": True}, "correct"),
    ({"f1": 0.4, "stop_reason": "stop", "predicted_answer": ROWS}, "partial rows"),
    ({"f1": 0.0, "stop_reason": "stop", "predicted_answer": False}, "wrong rows"),
    ({"f1": 0.0, "stop_reason": "repeated_stop", "predicted_answer": []}, "empty result"),
    ({"f1": 0.0, "stop_reason": "path_limit", "predicted_answer": None, "last_query_status": "empty"},
     "empty result"),
    ({"f1": 0.0, "stop_reason": "stop", "predicted_answer": None, "last_query_status": "syntax_error"},
     "syntax error"),
    ({"f1": 0.0, "stop_reason": "action_limit", "predicted_answer": None, "last_query_status": "timeout"},
     "timeout"),
    ({"f1": 0.0, "stop_reason": "path_limit", "predicted_answer": None, "last_query_status": None}, "no query"),
    ({"f1": 0.0, "stop_reason": "path_limit", "predicted_answer": None, "last_query_status": "error"}, "no query"),
    ({"f1": 0.0, "stop_reason": "cannot_answer", "predicted_answer": None}, "cannot answer"),
    ({"f1": 0.0, "stop_reason": "context_length", "predicted_answer": None}, "model failure"),
    ({"f1": 0.0, "stop_reason": "no_usable_action", "predicted_answer": None}, "model failure"),
    ({"f1": 1.0, "stop_reason": "context_length", "predicted_answer": ROWS}, "correct"),  # its best effort scored
    # Steps that learnt nothing: the model could not use the graph, whatever its last query did.
    ({"f1": 0.0, "stop_reason": "no_progress", "predicted_answer": None, "last_query_status": None},
     "model failure"),
    ({"f1": 0.0, "stop_reason": "no_progress", "predicted_answer": [], "last_query_status": "empty"},
     "model failure"),
    ({"f1": 0.5, "stop_reason": "no_progress", "predicted_answer": ROWS}, "partial rows"),
])
def test_each_answer_gets_one_diagnosis(line, diagnosis):
    assert diagnose(line) == diagnosis and diagnosis in DIAGNOSES
