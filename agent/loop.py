"""The SPINACH step loop: one LLM call per step, rollbacks that keep the lesson, budgets, the end of a run.

Each turn the model sees the static instructions, the question, and the
steps of the current path, and answers with one thought and one action.  The
static part comes first and the history grows at the end, so providers'
prompt caching applies to it.

Rollbacks, as the paper's final version has them ("resets the exploration
state to the one before the repetition"):

1. An action with the same name and argument as any action taken before in
   the run (on the path or not) is rolled back itself and not run again; the
   earlier result stays where it was.
2. ``stop()`` after a query that returned nothing or failed is rolled back
   itself: the empty result stays on the path.  ``stop()`` before any query
   is rolled back too.

A model that insists (``max_refused_stops`` refused stops in all, or
``max_undone_in_a_row`` rolled-back actions in a row) ends the run
(``repeated_stop``) instead of burning its budget.  A ``stop`` with
``cannot_answer`` set ends the run as the model's judgement that Wikidata
cannot answer the question (``cannot_answer``, GRASP's "cancel"): no final
query, the model's explanation of why and of what it searched.

After a rollback, the next prompt ends with a short note of what was undone
and why, so a resampled model does not walk the same way again.

Budgets: at most ``max_path_actions`` steps on the path and at most
``max_total_actions`` actions in all, rolled-back and malformed ones included.
A run with ``max_seconds`` has one budget of time, one clock for every wait:
each model call may take what remains of it (at most the model's own
timeout; the wait for a busy server after a timed-out request included), each
knowledge-base query too (at most its own ``query_timeout``), the end-of-run
extraction and its query included.  The run checks the clock before each
wait and after it; a run that spent its time ends (``time_limit``), and
nothing is sent that could not be waited for.  Lookups without a timeout of
their own (searches, entries, the names of IDs) are cut at the run's end as
well, on a knowledge base reached over HTTP (:func:`agent.kb.http.deadline`).
Every request sent to the model is counted
(``llm_calls``), failed ones too.

A run that learns nothing for ``max_steps_without_progress`` steps in a row
ends early (``no_progress``): a step learns something when its search, entry
or examples show an ID no earlier observation showed, or its query returns
rows no earlier query returned.  Repeated, empty or failed searches, errors
and rolled-back steps learn nothing, so a model that keeps searching for
what it already has does not spend the whole budget.

Protocols, per question: tool calls first, with ``tool_choice`` "required".
An endpoint that fails the first request of a ``tool_choice`` (llama-cpp-python's
server answers "required" with HTTP 500) is asked with "auto" instead, and
one that fails "auto" too gets the plain-text protocol; an endpoint that
refuses tool definitions, or a model that breaks the tool protocol a second
time (after the first error was fed back to it), gets the plain-text protocol
as well.  Each switch lasts for the rest of that question, is logged once with
its cause and recorded (``protocol_switch``); the next question starts with
tools and "required" again.  A model that gives no usable action (no action
that can be read, an unknown one, an unusable argument)
``max_unusable_in_a_row`` times in a row in one protocol ends the run
(``no_usable_action``).  A prompt longer than the model's context ends the run
(``context_length``) instead of being sent again.

The end of a run (:mod:`agent.end_of_run`) decides the answer the user gets,
always a query the model wrote: the one it stopped on, or, for a run that
did not end on the model's own ``stop``, the one an extraction call writes
from the trace.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING, Any

from agent import end_of_run, grounding, observations
from agent.actions import (ACTIONS, CANNOT_ANSWER, action_named, actions_for, check_argument, is_set, same_action,
                           shown_name, tool_schemas)
from agent.kb import http
from agent.kb.base import CrossCheck, KBUnavailable, KnowledgeBase, QueryResult, QueryStatus, SearchHit
from agent.llm import (
    ChatModel, Completion, ContextTooLong, LLMUnavailable, ModelRequestError, ToolChoiceRefused, ToolsUnsupported,
    well_formed,
)
from agent.parsing import ParseError, parse_step
from agent.prompts import render
from agent.trace import AgentResult, Named, RunEnded, Step, StopReason, Usage

if TYPE_CHECKING:
    from agent.examples import PromptExample

log = logging.getLogger("agent")
#: The model's explanation is read by a person (the forum's reply, the chat page); longer than a whole reply may be
#: (the bot's ``reply_max_chars``) is a model that ran on: cut.
MAX_EXPLANATION_CHARS = 20000


def _bounded(text: str, limit: int) -> str:
    """*text* within *limit* characters, its lines kept, cut after a word where one ends late enough (``…``)."""
    if len(text) <= limit:
        return text
    kept = text[:limit - 1]
    space = max(kept.rfind(" "), kept.rfind("\n"))
    if space > limit // 2:
        kept = kept[:space]
    return kept.rstrip() + "…"


#: Sent to endpoints without tool calling: a model that goes on to invent the observation is cut there.
TEXT_STOP = ["\nObservation:"]
#: The ``tool_choice`` values asked for in turn, before the plain-text protocol.
TOOL_CHOICES = ("required", "auto")


@dataclass
class AgentConfig:
    #: Tell the model that every question has an answer (benchmarks), or not (the forum).
    answer_guaranteed: bool = False
    max_path_actions: int = 15
    max_total_actions: int = 30
    #: ``stop()`` calls without a usable query after which the run ends.
    max_refused_stops: int = 3
    #: Rolled-back actions (repeats, refused stops) in a row after which the run ends.
    max_undone_in_a_row: int = 4
    #: Replies that break the tool protocol (prose, no JSON, a wrong tool or argument name) after which the
    #: question goes on in the plain-text protocol: the first one's error is fed back to the model.
    max_malformed_calls: int = 2
    #: Steps in a row that learn nothing new (no ID, no rows not seen before) after which the run ends
    #: (``no_progress``); 0 for no such end.
    max_steps_without_progress: int = 6
    #: Seconds the whole run may take, its model calls, knowledge-base queries and the end-of-run extraction included
    #: (each gets what remains, at most its own timeout); ``None`` for no limit but the steps'.
    max_seconds: float | None = None
    #: Replies in a row, in one protocol, without a usable action (none that can be read, an unknown one, an
    #: unusable argument) after which the run ends (``no_usable_action``).
    max_unusable_in_a_row: int = 3
    temperature: float = 1.0
    top_p: float = 0.9
    #: The most tokens one reply may take (a step is a thought and one action).
    max_completion_tokens: int = 2000
    #: Entries whose text is shorter than this many characters reach the model
    #: unpruned: a pruning call would cost more tokens than it saves.
    prune_threshold: int = 1500
    #: Seconds a query may run; ``None`` leaves it to the knowledge base.
    query_timeout: float | None = None
    #: Steps older than this many path steps show their search results and entries shrunk to the
    #: hits and statements used since, and their query results cut to the first rows, unless the
    #: model tried to take them again since.  (Only the last step keeps its thought.)
    recent_steps: int = 2
    #: Where the scholarly articles are, seen from the query service the agent asks; ``None`` for what the
    #: graph's profile says (Wikidata's: the WDQS graph split of May 2025), "" when that service holds them.
    scholarly_service: str | None = None


@dataclass
class AgentContext:
    """What the asker gave besides the question.

    For a follow-up in a thread, ``thread`` holds the discussion so far and
    ``previous_query`` the agent's own earlier final query, the draft to revise.
    """

    draft_queries: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    thread: str = ""
    previous_query: str = ""
    #: Solved requests like this one, whole, as many as fit (:func:`agent.examples.prompt_examples`).
    examples: list[PromptExample] = field(default_factory=list)


@dataclass
class _Decision:
    thought: str
    action: str
    argument: str
    error: str | None = None
    extras: dict[str, str] = field(default_factory=dict)
    #: A reply to a tools request that broke the protocol (no call, no JSON, an unknown tool or argument name).
    malformed: bool = False


class Agent:
    """Runs questions against one knowledge base with one language model."""

    def __init__(self, llm: ChatModel, kb: KnowledgeBase, config: AgentConfig | None = None) -> None:
        self.llm = llm
        self.kb = kb
        self.config = config or AgentConfig()

    def run(self, question: str, context: AgentContext | None = None,
            on_step: Callable[[Step], None] | None = None) -> AgentResult:
        return _Run(self, question, context, on_step).execute()


def best_query(steps: Sequence[Step]) -> int | None:
    """The index of the last executed query that returned rows (or a boolean): a run's best query so far, the
    answer of a run that ends without the model's stop, and of one stopped before it ended."""
    for index in range(len(steps) - 1, -1, -1):
        if steps[index].query_status == QueryStatus.OK:
            return index
    return None


