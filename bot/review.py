"""The review step: an operator approves each reply before it reaches the forum.

With ``review = true`` in ``bot.ini`` the bot writes each finished reply as a
draft, one section per draft, at the end of the review page (default
``User:<bot>/Review``)::

    == Draft 12: Euler (waiting) ==
    Reply to [[Wikidata:Request a query#Euler|Euler]] … (the bot's signature)
    <!-- draft 12 begins: the reply as it will be posted (its signature is added then) -->
    :The query below finds 3 results.
    …
    <!-- draft 12 ends -->

A reviewer (a user named in ``reviewers``) adds ``{{approved}}`` anywhere in
the section outside the draft, usually as a signed reply
(``:{{approved}} ~~~~``); ``{{rejected}}`` drops the draft.  What an approval
means is read from the review page's history (:func:`read_history`), never
from a signature or from what a style looks like:

* a draft's section belongs to the bot and its reviewers, and is known by its
  history: the section holding the begin marker a revision of the bot's wrote,
  whatever its heading says (a reviewer may rename it);
* a mark counts only when a reviewer's revision added it to that section while
  every line of it came from the bot's or a reviewer's revisions (a mark moved
  in from another section is its mover's; one added while someone else's line
  stood there, a fake draft above the real one or an element hiding it, counts
  for nothing);
* a change there by anyone else (a line added, changed or removed, a marker or
  the whole section removed) is undone by the bot, one edit of the review page
  whose summary names whose change it undid; the draft keeps waiting, so a
  stranger can neither reach the forum nor keep a question from its answer;
  a draft a reviewer removed (its section or a marker) is dropped;
* lines someone else wrote above a waiting draft since it was written (an
  element left open there hides it) are taken out the same way, and a mark
  added while they stood counts for nothing;
* the draft must have shown on the review page as it stood when approved: no
  element may be open where its section starts (:func:`unseen`, read from the
  page's structure, never from a style), otherwise (an element opened before
  the draft was written) it is refused and drafted anew;
* what is posted is the draft as it stood in the revision that added the
  approval, read back as data and rendered again by the bot
  (:mod:`bot.approved`): the reviewer's words, query and preview cells go as
  text, exactly as the model's are escaped, and nothing a reviewer writes
  reaches the forum as markup; the outcome note says which markup showed as
  text.  The reply then goes through the same checks as any reply (MediaWiki
  judges it before and after the save).

Draft numbers are never reused: a new one is above every number the state,
the review page and the bot's edit summaries there have seen.  Before
posting, the draft is checked again: a forum section that is gone, already
answered by the bot, answered by someone with a query, or changed since the
draft (a new comment in the thread) drops it with its reason, and a changed
section is answered anew, as a new draft.  With ``ping_asker`` the asker is
addressed (``{{re|…}}``) when the draft is posted, never in the draft, so the
review page notifies no one.  What became of each draft
(posted, with a link to the forum's diff and what showed as text; rejected,
by whom; dropped or refused, and why) is written into its section, signed by
the bot, and its heading's status changes in the same edit (``waiting`` to
``posted``, ``rejected``, ``dropped`` or ``refused``), so the page's table of
contents reads like a board; a heading a reviewer renamed is left as they
named it.  The drafts' statuses are kept in the state file
(:mod:`bot.drafts`); the review page is never cleaned up by the bot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import secrets
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

from pywikibot.exceptions import Error

from bot.approved import Rerendered, rerender
from bot.drafts import CLOSED, WAITING, Draft, Drafts, DraftStatus
from bot.edit_check import elements_around, parse
from bot.forum import Section, find_headings, mask_inert, normalize_user, parse_sections, plain_text
from bot.attribution import addressees
from bot.forum_decisions import answered_by_human, answered_until, settled_by_asker
from bot.history import UNKNOWN, Attribution, Revision, latest_revisions, line_starts, own_revisions
from bot.kinds import TaskKind
from agent.messages import messages_for
from bot.render import Markup, address_reply
from bot.state import SectionStatus, State
from bot.wikitext import encode
from bot.wiki import EditRefused, EmergencyStop, ForumPage, PostStatus, marked_resolved

log = logging.getLogger(__name__)
MARKS = {"approved": re.compile(r"\{\{\s*[Aa]pproved\s*(?:\|[^{}]*)?\}\}"),
         "rejected": re.compile(r"\{\{\s*[Rr]ejected\s*(?:\|[^{}]*)?\}\}")}
SIGNATURE = " ~~~~"


def _begins(number: int) -> str:
    return f"<!-- draft {number} begins: the reply as it will be posted (its signature is added then) -->"


def _ends(number: int) -> str:
    return f"<!-- draft {number} ends -->"


#: Why a draft is dropped and its question drafted again.
CHANGED_THREAD = "the thread changed since the draft"
#: Why a draft is dropped when its question is on the page no more (answered if it comes back).
SECTION_GONE = "the section is no longer on the page"
#: Of the lines new in a thread drafted again, the last this many are shown to the reviewers, cut at NEWS_CHARS.
NEWS_LINES, NEWS_CHARS = 5, 300
_DRAFT_SUMMARY = re.compile(r"/\* Draft (\d+) \*/")


def _plain(text: str) -> str:
    """*text* (a user name, a reason) as words on the review page, never markup."""
    return encode(" ".join(text.split())[:300])


#: The elements the parser output may hold a draft's section in: the output itself and a paragraph.
OPEN_AT_START = frozenset({"div.mw-parser-output", "p"})


def unseen(site, title: str, page_text: str, start: int) -> str | None:
    """Why the draft whose section starts at character *start* of *page_text* (the review page *title* as
    approved) may not have shown to a reviewer, or ``None``: an element left open above the section (a hidden
    ``<div>`` at the end of another one, in any style) holds it.  MediaWiki renders the page with a word at the
    section's start, which must stand in nothing but the page's own output and a paragraph: what an element
    there does to a reader (its style) is never read, so no style can pass."""
    line_end = page_text.find("\n", start)
    line_end = len(page_text) if line_end < 0 else line_end
    word = "draftstart" + secrets.token_hex(8)
    probed = page_text[:line_end] + "\n" + word + page_text[line_end:]
    found = elements_around(parse(site, title, text=probed, props="text")["text"], word)
    if len(found) != 1:
        return f"the draft's section did not show once on {title} as it was approved"
    extra = [element for element in found[0] if element not in OPEN_AT_START]
    if extra:
        return (f"the draft did not show on {title} as it was approved: its section stood inside "
                f"{', '.join('<' + element + '>' for element in extra[:3])} opened above it")
    return None


def _restored_note(by: Revision, what: str) -> str:
    """The signed line that says, in a draft's section, whose change to *what* the bot undid."""
    return (f":'''Restored''': [[Special:Diff/{by.id}|an edit]] by {_plain(by.user)}, who is not a reviewer, "
            f"changed {what}; it is undone here. An approval given while it stood does not count.{SIGNATURE}")


