"""The one interface the agent uses to look at a knowledge base.

Every backend (live Wikidata, the embedded Oxigraph store, a recorded one used
to replay real runs) answers the agent's four lookups, and names the IDs a
query uses (:meth:`KnowledgeBase.describe`), with the plain data
classes below.  Turning them into text for the model is the job of
:mod:`agent.observations`, so every backend yields observations of the same
shape.

Failures are split the way the agent needs them: what a *query* did (syntax
error, timeout, no rows) is a :class:`QueryResult` status the model learns
from; a service that cannot be reached at all raises :class:`KBUnavailable`,
which ends the run instead of being shown to the model as if it were data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from agent.graph import GraphProfile


class QueryStatus(StrEnum):
    """What a query did; stored (traces, run records) as its value."""

    OK = "ok"
    EMPTY = "empty"
    SYNTAX_ERROR = "syntax_error"
    TIMEOUT = "timeout"
    ERROR = "error"

    @property
    def ran(self) -> bool:
        """The query ran to its end: it has an answer, rows or none."""
        return self in (QueryStatus.OK, QueryStatus.EMPTY)


#: A SPARQL JSON term: ``{"type": "uri", "value": ...}``, with optional
#: ``xml:lang`` or ``datatype`` keys, exactly as the query service sends it.
Term = dict[str, str]
#: One row of SPARQL JSON results: variable name to term; unbound variables are absent.
Binding = dict[str, Term]


class KBUnavailable(RuntimeError):
    """The knowledge base could not answer at all (network down, retries exhausted)."""


@dataclass(frozen=True)
class SearchHit:
    """One entity or property found by :meth:`KnowledgeBase.search`."""

    id: str
    label: str
    description: str = ""
    #: Wikibase datatype of a property (``wikibase-item``, ``external-id``, ...);
    #: ``None`` for items.
    datatype: str | None = None


@dataclass
class SearchResults:
    items: list[SearchHit] = field(default_factory=list)
    properties: list[SearchHit] = field(default_factory=list)


@dataclass(frozen=True)
class Value:
    """A claim's or qualifier's value as a person reads it.

    ``text`` is the label of an entity or the literal itself (a date, a
    quantity with its unit's label, a string); ``id`` is the QID or PID when
    the value is an entity.
    """

    text: str
    id: str | None = None


@dataclass(frozen=True)
class Qualifier:
    property_id: str
    property_label: str
    value: Value


@dataclass
class Claim:
    """One outgoing statement of an entity, with its qualifiers."""

    property_id: str
    property_label: str
    value: Value
    qualifiers: list[Qualifier] = field(default_factory=list)
    rank: str = "normal"


@dataclass
class Entry:
    """An entity page: its outgoing edges, external identifiers left out."""

    id: str
    label: str
    description: str = ""
    claims: list[Claim] = field(default_factory=list)


@dataclass
class PropertyExample:
    """One ``P1855`` (Wikidata property example) statement of a property."""

    subject: Value
    value: Value
    qualifiers: list[Qualifier] = field(default_factory=list)


@dataclass
class QueryResult:
    """The outcome of one SPARQL query.

    ``bindings`` holds SPARQL JSON rows for SELECT queries, ``boolean`` the
    answer of an ASK query.  ``truncated`` says the response was cut to the
    size limit (``message`` then says where).  ``shown`` is how a graph whose
    IRIs say little shows the ones in the result (an entity with its name, a
    KQA Pro value node as its value); Wikidata's need nothing.
    """

    status: QueryStatus
    variables: list[str] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    boolean: bool | None = None
    message: str = ""
    truncated: bool = False
    shown: dict[str, str] = field(default_factory=dict)
    #: The key of the engine that answered (``wdqs``, ``qlever``); "" where a backend has only one.
    engine: str = ""
    #: One line for the model when the main engine could not answer and another did ("The query service was
    #: busy (HTTP 429); QLever answered:"); "" otherwise.
    fallback: str = ""

    def __post_init__(self) -> None:
        self.status = QueryStatus(self.status)  # a bad status is an error here, not a surprise later

    @property
    def row_count(self) -> int:
        """Rows the result holds: one for an ASK's answer."""
        return 1 if self.boolean is not None else len(self.bindings)

    @property
    def answer(self) -> list[Binding] | bool | None:
        """Rows of a SELECT, the boolean of an ASK, or ``None`` when the query failed."""
        if not self.status.ran:
            return None
        if self.boolean is not None:
            return self.boolean
        return self.bindings

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> QueryResult:
        return cls(**data)


# -- where a final query runs (agent.kb.engines runs it; these are what travels) ---------------------

class EngineOutcome(StrEnum):
    """How one engine took the final query."""

    #: It ran; ``rows`` says how many rows (or 1 for an ASK).
    ANSWERED = "answered"
    #: The query uses a feature this engine does not have (e.g. ``SERVICE wikibase:mwapi`` on QLever).
    UNSUPPORTED = "unsupported"
    #: The engine gave up within its time limit.
    TIMEOUT = "timeout"
    #: The engine asked us to come back later: HTTP 429, 503, or a maintenance answer.
    BUSY = "busy"
    #: Anything else: the engine refused the query (a parse error in its dialect) or failed.
    FAILED = "failed"


@dataclass(frozen=True)
class Engine:
    """One SPARQL engine an operator configures."""

    #: Short and stable, for logs, run records and options: ``wdqs``, ``qlever``.
    key: str
    #: As a reader says it: "the query service", "QLever".
    name: str
    #: The SPARQL endpoint queries go to.
    endpoint: str
    #: What it understands (see :mod:`agent.kb.dialect`).
    dialect: str
    #: Where a reader opens a query in the engine's own page; the query goes after it, percent-encoded.
    try_url: str = ""


@dataclass(frozen=True)
class DataDate:
    """How fresh an engine's copy of the graph is, and where that date comes from."""

    #: When the copy was last brought up to date (timezone-aware, UTC).
    modified: datetime
    #: Where the date was read, said to a reader: "schema:dateModified", "index date", "load manifest".
    source: str


@dataclass(frozen=True)
class EngineRun:
    """What one engine made of the final query."""

    engine: Engine
    outcome: EngineOutcome
    #: Rows found (1 for an ASK); ``None`` unless answered.
    rows: int | None = None
    #: One line for a reader when not answered ("QLever does not support SERVICE wikibase:mwapi").
    reason: str = ""
    #: The query as this engine needs it, percent-encoded after ``engine.try_url``; "" when it cannot run it.
    try_link: str = ""
    #: How fresh the engine's data is; ``None`` when it did not say.
    data_date: DataDate | None = None
    #: The answer as a set of rows (each a sorted tuple of (variable, value) pairs), to tell where engines differ.
    answer: frozenset[tuple[tuple[str, str], ...]] = field(default=frozenset(), compare=False, repr=False)


@dataclass(frozen=True)
class CrossCheck:
    """The final query on every configured engine, in the operator's order (the first is the main one)."""

    runs: tuple[EngineRun, ...]
    #: Engines whose data is older than the operator's threshold.
    stale: tuple[str, ...] = ()

    @property
    def answered(self) -> tuple[EngineRun, ...]:
        return tuple(run for run in self.runs if run.outcome is EngineOutcome.ANSWERED)

    @property
    def agree(self) -> bool:
        """Every engine answered, with the same rows."""
        answers = {run.answer for run in self.runs}
        return len(self.answered) == len(self.runs) and len(answers) <= 1

    def only_in(self, run: EngineRun) -> int:
        """How many of *run*'s rows no other answering engine has."""
        others = set().union(*(other.answer for other in self.answered if other is not run))
        return len(run.answer - others)

    def to_dict(self) -> dict[str, Any]:
        """JSON for run records; the rows themselves are not kept (their count is)."""
        return {"stale": list(self.stale), "runs": [{
            "engine": vars(run.engine), "outcome": run.outcome.value, "rows": run.rows, "reason": run.reason,
            "try_link": run.try_link,
            "data_date": run.data_date and {"modified": run.data_date.modified.isoformat(),
                                            "source": run.data_date.source},
        } for run in self.runs]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrossCheck:
        return cls(stale=tuple(data.get("stale", ())), runs=tuple(EngineRun(
            engine=Engine(**run["engine"]), outcome=EngineOutcome(run["outcome"]), rows=run["rows"],
            reason=run["reason"], try_link=run["try_link"],
            data_date=run["data_date"] and DataDate(datetime.fromisoformat(run["data_date"]["modified"]),
                                                    run["data_date"]["source"]),
        ) for run in data["runs"]))


@runtime_checkable
class KnowledgeBase(Protocol):
    """What the agent needs from Wikidata, or from anything shaped like it."""

    #: The graph it holds: its IDs, names and the graph-specific lines of the agent's prompts.
    graph: GraphProfile

    @property
    def stale_after_days(self) -> float | None:
        """Days after which an engine's data is named stale (live Wikidata's ``WIKIDATA_STALE_AFTER_DAYS``);
        ``None`` where no data is named stale (a local store, a recording, or 0 days configured)."""
        ...

    def search(self, text: str) -> SearchResults:
        """Items (at most 8) and properties (at most 4) matching *text*, best first."""
        ...

    def get_entry(self, qid: str) -> Entry | None:
        """The outgoing edges of *qid*; ``None`` when no such entity exists."""
        ...

    def property_examples(self, pid: str) -> list[PropertyExample] | None:
        """The ``P1855`` examples of *pid*; ``None`` when no such property exists."""
        ...

    def execute(self, sparql: str, timeout: float | None = None) -> QueryResult:
        """Run *sparql*; *timeout* in seconds, the backend's default when ``None``."""
        ...

    def describe(self, ids: list[str], language: str | None = None) -> list[SearchHit]:
        """Label, description and (for a property) datatype of each of *ids* that exists; one lookup.

        The label is in *language* (the knowledge base's own when ``None``), never another language's put in
        its place: an entity without one is named by its ID."""
        ...

    def cross_check(self, sparql: str, seconds: float | None = None,
                    known: QueryResult | None = None) -> CrossCheck | None:
        """The final query *sparql* on every engine this knowledge base has, at most *seconds* each (*known*: the
        run's own result of it, which stands for the main engine's); ``None`` where there is no engine to ask (a
        recording) or none could be asked."""
        ...
