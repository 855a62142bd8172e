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
CREATE TABLE IF NOT EXISTS words (id TEXT NOT NULL, word TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS words_by_word ON words (word);
"""
ENTITY_FACTS = """
SELECT ?e ?label ?description ?type ?sitelinks ?pagerank WHERE {
  VALUES ?e { %s }
  OPTIONAL { ?e rdfs:label ?label FILTER(LANG(?label) = "%s") }
  OPTIONAL { ?e schema:description ?description FILTER(LANG(?description) = "%s") }
  OPTIONAL { ?e wikibase:propertyType ?type }
  OPTIONAL { ?e wikibase:sitelinks ?sitelinks }
  OPTIONAL { ?e <https://spinach-bot.invalid/ontology#pagerank> ?pagerank }
}"""
PREFIXES = {"rdfs": "http://www.w3.org/2000/01/rdf-schema#", "schema": "http://schema.org/",
            "wikibase": "http://wikiba.se/ontology#", "skos": "http://www.w3.org/2004/02/skos/core#"}


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

    def update(self, store: ox.Store, entity_iris: Iterable[str] | None = None) -> int:
        """(Re)index *entity_iris* (every labelled entity when None); returns how many were indexed."""
        if entity_iris is None:
            found = store.query(f'SELECT DISTINCT ?e WHERE {{ ?e <{PREFIXES["rdfs"]}label> ?l }}')
            entity_iris = [solution["e"].value for solution in found]
        iris = sorted({iri for iri in entity_iris if iri.startswith(WD) and re.fullmatch(r"[QP]\d+", iri[len(WD):])})
        count = 0
        with self.connection:
            for start in range(0, len(iris), 500):
                batch = iris[start:start + 500]
                values = " ".join(f"<{iri}>" for iri in batch)
                facts: dict[str, dict] = {}
                query = ENTITY_FACTS % (values, self.language, self.language)
                for solution in store.query(query, prefixes=PREFIXES):
                    entity = facts.setdefault(solution["e"].value[len(WD):], {})
                    for name in ("label", "description", "type", "sitelinks", "pagerank"):
                        if solution[name] is not None and name not in entity:
                            entity[name] = solution[name].value
                aliases: dict[str, list[str]] = {}
                alias_query = (f"SELECT ?e ?a WHERE {{ VALUES ?e {{ {values} }} ?e skos:altLabel ?a "
                               f"FILTER(LANG(?a) = \"{self.language}\") }}")
                for solution in store.query(alias_query, prefixes=PREFIXES):
                    aliases.setdefault(solution["e"].value[len(WD):], []).append(solution["a"].value)
                ids = list(facts)
                self.connection.executemany("DELETE FROM names WHERE id = ?", [(i,) for i in ids])
                self.connection.executemany("DELETE FROM words WHERE id = ?", [(i,) for i in ids])
                for entity_id, entity in facts.items():
                    label = entity.get("label", "")
                    if not label and entity_id not in aliases:
                        continue
                    popularity = float(entity.get("sitelinks") or 0) * 1e6 + float(entity.get("pagerank") or 0)
                    datatype = entity.get("type", "").rsplit("#", 1)[-1] or None
                    self.connection.execute(
                        "INSERT OR REPLACE INTO entities VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (entity_id, "property" if entity_id.startswith("P") else "item", int(entity_id[1:]),
                         label or entity_id, entity.get("description", ""),
                         DATATYPE_NAMES.get(datatype, datatype) if datatype else None, popularity))
                    names = {fold(name) for name in [label, *aliases.get(entity_id, [])] if name}
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
