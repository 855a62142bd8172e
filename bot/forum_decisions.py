"""What the bot decides about a section of the forum, from what :mod:`bot.forum` read of it.

Whether the bot has answered a section (its own replies, found through the page's history and its own
revisions, never through a signature someone typed), whether someone else already answered it with a
query, which follow-up below the bot's reply is waiting and whom a reply answers, and where in the page
the reply goes (:func:`reply_points`): after the asker's question, never inside an element someone opened
and left open (a hidden ``<div>``), never below a heading the page shows inside the section; at the end of
the thread, or, where MediaWiki's check refuses that, right after the text it answers; above the lines saved
in the thread while the reply was written (:func:`saved_meanwhile`), which are answered at a later pass.
:func:`insert_reply` changes nothing but the insertion point.

:mod:`bot.forum` reads the page (sections, signatures, comments, requests); nothing here reads wikitext
that module has not already located, and every scan stays linear in the page size.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.forum import (
    CHANGED, Comment, FollowUp, FollowupKey, Reading, Section, find_section, heading_level, is_followup_key, key_origin,
    mentions, normalize_user, parse_sections, parse_subsections, posts, queries_in,
)
from bot.history import Attribution, OwnEdit
from bot.wikiparse import brace_spans, inert_spans, inside, merged

#: The deepest indentation of a reply (a follow-up indented deeper is answered at this depth).
MAX_DEPTH = 10
#: A heading below the section's own (level 3 or deeper) on a line of its own.
_SUBHEADING = re.compile(r"^===+[^=\n].*===+[ \t]*$", re.MULTILINE)
#: Elements a reply must not be left inside: MediaWiki's paired HTML tags.
_PAIRED = ("div|span|table|tr|td|th|caption|tbody|thead|tfoot|center|blockquote|font|small|big|b|i|u|s|strike|"
           "sub|sup|code|tt|kbd|samp|var|cite|q|abbr|dfn|mark|ins|del|bdi|bdo|ruby|rb|rp|rt|rtc|data|time|p|ul|ol|"
           "li|dl|dt|dd|h[1-6]|em|strong")
_ELEMENT_TAG = re.compile(r"<(/?)(" + _PAIRED + r")\b[^<>]*?(/?)>", re.IGNORECASE)
_TABLE_EDGE = re.compile(r"^[ \t:]*(\{\||\|\})", re.MULTILINE)
_HEADING_TAG = re.compile(r"<h[12][\s>/]", re.IGNORECASE)
_NOT_SHOWN = re.compile(r"<!--.*?(?:-->|$)|<includeonly\s*>.*?(?:</includeonly\s*>|$)"
                        r"|</?(?:noinclude|onlyinclude)\s*/?>", re.IGNORECASE | re.DOTALL)


def mark_answered(sections: list[Section], bot: str, own: Callable[[], list[OwnEdit]] | None = None) -> None:
    """Set ``replies`` and ``answered`` on each section: whether the bot has replied there.

    *own* gives the bot's own revisions of the page (asked for only when a bot signature stands on lines
    whose revision is not known).
    """
    for section in sections:
        section.replies = section.bot_replies(bot, own)
        section.answered = bool(section.replies)


def locate_after_change(attribution: Attribution, text: str, key: str, bot: str, reading: Reading | None = None,
                        own: Callable[[], list[OwnEdit]] | None = None, question: str | None = None) -> Section | None:
    """The section *key* in *text*, a newer text of the page than the one *attribution* describes.

    Lines changed since are attributed to :data:`CHANGED` (someone, not
    known who), so a section added meanwhile cannot take this one's identity.
    *reading* is MediaWiki's reading of *text*, *own* the bot's revisions.
    With *question* (the section's :attr:`Section.question`), a section gone because its question was merged
    into another thread is found where it went (:func:`merged_question`).
    """
    current = attribution if text == attribution.text else attribution.advance(CHANGED, "", text)
    return locate(text, key, bot, current, reading, own, question)


def locate(text: str, key: str, bot: str, attribution: Attribution | None = None, reading: Reading | None = None,
           own: Callable[[], list[OwnEdit]] | None = None, question: str | None = None) -> Section | None:
    """The section *key* in *text* (whose attribution is *attribution*, if known), answered or not; with
    *question*, where its question went when it was merged into another thread as a subsection."""
    sections = parse_sections(text, attribution, reading)
    mark_answered(sections, bot, own)
    found = find_section(sections, key)
    if found is not None or question is None:
        return found
    subsections = parse_subsections(text, attribution, reading, sections)
    mark_answered(subsections, bot, own)
    return merged_question(sections, subsections, key, question)


def merged_question(sections: list[Section], subsections: list[Section], key: str,
                    question: str | None) -> Section | None:
    """Where the question of the level-2 section *key*, no longer on the page, went: the subsection (of
    :func:`parse_subsections`) whose opening and first signature are the question's (the same
    :attr:`Section.question`, whatever its heading says now), else the one whose opening lines the history
    attributes to the revision that asked it (they keep their owner when moved); read under *key*.

    ``None`` when a level-2 section still holds the question as its own opening (renamed, not merged): that
    section is the question, and a subheading in it is no merged copy.
    """
    origin = key_origin(key)

    def asked_by_origin(section: Section) -> bool:
        """Whether the section's own opening (before its first signature and its first subheading) holds lines
        the question's revision added."""
        body = section.text.find("\n") + 1 or len(section.text)
        subheading = _SUBHEADING.search(section.masked, body)
        opening_end = min(section.signatures[0].end if section.signatures else section.end,
                          section.start + subheading.start() if subheading else section.end)
        return origin is not None and any(comment.owner == origin and comment.start < opening_end
                                          for comment in section.comments)

    if is_followup_key(key) or origin is None and question is None:
        return None
    if any(question is not None and section.question == question or asked_by_origin(section)
           for section in sections):
        return None
    found = next((section for section in subsections if question is not None and section.question == question),
                 None) or next((section for section in subsections if asked_by_origin(section)), None)
    return dataclasses.replace(found, key=key) if found is not None else None


