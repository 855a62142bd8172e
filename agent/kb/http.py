"""HTTP for Wikidata: a polite User-Agent, timeouts, retries that honour Retry-After, the cache.

Wikimedia asks every client for a User-Agent naming the tool and a contact,
and answers overload with 429 or 503 plus ``Retry-After``; we wait what it
asks (capped), back off exponentially otherwise, and give up with
:class:`KBUnavailable` after ``max_retries``.
"""

from __future__ import annotations

import email.utils
import json
import time
from dataclasses import dataclass
from typing import Any

import requests

from agent.kb.base import KBUnavailable
from agent.kb.cache import CachedResponse, ResponseCache, request_key

VERSION = "0.1.0"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRY_AFTER = 120.0


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
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent(self.contact)

    def request(self, method: str, url: str, *, params: dict[str, Any] | None = None,
                data: dict[str, Any] | None = None, headers: dict[str, str] | None = None,
                timeout: float | None = None, max_bytes: int | None = None) -> CachedResponse:
        """The response (from the cache when it has it); raises KBUnavailable when the service cannot answer.

        ``requests.Timeout`` is passed on to the caller, which knows what a slow answer means for it.
        """
        key = request_key(method, url, params, data)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                return cached
            if self.cache.offline:
                raise KBUnavailable(f"offline, and this request is not in the cache: {method} {url} {params or data}")
        for attempt in range(self.max_retries + 1):
            try:
                response = self.session.request(method, url, params=params, data=data, headers=headers,
                                                timeout=(10.0, timeout or self.timeout), stream=True)
                text, cut = _read(response, max_bytes)
            except requests.Timeout:
                raise
            except requests.RequestException as error:
                if attempt == self.max_retries:
                    raise KBUnavailable(f"{url}: {error}") from error
                time.sleep(self.backoff * 2 ** attempt)
                continue
            if response.status_code in RETRY_STATUSES:
                if attempt == self.max_retries:
                    raise KBUnavailable(f"{url} answered HTTP {response.status_code} after {attempt + 1} tries")
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                time.sleep(min(MAX_RETRY_AFTER, wait if wait is not None else self.backoff * 2 ** attempt))
                continue
            if cut:
                return CachedResponse(status=response.status_code, text=text, retrieved_at=time.time(), truncated=True)
            if self.cache is not None and response.status_code in self.cacheable:
                request = json.dumps({"method": method, "url": url, "params": params, "data": data},
                                     ensure_ascii=False)
                return self.cache.put(key, request, response.status_code, text)
            return CachedResponse(status=response.status_code, text=text, retrieved_at=time.time())
        raise AssertionError("unreachable")


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
