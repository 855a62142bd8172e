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
(``:{{approved}} ~~~~``), and the bot posts the draft's text as it stands
then, edits included, signed, through the same checks as any reply (MediaWiki
judges it before and after the save); with ``ping_asker`` the asker is
addressed (``{{re|…}}``) then, never in the draft, so the review page
notifies no one.  ``{{rejected}}`` drops it.  Who added
a mark is read from the review page's history, never from a signature: a mark
added by anyone else is ignored and logged.  Before posting, the draft is
checked again: a forum section that is gone, already answered by the bot,
answered by someone with a query, or changed since the draft (a new comment
in the thread) drops it with its reason, and a changed section is answered
anew, as a new draft.  The drafts' statuses are kept in the state file
(:mod:`bot.drafts`); the review page is never cleaned up by the bot.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass

from bot.drafts import Draft, Drafts
from bot.forum import Section, addressee, answered_by_human, mask_inert, normalize_user
from bot.history import Attribution, Revision, revisions_after
from bot.render import address_reply
from bot.state import State
from bot.wikitext import encode
from bot.wiki import EditRefused, ForumPage

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


def digest(section: Section) -> str:
    """A fingerprint of a forum section's text: a change in the thread changes it."""
    return hashlib.sha256(section.text.rstrip().encode("utf-8", "surrogatepass")).hexdigest()


def draft_section(number: int, forum_title: str, heading: str, reply: str) -> str:
    """The review page's section for one draft: a heading, a signed line linking the forum section, the draft."""
    if not reply.endswith(SIGNATURE):
        raise ValueError("a draft is made from a signed reply")
    shown = encode(heading, cell=True).replace("]", "&#93;")
    intro = (f"Reply to [[{forum_title}#{shown}|{shown}]], written by the bot and waiting for review: add "
             "<code><nowiki>{{approved}}</nowiki></code> to this section to post it (edit the draft first if "
             "needed) or <code><nowiki>{{rejected}}</nowiki></code> to drop it.~~~~")
    return f"== Draft {number} ==\n{intro}\n{_begins(number)}\n{reply[:-len(SIGNATURE)]}\n{_ends(number)}"


@dataclass(frozen=True)
class DraftView:
    """A draft's section on the review page as it is now."""

    #: The draft's text between its markers, ``None`` when a marker is gone.
    text: str | None
    #: How many of each mark the section holds outside the draft (and outside comments and <nowiki>).
    marks: dict[str, int]


def _section(page_text: str, number: int) -> tuple[str, str] | None:
    """The section of draft *number*: its raw text and its text with inert parts blanked."""
    masked = mask_inert(page_text)
    heading = re.search(rf"^==\s*Draft {number}\s*==[ \t]*$", masked, re.MULTILINE)
    if heading is None:
        return None
    following = re.compile(r"^==[^=].*$", re.MULTILINE).search(masked, heading.end())
    end = following.start() if following else len(page_text)
    return page_text[heading.start():end], masked[heading.start():end]


def read_draft(page_text: str, number: int) -> DraftView | None:
    """Draft *number* on the review page, ``None`` when its section is gone."""
    found = _section(page_text, number)
    if found is None:
        return None
    raw, masked = found
    begins, ends = raw.find(_begins(number)), raw.find(_ends(number))
    text = None
    outside = masked
    if 0 <= begins < ends:
        text = raw[begins + len(_begins(number)):ends].strip("\n")
        outside = masked[:begins] + masked[ends:]
    return DraftView(text, {name: len(mark.findall(outside)) for name, mark in MARKS.items()})


