"""Where a final query runs: the engines an operator configures, what each found, and how fresh its data is.

Readers run a posted query where they are: today the Wikidata Query Service, tomorrow QLever.  So the final
query is run on every configured engine, each in its own dialect (:mod:`agent.kb.dialect`), and the reply
says what each found.  What travels from the run to the reply, the chat page, the preview and the evaluation
(:class:`agent.kb.base.CrossCheck` and its parts) is plain data beside the knowledge base's other answers; each
reader renders it, none parses text back.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from agent.kb.base import CrossCheck, DataDate, Engine, EngineOutcome, EngineRun, QueryResult, QueryStatus
from agent.kb.dialect import Unsupported, prepare
from agent.query_service import percent_encoded
from agent.sparql_lexer import tokenize


# -- the engines an operator names ------------------------------------------------------------------

#: The Wikidata Query Service: every query as written for it.
WDQS = Engine("wdqs", "the query service", "https://query.wikidata.org/sparql", "wdqs", "https://query.wikidata.org/#")
#: QLever's Wikidata endpoint; its UI opens a query given as ``?query=`` (the link its "Share" button makes).
QLEVER = Engine("qlever", "QLever", "https://qlever.dev/api/wikidata", "qlever", "https://qlever.dev/wikidata/?query=")
#: Engines named by their key alone.
KNOWN_ENGINES: dict[str, Engine] = {engine.key: engine for engine in (WDQS, QLEVER)}
#: How an entry of an engine list is written, for error messages.
ENGINE_FORMS = "a known engine (wdqs, qlever), or KEY=ENDPOINT [DIALECT [TRY_URL]]"


class EngineConfigError(ValueError):
    """An engine list that cannot be read; the message names the setting it came from."""


def parse_engine(text: str, where: str, dialects: tuple[str, ...]) -> Engine:
    """One entry: ``qlever``, ``qlever=http://mirror/api`` (a known engine elsewhere), or
    ``mirror=http://host/sparql sparql11 http://host/#`` (a new one, named by its key)."""
    key, equals, rest = (part.strip() for part in text.partition("="))
    known = KNOWN_ENGINES.get(key)
    if not equals:
        if known is None:
            raise EngineConfigError(f"{where}: unknown engine {key!r}: give {ENGINE_FORMS}")
        return known
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", key):
        raise EngineConfigError(f"{where}: {key!r} is no engine key (lower-case letters, digits, - and _)")
    fields = rest.split()
    if not fields or not fields[0].startswith(("http://", "https://")) or len(fields) > 3:
        raise EngineConfigError(f"{where}: {text.strip()!r}: give {ENGINE_FORMS}")
    dialect = fields[1] if len(fields) > 1 else known.dialect if known else "sparql11"
    if dialect not in dialects:
        raise EngineConfigError(f"{where}: engine {key!r}: dialect must be one of {', '.join(dialects)}, "
                                f"not {dialect!r}")
    try_url = fields[2] if len(fields) > 2 else known.try_url if known else ""
    return Engine(key, known.name if known else key, fields[0], dialect, try_url)


def parse_engines(entries: str | list[str] | tuple[str, ...], where: str,
                  dialects: tuple[str, ...]) -> tuple[Engine, ...]:
    """An engine list, in order (the first is the main one): comma-separated text or a list of entries; each
    key at most once.  :class:`EngineConfigError` names *where* (the option, variable or profile key)."""
    if isinstance(entries, str):
        entries = entries.split(",")
    engines = tuple(parse_engine(entry, where, dialects) for entry in entries if entry.strip())
    if not engines:
        raise EngineConfigError(f"{where}: name at least one engine ({ENGINE_FORMS})")
    keys = [engine.key for engine in engines]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise EngineConfigError(f"{where}: engine {', '.join(twice)} named twice")
    return engines


def compact(query: str) -> str:
    """*query* with each run of blanks outside strings and comments as one (a line break kept): a rewritten
    query's blanked-out parts make no link longer."""
    return "".join(("\n" if "\n" in token.text else " ") if token.kind == "space" else token.text
                   for token in tokenize(query))


def try_link(engine: Engine, query: str) -> str:
    """The URL that opens *query* in *engine*'s own page: every byte but ASCII letters and digits percent-encoded
    (as the bot's query service link is), so the URL holds no markup; "" when the engine has no such page."""
    return engine.try_url + percent_encoded(query) if engine.try_url else ""


# -- one engine's answer ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Attempt:
    """What one request to one engine gave: its outcome, the result (``None`` when nothing came back) and, when
    it did not answer, a line for a reader."""

    outcome: EngineOutcome
    result: QueryResult | None = None
    reason: str = ""


def attempt_of(result: QueryResult) -> Attempt:
    """A result already in hand (the run's own) as an attempt: its status says the outcome."""
    outcome = (EngineOutcome.ANSWERED if result.status.ran
               else EngineOutcome.TIMEOUT if result.status is QueryStatus.TIMEOUT else EngineOutcome.FAILED)
    return Attempt(outcome, result, "" if outcome is EngineOutcome.ANSWERED else " ".join(result.message.split()))


def answer_set(result: QueryResult) -> frozenset[tuple[tuple[str, str], ...]]:
    """*result*'s rows as a set, each row its sorted (variable, value) pairs; an ASK as one row."""
    if result.boolean is not None:
        return frozenset({(("boolean", str(result.boolean).lower()),)})
    return frozenset(tuple(sorted((name, term.get("value", "")) for name, term in row.items()))
                     for row in result.bindings)


# -- the data's date --------------------------------------------------------------------------------

