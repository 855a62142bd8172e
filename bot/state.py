"""What the bot knows between passes, in SQLite.

Order of writes around an edit (see :mod:`bot.watcher`): the trace is
stored, the reply is saved on the wiki, then the section is marked answered.
A crash between the save and the mark leaves a section that looks
unanswered here, but the page history holds the bot's revision in it, and
the page is what decides: no second reply.  The page's revision, text and
line attribution (:mod:`bot.history`) are recorded only after the pass has
handled its sections, so a crash mid-pass makes the next pass look again.

A reply's record keeps the revision it was saved as and the page's revision
its answer was written from: a follow-up saved in between is answered, one
that stood when the answer was written is not.

A section's status: ``backlog`` (on the page at the first look, left alone
unless the bot is pinged), ``pending`` (to answer; retried after a failure
with doubling backoff), ``waiting`` (not ready, e.g. unsigned: looked at again
when the page changes), ``answered``, ``failed`` (``max_attempts`` failures),
``skipped`` (a skip rule), ``refused`` (the wiki's check refused the reply for
a reason that will not pass by itself: tried again once the page has
changed, never given up), ``gone`` (no longer on the page: pending again if
it comes back); with the review step, ``drafted`` (a draft waits on the
review page) and ``rejected`` (a reviewer rejected it).  A follow-up is a
record of its own, keyed ``<section key> / r<revision>``.

Each section's record keeps its fingerprint (heading, opening and first
signature, :attr:`bot.forum.Section.fingerprint`): a section that comes back
under another key (restored by someone else, after its lines were forgotten)
takes the status of its earlier record (:meth:`State.earlier`).  It keeps its
question too (the same without the heading): a question merged into another
thread as a subsection is found there, and answered under the record's key.

A state file that is not a SQLite database, or cannot be opened, raises
:class:`StateUnreadable` and is left as it is.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from bot.history import Attribution

SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    page TEXT PRIMARY KEY,
    first_seen REAL NOT NULL,
    last_revision INTEGER,
    text TEXT,
    attribution TEXT
);
CREATE TABLE IF NOT EXISTS sections (
    page TEXT NOT NULL,
    key TEXT NOT NULL,
    heading TEXT NOT NULL,
    status TEXT NOT NULL,          -- backlog | pending | waiting | answered | failed | skipped | refused | gone
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt REAL NOT NULL DEFAULT 0,
    answered_revision INTEGER,
    trace TEXT,
    updated REAL NOT NULL,
    fingerprint TEXT,
    refused_revision INTEGER,
    read_revision INTEGER,
    question TEXT,
    PRIMARY KEY (page, key)
);
"""


class SectionStatus(StrEnum):
    """Where a section (or a follow-up) stands; stored as its value (see the module's documentation)."""

    BACKLOG = "backlog"
    PENDING = "pending"
    WAITING = "waiting"
    ANSWERED = "answered"
    FAILED = "failed"
    SKIPPED = "skipped"
    REFUSED = "refused"
    GONE = "gone"
    DRAFTED = "drafted"
    REJECTED = "rejected"


#: Statuses a section that comes back under another key keeps: what the bot decided about it stays decided.
SETTLED = (SectionStatus.ANSWERED, SectionStatus.BACKLOG, SectionStatus.SKIPPED, SectionStatus.FAILED,
           SectionStatus.REFUSED)


@dataclass
class SectionRecord:
    page: str
    key: str
    heading: str
    status: SectionStatus
    attempts: int
    last_error: str | None
    next_attempt: float
    answered_revision: int | None
    trace: dict | None
    fingerprint: str | None = None
    refused_revision: int | None = None
    #: When the record last changed (seconds since the epoch): the latest wins where a fingerprint has several.
    updated: float = 0.0
    #: The page's revision the answer was written from (what it covered); ``None`` when not known.
    read_revision: int | None = None
    #: What the section asked when it was recorded (:attr:`bot.forum.Section.question`, its heading left out): found
    #: by it where it went when it is merged into another thread as a subsection.
    question: str | None = None


#: The longest wait before retrying a section that failed for a passing reason.
MAX_RETRY_SECONDS = 6 * 3600
_COLUMNS = ("page, key, heading, status, attempts, last_error, next_attempt, answered_revision, trace, fingerprint, "
            "refused_revision, updated, read_revision, question")


def after_failure(attempts: int, retry_seconds: float, max_attempts: int,
                  transient: bool = False) -> tuple[SectionStatus, float]:
    """The status and the wait before the next try of a section that failed its *attempts*-th try (see
    :meth:`State.record_failure`)."""
    status = SectionStatus.FAILED if attempts >= max_attempts and not transient else SectionStatus.PENDING
    return status, min(retry_seconds * 2 ** min(attempts - 1, 30), max(MAX_RETRY_SECONDS, retry_seconds))


def _record(row: tuple) -> SectionRecord:
    return SectionRecord(*row[:3], SectionStatus(row[3]), *row[4:8], trace=json.loads(row[8]) if row[8] else None,
                         fingerprint=row[9], refused_revision=row[10], updated=row[11], read_revision=row[12],
                         question=row[13])


class StateUnreadable(RuntimeError):
    """The state file is not a SQLite database of the bot, or cannot be opened."""