def _short(text: str, limit: int = 160) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


class _Run:
    def __init__(self, agent: Agent, question: str, context: AgentContext | None,
                 on_step: Callable[[Step], None] | None) -> None:
        self.agent = agent
        self.config = agent.config
        #: The graph explored, as the knowledge base holds it: its IDs and the graph-specific lines of the prompts.
        self.graph = agent.kb.graph
        self.scholarly_service = (self.graph.scholarly_service if self.config.scholarly_service is None
                                  else self.config.scholarly_service)
        self.question = question
        self.context = context
        self.on_step = on_step
        self.steps: list[Step] = []
        self.results: dict[int, QueryResult] = {}
        self.usage = Usage()
        #: What rollbacks undid, for the next prompts.
        self.notes: list[str] = []
        #: Steps the model tried to take again (repeats rolled back), by the index of the latest repeat.
        self.repeated_at: dict[int, int] = {}
        self.refused_stops = 0
        self.undone_in_a_row = 0
        self.stop_extras: dict[str, str] = {}
        #: IDs of the extraction's query that the trace never showed (named to the model before the run ends).
        self.final_unseen_ids: list[str] = []
        #: This question's protocol: tool calls, or plain text once the endpoint refuses tools or the model
        #: keeps breaking the tool protocol (never shared with other questions), and why it switched.
        self.text_protocol = False
        #: Why the protocol or the ``tool_choice`` changed, in order.
        self.switches: list[str] = []
        self.malformed = 0
        self.unusable_in_a_row = 0
        #: The ``tool_choice`` asked for, and whether the endpoint has answered a request with it.
        self.tool_choice = TOOL_CHOICES[0]
        self.tool_choice_answered = False
        #: The model the endpoint says answered.
        self.model = ""
        self.started = time.monotonic()
        #: Steps in a row that learnt nothing new, and the actions they took.
        self.without_progress: list[str] = []
        #: Why the end-of-run extraction gave nothing ("" when it answered or was not asked).
        self.extraction_failure = ""

    # -- the loop -----------------------------------------------------------------

    def execute(self) -> AgentResult:
        self.started = started = time.monotonic()
        ends = None if self.config.max_seconds is None else started + self.config.max_seconds
        with http.deadline(ends):  # lookups without a timeout of their own (searches, entries) come out of it too
            reason, message, final = self.explore()
            answer = end_of_run.finish(self, reason, final)
        if self.extraction_failure:
            message += f"; the end-of-run extraction gave nothing ({self.extraction_failure})"
            log.warning("the end-of-run extraction gave nothing: %s", self.extraction_failure)
        result = answer.result
        cross_check = self.cross_check(answer.sparql, result)
        self.usage.seconds = round(time.monotonic() - started, 3)
        return AgentResult(
            question=self.question,
            final_sparql=answer.sparql,
            answer=result.answer if result else None,
            variables=list(result.variables) if result else [],
            steps=self.steps,
            stop_reason=reason,
            stop_message=message,
            usage=self.usage,
            explanation=_bounded(answer.explanation, MAX_EXPLANATION_CHARS),
            language=answer.language,
            best_effort=answer.best_effort,
            end_of_run=answer.changes,
            final_unseen_ids=self.final_unseen_ids,
            protocol="text" if self.text_protocol else "tools",
            protocol_switch="; ".join(self.switches),
            tool_choice=self.tool_choice,
            model=self.model,
            cross_check=cross_check,
        )

    def explore(self) -> tuple[StopReason, str, int | None]:
        """The steps, until the model stops on a query that returned rows or the run ends: why, in words, and the
        final query's step (``None`` unless the model stopped on it)."""
        try:
            while True:
                if self.remaining() == 0.0:
                    raise self.time_spent()
                if len(self.steps) >= self.config.max_total_actions:
                    raise RunEnded(StopReason.ACTION_LIMIT,
                                   f"{len(self.steps)} actions taken, the limit is {self.config.max_total_actions}")
                if len(self.path) >= self.config.max_path_actions:
                    raise RunEnded(StopReason.PATH_LIMIT,
                                   f"the path reached {len(self.path)} actions, the limit is "
                                   f"{self.config.max_path_actions}")
                final = self.take_step()
                if final is not None:
                    return StopReason.STOP, "the agent stopped on a query that returned results", final
        except RunEnded as ended:
            return ended.reason, ended.message, None

    def cross_check(self, sparql: str | None, result: QueryResult | None) -> CrossCheck | None:
        """The final query on every engine the knowledge base has, each within what remains of the run's time;
        ``None`` without a final query, or when no engine could be asked."""
        if not sparql:
            return None
        try:
            return self.agent.kb.cross_check(sparql, self.remaining(), known=result)
        except KBUnavailable as error:
            log.warning("the final query's cross-check failed: %s", error)
            return None

    def remaining(self) -> float | None:
        """Seconds left of the run's time (0 when spent), or ``None`` when the run has no time limit."""
        if self.config.max_seconds is None:
            return None
        return max(0.0, self.started + self.config.max_seconds - time.monotonic())

    def query_timeout(self) -> float | None:
        """Seconds the next knowledge-base query may run: its own timeout, at most what remains of the run's time.

        Raises the end of the run when nothing remains, so no query is sent that could not be waited for.
        """
        remaining = self.remaining()
        if remaining is None:
            return self.config.query_timeout
        if remaining == 0.0:
            raise self.time_spent()
        return remaining if self.config.query_timeout is None else min(self.config.query_timeout, remaining)

    def time_spent(self, detail: str = "") -> RunEnded:
        """The end of a run whose time is spent; *detail* says what the last call met."""
        return RunEnded(StopReason.TIME_LIMIT, f"the run's {self.config.max_seconds:g} s are spent"
                                               + (f" ({detail})" if detail else ""))

    @property
    def path(self) -> list[int]:
        return [index for index, step in enumerate(self.steps) if not step.rolled_back]

    def best_query(self) -> int | None:
        """The last executed query that returned rows (or a boolean)."""
        return best_query(self.steps)

    def take_step(self) -> int | None:
        """One LLM call and its action; the index of the final query once the model stops."""
        decision = self.decide()
        step = Step(thought=decision.thought, action=decision.action, argument=decision.argument)
        self.steps.append(step)
        index = len(self.steps) - 1
        final = None
        try:
            if decision.error:
                step.observation = decision.error
            elif step.action == "stop":
                final = self.stop(index, decision.extras)
            elif (earlier := self.taken_before(step, index)) is not None:
                step.rolled_back = True
                self.repeated_at[earlier] = index
                self.notes.append(f"{ACTIONS[step.action].name_on(self.graph)}({_short(step.argument)}) repeats step "
                                  f"{earlier + 1}: "
                                  "its result is unchanged. Take a different action.")
            else:
                # What Wikidata answers may hold a lone surrogate (valid JSON, not UTF-8): it would fail to encode.
                step.observation = well_formed(self.act(step, index))
        finally:
            if self.on_step:
                self.on_step(step)
        self.undone_in_a_row = self.undone_in_a_row + 1 if step.rolled_back else 0
        if self.undone_in_a_row >= self.config.max_undone_in_a_row:
            raise RunEnded(StopReason.REPEATED_STOP,
                            f"the model repeated itself {self.undone_in_a_row} times in a row "
                            "(repeated actions, or stops without a query that returned results)")
        if self.unusable_in_a_row >= self.config.max_unusable_in_a_row:
            raise RunEnded(StopReason.NO_USABLE_ACTION,
                            f"the model gave no usable action {self.unusable_in_a_row} times "
                            f"in a row (the last: {_short(decision.error or '')})")
        if final is None:
            self.count_progress(step, index)
        return final

    def count_progress(self, step: Step, index: int) -> None:
        """End the run after ``max_steps_without_progress`` steps in a row that learnt nothing new."""
        if self.learnt(step, index):
            self.without_progress = []
            return
        shown = shown_name(step.action, self.graph) or "no action"
        self.without_progress.append(f"{shown}({_short(step.argument, 40)})" if step.argument else shown)
        limit = self.config.max_steps_without_progress
        if limit and len(self.without_progress) >= limit:
            raise RunEnded(StopReason.NO_PROGRESS,
                           f"nothing new learnt in {len(self.without_progress)} steps in a row: "
                           + ", ".join(self.without_progress[:6]))

    def learnt(self, step: Step, index: int) -> bool:
        """Whether *step* showed something the run had not seen: an ID in what it observed, or new rows."""
        if step.rolled_back or step.observation is None or step.action not in ACTIONS or step.action == "stop":
            return False
        if step.action == "execute_sparql":
            result = self.results.get(index)
            return result is not None and result.status == QueryStatus.OK and not any(
                earlier.status == QueryStatus.OK and earlier.bindings == result.bindings
                and earlier.boolean == result.boolean for at, earlier in self.results.items() if at < index)
        seen = self.shown_ids(before=index)
        return bool(grounding.shown_ids([step.observation], self.graph) - seen)

    def taken_before(self, step: Step, index: int) -> int | None:
        """The earlier step (rolled back or not) that took the same action, if any."""
        for earlier, other in enumerate(self.steps[:index]):
            if other.action and other.action != "stop" and same_action(other.action, other.argument,
                                                                         step.action, step.argument):
                return earlier
        return None

    def stop(self, index: int, extras: dict[str, str]) -> int | None:
        self.stop_extras = extras  # a refused stop's words too: the model's explanation, in the asker's language
        if is_set(extras.get(CANNOT_ANSWER)):
            raise RunEnded(StopReason.CANNOT_ANSWER,
                           f"the model found the question cannot be answered from {self.graph.prompt.title}")
        queries = [i for i in self.path if self.steps[i].action == "execute_sparql" and i in self.results]
        if queries and self.results[queries[-1]].status == QueryStatus.OK:
            return queries[-1]
        self.steps[index].rolled_back = True
        if not queries:
            self.notes.append("stop() before any query ran: execute a query that answers the question first.")
        else:
            last = queries[-1]
            outcome = "empty result" if self.results[last].status == QueryStatus.EMPTY else self.results[last].status
            self.notes.append(f"Already tried: execute_sparql({_short(self.steps[last].argument)}) → {outcome}; "
                              "do not stop on an empty or failed result: change the query or explore further.")
        self.refused_stops += 1
        if self.refused_stops >= self.config.max_refused_stops:
            raise RunEnded(StopReason.REPEATED_STOP,
                            f"the model stopped {self.refused_stops} times without a query that returned results")
        return None

    # -- asking the model -------------------------------------------------------------

    def decide(self) -> _Decision:
        while True:
            text = self.text_protocol
            protocol: dict[str, Any] = {"stop": TEXT_STOP} if text else {
                "tools": tool_schemas(self.graph), "tool_choice": self.tool_choice,
                "probe": not self.tool_choice_answered}
            try:
                completion = self.call_llm(self.messages(), temperature=self.config.temperature,
                                           top_p=self.config.top_p, max_tokens=self.config.max_completion_tokens,
                                           **protocol)
            except ToolsUnsupported:
                self.switch_to_text("the endpoint refused tool definitions")
                continue
            except ToolChoiceRefused as refused:
                self.refuse_tool_choice(str(refused))
                continue
            self.tool_choice_answered = self.tool_choice_answered or not text
            decision = self.read(completion)
            self.unusable_in_a_row = self.unusable_in_a_row + 1 if decision.error else 0
            if decision.malformed:
                self.malformed += 1
                if self.malformed >= self.config.max_malformed_calls:
                    self.switch_to_text(f"{self.malformed} malformed tool calls")
            return decision

    def refuse_tool_choice(self, why: str) -> None:
        """The next ``tool_choice`` for the rest of this question, or the plain-text protocol after the last."""
        later = TOOL_CHOICES[TOOL_CHOICES.index(self.tool_choice) + 1:]
        if not later:
            self.switch_to_text(f"the endpoint refused tools with every tool_choice ({why})")
            return
        self.tool_choice = later[0]
        self.switches.append(f"tool_choice {later[0]!r} ({why})")
        log.warning("the model endpoint refused a tools request (%s): asking with tool_choice %r for the rest "
                    "of this question", why, later[0])

    def switch_to_text(self, why: str) -> None:
        """The plain-text protocol for the rest of this question (other questions start with tools again).

        Replies without a usable action are counted afresh in the new protocol.
        """
        self.text_protocol = True
        self.switches.append(why)
        self.unusable_in_a_row = 0
        log.info("the plain-text protocol for the rest of this question: %s", why)

    def call_llm(self, messages: list[dict[str, Any]], **options: Any) -> Completion:
        """One model call within what remains of the run's time; every request it sent is counted."""
        remaining = self.remaining()
        if remaining == 0.0:
            raise self.time_spent()
        try:
            completion = self.agent.llm.complete(messages, timeout=remaining, **options)
        except ModelRequestError as error:
            self.usage.llm_calls += error.attempts
            if isinstance(error, ContextTooLong):  # asking again cannot help
                raise RunEnded(StopReason.CONTEXT_LENGTH, str(error)) from error
            if isinstance(error, LLMUnavailable):
                if self.remaining() == 0.0:
                    raise self.time_spent(str(error)) from error
                raise RunEnded(StopReason.LLM_ERROR, str(error)) from error
            raise
        self.model = completion.model or self.model
        self.usage.llm_calls += completion.attempts
        self.usage.prompt_tokens += completion.prompt_tokens
        self.usage.completion_tokens += completion.completion_tokens
        self.usage.cached_tokens += completion.cached_tokens
        return completion

    def read(self, completion: Completion) -> _Decision:
        if completion.tool_calls:
            call = completion.tool_calls[0]
            content = completion.content.strip()
            try:
                arguments = json.loads(call.arguments or "{}")
                if not isinstance(arguments, dict):
                    raise ValueError("not an object")
                arguments = {name: well_formed(value) if isinstance(value, str) else value
                             for name, value in arguments.items()}
            except (ValueError, RecursionError) as error:  # RecursionError: nested deeper than json can read
                return _Decision(content, call.name, call.arguments,
                                 f"The arguments of {call.name} are not a JSON object ({error}).", malformed=True)
            thought = str(arguments.pop("thought", "") or "").strip()
            thought = "\n".join(part for part in (content, thought) if part)
            name = action_named(call.name, self.graph)
            spec = ACTIONS.get(name)
            given = spec.given(arguments, self.graph) if spec is not None else None
            if spec is not None and spec.argument and given is None:
                others = ", ".join(f'"{name}"' for name in arguments) or "none"
                return _Decision(thought, name, "", f'{call.name} takes its argument as '
                                                         f'"{spec.on(self.graph).argument.name}"; '
                                                         f"the call gave {others}.", malformed=True)
            raw = str(given) if spec and spec.argument else ""
            argument, error = check_argument(name, raw, self.graph)
            extras = {parameter.name: str(arguments.get(parameter.name) or "").strip()
                      for parameter in (spec.extras if spec else ())}
            return _Decision(thought, name, argument, error, extras, malformed=spec is None)
        try:
            parsed = parse_step(completion.content)
        except ParseError as error:
            if not self.text_protocol:
                error = ParseError(f"No tool was called. Call one of: "
                                   f"{', '.join(spec.name for spec in actions_for(self.graph))}.")
            return _Decision(completion.content.strip(), "", "", str(error), malformed=not self.text_protocol)
        name = action_named(parsed.action, self.graph)
        argument, error = check_argument(name, parsed.argument, self.graph)
        return _Decision(parsed.thought, name, argument, error, parsed.extras)

    def messages(self) -> list[dict[str, Any]]:
        text = self.text_protocol
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": render("policy", answer_guaranteed=self.config.answer_guaranteed,
                                                 text_protocol=text, actions=actions_for(self.graph),
                                                 scholarly_service=self.scholarly_service,
                                                 graph=self.graph.prompt)},
            {"role": "user", "content": render("question", question=self.question, context=self.context)},
        ]
        path = self.path
        recent = self.config.recent_steps
        window = (path[-recent] if recent <= len(path) else 0) if recent else len(self.steps)  # the oldest recent
        for position, index in enumerate(path):
            step = self.steps[index]
            observation, thought = step.observation or "", step.thought
            if position < len(path) - 1:
                thought = ""  # the model's reasoning matters for its next step; its actions stay
            # A step the model just tried to take again counts as recent: it is shown whole, as if re-run.
            if index < window and self.repeated_at.get(index, -1) < window:
                # An old step keeps what later steps built on: its action, the hits and statements used
                # since, the first rows of its result.
                later = " ".join(self.steps[i].argument + " " + self.steps[i].thought for i in path[position + 1:])
                if step.action == "search_wikidata":
                    observation = well_formed(observations.shrink_search(step, later))
                elif step.action == "get_wikidata_entry":
                    observation = observations.shrink_entry(observation, later)
                elif step.action == "execute_sparql":
                    named = step.seen.named if step.seen else None  # the labels stay: they ground the IDs
                    observation = well_formed("\n".join(filter(None, (
                        observations.shrink_result(step),
                        grounding.naming_note(step.unseen_ids, named, labels_only=True) if named is not None else ""))))
            spec = ACTIONS[step.action].on(self.graph) if step.action in ACTIONS else None
            shown = spec.name if spec else step.action
            if text or spec is None:
                # A reply without an action is given back as the model wrote it, with the error that follows.
                reply = f"Thought: {thought}\nAction: {shown}({step.argument})" if step.action \
                    else thought or "(a reply without an action)"
                messages.append({"role": "assistant", "content": reply})
                messages.append({"role": "user", "content": f"Observation: {observation}"})
                continue
            arguments = {"thought": thought} if thought else {}
            if spec.argument:
                arguments[spec.argument.name] = step.argument
            call_id = f"call_{index}"
            # "" rather than null: llama-cpp-python's server refuses an assistant message whose content is null.
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": shown, "arguments": json.dumps(arguments, ensure_ascii=False)}}]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": observation})
        if self.notes:
            messages.append({"role": "user", "content": "Undone so far:\n" + "\n".join(
                f"- {note}" for note in self.notes[-5:])})
        return messages

    # -- acting on the knowledge base ----------------------------------------------------

    def run_query(self, sparql: str) -> QueryResult:
        """A query outside the model's steps (the end of a run), within what remains of the run's time; an
        unreachable service, or a run with no time left, is a failed query."""
        try:
            timeout = self.query_timeout()
        except RunEnded as ended:
            return QueryResult(status=QueryStatus.TIMEOUT, message=f"not run: {ended.message}")
        self.usage.kb_calls += 1
        try:
            return self.agent.kb.execute(sparql, timeout=timeout)
        except KBUnavailable as error:
            return QueryResult(status=QueryStatus.ERROR, message=str(error))

    def act(self, step: Step, index: int) -> str:
        """Run the step's action on the knowledge base; a query may take at most what remains of the run's time."""
        try:
            timeout = self.query_timeout()
        except RunEnded as ended:
            step.observation = f"Not run: {ended.message}."
            raise
        self.usage.kb_calls += 1
        spec = ACTIONS[step.action]
        assert spec.execute is not None
        try:
            outcome = spec.execute(self.agent.kb, step.argument, timeout)
        except KBUnavailable as error:
            step.observation = f"The knowledge base could not be reached: {error}"
            if self.remaining() == 0.0:  # the wait for it spent the run's time
                raise self.time_spent(str(error)) from error
            raise RunEnded(StopReason.KB_ERROR, str(error)) from error
        step.seen = outcome.seen
        if outcome.result is not None:
            result = outcome.result
            self.results[index] = result
            step.record_query(result)
            step.unseen_ids = grounding.unseen_ids(step.argument, self.shown_ids(before=index), self.graph)
            if step.unseen_ids:
                try:
                    hits = self.describe(step.unseen_ids)
                except RunEnded:
                    step.observation = outcome.observation
                    raise
                outcome.seen.named = [Named(*map(well_formed, astuple(Named.of(hit)))) for hit in hits]
                return outcome.observation + "\n" + grounding.naming_note(step.unseen_ids, hits)
        return self.prune(outcome.observation) if outcome.prunable else outcome.observation

    def shown_ids(self, before: int | None = None) -> set[str]:
        """The IDs the observations of the run (up to step *before*) have shown."""
        return grounding.shown_ids((step.observation or "" for step in self.steps[:before]), self.graph)

    def name_ids(self, ids: list[str]) -> str:
        """The note naming *ids* (:func:`agent.grounding.naming_note`)."""
        return grounding.naming_note(ids, self.describe(ids))

    def describe(self, ids: list[str]) -> list[SearchHit]:
        """What the knowledge base names *ids*: one lookup, no model call, none once the run's time is spent."""
        if self.remaining() == 0.0:
            raise self.time_spent()
        self.usage.kb_calls += 1
        try:
            hits = self.agent.kb.describe(ids)
        except KBUnavailable as error:
            if self.remaining() == 0.0:
                raise self.time_spent(str(error)) from error
            raise RunEnded(StopReason.KB_ERROR, str(error)) from error
        return hits

    def prune(self, entry_text: str) -> str:
        """Keep the parts of a long entry that bear on the question (one call at temperature 0).

        A pruning call that fails, or answers something that is not a JSON object,
        gives way to a deterministic cut, and the run goes on.
        """
        if len(entry_text) < self.config.prune_threshold:
            return entry_text
        header, _, body = entry_text.partition("\n")
        prompt = render("prune", question=self.question, entity=header, entry=body, graph=self.graph.prompt)
        try:
            completion = self.call_llm([{"role": "user", "content": prompt}], temperature=0.0,
                                       max_tokens=self.config.max_completion_tokens)
        except RunEnded:
            return f"{header}\n{observations.cut_entry(body)}"
        pruned = observations.strip_fences(completion.content)
        try:
            kept = json.loads(pruned)
        except ValueError:
            kept = None
        if not isinstance(kept, dict):
            return f"{header}\n{observations.cut_entry(body)}"
        return f"{header}\n{pruned}"
