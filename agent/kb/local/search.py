"""Search the local store's labels and aliases the way ``wbsearchentities`` ranks them.

An exact label or alias match comes before a prefix match, which comes before
a match of every word; ties go to the more popular entity (sitelinks when
loaded, else PageRank), then to the lower ID.  Matching ignores case and
accents.  Names are read in the languages the graph's profile lists and
untagged; an entity's label is the best-ranked it has (:meth:`agent.graph.Names.rank`).
The index is a SQLite file beside the store, written from the facts
the loader reads in the same pass as the triples (so a load never reads the
store back), inside one transaction per file: a refused file leaves it as it
was.  Opening a store costs nothing and a search is a few index look-ups.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path

from agent.graph import PAGE_ID_RE, WIKIDATA, Names
from agent.kb.base import SearchHit
from agent.kb.local.loaders import DATATYPES, Fact

#: Wikibase datatype names by their ontology term (``WikibaseItem`` -> ``wikibase-item``).
DATATYPE_NAMES = {term: name for name, term in DATATYPES.items()}
SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, kind TEXT NOT NULL, number INTEGER NOT NULL,
    label TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '', datatype TEXT,
    sitelinks INTEGER NOT NULL DEFAULT 0, pagerank REAL NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0,
    label_rank INTEGER NOT NULL DEFAULT 2147483647, description_rank INTEGER NOT NULL DEFAULT 2147483647);
CREATE TABLE IF NOT EXISTS names (id TEXT NOT NULL, name TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS names_by_name ON names (name);
CREATE INDEX IF NOT EXISTS names_by_id ON names (id);
CREATE TABLE IF NOT EXISTS words (id TEXT NOT NULL, word TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS words_by_word ON words (word);
CREATE INDEX IF NOT EXISTS words_by_id ON words (id);
CREATE TABLE IF NOT EXISTS loads (generation INTEGER PRIMARY KEY, file TEXT NOT NULL);
"""
#: The rank of no text at all: any text replaces it.
NO_RANK = 2147483647
#: Columns an index written before texts were ranked lacks (filled in when it is opened for writing).
_RANKS = ("label_rank", "description_rank")


def fold(text: str) -> str:
    """Case and accents folded, white space collapsed."""
    if text.isascii():  # nothing to decompose (most labels): the same result, several times faster
        return " ".join(text.lower().split())
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def _words(text: str) -> set[str]:
    return {word for word in re.split(r"[^\w]+", fold(text)) if word}


def wikidata_kind(entity_id: str) -> str | None:
    """A Wikidata ID's kind by its letter; ``None`` for what is no entity (forms, statements)."""
    if not PAGE_ID_RE.fullmatch(entity_id):
        return None
    return {"P": "property", "L": "lexeme"}.get(entity_id[0], "item")


def _number(entity_id: str) -> int:
    """The number an ID ends with (``Q42`` -> 42), which breaks ties between equally good hits; 0 for none."""
    digits = re.search(r"[0-9]+$", entity_id)
    return int(digits.group()) if digits else 0


