"""``https://w.wiki/…`` links in a request, followed to the query they stand for.

Editors share queries as short links (the query service's "Short URL"
button): ``https://w.wiki/ABCD`` answers with a redirect to
``https://query.wikidata.org/#<the query, percent-encoded>``.  The bot asks
the shortener for each such link in the asker's text (at most
:data:`MAX_LINKS` a request), reads the redirect's ``Location`` without
following it, and gives the query it holds to the model as one of the
asker's drafts.  A link that does not resolve to a query (another target, an
unknown code, the shortener unreachable or asking the bot to wait longer
than it may) is left as text and logged.

Where the shortener is asked is ``short_links`` in ``bot.ini`` (default
``https://w.wiki``).  Each request has a timeout; a busy answer (429, 502,
503, 504) is asked again after its ``Retry-After`` (or a doubling backoff),
and no request goes out before a ``Retry-After`` has passed.  The waiting is
capped: at most :data:`QUESTION_WAIT` seconds for one question's links and
:data:`PASS_WAIT` for a whole pass of the bot, so a shortener that answers
"come back in two minutes" delays the answers by seconds, not minutes; a
link it would not answer in time is left as text.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

from agent.kb.http import RETRY_STATUSES, retry_after_seconds, retrying_session
from bot.forum import Request, query_in_url, short_links

log = logging.getLogger(__name__)
MAX_LINKS = 5
TIMEOUT = 10
#: Tries per link (the first and the ones after a busy answer or a failed connection).
TRIES = 3
#: Seconds of backoff before the second try when the shortener gives no ``Retry-After``; doubled after.
BACKOFF = 1.0
#: The most seconds one question's links, and one pass of the bot, may spend waiting on the shortener.
QUESTION_WAIT = 10.0
PASS_WAIT = 30.0


@dataclass
class ShortLinks:
    """The shortener at *base* (``https://w.wiki``, or a stand-in in tests)."""

    base: str = "https://w.wiki"
    contact: str = ""
    question_wait: float = QUESTION_WAIT
    pass_wait: float = PASS_WAIT
    session: requests.Session = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.session is None:  # the retries are this class's own: they count against its waiting caps
            self.session = retrying_session(self.contact, max_retries=0)
        self._pass_waited = 0.0
        self._question_waited = 0.0
        #: No request before this moment (``time.monotonic``): the shortener's last ``Retry-After``.
        self._not_before = 0.0

    def new_pass(self) -> None:
        """A pass of the bot begins: its waiting cap starts again."""
        self._pass_waited = 0.0

    def _wait(self, seconds: float, url: str) -> bool:
        """Wait *seconds* before asking *url* again, if the question's and the pass's caps allow it."""
        left = min(self.question_wait - self._question_waited, self.pass_wait - self._pass_waited)
        if seconds > left:
            log.warning("the short link %s must wait %.0f s for the shortener, more than the %.0f s this %s may "
                        "still wait; it is left as text", url, seconds, max(left, 0.0),
                        "question" if left == self.question_wait - self._question_waited else "pass")
            return False
        time.sleep(seconds)
        self._question_waited += seconds
        self._pass_waited += seconds
        return True

    def target(self, code: str) -> str | None:
        """Where the short link *code* points, from the shortener's redirect; ``None`` when it does not."""
        url = f"{self.base.rstrip('/')}/{code}"
        for attempt in range(TRIES):
            if not self._wait(max(0.0, self._not_before - time.monotonic()), url):
                return None
            try:
                response = self.session.get(url, allow_redirects=False, timeout=TIMEOUT)
            except requests.RequestException as error:
                log.warning("cannot resolve the short link %s: %s", url, error)
                if attempt + 1 < TRIES and self._wait(BACKOFF * 2 ** attempt, url):
                    continue
                return None
            if response.status_code in RETRY_STATUSES and attempt + 1 < TRIES:
                delay = retry_after_seconds(response.headers.get("Retry-After"))
                delay = BACKOFF * 2 ** attempt if delay is None else delay
                self._not_before = time.monotonic() + delay
                continue
            if response.status_code not in (301, 302, 303, 307, 308) or not response.headers.get("Location"):
                log.warning("the short link %s does not redirect (HTTP %d)", url, response.status_code)
                return None
            return response.headers["Location"]
        return None

    def query(self, link: str) -> str | None:
        """The query the short link *link* (``https://w.wiki/ABCD``) stands for, or ``None``."""
        code = link.rsplit("/", 1)[-1]
        target = self.target(code)
        query = query_in_url(target or "")
        if not query:
            if target:
                log.info("the short link w.wiki/%s points to %s, not to a query", code, urlsplit(target).netloc)
            return None
        return query

    def resolve(self, request: Request, text: str) -> Request:
        """*request* with the queries of the short links in *text* (the asker's wikitext) among its drafts."""
        self._question_waited = 0.0
        queries = [query for query in map(self.query, short_links(text)[:MAX_LINKS]) if query]
        if not queries:
            return request
        log.info("%d short link(s) in %r resolved to queries", len(queries), request.heading)
        return dataclasses.replace(request, queries=list(dict.fromkeys(request.queries + queries)))
