"""Two real SPARQL servers on loopback holding one small Wikidata-shaped graph at two dates.

Each is Oxigraph's own server (``oxigraph serve-read-only``) over a copy of
:data:`GRAPH`, behind a front that speaks as the engine it stands for, and a
:class:`~tests.support.fault_proxy.FaultProxy` a test arms to make that engine
busy (429, 503), down for maintenance, or slow (a request held until the test
releases it):

* the query service copy is the newer one (``schema:dateModified`` of
  ``<http://www.wikidata.org>`` an hour ago).  Its front gives queries what the
  query service gives them: its implicit prefixes, the label service, and
  MWAPI's ``EntitySearch`` (labels containing the search text);
* the QLever copy is older (its dump's ``wikibase:Dump schema:dateModified``
  forty days ago): a human added since is missing, and an item merged since is
  still there.  Its front refuses as QLever does (see
  :mod:`tests.support.sparql_endpoint`): any ``SERVICE`` and any undeclared
  prefix, with HTTP 400 and QLever's JSON error body (``status``, ``exception``,
  ``query``; an undeclared prefix in its parser's words); it answers
  ``?cmd=stats`` with the fields of QLever's ``composeIndexStats``
  (ad-freiburg/qlever, ``src/engine/Server.cpp``), the index named as QLever's
  Wikidata Qleverfile names it (``... version DD.MM.YYYY``, qlever-control's
  ``Qleverfiles/Qleverfile.wikidata``).  QLever answers a query cancelled at its
  time limit with HTTP 429 and ``Cancelled due to timeout`` (its server's
  ``CancellationException``): a test arms that reply at the fault proxy.

Use the ``two_engines`` fixture; :attr:`TwoEngines.setting` is the engine list
for ``WIKIDATA_ENGINES``, ``--engines`` or bot.ini's ``engines``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from agent.kb.dialect import declare_prefixes, masked, rewrite_label_services
from agent.kb.engines import QLEVER, WDQS
from agent.kb.base import Engine
from tests.support.fault_proxy import FaultProxy
from tests.support.loopback import LoopbackServer
from tests.support.processes import stop
from tests.support.serve_rig import free_port, wait_for
from tests.support.sparql_endpoint import qlever_error, undeclared_prefix

#: Humans in the newer copy (the query service's): Douglas Adams, Tim Berners-Lee, Alan Turing.
HUMANS_NOW = ("Q42", "Q80", "Q7251")
#: Humans in the older copy (QLever's): Alan Turing not yet; Q4115189, merged into Q42 since, still there.
HUMANS_THEN = ("Q42", "Q80", "Q4115189")
LABELS = {"Q42": "Douglas Adams", "Q80": "Tim Berners-Lee", "Q7251": "Alan Turing", "Q4115189": "Douglas N. Adams",
          "Q5": "human", "Q691283": "St John's College"}

#: Same rows on both: where Douglas Adams was educated.
EQUAL_QUERY = "SELECT ?school ?schoolLabel WHERE { wd:Q42 wdt:P69 ?school . " \
              "SERVICE wikibase:label { bd:serviceParam wikibase:language \"en\". } }"
#: Rows only one copy has: the humans.
DIFFERENT_QUERY = "SELECT ?human WHERE { ?human wdt:P31 wd:Q5 }"
#: Only the query service runs it (QLever has no MWAPI).
MWAPI_QUERY = ("SELECT ?item WHERE { SERVICE wikibase:mwapi { bd:serviceParam wikibase:api \"EntitySearch\" ; "
               "wikibase:endpoint \"www.wikidata.org\" ; mwapi:search \"Adams\" ; mwapi:language \"en\" . "
               "?item wikibase:apiOutputItem mwapi:item . } }")


def graph(humans: tuple[str, ...], date_triple: str) -> str:
    """The small graph in Turtle: *humans*, their labels, Douglas Adams's school, and the copy's date."""
    lines = ["@prefix wd: <http://www.wikidata.org/entity/> .",
             "@prefix wdt: <http://www.wikidata.org/prop/direct/> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             "@prefix schema: <http://schema.org/> .",
             "@prefix wikibase: <http://wikiba.se/ontology#> .",
             "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
             date_triple]
    lines += [f"wd:{qid} wdt:P31 wd:Q5 ." for qid in humans]
    lines += [f'wd:{qid} rdfs:label "{label}"@en .' for qid, label in LABELS.items()
              if qid in humans or qid in ("Q5", "Q691283")]
    lines.append("wd:Q42 wdt:P69 wd:Q691283 .")
    return "\n".join(lines) + "\n"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the fronts -------------------------------------------------------------------------------------

_MWAPI = re.compile(r"SERVICE\s+wikibase:mwapi\s*\{", re.IGNORECASE)


def _entity_search(query: str) -> str:
    """MWAPI's ``EntitySearch`` as the label match it stands for (the items whose English label holds the text)."""
    found = _MWAPI.search(masked(query))
    if not found:
        return query
    depth, end = 0, found.end() - 1
    for end in range(found.end() - 1, len(query)):
        depth += {"{": 1, "}": -1}.get(masked(query)[end], 0)
        if depth == 0:
            break
    block = query[found.start():end + 1]
    search = re.search(r'mwapi:search\s+"([^"]*)"', block)
    output = re.search(r"(\?\w+)\s+wikibase:apiOutputItem\s+mwapi:item", block)
    if not search or not output:
        return query
    pattern = (f"{{ {output.group(1)} rdfs:label ?mwapiLabel . FILTER(LANG(?mwapiLabel) = \"en\" && "
               f"CONTAINS(LCASE(STR(?mwapiLabel)), LCASE({json.dumps(search.group(1))}))) }}")
    return query[:found.start()] + pattern + query[end + 1:]


