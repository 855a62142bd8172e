"""What the chat page is sent about a run: its steps in the wiki trace's compact form, then the answer.

Every string comes from someone else (the asker, the model, the graph's
labels and values) and is cleaned as the wiki's text is
(:func:`bot.wikitext.clean`: no control, format or bidi characters); the
page then shows it as text, never as markup.
"""

from __future__ import annotations

from typing import Any

from agent import AgentResult, Step
from agent.observations import format_table
from agent.trace import StopReason
from bot.messages import messages_for
from bot.render import step_lines
from bot.wikitext import clean, query_service_link
from serve.graphs import ServedGraph

#: Rows (or lines) of each observation the page shows (the wiki's reply shows fewer).
OBSERVATION_ROWS = 8
#: Rows of the final query's result shown.
PREVIEW_ROWS = 20

#: What the page says when a run ends without a query, by the run's ending.
NO_QUERY = {
    StopReason.CANNOT_ANSWER: "The agent found that this graph cannot answer the question.",
    StopReason.LLM_ERROR: "The language model could not be reached; ask again later.",
    StopReason.KB_ERROR: "The knowledge graph could not be reached; ask again later.",
}


def step_event(number: int, step: Step) -> dict[str, Any]:
    lines = step_lines(number, step, OBSERVATION_ROWS, "", messages_for("en"))
    return {"number": number, "action": clean(step.action), "lines": [clean(line) for line in lines],
            "rolled_back": step.rolled_back}


def preview(result: AgentResult) -> str | None:
    if isinstance(result.answer, bool):
        return "yes" if result.answer else "no"
    if result.answer is None:
        return None
    return format_table(result.variables, result.answer, head=PREVIEW_ROWS, tail=0)


def final_event(result: AgentResult, graph: ServedGraph) -> dict[str, Any]:
    query = result.final_sparql
    note = ""
    if query is None:
        note = NO_QUERY.get(result.stop_reason, "No query answers the question.")
    elif result.best_effort:
        note = "The agent did not stop on this query itself: it is the best query its steps found."
    shown = preview(result) if query else None
    return {"query": clean(query) if query else None,
            "try_it": query_service_link(query) if query and graph.links_to_query_service else None,
            "preview": clean(shown) if shown is not None else None,
            "explanation": clean(result.explanation), "note": note, "ended": result.stop_reason}
