"""The only place that writes to the wiki, and the only place that decides whether the bot may.

Every safety rule lives here, so no caller can forget one:

* **may I write** (:meth:`ForumPage.refusal`, :attr:`ForumPage.writes`): a dry
  run (the default until the operator says ``live``) and pywikibot's
  ``-simulate`` compute the edit and show its diff, and never save; the
  emergency stop page is read before every edit and any text on it halts
  edits (for that edit only: they resume when the page is emptied);
  ``{{bots}}``/``{{nobots}}`` are read exactly as pywikibot's
  ``Page.botMayEdit`` reads them (comments removed, ``Template:`` prefix,
  name lists; ``{{nobots|OtherBot}}`` does not keep this bot out), applied to
  the page's lead and to the section being answered;
* the reply is inserted into the *current* page text, located by the
  section's identity, and saved against that revision's **id**
  (``baserevid``: MediaWiki's timestamp check has one-second resolution, so a
  human edit in the same second would be overwritten); an edit conflict
  means re-read, re-locate, re-insert, a bounded number of times;
* before saving, the new text must equal the old text plus the reply, and
  MediaWiki's own pre-save transform and parser must agree
  (:mod:`bot.edit_check`); otherwise nothing is saved;
* where the check refuses a reply because one of its templates brings in
  what the sample reply's does not (a ``{{Q}}`` that transcludes a page per
  item), the same reply in its plain form (:class:`bot.render.Markup`: items
  as links, the query as a text block and a link) is checked and posted
  instead; MediaWiki, asked to parse each template call of the reply alone,
  says which template it was, and the log names it once;
* after saving, the stored revision is read back: its parent must be the
  revision the reply was built on (else the human edit in between is
  restored by undoing the bot's edit, and the reply is inserted again) and
  its text must be what was sent (else the bot's edit is undone at once);
  the revision read back is the one the bot's account saved (a save answered
  too late and sent again is answered ``nochange`` or as a conflict: the
  page's latest revision may then be a reviewer's), and only the bot's own
  revisions are ever undone; a section the bot's account already added is
  not added twice;
* "posted" is reported only when the wiki reports a new revision;
* the bot's own signature already in the section means "answered": nothing
  is posted twice, whatever the local state says;
* the page is read as MediaWiki reads it (:mod:`bot.sections`), and the reply
  goes where a reader of the asker's section sees it: at the end of the thread,
  or, where MediaWiki's check refuses that (a block someone saved below the
  question renders a heading), right after the text it answers
  (:func:`bot.forum_decisions.reply_points`); lines saved at the end of the
  thread after the revision the watcher read (an edit conflict, or a save
  while the agent worked) are not what the reply answers: it goes above them,
  and a follow-up among them is answered at a later pass;
  a page whose content model is not wikitext is not edited;
* a login that failed is tried again from scratch (a fresh session and login
  token, pywikibot's own retry reuses a stale token) after a doubling wait.

Edits are bot edits, not minor; pywikibot adds ``assert=user`` to every
write, applies ``put_throttle`` and ``maxlag`` from ``user-config.py``.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import pywikibot
from pywikibot import textlib
from pywikibot.comms import http
from pywikibot.exceptions import EditConflictError, Error, NoPageError
from pywikibot.login import LoginStatus
from pywikibot.site import Namespace

from agent.kb.base import Engine
from bot.edit_check import (Allowance, CheckedEdit, EditRefused, checked_text, measure_allowance, pre_save_transform,
                             sections_of, template_causes)
from bot.forum import Reading, Section, normalize_user, page_lead, parse_sections, relinked, thread_users
from bot.forum_decisions import (
    SavedMeanwhile, insert_reply, locate, locate_after_change, reply_points, saved_meanwhile,
)
from bot.history import Attribution, OwnEdit, own_revisions
from bot.render import Markup
from bot.sections import read_sections

log = logging.getLogger(__name__)
MAX_CONFLICT_RETRIES = 3

__all__ = ["EditRefused", "EmergencyStop", "ForumPage", "PostOutcome", "marked_resolved",
           "verify_only_added"]


class EmergencyStop(RuntimeError):
    """The stop page has text: the bot edits nothing until it is emptied."""


class PostStatus(StrEnum):
    """What became of a reply the watcher (or the review step) asked to post."""

    #: Saved: the wiki reported the new revision.
    POSTED = "posted"
    #: A dry run: shown with its diff, nothing saved.
    PREVIEWED = "previewed"
    #: The bot's reply already stands in the section (a reply saved before the state recorded it).
    ALREADY_ANSWERED = "already-answered"
    #: ``{{bots}}``/``{{nobots}}`` keep the bot out of the page or the section.
    OPTED_OUT = "opted-out"
    #: The section is no longer on the page.
    SECTION_GONE = "section-gone"


@dataclass
class PostOutcome:
    status: PostStatus
    revision: int | None = None
    diff: str = ""
    #: The form of the reply posted (or previewed), and why it is the plain one ("" for the normal form).
    markup: Markup = Markup.TEMPLATES
    why_plain: str = ""
    #: The section replied in, when it is not the one the reply was written for: a subsection where the question
    #: was merged into another thread (its ``origin`` the revision it was found in, when the merge is newer than
    #: the revision the watcher read).
    merged: Section | None = None


class _Fragment(pywikibot.Page):
    """A page whose text is one piece of another (its lead, or one section), for pywikibot's own check."""

    def __init__(self, site: pywikibot.site.BaseSite, title: str, fragment: str) -> None:
        super().__init__(site, title)
        self._fragment = fragment

    def templatesWithParams(self) -> list[tuple[pywikibot.Page, list[str]]]:  # noqa: N802 (pywikibot's name)
        """The templates of the fragment, shaped as ``Page.templatesWithParams`` shapes them."""
        found = []
        for name, arguments in textlib.extract_templates_and_params(self._fragment, remove_disabled_parts=True,
                                                                    strip=True):
            try:
                link = pywikibot.Link(name, self.site, default_namespace=Namespace.TEMPLATE)
                if link.namespace != Namespace.TEMPLATE:
                    continue
                template = pywikibot.Page(link)
            except Error:  # a parser function or a magic word
                continue
            numbered = {int(key): value for key, value in arguments.items() if key.isdigit()}
            positional = []
            for index in range(1, len(numbered) + 1):
                if index not in numbered:
                    break
                positional.append(numbered.pop(index))
            named = {**{str(key): value for key, value in numbered.items()},
                     **{key: value for key, value in arguments.items() if not key.isdigit()}}
            found.append((template, positional + [f"{key}={value}" for key, value in named.items()]))
        return found


