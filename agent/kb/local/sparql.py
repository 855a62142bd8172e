"""Run queries written for query.wikidata.org on a local Oxigraph store, unchanged.

What the query service adds to SPARQL is emulated before the query reaches
Oxigraph (which would otherwise try to fetch ``SERVICE`` IRIs over HTTP):

* its built-in prefixes apply when a query does not declare them;
* ``SERVICE wikibase:label`` becomes OPTIONAL label patterns with the
  language fallback list (``[AUTO_LANGUAGE]`` is the configured language),
  for every ``?xLabel``, ``?xDescription`` and ``?xAltLabel`` the query uses,
  or for the variables named in its manual form; a label falls back to the
  bare ID, as on the service;
* ``hint:`` triples are removed (declared, they would match nothing);
* Blazegraph's named subqueries (``WITH { ... } AS %x`` / ``INCLUDE %x``) are
  inlined as subqueries;
* ``geof:distance``, ``geof:latitude``, ``geof:longitude`` and
  ``wikibase:decodeUri`` are functions;
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
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyoxigraph as ox

from agent.kb.base import QueryResult

PREFIXES = {
    "wd": "http://www.wikidata.org/entity/", "wdt": "http://www.wikidata.org/prop/direct/",
    "wdtn": "http://www.wikidata.org/prop/direct-normalized/", "wds": "http://www.wikidata.org/entity/statement/",
    "wdv": "http://www.wikidata.org/value/", "wdref": "http://www.wikidata.org/reference/",
    "wdata": "http://www.wikidata.org/wiki/Special:EntityData/", "wdno": "http://www.wikidata.org/prop/novalue/",
    "p": "http://www.wikidata.org/prop/", "ps": "http://www.wikidata.org/prop/statement/",
    "psv": "http://www.wikidata.org/prop/statement/value/",
    "psn": "http://www.wikidata.org/prop/statement/value-normalized/",
    "pq": "http://www.wikidata.org/prop/qualifier/", "pqv": "http://www.wikidata.org/prop/qualifier/value/",
    "pqn": "http://www.wikidata.org/prop/qualifier/value-normalized/",
    "pr": "http://www.wikidata.org/prop/reference/", "prv": "http://www.wikidata.org/prop/reference/value/",
    "prn": "http://www.wikidata.org/prop/reference/value-normalized/",
    "wikibase": "http://wikiba.se/ontology#", "bd": "http://www.bigdata.com/rdf#",
    "schema": "http://schema.org/", "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#", "skos": "http://www.w3.org/2004/02/skos/core#",
    "owl": "http://www.w3.org/2002/07/owl#", "xsd": "http://www.w3.org/2001/XMLSchema#",
    "prov": "http://www.w3.org/ns/prov#", "geo": "http://www.opengis.net/ont/geosparql#",
    "geof": "http://www.opengis.net/def/function/geosparql/", "hint": "http://www.bigdata.com/queryHints#",
    "mwapi": "https://www.mediawiki.org/ontology#API/", "gas": "http://www.bigdata.com/rdf/gas#",
    "bds": "http://www.bigdata.com/rdf/search#", "ontolex": "http://www.w3.org/ns/lemon/ontolex#",
    "dct": "http://purl.org/dc/terms/", "cc": "http://creativecommons.org/ns#",
    "foaf": "http://xmlns.com/foaf/0.1/", "dbo": "http://dbpedia.org/ontology/",
    "fn": "http://www.w3.org/2005/xpath-functions#",
}
ENTITY = PREFIXES["wd"]
_SKIP = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\'|"(?:[^"\\\n]|\\.)*"'
                   r"|'(?:[^'\\\n]|\\.)*'|<[^<>\"{}|^`\\\s]*>|#[^\n]*", re.DOTALL)


class UnsupportedOffline(ValueError):
    pass


def _masked(query: str) -> str:
    """The query with literals, IRIs and comments blanked out (same length), so braces can be counted."""
    return _SKIP.sub(lambda match: " " * len(match.group(0)), query)


def _closing_brace(masked: str, opening: int) -> int:
    depth = 0
    for index in range(opening, len(masked)):
        if masked[index] == "{":
            depth += 1
        elif masked[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise SyntaxError("unbalanced braces")


def _inline_named_subqueries(query: str) -> str:
    while True:
        masked = _masked(query)
        match = re.search(r"\bWITH\s*\{", masked, re.IGNORECASE)
        if not match:
            return query
        end = _closing_brace(masked, match.end() - 1)
        name = re.match(r"\s*AS\s+(%\w+)", masked[end + 1:], re.IGNORECASE)
        if not name:
            raise SyntaxError("WITH { ... } without AS %name")
        body = query[match.end():end]
        query = query[:match.start()] + query[end + 1 + name.end():]
        query = re.sub(r"\bINCLUDE\s+" + re.escape(name.group(1)) + r"\b", lambda _: "{ " + body + " }", query,
                       flags=re.IGNORECASE)


def _label_patterns(variable: str, output: str, kind: str, languages: list[str]) -> str:
    predicate = {"Label": "rdfs:label", "Description": "schema:description", "AltLabel": "skos:altLabel"}[kind]
    if kind == "AltLabel":
        language = languages[0]
        return (f"OPTIONAL {{ SELECT ?{variable} (GROUP_CONCAT(?{output}_alt; separator=\", \") AS ?{output}) "
                f"WHERE {{ ?{variable} {predicate} ?{output}_alt FILTER(LANG(?{output}_alt) = \"{language}\") }} "
                f"GROUP BY ?{variable} }}")
    parts = []
    names = []
    for index, language in enumerate(languages):
        name = f"?{output}_l{index}"
        names.append(name)
        parts.append(f"OPTIONAL {{ ?{variable} {predicate} {name} FILTER(LANG({name}) = \"{language}\") }}")
    if kind == "Label":
        names.append(f"IF(isIRI(?{variable}) && STRSTARTS(STR(?{variable}), \"{ENTITY}\"), "
                     f"STRAFTER(STR(?{variable}), \"{ENTITY}\"), STR(?{variable}))")
    parts.append(f"BIND(COALESCE({', '.join(names)}) AS ?{output})")
    return " ".join(parts)


def _rewrite_label_service(query: str, language: str) -> str:
    masked = _masked(query)
    match = re.search(r"\bSERVICE\s+wikibase:label\s*\{", masked, re.IGNORECASE)
    if not match:
        return query
    end = _closing_brace(masked, match.end() - 1)
    inside = query[match.end():end]
    languages_match = re.search(r'wikibase:language\s+"([^"]*)"', inside)
    languages = [part.strip() for part in (languages_match.group(1) if languages_match else language).split(",")]
    languages = [language if part == "[AUTO_LANGUAGE]" else part for part in languages if part] or [language]
    manual = re.findall(r"\?(\w+)\s+(rdfs:label|schema:description|skos:altLabel)\s+\?(\w+)", inside)
    kinds = {"rdfs:label": "Label", "schema:description": "Description", "skos:altLabel": "AltLabel"}
    wanted: list[tuple[str, str, str]] = [(variable, output, kinds[predicate])
                                         for variable, predicate, output in manual]
    if not manual:
        rest = query[:match.start()] + query[end + 1:]
        variables = set(re.findall(r"[?$](\w+)", _masked(rest)))
        for name in sorted(variables):
            for kind in ("AltLabel", "Label", "Description"):
                if name.endswith(kind) and name[: -len(kind)] in variables:
                    wanted.append((name[: -len(kind)], name, kind))
                    break
    patterns = " ".join(_label_patterns(variable, output, kind, languages) for variable, output, kind in wanted)
    return query[:match.start()] + patterns + query[end + 1:]


_HINT = re.compile(r"\bhint:\w+\s+hint:\w+\s+(?:\"[^\"]*\"|'[^']*'|[^\s.;}]+)\s*\.?", re.IGNORECASE)


def rewrite(query: str, language: str = "en") -> str:
    """The query as Oxigraph can run it; raises UnsupportedOffline for what cannot be emulated."""
    query = _inline_named_subqueries(query)
    query = _HINT.sub(" ", query)
    query = _rewrite_label_service(query, language)
    masked = _masked(query)
    service = re.search(r"\bSERVICE\s+(SILENT\s+)?(\S+)", masked, re.IGNORECASE)
    if service:
        start = service.start(2)
        raise UnsupportedOffline(f"not supported offline: SERVICE {query[start:service.end(2)]}")
    for feature in ("wikibase:around", "wikibase:box"):
        if feature in masked:
            raise UnsupportedOffline(f"not supported offline: {feature}")
    return query


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


def run_on_store(store: ox.Store, query: str, language: str = "en") -> dict[str, Any]:
    """A query's outcome as plain data (it crosses a process boundary)."""
    try:
        prepared = rewrite(query, language)
        results = store.query(prepared, prefixes=PREFIXES, custom_functions=FUNCTIONS)
    except UnsupportedOffline as error:
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


def _worker(path: str, language: str, connection: Any) -> None:
    store = ox.Store.read_only(path)
    while True:
        try:
            query = connection.recv()
        except EOFError:  # the parent has gone
            return
        connection.send(run_on_store(store, query, language))


class QueryEngine:
    """Queries on the store at *store_path*, each in a worker process that a timeout can end."""

    def __init__(self, store_path: Path, language: str = "en", default_timeout: float = 60.0) -> None:
        self.store_path = Path(store_path)
        self.language = language
        self.default_timeout = default_timeout
        self._lock = threading.Lock()
        self._process: multiprocessing.Process | None = None
        self._connection: Any = None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._process = context.Process(target=_worker, args=(str(self.store_path), self.language, child),
                                        daemon=True)
        self._process.start()
        self._connection = parent

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
                self._start()
            self._connection.send(sparql)
            if not self._connection.poll(timeout):
                self.restart()
                return QueryResult(status="timeout", message=f"stopped after {timeout:g} seconds")
            try:
                outcome = self._connection.recv()
            except EOFError:
                self.restart()
                return QueryResult(status="error", message="the query worker ended unexpectedly")
        return QueryResult(**outcome)
