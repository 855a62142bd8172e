"""KQA Pro's ``kb.json`` as the RDF its SPARQL engine queries, streamed in bounded batches.

The release's knowledge base is one JSON document: ``concepts`` (id to name
and parent concepts) and ``entities`` (id to name, concepts, attributes and
relations, each fact with its qualifiers).  KQA Pro's gold SPARQL was written
for the graph its baselines build from it (``SPARQL/sparql_engine.py`` of
``shijx12/KQAPro_Baselines``), so the mapping here is that graph, triple for
triple:

* every concept and entity has ``<pred:name>`` (white space collapsed);
* an entity has ``<pred:instance_of>`` to each of its concepts and all their
  ancestors (a concept's ``instanceOf`` names its parents);
* an attribute is ``entity <key> value-node``; a value node has
  ``<pred:value>`` (a string, or an ``xsd:double`` with ``<pred:unit>``, ``"1"``
  meaning none), or ``<pred:year>`` (an integer) for a year, or both
  ``<pred:year>`` and ``<pred:date>`` (``xsd:date``) for a date;
* a relation is ``entity <predicate> object``; a ``backward`` one is written
  ``object <predicate> entity`` when its object is a concept and left out
  otherwise (the other entity holds it forward);
* every attribute and relation triple gets a fact node with
  ``<pred:fact_h>``, ``<pred:fact_r>``, ``<pred:fact_t>``, and each qualifier
  is ``fact-node <qualifier-key> value-node``;
* keys and predicates are IRIs with spaces as underscores, relative to the
  graph's base IRI (``<date_of_birth>``), as the queries write them.

The engine's blank nodes are IRIs here (``.well-known/genid/`` under the
base, numbered per entity), so that an answer that is a value node can be
read in a later query; no KQA Pro query tells the two apart.

The document is read member by member (:class:`_MemberReader`), so memory
holds one entity at a time and the concepts; facts for the search index go
with each batch: names, a description that tells same-name entities apart
(their concepts and first key facts), and every key and predicate as a
property with the kinds of value it takes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pyoxigraph as ox

from agent.graph import GraphProfile
from agent.kb.dialect import PREFIXES
from agent.kb.local.batches import Batch, Fact, LoadError, iri, literal

XSD = PREFIXES["xsd"]

NAME, INSTANCE_OF = "pred:name", "pred:instance_of"
VALUE, UNIT, YEAR, DATE = "pred:value", "pred:unit", "pred:year", "pred:date"
FACT_H, FACT_R, FACT_T = "pred:fact_h", "pred:fact_r", "pred:fact_t"
SECTIONS = ("concepts", "entities")
#: The value types of the release, and how a property taking them is described in search hits.
VALUE_KINDS = {"string": "string node: <pred:value>", "quantity": "number node: <pred:value> (xsd:double), <pred:unit>",
               "date": "date node: <pred:date> (xsd:date), <pred:year>", "year": "year node: <pred:year>"}
#: Facts a search hit's description names after the concepts (dates first: they tell people apart).
DESCRIPTION_FACTS = 3
_KIND_ORDER = {"date": 0, "year": 0, "string": 1, "quantity": 2}
_SPACE = re.compile(r"\s*")


def legal(name: str) -> str:
    """A key or predicate as the engine writes it in an IRI: spaces become underscores."""
    return name.replace(" ", "_")


def collapse(name: str) -> str:
    """A name with runs of white space made one space, as the engine's loader does."""
    return " ".join(name.split())