#: What pywikibot's ``removeDisabledParts`` removes before reading templates, in its order.
_DISABLED = [(re.compile(r"<!--"), re.compile(r"-->"))] + [
    (re.compile(rf"<{name}(?:>|\s+[^>]{{0,1000}}(?<!/)>)", re.IGNORECASE), re.compile(rf"</{name}\s*>", re.IGNORECASE))
    for name in ("includeonly", "nowiki", "pre", "syntaxhighlight", "source")]
#: A ``{{bots}}``/``{{nobots}}`` call longer than this is read as an opt-out, not parsed.
MAX_OPT_OUT_CHARS = 2000


def _without_disabled_parts(text: str) -> str:
    """*text* without comments, ``<includeonly>``, ``<nowiki>``, ``<pre>`` and ``<syntaxhighlight>``/``<source>``
    elements, removed as pywikibot's ``removeDisabledParts`` removes them, in linear time (its regular
    expressions take quadratic time on openers that are never closed)."""
    for opener, closer in _DISABLED:
        pieces, position = [], 0
        while (start := opener.search(text, position)) and (end := closer.search(text, start.end())):
            pieces.append(text[position:start.start()])
            position = end.end()
        text = "".join(pieces) + text[position:]
    return text


def _template_name(text: str, start: int) -> str:
    """The name of the template called at *start* (``{{``), as a name to compare: lower case, no prefix."""
    name = re.split(r"\||\}\}|\{\{", text[start + 2:start + 202], maxsplit=1)[0]
    name = " ".join(name.replace("_", " ").split()).lower().lstrip(":")
    return re.sub(r"^template\s*:\s*", "", name)


def opt_out_calls(text: str, names: set[str]) -> list[str] | None:
    """The calls of templates named *names* in *text* (lower case), found in linear time with disabled parts
    left out as pywikibot leaves them out; ``None`` when one is longer than :data:`MAX_OPT_OUT_CHARS` (an
    opt-out, not parsed)."""
    enabled = _without_disabled_parts(text)
    calls = []
    for start, end in _all_calls(enabled):
        if _template_name(enabled, start) in names:
            if end - start > MAX_OPT_OUT_CHARS:
                log.info("a {{%s}} call of %d characters counts as an opt-out", _template_name(enabled, start),
                         end - start)
                return None
            calls.append(enabled[start:end])
    return calls


