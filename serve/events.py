"""What the chat page is sent about a run: each step as data (its action by the graph's own tool name, its
argument or query, what it returned as a table with labels beside IDs, or as lines), then the answer.

A step is what :func:`agent.summaries.summarize` makes of it, the reply's
steps' twin: this module only lays it out as JSON.  Every string comes from
someone else (the asker, the model, the graph's labels and values) and is
cleaned as the wiki's text is (:func:`agent.text.clean`: no control, format
or bidi characters); the page then builds its tables and lines with DOM
text, never as markup.
"""

from __future__ import annotations

import logging
from typing import Any

from agent import AgentResult, Step
from agent.graph import ENTITY_ID_RE, GraphProfile
from agent.kb.base import Binding, CrossCheck, EngineOutcome, KnowledgeBase
from agent.observations import format_term
from agent.query_service import query_service_link
from agent.summaries import Said, summarize
from agent.text import clean
from agent.trace import StopReason
from agent.engines_text import data_day, engine_name, found_sentence, is_stale, posted_for, safe_url, shown_reason
from agent.messages import messages_for
from serve.graphs import ServedGraph

log = logging.getLogger(__name__)

#: Lines of an observation other than a table (a search's hits, an entry's heading) the page shows.
OBSERVATION_LINES = 8
#: Rows of the final query's result shown.
PREVIEW_ROWS = 20
#: IDs whose labels are looked up for one table (one lookup).
LABELLED_IDS = 50
#: What the page says when a run ends without a query, by the run's ending.
NO_QUERY = {
    StopReason.CANNOT_ANSWER: "The agent found that this graph cannot answer the question.",
    StopReason.LLM_ERROR: "The language model could not be reached; ask again later.",
    StopReason.KB_ERROR: "The knowledge graph could not be reached; ask again later.",
}


def entity_ids(rows: list[dict[str, Binding]], shown: dict[str, str] | None = None) -> list[str]:
    """The item and property IDs the cells of *rows* show, first seen first, at most :data:`LABELLED_IDS`."""
    found: dict[str, None] = {}
    for row in rows:
        for term in row.values():
            if term.get("type") == "uri" and ENTITY_ID_RE.fullmatch(text := format_term(term, shown)):
                found.setdefault(text)
    return list(found)[:LABELLED_IDS]


def labels_for(kb: KnowledgeBase, rows: list[dict[str, Binding]], shown: dict[str, str] | None = None
               ) -> dict[str, str]:
    """The labels of the IDs *rows* show, in one lookup; none when the lookup fails (the IDs still show)."""
    ids = entity_ids(rows, shown)
    if not ids:
        return {}
    try:
        return {hit.id: hit.label for hit in kb.describe(ids) if hit.label and hit.label != hit.id}
    except Exception as error:  # a label is a courtesy: the table stands without it
        log.warning("chat: no labels for %d IDs: %s", len(ids), error)
        return {}


def table(variables: list[str], rows: list[dict[str, Binding]], row_count: int, labels: dict[str, str],
          shown: dict[str, str] | None = None) -> dict[str, Any]:
    """A result as the page lays it out: its variables, and each row's cells as ``[text]`` or ``[text, label]``."""
    def cell(term: Binding | None) -> list[str]:
        if term is None:
            return [""]
        text = format_term(term, shown)
        label = labels.get(text) if term.get("type") == "uri" else None
        return [clean(text), clean(" ".join(label.split()))] if label else [clean(text)]

    return {"variables": [clean(name) for name in variables],
            "rows": [[cell(row.get(name)) for name in variables] for row in rows],
            "row_count": row_count}


def step_event(number: int, step: Step, graph: GraphProfile, labels: dict[str, str]) -> dict[str, Any]:
    """*step* as the page shows it: its thought, the action by *graph*'s tool name with its argument (or its query),
    what it returned (a table with *labels* beside IDs, or lines), and the IDs new to the run on a line of their
    own (never a row of the table)."""
    summary = summarize(step, graph, lines=OBSERVATION_LINES)
    event: dict[str, Any] = {"number": number, "action": clean(summary.action),
                             "thought": clean(" ".join(step.thought.split())), "rolled_back": step.rolled_back,
                             "unseen_ids": [clean(entity) for entity in summary.unseen_ids]}
    if step.action == "execute_sparql":
        event["query"] = clean(summary.argument)
    elif step.action != "stop":
        event["argument"] = clean(summary.argument)
    if summary.said == Said.ROWS and summary.rows and summary.variables:
        event["table"] = table(summary.variables, summary.rows, summary.count or len(summary.rows), labels,
                               step.shown)
    elif step.action != "stop":
        event["said"] = [clean(line) for line in summary.outcome()]
    return event


def engines_event(check: CrossCheck | None, stale_after_days: float | None = None) -> dict[str, Any] | None:
    """Where the final query runs, as data for the page's engines' line: what each found, in the reply's words
    (:func:`agent.engines_text.found_sentence`; "" for one engine, whose rows the table counts); per engine (the
    operator's order) its name, outcome, rows (and how many more or fewer than the first that answered), reason
    (an engine's error, cleaned and bounded), "Try it" link (``http(s)`` only), data date and whether it is stale;
    and the engine the query is for when the main one cannot run it.  ``None`` without a cross-check."""
    if check is None or not check.runs:
        return None
    first = next(iter(check.answered), None)
    runs = []
    for run in check.runs:
        answered = run.outcome is EngineOutcome.ANSWERED
        runs.append({
            "key": clean(run.engine.key), "engine": clean(engine_name(run)), "outcome": run.outcome.value,
            "rows": run.rows if answered else None,
            "difference": (run.rows or 0) - (first.rows or 0) if answered and first and run is not first else None,
            "reason": shown_reason(run.reason),
            "try_it": (safe_url(run.try_link) or None) if answered else None,
            "data_date": data_day(run.data_date).isoformat() if run.data_date else None,
            "data_source": clean(run.data_date.source) if run.data_date else None,
            "stale": is_stale(check, run)})
    other = posted_for(check)
    found = clean(found_sentence(check, messages_for("en"))) if len(runs) > 1 else ""
    return {"found": found, "runs": runs, "stale_after_days": stale_after_days,
            "posted_for": clean(engine_name(other)) if other else None}


def final_event(result: AgentResult, graph: ServedGraph, labels: dict[str, str]) -> dict[str, Any]:
    """The answer: the explanation first, the query, where it runs (:func:`engines_event`), then its result (a
    table, with *labels* beside IDs).  Its "Try it" link opens the engine the query is for."""
    query = result.final_sparql
    note = ""
    if query is None:
        note = NO_QUERY.get(result.stop_reason, "No query answers the question.")
    elif result.best_effort:
        note = "The agent did not stop on this query itself: it is the best query its steps found."
    preview: dict[str, Any] | None = None
    if query and isinstance(result.answer, bool):
        preview = {"answer": "yes" if result.answer else "no"}
    elif query and result.answer is not None:
        preview = table(result.variables, result.answer[:PREVIEW_ROWS], len(result.answer), labels)
    engines = engines_event(result.cross_check, graph.kb.stale_after_days) if query else None
    other = posted_for(result.cross_check) if query else None
    try_it = None
    if other is not None:
        try_it = safe_url(other.try_link)
    elif query and graph.links_to_query_service:
        try_it = query_service_link(query)
    return {"query": clean(query) if query else None, "try_it": try_it, "engines": engines,
            "preview": preview, "explanation": clean(result.explanation), "note": note,
            "ended": result.stop_reason}
