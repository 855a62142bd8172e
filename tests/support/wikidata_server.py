"""A stand-in for Wikidata's Action API and query service on 127.0.0.1.

It speaks their real wire formats: ``wbsearchentities`` and ``wbgetentities``
JSON (``formatversion=2``), SPARQL JSON results, and the query service's
error pages as it sends them: the echo of the (multi-line) query, then Java
stack traces (HTTP 400 with a ``MalformedQueryException`` and its "Was
expecting one of:" list, HTTP 500 with a ``TimeoutException`` or another
wrapped exception), a 200 whose JSON is cut mid-row by a timeout, HTTP 429
with ``Retry-After``, 502/503/504.  Entities are given
in the ``Special:EntityData`` JSON format.  Every request is recorded.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.loopback import LoopbackServer


@dataclass
class SparqlReply:
    """A raw answer of the query service."""

    status: int = 200
    body: dict[str, Any] | str = ""
    headers: dict[str, str] = field(default_factory=dict)


def select(variables: list[str], rows: list[dict[str, Any]]) -> SparqlReply:
    """SPARQL JSON for *rows*, given as variable -> term dict, or a string (a Q-ID becomes an entity IRI)."""
    bindings = []
    for row in rows:
        binding = {}
        for name, value in row.items():
            if isinstance(value, str):
                if value[:1] in "QP" and value[1:].isdigit():
                    value = {"type": "uri", "value": f"http://www.wikidata.org/entity/{value}"}
                else:
                    value = {"type": "literal", "value": value}
            binding[name] = value
        bindings.append(binding)
    return SparqlReply(body={"head": {"vars": variables}, "results": {"bindings": bindings}})


def ask(answer: bool) -> SparqlReply:
    return SparqlReply(body={"head": {}, "boolean": answer})


#: Where the query service's error pages echo the query; the stand-in puts the real query there.
QUERY_ECHO = "SPARQL-QUERY: queryStr={query}\n"
_STACK = ("\tat java.util.concurrent.FutureTask.report(FutureTask.java:122)\n"
          "\tat java.util.concurrent.FutureTask.get(FutureTask.java:192)\n"
          "\tat com.bigdata.rdf.sail.webapp.BigdataServlet.submitApiTask(BigdataServlet.java:292)\n"
          "\tat com.bigdata.rdf.sail.webapp.QueryServlet.doSparqlQuery(QueryServlet.java:678)\n")


def malformed(message: str, expected: tuple[str, ...] = ('"("', '"{"', "<IRIref>", "<PNAME_LN>")) -> SparqlReply:
    """HTTP 400 as the query service sends it: the echo, the message, "Was expecting one of:", stack traces."""
    expecting = "Was expecting one of:\n" + "".join(f"    {token} ...\n" for token in expected)
    cause = f"org.openrdf.query.MalformedQueryException: {message}\n{expecting}"
    return SparqlReply(400, QUERY_ECHO + "java.util.concurrent.ExecutionException: " + cause + _STACK
                       + "Caused by: " + cause + "\tat com.bigdata.rdf.sail.sparql.Bigdata2ASTSPARQLParser"
                       ".parseQuery2(Bigdata2ASTSPARQLParser.java:400)\n\t... 23 more\n")


def timed_out() -> SparqlReply:
    """HTTP 500 when the query hit the service's time limit before sending anything."""
    return SparqlReply(500, QUERY_ECHO + "java.util.concurrent.TimeoutException\n" + _STACK)


def server_error(cause: str) -> SparqlReply:
    """HTTP 500 with an exception other than a timeout, wrapped the way the service wraps it."""
    return SparqlReply(500, QUERY_ECHO + "java.util.concurrent.ExecutionException: "
                            "java.util.concurrent.ExecutionException: org.openrdf.query.QueryEvaluationException: "
                            f"{cause}\n" + _STACK)


def cut_by_timeout(variables: list[str], rows: list[dict[str, Any]], cut_at: int) -> SparqlReply:
    """HTTP 200 whose JSON stops mid-row at character *cut_at* of the results, then the timeout's trace."""
    body = json.dumps(select(variables, rows).body, indent=2)
    return SparqlReply(200, body[:cut_at] + QUERY_ECHO + "java.util.concurrent.TimeoutException\n" + _STACK)


