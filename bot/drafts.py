"""The drafts of the review step, in the bot's SQLite state file (a table of their own).

A draft's status (:class:`DraftStatus`): ``drafted`` (on the review page,
waiting for a reviewer), ``approved`` (a reviewer approved it; being checked
and posted), ``posted`` (on the forum, ``forum_revision`` says where),
``rejected`` (a reviewer rejected it), ``dropped`` (stale, or its section on
the review page is gone), ``refused`` (MediaWiki's edit check, or a draft that did
not show on the review page) or ``voided`` (in state files written before a
stranger's change was undone instead); ``reason`` says why.  ``reason`` also keeps the last mark that was
ignored (an approval by a user who is not a reviewer).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from enum import StrEnum


class DraftStatus(StrEnum):
    """Where a draft stands; stored as its value."""

    DRAFTED = "drafted"
    APPROVED = "approved"
    POSTED = "posted"
    REJECTED = "rejected"
    DROPPED = "dropped"
    REFUSED = "refused"
    VOIDED = "voided"


#: A draft still waiting for a reviewer (an approved one whose posting was cut short is looked at again).
WAITING = (DraftStatus.DRAFTED, DraftStatus.APPROVED)
#: A draft whose outcome is decided (and written into its section on the review page).
CLOSED = (DraftStatus.POSTED, DraftStatus.REJECTED, DraftStatus.DROPPED, DraftStatus.REFUSED, DraftStatus.VOIDED)

SCHEMA = """
CREATE TABLE IF NOT EXISTS drafts (
    number INTEGER PRIMARY KEY AUTOINCREMENT,
    page TEXT NOT NULL,             -- the forum page
    key TEXT NOT NULL,              -- the task's key in the sections table
    heading TEXT NOT NULL,
    kind TEXT NOT NULL,             -- question | follow-up | ping | too-long (bot.planner.TaskKind)
    status TEXT NOT NULL,           -- a DraftStatus
    reply TEXT NOT NULL,            -- the reply as drafted, its signature left out
    summary TEXT NOT NULL,          -- the forum edit's summary
    digest TEXT NOT NULL,           -- the forum section's text when drafted, hashed
    thread TEXT,                    -- the forum section's text when drafted
    language TEXT,                  -- the reply's language (agent.messages), for what the bot renders again
    review_revision INTEGER,        -- the review page's revision that added the draft
    forum_revision INTEGER,         -- the forum's revision that holds the posted reply
    reason TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
"""
_COLUMNS = ("number, page, key, heading, kind, status, reply, summary, digest, review_revision, forum_revision, "
            "reason, created, thread, language")


@dataclass
class Draft:
    number: int
    page: str
    key: str
    heading: str
    kind: str
    status: DraftStatus
    reply: str
    summary: str
    digest: str
    review_revision: int | None
    forum_revision: int | None
    reason: str | None
    #: When the draft was written (``time.time()``).
    created: float
    #: The forum section's text when the draft was written (``None`` in a state file older than this column).
    thread: str | None
    #: The reply's language: an approved draft is rendered again in it (``None`` in an older state file).
    language: str | None = None


def _draft(row: tuple) -> Draft:
    return Draft(*row[:5], DraftStatus(row[5]), *row[6:])


class Drafts:
    """The drafts table of a state file, on the state's own connection."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.connection.executescript(SCHEMA)
        columns = {row[1] for row in self.connection.execute("PRAGMA table_info(drafts)")}
        for column in ("thread", "language"):
            if column not in columns:
                with self.connection:  # a state file written before the column existed
                    self.connection.execute(f"ALTER TABLE drafts ADD COLUMN {column} TEXT")

    def next_number(self) -> int:
        row = self.connection.execute("SELECT seq FROM sqlite_sequence WHERE name = 'drafts'").fetchone()
        return (row[0] if row else 0) + 1

    def add(self, number: int, page: str, key: str, heading: str, kind: str, reply: str, summary: str,
            digest: str, review_revision: int | None, status: DraftStatus = DraftStatus.DRAFTED,
            thread: str | None = None, language: str | None = None) -> None:
        now = time.time()
        with self.connection:
            self.connection.execute(
                "INSERT INTO drafts (number, page, key, heading, kind, status, reply, summary, digest, thread, "
                "language, review_revision, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (number, page, key, heading, kind, status, reply, summary, digest, thread, language,
                 review_revision, now, now))

    def rekey(self, page: str, old: str, new: str) -> None:
        """The drafts of the section *old* follow it to its new key *new* (see :meth:`bot.state.State.move`)."""
        with self.connection:
            self.connection.execute("UPDATE drafts SET key = ? WHERE page = ? AND key = ?", (new, page, old))

    def waiting(self, page: str) -> list[Draft]:
        """The drafts of *page* not yet posted or dropped, oldest first (an approved one whose posting was cut
        short, by the stop page or a crash, is looked at again)."""
        rows = self.connection.execute(f"SELECT {_COLUMNS} FROM drafts WHERE page = ? AND status IN (?, ?) "
                                       "ORDER BY number", (page, *WAITING)).fetchall()
        return [_draft(row) for row in rows]

    def latest(self, page: str, key: str) -> Draft | None:
        """The newest draft written for the section *key* of *page*."""
        row = self.connection.execute(f"SELECT {_COLUMNS} FROM drafts WHERE page = ? AND key = ? ORDER BY number DESC "
                                      "LIMIT 1", (page, key)).fetchone()
        return _draft(row) if row else None

    def get(self, number: int) -> Draft | None:
        row = self.connection.execute(f"SELECT {_COLUMNS} FROM drafts WHERE number = ?", (number,)).fetchone()
        return _draft(row) if row else None

    def set(self, number: int, status: DraftStatus | None = None, reason: str | None = None,
            forum_revision: int | None = None) -> None:
        values: dict[str, object] = {"updated": time.time(), "reason": reason}
        if status is not None:
            values["status"] = status
        if forum_revision is not None:
            values["forum_revision"] = forum_revision
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self.connection:
            self.connection.execute(f"UPDATE drafts SET {assignments} WHERE number = ?", (*values.values(), number))