def _query_of(handler: BaseHTTPRequestHandler) -> tuple[dict[str, list[str]], str]:
    params = parse_qs(urlparse(handler.path).query)
    if handler.command == "POST":
        length = int(handler.headers.get("Content-Length") or 0)
        params.update(parse_qs(handler.rfile.read(length).decode("utf-8", "replace")))
    return params, params.get("query", [""])[-1]


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _ask_oxigraph(endpoint: str, query: str) -> requests.Response:
    return requests.post(endpoint, data={"query": query}, timeout=120,
                         headers={"Accept": "application/sparql-results+json"})


@dataclass
class Front:
    """What a test sees of one engine: its Oxigraph server, its front, the fault proxy before it, its date."""

    engine: Engine
    proxy: FaultProxy
    front: LoopbackServer
    process: subprocess.Popen
    #: The date the copy's data carries.
    date: datetime
    #: Queries the front passed to Oxigraph, as it passed them.
    queries: list[str]

    def close(self) -> None:
        self.proxy.close()
        self.front.close()
        stop(self.process)


def _query_service_handler(oxigraph: str, queries: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            _, query = _query_of(self)
            query = declare_prefixes(rewrite_label_services(_entity_search(query)))
            queries.append(query)
            answer = _ask_oxigraph(oxigraph, query)
            if answer.status_code == 400:  # the query service's page for a query it cannot parse
                body = ("SPARQL-QUERY: queryStr=" + query + "\njava.util.concurrent.ExecutionException: "
                        "org.openrdf.query.MalformedQueryException: " + answer.text.strip().splitlines()[0])
                _send(self, 400, body.encode(), "text/plain; charset=utf-8")
                return
            _send(self, answer.status_code, answer.content, answer.headers.get("Content-Type", "text/plain"))

        do_GET = _handle
        do_POST = _handle

    return Handler


def _qlever_handler(oxigraph: str, queries: list[str], date: datetime) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, body: dict[str, Any]) -> None:
            _send(self, status, json.dumps(body).encode(), "application/json")

        def _handle(self) -> None:
            params, query = _query_of(self)
            if params.get("cmd") == ["stats"]:
                self._json(200, {"name-index": f"Wikidata (latest-all.ttl.bz2, version {date:%d.%m.%Y})",
                                 "git-hash-index": "0000000", "git-hash-server": "0000000",
                                 "num-permutations": 6, "num-triples-normal": 20, "name-text-index": ""})
                return
            if re.search(r"\bSERVICE\b", masked(query), re.IGNORECASE):
                self._json(400, qlever_error(query, "SERVICE clauses are not supported: this engine has no "
                                                    "label service and calls no remote endpoint"))
                return
            prefix = undeclared_prefix(query)
            if prefix is not None:
                self._json(400, qlever_error(query, f"Invalid SPARQL query: Prefix {prefix} was not registered "
                                                    "using a PREFIX declaration"))
                return
            queries.append(query)
            answer = _ask_oxigraph(oxigraph, query)
            if answer.status_code != 200:
                self._json(400, qlever_error(query, f"Invalid SPARQL query: {answer.text.strip()[:500]}"))
                return
            _send(self, 200, answer.content, "application/sparql-results+json")

        do_GET = _handle
        do_POST = _handle

    return Handler


