"""What a pass decided about the state, kept apart from writing it.

The watcher's planner reads the state's records and the page and decides the
tasks together with the state changes they need (a record added, a status set,
a section moved to its new key, …); :meth:`bot.watcher.Watcher.apply` writes
those changes afterwards, in the order they were decided.  Each later decision
of the same plan sees the earlier ones through :class:`PlannedRecords`, the
state's records with the decided changes laid over them, so a plan decides
exactly what deciding and writing at once decided.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import StrEnum

from bot.forum import FollowUp, Section
from bot.state import SETTLED, SectionRecord, SectionStatus, after_failure


class TaskKind(StrEnum):
    """What a reply answers: it decides the request the model reads, whom the reply addresses, the log line and
    the edit summary (:func:`bot.render.edit_summary`)."""

    #: A new section's question.
    QUESTION = "question"
    #: A comment under the bot's reply: the asker's, or someone's who mentions the bot.
    FOLLOW_UP = "follow-up"
    #: A ping of the bot in a question it has not answered (an old one included): its first answer there.
    PING = "ping"
    #: A question too long to read: a fixed note.
    TOO_LONG = "too-long"


@dataclass(frozen=True)
class Task:
    """One reply to write."""

    #: The state record of this task: the section's key, or ``<section key> / r<revision>`` for a follow-up.
    key: str
    section: Section
    kind: TaskKind
    followup: FollowUp | None = None

    @property
    def depth(self) -> int:
        return self.followup.depth if self.followup else 1


@dataclass(frozen=True)
class AddRecord:
    """A section or follow-up new to the state, recorded with *status* (kept if it is already recorded)."""

    key: str
    heading: str
    status: SectionStatus
    fingerprint: str | None = None
    #: The key of the section this one copies (its settled status taken over), logged when the record is added.
    copy_of: str | None = None
    #: What the section asks (:attr:`bot.forum.Section.question`): it is found by it if merged into another thread.
    question: str | None = None


@dataclass(frozen=True)
class SetStatus:
    key: str
    status: SectionStatus
    reason: str | None = None


@dataclass(frozen=True)
class AlreadyAnswered:
    """A section found answered on the page, not by this process's reply."""

    key: str


@dataclass(frozen=True)
class Skip:
    key: str
    reason: str
    #: The heading named in the log line; ``None`` logs nothing (a follow-up over the limit).
    heading: str | None = None


@dataclass(frozen=True)
class Adopt:
    """A section read under another identity: the record of *old* (and its drafts) moves to *key*."""

    heading: str
    key: str
    old: str


@dataclass(frozen=True)
class DropDraft:
    """A question whose draft waits on the review page, which its asker said is settled: the draft is dropped with
    *reason*, and the question is not drafted again (skipped)."""

    key: str
    heading: str
    reason: str


@dataclass(frozen=True)
class Fail:
    """A section the planner could not decide about: recorded (pending, if it was not) with one failed try."""

    section: Section
    error: str
    #: What went wrong while deciding, logged with its traceback.
    cause: BaseException


Change = AddRecord | SetStatus | AlreadyAnswered | Skip | Adopt | DropDraft | Fail


@dataclass
class Plan:
    """The tasks due on a page and the state changes decided with them, oldest first."""

    tasks: list[Task]
    changes: list[Change]


class PlannedRecords:
    """The state's records of one page as the decided *changes* leave them, read like :class:`bot.state.State`."""

    def __init__(self, page: str, records: list[SectionRecord], retry_seconds: float, max_attempts: int) -> None:
        self.page = page
        self.records = {record.key: record for record in records}
        self.changes: list[Change] = []
        self.retry_seconds, self.max_attempts = retry_seconds, max_attempts

    def section(self, key: str) -> SectionRecord | None:
        return self.records.get(key)

    def sections(self) -> list[SectionRecord]:
        return list(self.records.values())

    def answered_followups(self, key: str) -> int:
        prefix = key + " / r"
        return sum(record.key.startswith(prefix) and record.status == SectionStatus.ANSWERED
                   for record in self.records.values())

    def read_for(self, reply: int) -> int | None:
        """The page's revision the bot's reply saved as revision *reply* was written from, when a record says it
        (by the revision, whatever key the record is under now)."""
        if reply <= 0:
            return None
        return next((record.read_revision for record in self.records.values()
                     if record.answered_revision == reply and record.read_revision is not None), None)

    def earlier(self, fingerprint: str) -> SectionRecord | None:
        """The latest settled record (:data:`bot.state.SETTLED`) of a section with this fingerprint, under any key
        (one still on the page, when :meth:`adoptable` found none)."""
        settled = [record for record in self.records.values()
                   if record.fingerprint == fingerprint and record.status in SETTLED]
        return max(settled, key=lambda record: record.updated, default=None)

    def adoptable(self, fingerprint: str, on_page: set[str]) -> SectionRecord | None:
        """The record of a section with this fingerprint under a key no section of the page has now (*on_page*),
        to move to the key it is read under now (:meth:`bot.state.State.move`): a settled record comes first,
        then the latest."""
        candidates = [record for record in self.records.values()
                      if record.fingerprint == fingerprint and record.key not in on_page]
        return max(candidates, key=lambda record: (record.status in SETTLED, record.updated), default=None)

    def _new(self, key: str, heading: str, status: SectionStatus, fingerprint: str | None,
             question: str | None = None) -> SectionRecord:
        """A record as :meth:`bot.state.State.add` writes it."""
        return SectionRecord(self.page, key, heading, status, 0, None, 0.0, None, None, fingerprint,
                             updated=time.time(), question=question)

    def decide(self, change: Change) -> None:
        """Record *change* and lay it over the records."""
        self.changes.append(change)
        now, records = time.time(), self.records
        match change:
            case AddRecord(key, heading, status, fingerprint, _, question):
                records.setdefault(key, self._new(key, heading, status, fingerprint, question))
            case SetStatus(key, status, reason):
                records[key] = replace(records[key], status=status, last_error=reason, updated=now)
            case AlreadyAnswered(key):
                records[key] = replace(records[key], status=SectionStatus.ANSWERED, answered_revision=None,
                                       read_revision=None, last_error=None, updated=now)
            case Skip(key, reason) | DropDraft(key, _, reason):
                records[key] = replace(records[key], status=SectionStatus.SKIPPED, last_error=reason, updated=now)
            case Adopt(key=key, old=old):
                records[key] = replace(records.pop(old), key=key, updated=now)
            case Fail(section, error):  # as State.record_failure writes it (the error is not transient)
                record = (records.get(section.key) or self._new(section.key, section.heading, SectionStatus.PENDING,
                                                                section.fingerprint, section.question))
                status, wait = after_failure(record.attempts + 1, self.retry_seconds, self.max_attempts)
                records[section.key] = replace(record, status=status, attempts=record.attempts + 1,
                                               last_error=error[:2000], next_attempt=now + wait, updated=now)
