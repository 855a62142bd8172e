"""A strict SPARQL 1.1 endpoint on 127.0.0.1 that answers from an Oxigraph store, as QLever would.

It refuses what QLever refuses of a query written for the Wikidata Query
Service: a prefix the query does not declare (QLever has no implicit ones; its
words: "Prefix wdt was not registered using a PREFIX declaration", from its
SPARQL parser) and any ``SERVICE`` clause, the label service included.  Refusals are HTTP
400 with QLever's JSON error body (``status``, ``exception``, ``query``);
answers are SPARQL JSON results.  Every query received is recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pyoxigraph as ox

from agent.kb.dialect import masked
from agent.sparql_lexer import tokenize
from tests.support.loopback import LoopbackServer


@dataclass
class SparqlEndpoint:
    store: ox.Store
    url: str = ""
    queries: list[str] = field(default_factory=list)

    def answer(self, query: str) -> tuple[int, dict[str, Any]]:
        self.queries.append(query)
        if re.search(r"\bSERVICE\b", masked(query), re.IGNORECASE):
            return 400, qlever_error(query, "SERVICE clauses are not supported: this engine has no label service "
                                      "and calls no remote endpoint")
        prefix = undeclared_prefix(query)
        if prefix is not None:
            return 400, qlever_error(query, f"Invalid SPARQL query: Prefix {prefix} was not registered using a "
                                            "PREFIX declaration")
        try:
            results = self.store.query(query)  # no default prefixes: every prefix must be declared
        except SyntaxError as error:
            return 400, qlever_error(query, f"Invalid SPARQL query: {error}")
        if isinstance(results, ox.QueryBoolean):
            return 200, {"head": {}, "boolean": bool(results)}
        return 200, json.loads(results.serialize(format=ox.QueryResultsFormat.JSON))


def undeclared_prefix(query: str) -> str | None:
    """The first prefix *query* uses without declaring it (QLever has no implicit ones), or ``None``."""
    declared = {match.group(1) for match in re.finditer(r"\bPREFIX\s+([\w.-]*):", masked(query), re.IGNORECASE)}
    for token in tokenize(query):
        if token.kind == "pname" and token.text.split(":", 1)[0] not in declared:
            return token.text.split(":", 1)[0]
    return None


def qlever_error(query: str, message: str) -> dict[str, Any]:
    return {"status": "ERROR", "exception": message, "query": query, "resultsize": 0}


def _handler_for(endpoint: SparqlEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, params: dict[str, list[str]]) -> None:
            status, body = endpoint.answer(params.get("query", [""])[-1])
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/sparql-results+json" if status == 200
                             else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(parse_qs(urlparse(self.path).query))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            self._answer(parse_qs(self.rfile.read(length).decode()))

    return Handler


@contextmanager
def serve(store_path: Path) -> Iterator[SparqlEndpoint]:
    """The endpoint over the Oxigraph store at *store_path* (opened read-only), at ``endpoint.url``."""
    endpoint = SparqlEndpoint(ox.Store.read_only(str(store_path)))
    server = LoopbackServer(_handler_for(endpoint))
    endpoint.url = f"{server.base}/sparql"
    try:
        yield endpoint
    finally:
        server.close()
