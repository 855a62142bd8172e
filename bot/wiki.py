"""The only place that writes to the wiki.

Every safety rule lives here, so no caller can forget one:

* the emergency stop page is read before every edit; any text on it halts edits;
* ``{{nobots}}`` / ``{{bots|deny=...}}`` on the page or in the section are honoured;
* a dry run (the default until the operator says ``live``) computes the edit and
  shows its diff, and never saves;
* the reply is inserted into the *current* page text, located by the section's
  identity, and saved against the revision it was built on; an edit conflict
  means re-read, re-locate, re-insert, a bounded number of times;
* before saving, the new text must equal the old text plus the reply and
  nothing else, so no one else's text can be lost or altered;
* the bot's own signature already in the section means "answered": nothing is
  posted twice, whatever the local state says.

Edits are bot edits, not minor; pywikibot adds ``assert=user`` to every write,
applies ``put_throttle`` and ``maxlag`` from ``user-config.py``.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass

import pywikibot
from pywikibot.exceptions import EditConflictError, NoPageError

from bot.forum import Section, find_section, insert_reply, page_opted_out, parse_sections

log = logging.getLogger(__name__)
MAX_CONFLICT_RETRIES = 3


class EmergencyStop(RuntimeError):
    """The stop page has text: the bot edits nothing."""


@dataclass
class PostOutcome:
    #: posted | previewed | already-answered | opted-out | section-gone
    status: str
    revision: int | None = None
    diff: str = ""


@dataclass
class ForumPage:
    """One forum page of one site, read and written through pywikibot."""

    site: pywikibot.site.BaseSite
    title: str
    stop_page: str
    live: bool = False

    @property
    def username(self) -> str:
        return self.site.username() or ""

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
        stop = pywikibot.Page(self.site, self.stop_page.format(username=self.username))
        return stop.exists() and bool(stop.get(force=True).strip())

    def post_reply(self, key: str, reply: str, summary: str) -> PostOutcome:
        """Add *reply* at the end of the section whose identity is *key*, once."""
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            page = self.page()
            old = page.get(force=True)
            section = find_section(parse_sections(old), key)
            if section is None:
                return PostOutcome("section-gone")
            if section.replied_by(self.username):
                return PostOutcome("already-answered")
            if page_opted_out(old, self.username) or section.opted_out(self.username):
                return PostOutcome("opted-out")
            new = insert_reply(old, section, reply)
            verify_only_added(old, new, section, reply)
            diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                self.title, self.title + " (with the reply)"))
            if not self.live:
                return PostOutcome("previewed", diff=diff)
            if self.stopped():
                raise EmergencyStop(f"{self.stop_page.format(username=self.username)} is not empty")
            page.text = new
            try:
                # force: pywikibot's own check reads {{nobots}} anywhere on the page as a ban on the whole
                # forum; ours above honours it where it stands, on the page's lead or in its section.
                page.save(summary=summary, minor=False, bot=True, quiet=True, force=True)
            except EditConflictError:
                log.info("edit conflict on %s (try %d), reading the page again", self.title, attempt + 1)
                continue
            return PostOutcome("posted", revision=page.latest_revision_id, diff=diff)
        raise EditConflictError(self.page())


def verify_only_added(old: str, new: str, section: Section, reply: str) -> None:
    """Refuse any edit other than the reply inserted right after the section's last non-blank line."""
    point = section.start + len(old[section.start:section.end].rstrip())
    inserted = "\n" + reply.rstrip("\n")
    if new != old[:point] + inserted + old[point:]:
        raise ValueError("the edit would change more than adding the reply; nothing was saved")
