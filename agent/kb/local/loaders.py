"""Read Wikidata-shaped files (or another graph's) in bounded batches, in the query service's RDF mapping.

Three Wikidata inputs, each plain, gzip or bz2:

* query-service RDF dumps, Turtle or N-Triples: read as they are;
* Wikidata JSON entities (``Special:EntityData/Q42.json``, a ``wbgetentities``
  answer, a dump with one entity a line, or ``.ndjson``), mapped as the
  query service maps them: ``wdt:`` for best-rank statements, ``p:`` /
  ``ps:`` / ``pq:`` statement nodes with ``wikibase:rank`` and
  ``wikibase:BestRank``, value nodes (``psv:``/``pqv:`` with
  ``wikibase:timeValue``/``timePrecision``, ``quantityAmount``/``quantityUnit``
  and bounds, ``geoLatitude``/``geoGlobe``), ``wdno:`` for no value, a
  ``.well-known/genid`` IRI for unknown values, sitelinks as ``schema:about``
  articles with ``schema:isPartOf``, Commons media as ``Special:FilePath`` IRIs;
* KGTK TSV edge files (``node1 label node2 [id] [rank] [node2;wikidatatype]``),
  as KGTK users keep their Wikidata subsets; a file without a ``label`` column
  takes it from its name (``labels``, ``aliases``, ``descriptions``).  A
  ``rank`` column is honoured; without one every claim counts as best rank,
  so ``wdt:`` then returns every value, historical ones included.

:func:`read_batches` yields what the store and the search index need, a
batch at a time, so memory does not grow with the file: N-Triples lines for
mapped formats (RDF files go to the store as they are), the facts the
search index reads, the entities the file holds whole (a later load of such
an entity replaces its terms and statements) and the (entity, property)
pairs that have a preferred statement.  A bad file raises
:class:`LoadError` with its name and line.

A store of another graph (a profile, :mod:`agent.graph`) takes RDF files
as they are, its index reading the labels (of every label predicate) and
descriptions the profile names and every property the graph uses; KQA Pro's ``kb.json`` is mapped by
:mod:`agent.kb.local.kqapro`.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pyoxigraph as ox

from agent.graph import ENTITY_ID, ITEM_ID, PAGE_ID_RE, WIKIDATA, GraphProfile, unescape_local
from agent.kb.dialect import PREFIXES
from agent.kb.local.batches import Batch, Fact, LoadError, iri, literal
from agent.kb.local.kqapro import kqapro_batches

WD, WDT, P, PS, PQ, WDS, WDV, WDNO = (PREFIXES[name] for name in ("wd", "wdt", "p", "ps", "pq", "wds", "wdv", "wdno"))
PSV, PQV, WIKIBASE, XSD, SCHEMA = (PREFIXES[name] for name in ("psv", "pqv", "wikibase", "xsd", "schema"))
WDATA = PREFIXES["wdata"]
RDFS_LABEL = PREFIXES["rdfs"] + "label"
SKOS_ALT = PREFIXES["skos"] + "altLabel"
SCHEMA_DESCRIPTION = SCHEMA + "description"
SCHEMA_ABOUT = SCHEMA + "about"
RDF_TYPE = PREFIXES["rdf"] + "type"
#: A PageRank from KGTK, read by the search index as a popularity signal (the query service has none).
PAGERANK = "https://spinach-bot.invalid/ontology#pagerank"
GEO_WKT = PREFIXES["geo"] + "wktLiteral"
#: Unknown values ("somevalue"), as the query service has named them since 2022.
GENID = "http://www.wikidata.org/.well-known/genid/"
COMMONS_FILE = "http://commons.wikimedia.org/wiki/Special:FilePath/"
COMMONS_DATA = "http://commons.wikimedia.org/data/main/"
GREGORIAN = WD + "Q1985727"
EARTH = WD + "Q2"
DATATYPES = {
    "wikibase-item": "WikibaseItem", "wikibase-property": "WikibaseProperty", "string": "String",
    "external-id": "ExternalId", "time": "Time", "quantity": "Quantity", "monolingualtext": "Monolingualtext",
    "url": "Url", "globe-coordinate": "GlobeCoordinate", "commonsMedia": "CommonsMedia", "math": "Math",
    "geo-shape": "GeoShape", "tabular-data": "TabularData", "wikibase-lexeme": "WikibaseLexeme",
    "wikibase-form": "WikibaseForm", "wikibase-sense": "WikibaseSense", "musical-notation": "MusicalNotation",
    "entity-schema": "EntitySchema",
}
#: What the search index reads, by predicate IRI.
FACT_PREDICATES = {RDFS_LABEL: "label", SCHEMA_DESCRIPTION: "description", SKOS_ALT: "alias",
                   WIKIBASE + "propertyType": "type", WIKIBASE + "sitelinks": "sitelinks", PAGERANK: "pagerank"}
BATCH_TRIPLES = 50_000
#: Sites whose host is not ``<language>.<family>.org``.
_SPECIAL_SITES = {"commonswiki": "commons.wikimedia.org", "wikidatawiki": "www.wikidata.org",
                  "specieswiki": "species.wikimedia.org", "metawiki": "meta.wikimedia.org",
                  "mediawikiwiki": "www.mediawiki.org", "sourceswiki": "wikisource.org",
                  "wikimaniawiki": "wikimania.wikimedia.org", "outreachwiki": "outreach.wikimedia.org",
                  "incubatorwiki": "incubator.wikimedia.org", "wikifunctionswiki": "www.wikifunctions.org"}
_FAMILIES = (("wikiquote", "wikiquote"), ("wikisource", "wikisource"), ("wikivoyage", "wikivoyage"),
             ("wikinews", "wikinews"), ("wikibooks", "wikibooks"), ("wikiversity", "wikiversity"),
             ("wiktionary", "wiktionary"), ("wiki", "wikipedia"))


def open_file(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return path.open("rb")


def file_kind(path: Path) -> str:
    """``turtle``, ``ntriples``, ``json`` or ``kgtk``, from the name; :class:`LoadError` otherwise."""
    name = path.name.lower()
    for suffix in (".gz", ".bz2"):
        name = name.removesuffix(suffix)
    for ending, kind in ((".ttl", "turtle"), (".nt", "ntriples"), (".json", "json"), (".ndjson", "json"),
                         (".jsonl", "json"), (".tsv", "kgtk")):
        if name.endswith(ending):
            return kind
    raise LoadError(f"{path}: unknown kind of file (expected .ttl, .nt, .json, .ndjson or .tsv, "
                    "optionally .gz or .bz2)")


RDF_FORMATS = {"turtle": ox.RdfFormat.TURTLE, "ntriples": ox.RdfFormat.N_TRIPLES}
#: The longest ``FILE.graph`` read: it holds one IRI.
GRAPH_NAME_BYTES = 4096


def named_graph(path: Path) -> ox.NamedNode | None:
    """The named graph an RDF file goes to: the IRI in ``FILE.graph`` beside it (the convention of Virtuoso's
    bulk loader, which CK25 ships with), or ``None`` for the default graph."""
    name_file = path.with_name(path.name + ".graph")
    if not name_file.is_file():
        return None
    with name_file.open("rb") as stream:
        text = stream.read(GRAPH_NAME_BYTES + 1)
    try:
        name = text.decode("utf-8").strip()
        if len(text) > GRAPH_NAME_BYTES or not name or any(c in name for c in ' <>"{}|^`\\\n'):
            raise ValueError(f"not one IRI: {name[:80]!r}")
        return ox.NamedNode(name)
    except ValueError as error:
        raise LoadError(f"{name_file}: the name of the graph {path.name} goes to must be one IRI ({error})") from error


def _decompressed(path: Path, raw: IO[bytes]) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if path.suffix == ".bz2":
        return bz2.BZ2File(raw, "rb")
    return raw


def read_batches(path: Path, size: int = BATCH_TRIPLES, graph: GraphProfile = WIKIDATA,
                 progress: Callable[[int], None] | None = None) -> Iterator[Batch]:
    """*path* in batches of about *size* triples, or :class:`LoadError` naming the file and line.

    *graph* says what the file holds: Wikidata (RDF, JSON, KGTK), or another
    graph's RDF whose labels its profile names, or KQA Pro's ``kb.json``.
    *progress* hears how many bytes of the file are read after each batch.
    """
    kind = file_kind(path)
    wikibase = graph.entries.model == "wikibase"
    if not wikibase and kind == "kgtk" or kind == "json" and not wikibase and graph.json_format == "wikidata":
        raise LoadError(f"{path}: Wikidata {'KGTK' if kind == 'kgtk' else 'JSON'} loads into a Wikidata store, "
                        f"not into one of the graph {graph.name!r}")
    try:
        with path.open("rb") as raw, _decompressed(path, raw) as stream:
            if kind in RDF_FORMATS:
                facts = _wikidata_facts if wikibase else _profile_facts(graph)
                source = _rdf_batches(stream, RDF_FORMATS[kind], size, facts)
            else:
                text = io.TextIOWrapper(stream, encoding="utf-8")
                if kind == "json" and graph.json_format == "kqapro":
                    source = kqapro_batches(text, path, graph, size,
                                            reopen=lambda: io.TextIOWrapper(open_file(path), encoding="utf-8"))
                elif kind == "json":
                    source = _json_batches(text, path, size)
                else:
                    source = _kgtk_batches(text, path, size)
            for batch in source:
                if progress is not None:
                    progress(raw.tell())
                yield batch
    except SyntaxError as error:
        raise LoadError(f"{path}: {error}") from error
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise LoadError(f"{path}: cannot read it: {error}") from error


# -- N-Triples text --------------------------------------------------------------------------------

def _typed(value: str, name: str) -> str:
    return literal(value, datatype=XSD + name)


# -- query-service RDF -----------------------------------------------------------------------------

FactReader = Callable[[ox.Quad, Batch], None]


def _wikidata_facts(quad: ox.Quad, batch: Batch) -> None:
    """The search index's facts of a query-service triple, and the entities a dump holds whole."""
    predicate = quad.predicate.value
    kind = FACT_PREDICATES.get(predicate)
    subject = quad.subject
    if kind is not None and isinstance(subject, ox.NamedNode) and subject.value.startswith(WD):
        value = quad.object
        batch.facts.append((subject.value[len(WD):], kind, value.value, getattr(value, "language", None) or ""))
    elif predicate == SCHEMA_ABOUT and isinstance(subject, ox.NamedNode) and subject.value.startswith(WDATA):
        batch.whole.append(quad.object.value)


