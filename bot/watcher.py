"""The watcher: one pass over the forum page finds what to answer, answers it, and counts what happened.

Shaped like pywikibot's ``BaseBot``: :meth:`Watcher.plan` turns the page
into tasks with skip rules applied and the state changes they need, writing
nothing (:mod:`bot.planner`); :meth:`Watcher.apply` writes those changes before
any task runs; :meth:`Watcher.handle` does one task, and counters are printed
at the end.  A task is a new section's question, a
follow-up under the bot's reply (or a ping of the bot in a section it has not
answered), or a polite note for a question too long to read.

Each pass reads the page once, asks MediaWiki where its sections are, and
parses it once.  Each task runs under one error boundary: whatever fails
(parsing its request, the agent, rendering, saving) is logged with its
traceback, recorded with the attempt count, and retried later with doubling
backoff; the pass goes on with the next task.  A reply the wiki's check
refuses is recorded as refused, with the reason, and tried again (with the
same answer) once the page has changed, behind every other task of the pass.  Pending tasks are retried whatever
the page revision says, and the page is recorded as seen only after its tasks
were handled.  Saving, and every "may I write" decision, belongs to
:mod:`bot.wiki`.

At the first look at a page (no state for it), the sections already there
are backlog, except those asked after the bot's own latest edit of the page
(it was down, or its state was lost): those are answered.  A section that
comes back under another identity (its lines restored by someone else after
they were forgotten) keeps the status its earlier record had.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pywikibot

from agent.examples import Retriever, ThreadRef, prompt_examples
from agent.examples.queries import properties_in_order
from agent.examples.retrieval import GENERIC_PROPERTIES
from agent.kb.base import KnowledgeBase
from agent.redact import redact, scrub
from agent.trace import SERVICE_FAILURES, AgentResult
from bot.config import BotConfig
from bot.edit_check import EditRefused
from bot.forum import (
    MAX_REQUEST_CHARS, FollowUp, Reading, Request, Section, extract_followup, extract_request, followup_key, in_forum,
    is_followup_key, normalize_user, parse_sections, parse_subsections, previous_query, summary_section,
)
from bot.forum_decisions import (
    MAX_DEPTH, addressees, answered_by_human, mark_answered, merged_question, pending_followup, ping_in,
    settled_by_asker,
)
from bot.history import Attribution, Revision, latest_revisions, revisions_after
from bot.outcomes import changes, snapshot
from bot.planner import (
    AddRecord, AlreadyAnswered, Adopt, Change, DropDraft, Fail, Plan, PlannedRecords, SetStatus, Skip, Task, TaskKind,
)
from agent.messages import reply_language
from bot.render import Credit, EarlierRequest, Markup, edit_summary, header_ids, render_reply, reply_kind
from bot.review import Review
from bot.short_links import ShortLinks
from bot.state import SectionStatus, State
from bot.wiki import EmergencyStop, ForumPage, marked_resolved

log = logging.getLogger(__name__)
Answerer = Callable[[Request], AgentResult]
#: Solved examples shown to the agent per question.
EXAMPLES_SHOWN = 5
#: The reply to a question too long to read; fixed text, nothing from the page.
TOO_LONG_NOTE = (f":Sorry, this question is longer than {MAX_REQUEST_CHARS:,} characters, more than I can read. "
                 "Could you shorten it to the question itself and the query it is about? ~~~~")


@dataclass
class Watcher:
    forum: ForumPage
    state: State
    answer: Answerer
    config: BotConfig
    show: Callable[[str], None] = print
    counter: Counter = field(default_factory=Counter)
    #: Set to stop after the task being handled now.
    stopping: threading.Event = field(default_factory=threading.Event)
    #: Dry run: tasks already shown by this process, not run again at every pass.
    previewed: set[str] = field(default_factory=set)
    #: Solved examples for the agent's first prompt and the reply's "earlier request" line (``examples_path``).
    examples: Retriever | None = None
    #: Who runs the bot and where it is documented, named in every reply.
    credit: Credit | None = None
    #: With ``review = true``: replies go to the review page first (:mod:`bot.review`).
    review: Review | None = None
    #: Resolves ``https://w.wiki/…`` links in a request to the queries they point to.
    short_links: ShortLinks | None = None
    #: The knowledge base the agent answers from: it names the preview's columns in the reply's language.
    kb: KnowledgeBase | None = None
    #: What each task this process handled answers, by its key: the pass's log line names it so.
    kinds: dict[str, TaskKind] = field(default_factory=dict)

    @property
    def bot(self) -> str:
        return normalize_user(self.forum.username)

    def run_pass(self, answer_backlog: bool = False) -> Counter:
        """Look at the page once; answer what is due; log one line saying what the pass did."""
        before = Counter(self.counter)
        records = snapshot(self.state.sections(self.forum.title))
        if self.short_links is not None:
            self.short_links.new_pass()
        try:
            if self.review is not None:  # before any new draft: drafts the state does not know are taken up
                self._review(self.review.recover)
            self._look(answer_backlog)
            if self.review is not None:
                self._review(lambda: self.review.run(self.state.attribution(self.forum.title)))
            return self.counter
        finally:
            done = self.counter - before
            said = changes(records, self.state.sections(self.forum.title), self._kind_of)
            log.info("pass over %s: %s%s", self.forum.title,
                     ", ".join(f"{name} {count}" for name, count in sorted(done.items())) or "nothing done",
                     "; " + "; ".join(said) if said else "")

    def _kind_of(self, key: str) -> str | None:
        """What the reply recorded under *key* answers (``ping``, ``follow-up``…), when this process or a draft
        knows it."""
        if key in self.kinds:
            return self.kinds[key]
        draft = self.review.drafts.latest(self.forum.title, key) if self.review is not None else None
        return draft.kind if draft is not None else None

    def _review(self, step: Callable[[], Counter]) -> None:
        """One step of the review page's (take up drafts, post what reviewers approved, drop what they
        rejected), under one error boundary."""
        try:
            self.counter.update({f"drafts {name}": count for name, count in step().items()})
        except EmergencyStop as stop:
            log.warning("emergency stop: %s; editing nothing", stop)
            self.counter["stopped"] += 1
        except Exception as error:  # the review page or the wiki: tried again next pass
            log.error("cannot handle the drafts on %s: %s", self.review.page.title, redact(str(error)))
            self.counter["review errors"] += 1

    def _look(self, answer_backlog: bool) -> Counter:
        page = self.forum.title
        try:
            if self.config.live and self.forum.stopped():
                log.warning("emergency stop: %s is not empty; editing nothing", self.forum.stop_title)
                self.counter["stopped"] += 1
                return self.counter
            revision = self.forum.latest_revision()
            if revision is None:
                log.error("the page %s does not exist", page)
                return self.counter
            if revision == self.state.last_revision(page) and not self.state.due(page):
                self.counter["unchanged"] += 1
                return self.counter
            text, revision = self.forum.read()
            reading = self.forum.reading(text, revision)
            first_look = not self.state.knows_page(page)
            since = self._last_own_revision(revision) if first_look else None
            attribution = self.attribute(text, revision, first_look, since)
        except (OSError, pywikibot.exceptions.Error) as error:  # the wiki is down: try again next pass
            log.error("cannot read %s: %s", page, error)
            self.counter["wiki errors"] += 1
            return self.counter
        except Exception:
            log.exception("cannot read %s", page)
            self.counter["wiki errors"] += 1
            return self.counter
        # At a first look, sections asked up to the bot's own latest edit (or all, if it never edited) wait.
        backlog_until = None if not first_look or answer_backlog else (since if since is not None else revision)
        try:
            sections = parse_sections(text, attribution, reading)
            mark_answered(sections, self.bot, lambda: self.forum.own_edits(revision))
            plan = self.plan(text, sections, revision, reading, backlog_until, attribution)
            self.apply(plan.changes)
        except Exception:
            log.exception("cannot parse %s; nothing on it is answered this pass", page)
            self.counter["page errors"] += 1
            return self.counter
        if backlog_until is not None:
            backlog = sum(record.status == SectionStatus.BACKLOG for record in self.state.sections(page))
            newer = (f"; {sum(section.origin > since for section in sections)} asked since its own last edit of "
                     f"the page (revision {since}) are answered") if since is not None else ""
            log.info("first look at %s: %d sections recorded as backlog, answered only where the bot is pinged "
                     "(--backlog answers them)%s", page, backlog, newer)
        for task in plan.tasks:
            if self.stopping.is_set() or not self.handle(task, attribution, revision):
                break
        self.state.record_seen(page, attribution)
        return self.counter

    def _last_own_revision(self, revision: int) -> int | None:
        """The bot's own latest revision of the page (up to *revision*), if it ever edited it."""
        own = self.forum.own_edits(revision)
        return own[-1].revision if own else None

    def attribute(self, text: str, revision: int, first_look: bool, since: int | None = None) -> Attribution:
        """Who added which line of *text*: the stored attribution carried through every revision made since
        (at a first look, the history from *since*, the bot's own latest revision)."""
        stored = None if first_look else self.state.attribution(self.forum.title)
        if stored is None:
            return self._attribute_from_history(text, revision, since)
        if stored.revision == revision and stored.text == text:
            return stored
        try:
            return self._carry(stored, revisions_after(self.forum.site, self.forum.title, stored.revision, revision),
                               text, revision)
        except pywikibot.exceptions.APIError as error:  # e.g. the revision read last was deleted since
            log.warning("cannot read the revisions of %s since %d (%s); the changes since are attributed together, "
                        "to no known user", self.forum.title, stored.revision, error)
            return self._carry(stored, [], text, revision)

    def _attribute_from_history(self, text: str, revision: int, since: int | None) -> Attribution:
        """At the first look: who added which line, from the page's history since the bot's own latest
        revision (or its latest revisions).

        Without it a signature typed into a question (a forged bot signature) would pass for a reply, and
        a question asked while the bot was away would pass for backlog.
        """
        try:
            revisions = latest_revisions(self.forum.site, self.forum.title, revision, since)
        except pywikibot.exceptions.APIError as error:
            log.warning("cannot read the history of %s (%s); signatures alone tell who wrote what",
                        self.forum.title, error)
            revisions = []
        if not revisions:
            return Attribution.first_look(revision, text)
        oldest, newer = revisions[0], revisions[1:]
        start = (Attribution.created(oldest.id, normalize_user(oldest.user), oldest.text) if oldest.creation
                 else Attribution.first_look(oldest.id, oldest.text))
        return self._carry(start, newer, text, revision)

    @staticmethod
    def _carry(current: Attribution, revisions: Iterable[Revision], text: str, revision: int) -> Attribution:
        """*current* carried through *revisions* (oldest first) to *text*, the page as read at *revision*."""
        for newer in revisions:
            current = current.advance(newer.id, normalize_user(newer.user), newer.text)
        if current.text != text or current.revision != revision:
            current = current.advance(revision, "", text)
        return current

    def plan(self, text: str, sections: list[Section], revision: int, reading: Reading | None = None,
             backlog_until: int | None = None, attribution: Attribution | None = None) -> Plan:
        """The tasks due on this page (*text*, at *revision*, whose lines *attribution* attributes), at most
        ``max_sections_per_pass``, with skip rules applied, and the state changes decided with them: nothing
        is written (:meth:`apply` writes them).  Sections new to the state that were added up to revision
        *backlog_until* (or whose revision is not known) are backlog.

        A question waiting for its answer whose section is gone because someone merged it into another thread
        as a subsection is answered there, under its own key; the thread it went to takes it for no follow-up
        of its own."""
        page = self.forum.title
        if refusal := self.forum.refusal(text, reading=reading):
            log.info("%s: nothing on %s is answered", refusal, page)
            return Plan([], [])
        records = PlannedRecords(page, self.state.sections(page), self.config.retry_minutes * 60,
                                 self.config.max_attempts)
        seen: set[str] = set()  # the keys of the sections and follow-ups on the page now
        on_page = {section.key for section in sections}
        merged = self._merged_questions(records, text, sections, revision, reading, attribution, on_page)
        claimed = [(view.start, view.end) for view in merged]
        tasks: list[Task] = []
        for section in sections:
            seen.add(section.key)
            try:
                backlog = backlog_until is not None and section.origin <= backlog_until
                task = self._task_for(records, section, backlog, seen, revision, on_page, claimed)
            except Exception as error:  # one pathological section: recorded, the others go on
                records.decide(Fail(section, f"{type(error).__name__}: {error}", error))
                continue
            if task is not None and task.key not in self.previewed:
                tasks.append(task)
        for view in merged:
            seen.add(view.key)
            try:
                task = self._merged_task(records, view)
            except Exception as error:
                records.decide(Fail(view, f"{type(error).__name__}: {error}", error))
                continue
            if task is not None and task.key not in self.previewed:
                tasks.append(task)
        for record in records.sections():  # answered if they come back
            if record.status in (SectionStatus.PENDING, SectionStatus.WAITING) and record.key not in seen:
                records.decide(SetStatus(record.key, SectionStatus.GONE, "not on the page"))
        # Replies the wiki refused before wait behind everything else: they cannot keep new questions waiting.
        refused = {record.key for record in records.sections() if record.refused_revision is not None
                   and record.status != SectionStatus.ANSWERED}
        tasks.sort(key=lambda task: task.key in refused)
        return Plan(tasks[:self.config.max_sections_per_pass], records.changes)

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
        mark_answered(subsections, self.bot, lambda: self.forum.own_edits(revision))
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
        if reason == "no signature yet":
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
        return Task(view.key, view, TaskKind.TOO_LONG if len(view.opening) > MAX_REQUEST_CHARS else TaskKind.QUESTION)

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
        if reason == "no signature yet":
            records.decide(SetStatus(section.key, SectionStatus.WAITING, reason))
            return None
        if reason:
            records.decide(Skip(section.key, reason, section.heading))
            return None
        kind = TaskKind.TOO_LONG if len(section.opening) > MAX_REQUEST_CHARS else TaskKind.QUESTION
        return Task(section.key, section, kind)

    def _followup_task(self, records: PlannedRecords, section: Section, followup: FollowUp | None, seen: set[str],
                       revision: int, kind: TaskKind = TaskKind.FOLLOW_UP) -> Task | None:
        """The task of answering *followup* (a comment under the bot's reply, or, as *kind* ``ping``, a ping of the
        bot in a question it has not answered), if it is due."""
        if followup is None:
            return None
        key = followup_key(section.key, followup.revision)
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

    def apply(self, changes: list[Change]) -> None:
        """Write the state changes a plan decided (:meth:`plan`), in the order they were decided, with the log
        lines and counters that go with them."""
        page = self.forum.title
        for change in changes:
            match change:
                case AddRecord(key, heading, status, fingerprint, copy_of, question):
                    if copy_of is not None:
                        log.info("%r is a copy of %r: it stays %s", key, copy_of, status)
                    self.state.add(page, key, heading, status, fingerprint, question)
                case SetStatus(key, status, reason):
                    self.state.set_status(page, key, status, reason)
                case AlreadyAnswered(key):
                    self.state.record_answered(page, key, None)
                    self.counter["already answered"] += 1
                case Skip(key, reason, heading):
                    self.state.record_skipped(page, key, reason)
                    self.counter["skipped"] += 1
                    if heading is not None:
                        log.info("skipping %r: %s", heading, reason)
                case DropDraft(key, heading, reason):
                    if self.review is None or not self.review.drop(key, reason):
                        self.state.record_skipped(page, key, reason)
                        log.info("skipping %r: %s", heading, reason)
                    self.counter["skipped"] += 1
                case Adopt(heading, key, old):
                    record = self.state.move(page, old, key)
                    if self.review is not None:
                        self.review.drafts.rekey(page, old, key)
                    log.info("%r is read under another identity (%r, %r before): it stays %s", heading, key, old,
                             record.status)
                case Fail(section, error, cause):
                    log.error("%r: cannot decide what to do", section.heading, exc_info=cause)
                    self.state.add(page, section.key, section.heading, SectionStatus.PENDING, section.fingerprint,
                                   section.question)
                    self._fail(Task(section.key, section, TaskKind.QUESTION), error)

    def skip_reason(self, section: Section) -> str | None:
        if not section.signatures:
            return "no signature yet"
        if section.author == self.bot and section.signatures[0].user == self.bot:  # not a question it put back
            return "started by the bot"
        if refusal := self.forum.refusal(section=section):
            return refusal
        if marked_resolved(section.text):
            return "the section is marked resolved"
        if settled := settled_by_asker(section):
            return settled
        if (self.config.skip_human_answered and len(section.opening) <= MAX_REQUEST_CHARS
                and answered_by_human(section, self.bot)):
            return "someone already posted a query in a reply"
        return None

    def treat(self, section: Section) -> None:
        """Answer *section*'s question now (``--section``), under the same error boundary as a pass."""
        self.state.add(self.forum.title, section.key, section.heading, SectionStatus.PENDING, section.fingerprint,
                       section.question)
        kind = TaskKind.TOO_LONG if len(section.opening) > MAX_REQUEST_CHARS else TaskKind.QUESTION
        self.handle(Task(section.key, section, kind), None, None)

    def handle(self, task: Task, attribution: Attribution | None, revision: int | None) -> bool:
        """Do one task under one error boundary: any failure is recorded and retried, never raised.

        A reply the wiki's check refuses (:class:`EditRefused`) is recorded as refused with the reason, to
        be tried again once the page is no longer at *revision*.  Returns ``False`` when the emergency stop
        was hit: the pass ends there (the task stays pending), and the watcher goes on, so edits resume
        once the stop page is emptied.
        """
        self.counter["read"] += 1
        self.kinds[task.key] = task.kind
        try:
            self._reply(task, attribution)
        except EmergencyStop as stop:
            log.warning("emergency stop: %s; editing nothing", stop)
            self.counter["stopped"] += 1
            return False
        except EditRefused as refused:  # MediaWiki's verdict on this reply, until the page changes
            self._refuse(task, str(refused), getattr(refused, "revision", revision))
        except (OSError, pywikibot.exceptions.Error) as error:  # the wiki or the network, for a while
            log.exception("%r: the wiki could not be read or written", task.section.heading)
            self._fail(task, f"{type(error).__name__}: {error}", transient=True)
        except Exception as error:
            log.exception("%r: unexpected error", task.section.heading)
            self._fail(task, f"{type(error).__name__}: {error}")
        return True

    def _reply(self, task: Task, attribution: Attribution | None) -> None:
        page, section = self.forum.title, task.section
        holds = "no_query"  # what the reply holds (bot.render.reply_kind)
        language = ""
        plain = None  # the reply in its plain form (bot.render.Markup), where the wiki refuses its templates
        addressed: tuple[str, ...] = ()  # whom the reply addresses: MediaWiki's check lets it link them
        if task.kind == TaskKind.TOO_LONG:
            log.info("%r is too long to read: replying with a note", section.heading)
            reply = TOO_LONG_NOTE
        else:
            request = (extract_request(section) if task.kind == TaskKind.QUESTION
                       else extract_followup(section, task.followup, self._previous_query(task)))
            if self.short_links is not None:
                asked = (section.opening if task.followup is None
                         else section.text[task.followup.start - section.start:task.followup.end - section.start])
                request = self.short_links.resolve(request, asked)
            earlier = self._recall(request, task.kind == TaskKind.QUESTION)
            result = self._refused_answer(task, request)
            if result is None:
                log.info("answering %r (%s)", section.heading, task.kind)
                result = self.answer(request)
                # Scrubbed before it is stored: an endpoint's error may echo a secret into the stop message.
                self.state.record_trace(page, task.key, scrub(result.to_dict()))
            if not result.language and task.kind == TaskKind.FOLLOW_UP:  # the model named none: the thread's language
                result.language = self._previous(task, "language") or ""
            if result.stop_reason in SERVICE_FAILURES:
                self._fail(task, f"{result.stop_reason}: {result.stop_message}", transient=True)
                return
            holds, language = reply_kind(result), result.language
            if holds != "query" and not self.config.reply_without_answer:
                self.state.record_skipped(page, task.key,
                                          f"no query found ({result.stop_reason}); staying silent")
                self.counter["no answer"] += 1
                return
            # With the review step the people answered are addressed when the approved draft is posted, never in
            # the draft.
            if self.config.ping_asker and self.review is None:
                addressed = addressees(section, task.key, self.bot)
            headers = self._headers(result)
            reply, plain = (render_reply(result, depth=task.depth, max_chars=self.config.reply_max_chars,
                                         credit=self.credit, earlier=earlier, addressed=addressed, headers=headers,
                                         markup=markup, stale_after_days=self.config.stale_after_days)
                             for markup in (Markup.TEMPLATES, Markup.LINKS))
        summary = edit_summary(summary_section(section), task.kind, holds)
        if self.review is not None:
            status = self.review.submit(task.key, section, task.kind, reply, summary, language, plain=plain)
            self.counter[status] += 1
            if status == "previewed":
                self.show(f"--- draft of the reply to {section.heading!r} (dry run: nothing was saved) ---\n{reply}")
                self.previewed.add(task.key)
            return
        # A question of its own (not a follow-up) is found by what it asks if it was merged into another thread.
        question = section.question if task.followup is None and not is_followup_key(task.key) else None
        outcome = self.forum.post_reply(task.key, reply, summary, attribution, addressed=addressed, question=question,
                                        plain=plain)
        if outcome.markup == Markup.LINKS and plain is not None:
            reply = plain
        if outcome.status == "posted":  # the answer covered the thread as the pass read it
            self.state.record_answered(page, task.key, outcome.revision,
                                       attribution.revision if attribution is not None else None)
            self.counter["written"] += 1
            if outcome.merged is not None and outcome.merged.within is not None:
                record = self.state.section(page, task.key)
                log.info("%r was merged into %r as a subsection (revision %d): answered there",
                         record.heading if record is not None else section.heading, outcome.merged.within.heading,
                         outcome.merged.origin)
        elif outcome.status == "previewed":
            form = (f" in its plain form (items as links, the query as a text block and a link), as MediaWiki's check "
                    f"refuses its normal form: {outcome.why_plain}" if outcome.markup == Markup.LINKS else "")
            self.show(f"--- reply to {section.heading!r}{form} (dry run: nothing was saved) ---\n{reply}\n"
                      f"--- diff ---\n{outcome.diff}")
            self.previewed.add(task.key)
            self.counter["previewed"] += 1
        elif outcome.status == "already-answered":
            self.state.record_answered(page, task.key, None)
            self.counter["already answered"] += 1
        elif outcome.status == "section-gone":  # pending still: answered if it comes back
            log.info("%r is no longer on the page", section.heading)
            self.counter["section gone"] += 1
        elif outcome.status == "opted-out":
            self.state.record_skipped(page, task.key, "opted out")
            self.counter["skipped"] += 1
        else:
            self._fail(task, f"not saved: {outcome.status}")

    def _headers(self, result: AgentResult) -> dict[str, str]:
        """The labels, in the reply's language, of the properties and classes that may head the preview's columns;
        none for an English reply (its variables' words stay), and none when the lookup fails: a header never costs
        the reply."""
        language = reply_language(result.language)
        properties = header_ids(result)
        if self.kb is None or language == "en" or not properties or not isinstance(result.answer, list):
            return {}
        try:
            hits = self.kb.describe(properties, language=language)
        except Exception as error:  # the words of the variables head the columns instead
            log.warning("the labels of %s in %r could not be read (%s): the preview's headers are the "
                        "variables' words", ", ".join(properties), language, error)
            return {}
        return {hit.id: hit.label for hit in hits if hit.label and hit.label != hit.id}

    def _recall(self, request: Request, new_question: bool) -> EarlierRequest | None:
        """Give *request* the solved examples most like it (never from its own thread); for a new question,
        the archived thread clearly about the same request, if one is among them."""
        if self.examples is None:
            return None
        first_month = f"{request.created:%Y-%m}" if request.created else "0000-00"
        try:
            matches = self.examples.similar(request.question, EXAMPLES_SHOWN, ThreadRef(request.heading, first_month))
            request.examples = prompt_examples(matches)
            same = next((match for match in matches if in_forum(match.example.link.split("#", 1)[0], self.forum.title)
                         and self.examples.same_request(request.question, match)), None) if new_question else None
            if same is None:
                return None
            used = [pid for pid in properties_in_order(same.example.sparql) if pid not in GENERIC_PROPERTIES]
            labels = self.examples.property_labels(used)
        except sqlite3.Error as error:  # the store is damaged or replaced: answer without examples
            log.warning("the example store cannot be read (%s); answering without examples", error)
            return None
        return EarlierRequest(same.example.link, same.example.date, same.example.author,
                              tuple((pid, labels.get(pid, "")) for pid in used))

    def _refused_answer(self, task: Task, request: Request) -> AgentResult | None:
        """The answer the wiki refused to let the bot post, for the same request: tried again as it was."""
        record = self.state.section(self.forum.title, task.key)
        if record is None or record.refused_revision is None or not record.trace \
                or record.trace.get("question") != request.question:
            return None
        log.info("posting the answer to %r the wiki refused before, the page having changed", task.section.heading)
        return AgentResult.from_dict(record.trace)

    def _previous_query(self, task: Task) -> str | None:
        """The bot's last final query in this section: from its stored trace, else read back from the page."""
        return self._previous(task, "final_sparql") or previous_query(task.section, self.bot)

    def _previous(self, task: Task, name: str) -> str | None:
        """Field *name* (``final_sparql``, ``language``) of the bot's last stored answer in this section that has
        one."""
        prefix = task.section.key + " / r"
        best: tuple[int, str] | None = None
        for record in self.state.sections(self.forum.title):
            if record.status != SectionStatus.ANSWERED or not record.trace or not record.trace.get(name):
                continue
            if record.key == task.section.key:
                order = 0
            elif record.key.startswith(prefix) and record.key[len(prefix):].isdigit():
                order = int(record.key[len(prefix):])
            else:
                continue
            if best is None or order > best[0]:
                best = (order, record.trace[name])
        return best[1] if best else None

    def _refuse(self, task: Task, reason: str, revision: int | None) -> None:
        """MediaWiki's check refused the reply: logged with its reason and recorded ``refused``, never
        ``failed``.  The same reply would meet the same verdict, so it is tried again (with the same answer)
        only once the page has changed since *revision*; ``--section`` tries again at once."""
        reason = redact(reason)
        if not self.forum.writes:
            log.warning("%r: a live run would be refused by the edit check: %s", task.section.heading, reason)
            self.show(f"--- reply to {task.section.heading!r} (dry run): refused by the edit check: {reason} ---")
            self.previewed.add(task.key)
            self.counter["refused"] += 1
            return
        log.warning("%r: refused by the edit check, tried again once the page changes: %s", task.section.heading,
                    reason)
        self.state.record_refused(self.forum.title, task.key, reason, revision)
        self.counter["refused"] += 1

    def _fail(self, task: Task, error: str, transient: bool = False) -> None:
        error = redact(error)  # an endpoint's error body may echo its key
        log.error("%r: %s", task.section.heading, error)
        self.state.record_failure(self.forum.title, task.key, error, self.config.retry_minutes * 60,
                                  self.config.max_attempts, transient=transient)
        self.counter["failed"] += 1
