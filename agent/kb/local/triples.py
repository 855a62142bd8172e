"""Entries of a graph kept as plain triples, shown as its profile says (KQA Pro, or any graph by profile).

An entry is the item's outgoing triples.  A value node (KQA Pro's attribute
values) is shown as its value: the first of the profile's ``value_text``
predicates it has, with its unit unless that is the unit meaning none.  A
fact node (``fact_head``/``fact_predicate``/``fact_tail``) gives the
qualifiers of the fact it names.  Predicates are shown as a query writes them
(``<date_of_birth>``, ``<pred:instance_of>``), items by name and ID.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pyoxigraph as ox

from agent.graph import GraphProfile, Names
from agent.kb.base import Binding, Claim, Entry, PropertyExample, Qualifier, Value
from agent.kb.local.search import SearchIndex

#: Most IRIs of a query result whose text is looked up for the model.
MAX_SHOWN = 2000
#: Property examples shown.
EXAMPLES = 3


def _values(iris: Iterable[str]) -> str:
    return " ".join(f"<{iri}>" for iri in iris)


def _text(term: Any) -> str:
    return term.value if isinstance(term, ox.Literal) else str(term)


class TripleEntries:
    """The three lookups besides search and queries, for a ``triples`` profile, on *store*."""

    def __init__(self, store: ox.Store, graph: GraphProfile, index: SearchIndex, names: Names | None = None) -> None:
        self.store, self.graph, self.index = store, graph, index
        self.names = names or graph.names
        entries = graph.entries
        self.structural = entries.structural
        self.hidden = {self.names.description} - {""}

    def _rows(self, query: str) -> list[Any]:
        return list(self.store.query(query, use_default_graph_as_union=True))

    def exists(self, iri: str) -> bool:
        return bool(self.store.query(f"ASK {{ <{iri}> ?p ?o }}", use_default_graph_as_union=True))

    def mentioned(self, iri: str) -> bool:
        """The graph holds *iri* as a subject, a predicate or an object."""
        return bool(self.store.query(f"ASK {{ {{ <{iri}> ?p ?o }} UNION {{ ?s <{iri}> ?o }} "
                                     f"UNION {{ ?s ?p <{iri}> }} }}", use_default_graph_as_union=True))

    def outgoing(self, iri: str) -> list[tuple[str, Any]]:
        """(predicate IRI, object) of every triple *iri* is the subject of."""
        return [(row["p"].value, row["o"]) for row in self._rows(f"SELECT ?p ?o WHERE {{ <{iri}> ?p ?o }}")]

    # -- texts -------------------------------------------------------------------------------------

    def labels(self, iris: set[str], names: Names | None = None) -> dict[str, str]:
        """The label of each of *iris* that has one, by every label predicate: the best by *names*' rank
        (the first listed language present, then untagged, then any; the first predicate within one)."""
        if not iris:
            return {}
        names = names or self.names
        best: dict[str, tuple[tuple[int, int, str], str]] = {}
        for row in self._rows(f"SELECT ?e ?p ?l WHERE {{ VALUES ?e {{ {_values(iris)} }} VALUES ?p "
                              f"{{ {_values(names.labels)} }} ?e ?p ?l FILTER(isLiteral(?l)) }}"):
            predicate, label = row["p"].value, row["l"]
            language = label.language or ""
            key = (names.rank(language, other=predicate != names.label), names.labels.index(predicate), label.value)
            entity = row["e"].value
            if entity not in best or key < best[entity][0]:
                best[entity] = (key, label.value)
        labels = {entity: label for entity, (_, label) in best.items()}
        # Classes and properties without a label have the name the index made of their IRI.
        unlabelled = {graph_id: iri for iri in iris - set(labels) if (graph_id := self.graph.id_of(iri))}
        labels.update((unlabelled[hit.id], hit.label) for hit in self.index.describe(list(unlabelled))
                      if hit.label != hit.id)
        return labels

    def _shown_name(self, predicate: str, term: Any, label: str) -> bool:
        """A label-predicate text is shown in an entry unless it is the entry's label or in a language not read."""
        return not (predicate in self.names.labels and isinstance(term, ox.Literal)
                    and (term.value == label or not self.names.searched(term.language or "")))

    def value_texts(self, iris: set[str]) -> dict[str, str]:
        """The text of each value node among *iris*: its value, with its unit when it has one."""
        entries = self.graph.entries
        wanted = [p for p in (*entries.value_text, entries.unit) if p]
        if not iris or not wanted:
            return {}
        parts: dict[str, dict[str, str]] = {}
        for row in self._rows(f"SELECT ?n ?p ?o WHERE {{ VALUES ?n {{ {_values(iris)} }} VALUES ?p "
                              f"{{ {_values(wanted)} }} ?n ?p ?o }}"):
            parts.setdefault(row["n"].value, {})[row["p"].value] = _text(row["o"])
        texts = {}
        for node, found in parts.items():
            text = next((found[p] for p in entries.value_text if p in found), None)
            if text is None:
                continue
            unit = found.get(entries.unit, "")
            texts[node] = f"{text} {unit}" if unit and unit != entries.no_unit else text
        return texts

    def predicate_label(self, iri: str) -> str:
        graph_id = self.graph.id_of(iri, "property")
        if graph_id is not None:
            hit = self.index.connection.execute("SELECT label FROM entities WHERE id = ?", (graph_id,)).fetchone()
            if hit and hit[0]:
                return hit[0]
        return re.split(r"[:/#]", iri)[-1].replace("_", " ")

    def _value(self, term: Any, labels: dict[str, str], texts: dict[str, str]) -> Value:
        if isinstance(term, ox.NamedNode):
            if term.value in texts:
                return Value(texts[term.value])
            graph_id = self.graph.id_of(term.value)
            if term.value in labels:
                return Value(labels[term.value], graph_id)
            return Value(self.graph.written(term.value), graph_id)
        return Value(_text(term))

    def _referenced(self, terms: Iterable[Any]) -> tuple[dict[str, str], dict[str, str]]:
        iris = {term.value for term in terms if isinstance(term, ox.NamedNode)}
        return self.labels(iris), self.value_texts(iris)

    def _qualifiers(self, subjects: set[str]) -> dict[tuple[str, str, str], list[tuple[str, Any]]]:
        """(head, predicate, tail) -> [(qualifier IRI, value)] of the fact nodes about *subjects*."""
        entries = self.graph.entries
        if not entries.qualified or not subjects:
            return {}
        found: dict[tuple[str, str, str], list[tuple[str, Any]]] = {}
        for row in self._rows(
                f"SELECT ?h ?r ?t ?q ?v WHERE {{ VALUES ?h {{ {_values(subjects)} }} ?f <{entries.fact_head}> ?h ; "
                f"<{entries.fact_predicate}> ?r ; <{entries.fact_tail}> ?t ; ?q ?v . FILTER(?q NOT IN "
                f"(<{entries.fact_head}>, <{entries.fact_predicate}>, <{entries.fact_tail}>)) }}"):
            key = (row["h"].value, row["r"].value, _text(row["t"]))
            found.setdefault(key, []).append((row["q"].value, row["v"]))
        return found

    def _claim(self, head: str, predicate: str, value: Any, facts: dict, labels: dict[str, str],
               texts: dict[str, str]) -> Claim:
        qualifiers = [Qualifier(self.graph.written(q), self.predicate_label(q), self._value(v, labels, texts))
                      for q, v in facts.get((head, predicate, _text(value)), [])]
        shown = self._value(value, labels, texts)
        if predicate in self.names.labels and isinstance(value, ox.Literal) and value.language:
            shown = Value(f"{shown.text} ({value.language})")  # a name in another language says which
        return Claim(self.graph.written(predicate), self.predicate_label(predicate), shown, qualifiers)

    # -- the lookups -------------------------------------------------------------------------------

    def entry(self, item_id: str) -> Entry | None:
        iri = self.graph.iri_of(item_id)
        if not self.exists(iri):
            return None
        outgoing = self.outgoing(iri)
        label = self.labels({iri}).get(iri, "")
        triples = [(p, o) for p, o in outgoing if p not in self.hidden and p not in self.structural
                   and self._shown_name(p, o, label)]
        facts = self._qualifiers({iri})
        qualifier_values = [value for pairs in facts.values() for _, value in pairs]
        labels, texts = self._referenced([ox.NamedNode(iri), *(o for _, o in triples), *qualifier_values])
        claims = sorted((self._claim(iri, p, o, facts, labels, texts) for p, o in triples),
                        key=lambda claim: (claim.property_label, claim.value.text))
        item_id = self.graph.id_of(iri) or item_id  # as the graph writes it, however the caller wrote it
        hit = self.index.connection.execute("SELECT description FROM entities WHERE id = ?", (item_id,)).fetchone()
        description = hit[0] if hit else ""
        if not description and self.names.description:
            described = sorted((self.names.rank(o.language or ""), o.value) for p, o in outgoing
                               if p == self.names.description and isinstance(o, ox.Literal))
            description = described[0][1] if described else ""
        return Entry(item_id, labels.get(iri, item_id), description, claims)

    def property_examples(self, property_id: str) -> list[PropertyExample] | None:
        predicate = self.graph.iri_of(property_id)
        rows = self._rows(f"SELECT ?s ?o WHERE {{ ?s <{predicate}> ?o }} LIMIT {EXAMPLES}")
        if not rows:
            return None
        facts = self._qualifiers({row["s"].value for row in rows if isinstance(row["s"], ox.NamedNode)})
        qualifier_values = [value for pairs in facts.values() for _, value in pairs]
        subjects = [row["s"] for row in rows]
        labels, texts = self._referenced([*subjects, *(row["o"] for row in rows), *qualifier_values])
        texts.update(self.fact_texts({s.value for s in subjects if isinstance(s, ox.NamedNode)} - set(labels)))
        examples = []
        for row in rows:
            claim = self._claim(row["s"].value, predicate, row["o"], facts, labels, texts)
            examples.append(PropertyExample(self._value(row["s"], labels, texts), claim.value, claim.qualifiers))
        return examples

    def fact_texts(self, iris: set[str]) -> dict[str, str]:
        """Fact nodes among *iris* as ``(head predicate tail)``: what a qualifier hangs on."""
        entries = self.graph.entries
        if not entries.qualified or not iris:
            return {}
        rows = self._rows(f"SELECT ?f ?h ?r ?t WHERE {{ VALUES ?f {{ {_values(iris)} }} ?f <{entries.fact_head}> ?h ; "
                          f"<{entries.fact_predicate}> ?r ; <{entries.fact_tail}> ?t }}")
        labels, texts = self._referenced([term for row in rows for term in (row["h"], row["t"])])
        return {row["f"].value: "(fact: " + " ".join((self._value(row["h"], labels, texts).text,
                                                      self.graph.written(row["r"].value),
                                                      self._value(row["t"], labels, texts).text)) + ")"
                for row in rows}

    def shown(self, bindings: list[Binding]) -> dict[str, str]:
        """How the IRIs of a query result are shown: items by name and ID, value nodes by value, facts by parts."""
        iris: set[str] = set()
        for row in bindings:
            iris.update(term["value"] for term in row.values() if term.get("type") == "uri")
            if len(iris) >= MAX_SHOWN:
                break
        if not iris:
            return {}
        labels, texts = self.labels(iris), self.value_texts(iris)
        texts.update(self.fact_texts(iris - set(labels) - set(texts)))
        shown = {}
        for iri in iris:
            if iri in labels:
                shown[iri] = f"{labels[iri]} {self.graph.written(iri)}"
            elif iri in texts:
                shown[iri] = texts[iri] if texts[iri].startswith("(fact:") else f"{texts[iri]} (value node)"
            else:
                shown[iri] = self.graph.written(iri)
        return shown