def humanised(local: str) -> str:
    """A name made of an IRI's local part, for terms without a label: ``birthPlace`` is "birth place"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", local.replace("_", " "))
    return " ".join(word if word.isupper() else word.lower() for word in spaced.split())


def _profile_facts(graph: GraphProfile) -> FactReader:
    """The index's facts of another graph's triple: its labels (the first label predicate's; the others' as
    other names) and descriptions, and every property and class it uses (named after their local part, so a
    graph without labels for its vocabulary is searched too)."""
    kinds = {predicate: "alias" for predicate in graph.names.labels[1:]}
    kinds.update({graph.names.label: "label", graph.names.description: "description"})
    kinds.pop("", None)
    type_predicate = graph.names.type or RDF_TYPE
    named: set[str] = set()

    def name(graph_id: str, iri: str, batch: Batch) -> None:
        if graph_id not in named:
            named.add(graph_id)
            batch.facts.append((graph_id, "name", humanised(unescape_local(re.split(r"[/#:]", iri)[-1])), ""))

    def read(quad: ox.Quad, batch: Batch) -> None:
        kind = kinds.get(quad.predicate.value)
        if kind is not None and isinstance(quad.subject, ox.NamedNode) and isinstance(quad.object, ox.Literal):
            graph_id = graph.id_of(quad.subject.value)
            if graph_id is not None:
                batch.facts.append((graph_id, kind, quad.object.value, quad.object.language or ""))
        property_id = graph.id_of(quad.predicate.value, "property")
        if property_id is not None:
            name(property_id, quad.predicate.value, batch)
        if quad.predicate.value == type_predicate and isinstance(quad.object, ox.NamedNode):
            typed = graph.id_of(quad.subject.value) if isinstance(quad.subject, ox.NamedNode) else None
            if typed is not None:  # describes a hit without a description: same-name things told apart
                batch.facts.append((typed, "class", humanised(re.split(r"[/#:]", quad.object.value)[-1]), ""))
            class_id = graph.id_of(quad.object.value, "item") if graph.ids.classes else None
            if class_id is not None:
                name(class_id, quad.object.value, batch)

    return read


def _rdf_batches(stream: IO[bytes], format: ox.RdfFormat, size: int, facts: FactReader) -> Iterator[Batch]:
    """Validate and read the index's facts; the store takes the file itself (lenient: real dumps carry
    language tags longer than BCP 47 allows, as the query service does)."""
    batch = Batch()
    for quad in ox.parse(stream, format=format, lenient=True):
        batch.triples += 1
        facts(quad, batch)
        if batch.triples >= size:
            yield batch
            batch = Batch()
    yield batch


# -- Wikidata JSON ---------------------------------------------------------------------------------

def _json_entities(text: IO[str], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, entity) pairs: one JSON document (an entity or ``{"entities": ...}``) or one entity a line."""
    first_line = text.readline()
    stripped = first_line.strip()
    if stripped.startswith("{") and not _is_json(stripped):  # one document over several lines: small by nature
        whole = first_line + text.read()
        try:
            data = json.loads(whole)
        except ValueError as error:
            raise LoadError(f"{path}: line {error.lineno}: {error.msg}") from error
        entities = data.get("entities", {"_": data} if "id" in data else {})
        for entity in entities.values():
            if "missing" not in entity:
                yield 1, entity
        return
    number = 0
    for line in _chain(first_line, text):
        number += 1
        line = line.strip().rstrip(",")
        if line in ("", "[", "]"):
            continue
        try:
            data = json.loads(line)
        except ValueError as error:
            raise LoadError(f"{path}: line {number}: {error.msg}") from error
        if isinstance(data, dict) and "entities" in data:
            for entity in data["entities"].values():
                if "missing" not in entity:
                    yield number, entity
        else:
            yield number, data


