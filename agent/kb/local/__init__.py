"""A knowledge base in a local Oxigraph store: no network, the live backend's interface.

>>> from agent.kb.local import LocalKB
>>> kb = LocalKB("stores/wikidata")                       # opens, or creates, the store   # doctest: +SKIP
>>> kb.load(["Q42.ttl", "entities.json.bz2"])            # Turtle, N-Triples, JSON, KGTK  # doctest: +SKIP
>>> kb.search("Douglas Adams").items[0].id                                                # doctest: +SKIP
'Q42'

A store holds one graph, Wikidata unless a profile (:mod:`agent.graph`) says
otherwise: ``LocalKB("stores/kqapro", graph=load_graph("kqapro"))`` loads KQA
Pro's ``kb.json``, searches its names and shows its entries as triples.  The
profile is kept in the store (``graph.toml``), so the store opens as what it
holds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pyoxigraph as ox
from tqdm import tqdm

from agent.graph import WIKIDATA, GraphProfile, parse_profile
from agent.kb.base import (Claim, CrossCheck, DataDate, Engine, Entry, PropertyExample, Qualifier, QueryResult,
                           SearchHit, SearchResults, Value)
from agent.kb.engines import Attempt, attempt_of, cross_check, read_date
from agent.kb.local.loaders import (GENID, RDF_FORMATS, SCHEMA_ABOUT, LoadError, file_kind, named_graph, open_file,
                                   read_batches)
from agent.kb.local.search import SearchIndex, wikidata_kind
from agent.kb.local.triples import TripleEntries
from agent.kb.local.sparql import PREFIXES, QueryEngine

log = logging.getLogger(__name__)
WD, P, PS, PQ, WDS = (PREFIXES["wd"], PREFIXES["p"], PREFIXES["ps"], PREFIXES["pq"], PREFIXES["wds"])
XSD_DATETIME = PREFIXES["xsd"] + "dateTime"
RDF_TYPE = PREFIXES["rdf"] + "type"
#: Stands for a ``wdno:`` statement (no value) among a statement's terms.
NO_VALUE = ox.Literal("no value")
#: What ``wdt:`` means for claims read without a rank (said once per load).
UNRANKED_NOTE = ("{files}: no rank column, so every claim there is taken as best rank: wdt: returns all of "
                 "an entity's values for a property (historical ones too), as p:/ps: do; add KGTK's rank "
                 "column to get the query service's truthy values")

__all__ = ["LocalKB", "LoadError", "OtherGraph", "StoreInUse", "load_date", "stored_graph"]
#: What a store records of its loads: when the last one ended, and the files each took.
MANIFEST = "manifest.json"


class StoreInUse(ValueError):
    """The store is open for writing in another process (a running bot, another load)."""


class OtherGraph(ValueError):
    """The store holds another graph than the one named."""


def load_date(store_dir: Path) -> datetime | None:
    """When the store's data was last loaded, from its manifest; ``None`` for a store loaded before stores kept
    one (or whose manifest cannot be read)."""
    try:
        manifest = json.loads((Path(store_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return read_date(manifest.get("loaded", "")) if isinstance(manifest, dict) else None


def _record_load(store_dir: Path, files: list[str]) -> None:
    """Note in the manifest that *files* were loaded now (earlier loads' files kept)."""
    path = Path(store_dir) / MANIFEST
    try:
        earlier = json.loads(path.read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        earlier = []
    path.write_text(json.dumps({"loaded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                "files": [*earlier, *files]}, indent=1) + "\n", encoding="utf-8")


def stored_graph(store_dir: Path) -> GraphProfile | None:
    """The profile a store was built with, or ``None`` for a store built before stores kept one (Wikidata)."""
    path = Path(store_dir) / "graph.toml"
    if not path.exists():
        return None
    return parse_profile(path.read_text(encoding="utf-8"), str(path))


class LocalKB:
    """The four lookups of :class:`agent.kb.base.KnowledgeBase` on a store in *store_dir*.

    *read_only* opens a store that another process holds (a running bot) for
    queries and searches; loading needs the store to itself.  *graph* names
    the graph the store holds (default: the one it was built with, else
    Wikidata); *language* that of labels (default: the graph's).
    """

    def __init__(self, store_dir: str | Path, language: str | None = None, timeout: float = 60.0,
                 read_only: bool = False, graph: GraphProfile | None = None) -> None:
        self.directory = Path(store_dir)
        stored = stored_graph(self.directory)
        if graph is not None and stored is not None and graph.name != stored.name:
            raise OtherGraph(f"the store {self.directory} holds the graph {stored.name!r}, not {graph.name!r}")
        self.graph = graph or stored or WIKIDATA
        #: How things are named here: the graph's labels, in its languages unless *language* names one.
        self.names = self.graph.names if language is None else replace(
            self.graph.names, languages=(language.lower(),) if language else ())
        self.language = self.names.language
        oxigraph = self.directory / "oxigraph"
        if read_only:
            if not (oxigraph / "CURRENT").exists():
                raise FileNotFoundError(f"no store in {self.directory}: create it with "
                                        f"`python -m agent.kb load --store {self.directory} FILE...`")
            self.store = ox.Store.read_only(str(oxigraph))
        else:
            oxigraph.mkdir(parents=True, exist_ok=True)
            try:
                self.store = ox.Store(str(oxigraph))
            except OSError as error:
                if "lock" in str(error).lower():
                    raise StoreInUse(f"the store {self.directory} is open in another process (a running bot or "
                                     "another load) or object: stop or close that first") from error
                raise
        self.wikibase = self.graph.entries.model == "wikibase"
        self.index = SearchIndex(self.directory / "index.sqlite", self.names, read_only=read_only,
                                 kind_of=wikidata_kind if self.wikibase else self.graph.kind_of,
                                 fallback=not self.wikibase)
        self.engine = QueryEngine(oxigraph, self.language, timeout, prefixes=self.graph.prefixes,
                                  base_iri=self.graph.base or None, dialect=self.graph.dialect)
        self.triples = None if self.wikibase else TripleEntries(self.store, self.graph, self.index, self.names)

    def close(self) -> None:
        """Release the store, its query worker and its index, so another process may open it."""
        self.engine.restart()
        self.index.connection.close()
        self.__dict__.pop("store", None)
        self.triples = None  # it holds the store too

    # -- loading ----------------------------------------------------------------------------------

    def load(self, paths: Iterable[str | Path], progress: bool = True) -> int:
        """Add each file, all or nothing (a bad file adds nothing); returns the number of triples read.

        Every file streams in bounded batches: mapped formats become N-Triples in
        a scratch file beside the store, RDF files are checked as they are, the
        search index is written in the same pass, and Oxigraph's bulk loader then
        takes the file.  Memory does not grow with the file.
        """
        total = 0
        unranked: list[str] = []
        profile = self.directory / "graph.toml"
        if not profile.exists() and self.graph is not WIKIDATA:
            profile.write_text(self.graph.source, encoding="utf-8")
        paths = [Path(p) for p in paths]
        for path in paths:
            size = path.stat().st_size if path.exists() else None
            with tqdm(total=size, desc=f"loading {path.name}", unit="B", unit_scale=True, disable=not progress) as bar:
                added, claims_without_rank = self._load_file(path, bar)
            if claims_without_rank:
                unranked.append(path.name)
            log.info("%s: %d triples", path, added)
            total += added
        if unranked:
            log.warning(UNRANKED_NOTE.format(files=", ".join(unranked)))
        self.settle()
        _record_load(self.directory, [path.name for path in paths])
        return total

    def settle(self) -> None:
        """Let the store's files come to rest before a query worker opens them.

        RocksDB goes on compacting in the background after a bulk load, moving
        and deleting the files a reader opening at that moment lists; a full
        compaction now (Oxigraph's advice after a batch upload) leaves nothing
        to move, and the next query starts a worker that sees every triple.
        """
        self.store.flush()
        self.store.optimize()
        self.engine.restart()

    def _load_file(self, path: Path, bar: tqdm | None = None) -> tuple[int, int]:
        """Load one file: (triples read, claims read without a rank); *bar* shows the bytes read, then the store
        taking the triples."""
        kind = file_kind(path)
        scratch = None if kind in RDF_FORMATS else self.directory / "loading.nt"
        to_graph = named_graph(path) if scratch is None else None
        had_data = next(iter(self.store.quads_for_pattern(None, None, None)), None) is not None
        triples = unranked = 0
        preferred: set[tuple[str, str]] = set()
        self.index.begin(str(path))
        self.index.connection.execute("CREATE TEMP TABLE IF NOT EXISTS whole (iri TEXT)")
        self.index.connection.execute("DELETE FROM temp.whole")
        try:
            with scratch.open("w", encoding="utf-8") if scratch else nullcontext() as out:
                for batch in read_batches(path, graph=self.graph,
                                          progress=None if bar is None else lambda done: bar.update(done - bar.n)):
                    if out is not None:
                        out.write("".join(batch.lines))
                    if batch.whole:
                        self.index.forget(iri[len(WD):] for iri in batch.whole)
                        if had_data:  # kept on disk: a dump may hold millions of entities
                            self.index.connection.executemany("INSERT INTO temp.whole VALUES (?)",
                                                              [(iri,) for iri in batch.whole])
                    self.index.add(batch.facts)
                    preferred.update(batch.preferred)
                    triples += batch.triples
                    unranked += batch.unranked
            self._remove_entities(iri for (iri,) in self.index.connection.execute("SELECT iri FROM temp.whole"))
            if bar is not None:
                bar.set_description(f"storing {triples:,} triples of {path.name}")
            with open_file(path) if scratch is None else nullcontext() as stream:
                if stream is None:
                    self.store.bulk_load(path=scratch, format=ox.RdfFormat.N_TRIPLES, lenient=True)
                else:
                    self.store.bulk_load(stream, format=RDF_FORMATS[kind], lenient=True, to_graph=to_graph)
            self._settle_ranks(preferred)
        except BaseException:
            self.index.rollback()
            raise
        finally:
            if scratch is not None:
                scratch.unlink(missing_ok=True)
        self.index.commit()
        return triples, unranked

    def _remove_entities(self, iris: Iterable[str]) -> None:
        """Remove what the store holds of entities a file brings whole: their terms, statements, sitelinks."""
        about = ox.NamedNode(SCHEMA_ABOUT)
        for iri in iris:
            node = ox.NamedNode(iri)
            quads = list(self.store.quads_for_pattern(node, None, None))
            if not quads:
                continue
            for quad in list(quads):
                if quad.predicate.value.startswith(P) and isinstance(quad.object, ox.NamedNode) \
                        and quad.object.value.startswith(WDS):
                    quads.extend(self.store.quads_for_pattern(quad.object, None, None))
            for quad in list(self.store.quads_for_pattern(None, about, node)):
                quads.extend(self.store.quads_for_pattern(quad.subject, None, None))
            for quad in quads:
                self.store.remove(quad)

    def _settle_ranks(self, pairs: set[tuple[str, str]]) -> None:
        """Where a property has a preferred statement, its normal ones lose best rank and their wdt: values."""
        by_property: dict[str, list[str]] = {}
        for iri, pid in pairs:
            by_property.setdefault(pid, []).append(iri)
        for pid, iris in by_property.items():
            for start in range(0, len(iris), 500):
                values = " ".join(f"<{iri}>" for iri in iris[start:start + 500])
                self.store.update(
                    f"DELETE {{ ?e wdt:{pid} ?v . ?s a wikibase:BestRank }} WHERE {{ VALUES ?e {{ {values} }} "
                    f"?e p:{pid} ?s . ?s wikibase:rank wikibase:NormalRank ; ps:{pid} ?v }} ; "
                    f"INSERT {{ ?e wdt:{pid} ?v }} WHERE {{ VALUES ?e {{ {values} }} "
                    f"?e p:{pid} ?s . ?s wikibase:rank wikibase:PreferredRank ; ps:{pid} ?v }}",
                    prefixes=PREFIXES)

    # -- the four lookups -------------------------------------------------------------------------------

    def search(self, text: str) -> SearchResults:
        return SearchResults(items=self.index.search(text, "item", 8),
                             properties=self.index.search(text, "property", 4))

    def execute(self, sparql: str, timeout: float | None = None) -> QueryResult:
        result = self.engine.execute(sparql, timeout)
        if self.triples is not None and result.bindings:
            result.shown = self.triples.shown(result.bindings)
        return result

    @property
    def as_engine(self) -> Engine:
        """The store as the one engine its answers come from."""
        return Engine("local", "the local store", str(self.directory), self.graph.dialect)

    #: A store is as fresh as its load says (its date is shown), never named stale.
    stale_after_days: float | None = None

    def cross_check(self, sparql: str, seconds: float | None = None,
                    known: QueryResult | None = None) -> CrossCheck:
        """The final query on the store's one engine, itself (*known*, the run's own result of it, when given),
        dated by its manifest's load date."""
        def run(engine: Engine, query: str) -> Attempt:
            return attempt_of(known if known is not None else self.execute(query, seconds))

        loaded = load_date(self.directory)
        return cross_check(sparql, [self.as_engine], run,
                           lambda engine: DataDate(loaded, "load manifest") if loaded else None,
                           language=self.language or "en")

    def outgoing(self, iri: str) -> list[tuple[str, ox.NamedNode | ox.Literal | ox.BlankNode]]:
        """(predicate IRI, object) of every triple whose subject is *iri*."""
        return [(quad.predicate.value, quad.object) for quad in self.store.quads_for_pattern(ox.NamedNode(iri), None,
                                                                                            None)]

    def describe(self, ids: list[str], language: str | None = None) -> list[SearchHit]:
        """Names from the search index; an ID it lacks but the store holds is named by itself, others left out.
        The index holds the store's language: labels in another *language* are read from the store."""
        hits = {hit.id: hit for hit in self.index.describe(ids)}
        found = [hits.get(entity_id) or SearchHit(entity_id, entity_id) for entity_id in ids
                 if entity_id in hits or self._mentioned(entity_id)]
        if language in (None, self.language):
            return found
        iris = {self.graph.iri_of(hit.id) for hit in found}
        if self.triples is not None:
            labels = self.triples.labels(iris, replace(self.names, languages=(language.lower(), *self.names.languages)))
        else:
            labels = self._labels(iris, language)
        return [SearchHit(hit.id, labels.get(self.graph.iri_of(hit.id), hit.id), "", hit.datatype) for hit in found]

    def _mentioned(self, entity_id: str) -> bool:
        """The store holds *entity_id* as a subject, an object, or (a property) a ``wdt:`` predicate."""
        if self.triples is not None:
            return self.triples.mentioned(self.graph.iri_of(entity_id))
        direct = f" UNION {{ ?s wdt:{entity_id} ?o }}" if entity_id.startswith("P") else ""
        return bool(self.store.query(f"ASK {{ {{ wd:{entity_id} ?p ?o }} UNION {{ ?s ?p wd:{entity_id} }}{direct} }}",
                                     prefixes=PREFIXES))

    def _labels(self, iris: set[str], language: str | None = None) -> dict[str, str]:
        if not iris:
            return {}
        values = " ".join(f"<{iri}>" for iri in iris)
        query = (f"SELECT ?e ?l WHERE {{ VALUES ?e {{ {values} }} ?e rdfs:label ?l "
                 f"FILTER(LANG(?l) = \"{language or self.language}\") }}")
        return {solution["e"].value: solution["l"].value for solution in self.store.query(query, prefixes=PREFIXES)}

    def _value(self, term: ox.NamedNode | ox.Literal, labels: dict[str, str]) -> Value:
        if term is NO_VALUE:
            return Value("no value")
        if isinstance(term, ox.NamedNode):
            if term.value.startswith(GENID):
                return Value("unknown value")
            if term.value.startswith(WD):
                entity_id = term.value[len(WD):]
                return Value(labels.get(term.value, entity_id), entity_id)
            return Value(term.value)
        if isinstance(term, ox.Literal):
            if term.datatype.value == XSD_DATETIME:
                return Value(term.value.removesuffix("T00:00:00Z"))
            if term.language:
                return Value(f"{term.value} ({term.language})")
            return Value(term.value)
        return Value(str(term))

    def _external_ids(self, pids: set[str]) -> set[str]:
        if not pids:
            return set()
        values = " ".join(f"wd:{pid}" for pid in pids)
        query = f"SELECT ?p WHERE {{ VALUES ?p {{ {values} }} ?p wikibase:propertyType wikibase:ExternalId }}"
        return {solution["p"].value[len(WD):] for solution in self.store.query(query, prefixes=PREFIXES)}

    def _exists(self, entity_id: str) -> bool:
        return bool(self.store.query(f"ASK {{ wd:{entity_id} ?p ?o }}", prefixes=PREFIXES))

    def _statements(self, subject: str, only: str | None = None) -> list[tuple[str, str, list[tuple[str, object]]]]:
        """(property, statement, [(predicate IRI, object)]) of *subject*'s statement nodes."""
        claim = f"p:{only}" if only else "?claim"
        query = (f"SELECT ?claim ?st ?sp ?so WHERE {{ wd:{subject} {claim} ?st . ?st ?sp ?so . "
                 f"FILTER(isIRI(?st) && STRSTARTS(STR(?st), \"{WDS}\")) "
                 + (f"BIND(p:{only} AS ?claim) " if only else "") + "}")
        grouped: dict[str, tuple[str, list]] = {}
        for solution in self.store.query(query, prefixes=PREFIXES):
            claim_iri = solution["claim"].value
            if not claim_iri.startswith(P) or "/" in claim_iri[len(P):]:
                continue
            statement = solution["st"].value
            grouped.setdefault(statement, (claim_iri[len(P):], []))[1].append(
                (solution["sp"].value, solution["so"]))
        return [(pid, statement, pairs) for statement, (pid, pairs) in grouped.items()]

    def get_entry(self, qid: str) -> Entry | None:
        if self.triples is not None:
            return self.triples.entry(qid)
        if not self._exists(qid):
            return None
        statements = self._statements(qid)
        referenced: set[str] = {WD + qid}
        for pid, _, pairs in statements:
            referenced.add(WD + pid)
            for predicate, term in pairs:
                if predicate.startswith(PQ):
                    referenced.add(WD + predicate[len(PQ):])
                if isinstance(term, ox.NamedNode) and term.value.startswith(WD):
                    referenced.add(term.value)
        if not statements:  # a store with truthy triples only
            for solution in self.store.query(f"SELECT ?p ?o WHERE {{ wd:{qid} ?p ?o FILTER(STRSTARTS(STR(?p), "
                                             f"\"{PREFIXES['wdt']}\")) }}", prefixes=PREFIXES):
                pid = solution["p"].value[len(PREFIXES["wdt"]):]
                statements.append((pid, "", [(PS + pid, solution["o"])]))
                referenced.update({WD + pid, solution["o"].value})
        labels = self._labels(referenced)
        external = self._external_ids({pid for pid, _, _ in statements})
        claims = []
        for pid, _, pairs in sorted(statements, key=lambda item: int(item[0][1:]) if item[0][1:].isdigit() else 0):
            if pid in external:
                continue
            rank = next((term.value.rsplit("#", 1)[-1] for predicate, term in pairs
                         if predicate == PREFIXES["wikibase"] + "rank"), "NormalRank")
            values = [term for predicate, term in pairs if predicate == PS + pid]
            if not values and (RDF_TYPE, PREFIXES["wdno"] + pid) in {(predicate, getattr(term, "value", ""))
                                                                       for predicate, term in pairs}:
                values = [NO_VALUE]
            if rank == "DeprecatedRank" or not values:
                continue
            qualifiers = [Qualifier(predicate[len(PQ):], labels.get(WD + predicate[len(PQ):], predicate[len(PQ):]),
                                    self._value(term, labels))
                          for predicate, term in pairs
                          if predicate.startswith(PQ) and "/" not in predicate[len(PQ):]
                          and predicate[len(PQ):] not in external]
            claims.append(Claim(pid, labels.get(WD + pid, pid), self._value(values[0], labels), qualifiers,
                                rank.removesuffix("Rank").lower()))
        label = labels.get(WD + qid, qid)
        description = next((solution["d"].value for solution in self.store.query(
            f"SELECT ?d WHERE {{ wd:{qid} schema:description ?d FILTER(LANG(?d) = \"{self.language}\") }}",
            prefixes=PREFIXES)), "")
        return Entry(qid, label, description, claims)

    def property_examples(self, pid: str) -> list[PropertyExample] | None:
        if self.triples is not None:
            return self.triples.property_examples(pid)
        if not self._exists(pid):
            return None
        statements = self._statements(pid, only="P1855")
        referenced = {term.value for _, _, pairs in statements for _, term in pairs if isinstance(term, ox.NamedNode)}
        referenced |= {WD + predicate[len(PQ):] for _, _, pairs in statements for predicate, _ in pairs
                       if predicate.startswith(PQ)}
        labels = self._labels(referenced)
        examples = []
        for _, _, pairs in statements:
            subjects = [term for predicate, term in pairs if predicate == PS + "P1855"]
            values = [term for predicate, term in pairs if predicate == PQ + pid]
            if not subjects or not values:
                continue
            others = [Qualifier(predicate[len(PQ):], labels.get(WD + predicate[len(PQ):], predicate[len(PQ):]),
                                self._value(term, labels))
                      for predicate, term in pairs
                      if predicate.startswith(PQ) and predicate != PQ + pid and "/" not in predicate[len(PQ):]]
            examples.append(PropertyExample(self._value(subjects[0], labels), self._value(values[0], labels), others))
        return examples