def _bots_allow(site: pywikibot.site.BaseSite, title: str, text: str) -> bool:
    """Whether ``{{bots}}``/``{{nobots}}`` in *text* let this bot edit, decided by pywikibot's ``botMayEdit``.

    pywikibot reads every template of the text with mwparserfromhell, quadratic on what is never closed;
    it is given the calls that can decide (:func:`opt_out_calls`: ``{{bots}}``, ``{{nobots}}`` and the
    family's restricted templates), which it reads as it would read them in the whole text.
    """
    names = {"bots", "nobots"} | {name.lower() for name in site.family.get_edit_restricted_templates(site.code)} \
        | {name.lower() for name in site.family.get_archived_page_templates(site.code)}
    calls = opt_out_calls(text, names)
    if calls is None:
        return False
    return not calls or _Fragment(site, title, "\n".join(calls)).botMayEdit()


#: The templates by which the forum marks a section resolved (the archiving bot's cue), lower case.
RESOLVED_TEMPLATES = {"section resolved", "resolved"}


def marked_resolved(text: str) -> bool:
    """Whether *text* (a section) holds ``{{Section resolved}}`` or ``{{Resolved}}`` outside comments and code:
    nothing more is drafted there, the asker or the forum said it was settled."""
    return opt_out_calls(text, RESOLVED_TEMPLATES) != []


def _all_calls(text: str) -> list[tuple[int, int]]:
    """Every closed ``{{…}}`` call of *text*, nested ones included (one stack, linear)."""
    stack: list[int] = []
    calls = []
    for token in re.finditer(r"\{\{|\}\}", text):
        if token.group() == "{{":
            stack.append(token.start())
        elif stack:
            calls.append((stack.pop(), token.end()))
    return sorted(calls)


