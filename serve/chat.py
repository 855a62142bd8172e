"""The chat page's routes: the page, the graphs served, a question in, its run's events as they happen, a stop
button, and a conversation's link.

``POST /chat/runs`` admits a run and starts it at once (or lines it up behind
the asker's other questions: the page shows its place in line); the page then
opens ``GET /chat/runs/{id}/events`` (server-sent events) and reads
``accepted``, ``queued`` (its place in line, each time it moves), ``started``
once a worker takes the run, one ``step`` per step as the agent takes it, then
``final`` (or ``failed``) and ``end``.  Each event has an ID: a page that
connects again (a reload, the browser's own reconnection with
``Last-Event-ID``) gets the events it has not seen, and the question is never
asked twice.  A run whose page does not connect within :data:`CONNECT_SECONDS`,
or that no page has watched for the server's watch grace
(:data:`WATCH_GRACE_SECONDS` unless configured), is cancelled; ``POST /chat/runs/{id}/stop`` stops it at once.

``GET /chat/conversations/{id}`` gives what a conversation's link shows: its
questions with the steps and answers the page showed, and the question in
flight, if any, whose events the page then follows.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse

from agent import Step
from serve.conversations import Conversation, Conversations, Turn
from serve.events import PREVIEW_ROWS, final_event, labels_for, step_event
from serve.graphs import ServedGraph
from serve.runs import Busy, RunPool, StopCause, Ticket

log = logging.getLogger(__name__)

router = APIRouter()

#: Seconds a started run waits for its page to connect before it is cancelled.
CONNECT_SECONDS = 30.0
#: Seconds a run goes on once no page watches it (``--watch-grace``): a reload, or the conversation's link opened
#: again, takes it up within them; then it is cancelled.
WATCH_GRACE_SECONDS = 30.0
#: The page loads nothing from elsewhere and runs only its own script file: markup slipped into it could not run.
PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
               "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
#: The longest question accepted, in characters.
QUESTION_CHARS = 2000
#: What a page opening a conversation's link that the server does not know is told.
UNKNOWN_CONVERSATION = "this conversation is unknown or was forgotten; start a new one"


class Ask(BaseModel):
    question: str = Field(min_length=1, max_length=QUESTION_CHARS)
    graph: str
    #: The conversation a follow-up continues; none for a new one.
    conversation: str | None = None


@dataclass
class ChatRun:
    """One question's run and the events it has produced so far."""

    id: str
    ticket: Ticket
    question: str
    conversation: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: Pages waiting for the next event, each on a future of its own.
    waiting: list[asyncio.Future[None]] = field(default_factory=list)
    finished: bool = False
    #: Pages reading its events now; when none has for the watch grace, the run is cancelled.
    watchers: int = 0
    #: Some page has read its events (else "did not connect" is what an operator reads of its cancellation).
    connected: bool = False
    #: Bumped each time the last page stops watching: a later page's arrival voids the earlier timer.
    unwatched: int = 0
    #: The place in line last sent (0: not waiting).
    position: int = 0

    def push(self, name: str, data: dict[str, Any]) -> None:
        self.events.append((name, data))
        waiting, self.waiting = self.waiting, []
        for future in waiting:
            if not future.done():
                future.set_result(None)

    async def changed(self, seen: int) -> None:
        """Return once there are more than *seen* events (or the run has finished)."""
        if len(self.events) <= seen and not self.finished:
            future = asyncio.get_running_loop().create_future()
            self.waiting.append(future)
            await future


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


@router.get("/", response_class=HTMLResponse)
async def page() -> HTMLResponse:
    return HTMLResponse(resources.files("serve").joinpath("static/chat.html").read_text(encoding="utf-8"),
                        headers={"Content-Security-Policy": PAGE_POLICY})


@router.get("/chat/graphs")
async def graphs(request: Request) -> list[dict[str, str]]:
    return [{"name": graph.name, "title": graph.title} for graph in request.app.state.graphs.values()]


