"""What a reply answers and what it holds: the two kinds the watcher, the review step, the edit summary and the
pass's log line share, as types (stored, in drafts and logs, as their values).

A module of its own, importing nothing of the bot's, so the renderer can read them as well as the planner.
"""

from __future__ import annotations

from enum import StrEnum


class TaskKind(StrEnum):
    """What a reply answers: it decides the request the model reads, whom the reply addresses, the log line and
    the edit summary (:func:`bot.render.edit_summary`)."""

    #: A new section's question.
    QUESTION = "question"
    #: A comment under the bot's reply: the asker's, or someone's who mentions the bot.
    FOLLOW_UP = "follow-up"
    #: A ping of the bot in a question it has not answered (an old one included): its first answer there.
    PING = "ping"
    #: A question too long to read: a fixed note.
    TOO_LONG = "too-long"


class ReplyKind(StrEnum):
    """What a reply holds (:func:`bot.render.reply_kind`): it decides whether the bot speaks without a query
    (``reply_without_answer``) and what the edit summary says."""

    #: A query for the asker to check.
    QUERY = "query"
    #: No query: the run ended without one.
    NO_QUERY = "no_query"
    #: The model's judgement that the graph cannot answer the question.
    CANNOT_ANSWER = "cannot_answer"