@dataclass
class ForumPage:
    """One forum page of one site, read and written through pywikibot."""

    site: pywikibot.site.BaseSite
    title: str
    stop_page: str
    live: bool = False
    #: The bot's own fixed links in every reply (its operator, its documentation page): allowed by the edit check.
    reply_markup: str = ""
    #: The engines the operator configured: a reply's own "Try it on …" links may go to each one's page.
    engines: tuple[Engine, ...] = ()
    _allowance: Allowance | None = field(default=None, repr=False)
    #: MediaWiki's readings of the latest revisions read, by revision.
    _readings: dict[int, Reading] = field(default_factory=dict, repr=False)
    #: The bot's own revisions of the page, as of the page's revision they were read at.
    _own: tuple[int, list[OwnEdit]] | None = field(default=None, repr=False)
    #: Failed logins in a row, and when the next one may be tried (``time.monotonic()``).
    _login_failures: int = field(default=0, repr=False)
    _next_login: float = field(default=0.0, repr=False)
    #: What each template call of a reply brings in when parsed alone, the bot's signature, and the templates the
    #: log has named to the operator already (once each).
    _brought: dict[str, tuple[str, frozenset[str]]] = field(default_factory=dict, repr=False)
    _signature: str | None = field(default=None, repr=False)
    _named: set[str] = field(default_factory=set, repr=False)

    @property
    def username(self) -> str:
        return self.site.username() or ""

    @property
    def stop_title(self) -> str:
        """The stop page's real name (``{username}`` filled in)."""
        return self.stop_page.format(username=self.username)

    @property
    def writes(self) -> bool:
        """Live and not simulating: pywikibot's ``-simulate`` is a dry run, never a fake success."""
        return self.live and not pywikibot.config.simulate

    def page(self) -> pywikibot.Page:
        return pywikibot.Page(self.site, self.title)

    def latest_revision(self) -> int | None:
        """The newest revision id (one light API request), ``None`` when the page does not exist."""
        page = self.page()
        if not page.exists():
            return None
        return page.latest_revision_id

    def read(self) -> tuple[str, int]:
        page = self.page()
        try:
            text = page.get(force=True)
        except NoPageError as error:
            raise ValueError(f"the page {self.title} does not exist on {self.site}") from error
        return text, page.latest_revision_id

    def stopped(self) -> bool:
        """Whether the stop page has text; asked at each live pass and before each save (so, logged in first)."""
        if self.writes:
            self.ensure_login()
        try:
            return bool(pywikibot.Page(self.site, self.stop_title).get(force=True).strip())
        except NoPageError:
            return False

    def refusal(self, page_text: str | None = None, section: Section | None = None,
                reading: Reading | None = None) -> str | None:
        """Why ``{{bots}}``/``{{nobots}}`` keep the bot out (the lead of *page_text* or *section* opts out), or
        ``None``.

        The one gate for opt-outs: the watcher asks it for the page before planning and for each section
        it would answer (the page already asked), and every save asks it again for both.
        """
        if page_text is not None and not _bots_allow(self.site, self.title, page_lead(page_text, reading)):
            return "the page opts out of bots"
        if section is not None and not _bots_allow(self.site, self.title, section.text):
            return "the section opts out of bots"
        # A question merged into another thread under a subheading: that thread's opt-out holds for it too.
        if section is not None and section.within is not None and page_text is not None and not _bots_allow(
                self.site, self.title, page_text[section.within.start:section.within.end]):
            return "the section opts out of bots"
        return None

    def ensure_login(self) -> None:
        """Log in again, from scratch, when the session was lost (pywikibot's own re-login, once failed, stays
        stuck: it keeps its login status "in progress" and the login token of the lost session).

        A failed login is tried again after pywikibot's ``retry_wait`` (the operator's wait before resending a
        failed request, 5 s by default), then after doubling waits up to 15 minutes; meanwhile this raises at
        once, and the pass is a wiki error like any other.
        """
        if self.site.logged_in() and self.site._loginstatus == LoginStatus.AS_USER:
            return
        wait = self._next_login - time.monotonic()
        if wait > 0:
            raise Error(f"logging in to {self.site} failed {self._login_failures} times in a row; next try in "
                        f"{wait:.0f} s")
        # A fresh session: no cookie and no token of the old one.
        http.cookie_jar.clear()
        self.site.tokens.clear()
        self.site._loginstatus = LoginStatus.NOT_ATTEMPTED
        del self.site.userinfo
        try:
            self.site.login()
            if not self.site.logged_in():
                raise Error(f"cannot log in to {self.site} as {self.username}")
        except Error:
            self._login_failures += 1
            wait = pywikibot.config.retry_wait * 2 ** (self._login_failures - 1)
            self._next_login = time.monotonic() + min(wait, 900)
            raise
        log.info("logged in to %s again, with a fresh session (%d failed logins before)", self.site,
                 self._login_failures)
        self._login_failures, self._next_login = 0, 0.0

    def reading(self, text: str, revision: int) -> Reading:
        """MediaWiki's reading of *revision* of the page (whose text is *text*), kept for the latest ones."""
        if revision not in self._readings:
            self._readings = {key: value for key, value in list(self._readings.items())[-3:]}
            self._readings[revision] = read_sections(self.site, self.title, revision, text)
        return self._readings[revision]

    def own_edits(self, revision: int) -> list[OwnEdit]:
        """The bot's own revisions of the page, read once per *revision* of the page."""
        if self._own is None or self._own[0] != revision:
            self._own = (revision, own_revisions(self.site, self.title, self.username))
        return self._own[1]

    def locate(self, text: str, key: str, attribution: Attribution | None = None,
               reading: Reading | None = None, revision: int | None = None,
               question: str | None = None) -> Section | None:
        """The section *key* in *text* (revision *revision*, newer than *attribution* describes, if given),
        answered or not; with *question* (its :attr:`Section.question`), where the question went when the
        section was merged into another thread as a subsection
        (:func:`bot.forum_decisions.merged_question`)."""
        own = (lambda: self.own_edits(revision)) if revision is not None else None
        if attribution is not None:
            return locate_after_change(attribution, text, key, self.username, reading, own, question)
        return locate(text, key, self.username, None, reading, own, question)

    def post_reply(self, key: str, reply: str, summary: str, attribution: Attribution | None = None, *,
                   addressed: Sequence[str] = (), question: str | None = None,
                   plain: str | None = None) -> PostOutcome:
        """Add *reply* to the section whose identity is *key*, once; where MediaWiki's check refuses it, *plain*,
        the same reply in its plain form (:class:`bot.render.Markup`), if it accepts that.

        *attribution* is who added which line as of the revision the watcher read (see
        :mod:`bot.history`); without it the section is found by its text alone.  *addressed* are the users the
        reply addresses (:func:`bot.forum_decisions.addressees`): MediaWiki's check lets it link each of them once
        more, those the history names as writers of the section, and no one else.  With *question* (the
        section's :attr:`Section.question`), a section whose question was merged into another thread as a
        subsection is answered there, *summary* linking that subsection.  An :class:`EditRefused` carries the
        revision it was decided on (``revision``).
        """
        try:
            return self._post_reply(key, reply, summary, attribution, addressed=addressed, question=question,
                                    plain=plain)
        except EditRefused as refused:
            refused.revision = self.page().latest_revision_id
            raise

    def add_note(self, marker: str, note: str, summary: str, retitle: tuple[str, str] | None = None) -> PostOutcome:
        """Add *note* (a signed line) to the one section holding *marker* (a draft's begin marker on the review
        page: the section the bot wrote, whatever its heading says now), checked like a reply.  With *retitle*
        (the heading line the bot wrote, and the one it writes now) the section's heading changes in the same
        edit, when it is still the bot's own line: a heading someone renamed is left alone."""
        text, revision = self.read()
        found = [section for section in parse_sections(text, reading=self.reading(text, revision))
                 if marker in section.text]
        if len(found) != 1:
            return PostOutcome(PostStatus.SECTION_GONE)
        return self._post_reply(found[0].key, note, summary, None, again=True, retitle=retitle)

    def _retitled(self, checked: CheckedEdit, section: Section, retitle: tuple[str, str]) -> CheckedEdit:
        """*checked* with *section*'s heading line changed from ``retitle[0]`` to ``retitle[1]`` (both the bot's
        own rendering), when the line is still the first; MediaWiki must read the new line as one heading."""
        old, new = retitle
        line_end = checked.text.find("\n", section.start)
        line_end = len(checked.text) if line_end < 0 else line_end
        if checked.text[section.start:line_end].rstrip() != old:
            return checked
        if len(sections_of(self.site, self.title, new)) != 1:
            raise EditRefused(f"the heading {new!r} would not make one section")
        # ``point`` stays: it is an offset in the text before the edit, which the new heading does not change.
        return dataclasses.replace(checked, text=checked.text[:section.start] + new + checked.text[line_end:])

    def _post_reply(self, key: str, reply: str, summary: str, attribution: Attribution | None,
                    again: bool = False, addressed: Sequence[str] = (),
                    retitle: tuple[str, str] | None = None, question: str | None = None,
                    plain: str | None = None) -> PostOutcome:
        """:meth:`post_reply`; *again*: in a section the bot has written in already; *retitle*: see
        :meth:`add_note`."""
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            page = self.page()
            old = page.get(force=True)
            base = page.latest_revision_id
            if page.content_model != "wikitext":
                raise EditRefused(f"the content model of {self.title} is {page.content_model}, not wikitext: "
                                  "the bot edits wikitext pages only")
            section = self.locate(old, key, attribution, self.reading(old, base), base, question)
            if section is None:
                return PostOutcome(PostStatus.SECTION_GONE)
            merged = section if section.within is not None else None
            if merged is not None and merged.origin <= 0:  # merged since the revision read: found in *base*
                merged = dataclasses.replace(merged, origin=base)
            if section.answered and not again:
                return PostOutcome(PostStatus.ALREADY_ANSWERED)
            if again and reply.rsplit("~~~~", 1)[0].rstrip() in section.text:  # a save answered too late
                return PostOutcome(PostStatus.ALREADY_ANSWERED)
            if self.refusal(old, section, self.reading(old, base)):
                return PostOutcome(PostStatus.OPTED_OUT)
            # A dry run asks MediaWiki too (read-only): it shows what a live run would refuse.
            checked, diff, markup, why = self._checked_forms(old, base, section, reply, plain, addressed)
            if retitle is not None:
                checked = self._retitled(checked, section, retitle)
            if merged is not None:
                summary = relinked(summary, section)
            if not self.writes:
                return PostOutcome(PostStatus.PREVIEWED, diff=diff, markup=markup, why_plain=why, merged=merged)
            if self.stopped():
                raise EmergencyStop(f"{self.stop_title} is not empty")
            # pywikibot's own {{bots}} check (run by the text setter and by save) parses the whole page, unbounded
            # (quadratic over a never-closed "{{"); ours, bounded, read the lead and this section above and
            # allowed the edit: that is the answer pywikibot is given.
            page._bot_may_edit = True
            page.text = checked.text
            try:
                page.save(summary=summary, minor=False, bot=True, quiet=True, apply_cosmetic_changes=False,
                          baserevid=base, basetimestamp=None)
            except EditConflictError:
                log.info("edit conflict on %s (try %d), reading the page again", self.title, attempt + 1)
                continue
            revision = self._saved_revision(page, base)
            if self._confirm(revision, base, checked.text, section, checked.reply, attribution, question):
                meanwhile = saved_meanwhile(old, section)
                if meanwhile is not None and checked.point <= meanwhile.read_end:
                    self._say_above(old, section, meanwhile)
                return PostOutcome(PostStatus.POSTED, revision=revision, diff=diff, markup=markup, why_plain=why,
                                   merged=merged)
        raise EditConflictError(self.page())

    def _say_above(self, old: str, section: Section, meanwhile: SavedMeanwhile) -> None:
        """Log, in one line, that the reply went above what was saved in its thread while it was written."""
        if meanwhile.signed_followup(section, self.username):
            log.info("%r: a follow-up was saved while the reply was written; the reply goes above it, and the "
                     "follow-up is answered next", section.heading)
            return
        lines = sum(bool(line.strip()) for line in old[meanwhile.start:meanwhile.end].split("\n"))
        log.info("%r: %d line%s saved in the thread while the reply was written, no follow-up to it; the reply "
                 "goes above %s", section.heading, lines, " was" if lines == 1 else "s were",
                 "it" if lines == 1 else "them")

    def _checked_forms(self, old: str, base: int, section: Section, reply: str, plain: str | None,
                       addressed: Sequence[str] = ()) -> tuple[CheckedEdit, str, Markup, str]:
        """The edit adding *reply* to *section* as MediaWiki's check lets it be saved (:meth:`_checked_reply`), or,
        where it refuses that at every place for what one of the reply's templates brings in, *plain* (the reply in
        its plain form) where it accepts that: the
        edit, its diff, the form and why the plain one (a template of the reply's, named by
        :meth:`_refusal_reason`).  Raises :class:`EditRefused` with both forms' reasons when it refuses both."""
        try:
            checked, diff = self._checked_reply(old, base, section, reply, addressed)
            return checked, diff, Markup.TEMPLATES, ""
        except EditRefused as refused:
            reason, causes = self._refusal_reason(refused, reply)
            unexpected = refused.unexpected
            # The plain form helps only where one of the reply's own templates brings in what was refused.
            if plain is None or plain == reply or not causes:
                raise EditRefused(reason, unexpected) from refused
        try:
            checked, diff = self._checked_reply(old, base, section, plain, addressed)
        except EditRefused as also:
            raise EditRefused(f"{reason}; and in its plain form (items as links, the query as a text block and a "
                              f"link): {also}", unexpected | also.unexpected) from also
        self._tell_plain(section.heading, reason, causes)
        return checked, diff, Markup.LINKS, reason

    def _refusal_reason(self, refused: EditRefused, reply: str) -> tuple[str, list[str]]:
        """The check's reason for refusing *reply*, followed by which of the reply's templates (or the signature's)
        brings in what it refused and what the operator can change (:func:`bot.edit_check.template_causes`,
        asked of MediaWiki); and those templates."""
        if not refused.unexpected:
            return str(refused), []
        if self._signature is None:
            self._signature = pre_save_transform(self.site, self.title, "~~~")
        causes = template_causes(self.site, self.title, reply, self._signature, refused.unexpected, self._brought)
        if not causes:
            return str(refused), []
        return f"{refused}. " + "; ".join(cause.advice() for cause in causes), [cause.template for cause in causes]

    def _tell_plain(self, heading: str, reason: str, templates: list[str]) -> None:
        """Log that the reply to *heading* goes in its plain form, and why: the templates that make the check
        refuse the normal form are named once (an operator reads the log), later replies refer to that line."""
        if templates and set(templates) <= self._named:
            log.info("%r: the reply goes in its plain form (items as links, the query as a text block and a link), "
                     "for the reason logged before", heading)
            return
        self._named.update(templates)
        log.warning("%r: the reply goes in its plain form (items as links, the query as a text block and a link): "
                    "MediaWiki's check refuses its normal form: %s", heading, reason)

    def _checked_reply(self, old: str, base: int, section: Section, reply: str,
                       addressed: Sequence[str] = ()) -> tuple[CheckedEdit, str]:
        """The edit adding *reply* to *section* of *old* (revision *base*) as MediaWiki's check lets it be saved,
        and its diff: at the end of the thread, or, where the check refuses that, right after the text the reply
        answers (:func:`bot.forum_decisions.reply_points`), so nothing someone saved below a question keeps the
        reply away.  Raises the check's :class:`EditRefused` when it refuses every place, with every reason."""
        refusals = []
        # The end of the text the reply answers, when a signature ends it: the reply may show under its heading.
        answers = section.reply_after if any(signature.end == section.reply_after
                                             for signature in section.signatures) else None
        unexpected: frozenset[str] = frozenset()
        writers = thread_users(section)
        linked = frozenset(f"User:{user}" for user in addressed if user in writers)
        for point in reply_points(old, section):
            new = insert_reply(old, section, reply, point)
            verify_only_added(old, new, section, reply)
            try:
                checked = checked_text(self.site, self.title, old, base, point, reply, self.allowance(),
                                       section_start=section.start,
                                       addressed=linked,
                                       answers=answers)
            except EditRefused as refused:
                refusals.append(str(refused))
                unexpected |= refused.unexpected
                continue
            if refusals:
                log.info("%r: MediaWiki refuses the reply at the end of the thread (%s); it goes right after the "
                         "text it answers", section.heading, refusals[0])
            return checked, page_diff(self.title, old, new)
        raise EditRefused(refusals[0] if len(refusals) == 1 else
                          f"{refusals[0]}; and right after the text the reply answers: {refusals[1]}", unexpected)

    def allowance(self) -> Allowance:
        """What a reply's own markup may add to this page, measured on the wiki once."""
        if self._allowance is None:
            self._allowance = measure_allowance(self.site, self.title, self.reply_markup, self.engines)
        return self._allowance

    def add_section(self, section: str, summary: str) -> PostOutcome:
        """Add *section* (one heading, its signed text) at the end of the page, checked like a reply.

        MediaWiki must find exactly one section in *section* alone, and the page must gain that one at its
        end and nothing else; the page is created if it does not exist.
        """
        added = sections_of(self.site, self.title, section)
        if len(added) != 1:
            raise EditRefused(f"the new section would make {len(added)} sections, not one: {list(added)[:5]}")
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            page = self.page()
            exists = page.exists()
            old = page.get(force=True) if exists else ""
            base = page.latest_revision_id if exists else None
            if attempt and (stored := self._stored_before(old, section)) is not None:
                return PostOutcome(PostStatus.POSTED, revision=stored)
            if self.refusal(old):
                return PostOutcome(PostStatus.OPTED_OUT)
            text = ("\n" if old.strip() else "") + section
            diff = page_diff(self.title, old, old + "\n" + text)
            checked = checked_text(self.site, self.title, old, base, len(old), text, self.allowance(),
                                   added_sections=added)
            if not self.writes:
                return PostOutcome(PostStatus.PREVIEWED, diff=diff)
            if self.stopped():
                raise EmergencyStop(f"{self.stop_title} is not empty")
            page._bot_may_edit = True  # the bounded check of the lead above decided, as for a reply
            page.text = checked.text
            try:
                base_revision = {"baserevid": base} if base else {"createonly": True}
                page.save(summary=summary, minor=False, bot=True, quiet=True, apply_cosmetic_changes=False,
                          basetimestamp=None, **base_revision)
            except EditConflictError:
                log.info("edit conflict on %s (try %d), reading the page again", self.title, attempt + 1)
                continue
            revision = self._saved_revision(page, base)
            saved = self._revision(revision)
            if saved["slots"]["main"]["content"] != checked.text:
                self._undo(saved, "undo the bot's edit: the wiki stored something other than what was sent")
                if saved["parentid"] != (base or 0):
                    continue  # someone saved in between: their edit is restored, try again
                raise EditRefused(f"revision {revision} differs from what was sent; the bot's edit was undone")
            return PostOutcome(PostStatus.POSTED, revision=revision, diff=diff)
        raise EditConflictError(self.page())

    def restore(self, base: int, text: str, summary: str) -> PostOutcome:
        """Save *text*, the page as revision *base* held it with the bot's restoration of a part it owns (a
        draft's section on its review page, back as its trusted revisions left it); a page changed since
        *base* is not written (``conflict``: the next pass reads it again)."""
        if not self.writes:
            return PostOutcome(PostStatus.PREVIEWED, diff=page_diff(self.title, self.page().get(force=True), text))
        if self.stopped():
            raise EmergencyStop(f"{self.stop_title} is not empty")
        page = self.page()
        page.get(force=True)
        if page.latest_revision_id != base:
            return PostOutcome("conflict")
        page._bot_may_edit = True  # the bot's own page, a part of it the bot wrote
        page.text = text
        try:
            page.save(summary=summary, minor=False, bot=True, quiet=True, apply_cosmetic_changes=False,
                      basetimestamp=None, baserevid=base)
        except EditConflictError:
            return PostOutcome("conflict")
        return PostOutcome(PostStatus.POSTED, revision=self._saved_revision(page, base))

    def _saved_revision(self, page: pywikibot.Page, base: int | None) -> int:
        """The revision the save of *page* (built on *base*) stored: the bot's own, never someone else's.

        pywikibot takes ``latest_revision_id`` from the wiki's answer only when it names a new revision.  A
        save whose first send was stored but answered too late is sent again and answered ``nochange``: the
        id is then still *base*, or, for a page the save created, whichever revision pywikibot loads next,
        maybe a reviewer's.  The bot's latest revision of the page, newer than *base*, is the one stored.
        """
        revision = page.latest_revision_id
        if revision != base and self._is_own(self._revision(revision)):
            return revision
        own = own_revisions(self.site, self.title, self.username, latest_only=True)
        if own and own[-1].revision > (base or 0):
            log.info("the save of %s was answered without its revision: revision %d is the bot's", self.title,
                     own[-1].revision)
            return own[-1].revision
        raise Error(f"the wiki reported no new revision of {self.title}; nothing was saved")

    def _stored_before(self, old: str, section: str) -> int | None:
        """The bot's revision that already added *section* to the page (whose text is now *old*): a save
        answered too late, then refused as a conflict when sent again, is not made twice.  *section* is known
        by its text after its signature (which the wiki expanded)."""
        body = section.rsplit("~~~~", 1)[-1].strip()
        heading = section.split("\n", 1)[0]
        if not body or body not in old or f"\n{heading}\n" not in f"\n{old}":
            return None
        own = own_revisions(self.site, self.title, self.username, latest_only=True)
        if own and body in self._revision(own[-1].revision)["slots"]["main"]["content"]:
            log.info("%s already holds the section, saved by the bot as revision %d", self.title, own[-1].revision)
            return own[-1].revision
        return None

    def _is_own(self, saved: dict) -> bool:
        return normalize_user(saved.get("user", "")) == normalize_user(self.username)

    def _revision(self, revision: int) -> dict:
        answer = self.site.simple_request(action="query", prop="revisions", revids=revision,
                                          rvprop="ids|user|content", rvslots="main", formatversion=2).submit()
        return answer["query"]["pages"][0]["revisions"][0]

    def _confirm(self, revision: int, base: int, sent: str, section: Section, signed_reply: str,
                 attribution: Attribution | None = None, question: str | None = None) -> bool:
        """Read back *revision*: ``True`` when it holds exactly our edit; otherwise undo it.

        A parent other than *base* means someone saved in between and MediaWiki merged; the merge is
        kept only if it equals their text plus the reply, else their text is restored and ``False``
        asks for another try.  A text other than *sent* (a normalisation, a strip marker) is undone
        and refused.
        """
        saved = self._revision(revision)
        text = saved["slots"]["main"]["content"]
        if saved["parentid"] != base:
            parent = self._revision(saved["parentid"])["slots"]["main"]["content"]
            moved = self.locate(parent, section.key, attribution, self.reading(parent, saved["parentid"]),
                                saved["parentid"], question) if section.key else None
            merged = moved is not None and any(text == insert_reply(parent, moved, signed_reply, point)
                                               for point in reply_points(parent, moved))
            if merged:
                return True
            self._undo(saved, "restore the edit saved while the bot was replying")
            log.warning("revision %d of %s was built on %d but saved after %d: restored, trying again",
                        revision, self.title, base, saved["parentid"])
            return False
        if text != sent:
            self._undo(saved, "undo the bot's reply: the wiki stored something other than what was sent")
            raise EditRefused(f"revision {revision} differs from what was sent; the bot's edit was undone")
        return True

    def _undo(self, saved: dict, summary: str) -> None:
        """Undo the revision *saved* (as :meth:`_revision` reads it), which must be the bot's own: the bot never
        removes a human's edit."""
        if not self._is_own(saved):
            raise Error(f"revision {saved['revid']} of {self.title} is {saved.get('user')!r}'s, not the bot's: "
                        "it is left as it is")
        self.site.simple_request(action="edit", title=self.title, undo=saved["revid"], summary=summary, bot=True,
                                 nocreate=True, token=self.site.tokens["csrf"]).submit()


def page_diff(title: str, old: str, new: str) -> str:
    """A unified diff of two texts of *title*, one line each, whether or not the text ends with a newline."""
    lines = difflib.unified_diff(old.split("\n"), new.split("\n"), title, title + " (with the reply)", lineterm="")
    return "".join(line + "\n" for line in lines)


def verify_only_added(old: str, new: str, section: Section, reply: str) -> int:
    """Refuse any edit other than the reply inserted, on lines of its own, at one of the section's reply points
    (:func:`bot.forum_decisions.reply_points`).

    Returns the insertion point in *old*.
    """
    inserted = "\n" + reply.rstrip("\n")
    for point in reply_points(old, section):
        if new == old[:point] + inserted + old[point:]:
            return point
    raise ValueError("the edit would change more than adding the reply; nothing was saved")