def watch_line(state: Any) -> None:
    """Have the pool tell each waiting chat run's page its new place whenever the line moves."""
    def moved() -> None:
        for run in list(state.chat_runs.values()):
            if not run.finished:
                _tell_position(state.pool, run)

    state.pool.watchers.append(moved)


def _tell_position(pool: RunPool, run: ChatRun) -> None:
    position = pool.position(run.ticket)
    if position and position != run.position:
        run.push("queued", {"position": position})
    run.position = position


@router.get("/chat/conversations/{conversation_id}")
async def conversation(request: Request, conversation_id: str) -> JSONResponse:
    """What a conversation's link shows: its graph, its questions with what the page showed of each, and the
    question in flight (whose events the page then reads)."""
    state = request.app.state
    found: Conversation | None = state.conversations.get(conversation_id)
    if found is None:
        return JSONResponse({"detail": UNKNOWN_CONVERSATION}, status_code=404)
    graph: ServedGraph | None = state.graphs.get(found.graph)
    run: ChatRun | None = state.chat_runs.get(state.conversation_runs.get(found.id, ""))
    return JSONResponse({
        "conversation": found.id, "graph": found.graph, "title": graph.title if graph else found.graph,
        "served": graph is not None,
        "turns": [{"question": turn.question, **turn.shown} for turn in found.turns],
        "running": {"run": run.id, "question": run.question} if run and not run.finished else None})


@router.post("/chat/runs")
async def ask(request: Request, asked: Ask) -> JSONResponse:
    state = request.app.state
    graph: ServedGraph | None = state.graphs.get(asked.graph)
    if graph is None:
        return JSONResponse({"detail": f"no graph named {asked.graph!r} is served"}, status_code=404)
    conversations: Conversations = state.conversations
    if asked.conversation:
        conversation = conversations.get(asked.conversation)
        if conversation is None:
            return JSONResponse({"detail": UNKNOWN_CONVERSATION}, status_code=404)
        if conversation.graph != graph.name:
            return JSONResponse({"detail": f"this conversation is about {conversation.graph}; start a new one "
                                           f"to ask about {graph.name}"}, status_code=409)
        if conversation.id in state.conversation_runs:
            return JSONResponse({"detail": "this conversation is still answering its last question"},
                                status_code=409)
    else:
        conversation = None
    pool: RunPool = state.pool
    try:
        ticket = pool.admit(_client(request), may_wait=True)
    except Busy as busy:
        log.info("chat: refused (%s) for %s: %s", busy.status, _client(request), busy.message)
        return JSONResponse({"detail": busy.message}, status_code=busy.status,
                            headers={"Retry-After": str(busy.retry_after)})
    conversation = conversation or conversations.start(graph.name)
    run = ChatRun(secrets.token_urlsafe(16), ticket, asked.question, conversation.id)
    state.chat_runs[run.id] = run
    state.conversation_runs[conversation.id] = run.id
    run.push("accepted", {"graph": graph.title})
    _tell_position(pool, run)
    asyncio.get_running_loop().call_later(CONNECT_SECONDS, _cancel_unwatched, state, run, run.unwatched)
    task = asyncio.create_task(_drive(state, run, graph, conversation, asked.question))
    state.tasks.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(state.tasks.discard)
    return JSONResponse({"run": run.id, "conversation": conversation.id})


def _stop(state: Any, run: ChatRun, cause: StopCause = StopCause.CLIENT_GONE) -> None:
    """Stop *run*: out of the line at once if it waits, else now (its model request closed; its worker is free)."""
    run.ticket.cancel(cause)
    state.pool.withdraw(run.ticket)


def _cancel_unwatched(state: Any, run: ChatRun, unwatched: int) -> None:
    if run.watchers or run.finished or run.unwatched != unwatched:
        return
    log.info("chat: run %s cancelled: %s", run.id,
             "its page went away" if run.connected else "its page did not connect")
    _stop(state, run)