def _is_json(line: str) -> bool:
    try:
        json.loads(line.rstrip(","))
    except ValueError:
        return False
    return True


def _chain(first: str, rest: IO[str]) -> Iterator[str]:
    yield first
    yield from rest


def _json_batches(text: IO[str], path: Path, size: int) -> Iterator[Batch]:
    batch = Batch()
    for number, entity in _json_entities(text, path):
        try:
            entity_id = entity["id"]
            lines = batch.lines
            before = len(lines)
            entity_lines(entity, lines, batch.facts)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            entity_id = entity.get("id", "?") if isinstance(entity, dict) else "?"
            raise LoadError(f"{path}: line {number}: entity {entity_id} is malformed: {error!r}") from error
        batch.whole.append(WD + entity_id)
        batch.triples += len(lines) - before
        if batch.triples >= size:
            yield batch
            batch = Batch()
    yield batch


def property_lines(pid: str, datatype: str | None, out: list[str], facts: list[Fact]) -> None:
    node = iri(WD + pid)
    out.append(f"{node} <{RDF_TYPE}> <{WIKIBASE}Property> .\n")
    if datatype:
        term = WIKIBASE + DATATYPES.get(datatype, datatype)
        out.append(f"{node} <{WIKIBASE}propertyType> {iri(term)} .\n")
        facts.append((pid, "type", term, ""))
    for relation, namespace in (("directClaim", WDT), ("claim", P), ("statementProperty", PS),
                                ("qualifier", PQ), ("statementValue", PSV), ("qualifierValue", PQV),
                                ("novalue", WDNO)):
        out.append(f"{node} <{WIKIBASE}{relation}> <{namespace}{pid}> .\n")


