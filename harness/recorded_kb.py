"""A knowledge base that answers from one recorded run of the upstream SPINACH agent.

The upstream run logs keep, for every action, the observation the agent saw,
and for every executed query its raw query-service bindings.  Replaying a run
against this backend needs no network and shows what the same model
decisions lead to in our agent.  Observations are read back into the
:mod:`agent.kb.base` data classes, so they pass through our formatting like
any live answer.

A query the run never executed has no record; when it is upstream's final
answer for the question (its scored output's ``predicted_sparql``, compared by
:func:`same_query`), it is answered with that output's
``predicted_answer_tuple``, which upstream's own end of run received.  A
query with the same WHERE group as a known one, that only reads the known
query's columns (the same SELECT with ``DISTINCT``, as upstream's
post-processing writes it, or ``ASK``, ``COUNT(DISTINCT ?x)`` over the same
pattern), is answered by SPARQL itself: Oxigraph evaluates its head and
modifiers over the known rows, given as a VALUES block in place of the group.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyoxigraph

from agent.graph import ENTITY_ID, WIKIDATA
from agent.kb.base import (
    Claim, CrossCheck, Entry, PropertyExample, Qualifier, QueryResult, QueryStatus, SearchHit, SearchResults, Value,
)
from agent.kb.dialect import PREFIXES
from agent.kb.local.sparql import term_json
from harness.query_parts import QueryParts, projected_variables, query_parts
from agent.sparql_lexer import tokenize

_HIT = re.compile(r"^(?P<label>.*) \((?P<id>" + ENTITY_ID + r")\)(?::\s*(?P<description>.*))?$")
_LABELLED = re.compile(r"^(?P<label>.*) \((?P<id>" + ENTITY_ID + r")\)$")
_QUOTED_LABEL = re.compile(r'"([^"\n]+?) \((' + ENTITY_ID + r')\)"')
_EMPTY = "Query returned empty result."
_MALFORMED = re.compile(r"MalformedQueryException:\s*(.+)", re.DOTALL)


def _key(text: str) -> str:
    return " ".join(text.split())


def _value(text: str) -> Value:
    match = _LABELLED.match(text)
    return Value(match.group("label"), match.group("id")) if match else Value(text)


def _property(key: str) -> tuple[str, str]:
    match = _LABELLED.match(key)
    return (match.group("id"), match.group("label")) if match else (key, key)


def _query_key(sparql: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """Tokens without white space and comments, the outermost DISTINCT left out, the projection as a set."""
    significant = [token.text for token in tokenize(sparql) if token.kind not in ("space", "comment")]
    upper = [text.upper() for text in significant]
    if "SELECT" in upper:
        select = upper.index("SELECT")
        if select + 1 < len(upper) and upper[select + 1] == "DISTINCT":
            del significant[select + 1]
            del upper[select + 1]
        end = select + 1
        while end < len(upper) and significant[end].startswith(("?", "$")):
            end += 1
        significant[select + 1:end] = []
    return tuple(significant), frozenset(projected_variables(sparql))


def same_query(first: str, second: str) -> bool:
    """The same query but for white space, comments, an outermost DISTINCT and the order of projected variables.

    Upstream's end of run wrote ``SELECT DISTINCT`` into every final query and
    put the variables it added first; neither changes which query it is.
    """
    return _query_key(first) == _query_key(second)


class RecordedKB:
    """Serves the first recorded observation of each (action, argument) of *run*; *output* answers its final query."""

    graph = WIKIDATA
    #: A recording names no engine's data stale: it has no engines.
    stale_after_days: float | None = None

    def __init__(self, run: dict[str, Any], output: dict[str, Any] | None = None) -> None:
        self.output = output
        self.observations: dict[tuple[str, str], str] = {}
        for action in run.get("actions") or []:
            if action.get("observation") is not None:
                self.observations.setdefault((action["action_name"], _key(action["action_argument"])),
                                             action["observation"])
        #: Every ID the run's observations named, with the label (and a search hit's description) they gave it.
        self.names: dict[str, SearchHit] = {}
        for text in self.observations.values():
            for line in text.splitlines():
                if (hit := _HIT.match(line.strip())) is not None:
                    self.names.setdefault(hit.group("id"), SearchHit(hit.group("id"), hit.group("label"),
                                                                     hit.group("description") or ""))
            for labelled in _QUOTED_LABEL.finditer(text):
                self.names.setdefault(labelled.group(2), SearchHit(labelled.group(2), labelled.group(1)))
        self.results: dict[str, dict[str, Any]] = {}
        for generated in run.get("generated_sparqls") or []:
            self.results.setdefault(_key(generated["sparql"]), generated)
        known = [(generated["sparql"], generated["execution_result"])
                 for generated in run.get("generated_sparqls") or []
                 if generated.get("execution_status") == "ok" and isinstance(generated.get("execution_result"), list)]
        if output and output.get("predicted_sparql") and isinstance(output.get("predicted_answer_tuple"), list):
            known.append((output["predicted_sparql"], output["predicted_answer_tuple"]))
        #: SELECTs whose rows are all their solutions (SPARQL JSON), latest last: the run's, then upstream's final.
        self.known: list[tuple[QueryParts, list[dict[str, Any]]]] = [
            (parts, rows) for sparql, rows in known
            if rows and (parts := query_parts(sparql)) is not None and parts.form.upper() == "SELECT"
            and _complete(parts, len(rows))]

    def _recorded(self, action: str, argument: str) -> str | None:
        return self.observations.get((action, _key(argument)))

    def search(self, text: str) -> SearchResults:
        results = SearchResults()
        for line in (self._recorded("search_wikidata", text) or "").splitlines():
            match = _HIT.match(line.strip())
            if not match:
                continue
            hit = SearchHit(match.group("id"), match.group("label"), match.group("description") or "")
            (results.properties if hit.id.startswith("P") else results.items).append(hit)
        return results

    def get_entry(self, qid: str) -> Entry | None:
        recorded = self._recorded("get_wikidata_entry", qid)
        if recorded is None:
            return None
        try:
            edges = json.loads(recorded)
        except ValueError:
            edges = {}
        claims = []
        for key, value in edges.items() if isinstance(edges, dict) else ():
            property_id, property_label = _property(key)
            values = value if isinstance(value, dict) else {str(item): {} for item in
                                                           (value if isinstance(value, list) else [value])}
            for text, details in values.items():
                qualifiers = []
                for group in (details.get("Qualifiers", []) if isinstance(details, dict) else []):
                    for qualifier_key, qualifier_value in group.items():
                        qualifier_id, qualifier_label = _property(qualifier_key)
                        qualifiers.append(Qualifier(qualifier_id, qualifier_label, _value(str(qualifier_value))))
                claims.append(Claim(property_id, property_label, _value(text), qualifiers))
        return Entry(id=qid, label=qid, claims=claims)

    def property_examples(self, pid: str) -> list[PropertyExample] | None:
        recorded = self._recorded("get_property_examples", pid)
        if recorded is None:
            return None
        examples = []
        for line in recorded.splitlines():
            parts = line.split(" -- ")
            if len(parts) == 2 and "--> " in parts[1]:
                examples.append(PropertyExample(Value(parts[0].strip()), Value(parts[1].split("--> ", 1)[1])))
        return examples

    def describe(self, ids: list[str], language: str | None = None) -> list[SearchHit]:
        """The names the run's own observations gave *ids*: the record holds no others, so the rest read as
        missing (the replay counts how often the check fires; no recorded model reads the names), and none in
        another *language*."""
        if language is not None:
            return []
        return [self.names[entity_id] for entity_id in ids if entity_id in self.names]

    def cross_check(self, sparql: str, seconds: float | None = None,
                    known: QueryResult | None = None) -> CrossCheck | None:
        """None: the run recorded one engine's answers, and no other engine can be asked."""
        return None

    def execute(self, sparql: str, timeout: float | None = None) -> QueryResult:
        generated = self.results.get(_key(sparql))
        if generated is not None and generated.get("execution_status") == "ok":
            rows = generated.get("execution_result")
            if isinstance(rows, bool):
                return QueryResult(QueryStatus.OK, boolean=rows)
            if rows:
                variables = list(dict.fromkeys(name for row in rows for name in row))
                return QueryResult(QueryStatus.OK, variables=variables, bindings=rows)
        recorded = self._recorded("execute_sparql", sparql)
        if recorded is None:
            if self.output and self.output.get("predicted_sparql") and same_query(sparql,
                                                                                 self.output["predicted_sparql"]):
                return _rows(self.output.get("predicted_answer_tuple"))
            return self._derived(sparql) or QueryResult(QueryStatus.ERROR,
                                                        message="this query is not in the recorded run")
        text = recorded.strip()
        if text in ("True", "False"):
            return QueryResult(QueryStatus.OK, boolean=text == "True")
        malformed = _MALFORMED.search(text)
        if malformed:
            return QueryResult(QueryStatus.SYNTAX_ERROR, message=malformed.group(1).strip())
        if text == _EMPTY or not text:
            return QueryResult(QueryStatus.EMPTY)
        lines = text.splitlines()
        variables = lines[0].split()
        bindings = [{name: {"type": "literal", "value": cell} for name, cell in zip(variables, line.split())}
                    for line in lines[1:] if line.strip()]
        return QueryResult(QueryStatus.OK if bindings else "empty", variables=variables, bindings=bindings)

    def _derived(self, sparql: str) -> QueryResult | None:
        """*sparql* evaluated over a known query's rows, when it shares its WHERE group and reads only its columns."""
        parts = query_parts(sparql)
        if parts is None:
            return None
        group = _group_key(parts.group)
        used = {token.text[1:] for token in tokenize(parts.head + parts.tail) if token.kind == "var"}
        for known, rows in reversed(self.known):
            if _group_key(known.group) != group:
                continue
            columns = list(dict.fromkeys(name for row in rows for name in row))
            if not used - _new_names(parts.head) <= set(columns):
                continue
            values = "VALUES (" + " ".join(f"?{name}" for name in columns) + ") {\n" + "\n".join(
                "(" + " ".join(_term(row.get(name)) for name in columns) + ")" for row in rows) + "\n}"
            try:
                answer = pyoxigraph.Store().query(parts.prologue + parts.form + parts.head + "{ " + values + " }"
                                                  + parts.tail, prefixes=PREFIXES)
            except (SyntaxError, OSError, ValueError):
                return None
            if isinstance(answer, pyoxigraph.QueryBoolean):
                return QueryResult(QueryStatus.OK, boolean=bool(answer))
            names = [variable.value for variable in answer.variables]
            bindings = [{name: term_json(solution[name]) for name in names if solution[name] is not None}
                        for solution in answer]
            return QueryResult(QueryStatus.OK if bindings else "empty", variables=names, bindings=bindings)
        return None


