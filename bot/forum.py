"""Read "Wikidata:Request a query": sections, who wrote what, and what the asker gave.

The page is read the way MediaWiki reads it, not the way it looks.  Where
its sections start is MediaWiki's word (:class:`Reading`, from
:mod:`bot.sections`); without it, :func:`find_headings` applies MediaWiki's
own rules: a heading is a line that starts with ``=`` and ends with ``=``
followed by nothing but spaces, tabs and comments (so not ``=> I mean``, not
``== X ==<nowiki/>``, not a trailing no-break space), at any nesting of
``<div>`` or table but not inside a template call, and nothing inside a
comment, ``<includeonly>`` or a tag whose content is not wikitext
(``<nowiki>``, ``<pre>``, ...) is a heading, a signature or a mention.

Who wrote what comes from the page history when the bot has it
(:mod:`bot.history`): a section is identified by the revision that added its
heading line (two sections with the same heading and signature minute stay
two), its author is that revision's user, and the bot has replied when one
of its own revisions added lines to the section.  A signature typed, copied
or hidden by someone else decides nothing there.  For lines that were
already on the page at the bot's first look, the text is all there is: the
heading plus the first signature's minute, and the bot's signature.

What the bot decides from this reading (whether a section is answered, by
the bot or by a human, which follow-up waits, whom a reply answers, where it
goes) is :mod:`bot.forum_decisions`.

Every scan is linear in the page size, and every parse of the page's text
goes through :func:`bot.wikiparse.parse` (bounded pieces); a question longer
than :data:`MAX_REQUEST_CHARS` is not parsed further, and of a thread only
its end is read.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from urllib.parse import unquote

import mwparserfromhell

from agent.graph import ENTITY_ID
from bot.history import UNKNOWN, Attribution, OwnEdit, line_starts
from bot.wikiparse import INERT_TAGS, blank, brace_spans, inert_spans, inside, mask_inert, merged
from bot.wikiparse import parse as parse_wikitext

#: A question (the text before its first signature) longer than this gets a polite note, not an answer.
MAX_REQUEST_CHARS = 20000
#: The thread handed to the model as context keeps its last this many characters.
THREAD_CHARS = 8000
#: A reply of the bot in the thread the model reads: its final query is given apart, as the draft to revise.
_BOT_REPLY = "(your earlier answer)"
#: A bot signature on lines whose revision is not known is a reply only if the bot saved the page this soon after.
SIGNED_WITHIN = timedelta(minutes=5)
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
_USER_LINK = (r"\[\[[ \t]*:?[ \t]*(?i:User|User[ _]talk|Special:Contributions)[ \t]*[:/][ \t]*"
              r"(?P<name>[^|\]/#\n]+)")
_SIGNATURE_PARTS = re.compile(
    r"(?P<link>" + _USER_LINK + r")"
    r"|(?P<stamp>(?P<hour>\d{1,2}):(?P<minute>\d{2}), (?P<day>\d{1,2}) (?P<month>" + "|".join(MONTHS)
    + r") (?P<year>\d{4}) \(UTC\))"
    r"|\n")
#: What may stand between the user links of one signature: the rest of a link, brackets, dashes, small tags.
_SIGNATURE_GLUE = re.compile(r"[^\]\n]{0,300}\]\](?:<[^<>\n]{0,30}>|&\w{1,8};|[^\w\[\]\n]){0,40}")
_PING = re.compile(r"\{\{\s*(?:ping|re|reply ?to|replyto|u|yo)\s*\|([^{}\n]{0,1000})\}\}", re.IGNORECASE)
_ENTITY_TEMPLATES = {"q": "Q", "p": "P", "qid": "Q", "pid": "P"}
_ENTITY_LINK = re.compile(r"\[\[\s*(?:d:|wikidata:)?(?:Property:)?(" + ENTITY_ID + r")\s*[|\]]", re.IGNORECASE)
_QUERY_URL = re.compile(r"https?://query\.wikidata\.org/(?:embed\.html)?(?:#|\?query=)([^\s\]|]+)")
#: A Wikimedia short link (``https://w.wiki/ABC``), as the query service's "Short URL" button gives them.
_SHORT_LINK = re.compile(r"https?://w\.wiki/[A-Za-z0-9_~$-]{1,20}(?![A-Za-z0-9_~$-])")
_SPARQL_WORDS = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)
_CODE_TAGS = ("syntaxhighlight", "source", "pre")
#: What a text holding a query has (a query template, a code block, a query service link): others are not parsed.
_MAY_HOLD_A_QUERY = re.compile(r"sparql|query\.wikidata\.org|<(?:syntaxhighlight|source|pre)\b", re.IGNORECASE)
_FOLLOWUP_KEY = re.compile(r"(.*) / r(\d+)", re.DOTALL)
_SECTION_KEY = re.compile(r".* @ r(\d+)(?: #\d+)?", re.DOTALL)
#: The owner of lines changed after the revision the bot read (see :func:`bot.forum_decisions.locate_after_change`).
CHANGED = -1


def normalize_user(name: str) -> str:
    """MediaWiki's form of a user name: spaces for underscores, first letter upper case."""
    name = " ".join(name.replace("_", " ").split())
    return name[:1].upper() + name[1:]


