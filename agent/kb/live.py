"""The live backend: Wikidata's Action API and the Wikidata Query Service.

Both endpoints are configuration, so any Wikibase and any SPARQL endpoint
(QLever's Wikidata endpoint, the scholarly graph split) can stand in.  Queries
go to the query service untouched; for other engines the ``dialect`` setting
prepares them (:mod:`agent.kb.dialect`), while search, entries and property
examples keep coming from the Action API.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import requests

from agent.graph import WIKIDATA
from agent.kb.base import (
    Claim, CrossCheck, DataDate, Engine, EngineOutcome, Entry, KBUnavailable, PropertyExample, Qualifier, QueryResult,
    QueryStatus, SearchHit, SearchResults, Value,
)
from agent.kb.cache import CachedResponse, ResponseCache
from agent.kb.dialect import DIALECTS, ENTITY, Unsupported, prepare
from agent.kb.engines import (
    KNOWN_ENGINES, Attempt, DataDates, EngineConfigError, attempt_of, cross_check, date_in_result, date_query,
    index_date, parse_engines, unsupported_reason,
)
from agent.kb.http import EngineBusy, HttpClient, well_formed

ENTITY_PREFIX = ENTITY
MAX_RESPONSE_BYTES = 10 * 1024 * 1024
#: One query at a time per endpoint, as the query service asks of its clients.
_QUERY_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()
#: The key of an endpoint named only by its URL (``sparql_url``), not as an engine.
UNNAMED = "sparql"
#: Where the profile's engine list is read from, for its error messages.
PROFILE_ENGINES = "agent/profiles/wikidata.toml [sparql] engines"


def _query_lock(endpoint: str) -> threading.Lock:
    with _LOCKS_LOCK:
        return _QUERY_LOCKS.setdefault(endpoint, threading.Lock())


def main_engine(url: str, dialect: str) -> Engine:
    """The engine at *url*: a known one (the query service, QLever) by its endpoint, else one named by its host."""
    for known in KNOWN_ENGINES.values():
        if known.endpoint == url:
            return known if known.dialect == dialect else replace(known, dialect=dialect)
    host = urllib.parse.urlsplit(url).netloc or url
    return Engine(UNNAMED, f"the SPARQL endpoint at {host}", url, dialect)


@dataclass
class WikidataConfig:
    api_url: str = WIKIDATA.api
    sparql_url: str = WIKIDATA.endpoint
    #: What the SPARQL endpoint understands: ``wdqs``, ``qlever`` or ``sparql11`` (see :mod:`agent.kb.dialect`).
    dialect: str = WIKIDATA.dialect
    #: Who to contact about the traffic (an email address or a user page), sent in the User-Agent.
    contact: str = ""
    language: str = "en"
    timeout: float = 60.0
    max_response_bytes: int = MAX_RESPONSE_BYTES
    #: The engines a final query runs on and a busy one falls back to, the main one first; empty: the one at
    #: ``sparql_url``, followed by the profile's others (QLever) when that is the query service.
    engines: tuple[Engine, ...] = ()
    #: Days after which an engine's data is named stale in a reply; 0 for never.
    stale_after_days: float = 2.0
    #: Seconds each engine gets for the final query's cross-check and its data date (one request, no retries).
    check_timeout: float = 20.0

    def all_engines(self) -> tuple[Engine, ...]:
        """The engines, in order: :attr:`engines`, or the ones the endpoint and the profile imply."""
        if self.engines:
            return self.engines
        main = main_engine(self.sparql_url, self.dialect)
        if self.sparql_url != WIKIDATA.endpoint or not WIKIDATA.engines:
            return (main,)
        others = parse_engines(WIKIDATA.engines, PROFILE_ENGINES, DIALECTS)
        return (main, *(engine for engine in others if engine.key != main.key))

    @property
    def stale_after(self) -> timedelta | None:
        return timedelta(days=self.stale_after_days) if self.stale_after_days > 0 else None

    def with_engines(self, text: str, where: str) -> WikidataConfig:
        """This configuration with the engine list *text* (the first engine answers the agent's queries);
        :class:`~agent.kb.engines.EngineConfigError` names *where* for a bad entry."""
        engines = parse_engines(text, where, DIALECTS)
        return replace(self, engines=engines, sparql_url=engines[0].endpoint, dialect=engines[0].dialect)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> WikidataConfig:
        """Read ``WIKIDATA_API_URL``, ``WIKIDATA_SPARQL_URL``, ``WIKIDATA_SPARQL_DIALECT``, ``WIKIDATA_ENGINES``
        (which, when set, names the main endpoint too), ``WIKIDATA_STALE_AFTER_DAYS`` and ``SPINACH_CONTACT``."""
        config = cls()
        config.api_url = environ.get("WIKIDATA_API_URL") or config.api_url
        config.sparql_url = environ.get("WIKIDATA_SPARQL_URL") or config.sparql_url
        config.dialect = environ.get("WIKIDATA_SPARQL_DIALECT") or config.dialect
        if config.dialect not in DIALECTS:
            raise ValueError(f"WIKIDATA_SPARQL_DIALECT={config.dialect!r}: choose one of {', '.join(DIALECTS)}")
        config.contact = environ.get("SPINACH_CONTACT", "")
        if environ.get("WIKIDATA_ENGINES", "").strip():
            config = config.with_engines(environ["WIKIDATA_ENGINES"], "WIKIDATA_ENGINES")
        stale = environ.get("WIKIDATA_STALE_AFTER_DAYS", "").strip()
        if stale:
            config.stale_after_days = read_days(stale, "WIKIDATA_STALE_AFTER_DAYS")
        return config


def read_days(text: str, where: str) -> float:
    """A number of days, 0 or more; a bad value is one line naming *where*."""
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days >= 0:
        raise EngineConfigError(f"{where}: {text!r} is not a number of days (0 or more; 0: never stale)")
    return days


class LiveWikidata:
    """A :class:`~agent.kb.base.KnowledgeBase` over the Action API and a SPARQL endpoint."""

    graph = WIKIDATA

    def __init__(self, config: WikidataConfig | None = None, cache: ResponseCache | None = None,
                 http: HttpClient | None = None) -> None:
        self.config = config or WikidataConfig.from_env()
        self.http = http or HttpClient(contact=self.config.contact, timeout=self.config.timeout, cache=cache)
        #: The engines, the main one (which answers the agent's queries) first.
        self.engines = self.config.all_engines()
        #: One bounded request per engine, never cached: the fallback, the cross-check, the data's date.
        self.quick = HttpClient(contact=self.http.contact, timeout=self.config.check_timeout, max_retries=0)
        self.dates = DataDates(self._read_date)

    @property
    def stale_after_days(self) -> float | None:
        """The configured days after which an engine's data is named stale; ``None`` for 0 (never)."""
        return self.config.stale_after_days if self.config.stale_after_days > 0 else None

    # -- Action API -----------------------------------------------------------------

    def _api(self, **params: Any) -> dict[str, Any]:
        params = {"format": "json", "formatversion": "2", **params}
        try:
            response = self.http.request("GET", self.config.api_url, params=params)
        except requests.Timeout as error:  # a lookup has no timeout signal of its own, as a query has
            raise KBUnavailable(f"{self.config.api_url}: no answer within {self.http.timeout:g} seconds") from error
        if response.status != 200:
            raise KBUnavailable(f"{self.config.api_url} answered HTTP {response.status}")
        try:
            data = json.loads(response.text)
        except ValueError as error:
            raise KBUnavailable(f"{self.config.api_url} did not answer JSON: {error}") from error
        if "error" in data and data["error"].get("code") != "no-such-entity":
            raise KBUnavailable(f"{self.config.api_url}: {data['error'].get('info', data['error'])}")
        return data

    def search(self, text: str) -> SearchResults:
        items = self._search(text, "item", 8)
        properties = self._search(text, "property", 4)
        missing = [hit.id for hit in properties if not hit.datatype]
        if missing:
            datatypes = {entity_id: entity.get("datatype") for entity_id, entity in self._entities(missing, "datatype")}
            properties = [SearchHit(hit.id, hit.label, hit.description, hit.datatype or datatypes.get(hit.id))
                          for hit in properties]
        return SearchResults(items=items, properties=properties)

    def _search(self, text: str, kind: str, limit: int) -> list[SearchHit]:
        data = self._api(action="wbsearchentities", search=text, language=self.config.language,
                         uselang=self.config.language, type=kind, limit=limit)
        return [SearchHit(id=hit["id"], label=hit.get("label") or hit.get("display", {}).get("label", {}).get(
                    "value", hit["id"]), description=hit.get("description", ""), datatype=hit.get("datatype"))
                for hit in data.get("search", [])[:limit]]

    def _entities(self, ids: Iterable[str], props: str,
                  language: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        ids = list(dict.fromkeys(ids))
        language = language or self.config.language
        found: list[tuple[str, dict[str, Any]]] = []
        for start in range(0, len(ids), 50):
            data = self._api(action="wbgetentities", ids="|".join(ids[start:start + 50]), props=props,
                             languages=f"{language}|mul", languagefallback="1")
            entities = data.get("entities", {})
            entities = entities.values() if isinstance(entities, dict) else entities
            found.extend((entity["id"], entity) for entity in entities if "missing" not in entity and "id" in entity)
        return found

    def _entity(self, entity_id: str) -> dict[str, Any] | None:
        found = self._entities([entity_id], "labels|descriptions|claims|datatype")
        return found[0][1] if found else None

    def _labels(self, ids: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
        """Labels of *ids* (the ID itself when there is none) and the datatypes of the properties among them."""
        labels: dict[str, str] = {}
        datatypes: dict[str, str] = {}
        for entity_id, entity in self._entities(ids, "labels|datatype"):
            labels[entity_id] = _label(entity, self.config.language) or entity_id
            if "datatype" in entity:
                datatypes[entity_id] = entity["datatype"]
        return labels, datatypes

    def describe(self, ids: list[str], language: str | None = None) -> list[SearchHit]:
        """One ``wbgetentities`` call (per 50 IDs) for labels, descriptions and datatypes in *language* (the
        configured one when ``None``); missing IDs left out."""
        language = language or self.config.language
        return [SearchHit(entity_id, _label(entity, language) or entity_id,
                          _text(entity.get("descriptions", {}), language), entity.get("datatype"))
                for entity_id, entity in self._entities(ids, "labels|descriptions|datatype", language)]

    def get_entry(self, qid: str) -> Entry | None:
        entity = self._entity(qid)
        if entity is None:
            return None
        statements = [claim for claims in entity.get("claims", {}).values() for claim in claims
                      if claim.get("rank") != "deprecated"]
        labels, datatypes = self._labels(_referenced(statements))
        claims = []
        for claim in statements:
            snak = claim["mainsnak"]
            if _datatype(snak, datatypes) == "external-id":
                continue
            claims.append(Claim(
                property_id=snak["property"], property_label=labels.get(snak["property"], snak["property"]),
                value=snak_value(snak, labels),
                qualifiers=[Qualifier(q["property"], labels.get(q["property"], q["property"]), snak_value(q, labels))
                            for q in _qualifier_snaks(claim) if _datatype(q, datatypes) != "external-id"],
                rank=claim.get("rank", "normal"),
            ))
        return Entry(id=entity["id"], label=_label(entity, self.config.language) or entity["id"],
                     description=_text(entity.get("descriptions", {}), self.config.language), claims=claims)

    def property_examples(self, pid: str) -> list[PropertyExample] | None:
        entity = self._entity(pid)
        if entity is None:
            return None
        examples = entity.get("claims", {}).get("P1855", [])
        labels, _ = self._labels(_referenced(examples))
        found = []
        for claim in examples:
            qualifiers = _qualifier_snaks(claim)
            values = [q for q in qualifiers if q["property"] == pid]
            if not values:
                continue
            found.append(PropertyExample(
                subject=snak_value(claim["mainsnak"], labels),
                value=snak_value(values[0], labels),
                qualifiers=[Qualifier(q["property"], labels.get(q["property"], q["property"]), snak_value(q, labels))
                            for q in qualifiers if q["property"] != pid],
            ))
        return found

    # -- query service ------------------------------------------------------------------

    def execute(self, sparql: str, timeout: float | None = None) -> QueryResult:
        """*sparql* on the main engine; when it is busy (HTTP 429 on every try, 503, a maintenance page) or runs
        out of time, on the next engine in its dialect, the result saying so in ``fallback``.

        With one engine, or when no other answers either, the main engine's result stands (a 429 or no
        connection at all raises :class:`KBUnavailable`, as without fallback).
        """
        timeout = timeout or self.config.timeout
        main = self.engines[0]
        try:
            attempt = self.attempt(main, sparql, timeout, self.http)
        except KBUnavailable as error:
            if len(self.engines) == 1:
                raise
            attempt, unavailable = Attempt(EngineOutcome.BUSY, reason=_unavailable_reason(main, error)), error
        else:
            unavailable = None
        if attempt.outcome not in (EngineOutcome.BUSY, EngineOutcome.TIMEOUT) or len(self.engines) == 1:
            return attempt.result or QueryResult(status=QueryStatus.ERROR, message=attempt.reason)
        tried = [attempt.reason]
        for engine in self.engines[1:]:
            try:
                other = self.attempt(engine, sparql, timeout, self.quick)
            except KBUnavailable as error:
                tried.append(_unavailable_reason(engine, error))
                continue
            if other.outcome is EngineOutcome.ANSWERED and other.result is not None:
                return replace(other.result, fallback=f"{_capital(attempt.reason)}; {engine.name} answered:")
            tried.append(other.reason)
        if attempt.result is None:
            raise KBUnavailable("; ".join(tried)) from unavailable
        return replace(attempt.result, fallback=f"{_capital('; '.join(tried))}.")

    def attempt(self, engine: Engine, sparql: str, timeout: float, http: HttpClient) -> Attempt:
        """*sparql* (as written for the query service) on *engine*, in its dialect, through *http*; what came
        back, classified.  A 429 on every try or no connection raises :class:`KBUnavailable`."""
        try:
            prepared = prepare(sparql, engine.dialect, self.config.language)
        except Unsupported as error:
            result = QueryResult(status=QueryStatus.ERROR, message=str(error), engine=engine.key)
            return Attempt(EngineOutcome.UNSUPPORTED, result, unsupported_reason(engine, error))
        except SyntaxError as error:
            return Attempt(EngineOutcome.FAILED, QueryResult(status=QueryStatus.SYNTAX_ERROR, message=str(error),
                                                             engine=engine.key), f"{engine.name}: {error}")
        try:
            with _query_lock(engine.endpoint):
                response = http.request(
                    "POST", engine.endpoint, data={"query": prepared},
                    headers={"Accept": "application/sparql-results+json"},
                    timeout=timeout, max_bytes=self.config.max_response_bytes,
                    keep=lambda text: not cut_by_timeout(text))
        except requests.Timeout:
            return Attempt(EngineOutcome.TIMEOUT, QueryResult(status=QueryStatus.TIMEOUT, engine=engine.key,
                                                              message=f"no answer within {timeout:g} seconds"),
                           f"{engine.name} gave no answer within {timeout:g} seconds")
        except EngineBusy as busy:
            if _says_timeout(busy.text):  # QLever answers a query that ran out of time with 429
                return Attempt(EngineOutcome.TIMEOUT, QueryResult(status=QueryStatus.TIMEOUT, engine=engine.key,
                                                                  message=_error_line(busy.text)),
                               f"{engine.name} stopped the query at its time limit")
            raise
        return classify_response(engine, response)

    # -- every engine ---------------------------------------------------------------------

    def cross_check(self, sparql: str, seconds: float | None = None,
                    known: QueryResult | None = None) -> CrossCheck | None:
        """The final query on every engine at once, with each one's data date; at most *seconds* (or the
        configured check timeout) per engine.  *known* is the run's own result of it, which stands for the
        engine that gave it (no second request).  ``None`` when replaying from the cache alone (no network)."""
        if self.http.cache is not None and self.http.cache.offline:
            return None
        timeout = self.config.check_timeout if seconds is None else max(1.0, min(seconds, self.config.check_timeout))
        given = (known.engine or self.engines[0].key) if known is not None else None

        def run(engine: Engine, query: str) -> Attempt:
            if engine.key == given and known is not None:
                return attempt_of(known)
            return self._checked(engine, query, timeout)

        return cross_check(sparql, self.engines, run, self.dates, self.config.stale_after,
                           language=self.config.language)

    def _checked(self, engine: Engine, sparql: str, timeout: float) -> Attempt:
        try:
            return self.attempt(engine, sparql, timeout, self.quick)
        except EngineBusy:
            return Attempt(EngineOutcome.BUSY, reason=f"{engine.name} was busy (HTTP 429)")
        except KBUnavailable as error:
            return Attempt(EngineOutcome.FAILED, reason=_unavailable_reason(engine, error))

    def _read_date(self, engine: Engine) -> DataDate | None:
        """How fresh *engine*'s copy is: the query service's ``schema:dateModified`` of Wikidata; for other
        engines the dump's date (or the date their updates are complete until), else QLever's index date.
        An endpoint named only by ``sparql_url`` (not among the engines) is asked nothing but the agent's
        queries: ``None``."""
        if engine.key == UNNAMED:
            return None
        checked = self._checked(engine, date_query(engine), self.config.check_timeout)
        found = date_in_result(checked.result) if checked.outcome is EngineOutcome.ANSWERED and checked.result \
            else None
        if found is not None:
            return DataDate(found, "schema:dateModified" if engine.dialect == "wdqs" else "dump date")
        if engine.dialect != "qlever":
            return None
        try:
            response = self.quick.request("GET", engine.endpoint, params={"cmd": "stats"},
                                          timeout=self.config.check_timeout)
        except (KBUnavailable, requests.RequestException):
            return None
        found = index_date(response.text) if response.status == 200 else None
        return DataDate(found, "index date") if found else None


_MAINTENANCE = re.compile(r"\bmaintenance\b", re.IGNORECASE)
_TIMED_OUT = re.compile(r"\btime(?:d)? ?out\b|\btimeout\b|deadline", re.IGNORECASE)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _says_timeout(text: str) -> bool:
    return bool(_TIMED_OUT.search(text)) or any(marker in text for marker in _TIMEOUT_MARKERS)


def _unavailable_reason(engine: Engine, error: KBUnavailable) -> str:
    if isinstance(error, EngineBusy):
        return f"{engine.name} was busy (HTTP {error.status})"
    return f"{engine.name} could not be reached"


def _json_error(text: str) -> str | None:
    """QLever's error body: JSON with ``status: ERROR`` and the ``exception``; ``None`` for any other body."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("status") == "ERROR" and isinstance(data.get("exception"), str):
        return data["exception"]
    return None


def _error_line(text: str) -> str:
    """One line of an error body for a reader: QLever's ``exception``, else the page's first line of text."""
    exception = _json_error(text)
    if exception is not None:
        return " ".join(exception.split())[:300]
    plain = re.sub(r"<[^>]*>", " ", text)
    return next((" ".join(line.split())[:300] for line in plain.splitlines()
                 if line.strip() and not line.startswith("SPARQL-QUERY:")), "")


def classify_response(engine: Engine, response: CachedResponse) -> Attempt:
    """An engine's answer to a query, as the model reads it (the query service's error pages, QLever's JSON
    errors) and as an :class:`~agent.kb.engines.EngineOutcome` with a line for a reader."""
    status, text = response.status, response.text
    exception = _json_error(text)
    if status == 200:
        result = parse_sparql_json(text, truncated=response.truncated)
        if result.status == QueryStatus.TIMEOUT:
            return Attempt(EngineOutcome.TIMEOUT, replace(result, engine=engine.key),
                           f"{engine.name} stopped the query at its time limit")
        if result.status == QueryStatus.ERROR and _MAINTENANCE.search(text):
            return Attempt(EngineOutcome.BUSY, replace(result, engine=engine.key),
                           f"{engine.name} was down for maintenance")
        outcome = EngineOutcome.ANSWERED if result.status.ran else EngineOutcome.FAILED
        return Attempt(outcome, replace(result, engine=engine.key), "" if outcome is EngineOutcome.ANSWERED
                       else f"{engine.name}: {' '.join(result.message.split())[:300]}")
    if exception is not None:
        if _says_timeout(exception):
            result = QueryResult(status=QueryStatus.TIMEOUT, message=_error_line(text), engine=engine.key)
            return Attempt(EngineOutcome.TIMEOUT, result, f"{engine.name} stopped the query at its time limit")
        result = QueryResult(status=QueryStatus.SYNTAX_ERROR if status == 400 else "error", engine=engine.key,
                             message=exception.strip()[:MAX_MESSAGE_CHARS] or f"HTTP {status}")
        outcome = EngineOutcome.UNSUPPORTED if "not supported" in exception.lower() else EngineOutcome.FAILED
        return Attempt(outcome, result, f"{engine.name}: {_error_line(text)}")
    if status in (502, 503, 504):
        result = QueryResult(status=QueryStatus.ERROR, engine=engine.key,
                             message=f"the query service failed (HTTP {status}, also on retrying); try a lighter query")
        if status == 503 or _MAINTENANCE.search(text):
            reason = (f"{engine.name} was down for maintenance" if _MAINTENANCE.search(text)
                      else f"{engine.name} was busy (HTTP 503)")
            return Attempt(EngineOutcome.BUSY, result, reason)
        if status == 504:
            return Attempt(EngineOutcome.TIMEOUT, result, f"{engine.name} gave no answer in time (HTTP 504)")
        return Attempt(EngineOutcome.FAILED, result, f"{engine.name} failed (HTTP {status})")
    result = replace(classify_error(status, text), engine=engine.key)
    if result.status == QueryStatus.TIMEOUT:
        return Attempt(EngineOutcome.TIMEOUT, result, f"{engine.name} stopped the query at its time limit")
    if _MAINTENANCE.search(text) and result.status != QueryStatus.SYNTAX_ERROR:
        return Attempt(EngineOutcome.BUSY, result, f"{engine.name} was down for maintenance")
    return Attempt(EngineOutcome.FAILED, result, f"{engine.name}: {_error_line(result.message) or f'HTTP {status}'}")


def cut_by_timeout(text: str) -> bool:
    """A 200 body the query service cut mid-JSON when the query hit its time limit."""
    return any(marker in text[-4000:] for marker in _TIMEOUT_MARKERS) and not text.rstrip().endswith("}")


def parse_sparql_json(text: str, truncated: bool = False) -> QueryResult:
    """SPARQL JSON results; a body cut at the size limit or by a timeout keeps every complete row.

    Rows that bind nothing (``[{}]``, e.g. ``MAX()`` over no values) are an empty result.
    """
    if cut_by_timeout(text):
        variables, bindings = _complete_rows(text)
        return QueryResult(status=QueryStatus.TIMEOUT, variables=variables, bindings=bindings, truncated=True,
                           message=f"the query service stopped the query at its time limit after "
                                   f"{len(bindings)} complete rows")
    if truncated:
        variables, bindings = _complete_rows(text)
        return QueryResult(status=QueryStatus.OK if any(bindings) else QueryStatus.EMPTY, variables=variables,
                           bindings=bindings,
                           truncated=True, message=f"the response exceeded the size limit; "
                                                   f"the first {len(bindings)} rows are kept")
    try:
        data = json.loads(text)
    except ValueError as error:
        return QueryResult(status=QueryStatus.ERROR, message=f"the endpoint did not answer SPARQL JSON: {error}")
    if "boolean" in data:
        return QueryResult(status=QueryStatus.OK, boolean=bool(data["boolean"]))
    variables = data.get("head", {}).get("vars", [])
    bindings = _well_formed_rows(data.get("results", {}).get("bindings", []))
    return QueryResult(status=QueryStatus.OK if any(bindings) else QueryStatus.EMPTY, variables=variables,
                       bindings=bindings)


def _well_formed_rows(bindings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*bindings* with each term's value :func:`well_formed`: rows are stored and written as UTF-8."""
    for row in bindings:
        for term in row.values():
            if isinstance(term, dict) and isinstance(term.get("value"), str):
                term["value"] = well_formed(term["value"])
    return bindings


def _complete_rows(text: str) -> tuple[list[str], list[dict[str, Any]]]:
    decoder = json.JSONDecoder()
    variables: list[str] = []
    head = re.search(r'"vars"\s*:\s*(?=\[)', text)
    if head:  # read as JSON, not up to the first "]": a variable's name may hold one
        try:
            found = decoder.raw_decode(text, head.end())[0]
        except ValueError:
            found = []
        variables = [name for name in found if isinstance(name, str)] if isinstance(found, list) else []
    start = re.search(r'"bindings"\s*:\s*\[', text)
    bindings: list[dict[str, Any]] = []
    if not start:
        return variables, bindings
    position = start.end()
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        try:
            row, position = decoder.raw_decode(text, position)
        except ValueError:
            return variables, _well_formed_rows(bindings)
        bindings.append(row)


_MALFORMED = re.compile(r"MalformedQueryException:\s*(.+?)(?=\n\s*at |\nCaused by:|\Z)", re.DOTALL)
_TIMEOUT_MARKERS = ("TimeoutException", "QueryTimeoutException", "Query deadline is expired")
#: A Java exception line (``java.lang.IllegalStateException: message``), as the service's error pages show them.
_EXCEPTION = re.compile(r"^(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)\b.*$", re.MULTILINE)
_EXCEPTION_NAME = re.compile(r"(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error): ")
MAX_MESSAGE_CHARS = 2000


def classify_error(status: int, text: str) -> QueryResult:
    """The query service's error pages as a status the model can learn from.

    A syntax error keeps its whole message, the "Was expecting one of:" list
    included; other failures show the exception's text, never the service's
    echo of the query (``SPARQL-QUERY: queryStr=...``), which can span many lines.
    """
    if any(marker in text for marker in _TIMEOUT_MARKERS):
        return QueryResult(status=QueryStatus.TIMEOUT, message="the query service stopped the query at its time limit")
    malformed = _MALFORMED.search(text)
    if malformed:
        return QueryResult(status=QueryStatus.SYNTAX_ERROR, message=malformed.group(1).strip()[:MAX_MESSAGE_CHARS])
    exception = _EXCEPTION.search(text)
    if exception:
        line = exception.group(0).strip()
        names = list(_EXCEPTION_NAME.finditer(line))
        message = line[names[-1].start():] if names else line  # the innermost cause says what went wrong
    else:
        message = next((line.strip() for line in text.splitlines()
                        if line.strip() and not line.startswith("SPARQL-QUERY:")), "")
    if status == 400:
        return QueryResult(status=QueryStatus.SYNTAX_ERROR,
                           message=message[:MAX_MESSAGE_CHARS] or "the query was refused")
    return QueryResult(status=QueryStatus.ERROR, message=f"HTTP {status}: {message[:MAX_MESSAGE_CHARS]}")


# -- Wikidata JSON values -------------------------------------------------------------------

def _text(texts: dict[str, Any], language: str) -> str:
    """The text in *language*, else the language-neutral ``mul`` one; never the text of another language that
    ``languagefallback`` puts under *language*'s key (an English label for a German reader)."""
    for key in (language, "mul"):
        value = texts.get(key)
        if isinstance(value, dict) and value.get("language", key) in (language, "mul"):
            return value.get("value", "")
    return ""


def _label(entity: dict[str, Any], language: str) -> str:
    return _text(entity.get("labels", {}), language)


def _qualifier_snaks(claim: dict[str, Any]) -> list[dict[str, Any]]:
    return [snak for snaks in claim.get("qualifiers", {}).values() for snak in snaks]


def _referenced(statements: list[dict[str, Any]]) -> list[str]:
    """Every property and entity the statements mention, whose labels a reader needs."""
    referenced: set[str] = set()
    for claim in statements:
        for snak in [claim["mainsnak"], *_qualifier_snaks(claim)]:
            referenced.add(snak["property"])
            referenced.update(_snak_entities(snak))
    return sorted(referenced)


def _datatype(snak: dict[str, Any], datatypes: dict[str, str]) -> str | None:
    return snak.get("datatype") or datatypes.get(snak["property"])


def _snak_entities(snak: dict[str, Any]) -> list[str]:
    if snak.get("snaktype") != "value":
        return []
    value = snak["datavalue"]["value"]
    if snak["datavalue"]["type"] == "wikibase-entityid":
        return [value.get("id") or f"Q{value['numeric-id']}"]
    if snak["datavalue"]["type"] == "quantity" and value.get("unit", "1").startswith(ENTITY_PREFIX):
        return [value["unit"][len(ENTITY_PREFIX):]]
    return []


_PRECISION_NAMES = {11: 10, 10: 7, 9: 4}


def format_time(value: dict[str, Any]) -> str:
    """A Wikidata time value at its precision: ``1707-04-15``, ``1707-04``, ``1707``, ``1700s``, ``18th century``."""
    time_text = value["time"]
    sign = "-" if time_text.startswith("-") else ""
    date = time_text.lstrip("+-").split("T")[0]
    precision = value.get("precision", 11)
    year = int(date.split("-")[0])
    if precision in _PRECISION_NAMES:
        return sign + date[:_PRECISION_NAMES[precision]]
    if precision == 8:
        return f"{sign}{year // 10 * 10}s"
    if precision == 7:
        century = (year - 1) // 100 + 1
        suffix = "th" if 10 <= century % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(century % 10, "th")
        return f"{century}{suffix} century" + (" BCE" if sign else "")
    return f"{sign}{year}"


def snak_value(snak: dict[str, Any], labels: dict[str, str]) -> Value:
    """A snak's value as a person reads it."""
    if snak.get("snaktype") == "somevalue":
        return Value("unknown value")
    if snak.get("snaktype") == "novalue":
        return Value("no value")
    datavalue = snak["datavalue"]
    value = datavalue["value"]
    kind = datavalue["type"]
    if kind == "wikibase-entityid":
        entity_id = value.get("id") or f"Q{value['numeric-id']}"
        return Value(labels.get(entity_id, entity_id), entity_id)
    if kind == "time":
        return Value(format_time(value))
    if kind == "quantity":
        amount = value["amount"].lstrip("+")
        unit = value.get("unit", "1")
        if unit.startswith(ENTITY_PREFIX):
            unit_id = unit[len(ENTITY_PREFIX):]
            return Value(f"{amount} {labels.get(unit_id, unit_id)}")
        return Value(amount)
    if kind == "monolingualtext":
        return Value(f"{value['text']} ({value['language']})")
    if kind == "globecoordinate":
        return Value(f"Point({value['longitude']} {value['latitude']})")
    return Value(str(value))