# -- the servers ------------------------------------------------------------------------------------

def oxigraph_command() -> str:
    found = shutil.which("oxigraph", path=str(Path(sys.executable).parent)) or shutil.which("oxigraph")
    if found is None:
        pytest.fail("the oxigraph command is missing: install the test extra")
    return found


def serve_oxigraph(turtle: str, directory: Path) -> tuple[subprocess.Popen, str]:
    """Oxigraph's own server over *turtle*, read-only, on a free loopback port; its query endpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "graph.ttl"
    data.write_text(turtle, encoding="utf-8")
    command = oxigraph_command()
    subprocess.run([command, "load", "--location", str(directory / "store"), "--file", str(data)], check=True,
                   capture_output=True, timeout=300)
    port = free_port()
    process = subprocess.Popen([command, "serve-read-only", "--location", str(directory / "store"), "--bind",
                                f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    endpoint = f"http://127.0.0.1:{port}/query"
    wait_for(f"{endpoint}?query=ASK%7B%7D", process)
    return process, endpoint


@dataclass
class TwoEngines:
    """The query service's copy (``wdqs``) and QLever's (``qlever``), the query service first."""

    wdqs: Front
    qlever: Front

    @property
    def engines(self) -> tuple[Engine, Engine]:
        return self.wdqs.engine, self.qlever.engine

    @property
    def setting(self) -> str:
        """The engine list as an operator writes it (``WIKIDATA_ENGINES``, ``--engines``, bot.ini)."""
        return ", ".join(f"{engine.key}={engine.endpoint}" for engine in self.engines)

    def clear(self) -> None:
        """Disarm every fault and forget what was asked (a test's faults and counts never reach the next test)."""
        for front in (self.wdqs, self.qlever):
            front.proxy.clear()
            with front.proxy._lock:
                front.proxy.fired.clear()
                front.proxy.requests.clear()
            front.queries.clear()

    def close(self) -> None:
        self.wdqs.close()
        self.qlever.close()


def start_two_engines(directory: Path, now: datetime | None = None) -> TwoEngines:
    now = now or datetime.now(timezone.utc).replace(microsecond=0)
    recent, old = now - timedelta(hours=1), now - timedelta(days=40)
    fronts = []
    for key, humans, date, triple in (
            ("wdqs", HUMANS_NOW, recent,
             f'<http://www.wikidata.org> schema:dateModified "{_stamp(recent)}"^^xsd:dateTime .'),
            ("qlever", HUMANS_THEN, old, f'wikibase:Dump schema:dateModified "{_stamp(old)}"^^xsd:dateTime .')):
        process, oxigraph = serve_oxigraph(graph(humans, triple), directory / key)
        queries: list[str] = []
        handler = _query_service_handler(oxigraph, queries) if key == "wdqs" else \
            _qlever_handler(oxigraph, queries, date)
        front = LoopbackServer(handler)
        proxy = FaultProxy(front.base)
        known = WDQS if key == "wdqs" else QLEVER
        path = "/sparql" if key == "wdqs" else "/api/wikidata"
        engine = Engine(known.key, known.name, proxy.url(path), known.dialect, known.try_url)
        fronts.append(Front(engine, proxy, front, process, date, queries))
    return TwoEngines(*fronts)


@pytest.fixture(scope="module")
def two_engine_servers(tmp_path_factory) -> Iterator[TwoEngines]:
    """The two engines, started once for a module's tests (use :func:`two_engines`)."""
    engines = start_two_engines(tmp_path_factory.mktemp("two-engines"))
    try:
        yield engines
    finally:
        engines.close()


@pytest.fixture
def two_engines(two_engine_servers: TwoEngines) -> Iterator[TwoEngines]:
    """The query service's copy and QLever's, each behind its fault proxy; a test's faults are cleared after it."""
    yield two_engine_servers
    two_engine_servers.clear()
