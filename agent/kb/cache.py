"""A persistent response cache for every Wikidata request.

Keyed by the request itself (method, URL, sorted parameters and body), it
stores the response text, its HTTP status and when it was retrieved.  With
it, an evaluation run can be repeated exactly (offline mode answers only from
the cache) and a gold answer carries the date it was read from a Wikidata
that keeps changing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class CachedResponse:
    status: int
    text: str
    retrieved_at: float
    #: The body was cut at the size limit (such a response is never stored).
    truncated: bool = False


def request_key(method: str, url: str, params: dict[str, Any] | None = None,
                data: dict[str, Any] | None = None) -> str:
    """A stable key for a request: the same request always maps to the same key."""
    canonical = json.dumps([method.upper(), url, sorted((params or {}).items()), sorted((data or {}).items())],
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    """SQLite-backed; safe to share between threads and processes (WAL, one connection per thread)."""

    def __init__(self, path: str | Path, max_age: float | None = None, offline: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_age = max_age
        self.offline = offline
        self._local = threading.local()
        with self._connection() as connection:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
                "status INTEGER NOT NULL, body TEXT NOT NULL, retrieved_at REAL NOT NULL)"
            )

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30)
            self._local.connection = connection
        return connection

    def get(self, key: str) -> CachedResponse | None:
        """The stored response, or ``None`` when absent or older than ``max_age`` seconds."""
        row = self._connection().execute(
            "SELECT status, body, retrieved_at FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        response = CachedResponse(status=row[0], text=row[1], retrieved_at=row[2])
        if self.max_age is not None and not self.offline and time.time() - response.retrieved_at > self.max_age:
            return None
        return response

    def put(self, key: str, request: str, status: int, text: str) -> CachedResponse:
        response = CachedResponse(status=status, text=text, retrieved_at=time.time())
        with self._connection() as connection:
            connection.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                               (key, request, status, text, response.retrieved_at))
        return response