@dataclass(frozen=True)
class SavedMeanwhile:
    """Lines saved at the end of a thread after the revision its reply was written from (see
    :func:`saved_meanwhile`)."""

    #: The end of the last line of the thread the reply's author read: the reply goes there, above the lines.
    read_end: int
    #: Where the lines saved meanwhile begin and end in the page.
    start: int
    end: int

    def signed_followup(self, section: Section, bot: str) -> bool:
        """Whether the lines are signed by the asker or ping the bot (signed by someone else than the bot): a
        follow-up, answered at a later pass.  Told by signatures, for the log; the next pass decides by the
        page's history (:func:`pending_followup`)."""
        wanted = normalize_user(bot)
        signed = {signature.user for signature in section.signatures
                  if self.start <= signature.start < self.end} - {wanted}
        return bool(signed) and (section.author in signed or mentions(
            section.masked[self.start - section.start:self.end - section.start], wanted))


def saved_meanwhile(page_text: str, section: Section) -> SavedMeanwhile | None:
    """The lines at the end of *section* (located by :func:`locate_after_change`) that were saved or changed after
    the revision the reply was written from, below every line of the thread that revision held; ``None`` when the
    thread ends with a line the reply's author read (or nothing was read: every line is new).

    A reader puts an answer right after the text it answers; what was saved while it was written is a
    follow-up to the answer, not a part of what it answers.  Blank lines are nobody's text: they neither end
    what was read nor begin what was saved.
    """
    written = [comment for comment in section.comments if page_text[comment.start:comment.end].strip()]
    first = len(written)
    while first and written[first - 1].owner == CHANGED:
        first -= 1
    if first in (0, len(written)):
        return None
    read = written[first - 1]
    return SavedMeanwhile(read.start + len(page_text[read.start:read.end].rstrip()), written[first].start,
                          written[-1].end)


def answered_by_human(section: Section, bot: str) -> bool:
    """Whether someone other than the asker and the bot already posted a query in a reply."""
    wanted = normalize_user(bot)
    return any(post.user not in (section.author, wanted) and queries_in(post.text) for post in posts(section))