class _MemberReader:
    """``(section, id, value)`` for every member of the top-level ``concepts`` and ``entities`` objects.

    Values are decoded one at a time from a growing buffer, so a document
    larger than memory streams; a malformed document raises
    :class:`LoadError` with its line.
    """

    def __init__(self, text: IO[str], path: Path, chunk: int = 1 << 20) -> None:
        self.text, self.path, self.chunk = text, path, chunk
        self.buffer, self.position, self.line = "", 0, 1
        self.decoder = json.JSONDecoder()
        self.ended = False

    def _fill(self) -> bool:
        if self.ended:
            return False
        more = self.text.read(max(self.chunk, len(self.buffer) - self.position))
        if not more:
            self.ended = True
            return False
        self.line += self.buffer.count("\n", 0, self.position)
        self.buffer = self.buffer[self.position:] + more
        self.position = 0
        return True

    def _error(self, message: str) -> LoadError:
        line = self.line + self.buffer.count("\n", 0, self.position)
        return LoadError(f"{self.path}: line {line}: {message}")

    def _peek(self) -> str:
        while True:
            self.position = _SPACE.match(self.buffer, self.position).end()
            if self.position < len(self.buffer):
                return self.buffer[self.position]
            if not self._fill():
                return ""

    def _expect(self, char: str) -> None:
        found = self._peek()
        if found != char:
            raise self._error(f"expected {char!r}, found {found or 'the end of the file'!r}")
        self.position += 1

    def _value(self) -> Any:
        self._peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.position)
            except json.JSONDecodeError as error:
                if self._fill():
                    continue
                raise self._error(f"not valid JSON: {error.msg}") from error
            if end == len(self.buffer) and self._fill():  # a number may go on in the next chunk
                continue
            self.position = end
            return value

    def _key(self) -> str:
        key = self._value()
        if not isinstance(key, str):
            raise self._error(f"expected a name in quotes, found {key!r}")
        self._expect(":")
        return key

    def _next_member(self) -> bool:
        """Past a ``,`` to the next member; ``False`` past the closing ``}``."""
        following = self._peek()
        self.position += 1
        if following == "}":
            return False
        if following != ",":
            raise self._error(f"expected ',' or '}}', found {following or 'the end of the file'!r}")
        return True

    def members(self) -> Iterator[tuple[str, str | None, Any]]:
        """Each member, and ``(section, None, None)`` where a section ends."""
        self._expect("{")
        if self._peek() == "}":
            return
        while True:
            section = self._key()
            if section in SECTIONS:
                self._expect("{")
                if self._peek() == "}":
                    self.position += 1
                else:
                    while True:
                        key = self._key()
                        yield section, key, self._value()
                        if not self._next_member():
                            break
                yield section, None, None
            else:
                self._value()
            if not self._next_member():
                return


def read_members(text: IO[str], path: Path) -> Iterator[tuple[str, str | None, Any]]:
    """``(section, id, value)`` of each concept and entity of a ``kb.json``, streamed; ``(section, None, None)``
    where a section ends; :class:`LoadError` with the line for a malformed document."""
    return _MemberReader(text, path).members()


@dataclass
class _Graph:
    """What the mapping needs across entities: the concepts, and every key and predicate seen."""

    graph: GraphProfile
    concepts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Property ID -> kinds of value ("relation", "string", ...) and whether it qualifies facts.
    properties: dict[str, set[str]] = field(default_factory=dict)
    _iris: dict[str, str] = field(default_factory=dict)

    def node(self, local: str) -> str:
        """The N-Triples IRI of *local* resolved against the base, exactly as a query's ``<local>`` is."""
        found = self._iris.get(local)
        if found is None:
            try:
                quad = next(iter(ox.parse(f"<{local}> <{local}> <{local}> .".encode(), format=ox.RdfFormat.TURTLE,
                                          base_iri=self.graph.base)))
                found = iri(quad.subject.value)
            except SyntaxError:  # not writable in a query: kept, percent-encoded
                found = iri(self.graph.base + local)
            self._iris[local] = found
        return found

    def ancestors(self, concept_ids: list[str]) -> list[str]:
        """The concepts and all their ancestors, each once (the engine walks the same parents)."""
        seen: list[str] = []
        queue = list(concept_ids)
        while queue:
            concept = queue.pop(0)
            if concept in seen:
                continue
            seen.append(concept)
            queue.extend(self.concepts.get(concept, {}).get("instanceOf", []))
        return seen

    def property(self, name: str, kind: str) -> str:
        key = legal(name)
        self.properties.setdefault(key, set()).add(kind)
        return self.node(key)


def _number(value: Any, where: str) -> str:
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {value!r} is not a number") from None
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "INF" if number > 0 else "-INF"
    return str(value).strip() if isinstance(value, str) else repr(value)


def _date(value: str, where: str) -> tuple[int, str]:
    """(year, ``xsd:date`` text) of a release date ``yyyy/mm/dd``."""
    first, last = value.find("/"), value.rfind("/")
    try:
        year, month, day = int(value[:first]), int(value[first + 1:last]), int(value[last + 1:])
        date(year, month, day)
    except ValueError as error:
        raise ValueError(f"{where}: {value!r} is not a date yyyy/mm/dd ({error})") from error
    return year, f"{year:04d}-{month:02d}-{day:02d}"


