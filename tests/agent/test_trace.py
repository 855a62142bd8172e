import json

from agent.kb.base import QueryResult
from agent.trace import AgentResult, Step, StopReason, Usage


def test_agent_result_round_trips_through_json():
    result = AgentResult(
        question="Who wrote it?",
        final_sparql="SELECT ?x WHERE { wd:Q42 wdt:P800 ?x }",
        answer=[{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q25169"}}],
        variables=["x"],
        steps=[
            Step("look", "search_wikidata", "Douglas Adams", "Douglas Adams (Q42): writer"),
            Step("again", "search_wikidata", "Douglas Adams", None, rolled_back=True),
        ],
        stop_reason="stop",
        usage=Usage(llm_calls=3, prompt_tokens=100),
    )
    restored = AgentResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert restored == result
    assert [step.thought for step in restored.path] == ["look"]


def test_failed_query_has_no_answer_but_an_empty_one_has_rows():
    assert QueryResult(status="syntax_error", message="bad").answer is None
    assert QueryResult(status="empty", variables=["x"]).answer == []
    assert QueryResult(status="ok", boolean=False).answer is False


def test_records_written_before_the_explanation_existed_still_load():
    old = {"question": "Who?", "final_sparql": None, "answer": None, "variables": [], "steps": [],
           "stop_reason": "action_limit", "stop_message": "30 actions taken", "usage": Usage().to_dict()}
    restored = AgentResult.from_dict(old)
    assert (restored.explanation, restored.language, restored.best_effort, restored.end_of_run) == ("", "", False, [])
    new = AgentResult("Wer?", None, None, [], [], "stop", explanation="Nichts gefunden.", language="de",
                      best_effort=True, end_of_run=["extraction"])
    assert AgentResult.from_dict(json.loads(json.dumps(new.to_dict()))) == new


def test_stop_reasons_are_stored_as_the_strings_earlier_records_hold():
    assert [reason.value for reason in StopReason] == [
        "stop", "cannot_answer", "path_limit", "action_limit", "repeated_stop", "no_usable_action", "no_progress",
        "time_limit", "context_length", "llm_error", "kb_error"]
    for reason in StopReason:
        record = json.loads(json.dumps(AgentResult("Who?", None, None, [], [], reason).to_dict()))
        assert record["stop_reason"] == reason.value
        assert AgentResult.from_dict(record).stop_reason is reason