#: The query service's own record of its last update (the updater writes it on every change it applies).
WDQS_DATE_QUERY = ("PREFIX schema: <http://schema.org/>\n"
                   "SELECT ?date WHERE { <http://www.wikidata.org> schema:dateModified ?date }")
#: How far a copy built from a dump is up to date: the dump's date, or the date its updates are complete until
#: once it follows Wikidata's change stream (the query QLever's own ``update-wikidata`` command asks, in
#: ad-freiburg/qlever-control, ``src/qlever/commands/update_wikidata.py``).
DUMP_DATE_QUERY = ("PREFIX wikibase: <http://wikiba.se/ontology#>\nPREFIX schema: <http://schema.org/>\n"
                   "SELECT ?date WHERE { { SELECT (MIN(?modified) AS ?date) { wikibase:Dump schema:dateModified "
                   "?modified } } UNION { wikibase:Dump wikibase:updatesCompleteUntil ?date } } "
                   "ORDER BY DESC(?date) LIMIT 1")
#: A date in QLever's index name: its Wikidata Qleverfile names the index "... version DD.MM.YYYY".
_INDEX_NAME_DATE = re.compile(r"\b(\d{2})\.(\d{2})\.(\d{4})\b|\b(\d{4})-(\d{2})-(\d{2})\b")


def date_query(engine: Engine) -> str:
    """The query that asks *engine* how fresh its data is."""
    return WDQS_DATE_QUERY if engine.dialect == "wdqs" else DUMP_DATE_QUERY


def read_date(text: str) -> datetime | None:
    """An ``xsd:dateTime`` (or date) as a timezone-aware datetime; UTC when it names no zone."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def date_in_result(result: QueryResult) -> datetime | None:
    """The first bound value of *result*'s first row, read as a date."""
    for row in result.bindings[:1]:
        for term in row.values():
            return read_date(term.get("value", ""))
    return None


def index_date(stats: str) -> datetime | None:
    """The date in QLever's ``cmd=stats`` answer: its ``name-index`` (the only field that carries one; the
    others count triples and name git hashes, per ``composeIndexStats`` in QLever's server)."""
    try:
        name = json.loads(stats).get("name-index", "")
    except (ValueError, AttributeError):
        return None
    found = _INDEX_NAME_DATE.search(name if isinstance(name, str) else "")
    if not found:
        return None
    day, month, year = (found.group(1), found.group(2), found.group(3)) if found.group(1) else \
        (found.group(6), found.group(5), found.group(4))
    try:
        return datetime(int(year), int(month), int(day), tzinfo=timezone.utc)
    except ValueError:
        return None


class DataDates:
    """Each engine's data date, asked at most once per *max_age* seconds (it changes slowly; a failed look-up
    is asked again sooner).  *read* asks the engine, bounded by its own timeout."""

    def __init__(self, read: Callable[[Engine], DataDate | None], max_age: float = 600.0,
                 retry_after: float = 60.0) -> None:
        self.read = read
        self.max_age = max_age
        self.retry_after = retry_after
        self._known: dict[Engine, tuple[float, DataDate | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, engine: Engine) -> DataDate | None:
        with self._lock:
            known = self._known.get(engine)
        if known is not None:
            fetched, date = known
            if time.monotonic() - fetched < (self.max_age if date else self.retry_after):
                return date
        date = self.read(engine)
        with self._lock:
            self._known[engine] = (time.monotonic(), date)
        return date


# -- the cross-check --------------------------------------------------------------------------------

def cross_check(query: str, engines: Sequence[Engine], run: Callable[[Engine, str], Attempt],
                dates: Callable[[Engine], DataDate | None], stale_after: timedelta | None = None,
                now: datetime | None = None, language: str = "en") -> CrossCheck:
    """*query* on every engine at once (one thread each), each in its dialect, with each engine's data date.

    *run* sends the query as written for the query service to one engine (it prepares it for the engine's
    dialect and says when the engine cannot run it, one bounded request); *dates* gives an engine's data date.
    An engine whose date is older than *stale_after* is named in ``stale``.
    """
    def one(engine: Engine, date: Future[DataDate | None]) -> EngineRun:
        attempt = run(engine, query)
        try:
            prepared = prepare(query, engine.dialect, language)
        except (Unsupported, SyntaxError):  # the attempt says why; there is no link to give
            prepared = ""
        result = attempt.result
        answered = attempt.outcome is EngineOutcome.ANSWERED and result is not None
        shown = prepared if prepared == query else compact(prepared)
        runnable = bool(prepared) and attempt.outcome is not EngineOutcome.UNSUPPORTED
        return EngineRun(engine, attempt.outcome, rows=result.row_count if answered else None,
                         reason=attempt.reason, try_link=try_link(engine, shown) if runnable else "",
                         data_date=date.result(), answer=answer_set(result) if answered else frozenset())

    with ThreadPoolExecutor(max_workers=max(1, 2 * len(engines))) as pool:  # each query beside each date look-up
        asked = [pool.submit(dates, engine) for engine in engines]
        runs = tuple(pool.map(one, engines, asked))
    now = now or datetime.now(timezone.utc)
    stale = tuple(run.engine.key for run in runs
                  if stale_after is not None and run.data_date and now - run.data_date.modified > stale_after)
    return CrossCheck(runs=runs, stale=stale)


def unsupported_reason(engine: Engine, error: Exception) -> str:
    """``QLever does not support SERVICE wikibase:mwapi``, from :class:`agent.kb.dialect.Unsupported`'s message."""
    found = re.search(r":\s*(.+?)\s*\(", str(error))
    return f"{engine.name} does not support {found.group(1) if found else error}"
