"""Read Wikidata-shaped data into RDF quads, in the query service's mapping.

Three inputs:

* query-service RDF dumps, Turtle or N-Triples, plain or gzip;
* Wikidata JSON entities (``Special:EntityData/Q42.json``, a ``wbgetentities``
  answer, or a dump with one entity a line), plain, gzip or bz2, mapped as the
  query service maps them: ``wdt:`` for best-rank statements only, ``p:`` /
  ``ps:`` / ``pq:`` statement nodes with ``wikibase:rank`` and
  ``wikibase:BestRank``, labels, descriptions, aliases, property entities;
* KGTK TSV edge files (``node1 label node2 [id]``), as KGTK users keep their
  Wikidata subsets; a file without a ``label`` column takes it from its name
  (``labels``, ``aliases``, ``descriptions``).

Every loader reads its whole file before returning, so a bad file is refused
with its name and line and nothing of it reaches the store.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PS = "http://www.wikidata.org/prop/statement/"
PQ = "http://www.wikidata.org/prop/qualifier/"
WDS = "http://www.wikidata.org/entity/statement/"
WIKIBASE = "http://wikiba.se/ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
SKOS_ALT = ox.NamedNode("http://www.w3.org/2004/02/skos/core#altLabel")
SCHEMA_DESCRIPTION = ox.NamedNode("http://schema.org/description")
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
#: A PageRank from KGTK, read by the search index as a popularity signal (the query service has none).
PAGERANK = ox.NamedNode("https://spinach-bot.invalid/ontology#pagerank")
GEO_WKT = ox.NamedNode("http://www.opengis.net/ont/geosparql#wktLiteral")
DATATYPES = {
    "wikibase-item": "WikibaseItem", "wikibase-property": "WikibaseProperty", "string": "String",
    "external-id": "ExternalId", "time": "Time", "quantity": "Quantity", "monolingualtext": "Monolingualtext",
    "url": "Url", "globe-coordinate": "GlobeCoordinate", "commonsMedia": "CommonsMedia", "math": "Math",
    "geo-shape": "GeoShape", "tabular-data": "TabularData", "wikibase-lexeme": "WikibaseLexeme",
    "wikibase-form": "WikibaseForm", "wikibase-sense": "WikibaseSense", "musical-notation": "MusicalNotation",
    "entity-schema": "EntitySchema",
}
_ENTITY_ID = re.compile(r"^[QPL][1-9][0-9]*$")


class LoadError(ValueError):
    """A file that cannot be loaded; the message names the file and, where known, the line."""


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return path.open("rb")


def _kind(path: Path) -> str:
    name = path.name.lower()
    for suffix in (".gz", ".bz2"):
        name = name.removesuffix(suffix)
    for ending, kind in ((".ttl", "turtle"), (".nt", "ntriples"), (".json", "json"), (".ndjson", "json"),
                         (".tsv", "kgtk")):
        if name.endswith(ending):
            return kind
    raise LoadError(f"{path}: unknown kind of file (expected .ttl, .nt, .json, .ndjson or .tsv, "
                    "optionally .gz or .bz2)")


def read_quads(path: Path) -> list[ox.Quad]:
    """All quads of *path*, or :class:`LoadError` naming the file and line."""
    kind = _kind(path)
    try:
        with _open(path) as stream:
            if kind in ("turtle", "ntriples"):
                format = ox.RdfFormat.TURTLE if kind == "turtle" else ox.RdfFormat.N_TRIPLES
                # lenient: real dumps carry language tags longer than BCP 47 allows, as the query service does
                return list(ox.parse(stream, format=format, lenient=True))
            text = io.TextIOWrapper(stream, encoding="utf-8")
            if kind == "json":
                return list(_json_quads(text, path))
            return list(_kgtk_quads(text, path))
    except SyntaxError as error:
        raise LoadError(f"{path}: {error}") from error
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise LoadError(f"{path}: cannot read it: {error}") from error


# -- Wikidata JSON ---------------------------------------------------------------------------

def _json_entities(text: IO[str], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    first = text.read(1)
    while first and first.isspace():
        first = text.read(1)
    rest = text.read()
    whole = first + rest
    if first == "{":
        try:
            data = json.loads(whole)
        except ValueError as error:
            raise LoadError(f"{path}: line {error.lineno}: {error.msg}") from error
        entities = data.get("entities", {"_": data} if "id" in data else {})
        for entity in entities.values():
            if "missing" not in entity:
                yield 1, entity
        return
    for number, line in enumerate(whole.splitlines(), 1):
        line = line.strip().rstrip(",")
        if line in ("", "[", "]"):
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            raise LoadError(f"{path}: line {number}: {error.msg}") from error


def _json_quads(text: IO[str], path: Path) -> Iterator[ox.Quad]:
    for number, entity in _json_entities(text, path):
        try:
            yield from entity_quads(entity)
        except (KeyError, TypeError, ValueError) as error:
            raise LoadError(f"{path}: line {number}: entity {entity.get('id', '?')} is malformed: {error!r}")


def _triple(subject: ox.NamedNode | ox.BlankNode, predicate: ox.NamedNode, value: Any) -> ox.Quad:
    return ox.Quad(subject, predicate, value, ox.DefaultGraph())


def property_quads(pid: str, datatype: str | None) -> Iterator[ox.Quad]:
    node = ox.NamedNode(WD + pid)
    yield _triple(node, RDF_TYPE, ox.NamedNode(WIKIBASE + "Property"))
    if datatype:
        yield _triple(node, ox.NamedNode(WIKIBASE + "propertyType"),
                      ox.NamedNode(WIKIBASE + DATATYPES.get(datatype, datatype)))
    for relation, namespace in (("directClaim", WDT), ("claim", P), ("statementProperty", PS),
                                ("qualifier", PQ)):
        yield _triple(node, ox.NamedNode(WIKIBASE + relation), ox.NamedNode(namespace + pid))


def snak_value(snak: dict[str, Any]) -> ox.NamedNode | ox.Literal | None:
    if snak.get("snaktype") != "value":
        return None
    value = snak["datavalue"]["value"]
    kind = snak["datavalue"]["type"]
    if kind == "wikibase-entityid":
        return ox.NamedNode(WD + (value.get("id") or f"Q{value['numeric-id']}"))
    if kind == "time":
        return ox.Literal(value["time"].lstrip("+").replace("-00-00T", "-01-01T").replace("-00T", "-01T"),
                          datatype=ox.NamedNode(XSD + "dateTime"))
    if kind == "quantity":
        return ox.Literal(value["amount"].lstrip("+"), datatype=ox.NamedNode(XSD + "decimal"))
    if kind == "monolingualtext":
        return ox.Literal(value["text"], language=value["language"])
    if kind == "globecoordinate":
        return ox.Literal(f"Point({value['longitude']} {value['latitude']})", datatype=GEO_WKT)
    if snak.get("datatype") == "url":
        return ox.NamedNode(value)
    return ox.Literal(str(value))


def entity_quads(entity: dict[str, Any]) -> Iterator[ox.Quad]:
    entity_id = entity["id"]
    node = ox.NamedNode(WD + entity_id)
    for language, label in entity.get("labels", {}).items():
        yield _triple(node, RDFS_LABEL, ox.Literal(label["value"], language=language))
    for language, description in entity.get("descriptions", {}).items():
        yield _triple(node, SCHEMA_DESCRIPTION, ox.Literal(description["value"], language=language))
    for language, aliases in entity.get("aliases", {}).items():
        for alias in aliases:
            yield _triple(node, SKOS_ALT, ox.Literal(alias["value"], language=language))
    if entity.get("type") == "property" or entity_id.startswith("P"):
        yield from property_quads(entity_id, entity.get("datatype"))
    if "sitelinks" in entity:
        yield _triple(node, ox.NamedNode(WIKIBASE + "sitelinks"),
                      ox.Literal(str(len(entity["sitelinks"])), datatype=ox.NamedNode(XSD + "integer")))
    for pid, statements in entity.get("claims", {}).items():
        ranks = {statement.get("rank", "normal") for statement in statements}
        best = "preferred" if "preferred" in ranks else "normal"
        for statement in statements:
            rank = statement.get("rank", "normal")
            statement_node = ox.NamedNode(WDS + statement.get("id", f"{entity_id}-{id(statement)}").replace("$", "-"))
            value = snak_value(statement["mainsnak"])
            yield _triple(node, ox.NamedNode(P + pid), statement_node)
            yield _triple(statement_node, ox.NamedNode(WIKIBASE + "rank"),
                          ox.NamedNode(WIKIBASE + rank.capitalize() + "Rank"))
            if rank == best:
                yield _triple(statement_node, RDF_TYPE, ox.NamedNode(WIKIBASE + "BestRank"))
            if value is not None:
                yield _triple(statement_node, ox.NamedNode(PS + pid), value)
                if rank == best:
                    yield _triple(node, ox.NamedNode(WDT + pid), value)
            for qualifiers in statement.get("qualifiers", {}).values():
                for qualifier in qualifiers:
                    qualifier_value = snak_value(qualifier)
                    if qualifier_value is not None:
                        yield _triple(statement_node, ox.NamedNode(PQ + qualifier["property"]), qualifier_value)


# -- KGTK ------------------------------------------------------------------------------------------

_NAME_LABELS = {"labels": "label", "aliases": "alias", "descriptions": "description"}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:e[+-]?[0-9]+)?)(?:\[[^\]]*\])?(Q[0-9]+)?$", re.IGNORECASE)


def _kgtk_text(value: str) -> str:
    return value.replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")


def kgtk_value(value: str) -> ox.NamedNode | ox.Literal | None:
    if value.startswith('"\'') and value.endswith('"'):  # a CSV-quoted language-tagged string
        value = value[1:-1].replace('""', '"')
    if value.startswith("'") and "'@" in value:
        text, language = value.rsplit("'@", 1)
        return ox.Literal(_kgtk_text(text[1:]), language=language)
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        return ox.Literal(_kgtk_text(value[1:-1]))
    if value.startswith("^"):
        moment = value[1:].split("/")[0].replace("-00-00T", "-01-01T").replace("-00T", "-01T")
        return ox.Literal(moment.lstrip("+"), datatype=ox.NamedNode(XSD + "dateTime"))
    if value.startswith("@"):
        latitude, longitude = value[1:].split("/")[:2]
        return ox.Literal(f"Point({longitude} {latitude})", datatype=GEO_WKT)
    if _ENTITY_ID.match(value):
        return ox.NamedNode(WD + value)
    quantity = _QUANTITY.match(value)
    if quantity:
        return ox.Literal(quantity.group(1).lstrip("+"), datatype=ox.NamedNode(XSD + "decimal"))
    return None


def _kgtk_quads(text: IO[str], path: Path) -> Iterator[ox.Quad]:
    lines = iter(text)
    header = next(lines, "").rstrip("\n").split("\t")
    if "node1" not in header or "node2" not in header:
        raise LoadError(f"{path}: line 1: a KGTK file needs node1 and node2 columns, found {header}")
    node1, node2 = header.index("node1"), header.index("node2")
    label_column = header.index("label") if "label" in header else None
    implied = next((label for name, label in _NAME_LABELS.items() if name in path.name), None)
    if label_column is None and implied is None:
        raise LoadError(f"{path}: line 1: no label column, and the file name does not say what its edges are")
    seen_properties: set[str] = set()
    needed = max(node1, node2, label_column or 0) + 1  # an id column may be left empty
    for number, line in enumerate(lines, 2):
        fields = line.rstrip("\n").split("\t")
        if len(fields) < needed:
            if not line.strip():
                continue
            raise LoadError(f"{path}: line {number}: {len(fields)} columns, node1, label and node2 need {needed}")
        subject, label, value = fields[node1], fields[label_column] if label_column is not None else implied, \
            fields[node2]
        if _ENTITY_ID.match(subject):
            node = ox.NamedNode(WD + subject)
        elif re.match(r"^[QP][0-9]+-", subject):  # a claim id: qualifiers go on its statement node
            node = ox.NamedNode(WDS + subject)
        else:
            continue
        if label == "datatype":
            yield from property_quads(subject, value)
            continue
        if label in ("label", "alias", "description"):
            term = kgtk_value(value)
            if not isinstance(term, ox.Literal):
                raise LoadError(f"{path}: line {number}: {value!r} is not a text value")
            predicate = {"label": RDFS_LABEL, "alias": SKOS_ALT, "description": SCHEMA_DESCRIPTION}[label]
            yield _triple(node, predicate, term)
            continue
        if label == "Pdirected_pagerank":
            yield _triple(node, PAGERANK, ox.Literal(value, datatype=ox.NamedNode(XSD + "double")))
            continue
        if not _ENTITY_ID.match(label):
            continue
        term = kgtk_value(value)
        if term is None:
            raise LoadError(f"{path}: line {number}: cannot read the value {value!r}")
        if node.value.startswith(WDS):
            yield _triple(node, ox.NamedNode(PQ + label), term)
            continue
        yield _triple(node, ox.NamedNode(WDT + label), term)
        claim_id = fields[header.index("id")] if "id" in header and len(fields) > header.index("id") \
            and fields[header.index("id")] else f"{subject}-{label}-{number}"
        statement = ox.NamedNode(WDS + claim_id)
        yield _triple(node, ox.NamedNode(P + label), statement)
        yield _triple(statement, ox.NamedNode(PS + label), term)
        yield _triple(statement, ox.NamedNode(WIKIBASE + "rank"), ox.NamedNode(WIKIBASE + "NormalRank"))
        yield _triple(statement, RDF_TYPE, ox.NamedNode(WIKIBASE + "BestRank"))
        if label not in seen_properties:
            seen_properties.add(label)
            yield from property_quads(label, None)