def _hash(*parts: object) -> str:
    return hashlib.md5("|".join(map(str, parts)).encode()).hexdigest()


def _time_text(time: str) -> str:
    return time.lstrip("+").replace("-00-00T", "-01-01T").replace("-00T", "-01T")


def _value_node(kind: str, value: dict[str, Any], out: list[str]) -> str | None:
    """The ``wdv:`` node of a time, quantity or coordinate, its triples appended to *out*."""
    if kind == "time":
        node = f"<{WDV}{_hash('time', value['time'], value.get('precision'), value.get('calendarmodel'))}>"
        out.append(f"{node} <{RDF_TYPE}> <{WIKIBASE}TimeValue> .\n")
        out.append(f"{node} <{WIKIBASE}timeValue> {_typed(_time_text(value['time']), 'dateTime')} .\n")
        out.append(f"{node} <{WIKIBASE}timePrecision> {_typed(str(value.get('precision', 11)), 'integer')} .\n")
        out.append(f"{node} <{WIKIBASE}timeTimezone> {_typed(str(value.get('timezone', 0)), 'integer')} .\n")
        out.append(f"{node} <{WIKIBASE}timeCalendarModel> {iri(value.get('calendarmodel') or GREGORIAN)} .\n")
        return node
    if kind == "quantity":
        unit = value.get("unit", "1")
        node = f"<{WDV}{_hash('quantity', value['amount'], unit, value.get('upperBound'), value.get('lowerBound'))}>"
        out.append(f"{node} <{RDF_TYPE}> <{WIKIBASE}QuantityValue> .\n")
        out.append(f"{node} <{WIKIBASE}quantityAmount> {_typed(value['amount'].lstrip('+'), 'decimal')} .\n")
        out.append(f"{node} <{WIKIBASE}quantityUnit> {iri(WD + 'Q199' if unit == '1' else unit)} .\n")
        for bound, name in (("upperBound", "quantityUpperBound"), ("lowerBound", "quantityLowerBound")):
            if value.get(bound) is not None:
                out.append(f"{node} <{WIKIBASE}{name}> {_typed(str(value[bound]).lstrip('+'), 'decimal')} .\n")
        return node
    if kind == "globecoordinate":
        globe = value.get("globe") or EARTH
        node = f"<{WDV}{_hash('globe', value['latitude'], value['longitude'], value.get('precision'), globe)}>"
        out.append(f"{node} <{RDF_TYPE}> <{WIKIBASE}GlobecoordinateValue> .\n")
        out.append(f"{node} <{WIKIBASE}geoLatitude> {_typed(str(value['latitude']), 'double')} .\n")
        out.append(f"{node} <{WIKIBASE}geoLongitude> {_typed(str(value['longitude']), 'double')} .\n")
        if value.get("precision") is not None:
            out.append(f"{node} <{WIKIBASE}geoPrecision> {_typed(str(value['precision']), 'double')} .\n")
        out.append(f"{node} <{WIKIBASE}geoGlobe> {iri(globe)} .\n")
        return node
    return None