class State:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            # The watcher's passes run in the scheduler's worker thread, one at a time.
            self.connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            self.connection.executescript(SCHEMA)
            with self.connection:  # a state file written before a column existed
                for table, column, kind in (("pages", "text", "TEXT"), ("pages", "attribution", "TEXT"),
                                            ("sections", "fingerprint", "TEXT"),
                                            ("sections", "refused_revision", "INTEGER"),
                                            ("sections", "read_revision", "INTEGER"),
                                            ("sections", "question", "TEXT")):
                    columns = {row[1] for row in self.connection.execute(f"PRAGMA table_info({table})")}
                    if column not in columns:
                        self.connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        except sqlite3.DatabaseError as error:  # "file is not a database", "unable to open database file"
            raise StateUnreadable(f"cannot use the state file {self.path}: {error}") from error

    def close(self) -> None:
        self.connection.close()

    def knows_page(self, page: str) -> bool:
        return self.connection.execute("SELECT 1 FROM pages WHERE page = ?", (page,)).fetchone() is not None

    def last_revision(self, page: str) -> int | None:
        row = self.connection.execute("SELECT last_revision FROM pages WHERE page = ?", (page,)).fetchone()
        return row[0] if row else None

    def attribution(self, page: str) -> Attribution | None:
        """Who added which line of the page, as of the last pass that handled its sections."""
        row = self.connection.execute("SELECT text, attribution FROM pages WHERE page = ?", (page,)).fetchone()
        if row is None or row[0] is None or row[1] is None:
            return None
        try:
            return Attribution.from_json(row[1], row[0])
        except (ValueError, KeyError, TypeError):
            return None

    def record_seen(self, page: str, attribution: Attribution) -> None:
        """The page as handled by a pass: its revision, text and attribution, in one transaction."""
        with self.connection:
            self.connection.execute(
                "INSERT INTO pages VALUES (?, ?, ?, ?, ?) ON CONFLICT(page) DO UPDATE SET "
                "last_revision = excluded.last_revision, text = excluded.text, attribution = excluded.attribution",
                (page, time.time(), attribution.revision, attribution.text, attribution.to_json()))

    def due(self, page: str) -> bool:
        """Whether a pending section's next try has come (a first try included)."""
        return self.connection.execute(
            "SELECT 1 FROM sections WHERE page = ? AND status = 'pending' AND next_attempt <= ? LIMIT 1",
            (page, time.time())).fetchone() is not None

    def section(self, page: str, key: str) -> SectionRecord | None:
        row = self.connection.execute(f"SELECT {_COLUMNS} FROM sections WHERE page = ? AND key = ?",
                                      (page, key)).fetchone()
        return _record(row) if row else None

    def sections(self, page: str) -> list[SectionRecord]:
        return [_record(row) for row in
                self.connection.execute(f"SELECT {_COLUMNS} FROM sections WHERE page = ?", (page,))]

    def add(self, page: str, key: str, heading: str, status: SectionStatus, fingerprint: str | None = None,
            question: str | None = None) -> None:
        with self.connection:
            self.connection.execute(
                "INSERT OR IGNORE INTO sections (page, key, heading, status, updated, fingerprint, question) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", (page, key, heading, status, time.time(), fingerprint, question))

    def move(self, page: str, old: str, key: str) -> SectionRecord:
        """The record of the section *old* moved to *key*, which the section is read under now.

        A section read under another identity (archived and restored, or its lines attributed afresh at a
        first look after a crash between a save and the pass's end) keeps its status, attempts, trace and
        refusal instead of leaving a stale record behind (see :meth:`bot.planner.PlannedRecords.adoptable`).
        """
        with self.connection:
            self.connection.execute("UPDATE sections SET key = ?, updated = ? WHERE page = ? AND key = ?",
                                    (key, time.time(), page, old))
        return self.section(page, key)

    def _update(self, page: str, key: str, **values) -> None:
        values["updated"] = time.time()
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self.connection:
            self.connection.execute(f"UPDATE sections SET {assignments} WHERE page = ? AND key = ?",
                                    (*values.values(), page, key))

    def set_status(self, page: str, key: str, status: SectionStatus, reason: str | None = None) -> None:
        self._update(page, key, status=status, last_error=reason)

    def record_trace(self, page: str, key: str, trace: dict) -> None:
        # ASCII escapes: a lone surrogate from the model (valid JSON, not valid UTF-8) is stored, not refused.
        self._update(page, key, trace=json.dumps(trace))

    def record_answered(self, page: str, key: str, revision: int | None, read: int | None = None) -> None:
        """The reply saved as *revision* (``None``: found on the page, not known which), written from the page's
        revision *read*: the comments of the thread up to *read* are what it answered
        (:func:`bot.forum_decisions.pending_followup`)."""
        self._update(page, key, status=SectionStatus.ANSWERED, answered_revision=revision, read_revision=read,
                     last_error=None)

    def record_skipped(self, page: str, key: str, reason: str) -> None:
        self._update(page, key, status=SectionStatus.SKIPPED, last_error=reason)

    def record_refused(self, page: str, key: str, reason: str, revision: int | None) -> None:
        """The wiki refused the reply for a reason that will not pass by itself: tried again when the page
        is no longer at *revision*."""
        self._update(page, key, status=SectionStatus.REFUSED, last_error=reason[:2000], refused_revision=revision)

    def record_failure(self, page: str, key: str, error: str, retry_seconds: float, max_attempts: int,
                       transient: bool = False) -> None:
        """One more failed try, retried after a doubling wait.

        After *max_attempts* tries the section is given up (``failed``), unless the failure was
        *transient* (the wiki, the model or the knowledge base unreachable or refusing for a while): a
        fault that passes must not cost a question its answer, so those stay pending, the wait capped
        at :data:`MAX_RETRY_SECONDS`.
        """
        record = self.section(page, key)
        attempts = (record.attempts if record else 0) + 1
        status, wait = after_failure(attempts, retry_seconds, max_attempts, transient)
        self._update(page, key, status=status, attempts=attempts, last_error=error[:2000],
                     next_attempt=time.time() + wait)
