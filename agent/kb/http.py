"""HTTP for Wikidata: a polite User-Agent, timeouts, one retry policy that honours Retry-After, the cache.

Wikimedia asks every client for a User-Agent naming the tool and a contact,
and answers overload with 429 or 503 plus ``Retry-After``.  Every
``requests`` client of the agent retries through :func:`retry_policy`
(urllib3's ``Retry``): exponential backoff on connection errors and on 429,
502, 503 and 504, the wait the service asks for when it says one (capped).
A read timeout is not retried: a query that ran out of time would only run
out again, and the caller turns it into the ``timeout`` signal.
"""

from __future__ import annotations

import contextvars
import email.utils
import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError, ResponseError
from urllib3.util.retry import Retry

from agent.kb.base import KBUnavailable
from agent.kb.cache import CachedResponse, ResponseCache, request_key

VERSION = "0.1.0"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: The longest ``Retry-After`` we wait, in seconds.
MAX_RETRY_AFTER = 120.0

#: A surrogate code point: in a Python string (pairs are already joined), always a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")


class EngineBusy(KBUnavailable):
    """The service answered HTTP 429 on every try: it asks us to come back later (QLever also says so when a
    query ran out of time, which its body tells)."""

    def __init__(self, message: str, status: int = 429, text: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.text = text
        self.retry_after = retry_after


def well_formed(text: str) -> str:
    """*text* with each lone surrogate (valid in JSON's ``\\ud800``, not in UTF-8) replaced by U+FFFD.

    A model may write one, and a service's JSON may carry one; sent back in the next prompt, stored or posted,
    it would fail to encode.
    """
    return _SURROGATE.sub("\ufffd", text)


def user_agent(contact: str) -> str:
    """``spinach-bot/0.1.0 (<contact>) requests/<version>``, per the Wikimedia User-Agent policy."""
    return f"spinach-bot/{VERSION} ({contact or 'no contact configured'}) requests/{requests.__version__}"


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


class _CappedRetry(Retry):
    """urllib3's ``Retry``, with the service's ``Retry-After`` capped at :data:`MAX_RETRY_AFTER`, and no retry
    whose wait would end after the :func:`deadline`: the answer in hand (a 429, a 503) is returned at once, or the
    connection error raised, rather than slept on past the time the caller has."""

    def parse_retry_after(self, retry_after: str) -> float:
        return min(MAX_RETRY_AFTER, super().parse_retry_after(retry_after))

    def increment(self, method: str | None = None, url: str | None = None, response: Any = None,
                  error: Exception | None = None, _pool: Any = None, _stacktrace: Any = None) -> Retry:
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        left = time_left()
        if left is not None:
            asked = retry.get_retry_after(response) if response is not None and self.respect_retry_after_header \
                else None
            pause = asked if asked else retry.get_backoff_time()
            if pause >= left:
                raise MaxRetryError(_pool, url or "", error or ResponseError(
                    f"not asked again: the wait of {pause:g} s ends after the time left"))
        return retry


def retry_policy(max_retries: int, backoff: float) -> Retry:
    """The one retry policy of every ``requests`` client here; the last response is returned, not raised."""
    return _CappedRetry(total=max_retries, connect=max_retries, read=False, status=max_retries,
                        backoff_factor=backoff, status_forcelist=sorted(RETRY_STATUSES), allowed_methods=None,
                        respect_retry_after_header=True, raise_on_status=False)


def retrying_session(contact: str, max_retries: int = 4, backoff: float = 1.0) -> requests.Session:
    """A session with the polite User-Agent and :func:`retry_policy` mounted for http and https."""
    session = requests.Session()
    session.headers["User-Agent"] = user_agent(contact)
    adapter = HTTPAdapter(max_retries=retry_policy(max_retries, backoff))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


#: When the work this thread (this context) does must be done, as ``time.monotonic()``; ``None`` for no deadline.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("request_deadline", default=None)


def time_left() -> float | None:
    """The seconds left until this context's :func:`deadline` (less than 0 once it passed); ``None`` without one."""
    until = _DEADLINE.get()
    return None if until is None else until - time.monotonic()


@contextmanager
def deadline(moment: float | None) -> Iterator[None]:
    """Within the block, a request whose caller gives no timeout of its own waits at most until *moment* (an
    agent run's time: its lookups come out of it as its queries do); ``None`` changes nothing."""
    token = _DEADLINE.set(moment)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@dataclass
class HttpClient:
    contact: str = ""
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    cache: ResponseCache | None = None
    #: Statuses worth keeping in the cache: answers that do not change on retry.
    cacheable: frozenset[int] = frozenset({200, 400})

    def __post_init__(self) -> None:
        self.session = retrying_session(self.contact, self.max_retries, self.backoff)

    def request(self, method: str, url: str, *, params: dict[str, Any] | None = None,
                data: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
                timeout: float | None = None, max_bytes: int | None = None,
                keep: Callable[[str], bool] | None = None) -> CachedResponse:
        """The response (from the cache when it has it); raises KBUnavailable when the service cannot answer.

        A 502/503/504 that outlasts the retries is returned for the caller to
        read; a 429 that does, or no connection at all, is KBUnavailable.  A
        response is cached only when its status is cacheable and *keep* (if
        given) accepts its text.  ``requests.Timeout`` is passed on to the
        caller, which knows what a slow answer means for it; without a
        *timeout* of the caller's, the wait is cut at the :func:`deadline`, and
        a request cut there is KBUnavailable.
        """
        key = request_key(method, url, params, data)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                return cached
            if self.cache.offline:
                raise KBUnavailable(f"offline, and this request is not in the cache: {method} {url} {params or data}")
        wait, left = timeout or self.timeout, None if timeout is not None else time_left()
        if left is not None and left <= 0:
            raise KBUnavailable(f"{url}: not asked, no time is left")
        if left is not None:
            wait = min(wait, left)
        try:
            response = self.session.request(method, url, params=params, data=data, headers=headers,
                                            timeout=(min(10.0, wait), wait), stream=True)
            text, cut = _read(response, max_bytes)
        except requests.Timeout as error:
            if left is not None and wait == left:  # the deadline cut the wait, not the service's own timeout
                raise KBUnavailable(f"{url}: no answer within the {wait:.1f} s that were left") from error
            raise
        except requests.RequestException as error:
            raise KBUnavailable(f"{url}: {error}") from error
        if response.status_code == 429:
            retried = response.raw.retries  # urllib3's record of the tries before this answer
            tries = 1 + (len(retried.history) if retried is not None else 0)
            raise EngineBusy(f"{url} answered HTTP 429 (too many requests) after {tries} "
                             f"{'try' if tries == 1 else 'tries'}",
                             text=text, retry_after=retry_after_seconds(response.headers.get("Retry-After")))
        if cut:
            return CachedResponse(status=response.status_code, text=text, retrieved_at=time.time(), truncated=True)
        if self.cache is not None and response.status_code in self.cacheable and (keep is None or keep(text)):
            request = json.dumps({"method": method, "url": url, "params": params, "data": data}, ensure_ascii=False)
            return self.cache.put(key, request, response.status_code, text)
        return CachedResponse(status=response.status_code, text=text, retrieved_at=time.time())


def _read(response: requests.Response, max_bytes: int | None) -> tuple[str, bool]:
    """The body, and whether it was cut at *max_bytes*."""
    if max_bytes is None:
        return response.text, False
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            response.close()
            body = b"".join(chunks)[:max_bytes]
            return body.decode(response.encoding or "utf-8", errors="ignore"), True
    return b"".join(chunks).decode(response.encoding or "utf-8", errors="replace"), False