def snak_term(snak: dict[str, Any]) -> str | None:
    """A value snak's simple value in N-Triples; ``None`` for no value, a genid IRI for an unknown value."""
    snaktype = snak.get("snaktype")
    if snaktype == "somevalue":
        return f"<{GENID}{_hash(snak.get('hash') or id(snak), snak.get('property'))}>"
    if snaktype != "value":
        return None
    value = snak["datavalue"]["value"]
    kind = snak["datavalue"]["type"]
    datatype = snak.get("datatype")
    if kind == "wikibase-entityid":
        return iri(WD + (value.get("id") or f"Q{value['numeric-id']}"))
    if kind == "time":
        return _typed(_time_text(value["time"]), "dateTime")
    if kind == "quantity":
        return _typed(value["amount"].lstrip("+"), "decimal")
    if kind == "monolingualtext":
        return literal(value["text"], language=value["language"])
    if kind == "globecoordinate":
        point = f"Point({value['longitude']} {value['latitude']})"
        globe = value.get("globe") or EARTH
        return literal(point if globe == EARTH else f"<{globe}> {point}", datatype=GEO_WKT)
    if datatype == "url":
        return iri(value)
    if datatype == "commonsMedia":
        return iri(COMMONS_FILE + quote(value, safe=""))
    if datatype in ("geo-shape", "tabular-data"):
        return iri(COMMONS_DATA + quote(value.replace(" ", "_"), safe="!$&'()*+,;=:@/~"))
    return literal(str(value))


