"""What a reader sees of a step, made from what the step kept as data.

The model reads an action's observation; everyone else (the reply's
collapsed steps, the chat page, a report) reads :func:`summarize`'s
:class:`StepSummary`: the action by the name the model knows it by on the
graph, its argument, and its outcome as a kind (:class:`Said`) with the few
values each reader words in its own language ("12 rows", "3 items found",
"no such entity").  Nothing here reads an observation back: a step recorded
before steps kept what they saw (:attr:`agent.trace.Step.seen` is ``None``),
or one whose action never ran (the model's mistake), shows its observation
as plain text, its lines as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from agent.actions import shown_name
from agent.graph import WIKIDATA, GraphProfile
from agent.kb.base import Binding, QueryStatus
from agent.trace import Example, Named, Step

#: The longest argument (a search text, an ID) a summary keeps; a query is kept whole.
ARGUMENT_CHARS = 300


class Said(StrEnum):
    """What a step's outcome is; each reader words it (the reply in the asker's language, the page in English)."""

    #: The step shows no outcome: a ``stop`` (its query is the final one).
    NOTHING = "nothing"
    #: A search without hits, a property without examples.
    NOTHING_FOUND = "nothing_found"
    #: A search's hits or a property's examples: :attr:`StepSummary.lines`, ``label (ID): description``.
    FOUND = "found"
    #: An entry: its heading line, and how many properties its statements use (:attr:`StepSummary.count`).
    ENTRY = "entry"
    NO_SUCH_ENTITY = "no_such_entity"
    #: A query's rows: :attr:`StepSummary.variables` and :attr:`StepSummary.rows`, ``count`` in all.
    ROWS = "rows"
    NO_ROWS = "no_rows"
    #: An ASK's answer, :attr:`StepSummary.boolean`.
    ANSWER = "answer"
    SYNTAX_ERROR = "syntax_error"
    ERROR = "error"
    TIMEOUT = "timeout"
    #: The observation as plain text (:attr:`StepSummary.lines`): a step that kept no data.
    TEXT = "text"


#: A query's failures, by its status.
_FAILURES = {"syntax_error": Said.SYNTAX_ERROR, "error": Said.ERROR, "timeout": Said.TIMEOUT}


@dataclass(frozen=True)
class StepSummary:
    """One step as a reader sees it.  ``lines`` and ``rows`` are the first of what the step saw (at most as many
    as :func:`summarize` was asked for); ``more`` says how many lines, or rows, were left out."""

    action: str
    #: The argument on one line, cut at :data:`ARGUMENT_CHARS`; a query as written; "" for ``stop``.
    argument: str
    said: Said
    lines: list[str] = field(default_factory=list)
    more: int = 0
    #: A query's rows in all; an entry's properties; ``None`` when the step did not say.
    count: int | None = None
    variables: list[str] = field(default_factory=list)
    rows: list[Binding] = field(default_factory=list)
    boolean: bool | None = None
    #: Why a query failed, as the knowledge base said it (its first line).
    message: str = ""
    #: The IDs of the query no earlier step had shown, for a line of their own.
    unseen_ids: list[str] = field(default_factory=list)

    def outcome(self) -> list[str]:
        """The outcome in English, one short line each (the chat page's words): "12 rows", "no such entity",
        the hits; a table's rows are not among them (each reader lays them out)."""
        if self.said == Said.NOTHING:
            return []
        if self.said in _ENGLISH:
            return [_ENGLISH[self.said]]
        if self.said == Said.ANSWER:
            return ["yes" if self.boolean else "no"]
        if self.said in (Said.SYNTAX_ERROR, Said.ERROR):
            return [("Syntax error" if self.said == Said.SYNTAX_ERROR else "Error") + f": {self.message}"]
        if self.said == Said.ROWS:
            return [_plural(self.count or 0, "row")]
        lines = list(self.lines)
        if self.said == Said.ENTRY:
            return lines + [f"({_plural(self.count or 0, 'property', 'properties')})"]
        return lines + ([f"… {_plural(self.more, 'more line')}"] if self.more else [])


_ENGLISH = {Said.NOTHING_FOUND: "Nothing found.", Said.NO_SUCH_ENTITY: "No such entity.", Said.NO_ROWS: "No rows.",
            Said.TIMEOUT: "The query timed out."}


def _plural(count: int, one: str, other: str = "") -> str:
    return f"{count:,} {one if count == 1 else other or one + 's'}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def named_line(named: Named) -> str:
    """``label (ID): description``, as a search hit or an entry's heading reads; the ID alone without a label."""
    if not named.label.strip() or named.label == named.id:
        return _one_line(f"{named.id}: {named.description}").rstrip(": ")
    return _one_line(f"{named.label} ({named.id}): {named.description}").rstrip(": ")


def _value_line(value: Named) -> str:
    return _one_line(f"{value.label} ({value.id})" if value.id else value.label)


def example_line(example: Example, pid: str) -> str:
    """``Douglas Adams (Q42) P69 St John's College (Q691283)``: one use of property *pid*."""
    return f"{_value_line(example.subject)} {pid} {_value_line(example.value)}"


def _first(found: list[str], limit: int | None) -> tuple[list[str], int]:
    shown = found if limit is None else found[:limit]
    return shown, len(found) - len(shown)


def _argument(step: Step) -> str:
    if step.action == "execute_sparql":
        return step.argument.strip("\n")
    argument = _one_line(step.argument)
    return argument if len(argument) <= ARGUMENT_CHARS else argument[:ARGUMENT_CHARS - 1] + "…"


def summarize(step: Step, graph: GraphProfile | str = WIKIDATA, lines: int | None = None,
              rows: int | None = None) -> StepSummary:
    """*step* as a reader sees it on *graph*, with at most *lines* lines (hits, examples, plain text) and *rows*
    rows of what it saw (all of what the step kept with ``None``): the one definition of a step's outcome, made
    from the data the step kept, never from its observation's text."""
    action = shown_name(step.action, graph) if step.action else ""
    base = {"action": action, "argument": _argument(step) if step.action != "stop" else "",
            "unseen_ids": list(step.unseen_ids)}
    if step.action == "stop":
        return StepSummary(said=Said.NOTHING, **base)
    seen = step.seen
    if seen is None:  # nothing kept as data: the observation as plain text, never parsed
        text = [line.rstrip() for line in (step.observation or "").strip().splitlines() if line.strip()]
        if step.action == "execute_sparql":
            if step.query_status == QueryStatus.EMPTY:
                return StepSummary(said=Said.NO_ROWS, count=0, **base)
            if step.rows and step.variables:
                return _rows(step, base, rows)
            text = text[:1]  # the query's first line: what came after it was said to the model alone
        shown, more = _first(text, lines)
        return StepSummary(said=Said.TEXT, lines=shown, more=more, **base)
    if step.action == "execute_sparql":
        if step.query_status in _FAILURES:
            message = seen.message.strip().splitlines()[0] if seen.message.strip() else ""
            return StepSummary(said=_FAILURES[step.query_status], message=message, **base)
        if seen.boolean is not None:
            return StepSummary(said=Said.ANSWER, boolean=seen.boolean, count=1, **base)
        if step.query_status == QueryStatus.EMPTY or not step.row_count:
            return StepSummary(said=Said.NO_ROWS, count=0, **base)
        return _rows(step, base, rows)
    if seen.missing:
        return StepSummary(said=Said.NO_SUCH_ENTITY, **base)
    if step.action == "get_wikidata_entry" and seen.entity is not None:
        return StepSummary(said=Said.ENTRY, lines=[named_line(seen.entity)], count=len(seen.properties), **base)
    if step.action == "get_property_examples":
        pid = seen.entity.id if seen.entity else step.argument
        found = [example_line(example, pid) for example in seen.examples]
    else:
        found = [named_line(hit) for hit in seen.hits + seen.properties]
    if not found:
        return StepSummary(said=Said.NOTHING_FOUND, **base)
    shown, more = _first(found, lines)
    return StepSummary(said=Said.FOUND, lines=shown, more=more, count=len(found), **base)


def _rows(step: Step, base: dict, limit: int | None) -> StepSummary:
    count = step.row_count if step.row_count is not None else len(step.rows)
    kept = step.rows if limit is None else step.rows[:limit]
    return StepSummary(said=Said.ROWS, variables=list(step.variables), rows=kept, count=count,
                       more=count - len(kept), **base)


def property_names(steps: list[Step]) -> dict[str, str]:
    """The properties the steps showed the model (a search's property hits, the properties of an entry's
    statements), by ID: the label the knowledge base gave each, the first one seen."""
    labels: dict[str, str] = {}
    for step in steps:
        for named in step.seen.properties if step.seen else ():
            if named.label.strip():
                labels.setdefault(named.id, _one_line(named.label))
    return labels
