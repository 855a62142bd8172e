"""The SPINACH step loop: one LLM call per step, rollbacks that take effect, budgets.

Each turn the model sees the static instructions, the question, and the
steps of the current path (rolled-back steps are kept in the record but leave
the prompt), and answers with one thought and one action.  The static part
comes first and the history grows at the end, so providers' prompt caching
applies to everything but the newest step.

Rollbacks (the upstream implementation marked them but kept going on the same
state):

1. An action with the same name and argument as one already on the path rolls
   the path back to before the first of them: the model is asked again from
   the state it was in then.  (``stop`` is governed by rule 2 alone: the same
   ``stop()`` after a new query means something new.)
2. ``stop()`` right after a query that returned nothing or failed rolls the path
   back to before that query; ``stop()`` when no query has run at all is
   rolled back itself.

Budgets: at most ``max_path_actions`` steps on the path and at most
``max_total_actions`` actions in all, counting rolled-back and malformed ones.
At either limit the run ends with the last query that returned rows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent import observations
from agent.actions import ACTIONS, check_argument, same_action, tool_schemas
from agent.kb.base import KBUnavailable, KnowledgeBase, QueryResult
from agent.llm import ChatModel, Completion, LLMUnavailable, ToolsUnsupported
from agent.parsing import ParseError, parse_step
from agent.prompts import render
from agent.trace import AgentResult, Step, Usage


@dataclass
class AgentConfig:
    #: Tell the model that every question has an answer (benchmarks), or not (the forum).
    answer_guaranteed: bool = False
    max_path_actions: int = 15
    max_total_actions: int = 30
    temperature: float = 1.0
    top_p: float = 0.9
    #: Entries whose text is shorter than this many characters reach the model
    #: unpruned: a pruning call would cost more tokens than it saves.
    prune_threshold: int = 1500
    #: Seconds a query may run; ``None`` leaves it to the knowledge base.
    query_timeout: float | None = None


@dataclass
class AgentContext:
    """What the asker gave besides the question."""

    draft_queries: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    thread: str = ""


class _RunEnded(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class _Decision:
    thought: str
    action: str
    argument: str
    error: str | None = None


class Agent:
    """Runs questions against one knowledge base with one language model."""

    def __init__(self, llm: ChatModel, kb: KnowledgeBase, config: AgentConfig | None = None) -> None:
        self.llm = llm
        self.kb = kb
        self.config = config or AgentConfig()
        #: Switched on for good once the endpoint refuses tool definitions.
        self.text_protocol = False

    def run(self, question: str, context: AgentContext | None = None,
            on_step: Callable[[Step], None] | None = None) -> AgentResult:
        return _Run(self, question, context, on_step).execute()


class _Run:
    def __init__(self, agent: Agent, question: str, context: AgentContext | None,
                 on_step: Callable[[Step], None] | None) -> None:
        self.agent = agent
        self.config = agent.config
        self.question = question
        self.context = context
        self.on_step = on_step
        self.steps: list[Step] = []
        self.results: dict[int, QueryResult] = {}
        self.usage = Usage()

    # -- the loop -----------------------------------------------------------------

    def execute(self) -> AgentResult:
        started = time.monotonic()
        final: int | None = None
        try:
            while True:
                if len(self.steps) >= self.config.max_total_actions:
                    raise _RunEnded("action_limit",
                                    f"{len(self.steps)} actions taken, the limit is {self.config.max_total_actions}")
                if len(self.path) >= self.config.max_path_actions:
                    raise _RunEnded("path_limit",
                                    f"the path reached {len(self.path)} actions, the limit is "
                                    f"{self.config.max_path_actions}")
                final = self.take_step()
                if final is not None:
                    reason, message = "stop", "the agent stopped on a query that returned results"
                    break
        except _RunEnded as ended:
            reason, message = ended.reason, ended.message
            if reason in ("path_limit", "action_limit"):
                final = self.best_query()
        self.usage.seconds = round(time.monotonic() - started, 3)
        result = self.results.get(final) if final is not None else None
        return AgentResult(
            question=self.question,
            final_sparql=self.steps[final].argument if final is not None else None,
            answer=result.answer if result else None,
            variables=list(result.variables) if result else [],
            steps=self.steps,
            stop_reason=reason,
            stop_message=message,
            usage=self.usage,
        )

    @property
    def path(self) -> list[int]:
        return [index for index, step in enumerate(self.steps) if not step.rolled_back]

    def best_query(self) -> int | None:
        """The last executed query that returned rows (or a boolean)."""
        for index in reversed(list(self.results)):
            if self.results[index].status == "ok":
                return index
        return None

    def take_step(self) -> int | None:
        """One LLM call and its action; the index of the final query once the model stops."""
        decision = self.decide()
        step = Step(thought=decision.thought, action=decision.action, argument=decision.argument)
        self.steps.append(step)
        index = len(self.steps) - 1
        final = None
        if decision.error:
            step.observation = decision.error
        elif step.action != "stop" and (first := self.first_on_path(step, index)) is not None:
            self.roll_back(from_index=first, to_index=index)
        elif step.action == "stop":
            final = self.stop(index)
        else:
            step.observation = self.act(step, index)
        if self.on_step:
            self.on_step(step)
        return final

    def first_on_path(self, step: Step, index: int) -> int | None:
        for earlier in self.path:
            if earlier != index and same_action(self.steps[earlier].action, self.steps[earlier].argument,
                                                step.action, step.argument):
                return earlier
        return None

    def roll_back(self, from_index: int, to_index: int) -> None:
        for index in range(from_index, to_index + 1):
            self.steps[index].rolled_back = True

    def stop(self, index: int) -> int | None:
        queries = [i for i in self.path if self.steps[i].action == "execute_sparql" and i in self.results]
        if not queries:
            self.steps[index].observation = "rolled back: no query has been executed yet"
            self.roll_back(from_index=index, to_index=index)
            return None
        last = queries[-1]
        if self.results[last].status != "ok":
            self.roll_back(from_index=last, to_index=index)
            return None
        return last

    # -- asking the model -------------------------------------------------------------

    def decide(self) -> _Decision:
        while True:
            tools = None if self.agent.text_protocol else tool_schemas()
            try:
                completion = self.call_llm(self.messages(), temperature=self.config.temperature,
                                           top_p=self.config.top_p, tools=tools)
            except ToolsUnsupported:
                self.agent.text_protocol = True
                continue
            return self.read(completion)

    def call_llm(self, messages: list[dict[str, Any]], **options: Any) -> Completion:
        try:
            completion = self.agent.llm.complete(messages, **options)
        except LLMUnavailable as error:
            raise _RunEnded("llm_error", str(error)) from error
        self.usage.llm_calls += 1
        self.usage.prompt_tokens += completion.prompt_tokens
        self.usage.completion_tokens += completion.completion_tokens
        self.usage.cached_tokens += completion.cached_tokens
        return completion

    def read(self, completion: Completion) -> _Decision:
        if completion.tool_calls:
            call = completion.tool_calls[0]
            try:
                arguments = json.loads(call.arguments or "{}")
                if not isinstance(arguments, dict):
                    raise ValueError("not an object")
            except ValueError as error:
                return _Decision(completion.content.strip(), call.name, call.arguments,
                                 f"The arguments of {call.name} are not a JSON object ({error}).")
            thought = str(arguments.pop("thought", "") or completion.content).strip()
            spec = ACTIONS.get(call.name)
            raw = str(arguments.get(spec.parameter, "")) if spec and spec.parameter else ""
            argument, error = check_argument(call.name, raw)
            return _Decision(thought, call.name, argument, error)
        try:
            parsed = parse_step(completion.content)
        except ParseError as error:
            return _Decision(completion.content.strip(), "", "", str(error))
        argument, error = check_argument(parsed.action, parsed.argument)
        return _Decision(parsed.thought, parsed.action, argument, error)

    def messages(self) -> list[dict[str, Any]]:
        text = self.agent.text_protocol
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": render("policy", answer_guaranteed=self.config.answer_guaranteed,
                                                 text_protocol=text)},
            {"role": "user", "content": render("question", question=self.question, context=self.context)},
        ]
        for index in self.path:
            step = self.steps[index]
            observation = step.observation or ""
            spec = ACTIONS.get(step.action)
            if text or spec is None:
                action = f"{step.action}({step.argument})" if step.action else "(none)"
                messages.append({"role": "assistant", "content": f"Thought: {step.thought}\nAction: {action}"})
                messages.append({"role": "user", "content": f"Observation: {observation}"})
                continue
            arguments = {"thought": step.thought}
            if spec.parameter:
                arguments[spec.parameter] = step.argument
            call_id = f"call_{index}"
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": step.action, "arguments": json.dumps(arguments, ensure_ascii=False)}}]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": observation})
        return messages

    # -- acting on the knowledge base ----------------------------------------------------

    def act(self, step: Step, index: int) -> str:
        self.usage.kb_calls += 1
        try:
            if step.action == "search_wikidata":
                return observations.format_search(self.agent.kb.search(step.argument))
            if step.action == "get_wikidata_entry":
                entry = self.agent.kb.get_entry(step.argument)
                if entry is None:
                    return f"No item {step.argument} exists."
                return self.prune(observations.format_entry(entry))
            if step.action == "get_property_examples":
                examples = self.agent.kb.property_examples(step.argument)
                if examples is None:
                    return f"No property {step.argument} exists."
                return observations.format_property_examples(step.argument, examples)
            result = self.agent.kb.execute(step.argument, timeout=self.config.query_timeout)
        except KBUnavailable as error:
            step.observation = f"The knowledge base could not be reached: {error}"
            raise _RunEnded("kb_error", str(error)) from error
        self.results[index] = result
        step.query_status = result.status
        step.row_count = (1 if result.boolean is not None else len(result.bindings)) \
            if result.status in ("ok", "empty") else None
        return observations.format_query_result(result)

    def prune(self, entry_text: str) -> str:
        """Keep the parts of a long entry that bear on the question (one call at temperature 0)."""
        if len(entry_text) < self.config.prune_threshold:
            return entry_text
        header, _, body = entry_text.partition("\n")
        prompt = render("prune", question=self.question, entry=body)
        completion = self.call_llm([{"role": "user", "content": prompt}], temperature=0.0)
        pruned = observations.strip_fences(completion.content)
        return f"{header}\n{pruned}" if pruned else entry_text