def _site_host(site: str) -> tuple[str, str, str] | None:
    """(host, language, group) of a sitelink's site id, e.g. ``enwiki`` -> ``en.wikipedia.org``."""
    if site in _SPECIAL_SITES:
        host = _SPECIAL_SITES[site]
        return host, "en", "commons" if site == "commonswiki" else site.removesuffix("wiki")
    for suffix, family in _FAMILIES:
        if site.endswith(suffix) and len(site) > len(suffix):
            language = site[:-len(suffix)].replace("_", "-")
            return f"{language}.{family}.org", language, family
    return None


def _sitelink_lines(node: str, entity_id: str, sitelinks: dict[str, Any], out: list[str]) -> None:
    for site, link in sitelinks.items():
        found = _site_host(site)
        if found is None:
            continue
        host, language, group = found
        title = link["title"]
        article = link.get("url") or f"https://{host}/wiki/{quote(title.replace(' ', '_'), safe=':/@!$&()*+,;=~-._')}"
        article = iri(article)
        out.append(f"{article} <{RDF_TYPE}> <{SCHEMA}Article> .\n")
        out.append(f"{article} <{SCHEMA_ABOUT}> {node} .\n")
        out.append(f"{article} <{SCHEMA}inLanguage> {literal(language)} .\n")
        out.append(f"{article} <{SCHEMA}isPartOf> <https://{host}/> .\n")
        out.append(f"{article} <{SCHEMA}name> {literal(title, language=language)} .\n")
        out.append(f"<https://{host}/> <{WIKIBASE}wikiGroup> {literal(group)} .\n")
        for badge in link.get("badges", []):
            out.append(f"{article} <{WIKIBASE}badge> {iri(WD + badge)} .\n")


def _snak_lines(subject: str, pid: str, snak: dict[str, Any], simple: str, value_ns: str, out: list[str]) -> None:
    """The simple value, the value node, or the ``wdno:`` class of one snak on *subject*."""
    term = snak_term(snak)
    if term is None:
        if snak.get("snaktype") == "novalue":
            out.append(f"{subject} <{RDF_TYPE}> <{WDNO}{pid}> .\n")
        return
    out.append(f"{subject} <{simple}{pid}> {term} .\n")
    datavalue = snak.get("datavalue")
    if datavalue:
        node = _value_node(datavalue["type"], datavalue["value"], out)
        if node is not None:
            out.append(f"{subject} <{value_ns}{pid}> {node} .\n")


def entity_lines(entity: dict[str, Any], out: list[str], facts: list[Fact]) -> None:
    """One Wikidata JSON entity as the query service's triples (appended to *out*) and index facts."""
    entity_id = entity["id"]
    node = iri(WD + entity_id)
    for language, label in entity.get("labels", {}).items():
        out.append(f"{node} <{RDFS_LABEL}> {literal(label['value'], language=language)} .\n")
        facts.append((entity_id, "label", label["value"], language))
    for language, description in entity.get("descriptions", {}).items():
        out.append(f"{node} <{SCHEMA_DESCRIPTION}> {literal(description['value'], language=language)} .\n")
        facts.append((entity_id, "description", description["value"], language))
    for language, aliases in entity.get("aliases", {}).items():
        for alias in aliases:
            out.append(f"{node} <{SKOS_ALT}> {literal(alias['value'], language=language)} .\n")
            facts.append((entity_id, "alias", alias["value"], language))
    if entity.get("type") == "property" or entity_id.startswith("P"):
        property_lines(entity_id, entity.get("datatype"), out, facts)
    else:
        out.append(f"{node} <{RDF_TYPE}> <{WIKIBASE}Item> .\n")
    if "sitelinks" in entity:
        count = str(len(entity["sitelinks"]))
        out.append(f"{node} <{WIKIBASE}sitelinks> {_typed(count, 'integer')} .\n")
        facts.append((entity_id, "sitelinks", count, ""))
        _sitelink_lines(node, entity_id, entity["sitelinks"], out)
    for pid, statements in entity.get("claims", {}).items():
        ranks = {statement.get("rank", "normal") for statement in statements}
        best = "preferred" if "preferred" in ranks else "normal"
        for statement in statements:
            rank = statement.get("rank", "normal")
            statement_id = statement.get("id") or f"{entity_id}-{_hash(json.dumps(statement, sort_keys=True))}"
            statement_node = iri(WDS + statement_id.replace("$", "-"))
            out.append(f"{node} <{P}{pid}> {statement_node} .\n")
            out.append(f"{statement_node} <{RDF_TYPE}> <{WIKIBASE}Statement> .\n")
            out.append(f"{statement_node} <{WIKIBASE}rank> <{WIKIBASE}{rank.capitalize()}Rank> .\n")
            mainsnak = statement["mainsnak"]
            _snak_lines(statement_node, pid, mainsnak, PS, PSV, out)
            if rank == best:
                out.append(f"{statement_node} <{RDF_TYPE}> <{WIKIBASE}BestRank> .\n")
                term = snak_term(mainsnak)
                if term is not None:
                    out.append(f"{node} <{WDT}{pid}> {term} .\n")
                elif mainsnak.get("snaktype") == "novalue":
                    out.append(f"{node} <{RDF_TYPE}> <{WDNO}{pid}> .\n")
            for qualifiers in statement.get("qualifiers", {}).values():
                for qualifier in qualifiers:
                    _snak_lines(statement_node, qualifier["property"], qualifier, PQ, PQV, out)