def _complete(known: QueryParts, rows: int) -> bool:
    """The known rows are all the query's solutions: no OFFSET, and fewer rows than its LIMIT if it has one."""
    return "OFFSET" not in known.tail_keywords and (known.limit is None or rows < known.limit)


def _group_key(group: str) -> tuple[str, ...]:
    return tuple(token.text for token in tokenize(group) if token.kind not in ("space", "comment"))


def _new_names(head: str) -> set[str]:
    """Variables a head binds itself (``… AS ?name``)."""
    tokens = [token for token in tokenize(head) if token.kind not in ("space", "comment")]
    return {token.text[1:] for previous, token in zip(tokens, tokens[1:])
            if token.kind == "var" and previous.kind == "word" and previous.text.upper() == "AS"}


def _term(term: dict[str, Any] | None) -> str:
    """A SPARQL JSON term written for a VALUES block (``UNDEF`` for an unbound or blank one)."""
    if not term or term.get("type") not in ("uri", "literal", "typed-literal"):
        return "UNDEF"
    if term["type"] == "uri":
        return f"<{term['value']}>" if not re.search(r'[<>"{}|^`\\\s]', term["value"]) else "UNDEF"
    text = json.dumps(term["value"], ensure_ascii=False)
    if term.get("xml:lang"):
        return f"{text}@{term['xml:lang']}"
    return f"{text}^^<{term['datatype']}>" if term.get("datatype") else text


def _rows(answer: list[dict[str, Any]] | bool | None) -> QueryResult:
    if isinstance(answer, bool):
        return QueryResult(QueryStatus.OK, boolean=answer)
    if not answer:
        return QueryResult(QueryStatus.EMPTY)
    return QueryResult(QueryStatus.OK, variables=list(dict.fromkeys(name for row in answer for name in row)),
                       bindings=answer)