def _as_rendered(again: Rerendered) -> str:
    """What the outcome note says of a reply rendered again: which of the reviewer's markup shows as text, which
    changes to the bot's own parts were left out; "" when the reviewer's text went as written."""
    said = []
    if again.shown_as_text:
        quoted = "; ".join(f"<code>{_plain(line)}</code>" for line in again.shown_as_text[:3])
        said.append(f"the bot renders every reply itself, so this markup shows as text: {quoted}"
                    + (" …" if len(again.shown_as_text) > 3 else ""))
    if again.kept:
        said.append("the " + " and the ".join(sorted(set(again.kept))) + " are the bot's own: a change to them "
                    "is not posted")
    return ("; " + "; ".join(said)) if said else ""


def digest(section: Section) -> str:
    """A fingerprint of a forum section's thread (its text below the heading): a change in the thread changes it,
    a new heading does not."""
    return hashlib.sha256(section.text.partition("\n")[2].rstrip().encode("utf-8", "surrogatepass")).hexdigest()


def _digest_with_heading(section: Section) -> str:
    """:func:`digest` as drafts written before headings were left out of it stored it."""
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
    #: The reply's language (:mod:`agent.messages`): the approved draft is rendered again in it.
    language: str = ""
    #: The forum section's :attr:`~bot.forum.Section.question`: it finds the section under a new heading.
    question: str = ""

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


#: How a draft's heading names its status, so that the review page's table of contents reads like a board.
HEADING_STATUS = {DraftStatus.DRAFTED: "waiting", DraftStatus.APPROVED: "waiting", DraftStatus.POSTED: "posted",
                  DraftStatus.REJECTED: "rejected", DraftStatus.DROPPED: "dropped", DraftStatus.REFUSED: "refused",
                  DraftStatus.VOIDED: "dropped"}
#: How much of the forum's heading a draft's heading shows.
HEADING_CHARS = 80


def draft_heading(number: int, heading: str, status: DraftStatus) -> str:
    """The heading line of draft *number*'s section: its number, the forum section's heading *heading* (a
    stranger's text, escaped like any other, ``=`` too, so it can neither end the heading nor add markup) and the
    draft's status in words: ``== Draft 12: Euler (waiting) ==``."""
    words = " ".join(heading.split())
    words = words if len(words) <= HEADING_CHARS else words[:HEADING_CHARS - 1] + "…"
    shown = encode(words, cell=True).replace("]", "&#93;").replace("=", "&#61;")
    return f"== Draft {number}: {shown} ({HEADING_STATUS[status]}) =="