#: Words with which an asker says their question is settled, by the languages the bot answers in: a small table,
#: read only in a comment the asker wrote and signed (:func:`settled_by_asker`).
SETTLED_PHRASES = {
    "en": ("found it", "found the answer", "found a solution", "found the solution", "figured it out",
           "never mind", "nevermind", "solved", "resolved", "sorted it out", "works now", "no longer needed"),
    "de": ("gefunden", "erledigt", "gelöst", "hat sich erledigt", "funktioniert jetzt", "nicht mehr nötig"),
    "fr": ("trouvé", "résolu", "réglé", "laissez tomber", "ça marche maintenant", "plus besoin"),
    "es": ("encontré", "lo encontré", "resuelto", "solucionado", "ya funciona", "olvídalo", "ya no hace falta"),
    "ru": ("нашёл", "нашел", "нашла", "решено", "решил", "решила", "разобрался", "разобралась", "уже не нужно"),
}
_SETTLED = re.compile(r"(?<!\w)(" + "|".join(sorted((re.escape(phrase) for phrases in SETTLED_PHRASES.values()
                                                     for phrase in phrases), key=len, reverse=True)) + r")(?!\w)",
                      re.IGNORECASE)
#: A word that, just before a phrase, turns it around ("not solved", "noch nicht gefunden", "pas trouvé").
_NEGATION = re.compile(r"(?:\b(?:not|no|nicht|nie|kein\w*|pas|jamais|ne|не|ни|ещё|еще|still|noch|yet|todavía|aún)|n't)"
                       r"\W*(?:\w+\W+)?$", re.IGNORECASE)
#: A question asked in words: a question mark not starting a SPARQL variable (``?item``), or Spanish's opening one.
_ASKS = re.compile(r"\?(?![\w$])|¿")
#: How much of a comment is read for its words: a settled question is said in a line or two.
SETTLED_CHARS = 2000


def says_settled(words: str) -> str | None:
    """The phrase with which *words* (a comment's text, comments and code blanked) say the question is settled,
    ``None`` when they do not, or when they ask something (a question mark in words: a follow-up asks anew).
    Only the first :data:`SETTLED_CHARS` characters are read, with one linear scan each."""
    words = words[:SETTLED_CHARS]
    if _ASKS.search(words):
        return None
    for found in _SETTLED.finditer(words):
        if not _NEGATION.search(words[max(0, found.start() - 40):found.start()]):
            return found.group(1).lower()
    return None


def answered_until(section: Section, key: str) -> int | None:
    """Where the text the reply to *key* answers ends in the page: the follow-up's (or ping's) comment that *key*
    names, ``None`` for the section's own question (it ends at its first signature)."""
    followup = FollowupKey.parse(key)
    if followup is None or followup.section != section.key:
        return None
    return max((comment.end for comment in section.comments if comment.owner == followup.revision), default=None)


def settled_by_asker(section: Section, after: int | None = None) -> str | None:
    """Why *section*'s question needs no answer from the bot, in the asker's own words: the last comment the asker
    wrote (by the page's history) and signed after page offset *after* (by default the end of the question)
    posts a query, or says the question is settled (:func:`says_settled`); ``None`` otherwise, or when that
    comment asks something new.

    Structure first: a query the asker posted in a reply; then a small table of phrases.  Text anyone else
    wrote, a signature anyone typed, or an asker's comment followed by a newer one of theirs settles nothing."""
    if not section.author or not section.signatures:
        return None
    after = section.signatures[0].end if after is None else after
    last = None
    for comment in section.comments:
        if comment.end <= after or comment.user != section.author:
            continue
        if any(max(comment.start, after) <= signature.start < comment.end and signature.user == section.author
               for signature in section.signatures):
            last = comment
    if last is None:
        return None
    start = max(last.start, after) - section.start
    masked = section.masked[start:last.end - section.start]
    if _ASKS.search(masked[:SETTLED_CHARS]):
        return None
    if queries_in(section.text[start:last.end - section.start]):
        return "the asker posted a query in the thread"
    phrase = says_settled(masked)
    return f'the asker said the question is settled ("{phrase}")' if phrase else None