@dataclass(frozen=True, slots=True)
class Signature:
    user: str
    timestamp: datetime
    #: Offsets in the text scanned: from the signature's first user link to the end of its timestamp.
    start: int = 0
    end: int = 0


def signatures_in(text: str, masked: str | None = None) -> list[Signature]:
    """Signatures (a user link, then a timestamp on the same line) outside comments and non-wikitext tags.

    An impossible timestamp (``25:61, 31 February``) is no signature.  One
    pass over the text.
    """
    masked = mask_inert(text) if masked is None else masked
    found: list[Signature] = []
    links: list[re.Match] = []
    for part in _SIGNATURE_PARTS.finditer(masked):
        if part.group("link") is not None:
            links.append(part)
            continue
        if part.group("stamp") is None:  # a new line
            links = []
            continue
        if links:
            try:
                moment = datetime(int(part["year"]), MONTHS.index(part["month"]) + 1, int(part["day"]),
                                  int(part["hour"]), int(part["minute"]), tzinfo=timezone.utc)
            except ValueError:
                moment = None
            if moment is not None:
                first = len(links) - 1
                while first > 0 and _SIGNATURE_GLUE.fullmatch(masked, links[first - 1].end(),
                                                              links[first].start()):
                    first -= 1
                found.append(Signature(normalize_user(links[-1]["name"]), moment, links[first].start(),
                                       part.end()))
        links = []
    return found


@dataclass(frozen=True, slots=True)
class Comment:
    """Consecutive lines of a section added by one revision."""

    owner: int
    #: The revision's user; "" when the history does not say.
    user: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading of the page: its line (comments on it included), its level and its title."""

    start: int
    end: int
    level: int
    title: str
    #: The heading as MediaWiki shows it, without tags (what its anchor is made of); "" when not known.
    shown: str = ""


@dataclass(frozen=True)
class Reading:
    """MediaWiki's reading of one revision of the page (see :mod:`bot.sections`)."""

    #: The page's own headings (not those a template brings), in order, every level.
    headings: list[Heading]
    #: Templates called on the page whose text shows a heading of their own.
    heading_templates: frozenset[str] = frozenset()
    #: The wiki's extension tags and those known by their syntax: what they hold is not the page's wikitext.
    extension_tags: frozenset[str] = INERT_TAGS


@dataclass(frozen=True)
class Enclosing:
    """The level-2 section a subsection lies in (see :func:`parse_subsections`)."""

    key: str
    heading: str
    start: int
    end: int


