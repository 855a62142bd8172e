"""Who wrote what on the forum page, who asked, and whom a reply addresses.

Signatures are text anyone can type; the page's history is not.  :mod:`bot.history` carries line owners from
one revision to the next (:class:`bot.history.Attribution`) and reads revisions from the wiki; this module
decides which revisions a pass carries the page through (:func:`carried`, :func:`from_history`), reads them
with the wiki's failures handled (:class:`PageHistory`), and says whom a reply addresses (:func:`addressees`).

It stands apart from :mod:`bot.history` because it reads users as :mod:`bot.forum` names them
(:func:`bot.forum.normalize_user`), and :mod:`bot.forum` reads :mod:`bot.history`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import pywikibot

from bot.forum import FollowupKey, Section, normalize_user, thread_users
from bot.history import Attribution, Revision, latest_revisions, revisions_after

log = logging.getLogger(__name__)


def carried(current: Attribution, revisions: Iterable[Revision], text: str, revision: int) -> Attribution:
    """*current* carried through *revisions* (oldest first) to *text*, the page as read at *revision*; what no
    listed revision explains is attributed to *revision*, by no known user."""
    for newer in revisions:
        current = current.advance(newer.id, normalize_user(newer.user), newer.text)
    if current.text != text or current.revision != revision:
        current = current.advance(revision, "", text)
    return current


def from_history(revisions: list[Revision], text: str, revision: int) -> Attribution:
    """Who added which line of *text* (the page at *revision*), from *revisions* (oldest first): the oldest is
    the start (every line its author's if it created the page, else owned by no known revision), the others are
    carried through.  Without revisions only signatures can tell who wrote what."""
    if not revisions:
        return Attribution.first_look(revision, text)
    oldest, newer = revisions[0], revisions[1:]
    start = (Attribution.created(oldest.id, normalize_user(oldest.user), oldest.text) if oldest.creation
             else Attribution.first_look(oldest.id, oldest.text))
    return carried(start, newer, text, revision)


@dataclass
class PageHistory:
    """The history of the forum page *title* on *site*, read for attribution."""

    site: pywikibot.site.BaseSite
    title: str

    def attribute(self, stored: Attribution | None, text: str, revision: int,
                  since: int | None = None) -> Attribution:
        """Who added which line of *text* (the page at *revision*): the *stored* attribution carried through every
        revision made since; without one (a first look), the history from *since*, the bot's own latest revision
        (or the latest revisions, if it never edited the page).

        Without the history a signature typed into a question (a forged bot signature) would pass for a reply,
        and a question asked while the bot was away would pass for backlog.
        """
        if stored is None:
            try:
                revisions = latest_revisions(self.site, self.title, revision, since)
            except pywikibot.exceptions.APIError as error:
                log.warning("cannot read the history of %s (%s); signatures alone tell who wrote what",
                            self.title, error)
                revisions = []
            return from_history(revisions, text, revision)
        if stored.revision == revision and stored.text == text:
            return stored
        try:
            return carried(stored, revisions_after(self.site, self.title, stored.revision, revision), text, revision)
        except pywikibot.exceptions.APIError as error:  # e.g. the revision read last was deleted since
            log.warning("cannot read the revisions of %s since %d (%s); the changes since are attributed together, "
                        "to no known user", self.title, stored.revision, error)
            return carried(stored, [], text, revision)


def asker_of(section: Section, key: str) -> str | None:
    """Who wrote the comment the reply to *key* answers (a follow-up's or a ping's, by the page's history);
    ``None`` for the section's own question, or when the history names nobody."""
    followup = FollowupKey.parse(key)
    if followup is None or followup.section != section.key:
        return None
    return next((comment.user for comment in section.comments if comment.owner == followup.revision and comment.user),
                None)


def addressees(section: Section, key: str, bot: str) -> tuple[str, ...]:
    """Whom the reply to *key* addresses, as a regular would, each once and in this order: the section's asker,
    then the one whose comment the reply answers (a follow-up, or a ping of the bot in a question it had not
    answered).  Only users the page's history names as writers of *section* (anyone can type a signature), never
    the bot itself; empty when none is known.  The reply's ``{{re|…}}`` and MediaWiki's check of the edit (which
    lets the reply link exactly these users once more) both read this."""
    writers, wanted = thread_users(section), normalize_user(bot)
    return tuple(user for user in dict.fromkeys((section.author, asker_of(section, key)))
                 if user and user != wanted and user in writers)