def draft_section(number: int, forum_title: str, heading: str, reply: str, origin: Origin, news: str = "") -> str:
    """The review page's section for one draft: a heading, a signed line linking the forum section (and *news*,
    what the thread gained since an earlier draft, below it), what the draft answers (a comment), the draft."""
    if not reply.endswith(SIGNATURE):
        raise ValueError("a draft is made from a signed reply")
    shown = encode(heading, cell=True).replace("]", "&#93;")
    # The marks are spelt, not wrapped in <nowiki>: an extension tag's strip marker can be taken by a look-alike
    # anyone saves on the page, and MediaWiki's check of the edit would then refuse every draft.
    intro = (f"Reply to [[{forum_title}#{shown}|{shown}]], written by the bot for review: add "
             f"<code>{encode('{{approved}}')}</code> to this section to post it, or "
             f"<code>{encode('{{rejected}}')}</code> to drop it. Before approving you may edit its words, its "
             "query and its table's rows: the bot posts them as text, as it renders every reply (other markup "
             "shows as text too). ~~~~")
    news = f"{news}\n" if news else ""
    return (f"{draft_heading(number, heading, DraftStatus.DRAFTED)}\n{intro}\n{news}{origin.comment(number)}\n"
            f"{_begins(number)}\n"
            f"{reply[:-len(SIGNATURE)]}\n{_ends(number)}")


@dataclass(frozen=True)
class DraftView:
    """A draft's section on the review page as it is now."""

    #: The draft's text between its markers, ``None`` when a marker is gone.
    text: str | None
    #: How many of each mark the section holds outside the draft (and outside comments and <nowiki>).
    marks: dict[str, int]


#: A draft's heading as the bot writes it (``Draft 12: Euler (waiting)``, or ``Draft 12`` in drafts written before
#: headings named their status).
_DRAFT_HEADING = re.compile(r"^==\s*Draft (\d+)(?::[^\n]*)?\s*==[ \t]*$", re.MULTILINE)


def view_of(raw: str, number: int) -> DraftView:
    """Draft *number*'s text and the marks around it in its section's text *raw*."""
    masked = mask_inert(raw)
    begins, ends = raw.find(_begins(number)), raw.find(_ends(number))
    text = None
    outside = masked
    if 0 <= begins < ends and raw.count(_begins(number)) == 1:
        text = raw[begins + len(_begins(number)):ends].strip("\n")
        outside = masked[:begins] + masked[ends:]
    return DraftView(text, {name: len(mark.findall(outside)) for name, mark in MARKS.items()})


def _heading_lines(text: str) -> list[int]:
    """The lines where the sections of *text* (level 1 or 2) begin, by the bot's one reader of headings
    (:func:`bot.forum.find_headings`, MediaWiki's rules: never in a comment, a ``<nowiki>`` or a template call)."""
    starts = line_starts(text)
    return [bisect_left(starts, heading.start) for heading in find_headings(text) if heading.level <= 2]


def _written_lines(text: str, number: int) -> range | None:
    """The lines of draft *number*'s section in the bot's own revision that wrote it (headed "Draft N", a
    number no other section had then)."""
    lines = text.split("\n")
    headings = _heading_lines(text)
    first = next((index for index in headings if (found := _DRAFT_HEADING.fullmatch(lines[index].rstrip()))
                  and int(found[1]) == number), None)
    if first is None:
        return None
    return range(first, next((index for index in headings if index > first), len(lines)))


def read_draft(page_text: str, number: int) -> DraftView | None:
    """Draft *number* on the review page under its own heading (as the bot wrote it), ``None`` when no section
    there is headed so."""
    lines = _written_lines(page_text, number)
    if lines is None:
        return None
    return view_of("\n".join(page_text.split("\n")[lines.start:lines.stop]), number)


def numbers_on(page_text: str) -> list[int]:
    """The draft numbers whose headings stand on the review page, or look as if they did: read anywhere in the
    text (a comment, a ``<nowiki>`` too), a number is never handed out twice."""
    return [int(found[1]) for found in _DRAFT_HEADING.finditer(page_text)]


@dataclass(frozen=True)
class Owned:
    """Draft N's section in one revision of the review page, known by its history: the section (heading to the
    next heading) that holds the begin marker a revision of the bot's wrote, whatever its heading says."""

    #: Its lines in the revision's text, and its text.
    lines: range
    raw: str
    #: The revisions by anyone neither a reviewer nor the bot that wrote lines of it (oldest first).
    strangers: tuple[int, ...]

    @property
    def heading(self) -> str:
        """The heading as its section is named (``Draft 3``, or the name a reviewer gave it)."""
        return self.raw.split("\n", 1)[0].strip().strip("=").strip()