# -- KGTK ------------------------------------------------------------------------------------------

_NAME_LABELS = {"labels": "label", "aliases": "alias", "descriptions": "description"}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:e[+-]?[0-9]+)?)(?:\[([^,\]]*),([^\]]*)\])?(" + ITEM_ID + ")?$",
                       re.IGNORECASE)
_RANKS = {"normal": "Normal", "preferred": "Preferred", "deprecated": "Deprecated"}


def _kgtk_text(value: str) -> str:
    return value.replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")


def kgtk_text(value: str) -> tuple[str, str] | None:
    """(text, language) of a KGTK string or language-tagged string; ``None`` for other values."""
    if value.startswith('"\'') and value.endswith('"'):  # a CSV-quoted language-tagged string
        value = value[1:-1].replace('""', '"')
    if value.startswith("'") and "'@" in value:
        text, language = value.rsplit("'@", 1)
        return _kgtk_text(text[1:]), language
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        return _kgtk_text(value[1:-1]), ""
    return None


def kgtk_value(value: str, datatype: str, out: list[str]) -> tuple[str, str | None] | None:
    """(simple value, value node or None) of a KGTK node2 in N-Triples; value nodes' triples go to *out*."""
    text = kgtk_text(value)
    if text is not None:
        if datatype == "commonsMedia":
            return snak_term({"snaktype": "value", "datatype": datatype,
                              "datavalue": {"type": "string", "value": text[0]}}), None
        if datatype == "url":
            return iri(text[0]), None
        return literal(text[0], language=text[1] or None), None
    if value.startswith("^"):
        moment, _, precision = value[1:].partition("/")
        node = _value_node("time", {"time": moment, "precision": int(precision or 11)}, out)
        return _typed(_time_text(moment), "dateTime"), node
    if value.startswith("@"):
        latitude, longitude = value[1:].split("/")[:2]
        node = _value_node("globecoordinate", {"latitude": latitude, "longitude": longitude}, out)
        return literal(f"Point({longitude} {latitude})", datatype=GEO_WKT), node
    if PAGE_ID_RE.fullmatch(value):
        return iri(WD + value), None
    quantity = _QUANTITY.match(value)
    if quantity:
        amount, low, high, unit = quantity.groups()
        node = _value_node("quantity", {"amount": amount, "lowerBound": low, "upperBound": high,
                                        "unit": WD + unit if unit else "1"}, out)
        return _typed(amount.lstrip("+"), "decimal"), node
    return None


