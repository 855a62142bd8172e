"""The chat page's conversations: the questions asked and the answers given, so a follow-up revises the last
query as a follow-up in a forum thread does."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from agent import AgentContext

#: Conversations kept; the oldest is forgotten first.
KEPT = 1000


@dataclass
class Turn:
    question: str
    query: str
    explanation: str


@dataclass
class Conversation:
    id: str
    graph: str
    turns: list[Turn] = field(default_factory=list)
    #: A conversation answers one question at a time.
    busy: bool = False

    def context(self) -> AgentContext:
        """The discussion so far and the last query, as the agent reads a forum thread's."""
        thread = "\n\n".join(f"Asked: {turn.question}\nAnswered: {turn.explanation or '(no explanation)'}"
                             for turn in self.turns)
        previous = next((turn.query for turn in reversed(self.turns) if turn.query), "")
        return AgentContext(thread=thread, previous_query=previous)


class Conversations:
    """The conversations kept in memory, by an ID nobody else can guess."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._items: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, graph: str) -> Conversation:
        conversation = Conversation(secrets.token_urlsafe(16), graph)
        with self._lock:
            self._items[conversation.id] = conversation
            while len(self._items) > self.kept:
                self._items.popitem(last=False)
        return conversation

    def get(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            conversation = self._items.get(conversation_id)
            if conversation is not None:
                self._items.move_to_end(conversation_id)
            return conversation