def entity(entity_id: str, label: str, description: str = "", claims: dict[str, list] | None = None,
           aliases: list[str] = (), datatype: str | None = None) -> dict[str, Any]:
    """An entity in the ``Special:EntityData`` JSON format."""
    data: dict[str, Any] = {
        "type": "property" if entity_id.startswith("P") else "item",
        "id": entity_id,
        "labels": {"en": {"language": "en", "value": label}},
        "descriptions": {"en": {"language": "en", "value": description}} if description else {},
        "aliases": {"en": [{"language": "en", "value": alias} for alias in aliases]} if aliases else {},
        "claims": claims or {},
    }
    if datatype:
        data["datatype"] = datatype
    return data


def item_snak(prop: str, qid: str) -> dict[str, Any]:
    return {"snaktype": "value", "property": prop, "datatype": "wikibase-item",
            "datavalue": {"type": "wikibase-entityid",
                          "value": {"entity-type": "item", "id": qid, "numeric-id": int(qid[1:])}}}


def time_snak(prop: str, time: str, precision: int = 11) -> dict[str, Any]:
    return {"snaktype": "value", "property": prop, "datatype": "time",
            "datavalue": {"type": "time", "value": {"time": time, "precision": precision, "timezone": 0,
                                                   "before": 0, "after": 0,
                                                   "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}}}


def string_snak(prop: str, text: str, datatype: str = "string") -> dict[str, Any]:
    return {"snaktype": "value", "property": prop, "datatype": datatype,
            "datavalue": {"type": "string", "value": text}}


def statement(mainsnak: dict[str, Any], qualifiers: list[dict[str, Any]] = (), rank: str = "normal") -> dict:
    grouped: dict[str, list] = {}
    for qualifier in qualifiers:
        grouped.setdefault(qualifier["property"], []).append(qualifier)
    return {"mainsnak": mainsnak, "type": "statement", "rank": rank, "qualifiers": grouped,
            "id": f"X${id(mainsnak)}"}


def _in_languages(texts: dict[str, Any], languages: list[str], fallback: bool) -> dict[str, Any]:
    """*texts* in *languages*, as ``wbgetentities`` gives them: with ``languagefallback``, a language without a
    text of its own gets that of the next in its chain (``mul``, then English), saying whose it is."""
    chosen: dict[str, Any] = {}
    for language in languages:
        if language in texts:
            chosen[language] = texts[language]
        elif fallback and language != "mul":
            other = next((texts[key] for key in ("mul", "en") if key in texts), None)
            if other is not None:
                chosen[language] = {**other, "for-language": language}
    return chosen


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


@dataclass
class FakeWikidata:
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Answers a query: a callable, or a dict from the query text, or a pyoxigraph Store.
    sparql: Callable[[str], SparqlReply] | dict[str, SparqlReply] | Any = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: Replies served before any other answer, one per request (e.g. a 429 to test Retry-After).
    interruptions: list[SparqlReply] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server = LoopbackServer(_handler_for(self))

    @property
    def base(self) -> str:
        return self._server.base

    @property
    def api_url(self) -> str:
        return self.base + "/w/api.php"

    @property
    def sparql_url(self) -> str:
        return self.base + "/sparql"

    def add(self, *entities: dict[str, Any]) -> None:
        for data in entities:
            self.entities[data["id"]] = data

    def close(self) -> None:
        self._server.close()

    # -- Action API --------------------------------------------------------------------

    def api(self, params: dict[str, str]) -> dict[str, Any]:
        action = params.get("action")
        if action == "wbsearchentities":
            return self.search(params)
        if action == "wbgetentities":
            return self.get_entities(params)
        return {"error": {"code": "badvalue", "info": f"Unrecognized value for parameter \"action\": {action}."}}

    def search(self, params: dict[str, str]) -> dict[str, Any]:
        wanted = _fold(params.get("search", ""))
        kind = params.get("type", "item")
        limit = int(params.get("limit", 7))
        ranked = []
        for data in self.entities.values():
            if data["type"] != kind:
                continue
            names = [data["labels"].get("en", {}).get("value", "")]
            names += [alias["value"] for alias in data.get("aliases", {}).get("en", [])]
            folded = [_fold(name) for name in names]
            if wanted in folded:
                rank = 0
            elif any(name.startswith(wanted) for name in folded):
                rank = 1
            else:
                continue
            ranked.append((rank, data["id"], data))
        ranked.sort(key=lambda entry: (entry[0], int(entry[1][1:])))
        hits = []
        for _, entity_id, data in ranked[:limit]:
            hit = {"id": entity_id, "title": entity_id, "pageid": int(entity_id[1:]),
                   "concepturi": f"http://www.wikidata.org/entity/{entity_id}",
                   "label": data["labels"]["en"]["value"],
                   "description": data.get("descriptions", {}).get("en", {}).get("value", ""),
                   "match": {"type": "label", "language": "en", "text": data["labels"]["en"]["value"]}}
            if "datatype" in data:
                hit["datatype"] = data["datatype"]
            hits.append(hit)
        return {"searchinfo": {"search": params.get("search", "")}, "search": hits, "success": 1}

    def get_entities(self, params: dict[str, str]) -> dict[str, Any]:
        props = params.get("props", "info|sitelinks|aliases|labels|descriptions|claims|datatype").split("|")
        found: dict[str, Any] = {}
        for entity_id in params.get("ids", "").split("|"):
            if entity_id not in self.entities:
                found[entity_id] = {"id": entity_id, "missing": True}
                continue
            data = self.entities[entity_id]
            found[entity_id] = {key: value for key, value in data.items()
                                if key in ("type", "id") or key in props}
            if "languages" in params:
                languages = params["languages"].split("|")
                for key in ("labels", "descriptions", "aliases"):
                    if key in found[entity_id]:
                        found[entity_id][key] = _in_languages(found[entity_id][key], languages,
                                                              key != "aliases" and "languagefallback" in params)
        return {"entities": found, "success": 1}

    # -- query service -------------------------------------------------------------------

    def answer(self, query: str) -> SparqlReply:
        if self.interruptions:
            return self.interruptions.pop(0)
        if callable(self.sparql):
            return self.sparql(query)
        if isinstance(self.sparql, dict):
            return self.sparql.get(query, select([], []))
        if self.sparql is not None:
            return _from_store(self.sparql, query)
        return select([], [])


def _from_store(store: Any, query: str) -> SparqlReply:
    """The answer of a pyoxigraph *store* to *query*, with the prefixes the query service declares for every query."""
    import pyoxigraph

    from agent.kb.dialect import PREFIXES

    try:
        results = store.query(query, prefixes=PREFIXES)
    except SyntaxError as error:
        return malformed(str(error))
    if isinstance(results, pyoxigraph.QueryBoolean):
        return ask(bool(results))
    body = results.serialize(format=pyoxigraph.QueryResultsFormat.JSON)
    return SparqlReply(body=json.loads(body))


def _handler_for(server: FakeWikidata) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any] | str, content_type: str,
                  headers: dict[str, str] | None = None) -> None:
            data = (json.dumps(body) if isinstance(body, dict) else body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, params: dict[str, str]) -> None:
            path = urlparse(self.path).path
            server.requests.append({"method": self.command, "path": path, "params": params,
                                    "user_agent": self.headers.get("User-Agent", "")})
            if path == "/w/api.php":
                self._send(200, server.api(params), "application/json; charset=utf-8")
            elif path == "/sparql":
                query = params.get("query", "")
                reply = server.answer(query)
                kind = "application/sparql-results+json" if reply.status == 200 else "text/plain"
                body = reply.body.replace(QUERY_ECHO, QUERY_ECHO.format(query=query)) \
                    if isinstance(reply.body, str) else reply.body
                self._send(reply.status, body, kind, reply.headers)
            else:
                self._send(404, "not found", "text/plain")

        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            self._handle({key: values[-1] for key, values in query.items()})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            form = parse_qs(self.rfile.read(length).decode())
            query = parse_qs(urlparse(self.path).query)
            params = {key: values[-1] for key, values in {**query, **form}.items()}
            self._handle(params)

    return Handler


@pytest.fixture
def wikidata_server() -> Iterator[Callable[..., FakeWikidata]]:
    """A factory: ``wikidata_server(entities=..., sparql=...)`` starts a server, closed after the test."""
    servers: list[FakeWikidata] = []

    def start(**options: Any) -> FakeWikidata:
        server = FakeWikidata(**options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
