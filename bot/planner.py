"""What a pass decides to answer on the forum page, kept apart from writing it.

:class:`Planner` holds the planning rules: which section is a new question,
which comment under the bot's reply is a follow-up, when a ping in an old
question is answered, how a merged or renamed section keeps its record, when
the asker settled the question, and which opt-outs and skip rules keep the bot
silent.  It reads the state's records and the page (as :mod:`bot.forum` parsed
it) and decides the tasks together with the state changes they need (a record
added, a status set, a section moved to its new key, …), as data; it writes
nothing, and needs no wiki: what it asks of one (the opt-out gate, the bot's
own edits) is given to it.  :meth:`bot.watcher.Watcher.apply` writes those
changes afterwards, in the order they were decided.  Each later decision of the
same plan sees the earlier ones through :class:`PlannedRecords`, the state's
records with the decided changes laid over them, so a plan decides exactly what
deciding and writing at once decided.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from bot.config import BotConfig
from bot.forum import (
    MAX_REQUEST_CHARS, FollowUp, FollowupKey, Reading, Section, is_followup_key, parse_subsections,
)
from bot.forum_decisions import (
    MAX_DEPTH, answered_by_human, mark_answered, merged_question, pending_followup, ping_in, settled_by_asker,
)
from bot.history import Attribution, OwnEdit
from bot.kinds import TaskKind
from bot.state import SETTLED, SectionRecord, SectionStatus, after_failure
from bot.wiki import marked_resolved

log = logging.getLogger(__name__)


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
        """How many follow-ups in the section *key* the bot answered."""
        return sum(record.status == SectionStatus.ANSWERED and (followup := FollowupKey.parse(record.key)) is not None
                   and followup.section == key for record in self.records.values())

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


class OptOuts(Protocol):
    """Why ``{{bots}}``/``{{nobots}}`` keep the bot out of the page (*page_text*) or a *section*, or ``None``
    (:meth:`bot.wiki.ForumPage.refusal`, which decides as pywikibot does)."""

    def __call__(self, page_text: str | None = None, section: Section | None = None,
                 reading: Reading | None = None) -> str | None: ...


#: Why a section is not answered yet: it waits for its asker's signature.
UNSIGNED = "no signature yet"


def task_kind(section: Section) -> TaskKind:
    """A new question's kind: too long to read (a fixed note), or a question."""
    return TaskKind.TOO_LONG if len(section.opening) > MAX_REQUEST_CHARS else TaskKind.QUESTION


