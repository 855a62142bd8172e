"""The record of one agent run.

One record serves three readers: the next LLM call (the history in the
prompt), the bot (the collapsed trace in its reply and its SQLite state) and
the evaluation harness (stored traces, costs, action counts).  Everything
here round-trips through JSON with :meth:`AgentResult.to_dict` and
:meth:`AgentResult.from_dict`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from agent.kb.base import Binding, CrossCheck, QueryResult, QueryStatus, SearchHit, Value

#: The rows of a query's result a step keeps as data (the model reads more in its observation).
KEPT_ROWS = 10


@dataclass
class Named:
    """An item or property as the knowledge base named it to the model: its ID, label and description, and a
    property's datatype ("" for an item)."""

    id: str
    label: str = ""
    description: str = ""
    datatype: str = ""

    @classmethod
    def of(cls, hit: SearchHit) -> Named:
        return cls(hit.id, hit.label, hit.description, hit.datatype or "")


@dataclass
class Example:
    """One use of a property: its subject and its value (a literal's ``id`` is "")."""

    subject: Named
    value: Named

    @classmethod
    def of(cls, subject: Value, value: Value) -> Example:
        return cls(Named(subject.id or "", subject.text), Named(value.id or "", value.text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Example:
        return cls(Named(**data["subject"]), Named(**data["value"]))


@dataclass
class Seen:
    """What an action showed the model, as data beside its text (the observation).

    A search keeps its ``hits`` (items) and the ``properties`` it found; an
    entry itself as ``entity``, how many ``statements`` it has and the
    ``properties`` they use; a property's examples the property as
    ``entity`` and its ``examples``.  ``missing`` says the entity the
    argument names does not exist.  A query keeps its answer to an ASK
    (``boolean``), the reason the knowledge base gave for a failure
    (``message``), the line saying another engine answered (``fallback``),
    whether the response was cut (``truncated``), how many rows ``arrived``
    before a timeout, and the names the naming note gave the IDs no earlier
    step had shown (``named``; ``None`` without a note); its rows stay on the
    step.  Readers other than the model (the reply's steps, the chat page,
    the model's own prompt once the step is old) show a step from this,
    never by reading its observation back.
    """

    hits: list[Named] = field(default_factory=list)
    properties: list[Named] = field(default_factory=list)
    entity: Named | None = None
    statements: int | None = None
    examples: list[Example] = field(default_factory=list)
    missing: bool = False
    boolean: bool | None = None
    message: str = ""
    fallback: str = ""
    truncated: bool = False
    arrived: int | None = None
    named: list[Named] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Seen:
        values = dict(data)
        values["hits"] = [Named(**hit) for hit in values.get("hits", [])]
        if values.get("named") is not None:
            values["named"] = [Named(**named) for named in values["named"]]
        values["properties"] = [Named(**named) for named in values.get("properties", [])]
        values["examples"] = [Example.from_dict(example) for example in values.get("examples", [])]
        if values.get("entity") is not None:
            values["entity"] = Named(**values["entity"])
        return cls(**values)


@dataclass
class Step:
    """One thought, one action and what the knowledge base answered.

    ``observation`` is the text the model saw.  ``rolled_back`` marks steps
    the agent later discarded (a repeated action, a ``stop`` without a usable
    query); they stay in the record but leave the prompt.  For
    ``execute_sparql`` steps, ``query_status`` and ``row_count`` keep the
    outcome in a form code can read without parsing the observation, and
    ``unseen_ids`` the IDs of the query that no earlier observation had
    shown, which its observation names (:mod:`agent.grounding`).  A query
    that returned rows keeps its ``variables`` and its first rows as the
    knowledge base gave them (SPARQL JSON terms, at most :data:`KEPT_ROWS`),
    with ``shown``, the text a graph shows for IRIs that say little
    (:attr:`QueryResult.shown`): what readers other than the model (the
    bot's steps, the chat page) show, each in its own way.  ``seen`` is what
    the action showed as data (:class:`Seen`, made with its observation);
    ``None`` on a step whose action did not run and on steps recorded before
    steps kept it.
    """

    thought: str
    action: str
    argument: str
    observation: str | None = None
    rolled_back: bool = False
    query_status: str | None = None
    row_count: int | None = None
    unseen_ids: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    rows: list[Binding] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)
    #: The key of the engine that answered an ``execute_sparql`` (``wdqs``, ``qlever``: another when the main
    #: one was busy or too slow); "" where the knowledge base has one.
    engine: str = ""
    seen: Seen | None = None

    def says_something(self) -> bool:
        """Whether a trace shows this step: every step but a ``stop`` that says nothing (its query is the final
        one, shown as the answer)."""
        return self.action != "stop" or bool(self.thought.strip())

    def record_query(self, result: QueryResult) -> None:
        """Keep what a query step's *result* says as data: its status, the engine that answered, its row count
        (one for an ASK's answer; none for a failure) and its first rows (those that arrived before a timeout,
        too)."""
        self.query_status = result.status
        self.engine = result.engine
        self.row_count = result.row_count if result.status.ran else None
        if result.status in (QueryStatus.OK, QueryStatus.TIMEOUT) and result.bindings:
            self.keep_rows(result)

    def keep_rows(self, result: QueryResult) -> None:
        """Keep the variables and the first rows of *result*, and the shown text of the IRIs they hold."""
        self.variables = list(result.variables)
        self.rows = [dict(row) for row in result.bindings[:KEPT_ROWS]]
        iris = {term.get("value") for row in self.rows for term in row.values() if term.get("type") == "uri"}
        self.shown = {iri: text for iri, text in result.shown.items() if iri in iris}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        fields = dict(data)  # records written before a field existed take its default
        if fields.get("seen") is not None:
            fields["seen"] = Seen.from_dict(fields["seen"])
        return cls(**fields)


@dataclass
class Usage:
    """What a run cost."""

    #: Requests sent to the model: those that failed or timed out, and the client's retries, included.
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    kb_calls: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(**data)


class StopReason(StrEnum):
    """Why a run ended; stored as its value in traces, results files and the bot's state."""

    #: The model stopped on a query with results.
    STOP = "stop"
    #: The model stopped saying the graph cannot answer the question; no final query.
    CANNOT_ANSWER = "cannot_answer"
    PATH_LIMIT = "path_limit"
    ACTION_LIMIT = "action_limit"
    #: The model kept stopping without a usable query.
    REPEATED_STOP = "repeated_stop"
    #: Reply after reply held no action that could be run.
    NO_USABLE_ACTION = "no_usable_action"
    #: Step after step learnt nothing new (no entity, property or rows the run had not seen).
    NO_PROGRESS = "no_progress"
    #: The run's time (:attr:`agent.AgentConfig.max_seconds`) was spent.
    TIME_LIMIT = "time_limit"
    #: A prompt outgrew the model's context; the run ends with a best effort.
    CONTEXT_LENGTH = "context_length"
    LLM_ERROR = "llm_error"
    KB_ERROR = "kb_error"


#: Runs cut short by a service that could not be reached: nothing the model did, worth trying again later.
SERVICE_FAILURES = (StopReason.LLM_ERROR, StopReason.KB_ERROR)
#: Runs that used up their budget of actions.
BUDGET_LIMITS = (StopReason.PATH_LIMIT, StopReason.ACTION_LIMIT)


class RunEnded(Exception):
    """A run ends before the model stopped on a query: raised inside the loop and its end-of-run calls, caught
    where the run's answer is decided."""

    def __init__(self, reason: StopReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class AgentResult:
    """What :meth:`agent.Agent.run` returns.

    ``answer`` holds the final query's SPARQL JSON rows, or a boolean for an
    ASK query, or ``None`` when there is no final query.

    ``stop_reason`` says why the run ended (:class:`StopReason`).

    ``explanation`` is the model's account of the answer in 2-5 sentences, in
    the asker's language (``language``, a BCP 47 code, "" when unknown): what
    the query returns and relies on, or what was tried when nothing was
    found.  ``best_effort`` says the final query was not chosen by the
    model's own ``stop`` but by the end-of-run extraction call (or, when that
    found nothing, is the last query that returned rows), so the bot must say
    so.  ``final_unseen_ids`` are the IDs of the extraction's query that the
    trace never showed, named to the model before the run ended.
    ``end_of_run`` holds ``extraction`` when the extraction call wrote the
    final query (records written before the rewrites left the agent may name
    them too).
    """

    question: str
    final_sparql: str | None
    answer: list[Binding] | bool | None
    variables: list[str]
    steps: list[Step]
    stop_reason: StopReason
    stop_message: str = ""
    usage: Usage = field(default_factory=Usage)
    explanation: str = ""
    language: str = ""
    best_effort: bool = False
    end_of_run: list[str] = field(default_factory=list)
    final_unseen_ids: list[str] = field(default_factory=list)
    #: ``tools`` or ``text``: the protocol the run ended in, and why it switched ("" when it did not): each
    #: change of protocol or ``tool_choice`` with its cause, in order, ``; ``-separated.
    protocol: str = "tools"
    protocol_switch: str = ""
    #: The ``tool_choice`` of the run's last tools request: ``required``, or ``auto`` after an endpoint refused it.
    tool_choice: str = "required"
    #: The model the endpoint said answered ("" when it did not say).
    model: str = ""
    #: The final query on every engine the operator configured; ``None`` when it was not run on them.
    cross_check: CrossCheck | None = None

    @property
    def final_engine(self) -> str:
        """The key of the engine that answered the final query during the run ("" when unknown)."""
        if self.final_sparql is None:
            return ""
        return next((step.engine for step in reversed(self.steps)
                     if step.action == "execute_sparql" and step.argument == self.final_sparql and step.engine), "")

    @property
    def path(self) -> list[Step]:
        """The steps that were not rolled back, in order."""
        return [step for step in self.steps if not step.rolled_back]

    @property
    def id_checks(self) -> int:
        """How often the run named IDs no observation had shown: queries it ran, and the extraction's query."""
        return sum(bool(step.unseen_ids) for step in self.steps) + bool(self.final_unseen_ids)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = [step.to_dict() for step in self.steps]
        data["usage"] = self.usage.to_dict()
        data["cross_check"] = self.cross_check and self.cross_check.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentResult:
        fields = dict(data)  # records written before a field existed take its default
        fields["steps"] = [Step.from_dict(step) for step in fields["steps"]]
        fields["usage"] = Usage.from_dict(fields["usage"])
        fields["stop_reason"] = StopReason(fields["stop_reason"])
        if fields.get("cross_check"):
            fields["cross_check"] = CrossCheck.from_dict(fields["cross_check"])
        return cls(**fields)
