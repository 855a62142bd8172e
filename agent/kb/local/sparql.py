"""Run queries written for query.wikidata.org on a local Oxigraph store, unchanged.

What the query service adds to SPARQL is emulated before the query reaches
Oxigraph (which would otherwise try to fetch ``SERVICE`` IRIs over HTTP):

* its built-in prefixes apply when a query does not declare them;
* the label service, ``hint:`` triples and named subqueries are emulated
  as :mod:`agent.kb.dialect` does for every engine other than the service;
* a sequence path towards a constant (``?x wdt:P31/wdt:P279* wd:Q515``) is
  written so that Oxigraph walks it from the constant;
* ``geof:distance``, ``geof:latitude``, ``geof:longitude`` and
  ``wikibase:decodeUri`` are functions;
* XPath casts SPARQL 1.1 lacks (``xsd:int(?x)``) are SPARQL 1.1's ``xsd:integer``
  (:func:`agent.kb.dialect.integer_casts`);
* a prefixed name Oxigraph's parser misreads is written so it reads it
  (:func:`escape_dots_beside_percents`);
* other services (``wikibase:mwapi``, ``wikibase:around``, ``wikibase:box``,
  federation) answer "not supported offline".

Queries run in a worker process that opens the store read-only: a query
that passes its time limit is stopped by ending that process, and the
caller stays responsive.
"""

from __future__ import annotations

import math
import multiprocessing
import re
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyoxigraph as ox

from agent.kb.base import QueryResult, QueryStatus
from agent.kb.dialect import PREFIXES, Unsupported, emulate_wdqs, integer_casts, masked
from agent.sparql_lexer import Token, tokenize

#: How long a new query worker may take to start and open the store.
STARTUP_SECONDS = 120
#: Pauses between a worker's attempts to open the store, in seconds (then it gives up and says why).
OPEN_RETRIES = (0.1, 0.3, 1.0, 3.0)
#: Tokens that end a subject (or an object), so that what follows is a verb.
_TERMS = ("var", "iri", "pname", "bnode", "string", "number", "langtag")


def _path_element(tokens: list[Token], position: int) -> int | None:
    """End (exclusive) of the path element ``^? (iri | pname | a) (* | +)?`` starting at *position*, or None."""
    if position < len(tokens) and tokens[position].text == "^":
        position += 1
    if position >= len(tokens) or not (tokens[position].kind in ("iri", "pname") or tokens[position].text == "a"):
        return None
    position += 1
    if position < len(tokens) and tokens[position].text in ("*", "+"):
        position += 1
    return position


def _bound_object(tokens: list[Token], position: int) -> int | None:
    """End (exclusive) of a constant object (IRI, literal, number) starting at *position*, or None."""
    if position >= len(tokens):
        return None
    token = tokens[position]
    if token.kind in ("iri", "pname", "number") or token.text.lower() in ("true", "false"):
        return position + 1
    if token.kind != "string":
        return None
    if position + 1 < len(tokens) and tokens[position + 1].kind == "langtag":
        return position + 2
    if position + 2 < len(tokens) and tokens[position + 1].text == "^^" \
            and tokens[position + 2].kind in ("iri", "pname"):
        return position + 3
    return position + 1


def paths_from_bound_end(query: str) -> str:
    """``?x p1/p2* wd:Q515`` as ``?x p1 [ p2* wd:Q515 ]``: the same rows, evaluated from the constant end.

    Oxigraph evaluates a sequence path from its subject, so the most common
    Wikidata idiom (instances of a class or its subclasses) walked every
    ``p1`` edge of the store; the blank-node form is the join the SPARQL
    specification defines for a sequence, and Oxigraph evaluates its inner
    triple, the one holding the constant, first.
    """
    everything = tokenize(query)
    tokens = [token for token in everything if token.kind not in ("space", "comment")]
    replaced: list[tuple[int, int, str]] = []  # (start, end) character spans and their new text
    stack: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.text in ("{", "[", "("):
            stack.append(token.text)
        elif token.text in ("}", "]", ")"):
            stack = stack[:-1]
        elif stack and stack[-1] in "{[" and index > 0 and (tokens[index - 1].kind in _TERMS
                                                             or tokens[index - 1].text in (";", "[", "]")):
            elements = []
            position = index
            while (end := _path_element(tokens, position)) is not None:
                elements.append((position, end))
                if end < len(tokens) and tokens[end].text == "/":
                    position = end + 1
                    continue
                position = end
                break
            object_end = _bound_object(tokens, position) if len(elements) > 1 else None
            if object_end is not None and (object_end >= len(tokens)
                                           or tokens[object_end].text in (".", ";", "}", "]")):
                def text(first: int, last: int) -> str:
                    return query[tokens[first].start:tokens[last - 1].start + len(tokens[last - 1].text)]
                inner = text(position, object_end)
                for first, last in reversed(elements[1:]):
                    inner = f"[ {text(first, last)} {inner} ]"
                first, last = elements[0]
                replaced.append((tokens[index].start, tokens[object_end - 1].start + len(tokens[object_end - 1].text),
                                 f"{text(first, last)} {inner}"))
                index = object_end
                continue
        index += 1
    for start, end, new in reversed(replaced):
        query = query[:start] + new + query[end:]
    return query