def _kgtk_batches(text: IO[str], path: Path, size: int) -> Iterator[Batch]:
    lines = iter(text)
    header = next(lines, "").rstrip("\n").split("\t")
    if "node1" not in header or "node2" not in header:
        raise LoadError(f"{path}: line 1: a KGTK file needs node1 and node2 columns, found {header}")
    node1, node2 = header.index("node1"), header.index("node2")
    label_column = header.index("label") if "label" in header else None
    id_column = header.index("id") if "id" in header else None
    rank_column = header.index("rank") if "rank" in header else None
    type_column = header.index("node2;wikidatatype") if "node2;wikidatatype" in header else None
    implied = next((label for name, label in _NAME_LABELS.items() if name in path.name), None)
    if label_column is None and implied is None:
        raise LoadError(f"{path}: line 1: no label column, and the file name does not say what its edges are")
    seen_properties: set[str] = set()
    needed = max(node1, node2, label_column or 0) + 1  # id, rank and type columns may be left empty
    batch = Batch()
    for number, line in enumerate(lines, 2):
        fields = line.rstrip("\n").split("\t")
        if len(fields) < needed:
            if not line.strip():
                continue
            raise LoadError(f"{path}: line {number}: {len(fields)} columns, node1, label and node2 need {needed}")
        subject, value = fields[node1], fields[node2]
        label = fields[label_column] if label_column is not None else implied
        out = batch.lines
        before = len(out)
        _kgtk_row(path, number, subject, label, value, fields, (id_column, rank_column, type_column),
                  seen_properties, batch)
        batch.triples += len(out) - before
        if batch.triples >= size:
            yield batch
            batch = Batch()
    yield batch


def _column(fields: list[str], column: int | None) -> str:
    return fields[column] if column is not None and column < len(fields) else ""


def _kgtk_row(path: Path, number: int, subject: str, label: str, value: str, fields: list[str],
              columns: tuple[int | None, int | None, int | None], seen_properties: set[str], batch: Batch) -> None:
    id_column, rank_column, type_column = columns
    out = batch.lines
    if PAGE_ID_RE.fullmatch(subject):
        node = iri(WD + subject)
        on_statement = False
    elif re.match(ENTITY_ID + "-", subject):  # a claim id: qualifiers go on its statement node
        node = iri(WDS + subject)
        on_statement = True
    else:
        return
    if label == "datatype":
        property_lines(subject, value, out, batch.facts)
        return
    if label in ("label", "alias", "description"):
        text = kgtk_text(value)
        if text is None:
            raise LoadError(f"{path}: line {number}: {value!r} is not a text value")
        predicate = {"label": RDFS_LABEL, "alias": SKOS_ALT, "description": SCHEMA_DESCRIPTION}[label]
        out.append(f"{node} <{predicate}> {literal(text[0], language=text[1] or None)} .\n")
        batch.facts.append((subject, label, text[0], text[1]))
        return
    if label == "Pdirected_pagerank":
        out.append(f"{node} <{PAGERANK}> {_typed(value, 'double')} .\n")
        batch.facts.append((subject, "pagerank", value, ""))
        return
    if not PAGE_ID_RE.fullmatch(label):
        return
    term = kgtk_value(value, _column(fields, type_column), out)
    if term is None:
        raise LoadError(f"{path}: line {number}: cannot read the value {value!r}")
    simple, value_node = term
    if on_statement:
        out.append(f"{node} <{PQ}{label}> {simple} .\n")
        if value_node:
            out.append(f"{node} <{PQV}{label}> {value_node} .\n")
        return
    rank_text = _column(fields, rank_column).strip().lower() or "normal"
    rank = _RANKS.get(rank_text)
    if rank is None:
        raise LoadError(f"{path}: line {number}: unknown rank {rank_text!r} (normal, preferred or deprecated)")
    statement = iri(WDS + (_column(fields, id_column) or f"{subject}-{label}-{_hash(path.name, number)}"))
    out.append(f"{node} <{P}{label}> {statement} .\n")
    out.append(f"{statement} <{PS}{label}> {simple} .\n")
    if value_node:
        out.append(f"{statement} <{PSV}{label}> {value_node} .\n")
    out.append(f"{statement} <{WIKIBASE}rank> <{WIKIBASE}{rank}Rank> .\n")
    if rank != "Deprecated":  # a preferred statement later takes best rank from the normal ones (see LocalKB)
        out.append(f"{statement} <{RDF_TYPE}> <{WIKIBASE}BestRank> .\n")
        out.append(f"{node} <{WDT}{label}> {simple} .\n")
    if rank == "Preferred":
        batch.preferred.append((WD + subject, label))
    if rank_column is None:
        batch.unranked += 1
    if label not in seen_properties:
        seen_properties.add(label)
        property_lines(label, None, out, batch.facts)
