"""The end of a run: the answer the user gets is a query the model wrote.

A run that ended on the model's own ``stop`` answers with the query it
stopped on, as written.  A run that did not (a budget, a model that kept
stopping on empty results) gets one extraction call at temperature 0: the
model reads the trace and writes the best final query, with the
explanation and the asker's language, so the bot needs no further call.  Its
query is used when it returns rows; otherwise the last query that returned
rows stands, and when none did, the extraction's query with its empty
result.  Either way the answer is a best effort, and says so
(``extraction`` in :attr:`AgentResult.end_of_run` when the extraction's
query is the answer).  An extraction's query that uses IDs the trace never
showed gets the know-before-use check (:mod:`agent.grounding`) before the
run ends: the model reads their names and may correct its query once.  (A
query the model stopped on got that check when it ran.)

A run the model ended with ``cannot_answer`` has no final query: its
explanation says why, and no extraction call second-guesses it.

Nothing here rewrites a query: the form of the answer (ASK for a yes/no
question, a count for "how many", ...) is the model's decision, asked for in
the policy prompt.  The evaluation harness may score upstream's own
post-processing of the final query as a separate, labelled figure
(:mod:`harness.upstream_postprocessing`); the bot never posts it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent import grounding, observations
from agent.actions import ACTIONS
from agent.graph import GraphProfile
from agent.llm import Completion, well_formed
from agent.kb.base import QueryResult, QueryStatus
from agent.prompts import render
from agent.trace import SERVICE_FAILURES, RunEnded, Step, StopReason

#: Characters of one observation shown to the extraction call.
TRACE_OBSERVATION_CHARS = 1200
_SPARQL_BLOCK = re.compile(r"```(?:sparql)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_SPARQL_START = re.compile(r"^\s*(?:PREFIX|SELECT|ASK|CONSTRUCT|DESCRIBE|#)", re.IGNORECASE)


class Limits(Protocol):
    """What the end of a run reads of the agent's settings."""

    @property
    def max_completion_tokens(self) -> int: ...


class Run(Protocol):
    """What the end of a run reads of the run that ends (the loop's run is one): its question and steps, the
    model and the knowledge base as the run reaches them (within its time), and what the model said on stopping.
    It writes back only what the extraction found or lacked."""

    question: str
    steps: list[Step]
    #: Each executed query's result, by the index of its step.
    results: dict[int, QueryResult]
    #: What the model's ``stop`` (or ``cannot_answer``) carried besides its query: ``explanation``, ``language``.
    stop_extras: dict[str, str]
    #: Written here: IDs of the extraction's query that the trace never showed.
    final_unseen_ids: list[str]
    #: Written here: why the extraction gave nothing.
    extraction_failure: str

    @property
    def graph(self) -> GraphProfile: ...

    @property
    def config(self) -> Limits: ...

    def call_llm(self, messages: list[dict[str, Any]], **options: Any) -> Completion: ...

    def run_query(self, sparql: str) -> QueryResult: ...

    def best_query(self) -> int | None: ...

    def shown_ids(self, before: int | None = None) -> set[str]: ...

    def name_ids(self, ids: list[str]) -> str: ...


@dataclass
class Extraction:
    sparql: str = ""
    explanation: str = ""
    language: str = ""


@dataclass
class FinalAnswer:
    sparql: str | None
    result: QueryResult | None
    explanation: str = ""
    language: str = ""
    best_effort: bool = False
    changes: list[str] = field(default_factory=list)


def parse_extraction(text: str) -> Extraction:
    """The extraction call's JSON answer; a bare query (in a fence or not) is accepted too."""
    cleaned = observations.strip_fences(text)
    try:
        data = json.loads(cleaned)
    except ValueError:
        data = None
    if isinstance(data, dict):
        return Extraction(sparql=well_formed(str(data.get("sparql") or "")).strip(),
                          explanation=well_formed(str(data.get("explanation") or "")).strip(),
                          language=well_formed(str(data.get("language") or "")).strip())
    block = _SPARQL_BLOCK.search(text)
    if block:
        return Extraction(sparql=block.group(1).strip())
    if _SPARQL_START.match(text):
        return Extraction(sparql=text.strip())
    return Extraction()