class _Mapper:
    """One entity's triples and index facts."""

    def __init__(self, state: _Graph, entity_id: str, out: list[str]) -> None:
        self.state, self.entity_id, self.out = state, entity_id, out
        self.count = 0

    def fresh(self, kind: str) -> str:
        self.count += 1
        return iri(f"{self.state.graph.base}.well-known/genid/{quote(self.entity_id, safe='')}/{kind}{self.count}")

    def value_node(self, value: dict[str, Any], where: str) -> tuple[str, str]:
        """A value's node (its triples appended) and its type."""
        kind = value["type"]
        node = self.fresh("v")
        state = self.state
        if kind == "string":
            self.out.append(f"{node} {state.node(VALUE)} {literal(str(value['value']))} .\n")
        elif kind == "quantity":
            number = literal(_number(value["value"], where), datatype=XSD + "double")
            self.out.append(f"{node} {state.node(VALUE)} {number} .\n")
            self.out.append(f"{node} {state.node(UNIT)} {literal(str(value['unit']))} .\n")
        elif kind == "year":
            try:
                year = int(value["value"])
            except (TypeError, ValueError):
                raise ValueError(f"{where}: {value['value']!r} is not a year") from None
            self.out.append(f"{node} {state.node(YEAR)} {literal(str(year), datatype=XSD + 'integer')} .\n")
        elif kind == "date":
            year, text = _date(str(value["value"]), where)
            self.out.append(f"{node} {state.node(YEAR)} {literal(str(year), datatype=XSD + 'integer')} .\n")
            self.out.append(f"{node} {state.node(DATE)} {literal(text, datatype=XSD + 'date')} .\n")
        else:
            raise ValueError(f"{where}: unknown value type {kind!r} (string, quantity, year or date)")
        return node, kind

    def fact(self, head: str, predicate: str, tail: str, qualifiers: dict[str, list[dict[str, Any]]],
             where: str) -> None:
        state = self.state
        self.out.append(f"{head} {predicate} {tail} .\n")
        node = self.fresh("f")
        self.out.append(f"{node} {state.node(FACT_H)} {head} .\n")
        self.out.append(f"{node} {state.node(FACT_R)} {predicate} .\n")
        self.out.append(f"{node} {state.node(FACT_T)} {tail} .\n")
        for key, values in qualifiers.items():
            for value in values:
                value_node, kind = self.value_node(value, f"{where}, qualifier {key!r}")
                self.out.append(f"{node} {state.property(key, 'qualifier ' + kind)} {value_node} .\n")


def _description(state: _Graph, entity: dict[str, Any]) -> str:
    """The entity's concepts and its first key facts (dates first): what tells same-name entities apart."""
    concepts = [collapse(state.concepts[c]["name"]) for c in entity.get("instanceOf", []) if c in state.concepts]
    facts = sorted((attribute for attribute in entity.get("attributes", [])
                    if attribute.get("value", {}).get("type") in _KIND_ORDER),
                   key=lambda attribute: _KIND_ORDER[attribute["value"]["type"]])
    shown = []
    for attribute in facts[:DESCRIPTION_FACTS]:
        value = attribute["value"]
        text = _date(str(value["value"]), "")[1] if value["type"] == "date" else str(value["value"])
        if value["type"] == "quantity" and str(value.get("unit", "1")) != "1":
            text += f" {value['unit']}"
        shown.append(f"{attribute['key']} {text}")
    return "; ".join(part for part in (", ".join(concepts), "; ".join(shown)) if part)


def _entity_lines(state: _Graph, entity_id: str, entity: dict[str, Any], out: list[str], facts: list[Fact]) -> None:
    mapper = _Mapper(state, entity_id, out)
    node = state.node(entity_id)
    name = collapse(str(entity["name"]))
    out.append(f"{node} {state.node(NAME)} {literal(name)} .\n")
    facts.append((entity_id, "label", name, ""))
    for concept in state.ancestors(list(entity.get("instanceOf", []))):
        out.append(f"{node} {state.node(INSTANCE_OF)} {state.node(concept)} .\n")
    for attribute in entity.get("attributes", []):
        where = f"entity {entity_id}, attribute {attribute['key']!r}"
        value_node, kind = mapper.value_node(attribute["value"], where)
        mapper.fact(node, state.property(attribute["key"], kind), value_node, attribute.get("qualifiers", {}), where)
    for relation in entity.get("relations", []):
        where = f"entity {entity_id}, relation {relation['predicate']!r}"
        predicate = state.property(relation["predicate"], "relation")
        target = relation["object"]
        if relation["direction"] == "forward":
            mapper.fact(node, predicate, state.node(target), relation.get("qualifiers", {}), where)
        elif target in state.concepts:
            mapper.fact(state.node(target), predicate, node, relation.get("qualifiers", {}), where)
    facts.append((entity_id, "description", _description(state, entity), ""))


