"""The chat page's conversations: the questions asked and what the page showed of each answer, so a follow-up
revises the last query as a follow-up in a forum thread does, and a conversation's link shows it again.

A conversation is kept in a small SQLite file (``--conversations FILE``; in
memory when none is given, gone when the server stops) under an ID nobody
can guess (:func:`secrets.token_urlsafe`): its link is the key to read it
and to continue it.  The oldest conversations are forgotten first, past
:data:`KEPT`.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import AgentContext

#: Conversations kept; the one used longest ago is forgotten first.
KEPT = 10000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, graph TEXT NOT NULL, used REAL NOT NULL);
CREATE TABLE IF NOT EXISTS turns (conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    number INTEGER NOT NULL, question TEXT NOT NULL, query TEXT NOT NULL, explanation TEXT NOT NULL,
    answered INTEGER NOT NULL, shown TEXT NOT NULL, PRIMARY KEY (conversation, number));
CREATE INDEX IF NOT EXISTS conversations_used ON conversations (used);
"""


@dataclass
class Turn:
    question: str
    query: str
    explanation: str
    #: The run ended on an answer (a query, or the finding that the graph cannot answer); a stopped or failed
    #: run is shown again but is no part of the context a follow-up reads.
    answered: bool = True
    #: What the page showed: ``steps`` (the step events), ``final`` (the answer event) or ``failed`` (a sentence).
    shown: dict[str, Any] = field(default_factory=dict)


@dataclass
class Conversation:
    id: str
    graph: str
    turns: list[Turn] = field(default_factory=list)

    def context(self) -> AgentContext:
        """The discussion so far and the last query, as the agent reads a forum thread's."""
        answered = [turn for turn in self.turns if turn.answered]
        thread = "\n\n".join(f"Asked: {turn.question}\nAnswered: {turn.explanation or '(no explanation)'}"
                             for turn in answered)
        previous = next((turn.query for turn in reversed(answered) if turn.query), "")
        return AgentContext(thread=thread, previous_query=previous)


class Conversations:
    """The conversations kept in SQLite (*path*, or memory), by an ID nobody else can guess."""

    def __init__(self, path: Path | str | None = None, kept: int = KEPT) -> None:
        self.kept = kept
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path) if path is not None else ":memory:", check_same_thread=False,
                                   isolation_level=None)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def start(self, graph: str) -> Conversation:
        conversation = Conversation(secrets.token_urlsafe(16), graph)
        with self._lock:
            self._db.execute("INSERT INTO conversations VALUES (?, ?, ?)", (conversation.id, graph, time.time()))
            self._db.execute("DELETE FROM conversations WHERE id IN (SELECT id FROM conversations ORDER BY used DESC "
                             "LIMIT -1 OFFSET ?)", (self.kept,))
        return conversation

    def get(self, conversation_id: str) -> Conversation | None:
        """The conversation and its turns, or ``None`` for an ID never given out or forgotten."""
        with self._lock:
            found = self._db.execute("SELECT graph FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if found is None:
                return None
            rows = self._db.execute("SELECT question, query, explanation, answered, shown FROM turns "
                                    "WHERE conversation = ? ORDER BY number", (conversation_id,)).fetchall()
        return Conversation(conversation_id, found[0],
                            [Turn(question, query, explanation, bool(answered), json.loads(shown))
                             for question, query, explanation, answered, shown in rows])

    def add(self, conversation: Conversation, turn: Turn) -> None:
        """Keep *turn* as the conversation's next (its ``used`` time renewed)."""
        conversation.turns.append(turn)
        with self._lock:
            if not self._db.execute("UPDATE conversations SET used = ? WHERE id = ?",
                                    (time.time(), conversation.id)).rowcount:
                return  # forgotten while its question ran: the page showed the answer, nobody can open it again
            self._db.execute("INSERT INTO turns VALUES (?, (SELECT COUNT(*) FROM turns WHERE conversation = ?), "
                             "?, ?, ?, ?, ?)",
                             (conversation.id, conversation.id, turn.question, turn.query, turn.explanation,
                              int(turn.answered), json.dumps(turn.shown, ensure_ascii=False)))

    def close(self) -> None:
        with self._lock:
            self._db.close()