def escape_dots_beside_percents(query: str) -> str:
    r"""Prefixed names holding a ``.`` and a ``%XX`` with the dots escaped (``prodi:empl-K.Brant%40company.org``
    as ``prodi:empl-K\.Brant%40company\.org``): the same IRI, which Oxigraph 0.5's parser otherwise refuses
    when a dot comes before the percent escape and another after it (CK25's employee IRIs)."""
    return "".join(re.sub(r"(?<!\\)\.", r"\\.", token.text) if token.kind == "pname" and "%" in token.text
                   and "." in token.text else token.text for token in tokenize(query))


def rewrite(query: str, language: str = "en", dialect: str = "wdqs") -> str:
    """The query as Oxigraph can run it; raises :class:`Unsupported` for what cannot be emulated.

    *dialect* is what the graph's queries are written in (its profile's): the
    query service's additions are emulated unless they are plain SPARQL 1.1
    (``sparql11``), so such a graph's query runs as written.
    """
    if dialect != "sparql11":
        query = emulate_wdqs(query, language)
    service = re.search(r"(?<![?$\w:])SERVICE\s+(SILENT\s+)?(\S+)", masked(query), re.IGNORECASE)
    if service:
        start = service.start(2)
        raise Unsupported(f"not supported offline: SERVICE {query[start:service.end(2)]}")
    return paths_from_bound_end(escape_dots_beside_percents(integer_casts(query)))


# -- functions ---------------------------------------------------------------------------------------------

_POINT = re.compile(r"Point\(\s*([-+0-9.eE]+)\s+([-+0-9.eE]+)\s*\)", re.IGNORECASE)


def _point(term: Any) -> tuple[float, float] | None:
    match = _POINT.search(getattr(term, "value", "") or "")
    return (float(match.group(1)), float(match.group(2))) if match else None


