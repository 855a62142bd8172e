"""The example store: solved requests (a question and the SPARQL that answered it) in one SQLite file.

Examples come from the datasets' non-test splits, from the forum's archive
(a request and a query another user posted under it) and from corrections (a
person's query posted under the bot's reply in the same thread, kept with
the bot's query it replaced).  Each has a *key* that says where it came from,
so a second harvest updates what it finds again instead of adding it twice.

The question text and the properties the query uses are indexed by SQLite's
FTS5, whose ``bm25()`` ranks them (:mod:`agent.examples.retrieval`).  The
store also keeps the names (labels and aliases) of those properties, read
from the knowledge base, and which archive pages were harvested at which
revision.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path

from agent.examples.existence import Existence
from agent.examples.queries import query_entities, query_problem, query_properties
from agent.graph import WIKIDATA, entity_order, load_graph, profile_names
from agent.kb.dialect import PREFIXES
from agent.kb.local.search import fold

SCHEMA = """
CREATE TABLE IF NOT EXISTS examples (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    question TEXT NOT NULL,
    sparql TEXT NOT NULL,
    source TEXT NOT NULL,
    link TEXT NOT NULL DEFAULT '',
    date TEXT NOT NULL DEFAULT '',
    language TEXT NOT NULL DEFAULT '',
    heading TEXT NOT NULL DEFAULT '',
    month TEXT NOT NULL DEFAULT '',
    author TEXT NOT NULL DEFAULT '',
    bot_sparql TEXT NOT NULL DEFAULT '',
    thread TEXT NOT NULL DEFAULT '',
    properties TEXT NOT NULL DEFAULT '',
    graph TEXT NOT NULL DEFAULT 'wikidata'
);
CREATE INDEX IF NOT EXISTS examples_by_thread ON examples (thread, month);
CREATE VIRTUAL TABLE IF NOT EXISTS examples_text USING fts5(question, properties,
    tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS property_names (name TEXT NOT NULL, property TEXT NOT NULL,
    PRIMARY KEY (name, property)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS named_properties (property TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS property_labels (property TEXT PRIMARY KEY, label TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL,
    vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS pages (title TEXT PRIMARY KEY, revision INTEGER NOT NULL, harvested_at TEXT NOT NULL,
    examples INTEGER NOT NULL, skipped INTEGER NOT NULL);
"""


#: The graph of an example stored before examples knew theirs: every such store was harvested from Wikidata.
DEFAULT_GRAPH = WIKIDATA.name


def thread_name(heading: str) -> str:
    """A heading as threads are matched: case, accents, markup-free spacing and underscores folded."""
    return fold(heading.replace("_", " "))


@dataclass
class SolvedExample:
    """One solved request: a question and the query that answered it, with where and when it was posted."""

    #: Where it came from, unique in the store: ``spinach dev dev_3``, or a forum thread and the query's hash.
    key: str
    question: str
    sparql: str
    #: ``spinach dev``, ``forum``, ``correction``…
    source: str
    #: The thread as a wiki link target (``Wikidata:Request a query/Archive/2019/11#Heading``), "" when none.
    link: str = ""
    #: When the query was posted (``YYYY-MM-DD``), or the archive month (``YYYY-MM``).
    date: str = ""
    language: str = ""
    #: The thread's heading and archive month (``YYYY-MM``): together they name the thread.
    heading: str = ""
    month: str = ""
    #: Who posted the query, on the forum.
    author: str = ""
    #: For a correction: the bot's query that the person's query replaced.
    bot_sparql: str = ""
    #: The graph the query was written for (a profile's name): another graph's examples are never shown.
    graph: str = DEFAULT_GRAPH
    id: int | None = None

    @property
    def properties(self) -> set[str]:
        return query_properties(self.sparql)


_COLUMNS = [item.name for item in fields(SolvedExample) if item.name != "id"]


@dataclass(frozen=True)
class ThreadRef:
    """A forum thread as the store can tell it: its heading and the archive months it may be found under.

    A thread is archived in the month of its last comment, so a question
    asked in March may sit in any later month's archive: the bot gives the
    month it was asked and no end; the evaluation gives the archive month.
    """

    heading: str
    first_month: str
    last_month: str = "9999-12"


@dataclass
class HarvestedPage:
    title: str
    revision: int
    harvested_at: str
    examples: int
    skipped: int


@dataclass
class AddCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    keys: list[str] = field(default_factory=list)
    #: (key, why) of each example not stored: its query does not parse, or names a malformed ID (``wd:183``) or one
    #: Wikidata does not have, and a reader of the prompt would copy the mistake.
    refused: list[tuple[str, str]] = field(default_factory=list)

    def refusal_lines(self, shown: int = 10) -> list[str]:
        """One line per refused example (the first *shown*), then how many more: what a build prints."""
        lines = [f"not stored, {key}: {why}" for key, why in self.refused[:shown]]
        if len(self.refused) > shown:
            lines.append(f"not stored: {len(self.refused) - shown} more whose query does not parse or names a "
                         "malformed or missing ID")
        return lines


class ExampleStore:
    """The store at *path*, created when missing; *read_only* for a bot or a run that only reads it."""

    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        self.path = Path(path)
        if read_only:
            if not self.path.exists():
                raise FileNotFoundError(f"no example store at {self.path}: build one with spinach-examples build")
            self.connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.connection = sqlite3.connect(self.path, check_same_thread=False)
        try:
            if not read_only:
                self.connection.executescript(SCHEMA)
                if not self._has_graphs():
                    with self.connection:
                        self.connection.execute("ALTER TABLE examples ADD COLUMN graph TEXT NOT NULL DEFAULT "
                                                f"'{DEFAULT_GRAPH}'")
            self.connection.execute("SELECT key, properties FROM examples LIMIT 1").fetchall()
            self.connection.execute("SELECT rowid FROM examples_text LIMIT 1").fetchall()
        except sqlite3.DatabaseError as error:
            self.connection.close()
            raise ValueError(f"{self.path} is not an example store ({error})") from error
        self.connection.row_factory = sqlite3.Row

    def close(self) -> None:
        self.connection.close()

    def _has_graphs(self) -> bool:
        """Whether the examples carry their graph (a store built before they did, opened read-only, does not)."""
        return any(row[1] == "graph" for row in self.connection.execute("PRAGMA table_info(examples)"))

    def ids_of_other_graphs(self, graph: str) -> set[int]:
        """The examples written for another graph than *graph*: never to be shown for a question on it."""
        if not self._has_graphs():
            return set() if graph == DEFAULT_GRAPH else {row[0] for row in self.connection.execute(
                "SELECT id FROM examples")}
        return {row[0] for row in self.connection.execute("SELECT id FROM examples WHERE graph != ?", (graph,))}

    def count_for_graph(self, graph: str) -> int:
        """How many examples were written for *graph*."""
        if not self._has_graphs():
            return self.count() if graph == DEFAULT_GRAPH else 0
        return self.connection.execute("SELECT COUNT(*) FROM examples WHERE graph = ?", (graph,)).fetchone()[0]

    # -- examples ---------------------------------------------------------------------------------

    def add(self, examples: Iterable[SolvedExample], existence: Existence | None = None) -> AddCounts:
        """Insert *examples*, or update those whose key is stored already; one transaction.  An example whose
        query does not parse or names a malformed Wikidata ID (:func:`~agent.examples.queries.query_problem`), or
        (with *existence*, which asks the knowledge base) an item or property Wikidata does not have, is refused:
        counted with its reason, never stored (an earlier version under its key stays)."""
        counts = AddCounts()
        examples = list(examples)
        named = [query_entities(example.sparql) if existence is not None and example.graph == WIKIDATA.name
                 else set() for example in examples]
        absent = existence.missing(set().union(*named)) if existence is not None else set()
        with self.connection:
            for example, entities in zip(examples, named):
                problem = query_problem(example.sparql, _declared_prefixes(example.graph))
                gone = sorted(entities & absent, key=entity_order) if problem is None else []
                if gone:
                    problem = (f"names {', '.join(f'wd:{id_}' for id_ in gone)}, which Wikidata does not have "
                               "(deleted, or merged into another)")
                if problem is not None:
                    counts.refused.append((example.key, problem))
                    continue
                values = {name: getattr(example, name) for name in _COLUMNS}
                values["question"] = " ".join(example.question.split())
                values["sparql"] = example.sparql.strip()
                thread = thread_name(example.heading) if example.heading else ""
                properties = " ".join(sorted(query_properties(values["sparql"]), key=lambda pid: int(pid[1:])))
                row = self.connection.execute("SELECT * FROM examples WHERE key = ?", (example.key,)).fetchone()
                if row is not None and all(row[name] == values[name] for name in _COLUMNS):
                    counts.unchanged += 1
                    continue
                if row is None:
                    cursor = self.connection.execute(
                        f"INSERT INTO examples ({', '.join(_COLUMNS)}, thread, properties) "
                        f"VALUES ({', '.join('?' * (len(_COLUMNS) + 2))})",
                        [values[name] for name in _COLUMNS] + [thread, properties])
                    rowid = cursor.lastrowid
                    counts.added += 1
                else:
                    rowid = row["id"]
                    self.connection.execute(
                        f"UPDATE examples SET {', '.join(f'{name} = ?' for name in _COLUMNS)}, thread = ?, "
                        "properties = ? WHERE id = ?",
                        [values[name] for name in _COLUMNS] + [thread, properties, rowid])
                    self.connection.execute("DELETE FROM examples_text WHERE rowid = ?", (rowid,))
                    counts.updated += 1
                self.connection.execute("INSERT INTO examples_text (rowid, question, properties) VALUES (?, ?, ?)",
                                        (rowid, values["question"], properties.lower()))
                counts.keys.append(example.key)
        return counts

    def remove_page(self, title: str) -> int:
        """Remove the examples harvested from the page *title* (their link names it); how many there were.  A page
        is harvested whole each time, so what it no longer gives is no longer an example."""
        with self.connection:
            ids = [row[0] for row in self.connection.execute(
                "SELECT id FROM examples WHERE source IN ('forum', 'correction') AND substr(link, 1, ?) = ?",
                (len(title) + 1, title + "#"))]
            self.connection.executemany("DELETE FROM examples WHERE id = ?", [(id_,) for id_ in ids])
            self.connection.executemany("DELETE FROM examples_text WHERE rowid = ?", [(id_,) for id_ in ids])
            self.connection.executemany("DELETE FROM vectors WHERE id = ?", [(id_,) for id_ in ids])
        return len(ids)

    # -- vectors (agent.examples.meaning) ------------------------------------------------------------

    def vectors(self, model: str) -> dict[int, tuple[str, bytes]]:
        """The examples' vectors by *model*, each with the text it was computed from, by example id; none in a
        store from before vectors were kept, opened read-only."""
        try:
            rows = self.connection.execute("SELECT id, text, vector FROM vectors WHERE model = ?", (model,))
            return {row[0]: (row[1], row[2]) for row in rows}
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
            return {}

    def vector_rows(self, model: str) -> Iterator[tuple[int, str, str | None, bytes | None]]:
        """Every example, by id: its id and question, and the text and vector *model*'s vector was computed from
        (``None`` for an example without one), read a row at a time so that a large store is never held twice."""
        try:
            rows = self.connection.execute(
                "SELECT examples.id, examples.question, vectors.text, vectors.vector FROM examples LEFT JOIN vectors "
                "ON vectors.id = examples.id AND vectors.model = ? ORDER BY examples.id", (model,))
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
            rows = self.connection.execute("SELECT id, question, NULL, NULL FROM examples ORDER BY id")
        for row in rows:
            yield row[0], row[1], row[2], row[3]

    def put_vectors(self, model: str, rows: Iterable[tuple[int, str, bytes]]) -> None:
        """Keep the vectors (example id, the text they were computed from, the vector) by *model*; one
        transaction."""
        with self.connection:
            self.connection.executemany("INSERT OR REPLACE INTO vectors (id, model, text, vector) VALUES (?, ?, ?, ?)",
                                        [(id_, model, text, vector) for id_, text, vector in rows])

    def version(self) -> tuple[int, int]:
        """Changes when the examples may have: a commit by another connection (SQLite's ``data_version``) or by
        this one."""
        return self.connection.execute("PRAGMA data_version").fetchone()[0], self.connection.total_changes

    def count(self) -> int:
        return self.connection.execute("SELECT COUNT(*) FROM examples").fetchone()[0]

    def counts_by_source(self) -> dict[str, int]:
        return dict(self.connection.execute("SELECT source, COUNT(*) FROM examples GROUP BY source ORDER BY source"))

    def examples(self, ids: Iterable[int] | None = None) -> list[SolvedExample]:
        """The examples with these ids, in that order (all of them, by id, without *ids*)."""
        if ids is None:
            rows = self.connection.execute("SELECT * FROM examples ORDER BY id").fetchall()
            return [_example(row) for row in rows]
        wanted = list(ids)
        found = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            for row in self.connection.execute(
                    f"SELECT * FROM examples WHERE id IN ({','.join('?' * len(chunk))})", chunk):
                found[row["id"]] = _example(row)
        return [found[example_id] for example_id in wanted if example_id in found]

    def corrections(self) -> list[SolvedExample]:
        """The corrections people posted under the bot's replies, newest first."""
        rows = self.connection.execute("SELECT * FROM examples WHERE bot_sparql != '' ORDER BY date DESC, id DESC")
        return [_example(row) for row in rows]

    def ids_in_threads(self, threads: Iterable[ThreadRef]) -> set[int]:
        """The examples drawn from any of *threads* (same heading, archive month within the thread's range)."""
        found: set[int] = set()
        for thread in threads:
            found.update(row[0] for row in self.connection.execute(
                "SELECT id FROM examples WHERE thread = ? AND month BETWEEN ? AND ?",
                (thread_name(thread.heading), thread.first_month, thread.last_month)))
        return found

    def ids_with_questions(self, questions: Iterable[str]) -> set[int]:
        """The examples whose question is one of *questions* (case, accents and spacing aside)."""
        wanted = {fold(question) for question in questions}
        return {row["id"] for row in self.connection.execute("SELECT id, question FROM examples")
                if fold(row["question"]) in wanted}

    def ranked(self, match: str, weights: tuple[float, float], limit: int) -> list[tuple[int, float]]:
        """(id, score) of the examples matching the FTS5 query *match*, best first, by BM25 with column *weights*
        (question, properties); a lower score is better, as FTS5 has it."""
        return [(row[0], row[1]) for row in self.connection.execute(
            "SELECT rowid, bm25(examples_text, ?, ?) AS score FROM examples_text WHERE examples_text MATCH ? "
            "ORDER BY score LIMIT ?", (*weights, match, limit))]

    # -- property names ---------------------------------------------------------------------------

    def unnamed_properties(self) -> list[str]:
        """Properties the examples use whose names were not looked up yet."""
        used: set[str] = set()
        for (properties,) in self.connection.execute("SELECT properties FROM examples"):
            used.update(properties.split())
        named = {row[0] for row in self.connection.execute("SELECT property FROM named_properties")}
        return sorted(used - named, key=lambda pid: int(pid[1:]))

    def add_property_names(self, looked_up: Iterable[str], names: dict[str, list[str]],
                           labels: dict[str, str] | None = None) -> None:
        """Record the names (labels, aliases) found for each property looked up, and its label where *labels* has
        one; a property without any is noted too."""
        with self.connection:
            self.connection.executemany("INSERT OR REPLACE INTO property_labels VALUES (?, ?)",
                                        list((labels or {}).items()))
            self.connection.executemany("INSERT OR IGNORE INTO named_properties VALUES (?)",
                                        [(pid,) for pid in looked_up])
            self.connection.executemany("INSERT OR IGNORE INTO property_names VALUES (?, ?)",
                                        [(name, pid) for pid, found in names.items() for name in found])

    def property_names(self) -> list[tuple[str, str]]:
        """(name, property) pairs: every label and alias known for a property the examples use."""
        return [(row[0], row[1]) for row in self.connection.execute("SELECT name, property FROM property_names")]

    def property_labels(self, pids: Iterable[str]) -> dict[str, str]:
        """The label of each of *pids* that has one; none from a store built before labels were kept."""
        wanted = list(pids)
        try:
            return {row[0]: row[1] for row in self.connection.execute(
                f"SELECT property, label FROM property_labels WHERE property IN ({','.join('?' * len(wanted))})",
                wanted)}
        except sqlite3.OperationalError:  # an older store, opened read only: no such table
            return {}

    # -- harvested pages --------------------------------------------------------------------------

    def page(self, title: str) -> HarvestedPage | None:
        row = self.connection.execute("SELECT * FROM pages WHERE title = ?", (title,)).fetchone()
        return HarvestedPage(**dict(row)) if row is not None else None

    def record_page(self, page: HarvestedPage) -> None:
        with self.connection:
            self.connection.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?)",
                                    (page.title, page.revision, page.harvested_at, page.examples, page.skipped))


def _declared_prefixes(graph: str) -> dict[str, str] | None:
    """The prefixes *graph*'s queries may use undeclared: the query service's for Wikidata, a shipped profile's
    for another graph, ``None`` (not known) for a graph without one."""
    if graph == DEFAULT_GRAPH:
        return PREFIXES
    return dict(load_graph(graph).prefixes) if graph in profile_names() else None


def _example(row: sqlite3.Row) -> SolvedExample:
    """A stored row as an example (one from a store older than the graph column is Wikidata's)."""
    stored = row.keys()
    return SolvedExample(**{name: row[name] for name in _COLUMNS if name in stored}, id=row["id"])


def month_of(url_or_title: str) -> str:
    """``YYYY-MM`` from an archive page's title or URL (``…/Archive/2019/11``), "" when it names no month."""
    match = re.search(r"/(\d{4})/(\d{1,2})(?:$|[#?/])", url_or_title)
    return f"{match[1]}-{int(match[2]):02d}" if match and 1 <= int(match[2]) <= 12 else ""