def mark_adders(revisions: list[Revision], number: int) -> dict[str, list[str]]:
    """Who added each mark still in draft *number*'s section, from the revisions made since the draft."""
    adders: dict[str, list[str]] = {name: [] for name in MARKS}
    for revision in revisions:
        view = read_draft(revision.text, number)
        marks = view.marks if view else {name: 0 for name in MARKS}
        for name, count in marks.items():
            while len(adders[name]) < count:
                adders[name].append(normalize_user(revision.user))
            del adders[name][count:]
    return adders


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

    def submit(self, key: str, section: Section, kind: str, reply: str, summary: str) -> str:
        """Put *reply* on the review page as a draft; the outcome's status (``drafted``, ``previewed``, …)."""
        number = self.drafts.next_number()
        text = draft_section(number, self.forum.title, section.heading, reply)
        outcome = self.page.add_section(text, f"/* Draft {number} */ a reply to review: {summary}")
        if outcome.status == "posted":
            self.drafts.add(number, self.forum.title, key, section.heading, kind, reply[:-len(SIGNATURE)],
                            summary, digest(section), outcome.revision)
            self.state.set_status(self.forum.title, key, "drafted", f"draft {number} on {self.page.title}")
            log.info("%r: drafted as draft %d on %s", section.heading, number, self.page.title)
            return "drafted"
        return outcome.status

    def run(self, attribution: Attribution | None) -> Counter:
        """Read the review page once: post what a reviewer approved, drop what was rejected or went stale."""
        done: Counter = Counter()
        waiting = self.drafts.waiting(self.forum.title)
        if not waiting:
            return done
        text, revision = self.page.read()
        for draft in waiting:
            view = read_draft(text, draft.number)
            if view is None or view.text is None:
                what = "section" if view is None else "begin or end marker"
                self._close(draft, "dropped", f"the draft's {what} is gone from {self.page.title}", "skipped")
                done["dropped"] += 1
                continue
            if not any(view.marks.values()):
                continue
            revisions = revisions_after(self.page.site, self.page.title, draft.review_revision or 0, revision)
            if revisions is None:
                log.warning("draft %d: too many edits of %s since it was written to tell who marked it; "
                            "approve it again in a new edit later", draft.number, self.page.title)
                continue
            adders = mark_adders(revisions, draft.number)
            ignored = sorted({f"{{{{{name}}}}} by {user}" for name, users in adders.items() for user in users
                              if user not in self.reviewers})
            said = set((draft.reason or "").removeprefix(IGNORED).split(", "))
            if set(ignored) - said:  # said once per draft and mark, not on every pass while the draft waits
                log.warning("draft %d: %s ignored: not in reviewers", draft.number,
                            ", ".join(mark for mark in ignored if mark not in said))
                self.drafts.set(draft.number, reason=IGNORED + ", ".join(ignored))
            if any(user in self.reviewers for user in adders["rejected"]):
                self._close(draft, "rejected", "rejected by " + ", ".join(adders["rejected"]), "rejected")
                done["rejected"] += 1
            elif any(user in self.reviewers for user in adders["approved"]):
                done[self._post(draft, view.text, attribution)] += 1
        return done

    def _post(self, draft: Draft, text: str, attribution: Attribution | None) -> str:
        """Post an approved draft's text, signed, unless it went stale; what happened."""
        self.drafts.set(draft.number, "approved")
        page_text, _ = self.forum.read()
        section = self.forum.locate(page_text, draft.key, attribution)
        stale = self._stale(draft, section)
        if stale:
            reopen = "pending" if stale == "the thread changed since the draft" else "skipped"
            self._close(draft, "dropped", "stale: " + stale, reopen)
            return "dropped"
        try:
            asker = addressee(section, draft.key) if self.ping_asker else None
            outcome = self.forum.post_reply(draft.key, address_reply(text.rstrip(), asker) + SIGNATURE, draft.summary,
                                            attribution)
        except EditRefused as refused:
            self._close(draft, "dropped", f"refused by the edit check: {refused}", "refused")
            return "refused"
        if outcome.status == "posted":
            self.drafts.set(draft.number, "posted", forum_revision=outcome.revision)
            self.state.record_answered(self.forum.title, draft.key, outcome.revision)
            log.info("draft %d posted to %r (revision %d)", draft.number, draft.heading, outcome.revision)
            return "posted"
        if outcome.status == "previewed":
            self.drafts.set(draft.number, "drafted")
            log.info("draft %d approved; a live run would post it:\n%s", draft.number, outcome.diff)
            return "previewed"
        self._close(draft, "dropped", f"stale: {outcome.status}", "skipped")
        return "dropped"

    def _stale(self, draft: Draft, section: Section | None) -> str | None:
        """Why the forum section no longer wants this draft, or ``None``."""
        if section is None:
            return "the section is no longer on the page"
        if section.answered:
            return "the bot has replied there meanwhile"
        if draft.kind == "question" and answered_by_human(section, normalize_user(self.forum.username)):
            return "someone posted a query there meanwhile"
        if digest(section) != draft.digest:
            return "the thread changed since the draft"
        return None

    def _close(self, draft: Draft, status: str, reason: str, section_status: str) -> None:
        self.drafts.set(draft.number, status, reason)
        self.state.set_status(self.forum.title, draft.key, section_status, f"draft {draft.number} {status}: {reason}")
        log.info("draft %d for %r %s: %s", draft.number, draft.heading, status, reason)
