"""What the bot knows between passes, in SQLite.

Order of writes around an edit (see :mod:`bot.watcher`): the trace is
stored, the reply is saved on the wiki, then the section is marked answered.
A crash between the save and the mark leaves a section that looks
unanswered here, but the page itself carries the bot's signature in it, and
the page is what decides: no second reply.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    page TEXT PRIMARY KEY,
    first_seen REAL NOT NULL,
    last_revision INTEGER
);
CREATE TABLE IF NOT EXISTS sections (
    page TEXT NOT NULL,
    key TEXT NOT NULL,
    heading TEXT NOT NULL,
    status TEXT NOT NULL,          -- backlog | pending | answered | failed | skipped
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt REAL NOT NULL DEFAULT 0,
    answered_revision INTEGER,
    trace TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (page, key)
);
"""


@dataclass
class SectionRecord:
    page: str
    key: str
    heading: str
    status: str
    attempts: int
    last_error: str | None
    next_attempt: float
    answered_revision: int | None
    trace: dict | None


class State:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # The watcher's passes run in the scheduler's worker thread, one at a time.
        self.connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self.connection.executescript(SCHEMA)

    def close(self) -> None:
        self.connection.close()

    def knows_page(self, page: str) -> bool:
        return self.connection.execute("SELECT 1 FROM pages WHERE page = ?", (page,)).fetchone() is not None

    def last_revision(self, page: str) -> int | None:
        row = self.connection.execute("SELECT last_revision FROM pages WHERE page = ?", (page,)).fetchone()
        return row[0] if row else None

    def set_last_revision(self, page: str, revision: int) -> None:
        with self.connection:
            self.connection.execute(
                "INSERT INTO pages VALUES (?, ?, ?) ON CONFLICT(page) DO UPDATE SET last_revision = excluded.last_revision",
                (page, time.time(), revision))

    def section(self, page: str, key: str) -> SectionRecord | None:
        row = self.connection.execute(
            "SELECT page, key, heading, status, attempts, last_error, next_attempt, answered_revision, trace "
            "FROM sections WHERE page = ? AND key = ?", (page, key)).fetchone()
        if row is None:
            return None
        return SectionRecord(*row[:8], trace=json.loads(row[8]) if row[8] else None)

    def sections(self, page: str) -> list[SectionRecord]:
        keys = [row[0] for row in self.connection.execute("SELECT key FROM sections WHERE page = ?", (page,))]
        return [self.section(page, key) for key in keys]

    def add(self, page: str, key: str, heading: str, status: str) -> None:
        with self.connection:
            self.connection.execute(
                "INSERT OR IGNORE INTO sections (page, key, heading, status, updated) VALUES (?, ?, ?, ?, ?)",
                (page, key, heading, status, time.time()))

    def _update(self, page: str, key: str, **values) -> None:
        values["updated"] = time.time()
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self.connection:
            self.connection.execute(f"UPDATE sections SET {assignments} WHERE page = ? AND key = ?",
                                    (*values.values(), page, key))

    def record_trace(self, page: str, key: str, trace: dict) -> None:
        self._update(page, key, trace=json.dumps(trace, ensure_ascii=False))

    def record_answered(self, page: str, key: str, revision: int | None) -> None:
        self._update(page, key, status="answered", answered_revision=revision, last_error=None)

    def record_skipped(self, page: str, key: str, reason: str) -> None:
        self._update(page, key, status="skipped", last_error=reason)

    def record_failure(self, page: str, key: str, error: str, retry_seconds: float, max_attempts: int) -> None:
        record = self.section(page, key)
        attempts = (record.attempts if record else 0) + 1
        status = "failed" if attempts >= max_attempts else "pending"
        self._update(page, key, status=status, attempts=attempts, last_error=error[:2000],
                     next_attempt=time.time() + retry_seconds * 2 ** (attempts - 1))