def _property_facts(state: _Graph) -> list[Fact]:
    facts: list[Fact] = []
    for key, kinds in sorted(state.properties.items()):
        qualifier = any(kind.startswith("qualifier ") for kind in kinds)
        plain = sorted({kind.removeprefix("qualifier ") for kind in kinds})
        described = " or ".join("entity" if kind == "relation" else VALUE_KINDS[kind] for kind in plain)
        facts.append((key, "label", key.replace("_", " "), ""))
        facts.append((key, "type", ("qualifier; " if qualifier else "") + described, ""))
    return facts


def kqapro_batches(text: IO[str], path: Path, graph: GraphProfile, size: int,
                   reopen: Callable[[], ContextManager[IO[str]]] | None = None) -> Iterator[Batch]:
    """*text* (``kb.json``) in batches of about *size* triples.

    The concepts must be known before the entities that name them; a file
    that puts them after the entities is read twice, the entities in a second
    pass through *reopen* (which gives the text again).
    """
    state = _Graph(graph)
    batch = Batch()
    concepts_read = skipped = False
    sections: set[str] = set()
    try:
        for section, key, value in read_members(text, path):
            sections.add(section)
            if section == "concepts":
                if key is None:
                    concepts_read = True
                    _concept_facts(state, batch)
                else:
                    _concept(state, key, value, batch)
            elif key is not None:
                if concepts_read:
                    _add_entity(state, key, value, batch)
                else:
                    skipped = True
            if batch.triples >= size:
                yield batch
                batch = Batch()
        if sections != set(SECTIONS):
            missing = " and no ".join(sorted(set(SECTIONS) - sections))
            raise LoadError(f"{path}: not KQA Pro's kb.json: it has no {missing}")
        if skipped:
            if reopen is None:
                raise LoadError(f"{path}: the entities come before the concepts they name")
            with reopen() as again:
                for section, key, value in read_members(again, path):
                    if section == "entities" and key is not None:
                        _add_entity(state, key, value, batch)
                        if batch.triples >= size:
                            yield batch
                            batch = Batch()
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        if isinstance(error, LoadError):
            raise
        raise LoadError(f"{path}: {error}") from error
    batch.facts.extend(_property_facts(state))
    yield batch


def _concept(state: _Graph, concept_id: str, concept: Any, batch: Batch) -> None:
    if not isinstance(concept, dict):
        raise ValueError(f"concept {concept_id}: expected an object, found {type(concept).__name__}")
    concept["name"] = collapse(str(concept["name"]))
    state.concepts[concept_id] = concept
    batch.lines.append(f"{state.node(concept_id)} {state.node(NAME)} {literal(concept['name'])} .\n")
    batch.triples += 1
    batch.facts.append((concept_id, "label", concept["name"], ""))


def _concept_facts(state: _Graph, batch: Batch) -> None:
    """Each concept described as a class, with its parents (known once every concept is read)."""
    for concept_id, concept in state.concepts.items():
        parents = [state.concepts[parent]["name"] for parent in concept.get("instanceOf", [])
                   if parent in state.concepts]
        batch.facts.append((concept_id, "description", "class" + (f" ({', '.join(parents)})" if parents else ""), ""))


def _add_entity(state: _Graph, entity_id: str, entity: Any, batch: Batch) -> None:
    if not isinstance(entity, dict):
        raise ValueError(f"entity {entity_id}: expected an object, found {type(entity).__name__}")
    before = len(batch.lines)
    try:
        _entity_lines(state, entity_id, entity, batch.lines, batch.facts)
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"entity {entity_id} is malformed: {error!r}") from error
    batch.triples += len(batch.lines) - before
