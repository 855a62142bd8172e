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

Incremental: a page whose latest revision was harvested already is not read
again.  A page that cannot be read is skipped with its reason and read again
next time; a thread without a query from someone else is skipped with its
reason; both are counted, and nothing stops the harvest.  Who wrote a reply
is read from its signature (archive pages carry no history of the thread),
so a reply signed with the bot's name counts as the bot's.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pywikibot
import requests
from tqdm import tqdm

from agent.examples.languages import guess_language
from agent.examples.store import ExampleStore, HarvestedPage, SolvedExample, month_of, thread_name
from agent.kb.http import retrying_session
from bot.forum import (
    MAX_REQUEST_CHARS, Section, extract_request, normalize_user, parse_sections, posts, queries_in, query_in_url,
    short_links,
)

log = logging.getLogger(__name__)
#: Where ``https://w.wiki/…`` links are followed.
SHORT_LINK_BASE = "https://w.wiki/"


@dataclass
class HarvestReport:
    pages_read: int = 0
    #: Pages whose latest revision was harvested before: not read again.
    pages_unchanged: int = 0
    #: Pages that could not be read, with the reason; read again next time.
    pages_failed: list[tuple[str, str]] = field(default_factory=list)
    threads: int = 0
    examples: int = 0
    corrections: int = 0
    added: int = 0
    updated: int = 0
    #: Threads (or short links) left out, by reason.
    skipped: Counter = field(default_factory=Counter)

    def lines(self) -> list[str]:
        lines = [f"pages read: {self.pages_read}, unchanged since the last harvest: {self.pages_unchanged}, "
                 f"not readable: {len(self.pages_failed)}",
                 f"threads: {self.threads}; examples found: {self.examples} (corrections: {self.corrections}); "
                 f"new in the store: {self.added}, updated: {self.updated}"]
        lines += [f"skipped {count}: {reason}" for reason, count in sorted(self.skipped.items())]
        lines += [f"not read: {title}: {reason}" for title, reason in self.pages_failed]
        return lines


@dataclass
class ShortLinks:
    """Follows ``w.wiki`` short links to the query service link they redirect to (one request each)."""

    base: str = SHORT_LINK_BASE
    contact: str = ""
    timeout: float = 30.0

    def __post_init__(self) -> None:
        self.session = retrying_session(self.contact, max_retries=3)

    def query(self, link: str) -> str | None:
        """The query *link* opens; ``None`` when it leads elsewhere or cannot be followed."""
        url = self.base.rstrip("/") + "/" + link.rsplit("/", 1)[-1]
        try:
            response = self.session.get(url, allow_redirects=False, timeout=self.timeout)
        except requests.RequestException as error:
            log.warning("cannot follow %s: %s", link, error)
            return None
        return query_in_url(response.headers.get("Location", "")) if response.is_redirect else None


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


def read_page(site: pywikibot.site.BaseSite, title: str) -> tuple[str, int]:
    """The text and revision of *title*; ``ValueError`` saying why when there is none to read."""
    reply = site.simple_request(action="query", prop="revisions", titles=title, rvprop="ids|content",
                                rvslots="main", formatversion="2").submit()
    pages = reply.get("query", {}).get("pages", [])
    if not pages or pages[0].get("missing") or pages[0].get("invalid"):
        raise ValueError("the page does not exist")
    revision = pages[0]["revisions"][0]
    slot = revision.get("slots", {}).get("main", {})
    if "content" not in slot:
        raise ValueError("its latest revision is hidden")
    if slot.get("contentmodel", "wikitext") != "wikitext":
        raise ValueError(f"its content is {slot['contentmodel']}, not wikitext")
    return slot["content"], revision["revid"]


def harvest(site: pywikibot.site.BaseSite, store: ExampleStore, forum: str, bot: str,
            short_link: Callable[[str], str | None] | None = None, progress: bool = True) -> HarvestReport:
    """Harvest the archive pages of *forum* that changed since the last harvest, and *forum* itself."""
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
    for title in tqdm(due, desc="forum pages", unit="page", disable=not progress):
        try:
            text, revision = read_page(site, title)
        except (pywikibot.exceptions.Error, OSError, ValueError, KeyError, IndexError) as error:
            log.warning("not harvested: %s: %s", title, error)
            report.pages_failed.append((title, str(error) or type(error).__name__))
            continue
        report.pages_read += 1
        page = harvest_page(text, title, bot, short_link)
        counts = store.add(page.examples)
        report.threads += page.threads
        report.examples += len(page.examples)
        report.corrections += sum(1 for example in page.examples if example.bot_sparql)
        report.added += counts.added
        report.updated += counts.updated
        report.skipped.update(page.skipped)
        store.record_page(HarvestedPage(title, revision, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                        len(page.examples), len(page.skipped)))
    return report


@dataclass
class PageHarvest:
    threads: int = 0
    examples: list[SolvedExample] = field(default_factory=list)
    #: Why each thread that gave nothing was skipped.
    skipped: list[str] = field(default_factory=list)


def harvest_page(text: str, title: str, bot: str, short_link: Callable[[str], str | None] | None = None) -> PageHarvest:
    """The examples in the threads of one page (*title*), and the reason each thread without any was skipped."""
    harvested = PageHarvest()
    month = month_of(title)
    for section in parse_sections(text):
        harvested.threads += 1
        try:
            found, reason = harvest_thread(section, title, month, bot, short_link)
        except Exception as error:  # one pathological thread: skipped and counted, the page goes on
            log.exception("%s#%s: cannot read the thread", title, section.heading)
            found, reason = [], f"could not be read ({type(error).__name__})"
        harvested.examples += found
        if reason:
            harvested.skipped.append(reason)
    return harvested


def harvest_thread(section: Section, title: str, month: str, bot: str,
                   short_link: Callable[[str], str | None] | None = None) -> tuple[list[SolvedExample], str | None]:
    """The solved examples and corrections of one thread, or why it gave none."""
    if not section.signatures:
        return [], "no signed request"
    if len(section.opening) > MAX_REQUEST_CHARS:
        return [], f"a request longer than {MAX_REQUEST_CHARS} characters"
    request = extract_request(section)
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
        if post.user == wanted:
            bot_query = queries[0] if queries else bot_query
            continue
        for query in queries:
            digest = hashlib.sha1(query.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            if bot_query and query != bot_query:
                found.append(SolvedExample(key=f"correction {thread} {digest}", sparql=query, source="correction",
                                           date=f"{post.timestamp:%Y-%m-%d}", author=post.user, bot_sparql=bot_query,
                                           **common))
            elif not bot_query and post.user != asker:
                found.append(SolvedExample(key=f"forum {thread} {digest}", sparql=query, source="forum",
                                           date=f"{post.timestamp:%Y-%m-%d}", author=post.user, **common))
    if found:
        return found, None
    if unresolved:
        return [], "only short links that lead to no query"
    return [], "no query posted by someone other than the asker" + (" or the bot" if bot_query else "")