def _untrusted(attribution: Attribution, owner: int, trusted: set[str]) -> bool:
    """Whether the revision *owner* (of a line *attribution* describes) is by someone neither a reviewer nor the bot
    (a line the history does not name, :data:`~bot.history.UNKNOWN`, is no one's they trust)."""
    return normalize_user(attribution.users.get(owner, "")) not in trusted


def owned_section(attribution: Attribution, number: int, bot: str, trusted: set[str]) -> Owned | None:
    """Draft *number*'s section in the revision *attribution* describes, ``None`` when no line of the bot's holds
    its begin marker (the section or the marker removed, or changed by someone)."""
    lines = attribution.text.split("\n")
    marker = _begins(number)
    at = next((index for index, line in enumerate(lines) if marker in line
               and normalize_user(attribution.users.get(attribution.owners[index], "")) == bot), None)
    if at is None:
        return None
    headings = _heading_lines(attribution.text)
    first = max((index for index in headings if index <= at), default=None)
    if first is None:
        return None
    span = range(first, next((index for index in headings if index > at), len(lines)))
    strangers = sorted({owner for owner in attribution.owners[span.start:span.stop]
                        if _untrusted(attribution, owner, trusted)})
    return Owned(span, "\n".join(lines[span.start:span.stop]), tuple(strangers))


@dataclass(frozen=True)
class Mark:
    """A mark in a draft's section: who added it, in which revision, and the draft's text then."""

    user: str
    revision: int
    #: The draft's text as it stood when the mark was added: what an approval approves.
    draft: str | None
    #: Where the draft's section started in that revision's text (a character offset).
    start: int = 0


@dataclass(frozen=True)
class History:
    """What the review page's history says of one draft, from the bot's revision that wrote it."""

    #: The marks still in the section, each with the revision that added it, by mark name; a mark counts only
    #: when added to a section every line of which a reviewer's or the bot's revision wrote.
    marks: dict[str, list[Mark]]
    #: The section as it stands in the latest revision, ``None`` when it is gone.
    now: Owned | None = None
    #: The section's text in the latest revision in which the bot and the reviewers alone had written it.
    trusted: str | None = None
    #: The revision by someone neither a reviewer nor the bot whose change stands in the section now (or who
    #: removed it): the bot restores the section.
    changed_by: Revision | None = None
    #: The reviewer's revision that removed the section or its begin marker: the draft is dropped.
    removed_by: Revision | None = None
    #: The lines above the section (in the latest revision) that someone neither a reviewer nor the bot wrote
    #: since the draft was written, and the latest such revision: an element left open there could hide it.
    above: tuple[int, ...] = ()
    above_by: Revision | None = None


