"""Replay recorded upstream SPINACH runs through our agent.

Each recorded thought and action becomes the model's reply (through the real
``openai`` client, over an in-process transport instead of the network), and
each recorded observation becomes the knowledge base's answer
(:class:`harness.recorded_kb.RecordedKB`).  When the recorded replies run out,
the model says ``stop()``.  Comparing what our agent then does with what the
upstream agent did shows where our rollbacks and budgets change a run.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from agent.actions import ACTIONS, check_argument
from harness.recorded_kb import RecordedKB
from agent.llm import ChatModel
from agent.loop import Agent, AgentConfig
from agent.trace import AgentResult

_TRAILING_LIMIT = re.compile(r"\s*LIMIT\s+\d+\s*$", re.IGNORECASE)


def comparable_sparql(sparql: str | None) -> str | None:
    """White space folded and a trailing LIMIT dropped (the upstream code dropped it from final queries)."""
    if sparql is None:
        return None
    return " ".join(_TRAILING_LIMIT.sub("", sparql.strip()).split())


def _recorded_action(action: dict[str, Any]) -> tuple[str, str]:
    argument, _ = check_argument(action["action_name"], action["action_argument"] or "")
    return action["action_name"], " ".join(argument.split())


def _completion(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"replay-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "replay"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": len(json.dumps(body["messages"])) // 4, "completion_tokens": 1,
                      "total_tokens": len(json.dumps(body["messages"])) // 4 + 1}}


def recorded_model(run: dict[str, Any]) -> ChatModel:
    """A model whose replies are the run's recorded actions, then ``stop()`` for ever."""
    actions = list(run.get("actions") or [])
    state = {"next": 0, "last_entry": "{}"}

    def reply(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if "tools" not in body:  # a pruning call: the entry as the upstream agent saw it
            return httpx2.Response(200, json=_completion(body, {"role": "assistant",
                                                                "content": state["last_entry"]}))
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
        if spec is not None and spec.parameter:
            arguments[spec.parameter] = action["action_argument"] or ""
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
    #: The run has no repeated action and no stop after an empty or failed query.
    clean: bool
    reproduced: bool
    reason: str
    result: AgentResult


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


def replay(run: dict[str, Any], config: AgentConfig | None = None) -> ReplayOutcome:
    """Run *run*'s recorded decisions through our agent and say whether it ends the same way."""
    actions = list(run.get("actions") or [])
    recorded = [_recorded_action(action) for action in actions]
    non_stop = [action for action in recorded if action[0] != "stop"]
    repeated = len(set(non_stop)) < len(non_stop)
    stops_after_failure = _stops_after_failure(actions)
    agent = Agent(recorded_model(run), RecordedKB(run), config or AgentConfig(prune_threshold=0))
    result = agent.run(run["question"])
    taken = [(step.action, " ".join(step.argument.split())) for step in result.steps]
    upstream_final = comparable_sparql((run.get("final_sparql") or {}).get("sparql"))
    same_final = comparable_sparql(result.final_sparql) == upstream_final
    clean = not repeated and not stops_after_failure
    if taken == recorded and same_final:
        reason = "reproduced"
    elif taken == recorded and upstream_final is None:
        reason = f"same actions; the upstream run recorded no final query, ours ended ({result.stop_reason}) " \
                 "on its last query that returned rows"
    elif repeated:
        reason = "repeated action: rolled back, then went on"
    elif stops_after_failure:
        reason = "stop without a usable query: rolled back, then went on"
    elif result.stop_reason in ("path_limit", "action_limit"):
        reason = f"budget: {result.stop_message}"
    elif taken != recorded:
        reason = "different actions"
    else:
        reason = "different final query"
    return ReplayOutcome(question=run["question"], clean=clean, reproduced=reason == "reproduced",
                         reason=reason, result=result)