def _distance(first: Any, second: Any, *unit: Any) -> ox.Literal | None:
    a, b = _point(first), _point(second)
    if a is None or b is None:
        return None
    (lon1, lat1), (lon2, lat2) = (map(math.radians, a)), (map(math.radians, b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return ox.Literal(repr(2 * 6371.0 * math.asin(math.sqrt(h))), datatype=ox.NamedNode(PREFIXES["xsd"] + "double"))


def _coordinate(index: int):
    def read(term: Any) -> ox.Literal | None:
        point = _point(term)
        return None if point is None else ox.Literal(repr(point[index]),
                                                     datatype=ox.NamedNode(PREFIXES["xsd"] + "double"))
    return read


def _decode_uri(term: Any) -> ox.Literal:
    return ox.Literal(unquote(getattr(term, "value", str(term))))


FUNCTIONS = {
    ox.NamedNode(PREFIXES["geof"] + "distance"): _distance,
    ox.NamedNode(PREFIXES["geof"] + "latitude"): _coordinate(1),
    ox.NamedNode(PREFIXES["geof"] + "longitude"): _coordinate(0),
    ox.NamedNode(PREFIXES["wikibase"] + "decodeUri"): _decode_uri,
}


# -- results ---------------------------------------------------------------------------------------------

def term_json(term: Any) -> dict[str, str]:
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    data = {"type": "literal", "value": term.value}
    if term.language:
        data["xml:lang"] = term.language
    elif term.datatype.value != PREFIXES["xsd"] + "string":
        data["datatype"] = term.datatype.value
    return data


def run_on_store(store: ox.Store, query: str, language: str = "en", prefixes: dict[str, str] = PREFIXES,
                 base_iri: str | None = None, dialect: str = "wdqs") -> dict[str, Any]:
    """A query's outcome as plain data (it crosses a process boundary).

    *prefixes* are declared for every query (the graph's), and relative IRIs
    resolve against *base_iri* (KQA Pro's queries write ``<population>``).
    The default graph is the union of the store's graphs, so a query written
    for a graph loaded in named graphs (CK25) runs as written; ``GRAPH``
    still names each.
    """
    try:
        prepared = rewrite(query, language, dialect)
        results = store.query(prepared, prefixes=prefixes, base_iri=base_iri or None, custom_functions=FUNCTIONS,
                              use_default_graph_as_union=True)
    except Unsupported as error:
        return {"status": "error", "message": str(error)}
    except SyntaxError as error:
        return {"status": "syntax_error", "message": str(error)}
    except (OSError, ValueError, RuntimeError) as error:
        return {"status": "error", "message": str(error)}
    if isinstance(results, ox.QueryBoolean):
        return {"status": "ok", "boolean": bool(results)}
    if isinstance(results, ox.QuerySolutions):
        variables = [variable.value for variable in results.variables]
        bindings = [{name: term_json(solution[name]) for name in variables if solution[name] is not None}
                    for solution in results]
        return {"status": "ok" if bindings else "empty", "variables": variables, "bindings": bindings}
    bindings = [{"subject": term_json(t.subject), "predicate": term_json(t.predicate), "object": term_json(t.object)}
                for t in results]
    return {"status": "ok" if bindings else "empty", "variables": ["subject", "predicate", "object"],
            "bindings": bindings}


def open_read_only(path: str) -> ox.Store:
    """The store at *path*, read-only, tried again when it fails.

    A read-only open reads the list of the store's files and then opens them;
    a process holding the store for writing may still be compacting (RocksDB
    does so in the background after a load), and a file it replaced between
    the two reads fails the open ("No such file ... MANIFEST may be
    corrupted") though nothing is wrong: the next attempt reads the new list.
    """
    for pause in OPEN_RETRIES:
        try:
            return ox.Store.read_only(path)
        except OSError:
            time.sleep(pause)
    return ox.Store.read_only(path)


def _worker(path: str, language: str, connection: Any, prefixes: dict[str, str], base_iri: str | None,
            dialect: str) -> None:
    try:
        store = open_read_only(path)
    except OSError as error:
        connection.send(f"cannot open the store: {error}")
        return
    connection.send("ready")  # a query's time limit starts once the store is open, not while Python starts
    while True:
        try:
            query = connection.recv()
        except EOFError:  # the parent has gone
            return
        connection.send(run_on_store(store, query, language, prefixes, base_iri, dialect))


class QueryEngine:
    """Queries on the store at *store_path*, each in a worker process that a timeout can end.

    *prefixes*, *base_iri* and *dialect* are the graph's (see :func:`run_on_store`).
    """

    def __init__(self, store_path: Path, language: str = "en", default_timeout: float = 60.0,
                 prefixes: dict[str, str] = PREFIXES, base_iri: str | None = None, dialect: str = "wdqs") -> None:
        self.store_path = Path(store_path)
        self.language = language
        self.default_timeout = default_timeout
        self.prefixes = prefixes
        self.base_iri = base_iri
        self.dialect = dialect
        self._lock = threading.Lock()
        self._process: multiprocessing.Process | None = None
        self._connection: Any = None

    def _start(self) -> str | None:
        """Start a worker and wait until it has the store open; a message when it could not."""
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._process = context.Process(target=_worker, args=(str(self.store_path), self.language, child,
                                                              self.prefixes, self.base_iri, self.dialect),
                                        daemon=True)
        self._process.start()
        child.close()  # the worker's end: once it exits, the parent reads an end of file instead of waiting
        self._connection = parent
        said = "it did not start in time"
        try:
            if parent.poll(STARTUP_SECONDS):
                said = parent.recv()
                if said == "ready":
                    return None
        except (EOFError, OSError):
            said = "it ended while starting"
        self.restart()
        return f"the local store's query worker could not open {self.store_path}: {said}"

    def restart(self) -> None:
        """End the worker: the next query starts one that sees the store as it is now."""
        if self._process is not None:
            self._process.kill()
            self._process.join()
            self._process = None

    def execute(self, sparql: str, timeout: float | None = None) -> QueryResult:
        timeout = timeout or self.default_timeout
        with self._lock:
            if self._process is None or not self._process.is_alive():
                failure = self._start()
                if failure:
                    return QueryResult(status=QueryStatus.ERROR, message=failure)
            try:
                self._connection.send(sparql)
            except OSError:
                return QueryResult(status=QueryStatus.ERROR, message=self._ended())
            if not self._connection.poll(timeout):
                self.restart()
                return QueryResult(status=QueryStatus.TIMEOUT, message=f"stopped after {timeout:g} seconds")
            try:
                outcome = self._connection.recv()
            except (EOFError, OSError):  # the worker died mid-query: killed, or out of memory
                return QueryResult(status=QueryStatus.ERROR, message=self._ended())
        return QueryResult(**outcome)

    def _ended(self) -> str:
        """Why the worker ended, for the caller; the next query starts a new one."""
        process = self._process
        assert process is not None
        process.join(5)
        code = process.exitcode
        self._process = None
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return (f"the local store's query worker {how} while running this query (out of memory, or ended by "
                "another process); the query was not answered, and the next one starts a new worker")