def reply_depth(indent: int) -> int:
    """The depth of a reply to a comment indented *indent* levels: one deeper, at least 2, at most MAX_DEPTH."""
    return min(max(indent + 1, 2), MAX_DEPTH)


def pending_followup(section: Section, bot: str, read: int | None = None,
                     claimed: Sequence[tuple[int, int]] = ()) -> FollowUp | None:
    """The newest follow-up under the bot's last reply in *section*, if any: a signed comment by the asker,
    one that pings the bot, or a question merged into the thread under a subheading.

    Comments within *claimed* (page spans: the subsections where questions the bot recorded in sections of
    their own were merged, each answered there as its own question) are none: one question, one reply.

    Only comments the history attributes to a user other than the bot count,
    so the bot never answers its own text, and a comment is identified by
    the revision that added it.  A comment that stood in the thread when the
    bot's last reply was written is none, even below it: the reply went above
    what stood under the question (:func:`reply_points`), and its answer covered
    the thread as it was.  *read* is the revision that reply was written from
    (the state records it with the answer): a comment saved after it, while the
    reply was written, is a follow-up though older than the reply, which went
    above it (:func:`saved_meanwhile`).  Without *read* (a state lost), a comment
    saved before the bot's last reply is none.  The bot's replies are those
    :func:`mark_answered` found (with the bot's own revisions, so also after a
    lost state).
    """
    wanted = normalize_user(bot)
    replies = section.replies or section.bot_replies(wanted)
    if not replies:
        return None
    # The oldest revision whose comments the last reply did not cover.
    uncovered = min(read + 1, replies[-1].owner) if read is not None else replies[-1].owner
    found = None
    for comment in section.comments:
        if comment.start < replies[-1].end or not comment.user or comment.user == wanted \
                or comment.owner < uncovered \
                or any(comment.start < end and start < comment.end for start, end in claimed):
            continue
        text = section.masked[comment.start - section.start:comment.end - section.start]
        # A question moved here under a subheading of its own (a thread merged into this one) is signed by
        # its asker, not by whoever moved it.
        merged = _SUBHEADING.search(text) is not None
        signed = [signature for signature in section.signatures
                  if comment.start <= signature.start < comment.end
                  and (signature.user == comment.user or merged and signature.user != wanted)]
        if not signed:
            continue
        if comment.user != section.author and not merged and not mentions(text, wanted):
            continue
        indent = len(text) - len(text.lstrip(":*#"))
        found = FollowUp(comment.owner, comment.user, comment.start, comment.end, reply_depth(indent))
    return found


def ping_in(section: Section, bot: str) -> Comment | None:
    """A comment (by a known user other than the bot) that pings the bot, the newest one."""
    wanted = normalize_user(bot)
    found = None
    for comment in section.comments:
        text = section.masked[comment.start - section.start:comment.end - section.start]
        if comment.user and comment.user != wanted and mentions(text, wanted):
            found = comment
    return found


def _shows_heading(raw: str, masked: str, templates: frozenset[str]) -> bool:
    """Whether the line (*raw*, and *masked* with inert parts blanked) shows a heading of level 1 or 2 on
    the page: one MediaWiki does not count as a section (after a comment or a ``<noinclude>`` tag), an
    HTML ``<h1>``/``<h2>``, or a call of a template whose text shows one."""
    if 1 <= heading_level(_NOT_SHOWN.sub("", raw), " \t\r\f\v") <= 2 or _HEADING_TAG.search(masked):
        return True
    return any(re.search(r"\{\{\s*(?:template\s*:\s*)?" + re.escape(name).replace(r"\ ", "[ _]+") + r"\s*[|}]",
                         masked, re.IGNORECASE) for name in templates)


