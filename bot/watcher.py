"""The watcher: one pass over the forum page finds what to answer, answers it, and counts what happened.

Shaped like pywikibot's ``BaseBot``: :meth:`Watcher.plan` hands the page to
the planning rules (:class:`bot.planner.Planner`), which turn it into tasks
with skip rules applied and the state changes they need, writing nothing;
:meth:`Watcher.apply` writes those changes before any task runs;
:meth:`Watcher.handle` does one task, and counters are printed at the end.
Who wrote which line comes from :mod:`bot.attribution`.  A task is a new section's question, a
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
from collections import Counter
from collections.abc import Callable
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
from bot.attribution import PageHistory, addressees
from bot.forum import (
    MAX_REQUEST_CHARS, FollowupKey, Reading, Request, Section, extract_followup, extract_request, in_forum,
    is_followup_key, normalize_user, parse_sections, previous_query, summary_section,
)
from bot.forum_decisions import mark_answered
from bot.history import Attribution
from bot.kinds import ReplyKind
from bot.outcomes import changes, snapshot
from bot.planner import (
    AddRecord, AlreadyAnswered, Adopt, Change, DropDraft, Fail, Plan, Planner, SetStatus, Skip, Task, TaskKind,
    task_kind,
)
from agent.messages import reply_language
from bot.render import Credit, EarlierRequest, Markup, edit_summary, header_ids, render_reply, reply_kind
from bot.review import Review
from bot.short_links import ShortLinks
from bot.state import SectionStatus, State
from bot.wiki import EmergencyStop, ForumPage, PostStatus

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

    def _kind_of(self, key: str) -> TaskKind | None:
        """What the reply recorded under *key* answers (``ping``, ``follow-up``…), when this process or a draft
        knows it."""
        if key in self.kinds:
            return self.kinds[key]
        draft = self.review.drafts.latest(self.forum.title, key) if self.review is not None else None
        return TaskKind(draft.kind) if draft is not None else None

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
        return PageHistory(self.forum.site, self.forum.title).attribute(stored, text, revision, since)

    @property
    def planner(self) -> Planner:
        """The planning rules, for this page and this bot, with the wiki's opt-out gate and the bot's own edits."""
        return Planner(self.forum.title, self.bot, self.config, self.forum.refusal, self.forum.own_edits,
                       self.previewed)

    def plan(self, text: str, sections: list[Section], revision: int, reading: Reading | None = None,
             backlog_until: int | None = None, attribution: Attribution | None = None) -> Plan:
        """The tasks due on this page and the state changes decided with them (:meth:`bot.planner.Planner.plan`):
        nothing is written (:meth:`apply` writes them)."""
        return self.planner.plan(self.state.sections(self.forum.title), text, sections, revision, reading,
                                 backlog_until, attribution)

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

    def treat(self, section: Section) -> None:
        """Answer *section*'s question now (``--section``), under the same error boundary as a pass."""
        self.state.add(self.forum.title, section.key, section.heading, SectionStatus.PENDING, section.fingerprint,
                       section.question)
        self.handle(Task(section.key, section, task_kind(section)), None, None)

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
        holds = ReplyKind.NO_QUERY  # what the reply holds (bot.render.reply_kind)
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
            holds, language = ReplyKind(reply_kind(result)), result.language
            if holds != ReplyKind.QUERY and not self.config.reply_without_answer:
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
            self.counter[str(status)] += 1  # counted by its name: the pass's log line prints it
            if status == PostStatus.PREVIEWED:
                self.show(f"--- draft of the reply to {section.heading!r} (dry run: nothing was saved) ---\n{reply}")
                self.previewed.add(task.key)
            return
        # A question of its own (not a follow-up) is found by what it asks if it was merged into another thread.
        question = section.question if task.followup is None and not is_followup_key(task.key) else None
        outcome = self.forum.post_reply(task.key, reply, summary, attribution, addressed=addressed, question=question,
                                        plain=plain)
        if outcome.markup == Markup.LINKS and plain is not None:
            reply = plain
        match outcome.status:
            case PostStatus.POSTED:  # the answer covered the thread as the pass read it
                self.state.record_answered(page, task.key, outcome.revision,
                                           attribution.revision if attribution is not None else None)
                self.counter["written"] += 1
                if outcome.merged is not None and outcome.merged.within is not None:
                    record = self.state.section(page, task.key)
                    log.info("%r was merged into %r as a subsection (revision %d): answered there",
                             record.heading if record is not None else section.heading,
                             outcome.merged.within.heading, outcome.merged.origin)
            case PostStatus.PREVIEWED:
                form = (f" in its plain form (items as links, the query as a text block and a link), as MediaWiki's "
                        f"check refuses its normal form: {outcome.why_plain}" if outcome.markup == Markup.LINKS
                        else "")
                self.show(f"--- reply to {section.heading!r}{form} (dry run: nothing was saved) ---\n{reply}\n"
                          f"--- diff ---\n{outcome.diff}")
                self.previewed.add(task.key)
                self.counter[str(PostStatus.PREVIEWED)] += 1
            case PostStatus.ALREADY_ANSWERED:
                self.state.record_answered(page, task.key, None)
                self.counter["already answered"] += 1
            case PostStatus.SECTION_GONE:  # pending still: answered if it comes back
                log.info("%r is no longer on the page", section.heading)
                self.counter["section gone"] += 1
            case PostStatus.OPTED_OUT:
                self.state.record_skipped(page, task.key, "opted out")
                self.counter["skipped"] += 1
            case _:
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
        best: tuple[int, str] | None = None
        for record in self.state.sections(self.forum.title):
            if record.status != SectionStatus.ANSWERED or not record.trace or not record.trace.get(name):
                continue
            followup = FollowupKey.parse(record.key)
            if record.key == task.section.key:
                order = 0
            elif followup is not None and followup.section == task.section.key:
                order = followup.revision
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
