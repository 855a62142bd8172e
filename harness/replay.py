"""Replay recorded upstream SPINACH runs through our agent.

Each recorded thought and action becomes the model's reply (through the real
``openai`` client, over an in-process transport instead of the network), and
each recorded observation becomes the knowledge base's answer
(:class:`harness.recorded_kb.RecordedKB`).  When the recorded replies run out,
the model says ``stop()``.  The end-of-run extraction call is answered with
upstream's final answer for that question (``predicted_sparql`` of its scored
outputs) as the model wrote it: the query the model ran that upstream's
post-processing turned into that answer, or, when the model ran no such
query, the answer as recorded (upstream's extraction call wrote it; whether
a ``DISTINCT`` in it is the model's or upstream's cannot be told).  The
recorded knowledge base answers upstream's final query with its
``predicted_answer_tuple``, so the final answers can be scored with the same
metric and gold as upstream's, with and without upstream's post-processing
(:mod:`harness.upstream_postprocessing`).

"Same actions" holds by construction: the recorded model replays its actions
whatever it is shown.  What the replay measures is where our rollbacks,
budgets and end of run change the answer, never what a model would decide
differently.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from agent import grounding
from agent.actions import ACTIONS, check_argument
from agent.graph import WIKIDATA
from agent.llm import ChatModel
from agent.loop import Agent, AgentConfig
from agent.prompts import render
from agent.trace import BUDGET_LIMITS, AgentResult, StopReason
from harness.metrics import exact_match, row_major_f1
from harness.recorded_kb import RecordedKB, same_query
from harness.upstream_postprocessing import postprocess


def _recorded_action(action: dict[str, Any]) -> tuple[str, str]:
    argument, _ = check_argument(action["action_name"], action["action_argument"] or "")
    return action["action_name"], " ".join(argument.split())


def _completion(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"replay-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "replay"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": len(json.dumps(body["messages"])) // 4, "completion_tokens": 1,
                      "total_tokens": len(json.dumps(body["messages"])) // 4 + 1}}


_EXTRACTION_OPENING = render("extract", question="", trace="", graph=WIKIDATA.prompt).split("\n", 1)[0]


def _layout_free(sparql: str) -> str:
    return " ".join(sparql.split())


def extraction_reply(run: dict[str, Any], output: dict[str, Any] | None) -> str:
    """Upstream's final answer as the model wrote it: the last query it ran that upstream's post-processing
    made into that answer, else the answer as recorded ("" without *output*)."""
    predicted = (output or {}).get("predicted_sparql") or ""
    wanted = _layout_free(predicted)
    for action in reversed(run.get("actions") or []):
        query = action["action_argument"] or ""
        if action["action_name"] == "execute_sparql" and query and wanted in (
                _layout_free(postprocess(query, stopped=True)), _layout_free(postprocess(query, stopped=False))):
            return query
    return predicted


def recorded_model(run: dict[str, Any], output: dict[str, Any] | None = None,
                   sent: list[dict[str, Any]] | None = None, written: list[str] | None = None) -> ChatModel:
    """A model whose replies are the run's recorded actions, then ``stop()`` for ever.

    An extraction call gets :func:`extraction_reply`.  Every request body is
    appended to *sent* when given (the cost benchmark reads them), and every
    query the model writes (an ``execute_sparql`` argument, an extraction's
    query) to *written*.
    """
    actions = list(run.get("actions") or [])
    state = {"next": 0, "last_entry": "{}"}
    written = written if written is not None else []

    def reply(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if sent is not None:
            sent.append(body)
        if "tools" not in body:
            prompt = body["messages"][0]["content"]
            if prompt.startswith(_EXTRACTION_OPENING):
                query = extraction_reply(run, output)
                written.append(query)
                answer = json.dumps({"sparql": query, "explanation": "", "language": "en"})
            else:  # a pruning call: the entry as the upstream agent saw it
                answer = state["last_entry"]
            return httpx2.Response(200, json=_completion(body, {"role": "assistant", "content": answer}))
        if state["next"] < len(actions):
            action = actions[state["next"]]
            state["next"] += 1
        else:
            action = {"thought": "The recorded run has ended.", "action_name": "stop", "action_argument": ""}
        name = action["action_name"]
        if name == "get_wikidata_entry":
            state["last_entry"] = action["observation"] or state["last_entry"]
        arguments = {"thought": action.get("thought") or ""}
        spec = ACTIONS.get(name)
        if spec is not None and spec.argument:
            arguments[spec.argument.name] = action["action_argument"] or ""
        if name == "execute_sparql":
            written.append(action["action_argument"] or "")
        call = {"id": f"call_{state['next']}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}
        return httpx2.Response(200, json=_completion(body, {"role": "assistant", "content": None,
                                                            "tool_calls": [call]}))

    client = openai.OpenAI(api_key="replay", base_url="http://replay.invalid/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(reply)))
    return ChatModel(client, model=run.get("engine", "replay"))


@dataclass
class ReplayOutcome:
    question: str
    #: The upstream run has no repeated action and no stop after an empty or failed query.
    clean: bool
    #: Our run rolled a step back (its prompts differ from upstream's after that).
    rolled_back: bool
    #: Our final query after upstream's post-processing is upstream's final answer (``predicted_sparql``), as
    #: :func:`same_query` compares.
    same_final: bool
    reason: str
    result: AgentResult
    #: The final query is, white space aside, one the recorded model wrote (a query it ran, an extraction's).
    model_written: bool = False
    #: Our final query after upstream's post-processing, and its answer from the recorded knowledge base.
    postprocessed_sparql: str | None = None
    postprocessed_answer: Any = None
    f1: float | None = None
    em: bool | None = None
    #: The same scores for the post-processed query (``f1`` when post-processing changed nothing).
    postprocessed_f1: float | None = None
    postprocessed_em: bool | None = None

    @property
    def final_ids_never_shown(self) -> list[str]:
        """IDs of the final query that no tool's observation showed in the run (know-before-use notes aside)."""
        if self.result.final_sparql is None:
            return []
        shown = grounding.shown_ids(grounding.split_note(step.observation or "")[0] for step in self.result.steps)
        return grounding.unseen_ids(self.result.final_sparql, shown)