def trace_text(run: Run) -> str:
    """Every step the model took, with what it saw (long observations cut)."""
    lines = []
    for number, step in enumerate(run.steps, start=1):
        observation = step.observation or ("(undone: it repeated an earlier action or stopped without a "
                                           "usable query)" if step.rolled_back else "")
        if len(observation) > TRACE_OBSERVATION_CHARS:
            observation = observation[:TRACE_OBSERVATION_CHARS] + " …(cut)"
        name = ACTIONS[step.action].name_on(run.graph) if step.action in ACTIONS else step.action
        lines.append(f"[{number}] Thought: {step.thought}\nAction: {name}({step.argument})\n"
                     f"Observation: {observation}")
    return "\n\n".join(lines) or "(no steps were taken)"


def extract(run: Run) -> Extraction | None:
    """The extraction call; ``None`` when the model cannot be reached.

    Know before use: when the query holds IDs the trace never showed, the
    model is told what they are (one lookup) and answers once more, keeping
    or correcting its query.
    """
    messages = [{"role": "user", "content": render("extract", question=run.question, trace=trace_text(run),
                                                   graph=run.graph.prompt)}]
    try:
        completion = run.call_llm(messages, temperature=0.0, max_tokens=run.config.max_completion_tokens)
        extraction = parse_extraction(completion.content)
        unseen = grounding.unseen_ids(extraction.sparql, run.shown_ids(), run.graph)
        if not unseen:
            return extraction
        run.final_unseen_ids = unseen
        note = run.name_ids(unseen)
        messages += [{"role": "assistant", "content": completion.content},
                     {"role": "user", "content": note + " If one is not what you meant, correct the query. "
                                                        "Answer with the same JSON object."}]
        completion = run.call_llm(messages, temperature=0.0, max_tokens=run.config.max_completion_tokens)
    except RunEnded as ended:
        if run.final_unseen_ids:
            return extraction
        run.extraction_failure = f"{ended.reason}: {ended.message}"
        return None
    checked = parse_extraction(completion.content)
    if not checked.sparql:
        return extraction
    return Extraction(checked.sparql, checked.explanation or extraction.explanation,
                      checked.language or extraction.language)


def finish(run: Run, reason: StopReason, final: int | None) -> FinalAnswer:
    """The final query, its result and its words, after the end-of-run steps."""
    answer = FinalAnswer(sparql=None, result=None)
    if reason == StopReason.STOP and final is not None:
        answer.sparql, answer.result = run.steps[final].argument, run.results[final]
        answer.explanation = run.stop_extras.get("explanation", "")
        answer.language = run.stop_extras.get("language", "")
    elif reason == StopReason.CANNOT_ANSWER:  # the model's judgement: no query, its reasons
        answer.explanation = run.stop_extras.get("explanation", "")
        answer.language = run.stop_extras.get("language", "")
    elif reason not in SERVICE_FAILURES:
        answer.best_effort = True
        extraction = extract(run)
        result = None
        # The model's last stop, refused for want of a query, said in its words what it found: they stand
        # where the extraction says nothing (a follow-up that asks for no query, an unreachable model).
        answer.explanation = (extraction and extraction.explanation) or run.stop_extras.get("explanation", "")
        answer.language = (extraction and extraction.language) or run.stop_extras.get("language", "")
        if extraction is not None:
            if extraction.sparql:
                result = run.run_query(extraction.sparql)
                if result.status == QueryStatus.OK:
                    answer.sparql, answer.result = extraction.sparql, result
                    answer.changes.append("extraction")
        if answer.sparql is None and (best := run.best_query()) is not None:
            answer.sparql, answer.result = run.steps[best].argument, run.results[best]
        elif answer.sparql is None and result is not None and result.status == QueryStatus.EMPTY:
            answer.sparql, answer.result = extraction.sparql, result  # the model's best effort, empty as it is
            answer.changes.append("extraction")
    return answer
