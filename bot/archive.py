"""Harvest solved requests and corrections from the forum and its archive into the example store.

For each month's archive page (``<forum>/Archive/YYYY/MM``) and the forum
page itself, read through the Action API with pywikibot and parsed by the
bot's own forum reader (:mod:`bot.forum`), every thread gives:

* its request: the heading and the opening post up to its signature, as words;
* the queries other users posted in it (``{{SPARQL}}``, code blocks, query
  service links, ``w.wiki`` short links followed to the query they open),
  each stored as a solved example;
* corrections: in a thread the bot answered, a later reply by a person that
  holds a query other than the bot's is stored with the bot's query it
  replaced (``spinach-examples corrections`` lists them).

What the forum's archiving wrote, and only that: anyone can create a page
under ``/Archive/``, and write on it before the archiving appends a month.
An archive page is read at the newest revision saved by one of the
*archivers* (the accounts that archive the forum) or, for a page the forum
page itself was moved to, at the move, and of its text only the lines those
revisions added (each line owned by the revision that wrote it, through the
page's history: :func:`archived_text`); a page with neither is not
harvested, lines left out are counted, and edits made to a page after its
archiving are not read.  A thread whose text addresses the model ("ignore
the previous instructions…") is kept out as a second line
(:func:`agent.examples.quoted.addresses_model`): examples reach later
prompts, and are shown there as data in any case.

Who wrote a post is taken from the forum page's history, not from its
signature alone (a signature is text anyone can type): a signature counts
only if its user saved the forum page within :data:`SIGNED_WITHIN` after its
time.  Otherwise the post has no known author: its query is still an example,
but it is credited to nobody, and it is neither the bot's nor the asker's.

Incremental: a page whose latest revision was harvested already is not read
again.  A page that cannot be read is skipped with its reason and read again
next time; a thread without a query from someone else is skipped with its
reason; both are counted, and nothing stops the harvest.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable
from itertools import islice
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pywikibot
from tqdm import tqdm

from agent.examples.existence import Existence
from agent.examples.languages import guess_language
from agent.examples.quoted import addresses_model
from agent.examples.store import ExampleStore, HarvestedPage, SolvedExample, month_of, thread_name
from bot.forum import (
    MAX_REQUEST_CHARS, SIGNED_WITHIN, Section, extract_request, normalize_user, parse_sections, posts, queries_in,
    short_links,
)
from bot.history import Attribution, latest_revisions, listed_revisions

log = logging.getLogger(__name__)
#: Why a thread whose query the store refused was skipped, as the harvest's report counts it.
QUERY_REFUSED = "query does not parse, or names a Wikidata ID that is malformed or missing"
#: An archive page's revisions read at most, newest first, looking for the archiving's.
MAX_ARCHIVE_REVISIONS = 500
#: The forum page's revisions of one month read at most (Wikidata's forum has about 1,500 a month).
MAX_FORUM_REVISIONS = 10000


@dataclass
class HarvestReport:
    pages_read: int = 0
    #: Pages whose latest revision was harvested before: not read again.
    pages_unchanged: int = 0
    #: Pages that could not be read, with the reason; read again next time.
    pages_failed: list[tuple[str, str]] = field(default_factory=list)
    #: Pages under ``/Archive/`` the forum's archiving did not write: not harvested.
    pages_not_archived: list[str] = field(default_factory=list)
    threads: int = 0
    examples: int = 0
    corrections: int = 0
    added: int = 0
    updated: int = 0
    #: Threads (or short links) left out, by reason.
    skipped: Counter = field(default_factory=Counter)
    #: Archive pages with lines another revision than the archiving's wrote (not read), and how many.
    lines_left_out: list[tuple[str, int]] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [f"pages read: {self.pages_read}, unchanged since the last harvest: {self.pages_unchanged}, "
                 f"not readable: {len(self.pages_failed)}",
                 f"threads: {self.threads}; examples found: {self.examples} (corrections: {self.corrections}); "
                 f"new in the store: {self.added}, updated: {self.updated}"]
        lines += [f"skipped {count}: {reason}" for reason, count in sorted(self.skipped.items())]
        lines += [f"not harvested: {title}: no revision by the forum's archiving (archivers, or a move of the forum "
                  "page)" for title in self.pages_not_archived]
        lines += [f"left out: {count} lines of {title} that the forum's archiving did not write"
                  for title, count in self.lines_left_out]
        lines += [f"not read: {title}: {reason}" for title, reason in self.pages_failed]
        return lines


def archive_pages(site: pywikibot.site.BaseSite, forum: str) -> list[tuple[str, int]]:
    """(title, latest revision) of the forum's month archive pages (``<forum>/Archive/YYYY/MM``), oldest first."""
    prefix = pywikibot.Page(site, f"{forum}/Archive/")
    parameters = {"action": "query", "generator": "allpages", "gapnamespace": str(prefix.namespace().id),
                  "gapprefix": prefix.title(with_ns=False), "gaplimit": "max", "prop": "info", "formatversion": "2"}
    found = []
    while True:
        reply = site.simple_request(**parameters).submit()
        found += [(page["title"], page["lastrevid"]) for page in reply.get("query", {}).get("pages", [])
                  if month_of(page["title"])]
        if "continue" not in reply:
            break
        parameters.update(reply["continue"])
    return sorted(found, key=lambda page: (month_of(page[0]), page[0]))