def reply_point(page_text: str, section: Section) -> int:
    """Where a reply to *section* goes: the end of the last line, after the one holding
    ``section.reply_after``, at which every element opened in the section is closed again, none opened
    before it was closed, and no heading the page shows began.

    So a reply never lands inside a ``<div>`` (or a table, a ``<span>``...) that someone opened below the
    question, hidden or not, nor inside a template call (``{{#if:1|`` on one line, its ``}}`` lines below:
    the reply would be an argument of it), nor inside a comment or an extension tag (a ``<ref>`` opened on the
    line before: the footnote would hold the reply, its signature unexpanded), nor after the closing tag of one
    opened above the section, nor below a heading that shows inside the section.  A heading-shaped line inside
    a comment or an extension tag (``== X ==`` in a ``<pre>``) shows no heading and stops nothing.  When no
    line qualifies (the question itself opens an element it never closes), the reply goes after the section's
    last line, and MediaWiki's check of the edit (:mod:`bot.edit_check`) has the last word.
    """
    return reply_points(page_text, section)[0]


def reply_points(page_text: str, section: Section) -> list[int]:
    """The places a reply to *section* may go, in the order they are tried: :func:`reply_point` (the end of
    the thread), then, when it is not the same, the end of the text the reply answers: the first line, from
    the one holding ``section.reply_after`` (the question's signature, or the follow-up's), that
    :func:`reply_point` would accept too.

    Lines saved at the end of the thread while the reply was written (:func:`saved_meanwhile`, in a section
    located by :func:`locate_after_change`) are not what it answers: the end of the thread is then the end of
    what was read, above them, where a place above them qualifies (else the places are as if nothing was
    saved meanwhile).

    What someone saves below the question can render what no line of its wikitext shows (a heading in a
    gallery's caption, in a ``<poem>``, in a footnote that a ``<references/>`` lists there), and MediaWiki's
    check then refuses the end of the thread; the second place lies above all of it, so nothing saved below
    the question can keep the reply from where a reader of the question sees it.  It never lies inside what
    someone opened below the question: the line it ends closes everything opened in the section.
    """
    places = _places(page_text, section)
    if not places:
        return [section.start + len(page_text[section.start:section.end].rstrip())]
    meanwhile = saved_meanwhile(page_text, section)
    if meanwhile is not None:
        places = [place for place in places if place <= meanwhile.read_end] or places
    return list(dict.fromkeys((places[-1], places[0])))


def _places(page_text: str, section: Section) -> list[int]:
    """Every line end of *section* where a reply may go (see :func:`reply_point`), in page order."""
    masked = section.masked
    after = max(section.reply_after, section.start)
    open_elements: list[str] = []
    calls = brace_spans(masked)
    inert = merged(inert_spans(page_text, section.extension_tags))
    found = []
    position = page_text.find("\n", section.start, section.end)  # the heading line is not the reply's place
    position = section.end if position == -1 else position + 1
    while position < section.end:
        line_end = page_text.find("\n", position, section.end)
        line_end = section.end if line_end == -1 else line_end
        line = masked[position - section.start:line_end - section.start]
        if not inside(inert, position) and _shows_heading(page_text[position:line_end], line,
                                                          section.heading_templates):
            break
        closed_above = False
        for tag in _ELEMENT_TAG.finditer(line):
            name = tag.group(2).lower()
            if tag.group(3):
                continue
            if not tag.group(1):
                open_elements.append(name)
            elif name in open_elements:
                del open_elements[len(open_elements) - 1 - open_elements[::-1].index(name):]
            else:
                closed_above = True
        for edge in _TABLE_EDGE.finditer(line):
            if edge.group(1) == "{|":
                open_elements.append("{|")
            elif "{|" in open_elements:
                del open_elements[len(open_elements) - 1 - open_elements[::-1].index("{|"):]
            else:
                closed_above = True
        if closed_above:
            break
        point = position + len(page_text[position:line_end].rstrip())
        if line_end >= after and not open_elements and line.strip() and not inside(calls, point - section.start) \
                and not inside(inert, point):
            found.append(point)
        position = line_end + 1
    return found


def insert_reply(page_text: str, section: Section, reply: str, point: int | None = None) -> str:
    """*page_text* with *reply* on lines of its own at *point* (one of :func:`reply_points`; by default
    :func:`reply_point`); nothing else changes."""
    if point is None:
        point = reply_point(page_text, section)
    elif point not in reply_points(page_text, section):
        raise ValueError(f"a reply to {section.heading!r} does not go at offset {point}")
    return page_text[:point] + "\n" + reply.rstrip("\n") + page_text[point:]
