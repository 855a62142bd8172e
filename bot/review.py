"""The review step: an operator approves each reply before it reaches the forum.

With ``review = true`` in ``bot.ini`` the bot writes each finished reply as a
draft, one section per draft, at the end of the review page (default
``User:<bot>/Review``)::

    == Draft 12 ==
    Reply to [[Wikidata:Request a query#Euler|Euler]] … (the bot's signature)
    <!-- draft 12 begins: the reply as it will be posted (its signature is added then) -->
    :The query below finds 3 results.
    …
    <!-- draft 12 ends -->

A reviewer (a user named in ``reviewers``) adds ``{{approved}}`` anywhere in
the section outside the draft, usually as a signed reply
(``:{{approved}} ~~~~``); ``{{rejected}}`` drops the draft.  What an approval
means is read from the review page's history (:func:`read_history`), never
from a signature:

* a mark counts only in the section it was added to, and only when a
  reviewer's revision added it there (a mark moved in from another section is
  its mover's, and is ignored and logged);
* the text posted is the draft as it stood in the revision that added the
  approval (edits a reviewer makes before approving are posted, later ones
  are not), signed, through the same checks as any reply (MediaWiki judges it
  before and after the save);
* every change to the draft's text since the bot's revision wrote it must
  come from a reviewer or the bot: a change by anyone else (a line inside the
  draft, a copy of its section under the same heading, a marker or the whole
  section removed) voids the draft, and its question is drafted anew; a
  draft a reviewer removed is dropped;
* the draft must have shown on the review page as it stood when approved
  (:func:`unseen`: an element someone left open above it can hide it) and
  must render on the forum exactly as on the review page
  (:func:`page_dependent`): otherwise it is refused.

Draft numbers are never reused: a new one is above every number the state,
the review page and the bot's edit summaries there have seen.  Before
posting, the draft is checked again: a forum section that is gone, already
answered by the bot, answered by someone with a query, or changed since the
draft (a new comment in the thread) drops it with its reason, and a changed
section is answered anew, as a new draft.  With ``ping_asker`` the asker is
addressed (``{{re|…}}``) when the draft is posted, never in the draft, so the
review page notifies no one.  What became of each draft
(posted, with a link to the forum's diff; rejected, by whom; dropped or
refused, and why; voided, by whose edit) is written into its section, signed
by the bot.  The drafts' statuses are kept in the state file
(:mod:`bot.drafts`); the review page is never cleaned up by the bot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import secrets
from collections import Counter
from dataclasses import dataclass

from pywikibot.exceptions import Error

from bot.drafts import CLOSED, WAITING, Draft, Drafts, DraftStatus
from bot.edit_check import parse, section_anchor, visibility_problems
from bot.forum import Section, mask_inert, normalize_user, plain_text
from bot.forum_decisions import addressee, answered_by_human
from bot.history import Attribution, Revision, latest_revisions, own_revisions
from bot.render import address_reply
from bot.state import SectionStatus, State
from bot.wikitext import encode
from bot.wiki import EditRefused, EmergencyStop, ForumPage, marked_resolved

log = logging.getLogger(__name__)
MARKS = {"approved": re.compile(r"\{\{\s*[Aa]pproved\s*(?:\|[^{}]*)?\}\}"),
         "rejected": re.compile(r"\{\{\s*[Rr]ejected\s*(?:\|[^{}]*)?\}\}")}
SIGNATURE = " ~~~~"
#: How a draft's reason begins when marks by users not in ``reviewers`` were ignored.
IGNORED = "ignored (not a reviewer): "


def _begins(number: int) -> str:
    return f"<!-- draft {number} begins: the reply as it will be posted (its signature is added then) -->"


def _ends(number: int) -> str:
    return f"<!-- draft {number} ends -->"


#: Why a draft is dropped and its question drafted again.
CHANGED_THREAD = "the thread changed since the draft"
#: Of the lines new in a thread drafted again, the last this many are shown to the reviewers, cut at NEWS_CHARS.
NEWS_LINES, NEWS_CHARS = 5, 300
_DRAFT_SUMMARY = re.compile(r"/\* Draft (\d+) \*/")


def _plain(text: str) -> str:
    """*text* (a user name, a reason) as words on the review page, never markup."""
    return encode(" ".join(text.split())[:300])


def page_dependent(site, text: str, shown_on: str, posted_on: str) -> str | None:
    """Why *text* would not look on *posted_on* as it looked on *shown_on*, or ``None``: MediaWiki renders it
    as both pages (markup that reads the page's name or namespace, a parser function or a template that does,
    would show there what the reviewer never saw)."""
    renders = [parse(site, title, text=text, props="text")["text"] for title in (shown_on, posted_on)]
    if renders[0] == renders[1]:
        return None
    return (f"the draft renders differently on {posted_on} than on {shown_on}, where it was reviewed (markup that "
            "depends on the page it is on)")


def unseen(site, title: str, page_text: str, number: int) -> str | None:
    """Why draft *number* did not show to a reviewer reading *page_text* (the review page *title* as approved),
    or ``None``.  Someone's element left open above it (a hidden ``<div>`` at the end of another section, a
    ``<font>`` reopened in every paragraph) can hide a draft whose own text nobody changed: MediaWiki parses
    the page with a word at the draft's end, which must show once, unhidden, under the draft's own heading."""
    found = _section(page_text, number)
    if found is None:
        return "the draft's section was not on the review page"
    start = page_text.find(found[0])
    end = page_text.find(_ends(number), start)
    if end < 0:
        return "the draft's end marker was not on the review page"
    word = "draftend" + secrets.token_hex(8)
    probed = page_text[:end] + word + "\n" + page_text[end:]
    parsed = parse(site, title, text=probed, props="text|sections")
    problems = visibility_problems(parsed["text"], word, section_anchor(parsed, probed, start))
    return f"the draft did not show on {title} as it was approved: {'; '.join(problems)}" if problems else None


def digest(section: Section) -> str:
    """A fingerprint of a forum section's text: a change in the thread changes it."""
    return hashlib.sha256(section.text.rstrip().encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Origin:
    """What a draft answers, written into its section as a comment, so that a state file lost meanwhile
    (its ``drafts`` table with it) can take the draft up again from the bot's own revision."""

    forum: str
    heading: str
    #: The forum section's :attr:`~bot.forum.Section.fingerprint`: it finds the section under any key.
    fingerprint: str
    kind: str
    #: The forum section's :func:`digest` when the draft was written.
    digest: str
    #: The forum edit's summary.
    summary: str

    def comment(self, number: int) -> str:
        # JSON's own escapes keep "--" and ">" out of the comment: nothing in it can end it.
        data = json.dumps(dataclasses.asdict(self), ensure_ascii=True)
        for char in "-<>":
            data = data.replace(char, f"\\u{ord(char):04x}")
        return f"<!-- draft {number} answers {data} -->"

    @classmethod
    def read(cls, page_text: str, number: int) -> Origin | None:
        found = re.search(rf"<!-- draft {number} answers (\{{[^\n]*?\}}) -->", page_text)
        if found is None:
            return None
        try:
            return cls(**json.loads(found[1]))
        except (ValueError, TypeError):
            return None


def draft_section(number: int, forum_title: str, heading: str, reply: str, origin: Origin, news: str = "") -> str:
    """The review page's section for one draft: a heading, a signed line linking the forum section (and *news*,
    what the thread gained since an earlier draft, below it), what the draft answers (a comment), the draft."""
    if not reply.endswith(SIGNATURE):
        raise ValueError("a draft is made from a signed reply")
    shown = encode(heading, cell=True).replace("]", "&#93;")
    # The marks are spelt, not wrapped in <nowiki>: an extension tag's strip marker can be taken by a look-alike
    # anyone saves on the page, and MediaWiki's check of the edit would then refuse every draft.
    intro = (f"Reply to [[{forum_title}#{shown}|{shown}]], written by the bot and waiting for review: add "
             f"<code>{encode('{{approved}}')}</code> to this section to post it (edit the draft first if "
             f"needed) or <code>{encode('{{rejected}}')}</code> to drop it.~~~~")
    news = f"{news}\n" if news else ""
    return (f"== Draft {number} ==\n{intro}\n{news}{origin.comment(number)}\n{_begins(number)}\n"
            f"{reply[:-len(SIGNATURE)]}\n{_ends(number)}")


@dataclass(frozen=True)
class DraftView:
    """A draft's section on the review page as it is now."""

    #: The draft's text between its markers, ``None`` when a marker is gone or the section is not one.
    text: str | None
    #: How many of each mark the section holds outside the draft (and outside comments and <nowiki>).
    marks: dict[str, int]
    #: How many sections of the page are headed "Draft N" for this number (one, unless someone copied it).
    copies: int = 1


_DRAFT_HEADING = re.compile(r"^==\s*Draft (\d+)\s*==[ \t]*$", re.MULTILINE)


def _section(page_text: str, number: int) -> tuple[str, str, int] | None:
    """The first section of draft *number*: its raw text, its text with inert parts blanked, and how many
    sections bear its heading."""
    masked = mask_inert(page_text)
    headings = [found for found in _DRAFT_HEADING.finditer(masked) if int(found[1]) == number]
    if not headings:
        return None
    heading = headings[0]
    following = re.compile(r"^==[^=].*$", re.MULTILINE).search(masked, heading.end())
    end = following.start() if following else len(page_text)
    return page_text[heading.start():end], masked[heading.start():end], len(headings)


def read_draft(page_text: str, number: int) -> DraftView | None:
    """Draft *number* on the review page, ``None`` when its section is gone."""
    found = _section(page_text, number)
    if found is None:
        return None
    raw, masked, copies = found
    begins, ends = raw.find(_begins(number)), raw.find(_ends(number))
    text = None
    outside = masked
    if 0 <= begins < ends:
        if copies == 1 and raw.count(_begins(number)) == 1:
            text = raw[begins + len(_begins(number)):ends].strip("\n")
        outside = masked[:begins] + masked[ends:]
    return DraftView(text, {name: len(mark.findall(outside)) for name, mark in MARKS.items()}, copies)


def numbers_on(page_text: str) -> list[int]:
    """The draft numbers whose headings stand on the review page."""
    return [int(found[1]) for found in _DRAFT_HEADING.finditer(page_text)]


@dataclass(frozen=True)
class Mark:
    """A mark in a draft's section: who added it, in which revision, and the draft's text then."""

    user: str
    revision: int
    #: The draft's text as it stood when the mark was added: what an approval approves.
    draft: str | None


@dataclass(frozen=True)
class History:
    """What the review page's history says of one draft, from the bot's revision that wrote it."""

    #: The marks still in the section, each with the revision that added it, by mark name.
    marks: dict[str, list[Mark]]
    #: The first revision by someone neither a reviewer nor the bot that changed the draft's text.
    voided_by: Revision | None = None


def read_history(revisions: list[Revision], number: int, trusted: set[str], written: str) -> History:
    """Who added each mark still in draft *number*'s section, and whether anyone not *trusted* (the reviewers
    and the bot) changed its text from *written*, the text the bot wrote; *revisions* start with the bot's own
    that wrote the draft.

    A mark belongs to the revision that made the section's count of it grow, in that section only: a mark
    moved in from another section, or a section copied under the draft's heading, is its mover's.
    """
    marks: dict[str, list[Mark]] = {name: [] for name in MARKS}
    current: str | None = written
    for revision in revisions:
        view = read_draft(revision.text, number)
        text = view.text if view is not None else None
        if text != current and normalize_user(revision.user) not in trusted:
            return History(marks, revision)
        current = text
        for name, count in (view.marks if view else {name: 0 for name in MARKS}).items():
            while len(marks[name]) < count:
                marks[name].append(Mark(normalize_user(revision.user), revision.id, current))
            del marks[name][count:]
    return History(marks)


@dataclass
class Review:
    """The review page of one forum page: drafts written there, approvals read back, approved drafts posted."""

    forum: ForumPage
    page: ForumPage
    state: State
    reviewers: list[str]
    #: Address the asker in the reply as posted (bot.ini ``ping_asker``); never in the draft.
    ping_asker: bool = False

    def __post_init__(self) -> None:
        self.drafts = Drafts(self.state.connection)
        self.reviewers = [normalize_user(name) for name in self.reviewers]
        #: Each waiting draft's number, with the review page's revision whose history showed nothing to do.
        self._unchanged: dict[int, int] = {}

    def next_number(self) -> int:
        """A number no draft ever had: above the state's, the review page's and the bot's edit summaries there
        (a lost state file starts counting again, the review page keeps its drafts)."""
        used = [self.drafts.next_number() - 1]
        if self.page.latest_revision() is not None:
            used += numbers_on(self.page.read()[0])
            used += [int(found[1]) for edit in own_revisions(self.page.site, self.page.title, self.page.username)
                     if (found := _DRAFT_SUMMARY.match(edit.comment))]
        return max(used) + 1

    def submit(self, key: str, section: Section, kind: str, reply: str, summary: str) -> str:
        """Put *reply* on the review page as a draft; the outcome's status (``drafted``, ``previewed``, …)."""
        number = self.next_number()
        origin = Origin(self.forum.title, section.heading, section.fingerprint, kind, digest(section), summary)
        text = draft_section(number, self.forum.title, section.heading, reply, origin, self._news(key, section))
        outcome = self.page.add_section(text, f"/* Draft {number} */ a reply to review: {summary}")
        if outcome.status == "posted":
            self.drafts.add(number, self.forum.title, key, section.heading, kind, reply[:-len(SIGNATURE)],
                            summary, digest(section), outcome.revision, thread=section.text)
            self.state.set_status(self.forum.title, key, SectionStatus.DRAFTED, f"draft {number} on {self.page.title}")
            log.info("%r: drafted as draft %d on %s", section.heading, number, self.page.title)
            return "drafted"
        return outcome.status

    def recover(self) -> Counter:
        """Take up the drafts the state does not know (a lost state file took their records with it, or the
        bot was stopped between writing a draft and recording it), from the bot's own revisions of the review
        page: one still waiting there is waiting again, for the forum section it was written for (its record
        is found again by its fingerprint, see :meth:`bot.planner.PlannedRecords.adoptable`); one whose outcome
        the bot wrote there is recorded as closed."""
        done: Counter = Counter()
        if self.page.latest_revision() is None:
            return done
        latest = own_revisions(self.page.site, self.page.title, self.page.username, latest_only=True)
        found = _DRAFT_SUMMARY.match(latest[-1].comment) if latest else None
        if found is None or self.drafts.get(int(found[1])) is not None:  # the state knows the bot's last edit
            return done
        edits: dict[int, list] = {}
        for edit in own_revisions(self.page.site, self.page.title, self.page.username):
            if (found := _DRAFT_SUMMARY.match(edit.comment)) is not None:
                edits.setdefault(int(found[1]), []).append(edit)
        for number, made in sorted(edits.items()):
            created = [edit for edit in made if "*/ a reply to review" in edit.comment]
            if self.drafts.get(number) is not None or not created:
                continue
            [written] = latest_revisions(self.page.site, self.page.title, created[0].revision,
                                         since=created[0].revision) or [None]
            origin = Origin.read(written.text, number) if written is not None else None
            view = read_draft(written.text, number) if written is not None else None
            if origin is None or origin.forum != self.forum.title or view is None or view.text is None:
                continue
            outcomes = [edit.comment.split("*/", 1)[1].strip() for edit in made if edit not in created]
            status = next((DraftStatus(word) for word in reversed(outcomes) if word in CLOSED),
                          DraftStatus.DRAFTED)
            known = [record.key for record in self.state.sections(self.forum.title)
                     if record.fingerprint == origin.fingerprint and record.status != SectionStatus.ANSWERED]
            key = known[-1] if known else f"draft {number} (recovered)"
            self.drafts.add(number, self.forum.title, key, origin.heading, origin.kind, view.text, origin.summary,
                            origin.digest, created[0].revision, status=status)
            if status == DraftStatus.DRAFTED:
                self.state.add(self.forum.title, key, origin.heading, SectionStatus.DRAFTED, origin.fingerprint)
                self.state.set_status(self.forum.title, key, SectionStatus.DRAFTED,
                                      f"draft {number} on {self.page.title}")
                log.info("draft %d for %r is waiting on %s: taken up again", number, origin.heading,
                         self.page.title)
            done["recovered" if status == DraftStatus.DRAFTED else "recovered as closed"] += 1
        return done

    def _news(self, key: str, section: Section) -> str:
        """For a question drafted again because its thread changed: the lines added since the earlier draft, as
        plain words, so that the reviewers see what the new draft answers."""
        earlier = self.drafts.latest(self.forum.title, key)
        if earlier is None or earlier.thread is None or CHANGED_THREAD not in (earlier.reason or ""):
            return ""
        before = set(earlier.thread.split("\n"))
        new = [words for line in section.text.split("\n") if line not in before and (words := plain_text(line))]
        lines = [f"The thread changed since draft {earlier.number}, which was dropped; new in it:"]
        lines += [f":* {_plain(words[:NEWS_CHARS])}" for words in new[-NEWS_LINES:]]
        return "\n".join(lines)

    def run(self, attribution: Attribution | None) -> Counter:
        """Read the review page once: post what a reviewer approved, drop what was rejected, went stale or was
        changed by someone else."""
        done: Counter = Counter()
        waiting = self.drafts.waiting(self.forum.title)
        if not waiting:
            return done
        text, revision = self.page.read()
        revisions: list[Revision] | None = None  # the page's history since the oldest draft looked at, read once
        for draft in waiting:
            view = read_draft(text, draft.number)
            untouched = view is not None and view.text == draft.reply and view.copies == 1
            if self._unchanged.get(draft.number) == revision or (untouched and not any(view.marks.values())):
                continue
            if revisions is None:
                revisions = latest_revisions(self.page.site, self.page.title, revision,
                                             since=min(item.review_revision or 0 for item in waiting))
            history = read_history([item for item in revisions if item.id >= (draft.review_revision or 0)],
                                   draft.number, {*self.reviewers, normalize_user(self.page.username)}, draft.reply)
            if history.voided_by is not None:  # a stranger's edit, a removed marker or section included
                by = history.voided_by
                self._close(draft, DraftStatus.VOIDED, f"revision {by.id} by {normalize_user(by.user)}, who is not "
                            "a reviewer, changed the draft", SectionStatus.PENDING)
                self._note(draft, DraftStatus.VOIDED, f": [[Special:Diff/{by.id}|an edit]] by {_plain(by.user)}, who "
                           "is not a reviewer, changed this draft; nothing was posted, and the question will be "
                           "drafted anew.")
                done[DraftStatus.VOIDED] += 1
                continue
            if view is None or (view.text is None and view.copies == 1):  # a reviewer took it away
                what = "section" if view is None else "begin or end marker"
                self._close(draft, DraftStatus.DROPPED, f"a reviewer removed the draft's {what} from "
                            f"{self.page.title}", SectionStatus.SKIPPED)
                done[DraftStatus.DROPPED] += 1
                continue
            done[self._decide(draft, history, attribution, {item.id: item.text for item in revisions})] += 1
            if self.drafts.get(draft.number).status in WAITING:
                self._unchanged[draft.number] = revision
        return done

    def _decide(self, draft: Draft, history: History, attribution: Attribution | None,
                texts: dict[int, str]) -> str:
        """Post, reject or leave a draft whose history was read (*texts*: the review page's, by revision): what
        happened."""
        ignored = sorted({f"{{{{{name}}}}} by {mark.user}" for name, marks in history.marks.items()
                          for mark in marks if mark.user not in self.reviewers})
        said = set((draft.reason or "").removeprefix(IGNORED).split(", "))
        if set(ignored) - said:  # said once per draft and mark, not on every pass while the draft waits
            log.warning("draft %d: %s ignored: not in reviewers", draft.number,
                        ", ".join(mark for mark in ignored if mark not in said))
            self.drafts.set(draft.number, reason=IGNORED + ", ".join(ignored))
        rejecters = [mark.user for mark in history.marks["rejected"] if mark.user in self.reviewers]
        approvals = [mark for mark in history.marks["approved"] if mark.user in self.reviewers]
        if rejecters:
            self._close(draft, DraftStatus.REJECTED, "rejected by " + ", ".join(rejecters), SectionStatus.REJECTED)
            self._note(draft, DraftStatus.REJECTED, f" by {_plain(', '.join(rejecters))}: nothing was posted.")
            return DraftStatus.REJECTED
        if not approvals:
            return "waiting"
        approval = approvals[-1]
        if approval.draft is None:
            reason = "the draft's begin or end marker was gone when it was approved"
            self._close(draft, DraftStatus.DROPPED, reason, SectionStatus.SKIPPED)
            self._note(draft, DraftStatus.DROPPED, f": {reason}; nothing was posted.")
            return DraftStatus.DROPPED
        hidden = unseen(self.page.site, self.page.title, texts[approval.revision], draft.number)
        if hidden:
            self._close(draft, DraftStatus.REFUSED, hidden, SectionStatus.PENDING)
            self._note(draft, DraftStatus.REFUSED, f": {_plain(hidden)}; nothing was posted, and the question will "
                       "be drafted anew.")
            return DraftStatus.REFUSED
        return self._post(draft, approval, attribution)

    def _post(self, draft: Draft, approval: Mark, attribution: Attribution | None) -> str:
        """Post the draft as it stood when it was approved, signed, unless it went stale; what happened."""
        self.drafts.set(draft.number, DraftStatus.APPROVED)
        page_text, revision = self.forum.read()
        section = self.forum.locate(page_text, draft.key, attribution, self.forum.reading(page_text, revision),
                                    revision)
        asker = addressee(section, draft.key) if self.ping_asker and section is not None else None
        posted = address_reply(approval.draft.rstrip(), asker)
        if section is not None and section.answered and posted in section.text:
            # Posted before the bot could record it (killed after the save): recorded now, never posted twice.
            revision = section.replies[-1].owner if section.replies[-1].owner > 0 else None
            return self._posted(draft, approval, revision)
        stale = self._stale(draft, section)
        if stale:
            reopen = SectionStatus.PENDING if stale == CHANGED_THREAD else SectionStatus.SKIPPED
            self._close(draft, DraftStatus.DROPPED, "stale: " + stale, reopen)
            again = (", and the question will be drafted anew with the thread as it is now"
                     if reopen == SectionStatus.PENDING else "")
            self._note(draft, DraftStatus.DROPPED, f": {stale}; nothing was posted{again}.")
            return DraftStatus.DROPPED
        unlike = page_dependent(self.page.site, approval.draft, self.page.title, self.forum.title)
        if unlike:
            self._close(draft, DraftStatus.REFUSED, unlike, SectionStatus.REFUSED)
            self._note(draft, DraftStatus.REFUSED, f": {_plain(unlike)}; nothing was posted.")
            return DraftStatus.REFUSED
        try:
            outcome = self.forum.post_reply(draft.key, posted + SIGNATURE, draft.summary,
                                            attribution)
        except EditRefused as refused:
            self._close(draft, DraftStatus.REFUSED, f"refused by the edit check: {refused}", SectionStatus.REFUSED)
            self._note(draft, DraftStatus.REFUSED, f" by the edit check: {_plain(str(refused))}; nothing was "
                       "posted.")
            return DraftStatus.REFUSED
        if outcome.status == "posted":
            return self._posted(draft, approval, outcome.revision)
        if outcome.status == "previewed":
            self.drafts.set(draft.number, DraftStatus.DRAFTED)
            log.info("draft %d approved; a live run would post it:", draft.number)
            for line in (outcome.diff or "").split("\n"):  # a line of the log each: the log writes one a record
                log.info("  %s", line)
            return "previewed"
        self._close(draft, DraftStatus.DROPPED, f"stale: {outcome.status}", SectionStatus.SKIPPED)
        self._note(draft, DraftStatus.DROPPED, f": {_plain(outcome.status)}; nothing was posted.")
        return DraftStatus.DROPPED

    def _posted(self, draft: Draft, approval: Mark, revision: int | None) -> str:
        self.drafts.set(draft.number, DraftStatus.POSTED, forum_revision=revision)
        self.state.record_answered(self.forum.title, draft.key, revision)
        log.info("draft %d posted to %r (revision %s) as %s approved it (revision %d)", draft.number, draft.heading,
                 revision, approval.user, approval.revision)
        where = f"as [[Special:Diff/{revision}|this edit]] of the forum" if revision else "to the forum"
        self._note(draft, DraftStatus.POSTED, f" {where}, as {_plain(approval.user)} approved it in "
                   f"[[Special:Diff/{approval.revision}|this edit]].")
        return DraftStatus.POSTED

    def _stale(self, draft: Draft, section: Section | None) -> str | None:
        """Why the forum section no longer wants this draft, or ``None``."""
        if section is None:
            return "the section is no longer on the page"
        if section.answered:
            return "the bot has replied there meanwhile"
        if marked_resolved(section.text):
            return "the section was marked resolved meanwhile"
        if draft.kind == "question" and answered_by_human(section, normalize_user(self.forum.username)):
            return "someone posted a query there meanwhile"
        if digest(section) != draft.digest:
            return CHANGED_THREAD
        return None

    def _close(self, draft: Draft, status: DraftStatus, reason: str, section_status: SectionStatus) -> None:
        self.drafts.set(draft.number, status, reason)
        self.state.set_status(self.forum.title, draft.key, section_status, f"draft {draft.number} {status}: {reason}")
        log.info("draft %d for %r %s: %s", draft.number, draft.heading, status, reason)

    def _note(self, draft: Draft, outcome: DraftStatus, words: str) -> None:
        """Write what became of the draft (*outcome*, one of :data:`CLOSED`, then *words*) into its section of
        the review page, signed.  The outcome is recorded first: a note that cannot be written is logged, and
        the outcome stands."""
        line = f":'''{outcome.capitalize()}'''{words}{SIGNATURE}"
        try:
            written = self.page.add_note(f"Draft {draft.number}", line, f"/* Draft {draft.number} */ {outcome}")
        except (EditRefused, EmergencyStop, Error) as error:
            log.warning("draft %d: its outcome could not be written on %s: %s", draft.number, self.page.title,
                        error)
            return
        if written.status not in ("posted", "previewed"):
            log.warning("draft %d: its outcome was not written on %s (%s)", draft.number, self.page.title,
                        written.status)
