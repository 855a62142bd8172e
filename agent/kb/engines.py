"""Where a final query runs: the engines an operator configures, what each found, and how fresh its data is.

Readers run a posted query where they are: today the Wikidata Query Service, tomorrow QLever.  So the final
query is run on every configured engine, each in its own dialect (:mod:`agent.kb.dialect`), and the reply
says what each found.  These are the data that travel from the run to the reply, the chat page, the preview
and the evaluation; each renders them, none parses text back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


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