def read_page(site: pywikibot.site.BaseSite, title: str, revision: int | None = None) -> tuple[str, int]:
    """The text and revision of *title* (its latest, or *revision*); ``ValueError`` saying why when there is none
    to read."""
    where = {"revids": str(revision)} if revision is not None else {"titles": title}
    reply = site.simple_request(action="query", prop="revisions", rvprop="ids|content", rvslots="main",
                                formatversion="2", **where).submit()
    pages = reply.get("query", {}).get("pages", [])
    if not pages or pages[0].get("missing") or pages[0].get("invalid") or not pages[0].get("revisions"):
        raise ValueError("the page does not exist")
    found = pages[0]["revisions"][0]
    slot = found.get("slots", {}).get("main", {})
    if "content" not in slot:
        raise ValueError("its revision is hidden")
    if slot.get("contentmodel", "wikitext") != "wikitext":
        raise ValueError(f"its content is {slot['contentmodel']}, not wikitext")
    return slot["content"], found["revid"]


@dataclass
class ArchivedText:
    """What the forum's archiving wrote on an archive page: the lines its revisions added, as of its newest."""

    text: str
    revision: int
    #: Lines on the page then that another revision wrote: left out.
    left_out: int = 0


def archived_text(site: pywikibot.site.BaseSite, title: str, forum: str, archivers: list[str]) -> ArchivedText | None:
    """The text of the archive page *title* that the forum's archiving wrote: as of its newest revision by an
    account in *archivers* (or the forum page's move to *title*), the lines that such a revision added, or the
    move brought; ``None`` when the archiving never wrote there.

    Each line is owned by the revision that added it (:class:`bot.history.Attribution`, from the page's creation
    or the move on), so a thread someone else wrote (on a page they created before the archiving appended the
    month to it, or between two of its edits) is never read, whatever the archiving added around it; nor is a
    section whose heading someone else wrote or retitled (its lines would otherwise join the thread above).
    Lines whose origin the history does not tell (a page with more than :data:`MAX_ARCHIVE_REVISIONS`
    revisions since) are left out too.
    """
    wanted = {normalize_user(name) for name in archivers}
    moved = _moved_at(site, title, forum)
    listed = list(islice(listed_revisions(site, {"titles": title, "rvprop": "ids|user", "rvdir": "older",
                                                 **({"rvendid": str(moved)} if moved else {})}),
                         MAX_ARCHIVE_REVISIONS))
    archiving = {revision["revid"] for revision in listed if normalize_user(revision.get("user", "")) in wanted}
    archiving |= {moved} if moved else set()
    if not archiving or not listed:
        return None
    until = max(archiving)
    attribution = None
    for revision in latest_revisions(site, title, until, since=moved or listed[-1]["revid"]):
        if attribution is None:
            attribution = (Attribution.created(revision.id, revision.user, revision.text)
                           if revision.creation or revision.id == moved else
                           Attribution.first_look(revision.id, revision.text))
        else:
            attribution = attribution.advance(revision.id, revision.user, revision.text)
    if attribution is None or attribution.revision != until:
        raise ValueError("its revision is hidden")
    kept, left_out, foreign = [], 0, False
    for line, owner in zip(attribution.text.split("\n"), attribution.owners):
        if line.startswith("="):  # a heading someone else wrote (or retitled): its lines are no thread of ours
            foreign = owner not in archiving
        if owner in archiving and not foreign:
            kept.append(line)
        elif line.strip():
            left_out += 1
    return ArchivedText("\n".join(kept), until, left_out)


