"""Search the local store's labels and aliases the way ``wbsearchentities`` ranks them.

An exact label or alias match comes before a prefix match, which comes before
a match of a whole word; ties go to the more popular entity (sitelinks when
loaded, else PageRank), then to the lower ID.  Matching ignores case and
accents.  The index is a SQLite file beside the store, updated after each
load, so opening a store costs nothing and a search is a few index look-ups.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import pyoxigraph as ox

from agent.kb.base import SearchHit
from agent.kb.local.loaders import DATATYPES

WD = "http://www.wikidata.org/entity/"
#: Wikibase datatype names by their ontology term (``WikibaseItem`` -> ``wikibase-item``).
DATATYPE_NAMES = {term: name for name, term in DATATYPES.items()}
SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, kind TEXT NOT NULL, number INTEGER NOT NULL,
    label TEXT NOT NULL, description TEXT NOT NULL, datatype TEXT, popularity REAL NOT NULL);
CREATE TABLE IF NOT EXISTS names (id TEXT NOT NULL, name TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS names_by_name ON names (name);
CREATE INDEX IF NOT EXISTS names_by_id ON names (id);
CREATE TABLE IF NOT EXISTS words (id TEXT NOT NULL, word TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS words_by_word ON words (word);
CREATE INDEX IF NOT EXISTS words_by_id ON words (id);
"""
#: What the index reads of an entity, by predicate IRI.
FACTS = {
    "label": "http://www.w3.org/2000/01/rdf-schema#label",
    "description": "http://schema.org/description",
    "alias": "http://www.w3.org/2004/02/skos/core#altLabel",
    "type": "http://wikiba.se/ontology#propertyType",
    "sitelinks": "http://wikiba.se/ontology#sitelinks",
    "pagerank": "https://spinach-bot.invalid/ontology#pagerank",
}
#: Past this many entities, one scan of each predicate beats looking entities up one batch at a time.
SCAN_THRESHOLD = 2000


def fold(text: str) -> str:
    """Case and accents folded, white space collapsed."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def _words(text: str) -> set[str]:
    return {word for word in re.split(r"[^\w]+", fold(text)) if word}


class SearchIndex:
    def __init__(self, path: Path, language: str = "en") -> None:
        self.path = Path(path)
        self.language = language
        self.connection = sqlite3.connect(self.path, check_same_thread=False)
        self.connection.executescript(SCHEMA)

    def _facts(self, store: ox.Store, iris: list[str]) -> dict[str, dict[str, list[str]]]:
        """Each entity's labels, descriptions, aliases (in the index language), type and popularity."""
        facts: dict[str, dict[str, list[str]]] = {iri[len(WD):]: {} for iri in iris}
        batches = [None] if len(iris) > SCAN_THRESHOLD else [iris[i:i + 500] for i in range(0, len(iris), 500)]
        for name, predicate in FACTS.items():
            for batch in batches:
                values = "" if batch is None else "VALUES ?e { " + " ".join(f"<{iri}>" for iri in batch) + " } "
                for solution in store.query(f"SELECT ?e ?v WHERE {{ {values}?e <{predicate}> ?v }}"):
                    entity = facts.get(solution["e"].value[len(WD):]) if solution["e"].value.startswith(WD) \
                        else None
                    value = solution["v"]
                    if entity is None or (isinstance(value, ox.Literal) and value.language
                                          and value.language != self.language):
                        continue
                    entity.setdefault(name, []).append(value.value)
        return facts

    def update(self, store: ox.Store, entity_iris: Iterable[str] | None = None) -> int:
        """(Re)index *entity_iris* (every labelled entity when None); returns how many were indexed."""
        if entity_iris is None:
            found = store.query(f'SELECT DISTINCT ?e WHERE {{ ?e <{FACTS["label"]}> ?l }}')
            entity_iris = [solution["e"].value for solution in found]
        iris = sorted({iri for iri in entity_iris
                       if iri.startswith(WD) and re.fullmatch(r"[QP]\d+", iri[len(WD):])})
        facts = self._facts(store, iris)
        count = 0
        with self.connection:
            self.connection.executemany("DELETE FROM names WHERE id = ?", [(i,) for i in facts])
            self.connection.executemany("DELETE FROM words WHERE id = ?", [(i,) for i in facts])
            for entity_id, entity in facts.items():
                label = (entity.get("label") or [""])[0]
                aliases = entity.get("alias", [])
                if not label and not aliases:
                    continue
                popularity = float((entity.get("sitelinks") or [0])[0]) * 1e6 + float((entity.get("pagerank") or [0])[0])
                datatype = (entity.get("type") or [""])[0].rsplit("#", 1)[-1] or None
                self.connection.execute(
                    "INSERT OR REPLACE INTO entities VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (entity_id, "property" if entity_id.startswith("P") else "item", int(entity_id[1:]),
                     label or entity_id, (entity.get("description") or [""])[0],
                     DATATYPE_NAMES.get(datatype, datatype) if datatype else None, popularity))
                names = {fold(name) for name in [label, *aliases] if name}
                self.connection.executemany("INSERT INTO names VALUES (?, ?)", [(entity_id, n) for n in names])
                words = set().union(*(_words(name) for name in names)) if names else set()
                self.connection.executemany("INSERT INTO words VALUES (?, ?)", [(entity_id, w) for w in words])
                count += 1
        return count

    def search(self, text: str, kind: str, limit: int) -> list[SearchHit]:
        wanted = fold(text)
        if not wanted:
            return []
        words = sorted(_words(text))
        word_clause = ""
        parameters: list = [wanted, wanted, wanted + "\uffff"]
        if words:
            word_clause = ("UNION ALL SELECT id, 2 FROM words WHERE word = ? GROUP BY id HAVING 1" if len(words) == 1
                           else "UNION ALL SELECT id, 2 FROM words WHERE word IN (%s) GROUP BY id HAVING COUNT(*) = %d"
                           % (",".join("?" * len(words)), len(words)))
            parameters += words
        rows = self.connection.execute(
            f"""SELECT e.id, e.label, e.description, e.datatype, MIN(m.tier) AS tier
                FROM (SELECT id, 0 AS tier FROM names WHERE name = ?
                      UNION ALL SELECT id, 1 FROM names WHERE name > ? AND name < ?
                      {word_clause}) AS m
                JOIN entities AS e ON e.id = m.id
                WHERE e.kind = ?
                GROUP BY e.id ORDER BY tier, e.popularity DESC, e.number LIMIT ?""",
            (*parameters, kind, limit)).fetchall()
        return [SearchHit(id=row[0], label=row[1], description=row[2], datatype=row[3]) for row in rows]