class SearchIndex:
    """The index file at *path*; *read_only* opens it so a store in use by another process can be searched.

    *names* says which texts are read and how a label is chosen (the graph's
    languages in order, then untagged); *kind_of* whether an ID names an
    ``item``, a ``property`` (or a ``lexeme``), or nothing to index:
    Wikidata's letters unless a graph's profile says otherwise.  With
    *fallback* (a profile's graph), a thing that has no label in those
    languages is named by an other name, then by a label in any language
    (shown, not searched); Wikidata's dumps hold hundreds of languages, read
    only in the one asked.
    """

    def __init__(self, path: Path, names: Names = WIKIDATA.names, read_only: bool = False,
                 kind_of: Callable[[str], str | None] = wikidata_kind, fallback: bool = False) -> None:
        self.path = Path(path)
        self.names = names
        self.fallback = fallback
        self.kind_of = kind_of
        if read_only:
            if not self.path.exists():
                raise FileNotFoundError(f"{self.path} is missing: the store was built by an older version or "
                                        "its load never finished; load its files again into a new store")
            self.connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False,
                                              isolation_level=None)
        else:
            self.connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self.connection.executescript(SCHEMA)
            columns = {row[1] for row in self.connection.execute("PRAGMA table_info(entities)")}
            for column in _RANKS:
                if column not in columns:
                    self.connection.execute(f"ALTER TABLE entities ADD COLUMN {column} INTEGER NOT NULL "
                                            f"DEFAULT {NO_RANK}")
        self.generation = 0

    # -- writing: one transaction per file ----------------------------------------------------------

    def begin(self, file: str) -> None:
        self.connection.execute("BEGIN")
        cursor = self.connection.execute("INSERT INTO loads (file) VALUES (?)", (file,))
        self.generation = int(cursor.lastrowid or 0)

    def commit(self) -> None:
        self.connection.execute("COMMIT")

    def rollback(self) -> None:
        self.connection.execute("ROLLBACK")

    def forget(self, entity_ids: Iterable[str]) -> None:
        """Drop what earlier files said of *entity_ids* (this file's own facts stay)."""
        rows = [(entity_id, self.generation) for entity_id in entity_ids]
        self.connection.executemany("DELETE FROM names WHERE id = ? AND generation < ?", rows)
        self.connection.executemany("DELETE FROM words WHERE id = ? AND generation < ?", rows)
        self.connection.executemany(f"UPDATE entities SET label = '', description = '', datatype = NULL, "
                                    f"sitelinks = 0, label_rank = {NO_RANK}, description_rank = {NO_RANK} "
                                    "WHERE id = ? AND generation < ?", rows)

    def _rank(self, kind: str, language: str) -> tuple[bool, int | None]:
        """Whether a text is searched, and its rank as a label or description (``None``: it is not one)."""
        searched = self.names.searched(language)
        if kind == "description" and searched or kind == "label" and (searched or self.fallback):
            return searched, self.names.rank(language)
        if kind == "alias" and self.fallback:
            return searched, self.names.rank(language, other=True)
        return searched, None

    def add(self, facts: Iterable[Fact]) -> None:
        """Index *facts* (entity id, kind, value, language); texts in languages not searched are left out, or
        (with *fallback*) only name a thing that has no better label."""
        rows: dict[str, list[tuple]] = {"label": [], "description": [], "type": [], "sitelinks": [],
                                         "pagerank": [], "alias": [], "name": [], "class": []}
        names: list[tuple[str, str, int]] = []
        words: list[tuple[str, str, int]] = []
        generation = self.generation
        for entity_id, kind, value, language in facts:
            entity_kind = self.kind_of(entity_id)
            if entity_kind is None:
                continue
            searched, rank = self._rank(kind, language)
            if not searched and rank is None:
                continue
            if kind in ("label", "alias", "name") and searched:
                folded = fold(value)
                names.append((entity_id, folded, generation))
                words.extend((entity_id, word, generation) for word in _words(folded))
            if kind == "type":
                term = value.rsplit("#", 1)[-1]
                value = DATATYPE_NAMES.get(term, term)
            if kind == "alias" and rank is not None:
                kind = "label"  # an other name: a label of lower rank
            rows[kind].append((entity_id, entity_kind, _number(entity_id), value, generation)
                              + ((rank,) if kind in ("label", "description") else ()))
        for kind, column in (("label", "label"), ("description", "description"), ("type", "datatype"),
                             ("sitelinks", "sitelinks"), ("pagerank", "pagerank"), ("alias", None)):
            if not rows[kind]:
                continue
            if column is None:
                self.connection.executemany("INSERT OR IGNORE INTO entities (id, kind, number, generation) "
                                            "VALUES (?, ?, ?, ?)", [row[:3] + row[4:] for row in rows[kind]])
                continue
            if kind in ("label", "description"):  # the best-ranked text wins; the later one at equal rank
                self.connection.executemany(
                    f"INSERT INTO entities (id, kind, number, {column}, generation, {column}_rank) "
                    f"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET {column} = excluded.{column}, "
                    f"{column}_rank = excluded.{column}_rank, generation = excluded.generation "
                    f"WHERE excluded.{column}_rank <= entities.{column}_rank OR entities.{column} = ''",
                    rows[kind])
                continue
            self.connection.executemany(
                f"INSERT INTO entities (id, kind, number, {column}, generation) VALUES (?, ?, ?, ?, ?) "
                f"ON CONFLICT (id) DO UPDATE SET {column} = excluded.{column}, generation = excluded.generation",
                rows[kind])
        # A name made from an IRI (a property or class without a label) labels it until a label comes.
        self.connection.executemany(
            "INSERT INTO entities (id, kind, number, label, generation) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) "
            "DO UPDATE SET label = CASE entities.label WHEN '' THEN excluded.label ELSE entities.label END",
            rows["name"])
        # A class describes a thing without a description (the first class read).
        self.connection.executemany(
            "INSERT INTO entities (id, kind, number, description, generation) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) "
            "DO UPDATE SET description = CASE entities.description WHEN '' THEN excluded.description "
            "ELSE entities.description END", rows["class"])
        self.connection.executemany("INSERT INTO names VALUES (?, ?, ?)", names)
        self.connection.executemany("INSERT INTO words VALUES (?, ?, ?)", words)

    # -- reading -----------------------------------------------------------------------------------

    def describe(self, ids: list[str]) -> list[SearchHit]:
        """The indexed label, description and datatype of each of *ids* the index holds."""
        rows = self.connection.execute(
            f"SELECT id, CASE label WHEN '' THEN id ELSE label END, description, datatype FROM entities "
            f"WHERE id IN ({','.join('?' * len(ids))})", list(ids)).fetchall() if ids else []
        return [SearchHit(id=row[0], label=row[1], description=row[2], datatype=row[3]) for row in rows]

    def search(self, text: str, kind: str, limit: int) -> list[SearchHit]:
        wanted = fold(text)
        if not wanted:
            return []
        words = sorted(_words(text))
        word_clause = ""
        parameters: list = [wanted, wanted, wanted + "\uffff"]
        if words:
            word_clause = ("UNION ALL SELECT id, 2 FROM words WHERE word IN (%s) GROUP BY id "
                           "HAVING COUNT(DISTINCT word) = %d" % (",".join("?" * len(words)), len(words)))
            parameters += words
        rows = self.connection.execute(
            f"""SELECT e.id, CASE e.label WHEN '' THEN e.id ELSE e.label END, e.description, e.datatype,
                       MIN(m.tier) AS tier
                FROM (SELECT id, 0 AS tier FROM names WHERE name = ?
                      UNION ALL SELECT id, 1 FROM names WHERE name > ? AND name < ?
                      {word_clause}) AS m
                JOIN entities AS e ON e.id = m.id
                WHERE e.kind = ?
                GROUP BY e.id ORDER BY tier, e.sitelinks DESC, e.pagerank DESC, e.number LIMIT ?""",
            (*parameters, kind, limit)).fetchall()
        return [SearchHit(id=row[0], label=row[1], description=row[2], datatype=row[3]) for row in rows]