@router.post("/chat/runs/{run_id}/stop")
async def stop(request: Request, run_id: str) -> JSONResponse:
    """Stop a question: the page then reads ``failed`` (stopped) and ``end``."""
    run: ChatRun | None = request.app.state.chat_runs.get(run_id)
    if run is None:
        return JSONResponse({"detail": "no such question"}, status_code=404)
    if not run.finished:
        log.info("chat: run %s stopped by its asker", run.id)
        _stop(request.app.state, run, StopCause.ASKED)
    return JSONResponse({"detail": "stopping" if not run.finished else "it had ended"}, status_code=202)


async def _drive(state: Any, run: ChatRun, graph: ServedGraph, conversation: Conversation, question: str) -> None:
    """Run the agent, pushing each step to *run* as the worker takes it, then the answer; keep the turn."""
    loop = asyncio.get_running_loop()
    numbers = itertools.count(1)
    steps: list[dict[str, Any]] = []
    turn = Turn(question, "", "", answered=False)

    def on_step(step: Step) -> None:  # in the worker thread
        if not step.says_something():
            return
        labels = labels_for(graph.kb, step.rows, step.shown) if step.rows else {}
        event = step_event(next(numbers), step, graph.profile, labels)
        steps.append(event)
        loop.call_soon_threadsafe(run.push, "step", event)

    def failed(message: str) -> None:
        turn.shown = {"steps": list(steps), "failed": message}
        run.push("failed", {"message": message})

    try:
        result = await state.pool.run(run.ticket, graph, question, conversation.context(), on_step=on_step,
                                      on_start=lambda: loop.call_soon_threadsafe(run.push, "started", {}))
        if result is None:
            failed("Stopped, as you asked." if run.ticket.cause is StopCause.ASKED
                   else "The question was cancelled: no page watched it.")
        else:
            rows = result.answer[:PREVIEW_ROWS] if isinstance(result.answer, list) else []
            labels = await asyncio.to_thread(labels_for, graph.kb, rows) if result.final_sparql and rows else {}
            final = final_event(result, graph, labels)
            turn = Turn(question, result.final_sparql or "", result.explanation, answered=True,
                        shown={"steps": list(steps), "final": final})
            run.push("final", final)
            log.info("chat: %s: %s after %d steps", graph.name, result.stop_reason, len(result.steps))
    except TimeoutError:
        log.warning("chat: %s: no answer within %.0f s", graph.name, state.pool.limits.timeout)
        failed(f"No answer within {state.pool.limits.timeout:.0f} seconds.")
    except Exception:  # our own error: logged whole here, a plain sentence on the page
        log.exception("chat: the run failed")
        failed("The server failed to answer; the error is in its log.")
    finally:
        try:
            state.conversations.add(conversation, turn)
        except Exception:  # the page still gets its answer; only a later look at the link misses it
            log.exception("chat: the conversation's turn could not be kept")
        state.conversation_runs.pop(conversation.id, None)
        run.finished = True
        run.push("end", {})
        loop.call_later(CONNECT_SECONDS, state.chat_runs.pop, run.id, None)


@router.get("/chat/runs/{run_id}/events")
async def events(request: Request, run_id: str) -> Response:
    """The run's events from the first the page has not seen (``Last-Event-ID``), then each as it happens."""
    run: ChatRun | None = request.app.state.chat_runs.get(run_id)
    if run is None:
        return JSONResponse({"detail": "no such question, or it ended a while ago"}, status_code=404)
    seen = request.headers.get("last-event-id", "")
    start = int(seen) + 1 if seen.isdigit() else 0
    run.watchers += 1
    run.connected = True
    return EventSourceResponse(_stream(request.app.state, run, start), ping=15)


async def _stream(state: Any, run: ChatRun, sent: int) -> AsyncIterator[dict[str, str]]:
    try:
        while True:
            while sent < len(run.events):
                name, data = run.events[sent]
                yield {"event": name, "id": str(sent), "data": json.dumps(data, ensure_ascii=False)}
                sent += 1
            if run.finished:
                return
            await run.changed(sent)
    finally:
        run.watchers -= 1
        if not run.watchers and not run.finished:
            run.unwatched += 1
            asyncio.get_running_loop().call_later(state.watch_grace, _cancel_unwatched, state, run, run.unwatched)