def read_history(revisions: list[Revision], number: int, trusted: set[str], bot: str) -> History:
    """Who added each mark still in draft *number*'s section, and whose lines the section holds; *revisions*
    start with the bot's own that wrote the draft, *trusted* are the reviewers and the bot (*bot*).

    The section is known by its history (:func:`owned_section`), so a reviewer may rename it.  A mark belongs to
    the revision that made the section's count of it grow, in that section only, and only while the bot and
    the reviewers alone wrote the section: a mark moved in from another section is its mover's, and one added
    while someone else's line stood there (a fake draft above the real one, an element hiding it) counts for
    nothing.
    """
    marks: dict[str, list[Mark]] = {name: [] for name in MARKS}
    first = revisions[0]
    written = _written_lines(first.text, number)
    if written is None:
        return History(marks)
    owners = [UNKNOWN] * (first.text.count("\n") + 1)
    owners[written.start:written.stop] = [first.id] * len(written)
    attribution = Attribution(first.id, first.text, owners, {first.id: first.user})
    by_id = {revision.id: revision for revision in revisions}
    history = History(marks)
    for index, revision in enumerate(revisions):
        if index:
            attribution = attribution.advance(revision.id, revision.user, revision.text)
        owned = owned_section(attribution, number, bot, trusted)
        if owned is None:
            removed = normalize_user(revision.user) in trusted and history.changed_by is None
            history = dataclasses.replace(history, now=None, removed_by=revision if removed else None,
                                          changed_by=history.changed_by or (None if removed else revision))
            continue
        user = normalize_user(revision.user)
        changed = history.now is None or owned.raw != history.now.raw
        tainted = history.changed_by
        if owned.strangers:  # a line someone else wrote or changed
            tainted = by_id.get(owned.strangers[-1], revision)
        elif user not in trusted and changed:  # a line someone else removed leaves no line of theirs
            tainted = revision
        elif tainted is not None and (owned.raw == history.trusted or user == bot):  # put back
            tainted = None
        if tainted is not None:
            history = dataclasses.replace(history, now=owned, removed_by=None, changed_by=tainted)
            continue
        above = [index for index in range(owned.lines.start) if attribution.owners[index] != UNKNOWN
                 and _untrusted(attribution, attribution.owners[index], trusted)]
        history = dataclasses.replace(history, now=owned, trusted=owned.raw, changed_by=None, removed_by=None,
                                      above=tuple(above), above_by=by_id.get(max(
                                          (attribution.owners[index] for index in above), default=0)))
        if above:  # a mark added while someone else's lines stood above the draft counts for nothing
            continue
        view = view_of(owned.raw, number)
        start = sum(len(line) + 1 for line in revision.text.split("\n")[:owned.lines.start])
        for name, count in view.marks.items():
            while len(marks[name]) < count:
                marks[name].append(Mark(normalize_user(revision.user), revision.id, view.text, start))
            del marks[name][count:]
    return history


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
        return max([self.drafts.next_number() - 1, *self._numbers_seen()]) + 1

    def _numbers_seen(self) -> set[int]:
        """The draft numbers on the review page and in the bot's edit summaries there."""
        if self.page.latest_revision() is None:
            return set()
        return {*numbers_on(self.page.read()[0]),
                *(int(found[1]) for edit in own_revisions(self.page.site, self.page.title, self.page.username)
                  if (found := _DRAFT_SUMMARY.match(edit.comment)))}

    def submit(self, key: str, section: Section, kind: str, reply: str, summary: str, language: str = "",
               plain: str | None = None) -> DraftStatus | PostStatus:
        """Put *reply* (in *language*) on the review page as a draft; where MediaWiki's check refuses it there,
        *plain*, the same reply in its plain form (:class:`bot.render.Markup`).  Returns
        :attr:`DraftStatus.DRAFTED` when the draft stands on the review page, else what became of its edit
        (:attr:`PostStatus.PREVIEWED` in a dry run, …).

        A draft of the bot's that the state does not know (its save reached the wiki after this pass looked for
        such drafts: a bot killed with its save sent, and restarted at once) is taken up first; when it answers
        this section, the question is drafted already, and nothing is written."""
        seen = self._numbers_seen()
        if any(self.drafts.get(number) is None for number in seen):
            self.recover(look_again=True)
            earlier = self.drafts.latest(self.forum.title, key)
            if earlier is not None and earlier.status in WAITING and earlier.number in seen:
                self.state.set_status(self.forum.title, key, SectionStatus.DRAFTED,
                                      f"draft {earlier.number} on {self.page.title}")
                log.info("%r: drafted already as draft %d on %s (taken up again)", section.heading, earlier.number,
                         self.page.title)
                return DraftStatus.DRAFTED
        number = max([self.drafts.next_number() - 1, *seen]) + 1
        origin = Origin(self.forum.title, section.heading, section.fingerprint, kind, digest(section), summary,
                        language, section.question)
        news = self._news(key, section)
        try:
            outcome = self.page.add_section(draft_section(number, self.forum.title, section.heading, reply, origin,
                                                          news), f"/* Draft {number} */ a reply to review: {summary}")
        except EditRefused as refused:
            if plain is None or plain == reply:
                raise
            log.warning("%r: the draft goes in its plain form (items as links, the query as a text block and a "
                        "link): MediaWiki's check refuses its normal form on %s: %s", section.heading,
                        self.page.title, refused)
            reply = plain
            outcome = self.page.add_section(draft_section(number, self.forum.title, section.heading, reply, origin,
                                                          news), f"/* Draft {number} */ a reply to review: {summary}")
        if outcome.status == PostStatus.POSTED:
            self.drafts.add(number, self.forum.title, key, section.heading, kind, reply[:-len(SIGNATURE)],
                            summary, digest(section), outcome.revision, thread=section.text, language=language)
            self.state.set_status(self.forum.title, key, SectionStatus.DRAFTED, f"draft {number} on {self.page.title}")
            log.info("%r: drafted as draft %d on %s", section.heading, number, self.page.title)
            return DraftStatus.DRAFTED
        return outcome.status

    def recover(self, look_again: bool = False) -> Counter:
        """Take up the drafts the state does not know (a lost state file took their records with it, or the
        bot was stopped between writing a draft and recording it), from the bot's own revisions of the review
        page: one still waiting there is waiting again, for the forum section it was written for (its record
        is found again by its fingerprint, see :meth:`bot.planner.PlannedRecords.adoptable`); one whose outcome
        the bot wrote there is recorded as closed.  Once a pass, unless *look_again*, only when the bot's latest
        edit there is a draft the state does not know."""
        done: Counter = Counter()
        if self.page.latest_revision() is None:
            return done
        latest = own_revisions(self.page.site, self.page.title, self.page.username, latest_only=True)
        found = _DRAFT_SUMMARY.match(latest[-1].comment) if latest else None
        if not look_again and (found is None or self.drafts.get(int(found[1])) is not None):
            return done  # the state knows the bot's last edit
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
            fingerprint = self._fingerprint_now(origin)
            known = [record.key for record in self.state.sections(self.forum.title)
                     if record.fingerprint == fingerprint and record.status != SectionStatus.ANSWERED]
            key = known[-1] if known else f"draft {number} (recovered)"
            self.drafts.add(number, self.forum.title, key, origin.heading, origin.kind, view.text, origin.summary,
                            origin.digest, created[0].revision, status=status, language=origin.language)
            if status == DraftStatus.DRAFTED:
                self.state.add(self.forum.title, key, origin.heading, SectionStatus.DRAFTED, fingerprint)
                self.state.set_status(self.forum.title, key, SectionStatus.DRAFTED,
                                      f"draft {number} on {self.page.title}")
                log.info("draft %d for %r is waiting on %s: taken up again", number, origin.heading,
                         self.page.title)
            done["recovered" if status == DraftStatus.DRAFTED else "recovered as closed"] += 1
        return done

    def _fingerprint_now(self, origin: Origin) -> str:
        """The fingerprint of the forum section *origin* names as it stands now: a section renamed since the draft
        was written (its heading is part of its fingerprint) is found by what it asks (its opening and first
        signature), when one section alone asks it."""
        if not origin.question:
            return origin.fingerprint
        text, revision = self.forum.read()
        asking = [section for section in parse_sections(text, reading=self.forum.reading(text, revision))
                  if section.question == origin.question]
        return asking[0].fingerprint if len(asking) == 1 else origin.fingerprint

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
        """Read the review page once: post what a reviewer approved, drop what was rejected or went stale, and
        restore a draft's section that someone else changed."""
        done: Counter = Counter()
        waiting = self.drafts.waiting(self.forum.title)
        if not waiting:
            return done
        text, revision = self.page.read()
        revisions: list[Revision] | None = None  # the page's history since the oldest draft looked at, read once
        trusted = {*self.reviewers, normalize_user(self.page.username)}
        for draft in waiting:
            if self._unchanged.get(draft.number) == revision:
                continue
            if revisions is None:
                revisions = latest_revisions(self.page.site, self.page.title, revision,
                                             since=min(item.review_revision or 0 for item in waiting))
            history = read_history([item for item in revisions if item.id >= (draft.review_revision or 0)],
                                   draft.number, trusted, normalize_user(self.page.username))
            if history.removed_by is not None:  # a reviewer took it away
                self._close(draft, DraftStatus.DROPPED, f"a reviewer ({normalize_user(history.removed_by.user)}) "
                            f"removed the draft's section or its begin marker from {self.page.title}",
                            SectionStatus.SKIPPED)
                done[DraftStatus.DROPPED] += 1
                continue
            if history.changed_by is None and history.now is not None \
                    and view_of(history.now.raw, draft.number).text is None:
                self._close(draft, DraftStatus.DROPPED, "a reviewer removed the draft's begin or end marker from "
                            f"{self.page.title}", SectionStatus.SKIPPED)
                done[DraftStatus.DROPPED] += 1
                continue
            if history.changed_by is not None and history.trusted is not None:
                done[self._restore(draft, history, text, revision)] += 1
            elif history.above and history.above_by is not None:
                done[self._restore_above(draft, history, text, revision)] += 1
            done[self._decide(draft, history, attribution, {item.id: item.text for item in revisions})] += 1
            if self.drafts.get(draft.number).status in WAITING and history.changed_by is None and not history.above:
                self._unchanged[draft.number] = revision
        return done

    def _restore(self, draft: Draft, history: History, text: str, revision: int) -> str:
        """Put draft *draft*'s section back as the bot and the reviewers left it, undoing the change of someone
        who is neither: a stranger's edit never reaches the forum, and never costs the question its answer."""
        lines = text.split("\n")
        restored = history.trusted.rstrip("\n") + "\n" + _restored_note(history.changed_by, "this section")
        if history.now is not None:
            place = history.now.lines
        else:  # the marker or the whole section is gone: the section that kept most of its lines, else the end
            place = self._closest(text, history.trusted)
        if place is None:
            new = text.rstrip("\n") + "\n\n" + restored
        else:
            new = "\n".join(lines[:place.start] + [restored] + lines[place.stop:])
        return self._save_restored(draft, history.changed_by, revision, new, "its section", "")

    def _restore_above(self, draft: Draft, history: History, text: str, revision: int) -> str:
        """Take out the lines someone who is neither a reviewer nor the bot wrote above draft *draft*'s section
        since it was written (an element left open there hides the draft from its reviewers): the review page is
        the bot's, and a stranger's edit there never keeps a question from its answer."""
        lines = text.split("\n")
        stop, above = history.now.lines.stop, set(history.above)
        kept = [line for index, line in enumerate(lines[:stop]) if index not in above]
        new = "\n".join(kept + [_restored_note(history.above_by, "the page above this draft")] + lines[stop:])
        return self._save_restored(draft, history.above_by, revision, new, "the page above it", " above the draft")

    def _save_restored(self, draft: Draft, by: Revision, revision: int, text: str, where: str, placed: str) -> str:
        """Save *text*, the review page (as revision *revision* held it) with the change *by* made to *where*
        (*placed*, in the summary) undone: one edit, whose summary names whose change it undid; what happened."""
        summary = (f"/* Draft {draft.number} */ restored: undid the change by {' '.join(by.user.split())[:80]} "
                   f"(revision {by.id}){placed}, who is not a reviewer")
        try:
            outcome = self.page.restore(revision, text, summary)
        except (EmergencyStop, Error) as error:
            log.warning("draft %d: %s could not be restored on %s: %s", draft.number, where, self.page.title, error)
            return "not restored"
        status = "restored" if outcome.status == PostStatus.POSTED else outcome.status
        log.info("draft %d: %s changed %s (revision %d): %s", draft.number, normalize_user(by.user), where, by.id,
                 status)
        return status

    @staticmethod
    def _closest(text: str, section: str) -> range | None:
        """The section of *text* that holds most of *section*'s lines (a heading alone is not enough)."""
        lines = text.split("\n")
        wanted = {line for line in section.split("\n")[1:] if line.strip()}
        headings = _heading_lines(text) + [len(lines)]
        best, shared = None, 0
        for first, after in zip(headings, headings[1:]):
            count = len(wanted & set(lines[first + 1:after]))
            if count > shared:
                best, shared = range(first, after), count
        return best

    def _decide(self, draft: Draft, history: History, attribution: Attribution | None,
                texts: dict[int, str]) -> str:
        """Post, reject or leave a draft whose history was read (*texts*: the review page's, by revision): what
        happened."""
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
        hidden = unseen(self.page.site, self.page.title, texts[approval.revision], approval.start)
        if hidden:
            self._close(draft, DraftStatus.REFUSED, hidden, SectionStatus.PENDING)
            self._note(draft, DraftStatus.REFUSED, f": {_plain(hidden)}; nothing was posted, and the question will "
                       "be drafted anew.")
            return DraftStatus.REFUSED
        return self._post(draft, approval, attribution)

    def _post(self, draft: Draft, approval: Mark, attribution: Attribution | None) -> DraftStatus | PostStatus:
        """Post the draft as it stood when it was approved, rendered again by the bot (:mod:`bot.approved`) and
        signed, unless it went stale; what happened."""
        self.drafts.set(draft.number, DraftStatus.APPROVED)
        page_text, revision = self.forum.read()
        # A question merged into another thread as a subsection since it was drafted is found there by what it asks.
        record = self.state.section(self.forum.title, draft.key)
        question = record.question if record is not None and draft.kind == TaskKind.QUESTION else None
        section = self.forum.locate(page_text, draft.key, attribution, self.forum.reading(page_text, revision),
                                    revision, question)
        bot = normalize_user(self.forum.username)
        addressed = addressees(section, draft.key, bot) if self.ping_asker and section is not None else ()
        try_it = messages_for(draft.language or "")["try_it"]
        again = rerender(draft.reply, approval.draft, try_it)
        posted = address_reply(again.text.rstrip(), addressed)
        # The same reply without templates, for a wiki whose templates the edit check refuses (bot.render.Markup).
        plain = address_reply(rerender(draft.reply, approval.draft, try_it, Markup.LINKS).text.rstrip(), addressed,
                              Markup.LINKS)
        if section is not None and section.answered and (posted in section.text or plain in section.text):
            # Posted before the bot could record it (killed after the save): recorded now, never posted twice.
            revision = section.replies[-1].owner if section.replies[-1].owner > 0 else None
            return self._posted(draft, approval, revision, again)
        stale = self._stale(draft, section)
        if stale:
            # A changed thread is drafted anew; a question gone from the page is drafted anew where it comes back.
            anew = {CHANGED_THREAD: ", and the question will be drafted anew with the thread as it is now",
                    SECTION_GONE: ", and the question will be drafted anew if it comes back"}.get(stale, "")
            reopen = SectionStatus.PENDING if anew else SectionStatus.SKIPPED
            self._close(draft, DraftStatus.DROPPED, "stale: " + stale, reopen)
            self._note(draft, DraftStatus.DROPPED, f": {stale}; nothing was posted{anew}.")
            return DraftStatus.DROPPED
        try:
            outcome = self.forum.post_reply(draft.key, posted + SIGNATURE, draft.summary, attribution,
                                            addressed=addressed, question=question, plain=plain + SIGNATURE)
        except EditRefused as refused:
            self._close(draft, DraftStatus.REFUSED, f"refused by the edit check: {refused}", SectionStatus.REFUSED)
            self._note(draft, DraftStatus.REFUSED, f" by the edit check: {_plain(str(refused))}; nothing was "
                       "posted.")
            return DraftStatus.REFUSED
        if outcome.status == PostStatus.POSTED:
            # What the draft answers stood in the thread at the pass's revision (else it went stale above).
            return self._posted(draft, approval, outcome.revision, again, outcome.markup,
                                attribution.revision if attribution is not None else None)
        if outcome.status == PostStatus.PREVIEWED:
            self.drafts.set(draft.number, DraftStatus.DRAFTED)
            log.info("draft %d approved; a live run would post it:", draft.number)
            for line in (outcome.diff or "").split("\n"):  # a line of the log each: the log writes one a record
                log.info("  %s", line)
            return PostStatus.PREVIEWED
        self._close(draft, DraftStatus.DROPPED, f"stale: {outcome.status}", SectionStatus.SKIPPED)
        self._note(draft, DraftStatus.DROPPED, f": {_plain(outcome.status)}; nothing was posted.")
        return DraftStatus.DROPPED

    def _posted(self, draft: Draft, approval: Mark, revision: int | None, again: Rerendered,
                markup: Markup = Markup.TEMPLATES, read: int | None = None) -> DraftStatus:
        """Record the draft posted as *revision* of the forum, written from its revision *read* (if known), and say
        so on the review page: how it was rendered again, and whether in its plain form (*markup*: items as links,
        where the wiki's check refused its templates)."""
        self.drafts.set(draft.number, DraftStatus.POSTED, forum_revision=revision)
        self.state.record_answered(self.forum.title, draft.key, revision, read)
        log.info("draft %d posted to %r (revision %s) as %s approved it (revision %d)", draft.number, draft.heading,
                 revision, approval.user, approval.revision)
        where = f"as [[Special:Diff/{revision}|this edit]] of the forum" if revision else "to the forum"
        self._note(draft, DraftStatus.POSTED, f" {where}, as {_plain(approval.user)} approved it in "
                   f"[[Special:Diff/{approval.revision}|this edit]]{_as_rendered(again)}"
                   + ("; in its plain form (items as links, the query as a text block and a link), as MediaWiki's "
                      "check refused its templates" if markup == Markup.LINKS else "") + ".")
        return DraftStatus.POSTED

    def drop(self, key: str, reason: str) -> bool:
        """Drop the draft waiting for the forum section *key* because its asker said the question is settled
        (*reason*): the outcome is written into the draft's section, and the question is not drafted again.
        Whether a draft was waiting."""
        draft = self.drafts.latest(self.forum.title, key)
        if draft is None or draft.status not in WAITING:
            return False
        self._close(draft, DraftStatus.DROPPED, reason, SectionStatus.SKIPPED)
        self._note(draft, DraftStatus.DROPPED, f": {_plain(reason)}; nothing was posted, and the question will not "
                   "be drafted again.")
        return True

    def _stale(self, draft: Draft, section: Section | None) -> str | None:
        """Why the forum section no longer wants this draft, or ``None``."""
        if section is None:
            return SECTION_GONE
        if section.answered:
            return "the bot has replied there meanwhile"
        if marked_resolved(section.text):
            return "the section was marked resolved meanwhile"
        if settled := settled_by_asker(section, answered_until(section, draft.key)):
            return settled
        if draft.kind == TaskKind.QUESTION and answered_by_human(section, normalize_user(self.forum.username)):
            return "someone posted a query there meanwhile"
        if draft.digest not in (digest(section), _digest_with_heading(section)):
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
        # The heading says the outcome too, in the same edit; one a reviewer renamed is theirs, and left alone.
        retitle = (draft_heading(draft.number, draft.heading, DraftStatus.DRAFTED),
                   draft_heading(draft.number, draft.heading, outcome))
        try:
            written = self.page.add_note(_begins(draft.number), line, f"/* Draft {draft.number} */ {outcome}",
                                         retitle)
        except (EditRefused, EmergencyStop, Error) as error:
            log.warning("draft %d: its outcome could not be written on %s: %s", draft.number, self.page.title,
                        error)
            return
        if written.status not in (PostStatus.POSTED, PostStatus.PREVIEWED):
            log.warning("draft %d: its outcome was not written on %s (%s)", draft.number, self.page.title,
                        written.status)