def _moved_at(site: pywikibot.site.BaseSite, title: str, forum: str) -> int | None:
    """The revision *title* had when the forum page was moved there (the newest such move), if it was."""
    moves = site.simple_request(action="query", list="logevents", letype="move", letitle=forum, lelimit="max",
                                formatversion="2").submit()
    found = []
    for event in moves.get("query", {}).get("logevents", []):
        if event.get("params", {}).get("target_title") == title:
            at_move = next(listed_revisions(site, {"titles": title, "rvprop": "ids", "rvdir": "older",
                                                   "rvstart": event["timestamp"], "rvlimit": "1"}), None)
            if at_move is not None:
                found.append(at_move["revid"])
    return max(found, default=None)


class ForumHistory:
    """Who saved the forum page when, read a month at a time: what a signature is checked against."""

    def __init__(self, site: pywikibot.site.BaseSite, forum: str) -> None:
        self.site = site
        self.forum = forum
        self._months: dict[tuple[int, int], list[tuple[str, datetime]]] = {}

    def signed(self, user: str, timestamp: datetime) -> bool:
        """Whether *user* saved the forum page within :data:`SIGNED_WITHIN` after *timestamp*."""
        edits = self._month(timestamp) + (self._month(timestamp + SIGNED_WITHIN)
                                          if (timestamp + SIGNED_WITHIN).month != timestamp.month else [])
        return any(editor == user and timestamp <= saved < timestamp + SIGNED_WITHIN for editor, saved in edits)

    def _month(self, when: datetime) -> list[tuple[str, datetime]]:
        key = (when.year, when.month)
        if key not in self._months:
            start = datetime(when.year, when.month, 1, tzinfo=timezone.utc)
            end = datetime(when.year + when.month // 12, when.month % 12 + 1, 1, tzinfo=timezone.utc)
            listed = listed_revisions(self.site, {
                "titles": self.forum, "rvprop": "user|timestamp", "rvdir": "newer",
                "rvstart": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "rvend": end.strftime("%Y-%m-%dT%H:%M:%SZ")})
            self._months[key] = [(normalize_user(item.get("user", "")), datetime.fromisoformat(
                item["timestamp"].replace("Z", "+00:00"))) for item in islice(listed, MAX_FORUM_REVISIONS)]
        return self._months[key]


def harvest(site: pywikibot.site.BaseSite, store: ExampleStore, forum: str, bot: str,
            short_link: Callable[[str], str | None] | None = None, progress: bool = True,
            archivers: list[str] | None = None, existence: Existence | None = None) -> HarvestReport:
    """Harvest the archive pages of *forum* that changed since the last harvest, as the forum's archiving
    (*archivers*, or a move of the forum page) wrote them, and *forum* itself; with *existence*, a query naming an
    item or property Wikidata does not have is not stored."""
    report = HarvestReport()
    try:
        pages = archive_pages(site, forum)
    except (pywikibot.exceptions.Error, OSError) as error:
        report.pages_failed.append((f"{forum}/Archive/", f"cannot list the archive pages: {error}"))
        pages = []
    try:
        current = site.simple_request(action="query", prop="info", titles=forum, formatversion="2").submit()
        forum_page = current["query"]["pages"][0]
        if not forum_page.get("missing"):
            pages.append((forum_page["title"], forum_page["lastrevid"]))
    except (pywikibot.exceptions.Error, OSError, KeyError, IndexError) as error:
        report.pages_failed.append((forum, f"cannot read its page information: {error}"))
    due = []
    for title, revision in pages:
        known = store.page(title)
        if known is not None and known.revision == revision:
            report.pages_unchanged += 1
        else:
            due.append(title)
    history = ForumHistory(site, forum)
    for title, latest in tqdm([page for page in pages if page[0] in due], desc="forum pages", unit="page",
                              disable=not progress):
        try:
            archived = archived_text(site, title, forum, archivers or []) if title != forum else None
            if title != forum and archived is None:
                report.pages_not_archived.append(title)
                store.remove_page(title)
                store.record_page(HarvestedPage(title, latest, datetime.now(timezone.utc).isoformat(
                    timespec="seconds"), 0, 0))
                continue
            if archived is not None and archived.left_out:
                report.lines_left_out.append((title, archived.left_out))
            text = archived.text if archived is not None else read_page(site, title)[0]
            page = harvest_page(text, title, bot, short_link, history.signed)
        except (pywikibot.exceptions.Error, OSError, ValueError, KeyError, IndexError) as error:
            log.warning("not harvested: %s: %s", title, error)
            report.pages_failed.append((title, str(error) or type(error).__name__))
            continue
        report.pages_read += 1
        store.remove_page(title)
        counts = store.add(page.examples, existence)
        report.threads += page.threads
        refused = {key for key, _ in counts.refused}
        report.examples += len(page.examples) - len(refused)
        report.corrections += sum(1 for example in page.examples if example.bot_sparql and example.key not in refused)
        report.added += counts.added
        report.updated += counts.updated
        report.skipped.update(page.skipped)
        if counts.refused:  # a query with a typo (wd:183), a deleted item, or that does not parse: nothing to copy
            report.skipped[QUERY_REFUSED] += len(counts.refused)
        store.record_page(HarvestedPage(title, latest, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                        len(page.examples) - len(refused), len(page.skipped) + len(refused)))
    return report


@dataclass
class PageHarvest:
    threads: int = 0
    examples: list[SolvedExample] = field(default_factory=list)
    #: Why each thread that gave nothing was skipped.
    skipped: list[str] = field(default_factory=list)


def harvest_page(text: str, title: str, bot: str, short_link: Callable[[str], str | None] | None = None,
                 signed: Callable[[str, datetime], bool] | None = None) -> PageHarvest:
    """The examples in the threads of one page (*title*), and the reason each thread without any was skipped;
    *signed* says whether a signature's user really saved the forum then (without it, no one is)."""
    harvested = PageHarvest()
    month = month_of(title)
    for section in parse_sections(text):
        harvested.threads += 1
        try:
            found, reason = harvest_thread(section, title, month, bot, short_link, signed)
        except Exception as error:  # one pathological thread: skipped and counted, the page goes on
            log.exception("%s#%s: cannot read the thread", title, section.heading)
            found, reason = [], f"could not be read ({type(error).__name__})"
        harvested.examples += found
        if reason:
            harvested.skipped.append(reason)
    return harvested


def harvest_thread(section: Section, title: str, month: str, bot: str,
                   short_link: Callable[[str], str | None] | None = None,
                   signed: Callable[[str, datetime], bool] | None = None) -> tuple[list[SolvedExample], str | None]:
    """The solved examples and corrections of one thread, or why it gave none.  A post is credited to its
    signature's user only when *signed* says that user saved the forum then; otherwise to nobody.  A post signed
    as the asker or as the bot is never an example (leaving a query out is safe); it is the bot's answer, which
    later queries correct, only when the bot saved the page then."""
    if not section.signatures:
        return [], "no signed request"
    if len(section.opening) > MAX_REQUEST_CHARS:
        return [], f"a request longer than {MAX_REQUEST_CHARS} characters"
    if addresses_model(section.text):
        return [], "its text addresses the model"
    request = extract_request(section)

    def author(user: str, timestamp: datetime) -> str:
        return user if signed is not None and signed(user, timestamp) else ""

    asker, created = section.signatures[0].user, section.signatures[0].timestamp
    thread = f"{thread_name(section.heading)} @ {created:%Y-%m-%dT%H:%M}"
    common = {"question": request.question, "link": f"{title}#{section.heading}", "language": guess_language(
        request.question), "heading": section.heading, "month": month or f"{created:%Y-%m}"}
    wanted = normalize_user(bot)
    bot_query = ""
    found: list[SolvedExample] = []
    unresolved = 0
    for post in posts(section):
        queries = queries_in(post.text)
        for link in short_links(post.text):
            query = short_link(link) if short_link else None
            if query:
                queries.append(query)
            else:
                unresolved += 1
        queries = [query for query in dict.fromkeys(queries) if query]
        user = author(post.user, post.timestamp)
        if post.user == wanted:  # signed as the bot: its query only if the bot saved the page then
            bot_query = queries[0] if queries and user else bot_query
            continue
        for query in queries:
            digest = hashlib.sha1(query.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            if bot_query and query != bot_query:
                found.append(SolvedExample(key=f"correction {thread} {digest}", sparql=query, source="correction",
                                           date=f"{post.timestamp:%Y-%m-%d}", author=user, bot_sparql=bot_query,
                                           **common))
            elif not bot_query and post.user != asker:
                found.append(SolvedExample(key=f"forum {thread} {digest}", sparql=query, source="forum",
                                           date=f"{post.timestamp:%Y-%m-%d}", author=user, **common))
    if found:
        return found, None
    if unresolved:
        return [], "only short links that lead to no query"
    return [], "no query posted by someone other than the asker" + (" or the bot" if bot_query else "")
