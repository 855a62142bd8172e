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
from enum import StrEnum
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class KnowledgeBase(Protocol):
    """What the agent needs from Wikidata, or from anything shaped like it."""

    #: The graph it holds: its IDs, names and the graph-specific lines of the agent's prompts.
    graph: GraphProfile

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