def _stops_after_failure(actions: list[dict[str, Any]]) -> bool:
    last_query: str | None = None
    for action in actions:
        if action["action_name"] == "execute_sparql" and action["observation"] is not None:
            last_query = action["observation"]
        elif action["action_name"] == "stop":
            if last_query is None or last_query.strip() == "Query returned empty result." \
                    or "Exception" in last_query:
                return True
    return False


def replay(run: dict[str, Any], output: dict[str, Any] | None = None,
           config: AgentConfig | None = None, sent: list[dict[str, Any]] | None = None) -> ReplayOutcome:
    """Run *run*'s recorded decisions through our agent; with *output* (upstream's scored answer), score it.

    Every request our agent sends to the model is appended to *sent* when given.
    """
    actions = list(run.get("actions") or [])
    recorded = [_recorded_action(action) for action in actions]
    non_stop = [action for action in recorded if action[0] != "stop"]
    repeated = len(set(non_stop)) < len(non_stop)
    stops_after_failure = _stops_after_failure(actions)
    written: list[str] = []
    kb = RecordedKB(run, output)
    agent = Agent(recorded_model(run, output, sent, written), kb, config or AgentConfig(prune_threshold=0))
    result = agent.run(run["question"])
    taken = [(step.action, " ".join(step.argument.split())) for step in result.steps]
    if taken == recorded:
        reason = "same actions"
    elif repeated:
        reason = "repeated action: rolled back, then went on"
    elif stops_after_failure:
        reason = "stop without a usable query: rolled back, then went on"
    elif result.stop_reason in BUDGET_LIMITS:
        reason = f"budget: {result.stop_message}"
    else:
        reason = "different actions"
    outcome = ReplayOutcome(question=run["question"], clean=not repeated and not stops_after_failure,
                            rolled_back=any(step.rolled_back for step in result.steps), same_final=False,
                            reason=reason, result=result)
    if result.final_sparql is not None:
        outcome.model_written = _layout_free(result.final_sparql) in {_layout_free(query) for query in written}
        outcome.postprocessed_sparql = postprocess(result.final_sparql, stopped=result.stop_reason == StopReason.STOP)
        outcome.postprocessed_answer = result.answer if outcome.postprocessed_sparql == result.final_sparql \
            else kb.execute(outcome.postprocessed_sparql).answer
        upstream = (output or {}).get("predicted_sparql") or (run.get("final_sparql") or {}).get("sparql")
        outcome.same_final = upstream is not None and same_query(outcome.postprocessed_sparql, upstream)
    if output is not None:
        gold = output["gold_answer_tuple"]
        outcome.f1, outcome.em = row_major_f1(gold, result.answer), exact_match(gold, result.answer)
        outcome.postprocessed_f1 = row_major_f1(gold, outcome.postprocessed_answer)
        outcome.postprocessed_em = exact_match(gold, outcome.postprocessed_answer)
    return outcome