@dataclass
class Section:
    heading: str
    #: Character offsets of the section (heading included) in the page text.
    start: int
    end: int
    text: str
    signatures: list[Signature] = field(default_factory=list)
    key: str = ""
    #: The revision that added the heading line (UNKNOWN when the history does not say).
    origin: int = UNKNOWN
    author: str | None = None
    comments: list[Comment] = field(default_factory=list)
    #: The bot's replies here (set by :func:`bot.forum_decisions.mark_answered`).
    replies: list[Comment] = field(default_factory=list)
    #: The bot has replied here (one of its revisions added lines, or its signature where history is silent).
    answered: bool = False
    #: The section's text with comments and non-wikitext tags blanked (same offsets as ``text``).
    masked: str = ""
    #: The heading as MediaWiki shows it (its anchor's text), when MediaWiki read the page; else "".
    shown: str = ""
    #: Templates whose text shows a heading (a reply below one of them would read as under that heading).
    heading_templates: frozenset[str] = frozenset()
    #: Extension tags (the wiki's, and those known by their syntax): a reply never lands inside one.
    extension_tags: frozenset[str] = INERT_TAGS
    #: A reply goes after the line holding this offset (the question's signature, or a follow-up).
    reply_after: int = -1
    #: For a subsection read as a section of its own (a question merged into an older thread): the section it
    #: lies in; ``None`` for a level-2 section.
    within: Enclosing | None = None

    @property
    def created(self) -> datetime | None:
        return self.signatures[0].timestamp if self.signatures else None

    @property
    def opening(self) -> str:
        """The question as first written: the text after the heading line, up to its first signature."""
        body_start = self.text.find("\n") + 1 if "\n" in self.text else len(self.text)
        first = self.signatures[0].start - self.start if self.signatures else len(self.text)
        return self.text[body_start:max(first, body_start)].rstrip(" \t-—–~")

    @property
    def fingerprint(self) -> str:
        """What the section is, whichever revision put it on the page: its heading, its opening and its
        first signature.  A section removed and restored, moved, or re-added by someone else has the same."""
        return self._hashed(self.heading)

    @property
    def question(self) -> str:
        """What the section asks, whatever its heading says now: its opening and its first signature (a renamed
        section keeps it)."""
        return self._hashed()

    def _hashed(self, *before: str) -> str:
        """*before*, the opening's words and the first signature, hashed."""
        first = self.signatures[0] if self.signatures else None
        signed = f"{first.user} {first.timestamp.isoformat()}" if first else ""
        words = "\n".join((*before, " ".join(self.opening.split()), signed))
        return hashlib.sha256(words.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def bot_replies(self, bot: str, own: Callable[[], list[OwnEdit]] | None = None) -> list[Comment]:
        """The comments that are the bot's replies: by history, or, on lines whose revision is not known,
        the bot's signature where one of its own revisions (*own*) saved a reply to this section then.

        Lines a bot revision added that carry only someone else's signature are that person's text put
        back (the bot undoing its own edit restores what it had displaced), not a reply.  A signature
        anyone could have typed counts only with a bot revision behind it: without *own*, never.
        """
        wanted = normalize_user(bot)
        starts = [comment.start for comment in self.comments]
        signers: dict[Comment, list[Signature]] = {}
        for signature in self.signatures:
            index = bisect_right(starts, signature.start) - 1
            if index >= 0 and signature.start < self.comments[index].end:
                signers.setdefault(self.comments[index], []).append(signature)
        found = []
        for comment in self.comments:
            names = {signature.user for signature in signers.get(comment, [])}
            if comment.user == wanted and (not names or wanted in names):
                found.append(comment)
            elif not comment.user and wanted in names and own is not None and any(
                    self._saved_by_bot(signature, own()) for signature in signers[comment]
                    if signature.user == wanted):
                found.append(comment)
        return found

    def _saved_by_bot(self, signature: Signature, own: list[OwnEdit]) -> bool:
        """Whether one of the bot's revisions, saved when this signature says, replied to this section: its
        summary names the section, or (the heading renamed since) it added this signature to the section that
        began with this one's first signature."""
        wanted = summary_section(self)
        return any(signature.timestamp <= edit.timestamp < signature.timestamp + SIGNED_WITHIN
                   and (edit.comment.startswith(f"/* {wanted} */") or self._added_by(edit, signature))
                   for edit in own)

    def _added_by(self, edit: OwnEdit, signature: Signature) -> bool:
        """Whether the bot's revision *edit* added *signature* to this section, whatever its heading was then
        (read from the revision's text and its parent's)."""
        if edit.texts is None or not self.signatures or not edit.comment.startswith("/* "):
            return False
        first = self.signatures[0]

        def holds(text: str | None) -> bool:
            for section in parse_sections(text) if text else []:
                if section.signatures and (section.signatures[0].user, section.signatures[0].timestamp) == (
                        first.user, first.timestamp):
                    return any((found.user, found.timestamp) == (signature.user, signature.timestamp)
                               for found in section.signatures[1:])
            return False

        return holds(edit.texts(edit.revision)) and not holds(edit.texts(edit.parent) if edit.parent else None)


#: What mwparserfromhell could read as markup in a heading: without any, the heading is its words.
_MARKUP = re.compile(r"[{}\[\]<>&'|~_]")


def heading_text(raw: str) -> str:
    """A heading's wikitext as the title the bot knows a section by: its words, markup, comments, tags and
    extra spaces gone (the first 300 characters read)."""
    raw = raw[:300]
    return " ".join((parse_wikitext(raw).strip_code() if _MARKUP.search(raw) else raw).split())


def find_headings(text: str, tags: frozenset[str] = INERT_TAGS) -> list[Heading]:
    """Every heading of *text* by MediaWiki's rules (:func:`heading_level`), in order; see the module's
    documentation.  *tags* are the extension tags whose content is not the page's wikitext.  Linear.
    """
    spans = inert_spans(text, tags)
    comments = [span for span in spans if text.startswith("<!--", span[0])]
    masked = blank(text, spans)
    without_comments = blank(text, comments)
    calls = merged(brace_spans(masked) + brace_spans(masked, "[[", "]]"))
    ordered = merged(spans)
    found = []
    for line in re.finditer(r"(?m)^=", masked):
        start = line.start()
        if inside(calls, start):
            continue
        end = start
        while True:  # the line ends at the first newline outside comments and extension tags
            end = text.find("\n", end)
            if end == -1:
                end = len(text)
                break
            if not inside(ordered, end):
                break
            end += 1
        visible = without_comments[start:end].replace("\n", " ")
        level = heading_level(visible)
        if level == 0:
            continue
        title = heading_text(text[start + level:start + len(visible.rstrip(" \t")) - level])
        found.append(Heading(start, end, level, title))
    return found


def page_lead(page_text: str, reading: Reading | None = None) -> str:
    """The text above the first heading, where a ``{{bots}}`` for the whole page stands."""
    headings = reading.headings if reading is not None else find_headings(page_text)
    return page_text[:headings[0].start] if headings else page_text


def parse_sections(page_text: str, attribution: Attribution | None = None,
                   reading: Reading | None = None) -> list[Section]:
    """The level-2 sections of *page_text*, in order, with their identity, author and comments.

    *attribution* (for this text) gives who added which line; without it,
    every line's origin is unknown and the text decides.  *reading* is
    MediaWiki's reading of this text (where its headings are); without it,
    :func:`find_headings` finds them.
    """
    page = _PageLines(page_text, attribution, reading)
    headings = [heading for heading in page.headings if heading.level <= 2]
    sections = []
    seen: Counter = Counter()
    for index, heading in enumerate(headings):
        if heading.level != 2:
            continue
        section = page.section(heading, headings[index + 1].start if index + 1 < len(headings) else len(page_text))
        if section.origin > UNKNOWN:
            section.author = page.users.get(section.origin) or (section.signatures[0].user if section.signatures
                                                                  else None)
        seen[section.key] += 1
        if seen[section.key] > 1:
            section.key = f"{section.key} #{seen[section.key]}"
        sections.append(section)
    return sections


def parse_subsections(page_text: str, attribution: Attribution | None = None, reading: Reading | None = None,
                      sections: list[Section] | None = None) -> list[Section]:
    """Every subsection of *page_text* (a heading of level 3 or deeper inside a level-2 section), in order, read
    as a section of its own: up to the next heading of its level or a higher one, its ``within`` the level-2
    section it lies in.

    A thread merged into an older one under a subheading is such a subsection: its author is whoever the history
    says wrote its first signature's line (not whoever moved it there), else that signature's user.  *sections*
    are the page's level-2 sections as :func:`parse_sections` read them from the same text, if at hand.
    """
    page = _PageLines(page_text, attribution, reading)
    if sections is None:
        sections = parse_sections(page_text, attribution, reading)
    parents = {section.start: section for section in sections}
    found = []
    parent: Section | None = None
    for index, heading in enumerate(page.headings):
        if heading.level <= 2:
            parent = parents.get(heading.start)
            continue
        if parent is None:
            continue
        end = next((later.start for later in page.headings[index + 1:] if later.level <= heading.level), len(page_text))
        section = page.section(heading, min(end, parent.end))
        section.within = Enclosing(parent.key, parent.heading, parent.start, parent.end)
        if section.signatures:
            first = section.signatures[0]
            owner = page.owner(first.start)
            section.author = (page.users.get(owner) if owner > UNKNOWN else None) or first.user
        found.append(section)
    return found


class _PageLines:
    """One text of the page as sections are read from it: its headings, lines, owners and masked text."""

    def __init__(self, page_text: str, attribution: Attribution | None, reading: Reading | None) -> None:
        self.text = page_text
        self.masked = mask_inert(page_text)
        self.starts = line_starts(page_text)
        self.owners = attribution.owners if attribution is not None else None
        self.users = attribution.users if attribution is not None else {}
        self.headings = reading.headings if reading is not None else find_headings(page_text)
        self.templates = reading.heading_templates if reading is not None else frozenset()
        self.tags = reading.extension_tags if reading is not None else INERT_TAGS

    def owner(self, offset: int) -> int:
        """The revision that added the line holding *offset* (UNKNOWN without an attribution)."""
        return self.owners[bisect_right(self.starts, offset) - 1] if self.owners else UNKNOWN

    def section(self, heading: Heading, end: int) -> Section:
        """The section headed by *heading*, up to *end*: its signatures, comments, origin, identity (without the
        ``#n`` of a repeated one) and the author the text alone gives."""
        start = heading.start
        section = Section(heading=heading.title, start=start, end=end, text=self.text[start:end],
                          masked=self.masked[start:end], shown=heading.shown, heading_templates=self.templates,
                          extension_tags=self.tags)
        section.signatures = [dataclasses.replace(signature, start=signature.start + start,
                                                  end=signature.end + start)
                              for signature in signatures_in(section.text, section.masked)]
        section.reply_after = section.signatures[0].end if section.signatures else heading.end
        section.comments = _comments(self.starts, self.owners, self.users, start, end)
        section.origin = self.owner(start)
        section.author = section.signatures[0].user if section.signatures else None
        if section.origin > UNKNOWN:
            section.key = f"{section.heading} @ r{section.origin}"
        elif section.origin == CHANGED:  # added or retitled after the revision read: no identity to match
            section.key = f"{section.heading} @ changed"
        else:
            created = section.created.strftime("%Y-%m-%dT%H:%MZ") if section.created else "unsigned"
            section.key = f"{section.heading} @ {created}"
        return section


def _comments(starts: list[int], owners: list[int] | None, users: dict[int, str], start: int,
              end: int) -> list[Comment]:
    """The section's lines after its heading, grouped into runs added by one revision."""
    first = bisect_right(starts, start)  # the line after the heading line
    last = bisect_right(starts, end - 1) if end > start else first
    comments: list[Comment] = []
    run_start = first
    for line in range(first, last + 1):
        if line < last and (owners is None or owners[line] == owners[run_start]):
            continue
        if line > run_start:
            owner = owners[run_start] if owners else UNKNOWN
            comment_end = min(starts[line] if line < len(starts) else end, end)
            comments.append(Comment(owner, users.get(owner, "") if owner > UNKNOWN else "", starts[run_start],
                                    comment_end))
        run_start = line
    return comments


@dataclass(frozen=True)
class FollowupKey:
    """The identity of a follow-up: its section's key and the revision that added the comment it is.

    Stored as ``<section key> / r<revision>`` (:meth:`__str__`), the form records have always had; :meth:`parse`
    reads it back, and is the only reader of that form.
    """

    section: str
    revision: int

    def __str__(self) -> str:
        return f"{self.section} / r{self.revision}"

    @classmethod
    def parse(cls, key: str) -> FollowupKey | None:
        """The follow-up *key* names, ``None`` for a section's key."""
        found = _FOLLOWUP_KEY.fullmatch(key)
        return cls(found[1], int(found[2])) if found else None


def followup_key(section_key: str, revision: int) -> str:
    """The identity of a follow-up (:class:`FollowupKey`), as stored: its section's and the revision that added it."""
    return str(FollowupKey(section_key, revision))


def is_followup_key(key: str) -> bool:
    """Whether *key* is a follow-up's identity (:class:`FollowupKey`), not a section's."""
    return FollowupKey.parse(key) is not None


def key_origin(key: str) -> int | None:
    """The revision that added the heading of the section whose identity is *key* (``heading @ r<revision>``,
    maybe ``#n``); ``None`` for a follow-up's key or one the history did not give."""
    found = _SECTION_KEY.fullmatch(key)
    return int(found[1]) if found and not is_followup_key(key) else None


def thread_users(section: Section) -> set[str]:
    """The users the page's history names as writers of *section*: its author and the authors of its comments
    (those a reply may address)."""
    return {user for user in (section.author, *(comment.user for comment in section.comments)) if user}


def find_section(sections: list[Section], key: str) -> Section | None:
    """The section whose identity is *key*; for a follow-up's key, that section, ``answered`` when the bot
    has replied below the follow-up (``None`` when the follow-up is no longer there)."""
    followup = _FOLLOWUP_KEY.fullmatch(key)
    wanted = followup[1] if followup else key
    section = next((section for section in sections if section.key == wanted), None)
    if section is None or followup is None:
        return section
    comment = next((comment for comment in section.comments if comment.owner == int(followup[2])), None)
    if comment is None:
        return None
    signed = next((signature.end for signature in section.signatures
                   if comment.start <= signature.start < comment.end), max(comment.end - 1, comment.start))
    return dataclasses.replace(section, answered=any(reply.start > comment.start for reply in section.replies),
                               reply_after=signed)


def summary_section(section: Section) -> str:
    """The section's name for an edit summary's ``/* … */`` link: the heading as MediaWiki shows it (what
    its anchor is made of), with no control or format characters and no link, template or signature
    syntax (an edit summary renders ``[[…]]`` as a link; ``*/`` would end the link)."""
    text = "".join(" " if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") else char
                   for char in section.shown or section.heading)
    text = " ".join(text.split())
    for pattern, spaced in ((r"\[(?=\[)", "[ "), (r"\](?=\])", "] "), (r"\{(?=\{)", "{ "), (r"\}(?=\})", "} "),
                            (r"~(?=~)", "~ "), (r"\*/", "* /")):
        text = re.sub(pattern, spaced, text)
    return text[:150]


def relinked(summary: str, section: Section) -> str:
    """*summary* (``/* … */ what``, as :func:`bot.render.edit_summary` writes it) linking *section* instead: the
    reply went to another section than the one it was written for (a question merged into another thread)."""
    linked, found, what = summary.partition(" */ ")
    return f"/* {summary_section(section)} */ {what}" if found and linked.startswith("/* ") else summary


def heading_level(line: str, space: str = " \t") -> int:
    """The level of the heading *line* is by MediaWiki's rules, *space* allowed after it (0: none).

    A line of ``=`` only is a heading of level ``(n - 1) // 2`` (``=====`` is a level-2 heading titled
    ``=``); otherwise the level is the smaller of the leading (at most 6) and trailing runs of ``=``.
    """
    kept = line.rstrip(space)
    trail = len(kept) - len(kept.rstrip("="))
    if trail == 0 or not kept.startswith("="):
        return 0
    if trail == len(kept):
        return min(6, (trail - 1) // 2) if trail >= 3 else 0
    return min(trail, len(kept) - len(kept.lstrip("=")), 6)


def in_forum(title: str, forum: str) -> bool:
    """Whether the page *title* is the forum page *forum* or one of its archive pages (``<forum>/Archive/…``),
    underscores read as spaces, as MediaWiki reads titles."""
    def spaced(text: str) -> str:
        return re.sub(" +", " ", text.replace("_", " ")).lstrip()

    page = spaced(title).rstrip()
    return bool(page) and (page == spaced(forum).rstrip() or page.startswith(spaced(forum) + "/Archive/"))


def close_matches(sections: list[Section], title: str) -> list[str]:
    return difflib.get_close_matches(title, [section.heading for section in sections], n=5, cutoff=0.4)


def mentions(text: str, bot: str) -> bool:
    """Whether *text* pings *bot*: ``{{ping|Bot}}`` (and its aliases) or a link to its user page."""
    wanted = normalize_user(bot)
    masked = mask_inert(text)
    for ping in _PING.finditer(masked):
        if wanted in {normalize_user(name.split("=")[-1]) for name in ping.group(1).split("|")}:
            return True
    return any(normalize_user(link["name"]) == wanted for link in re.finditer(_USER_LINK, masked))


@dataclass
class Request:
    """What the asker gave: the question, their own queries, the entities they mention, the thread.

    ``previous_query`` is the bot's own last final query in the thread, which a follow-up revises.
    """

    heading: str
    question: str
    queries: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    thread: str = ""
    previous_query: str = ""
    #: When the section was started (its first signature), if it is signed.
    created: datetime | None = None
    #: Solved requests like this one, shortened for the prompt (set by the watcher from the example store).
    examples: list = field(default_factory=list)

    def to_context(self):
        from agent import AgentContext

        return AgentContext(draft_queries=list(self.queries), entities=list(self.entities), thread=self.thread,
                            previous_query=self.previous_query, examples=list(self.examples))


def _template_query(template: mwparserfromhell.nodes.Template) -> str | None:
    name = str(template.name).strip().lower()
    if not name.startswith("sparql"):
        return None
    parameter = "query" if template.has("query") else "1" if template.has("1") else None
    if parameter is None:
        return None
    value = str(template.get(parameter).value)
    return value.replace("{{!}}", "|").replace("{{=}}", "=").strip()


def _queries(code: mwparserfromhell.wikicode.Wikicode) -> list[str]:
    found: list[str] = []
    for node in code.ifilter(recursive=True):
        if isinstance(node, mwparserfromhell.nodes.Template):
            query = _template_query(node)
        elif isinstance(node, mwparserfromhell.nodes.Tag) and str(node.tag).lower() in _CODE_TAGS:
            content = str(node.contents).strip() if node.contents is not None else ""
            language = str(node.get("lang").value).strip().lower() if node.has("lang") else ""
            query = content if language == "sparql" or _SPARQL_WORDS.search(content) else None
        else:
            query = None
        if query:
            found.append(query)
    for match in _QUERY_URL.finditer(str(code)):
        found.append(unquote(match.group(1)).strip())
    return list(dict.fromkeys(found))


def _entities(code: mwparserfromhell.wikicode.Wikicode) -> list[str]:
    found: list[str] = []
    for template in code.ifilter_templates(recursive=True):
        prefix = _ENTITY_TEMPLATES.get(str(template.name).strip().lower())
        if prefix and template.has("1"):
            value = str(template.get("1").value).strip().upper()
            found.append(value if value[:1] in "QP" else prefix + value)
    found += [match.upper() for match in _ENTITY_LINK.findall(str(code))]
    return list(dict.fromkeys(found))


def plain_text(wikitext: str) -> str:
    """What a reader sees of *wikitext* as words: no markup, no code blocks, no query templates or links."""
    code = parse_wikitext(_QUERY_URL.sub(" ", wikitext))
    for node in code.filter(recursive=False):
        if isinstance(node, mwparserfromhell.nodes.Tag) and str(node.tag).lower() in _CODE_TAGS:
            code.remove(node)
        elif isinstance(node, mwparserfromhell.nodes.Template) and _template_query(node) is not None:
            code.remove(node)
    for template in code.filter_templates(recursive=False):  # {{Q|Q42}} reads as Q42, not as nothing
        prefix = _ENTITY_TEMPLATES.get(str(template.name).strip().lower())
        if prefix and template.has("1"):
            value = str(template.get("1").value).strip().upper()
            code.replace(template, value if value[:1] in "QP" else prefix + value)
    return " ".join(code.strip_code(normalize=True, collapse=True).split())


def _without_signatures(text: str, offset: int, signatures: list[Signature]) -> str:
    """*text* (starting at page offset *offset*) with the given signatures cut out."""
    pieces, position = [], 0
    for signature in signatures:
        start, end = signature.start - offset, signature.end - offset
        if 0 <= start and end <= len(text):
            pieces.append(text[position:start].rstrip(" \t-—–~"))
            position = end
    pieces.append(text[position:])
    return "".join(pieces)


def thread_text(section: Section, start: int, end: int) -> str:
    """The words of the thread between page offsets *start* and *end*, the last THREAD_CHARS kept: each comment
    as plain words and the name of the user who signed it; each reply of the bot as one line saying so (the
    model is given its final query apart, never its reply flattened into words).

    Only the last 2 x THREAD_CHARS characters are read: plain words are never longer than the wikitext they
    come from.
    """
    position = max(start, end - 2 * THREAD_CHARS)
    pieces: list[str] = []
    for reply in [reply for reply in section.replies if reply.end > position and reply.start < end]:
        pieces.append(_signed_words(section, position, max(position, reply.start)))
        pieces.append(f"{_BOT_REPLY}\n")
        position = max(position, reply.end)
    pieces.append(_signed_words(section, position, end))
    lines = " ".join(pieces).splitlines()
    return "\n".join(line.strip() for line in lines if line.strip())[-THREAD_CHARS:]


def _signed_words(section: Section, start: int, end: int) -> str:
    """The plain words between page offsets *start* and *end*, each signature reduced to its user name."""
    pieces: list[str] = []
    position = start
    for signature in section.signatures:
        if signature.start < position or signature.end > end:
            continue
        pieces.append(plain_text(section.text[position - section.start:signature.start - section.start])
                      .rstrip(" -—–~"))
        pieces.append(f"— {signature.user}\n")
        position = signature.end
    pieces.append(plain_text(section.text[position - section.start:end - section.start]))
    return " ".join(pieces)


def _by_author(section: Section) -> list[str]:
    """The parts of the section signed by its author (the opening included), each up to its signature."""
    parts, position = [], section.start + len(section.text.split("\n", 1)[0])
    for signature in section.signatures:
        if signature.user == section.author and signature.end - position <= MAX_REQUEST_CHARS:
            parts.append(section.text[position - section.start:signature.end - section.start])
        position = signature.end
    return parts or [section.opening[:MAX_REQUEST_CHARS]]


def extract_request(section: Section) -> Request:
    """The heading and the question (without markup, queries or signature), the asker's queries and entities."""
    if len(section.opening) > MAX_REQUEST_CHARS:
        raise ValueError(f"the question is longer than {MAX_REQUEST_CHARS} characters")
    question = plain_text(section.opening)
    combined = "".join(_by_author(section))
    code = parse_wikitext(combined[:2 * MAX_REQUEST_CHARS])
    return Request(heading=section.heading,
                   question=f"{section.heading}\n\n{question}" if question else section.heading,
                   queries=_queries(code), entities=_entities(code),
                   thread=thread_text(section, _opening_end(section), section.end), created=section.created)


def _opening_end(section: Section) -> int:
    """Where the question ends in the page: its first signature's end (the section's end when it is unsigned)."""
    return section.signatures[0].end if section.signatures else section.end


@dataclass(frozen=True)
class FollowUp:
    """A signed comment under the bot's last reply, by the asker or pinging the bot: answered in the thread."""

    #: The revision that added it: its identity.
    revision: int
    user: str
    start: int
    end: int
    #: The indentation of the bot's answer to it.
    depth: int


def extract_followup(section: Section, followup: FollowUp, previous_query: str | None) -> Request:
    """The follow-up as a request: its words, the whole thread, the bot's last query as the draft to revise.

    A ping in a section the bot has not answered comes after the section's own question, which it is
    about: the request holds both, and the asker's queries.
    """
    text = section.text[followup.start - section.start:followup.end - section.start]
    signatures = [signature for signature in section.signatures if followup.start <= signature.start < followup.end]
    words = plain_text(_without_signatures(text, followup.start, signatures))
    code = parse_wikitext(text[:2 * MAX_REQUEST_CHARS])
    queries = _queries(code)
    entities = _entities(code)
    # The thread before the follow-up; a ping's question is the section's own, given in the question already.
    since = section.start + len(section.text.split("\n", 1)[0])
    if not section.replies and len(section.opening) <= MAX_REQUEST_CHARS:
        asked = extract_request(section)
        words = f"{plain_text(section.opening)}\n\n{words}".strip()
        queries, entities = asked.queries + queries, asked.entities + entities
        since = _opening_end(section)
    return Request(heading=section.heading, question=f"{section.heading}\n\n{words}" if words else section.heading,
                   queries=[query for query in dict.fromkeys(queries) if query != previous_query],
                   entities=list(dict.fromkeys(entities)), thread=thread_text(section, since, followup.start),
                   previous_query=previous_query or "", created=section.created)


def previous_query(section: Section, bot: str) -> str | None:
    """The final query of the bot's last reply in the section, read back from the page."""
    replies = section.replies or section.bot_replies(bot)
    if not replies:
        return None
    last = replies[-1]
    found = _queries(parse_wikitext(section.text[last.start - section.start:last.end - section.start]))
    return found[0] if found else None


@dataclass(frozen=True)
class Post:
    """A signed reply in a section: the text since the previous signature, and who signed it when."""

    user: str
    timestamp: datetime
    #: The reply's wikitext, its signature left out.
    text: str


def posts(section: Section) -> list[Post]:
    """The replies after the section's opening post, one per signature, in page order."""
    found, position = [], section.signatures[0].end if section.signatures else section.end
    for signature in section.signatures[1:]:
        found.append(Post(signature.user, signature.timestamp,
                          section.text[position - section.start:signature.start - section.start]))
        position = signature.end
    return found


def queries_in(wikitext: str) -> list[str]:
    """The queries in *wikitext*: ``{{SPARQL}}``, code blocks of SPARQL and query service links, each once.

    Text longer than :data:`MAX_REQUEST_CHARS`, or without a query template, a code block or a query
    service link, is not parsed (mwparserfromhell is quadratic on unclosed ``{{``): it holds no query here.
    """
    if len(wikitext) > MAX_REQUEST_CHARS or not _MAY_HOLD_A_QUERY.search(wikitext):
        return []
    return _queries(parse_wikitext(wikitext))


def short_links(wikitext: str) -> list[str]:
    """The ``https://w.wiki/…`` short links in *wikitext*, each once, outside comments and non-wikitext tags."""
    return list(dict.fromkeys(_SHORT_LINK.findall(mask_inert(wikitext))))


def query_in_url(url: str) -> str | None:
    """The query a query service link opens (``https://query.wikidata.org/#SELECT…``), ``None`` for other URLs."""
    match = _QUERY_URL.match(url)
    return unquote(match.group(1)).strip() if match else None
