"""A Wikidata knowledge base in a local Oxigraph store: no network, the live backend's interface.

>>> from agent.kb.local import LocalKB
>>> kb = LocalKB("stores/wikidata")                       # opens, or creates, the store   # doctest: +SKIP
>>> kb.load(["Q42.ttl", "entities.json.bz2"])            # Turtle, N-Triples, JSON, KGTK  # doctest: +SKIP
>>> kb.search("Douglas Adams").items[0].id                                                # doctest: +SKIP
'Q42'
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pyoxigraph as ox
from tqdm import tqdm

from agent.kb.base import Claim, Entry, PropertyExample, Qualifier, QueryResult, SearchResults, Value
from agent.kb.local.loaders import LoadError, read_quads
from agent.kb.local.search import SearchIndex
from agent.kb.local.sparql import PREFIXES, QueryEngine

log = logging.getLogger(__name__)
WD, P, PS, PQ, WDS = (PREFIXES["wd"], PREFIXES["p"], PREFIXES["ps"], PREFIXES["pq"], PREFIXES["wds"])
XSD_DATETIME = PREFIXES["xsd"] + "dateTime"

__all__ = ["LocalKB", "LoadError"]


class LocalKB:
    """The four lookups of :class:`agent.kb.base.KnowledgeBase` on a store in *store_dir*."""

    def __init__(self, store_dir: str | Path, language: str = "en", timeout: float = 60.0) -> None:
        self.directory = Path(store_dir)
        (self.directory / "oxigraph").mkdir(parents=True, exist_ok=True)
        self.language = language
        try:
            self.store = ox.Store(str(self.directory / "oxigraph"))
        except OSError as error:
            if "lock" in str(error).lower():
                raise ValueError(f"the store {self.directory} is open in another process (or object); "
                                 "close that first") from error
            raise
        self.index = SearchIndex(self.directory / "search.sqlite", language)
        self.engine = QueryEngine(self.directory / "oxigraph", language, timeout)

    def close(self) -> None:
        """Release the store, its query worker and its index, so another process may open it."""
        self.engine.restart()
        self.index.connection.close()
        del self.store

    # -- loading ----------------------------------------------------------------------------------

    def load(self, paths: Iterable[str | Path], progress: bool = True) -> int:
        """Add each file in one transaction (a bad file adds nothing); returns the number of triples added."""
        total = 0
        for path in tqdm([Path(p) for p in paths], desc="loading", unit="file", disable=not progress):
            quads = read_quads(path)
            self.store.extend(quads)
            self.store.flush()
            subjects = {quad.subject.value for quad in quads if isinstance(quad.subject, ox.NamedNode)}
            indexed = self.index.update(self.store, subjects)
            log.info("%s: %d triples, %d entities indexed", path, len(quads), indexed)
            total += len(quads)
        self.engine.restart()
        return total

    # -- the four lookups -------------------------------------------------------------------------------

    def search(self, text: str) -> SearchResults:
        return SearchResults(items=self.index.search(text, "item", 8),
                             properties=self.index.search(text, "property", 4))

    def execute(self, sparql: str, timeout: float | None = None) -> QueryResult:
        return self.engine.execute(sparql, timeout)

    def _labels(self, iris: set[str]) -> dict[str, str]:
        if not iris:
            return {}
        values = " ".join(f"<{iri}>" for iri in iris)
        query = (f"SELECT ?e ?l WHERE {{ VALUES ?e {{ {values} }} ?e rdfs:label ?l "
                 f"FILTER(LANG(?l) = \"{self.language}\") }}")
        return {solution["e"].value: solution["l"].value for solution in self.store.query(query, prefixes=PREFIXES)}

    def _value(self, term: ox.NamedNode | ox.Literal, labels: dict[str, str]) -> Value:
        if isinstance(term, ox.NamedNode):
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