@dataclass
class Planner:
    """The planning rules of one forum page, for the bot *bot*: :meth:`plan` decides, writing nothing."""

    page: str
    bot: str
    config: BotConfig
    #: The opt-out gate, asked for the page and for each section the bot would answer.
    opt_outs: OptOuts
    #: The bot's own revisions of the page, up to a revision: they say which replies are the bot's.
    own_edits: Callable[[int], list[OwnEdit]]
    #: Tasks a dry run already showed: not planned again.
    previewed: Collection[str] = field(default_factory=frozenset)

    def plan(self, records: list[SectionRecord], text: str, sections: list[Section], revision: int,
             reading: Reading | None = None, backlog_until: int | None = None,
             attribution: Attribution | None = None) -> Plan:
        """The tasks due on this page (*text*, at *revision*, whose lines *attribution* attributes; the state
        holds *records* for it), at most ``max_sections_per_pass``, with skip rules applied, and the state
        changes decided with them.  Sections new to the state that were added up to revision *backlog_until*
        (or whose revision is not known) are backlog.

        A question waiting for its answer whose section is gone because someone merged it into another thread
        as a subsection is answered there, under its own key; the thread it went to takes it for no follow-up
        of its own."""
        if refusal := self.opt_outs(text, reading=reading):
            log.info("%s: nothing on %s is answered", refusal, self.page)
            return Plan([], [])
        planned = PlannedRecords(self.page, records, self.config.retry_minutes * 60, self.config.max_attempts)
        seen: set[str] = set()  # the keys of the sections and follow-ups on the page now
        on_page = {section.key for section in sections}
        merged = self._merged_questions(planned, text, sections, revision, reading, attribution, on_page)
        claimed = [(view.start, view.end) for view in merged]
        tasks: list[Task] = []
        for section in sections:
            seen.add(section.key)
            try:
                backlog = backlog_until is not None and section.origin <= backlog_until
                task = self._task_for(planned, section, backlog, seen, revision, on_page, claimed)
            except Exception as error:  # one pathological section: recorded, the others go on
                planned.decide(Fail(section, f"{type(error).__name__}: {error}", error))
                continue
            if task is not None and task.key not in self.previewed:
                tasks.append(task)
        for view in merged:
            seen.add(view.key)
            try:
                task = self._merged_task(planned, view)
            except Exception as error:
                planned.decide(Fail(view, f"{type(error).__name__}: {error}", error))
                continue
            if task is not None and task.key not in self.previewed:
                tasks.append(task)
        for record in planned.sections():  # answered if they come back
            if record.status in (SectionStatus.PENDING, SectionStatus.WAITING) and record.key not in seen:
                planned.decide(SetStatus(record.key, SectionStatus.GONE, "not on the page"))
        # Replies the wiki refused before wait behind everything else: they cannot keep new questions waiting.
        refused = {record.key for record in planned.sections() if record.refused_revision is not None
                   and record.status != SectionStatus.ANSWERED}
        tasks.sort(key=lambda task: task.key in refused)
        return Plan(tasks[:self.config.max_sections_per_pass], planned.changes)

    def skip_reason(self, section: Section) -> str | None:
        """Why the bot leaves *section*'s question alone, or ``None``: unsigned yet (:data:`UNSIGNED`), its own,
        opted out, marked resolved, settled by its asker, or (``skip_human_answered``) answered by someone
        with a query."""
        if not section.signatures:
            return UNSIGNED
        if section.author == self.bot and section.signatures[0].user == self.bot:  # not a question it put back
            return "started by the bot"
        if refusal := self.opt_outs(section=section):
            return refusal
        if marked_resolved(section.text):
            return "the section is marked resolved"
        if settled := settled_by_asker(section):
            return settled
        if (self.config.skip_human_answered and len(section.opening) <= MAX_REQUEST_CHARS
                and answered_by_human(section, self.bot)):
            return "someone already posted a query in a reply"
        return None

    def _merged_questions(self, records: PlannedRecords, text: str, sections: list[Section], revision: int,
                          reading: Reading | None, attribution: Attribution | None,
                          on_page: set[str]) -> list[Section]:
        """The subsections where questions still to answer went, each read under its record's key: the question
        of a pending or waiting section no longer on the page, merged by someone into another thread
        (:func:`bot.forum_decisions.merged_question`).  The page's subsections are read only when such a
        record exists."""
        waiting = [record for record in records.sections()
                   if record.status in (SectionStatus.PENDING, SectionStatus.WAITING) and record.key not in on_page
                   and not is_followup_key(record.key)]
        if not waiting:
            return []
        subsections = parse_subsections(text, attribution, reading, sections)
        mark_answered(subsections, self.bot, lambda: self.own_edits(revision))
        found: list[Section] = []
        for record in waiting:
            view = merged_question(sections, subsections, record.key, record.question)
            if view is not None and all(view.start != other.start for other in found):
                found.append(view)
        return found

    def _merged_task(self, records: PlannedRecords, view: Section) -> Task | None:
        """The task of a question merged into another thread (*view*, the subsection it stands in, read under
        its record's key), with the skip rules of any question; answered already there, it is recorded so."""
        record = records.section(view.key)
        if view.answered:
            records.decide(AlreadyAnswered(view.key))
            return None
        reason = self.skip_reason(view)
        if reason == UNSIGNED:
            if record.status != SectionStatus.WAITING:
                records.decide(SetStatus(view.key, SectionStatus.WAITING, reason))
            return None
        if record.status == SectionStatus.WAITING:
            records.decide(SetStatus(view.key, SectionStatus.PENDING))
            record = records.section(view.key)
        if reason:
            records.decide(Skip(view.key, reason, view.heading))
            return None
        if record.next_attempt > time.time():
            return None
        return Task(view.key, view, task_kind(view))

    def _task_for(self, records: PlannedRecords, section: Section, backlog: bool, seen: set[str], revision: int,
                  on_page: set[str], claimed: Sequence[tuple[int, int]] = ()) -> Task | None:
        bot = self.bot
        record = records.section(section.key)
        earlier = None
        copy_of = None
        if record is None:  # the same heading, opening and signature under another identity: its record follows
            moved = records.adoptable(section.fingerprint, on_page)
            if moved is not None:
                records.decide(Adopt(section.heading, section.key, moved.key))
                record = records.section(section.key)
            else:  # a copy of a section still on the page: it takes that section's settled status
                earlier = records.earlier(section.fingerprint)
                copy_of = earlier.key if earlier is not None else None
        if record is None:
            status = (earlier.status if earlier is not None else SectionStatus.BACKLOG if backlog
                      else SectionStatus.PENDING)
            records.decide(AddRecord(section.key, section.heading, status, section.fingerprint, copy_of,
                                     section.question))
            record = records.section(section.key)
        elif record.status in (SectionStatus.GONE, SectionStatus.WAITING) or (
                record.status == SectionStatus.REFUSED and record.refused_revision != revision):
            records.decide(SetStatus(section.key, SectionStatus.PENDING))
            record = records.section(section.key)
        if section.answered:
            # Backlog stays backlog: its question was old.
            if record.status not in (SectionStatus.ANSWERED, SectionStatus.BACKLOG):
                records.decide(AlreadyAnswered(section.key))
            read = records.read_for(section.replies[-1].owner) if section.replies else None
            return self._followup_task(records, section, pending_followup(section, bot, read, claimed), seen,
                                       revision)
        if record.status in (SectionStatus.BACKLOG, SectionStatus.SKIPPED, SectionStatus.FAILED):
            ping = ping_in(section, bot)
            if ping is None:
                return None
            text = section.masked[ping.start - section.start:ping.end - section.start]
            indent = len(text) - len(text.lstrip(":*#"))
            return self._followup_task(records, section, FollowUp(ping.owner, ping.user, ping.start, ping.end,
                                                                  min(indent + 1, MAX_DEPTH)), seen, revision,
                                       TaskKind.PING)
        if record.status == SectionStatus.DRAFTED and (settled := settled_by_asker(section)):
            records.decide(DropDraft(section.key, section.heading, settled))  # nobody needs the waiting draft
            return None
        if record.status != SectionStatus.PENDING or record.next_attempt > time.time():
            return None
        reason = self.skip_reason(section)
        if reason == UNSIGNED:
            records.decide(SetStatus(section.key, SectionStatus.WAITING, reason))
            return None
        if reason:
            records.decide(Skip(section.key, reason, section.heading))
            return None
        return Task(section.key, section, task_kind(section))

    def _followup_task(self, records: PlannedRecords, section: Section, followup: FollowUp | None, seen: set[str],
                       revision: int, kind: TaskKind = TaskKind.FOLLOW_UP) -> Task | None:
        """The task of answering *followup* (a comment under the bot's reply, or, as *kind* ``ping``, a ping of the
        bot in a question it has not answered), if it is due."""
        if followup is None:
            return None
        key = str(FollowupKey(section.key, followup.revision))
        seen.add(key)
        record = records.section(key)
        if record is None:
            records.decide(AddRecord(key, section.heading, SectionStatus.PENDING))
            record = records.section(key)
        elif record.status == SectionStatus.GONE or (record.status == SectionStatus.REFUSED
                                                     and record.refused_revision != revision):
            records.decide(SetStatus(key, SectionStatus.PENDING))
            record = records.section(key)
        if record.status != SectionStatus.PENDING or record.next_attempt > time.time():
            return None
        answered = max(records.answered_followups(section.key), len(section.replies) - 1)
        if section.answered and answered >= self.config.max_followups:
            records.decide(Skip(key, f"follow-up limit reached (max_followups = {self.config.max_followups})"))
            return None
        return Task(key, section, kind, followup)
