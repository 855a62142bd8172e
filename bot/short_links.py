"""``https://w.wiki/…`` links in a request, followed to the query they stand for.

Editors share queries as short links (the query service's "Short URL"
button): ``https://w.wiki/ABCD`` answers with a redirect to
``https://query.wikidata.org/#<the query, percent-encoded>``.  The bot asks
the shortener for each such link in the asker's text (at most
:data:`MAX_LINKS` a request), reads the redirect's ``Location`` without
following it, and gives the query it holds to the model as one of the
asker's drafts.  A link that does not resolve to a query (another target, an
unknown code, the shortener unreachable) is left as text and logged.

Where the shortener is asked is ``short_links`` in ``bot.ini`` (default
``https://w.wiki``); the requests go through the project's one retry policy
(timeouts, backoff, ``Retry-After``).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import requests

from agent.kb.http import retrying_session
from bot.forum import Request

log = logging.getLogger(__name__)
SHORT_LINK = re.compile(r"https?://w\.wiki/([A-Za-z0-9_~$-]{1,20})(?![A-Za-z0-9_~$-])")
QUERY_SERVICE = re.compile(r"https://query\.wikidata\.org/(?:embed\.html)?(?:#|\?query=)(.+)", re.DOTALL)
MAX_LINKS = 5
TIMEOUT = 10


@dataclass
class ShortLinks:
    """The shortener at *base* (``https://w.wiki``, or a stand-in in tests)."""

    base: str = "https://w.wiki"
    contact: str = ""
    session: requests.Session = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.session is None:
            self.session = retrying_session(self.contact, max_retries=2)

    def target(self, code: str) -> str | None:
        """Where the short link *code* points, from the shortener's redirect; ``None`` when it does not."""
        url = f"{self.base.rstrip('/')}/{code}"
        try:
            response = self.session.get(url, allow_redirects=False, timeout=TIMEOUT)
        except requests.RequestException as error:
            log.warning("cannot resolve the short link %s: %s", url, error)
            return None
        if response.status_code not in (301, 302, 303, 307, 308) or not response.headers.get("Location"):
            log.warning("the short link %s does not redirect (HTTP %d)", url, response.status_code)
            return None
        return response.headers["Location"]

    def query(self, code: str) -> str | None:
        """The query the short link *code* stands for, or ``None``."""
        target = self.target(code)
        found = QUERY_SERVICE.fullmatch(target or "")
        if found is None:
            if target:
                log.info("the short link w.wiki/%s points to %s, not to a query", code, urlsplit(target).netloc)
            return None
        return unquote(found.group(1)).strip() or None

    def resolve(self, request: Request, text: str) -> Request:
        """*request* with the queries of the short links in *text* (the asker's wikitext) among its drafts."""
        codes = list(dict.fromkeys(SHORT_LINK.findall(text)))[:MAX_LINKS]
        queries = [query for query in map(self.query, codes) if query]
        if not queries:
            return request
        log.info("%d short link(s) in %r resolved to queries", len(queries), request.heading)
        return dataclasses.replace(request, queries=list(dict.fromkeys(request.queries + queries)))
