"""KQA Pro's official reading of a SPARQL answer: ``get_sparql_answer`` of the baselines' engine, on our store.

KQA Pro's leaderboard takes one answer string a question; its SPARQL
baselines (``SPARQL/sparql_engine.py`` of ``shijx12/KQAPro_Baselines``) make
that string from a query and its result like this, and so does
:func:`read_answer`:

* the kind of answer comes from the query's text, not its result: a query
  starting ``SELECT DISTINCT ?e`` or ``SELECT ?e`` answers a name,
  ``SELECT (COUNT(DISTINCT ?e)`` a count, ``SELECT DISTINCT ?p `` a
  predicate, ``ASK`` yes or no; any other query answers an attribute, whose
  key is the predicate of the last triple ``?s <key> ?target .`` that ends
  in the projected variable (written with spaces around the ``.``), and
  whose type is the key's type in ``kb.json`` (a year key is a date key);
* a SELECT result gives an answer only when it has exactly one row; the
  answer is read from its first projected column;
* a name is the ``<pred:name>`` of that node; a count its value as Python
  writes it; a predicate its IRI with spaces for underscores; an attribute
  the node's ``<pred:value>`` (a string, or a number with its unit, as
  ``ValueClass`` writes it), ``<pred:date>`` (else ``<pred:year>``) or
  ``<pred:year>``;
* anything else (a literal where a node is expected, a key that is no
  attribute key, a failed query) gives no answer, which the baselines write
  as ``None``.

The store keeps no ``kb.json`` order, so a key's type is read from its
values: a date or year node makes it a date key, a node with a unit a
number key, else a string key (the engine takes the type of the key's last
value in ``kb.json``; the two differ only for a key with both string and
number values).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

import pyoxigraph as ox

from agent.kb.base import Binding, Term
from agent.kb.local import LocalKB
from agent.kb.local.kqapro import DATE, NAME, UNIT, VALUE, YEAR, legal
from agent.kb.local.loaders import XSD

_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
#: What the baselines write for a question whose query gives no answer (``str(None)``).
NO_ANSWER = "None"
_INTEGERS = {XSD + name for name in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                                     "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong",
                                     "unsignedInt", "unsignedShort", "unsignedByte")}


def number_text(value: float | int) -> str:
    """A number as KQA Pro writes it (``ValueClass``): without decimals when within 1e-5 above a whole number (its
    rule, whose comparison also drops the fraction of a negative number)."""
    return str(int(value)) if value - int(value) < 1e-5 else str(value)


@dataclass(frozen=True)
class Reading:
    """The answer the engine reads from a query (``None``: no answer), and why there is none."""

    answer: str | None
    why: str = ""


def answer_kind(sparql: str) -> str:
    """``name``, ``count``, ``pred``, ``bool`` or ``attribute``: what the engine takes the query to answer."""
    if sparql.startswith("SELECT DISTINCT ?e") or sparql.startswith("SELECT ?e"):
        return "name"
    if sparql.startswith("SELECT (COUNT(DISTINCT ?e)"):
        return "count"
    if sparql.startswith("SELECT DISTINCT ?p "):
        return "pred"
    if sparql.startswith("ASK"):
        return "bool"
    return "attribute"


def attribute_key(sparql: str) -> str | None:
    """The key of an attribute query as the engine finds it: the predicate before the last ``<target> .``."""
    tokens = sparql.split()
    if len(tokens) < 3:
        return None
    target = tokens[2]
    for i in range(len(tokens) - 1, 1, -1):
        if tokens[i] == "." and tokens[i - 1] == target:
            return tokens[i - 2][1:-1].replace("_", " ")
    return None


def key_type(kb: LocalKB, key: str) -> str | None:
    """``date``, ``quantity`` or ``string``: the type of an attribute or qualifier key; ``None`` for no such key."""
    for kind, predicate in (("date", YEAR), ("quantity", UNIT), ("string", VALUE)):
        result = kb.execute(f"ASK {{ ?s <{legal(key)}> ?node . ?node <{predicate}> ?x }}")
        if result.boolean:
            return kind
    return None


def python_text(term: ox.Literal | Term) -> str:
    """A literal as rdflib's ``str(literal.value)`` writes it: integers as ints, doubles as floats, dates ISO."""
    value, datatype = (term.value, term.datatype.value) if isinstance(term, ox.Literal) else (
        term.get("value", ""), term.get("datatype", ""))
    try:
        if datatype in _INTEGERS:
            return str(int(value))
        if datatype in (XSD + "double", XSD + "float"):
            return str(float(value))
        if datatype == XSD + "decimal":
            return str(Decimal(value))
        if datatype == XSD + "boolean":
            return str(value in ("true", "1"))
        if datatype == XSD + "date":
            return date.fromisoformat(value).isoformat()
    except (ValueError, InvalidOperation):
        return value
    return value


def _first(kb: LocalKB, node: str, predicate: str) -> ox.Literal | None:
    found = [obj for name, obj in kb.outgoing(node) if name == predicate and isinstance(obj, ox.Literal)]
    return found[0] if found else None


def _attribute(kb: LocalKB, node: str, kind: str) -> Reading:
    """The value of an attribute's value node, as ``ValueClass`` writes it."""
    if kind == "string":
        value = _first(kb, node, VALUE)
        if value is None or value.datatype.value not in (XSD + "string", _LANG_STRING):
            return Reading(None, "not a string value node")
        return Reading(value.value)
    if kind == "quantity":
        value, unit = _first(kb, node, VALUE), _first(kb, node, UNIT)
        if value is None or unit is None:
            return Reading(None, "not a number value node")
        try:
            number = float(value.value)
        except ValueError:
            return Reading(None, "not a number value node")
        text = number_text(number)
        return Reading(text if unit.value == "1" else f"{text} {unit.value}")
    found = _first(kb, node, DATE) or _first(kb, node, YEAR)
    if found is None:
        return Reading(None, "not a date or year value node")
    return Reading(python_text(found))


def read_answer(sparql: str | None, answer: list[Binding] | bool | None, variables: list[str],
                kb: LocalKB) -> Reading:
    """The answer KQA Pro's engine reads from *sparql* and its result (*answer*, *variables*) on *kb*."""
    if sparql is None:
        return Reading(None, "no final query")
    kind = answer_kind(sparql)
    if kind == "attribute":
        key = attribute_key(sparql)
        kind = key_type(kb, key) if key is not None else None
        if kind is None:
            return Reading(None, "no attribute key in the query's form" if key is None
                           else f"{key!r} is no attribute key")
    if isinstance(answer, bool):
        if kind != "bool":
            return Reading(None, "an ASK answer to a query the engine reads as another kind")
        return Reading("yes" if answer else "no")
    if answer is None:
        return Reading(None, "the query gave no result")
    if len(answer) != 1:
        return Reading(None, f"{len(answer)} rows, not one")
    term = answer[0].get(variables[0]) if variables else None
    if term is None:
        return Reading(None, "the first column is unbound")
    if kind == "bool":
        return Reading("yes")
    if kind == "count":
        return Reading(python_text(term)) if term.get("type") == "literal" else Reading(None, "a count that is a node")
    if kind == "pred":
        value = term["value"]
        if term.get("type") == "uri" and kb.graph.base and value.startswith(kb.graph.base):
            value = value[len(kb.graph.base):]
        return Reading(value.replace("_", " "))
    if term.get("type") != "uri":
        return Reading(None, "a literal where the engine expects a node")
    if kind == "name":
        name = _first(kb, term["value"], NAME)
        return Reading(name.value) if name is not None else Reading(None, "a node without a name")
    return _attribute(kb, term["value"], kind)
